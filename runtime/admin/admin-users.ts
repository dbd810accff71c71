// Admin users: email and password logins to the Admin API (`local-userpass`), as the SDKs' test harnesses
// log in. `asl serve --admin-user EMAIL --admin-password PASSWORD` creates or updates one; only the
// password's scrypt hash is kept (`<data>/admin/users.json`, mode 0600), and nothing here logs a password.
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { hashSecret, isSecretHash, secretMatches, type SecretHash } from './secret-hash';

export interface AdminUser { user_id: string; email: string; password_hash: SecretHash; created_at: number }

export interface AdminUserCredentials { email: string; password: string }

const usersFile = (adminDir: string) => path.join(adminDir, 'users.json');

/** Longest email and password taken: a login with longer ones fails without hashing them. */
const MAX_EMAIL = 320;
const MAX_PASSWORD = 256;

export function checkAdminUserCredentials(c: AdminUserCredentials): string | undefined {
  if (!/^[^\s@]+@[^\s@]+$/.test(c.email) || c.email.length > MAX_EMAIL) return `the admin user must be an email address (at most ${MAX_EMAIL} characters)`;
  if (c.password.length < 6 || c.password.length > MAX_PASSWORD) return `the admin password must be 6 to ${MAX_PASSWORD} characters long`;
  return undefined;
}

export async function readAdminUsers(adminDir: string): Promise<AdminUser[]> {
  let text: string;
  try { text = await fsp.readFile(usersFile(adminDir), 'utf8'); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const value = JSON.parse(text) as { users?: unknown };
  if (!Array.isArray(value.users)) throw new Error(`${usersFile(adminDir)} does not hold admin users; delete it and start again with --admin-user`);
  return value.users.filter((u): u is AdminUser => typeof u?.email === 'string' && typeof u.user_id === 'string' && isSecretHash(u.password_hash));
}

/** Creates the user, or gives an existing one (same email, any case) the new password. */
export async function upsertAdminUser(adminDir: string, credentials: AdminUserCredentials, userIdOf: () => string): Promise<AdminUser> {
  const problem = checkAdminUserCredentials(credentials);
  if (problem) throw new Error(problem);
  const users = await readAdminUsers(adminDir);
  const existing = users.find((u) => sameEmail(u.email, credentials.email));
  if (existing && await secretMatches(credentials.password, existing.password_hash)) return existing;
  const user: AdminUser = existing
    ? { ...existing, password_hash: await hashSecret(credentials.password) }
    : { user_id: userIdOf(), email: credentials.email, password_hash: await hashSecret(credentials.password), created_at: Math.floor(Date.now() / 1000) };
  const next = existing ? users.map((u) => (u === existing ? user : u)) : [...users, user];
  const file = usersFile(adminDir);
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await fsp.writeFile(tmp, JSON.stringify({ users: next }, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  await fsp.rename(tmp, file);
  return user;
}

/** The admin user these credentials log in as, if any (the hash is computed even for an unknown email). */
export async function findAdminUser(users: readonly AdminUser[], email: unknown, password: unknown): Promise<AdminUser | undefined> {
  if (typeof email !== 'string' || typeof password !== 'string' || email.length > MAX_EMAIL || password.length > MAX_PASSWORD) return undefined;
  const user = users.find((u) => sameEmail(u.email, email));
  const matches = await secretMatches(password, user?.password_hash ?? DECOY);
  return user && matches ? user : undefined;
}

function sameEmail(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** Hashed against when the email is unknown, so a login takes as long whether or not the user exists. */
const DECOY: SecretHash = { algorithm: 'scrypt', N: 16384, r: 8, p: 1, salt: randomBytes(16).toString('base64'), hash: randomBytes(32).toString('base64') };

/**
 * Slows down repeated failed logins: after three failures for one name or one address, each further
 * attempt waits twice as long as the last (up to 8 s); a success, or 15 quiet minutes, forgets them.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, { count: number; last: number }>();

  constructor(private readonly now: () => number = Date.now, private readonly maxKeys = 10_000) {}

  /** How long to hold the next attempt for these keys, in ms. */
  delayFor(keys: readonly string[]): number {
    this.forgetOld();
    let delay = 0;
    for (const key of keys) {
      const f = this.failures.get(key);
      if (f && f.count >= 3) delay = Math.max(delay, Math.min(8000, 250 * 2 ** (f.count - 3)));
    }
    return delay;
  }

  failed(keys: readonly string[]): void {
    for (const key of keys) {
      const f = this.failures.get(key) ?? { count: 0, last: 0 };
      this.failures.delete(key);
      if (this.failures.size >= this.maxKeys) this.failures.delete(this.failures.keys().next().value!);
      this.failures.set(key, { count: f.count + 1, last: this.now() });
    }
  }

  succeeded(keys: readonly string[]): void {
    for (const key of keys) this.failures.delete(key);
  }

  private forgetOld(): void {
    const cutoff = this.now() - 15 * 60_000;
    for (const [key, f] of this.failures) if (f.last < cutoff) this.failures.delete(key);
  }
}
