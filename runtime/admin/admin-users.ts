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
 * Attempts that share a name or an address are checked one after another, so that sending many at once
 * gains no guesses: each waits for the ones before it and then for the delay their failures earned.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, { count: number; last: number }>();
  /** Per name or address: the attempt last in line (settled when it is done) and how many are in line. */
  private readonly lines = new Map<string, { last: Promise<void>; waiting: number }>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 10_000,
    /** Attempts allowed in line for one name or address; past it, `crowded` tells the caller to refuse. */
    private readonly maxWaiting = 32,
  ) {}

  /** Whether one of these keys already has as many attempts in line as allowed. */
  crowded(keys: readonly string[]): boolean {
    return keys.some((key) => (this.lines.get(key)?.waiting ?? 0) >= this.maxWaiting);
  }

  /**
   * Runs `check` (whether the credentials are right) once the attempts ahead are done and the delay is over,
   * and records the outcome. An attempt whose client leaves (`gone`) meanwhile is dropped unchecked: false,
   * nothing recorded, and the line moves on at once (a flood of abandoned attempts holds nothing up).
   */
  async attempt(keys: readonly string[], check: () => Promise<boolean>, gone: AbortSignal): Promise<boolean> {
    let done!: () => void;
    const mine = new Promise<void>((resolve) => { done = resolve; });
    const lines = keys.map((key) => {
      const line = this.lines.get(key) ?? { last: Promise.resolve(), waiting: 0 };
      this.lines.set(key, line);
      return line;
    });
    const ahead = Promise.all(lines.map((line) => line.last)).then(() => undefined);
    for (const line of lines) { line.last = mine; line.waiting++; }
    let timer: NodeJS.Timeout | undefined;
    let onGone: (() => void) | undefined;
    const left = new Promise<'gone'>((resolve) => {
      onGone = () => resolve('gone');
      if (gone.aborted) onGone(); else gone.addEventListener('abort', onGone, { once: true });
    });
    try {
      if (await Promise.race([ahead, left]) === 'gone') return false;
      const delay = this.delayFor(keys);
      if (delay > 0 && await Promise.race([new Promise<void>((resolve) => { timer = setTimeout(resolve, delay); }), left]) === 'gone') return false;
      const ok = await check();
      if (ok) this.succeeded(keys);
      else this.failed(keys);
      return ok;
    } finally {
      clearTimeout(timer);
      gone.removeEventListener('abort', onGone!);
      keys.forEach((key, i) => {
        const line = lines[i]!;
        line.waiting--;
        if (line.waiting === 0 && this.lines.get(key) === line) this.lines.delete(key);
      });
      // Whoever is behind still waits for everyone ahead of this attempt, even when it left early.
      void ahead.then(done);
    }
  }

  /** How long to hold the next attempt for these keys, in ms. */
  private delayFor(keys: readonly string[]): number {
    this.forgetOld();
    let delay = 0;
    for (const key of keys) {
      const f = this.failures.get(key);
      if (f && f.count >= 3) delay = Math.max(delay, Math.min(8000, 250 * 2 ** (f.count - 3)));
    }
    return delay;
  }

  private failed(keys: readonly string[]): void {
    for (const key of keys) {
      const f = this.failures.get(key) ?? { count: 0, last: 0 };
      this.failures.delete(key);
      if (this.failures.size >= this.maxKeys) this.failures.delete(this.failures.keys().next().value!);
      this.failures.set(key, { count: f.count + 1, last: this.now() });
    }
  }

  private succeeded(keys: readonly string[]): void {
    for (const key of keys) this.failures.delete(key);
  }

  private forgetOld(): void {
    const cutoff = this.now() - 15 * 60_000;
    for (const [key, f] of this.failures) if (f.last < cutoff) this.failures.delete(key);
  }
}
