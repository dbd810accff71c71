// One way to keep a secret the runtime must check but never reveal (the admin key pair's private key, an
// admin user's password): its scrypt hash with a random salt, compared in constant time.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

export interface SecretHash { algorithm: 'scrypt'; N: number; r: number; p: number; salt: string; hash: string }

const SCRYPT = { N: 16384, r: 8, p: 1, keyLength: 32 };

export async function hashSecret(secret: string): Promise<SecretHash> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(secret, salt, SCRYPT.keyLength, SCRYPT);
  return { algorithm: 'scrypt', N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, salt: salt.toString('base64'), hash: hash.toString('base64') };
}

/** Whether `secret` is the one `stored` was made from. */
export async function secretMatches(secret: string, stored: SecretHash): Promise<boolean> {
  const expected = Buffer.from(stored.hash, 'base64');
  const actual = await scryptAsync(secret, Buffer.from(stored.salt, 'base64'), expected.length, { N: stored.N, r: stored.r, p: stored.p });
  return timingSafeEqual(actual, expected);
}

export function isSecretHash(value: unknown): value is SecretHash {
  const v = value as Partial<SecretHash> | null;
  return typeof v === 'object' && v !== null && v.algorithm === 'scrypt' && typeof v.salt === 'string' && typeof v.hash === 'string'
    && Number.isInteger(v.N) && Number.isInteger(v.r) && Number.isInteger(v.p) && v.N! <= 1 << 20;
}

function scryptAsync(secret: string, salt: Buffer, keyLength: number, options: { N: number; r: number; p: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(secret, salt, keyLength, { ...options, maxmem: 64 * 1024 * 1024 }, (e, key) => (e ? reject(e) : resolve(key))));
}
