// The admin API key pair of a runtime data folder. The public key names the pair; the private key is shown
// once, when the pair is made, and only its scrypt hash is kept (file mode 0600), so nothing on disk or in
// a log lets anyone log in.
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { hashSecret, secretMatches, type SecretHash } from './secret-hash';

export interface AdminKeyPair { publicKey: string; privateKey: string }

interface StoredKey {
  public_key: string;
  private_key_hash: SecretHash;
  created_at: number;
}

export const adminKeyFile = (adminDir: string) => path.join(adminDir, 'api-key.json');

/**
 * The folder's public key; when the folder had no pair yet, a new one is made and `created` carries it
 * (the only time the private key is ever available).
 */
export async function loadOrCreateAdminKey(adminDir: string): Promise<{ publicKey: string; created?: AdminKeyPair }> {
  const stored = await readStoredKey(adminDir);
  if (stored) return { publicKey: stored.public_key };
  const pair = newKeyPair();
  const written = await writeStoredKey(adminDir, pair, 'wx');
  if (!written) {
    // Another process made the pair first: use theirs.
    const theirs = await readStoredKey(adminDir);
    if (!theirs) throw new Error(`${adminKeyFile(adminDir)} could not be read`);
    return { publicKey: theirs.public_key };
  }
  return { publicKey: pair.publicKey, created: pair };
}

/** Replaces the pair; sessions opened with the old one stay valid until they end or are revoked. */
/**
 * A new key pair; every admin session opened with the old one ends (the stored sessions are emptied, and
 * a running runtime drops its own when it sees the key file change).
 */
export async function rotateAdminKey(adminDir: string): Promise<AdminKeyPair> {
  const pair = newKeyPair();
  await writeStoredKey(adminDir, pair, 'w');
  const sessions = path.join(adminDir, 'sessions.json');
  const tmp = `${sessions}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await fsp.writeFile(tmp, '{}\n', { mode: 0o600 });
  await fsp.rename(tmp, sessions);
  return pair;
}

export async function readAdminPublicKey(adminDir: string): Promise<string | undefined> {
  return (await readStoredKey(adminDir))?.public_key;
}

/** Whether the pair is the folder's current one; compares in constant time. */
export async function checkAdminKey(adminDir: string, publicKey: unknown, privateKey: unknown): Promise<boolean> {
  if (typeof publicKey !== 'string' || typeof privateKey !== 'string' || privateKey.length > 200) return false;
  const stored = await readStoredKey(adminDir);
  if (!stored) return false;
  const privateMatches = await secretMatches(privateKey, stored.private_key_hash);
  const samePublic = publicKey.length === stored.public_key.length && timingSafeEqual(Buffer.from(publicKey), Buffer.from(stored.public_key));
  return privateMatches && samePublic;
}

function newKeyPair(): AdminKeyPair {
  // Shaped like the platform's programmatic API keys: 8 lowercase letters, and a UUID.
  const publicKey = Array.from(randomBytes(8), (b) => String.fromCharCode(97 + (b % 26))).join('');
  return { publicKey, privateKey: randomUUID() };
}

async function readStoredKey(adminDir: string): Promise<StoredKey | undefined> {
  let text: string;
  try { text = await fsp.readFile(adminKeyFile(adminDir), 'utf8'); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const value = JSON.parse(text) as StoredKey;
  if (typeof value?.public_key !== 'string' || typeof value.private_key_hash?.hash !== 'string') {
    throw new Error(`${adminKeyFile(adminDir)} does not hold an admin key; delete it or run "asl admin-keys --rotate"`);
  }
  return value;
}

/** Writes through a temporary file; with flag `wx` it never replaces an existing pair and says whether it wrote. */
async function writeStoredKey(adminDir: string, pair: AdminKeyPair, flag: 'w' | 'wx'): Promise<boolean> {
  await fsp.mkdir(adminDir, { recursive: true, mode: 0o700 });
  const stored: StoredKey = {
    public_key: pair.publicKey,
    private_key_hash: await hashSecret(pair.privateKey),
    created_at: Math.floor(Date.now() / 1000),
  };
  const file = adminKeyFile(adminDir);
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await fsp.writeFile(tmp, JSON.stringify(stored, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  try {
    if (flag === 'wx') {
      try { await fsp.link(tmp, file); } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw e;
      }
    } else {
      await fsp.rename(tmp, file);
    }
    return true;
  } finally {
    await fsp.rm(tmp, { force: true });
  }
}
