// Admin sessions: login with the data folder's admin key pair, access tokens (30 min) and refresh tokens
// (60 days) signed with an admin secret of their own, so a client user's token never passes on an admin
// route and an admin token never passes on a client route. Sessions are kept in the data folder (mode
// 0600), so a logged-in CLI stays logged in across restarts; `DELETE /auth/session` ends one.
import fsp from 'node:fs/promises';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError } from '../http/errors';
import { DEFAULT_REFRESH_TOKEN_SECONDS, TokenFailure, TokenService, loadOrCreateTokenSecret, systemClock, type Clock } from '../auth/tokens';
import { adminKeyFile, checkAdminKey, loadOrCreateAdminKey, type AdminKeyPair } from './keys';
import { LoginThrottle, findAdminUser, readAdminUsers, upsertAdminUser, type AdminUser, type AdminUserCredentials } from './admin-users';

/** What a successful admin login answers (admin-api-wire.md §2). */
export interface AdminSessionTokens { access_token: string; refresh_token: string; user_id: string; device_id: string }

/** The authenticated admin behind a request. */
export interface AdminCaller { userId: string; sessionId: string }

/** Who opened an admin session: the key pair's holder (the project's admin) or an admin user. */
type SessionOwner = { kind: 'key' } | { kind: 'user'; user: AdminUser };

/** The runtime's project: the group its apps belong to and the one admin user, stable across restarts. */
export interface AdminProject { group_id: string; user_id: string; domain_id: string }

export const invalidAdminSession = () => new ApiError(401, 'InvalidSession', 'invalid session: access token expired');
const missingRefreshSession = () => new ApiError(401, 'InvalidSession', 'invalid session: failed to find refresh token');
const notARefreshToken = () => new ApiError(401, 'InvalidSession', 'invalid refresh token: incorrect token type');

export class AdminAuth {
  /** The key file as last seen (its change time and public key): a rotation ends every session opened with the old key. */
  private keySeen: { changed: number; publicKey: string };
  /**
   * Sessions this process minted for whoever started it (the editor's handshake, the `asl` tools' record):
   * opened with no key, so a rotation leaves them; every other session was opened with a key pair.
   */
  private readonly minted = new Set<string>();

  private constructor(
    readonly adminDir: string,
    readonly project: AdminProject,
    publicKey: string,
    /** The pair made by this start, when the folder had none: shown once by `asl serve`. */
    readonly createdKey: AdminKeyPair | undefined,
    private readonly tokens: TokenService,
    private readonly clock: Clock,
    private readonly sessions: Map<string, number>,
    private readonly users: AdminUser[],
  ) {
    this.keySeen = { changed: keyFileChanged(adminDir), publicKey };
  }

  get publicKey(): string {
    return this.keySeen.publicKey;
  }

  /**
   * `asl admin-keys --rotate` (another process, maybe while this one runs) replaces the key file: every
   * session opened with the old key ends. Checked before any session is used or opened; a stat per admin request.
   */
  private followKeyRotation(): void {
    const changed = keyFileChanged(this.adminDir);
    if (changed === this.keySeen.changed) return;
    const publicKey = readPublicKey(this.adminDir) ?? this.keySeen.publicKey;
    if (publicKey !== this.keySeen.publicKey) {
      for (const id of [...this.sessions.keys()]) if (!this.minted.has(id)) this.sessions.delete(id);
      void this.saveSessions();
    }
    this.keySeen = { changed, publicKey };
  }

  /** `users`: admin users to create, or to give a new password (`asl serve --admin-user … --admin-password …`). */
  static async open(options: { adminDir: string; clock?: Clock; users?: readonly AdminUserCredentials[] }): Promise<AdminAuth> {
    const { adminDir, clock = systemClock } = options;
    await fsp.mkdir(adminDir, { recursive: true, mode: 0o700 });
    const key = await loadOrCreateAdminKey(adminDir);
    const project = await loadOrCreateProject(adminDir);
    const secret = await loadOrCreateTokenSecret(adminDir, path.join(adminDir, 'token-secret'));
    const tokens = new TokenService(secret, clock, project.domain_id);
    for (const credentials of options.users ?? []) await upsertAdminUser(adminDir, credentials, objectIdHex);
    const users = await readAdminUsers(adminDir);
    return new AdminAuth(adminDir, project, key.publicKey, key.created, tokens, clock, readSessions(adminDir), users);
  }

  private readonly throttle = new LoginThrottle();

  get groupId(): string { return this.project.group_id; }

  /** `POST /auth/providers/mongodb-cloud/login` `{username, apiKey}` (and `local-userpass` `{username, password}`). */
  async loginWithKey(publicKey: unknown, privateKey: unknown): Promise<AdminSessionTokens> {
    this.followKeyRotation();
    if (!(await checkAdminKey(this.adminDir, publicKey, privateKey))) {
      throw new ApiError(401, 'InvalidPassword', 'failed to authenticate with MongoDB Cloud API: invalid username/password');
    }
    return this.openSession({ kind: 'key' });
  }

  /**
   * `POST /auth/providers/local-userpass/login` `{username, password}`: an admin user's email and password,
   * else (as before admin users existed) the key pair as username and password. Failures for one name or
   * one address are slowed down, and attempts sharing either are checked one at a time (`LoginThrottle`);
   * every failure answers the same 401, and an attempt past the throttle's line 429. `gone` aborts when the
   * client leaves: its attempt is then dropped unchecked.
   */
  async loginWithPassword(username: unknown, password: unknown, address: string | undefined, gone: AbortSignal): Promise<AdminSessionTokens> {
    this.followKeyRotation();
    const keys = [`address:${address ?? ''}`, `name:${typeof username === 'string' ? username.toLowerCase().slice(0, 320) : ''}`];
    if (this.throttle.crowded(keys)) throw new ApiError(429, 'TooManyRequests', 'too many login attempts at once for this user or address; try again later');
    let owner: SessionOwner | undefined;
    await this.throttle.attempt(keys, async () => {
      const user = await findAdminUser(this.users, username, password);
      if (user) owner = { kind: 'user', user };
      else if (await checkAdminKey(this.adminDir, username, password)) owner = { kind: 'key' };
      return owner !== undefined;
    }, gone);
    if (!owner) throw new ApiError(401, 'InvalidPassword', 'invalid username/password');
    return this.openSession(owner);
  }

  /**
   * A fresh admin session without the key pair, for the process that started this runtime (the editor
   * hands it over in its child-process handshake). Never reachable over HTTP.
   */
  async mintSession(): Promise<AdminSessionTokens> {
    this.followKeyRotation();
    const tokens = await this.openSession({ kind: 'key' });
    this.minted.add(this.tokens.check(tokens.access_token, 'access').iss);
    return tokens;
  }

  /** `POST /auth/session` with the refresh token: a new access token for the same session. */
  async refresh(headers: IncomingHttpHeaders): Promise<{ access_token: string }> {
    const { sessionId, userId } = this.refreshSessionOf(headers);
    return { access_token: await this.tokens.issueAccess({ userId, sessionId, deviceId: this.project.domain_id }) };
  }

  /** `DELETE /auth/session` with the refresh token. */
  async logout(headers: IncomingHttpHeaders): Promise<void> {
    const { sessionId } = this.refreshSessionOf(headers);
    this.sessions.delete(sessionId);
    await this.saveSessions();
  }

  /** The admin behind an admin access token; 401 `InvalidSession` for anything else (a client user's token included). */
  authenticate(headers: IncomingHttpHeaders): AdminCaller {
    this.followKeyRotation();
    const token = bearerOf(headers);
    if (token === undefined) throw invalidAdminSession();
    let claims: { iss: string; sub: string };
    try {
      claims = this.tokens.check(token, 'access');
    } catch (e) {
      if (e instanceof TokenFailure) throw invalidAdminSession();
      throw e;
    }
    if (!this.sessionAlive(claims.iss)) throw invalidAdminSession();
    return { userId: claims.sub, sessionId: claims.iss };
  }

  /**
   * A metrics scraper: `Authorization: Bearer <admin access token>` as on admin routes, or, since a scraper
   * cannot refresh a 30-minute token, `Basic` with the admin key pair (public key : private key) or an admin
   * user's email and password. Basic attempts are checked and slowed down as password logins are (per name
   * and per address; past the line 429); every failure answers the same 401.
   */
  async authenticateScraper(headers: IncomingHttpHeaders, address: string | undefined, gone: AbortSignal): Promise<void> {
    const basic = basicOf(headers);
    if (!basic) { this.authenticate(headers); return; }
    this.followKeyRotation();
    const keys = [`address:${address ?? ''}`, `name:${basic.name.toLowerCase().slice(0, 320)}`];
    if (this.throttle.crowded(keys)) throw new ApiError(429, 'TooManyRequests', 'too many login attempts at once for this user or address; try again later');
    const ok = await this.throttle.attempt(keys, async () => (await findAdminUser(this.users, basic.name, basic.secret)) !== undefined
      || checkAdminKey(this.adminDir, basic.name, basic.secret), gone);
    if (!ok) throw new ApiError(401, 'InvalidSession', 'invalid session: admin credentials required');
  }

  /** `GET /auth/profile`: the caller (the project's admin, or an admin user) with the runtime's group in `roles`. */
  profile(caller: AdminCaller): Record<string, unknown> {
    const user = this.users.find((u) => u.user_id === caller.userId);
    return {
      user_id: caller.userId,
      domain_id: this.project.domain_id,
      identities: [user
        ? { id: user.user_id, provider_type: 'local-userpass', provider_id: this.project.domain_id }
        : { id: this.publicKey, provider_type: 'mongodb-cloud', provider_id: this.project.domain_id }],
      data: user ? { email: user.email } : { email: '', name: 'local admin' },
      type: 'normal',
      roles: [{ role_name: 'GROUP_OWNER', group_id: this.project.group_id }],
    };
  }

  private async openSession(owner: SessionOwner): Promise<AdminSessionTokens> {
    const sessionId = randomBytes(12).toString('hex');
    const now = this.tokens.nowSeconds();
    const expiresAt = now + DEFAULT_REFRESH_TOKEN_SECONDS;
    this.sessions.set(sessionId, expiresAt);
    for (const [id, until] of this.sessions) if (until <= now) this.sessions.delete(id);
    await this.saveSessions();
    const userId = owner.kind === 'user' ? owner.user.user_id : this.project.user_id;
    const deviceId = this.project.domain_id;
    const identity = owner.kind === 'user'
      ? { id: owner.user.user_id, provider_type: 'local-userpass', provider_id: this.project.domain_id }
      : { id: this.publicKey, provider_type: 'mongodb-cloud', provider_id: this.project.domain_id };
    return {
      access_token: await this.tokens.issueAccess({ userId, sessionId, deviceId }),
      refresh_token: await this.tokens.issueRefresh({ userId, sessionId, deviceId, identity, expiresAt }),
      user_id: userId,
      device_id: deviceId,
    };
  }

  private refreshSessionOf(headers: IncomingHttpHeaders): { sessionId: string; userId: string } {
    this.followKeyRotation();
    const token = bearerOf(headers);
    if (token === undefined) throw missingRefreshSession();
    let claims: { baas_id: string; sub: string };
    try {
      claims = this.tokens.check(token, 'refresh');
    } catch (e) {
      if (!(e instanceof TokenFailure)) throw e;
      throw e.message === 'expected a refresh token' ? notARefreshToken() : missingRefreshSession();
    }
    if (!this.sessionAlive(claims.baas_id)) throw missingRefreshSession();
    return { sessionId: claims.baas_id, userId: claims.sub };
  }

  private sessionAlive(sessionId: string): boolean {
    const until = this.sessions.get(sessionId);
    return until !== undefined && until > Math.floor(this.clock.now() / 1000);
  }

  private saving: Promise<void> = Promise.resolve();

  /** Writes are queued so the file always ends up with the latest set. */
  private saveSessions(): Promise<void> {
    const file = path.join(this.adminDir, 'sessions.json');
    const text = JSON.stringify(Object.fromEntries(this.sessions)) + '\n';
    this.saving = this.saving.then(async () => {
      const tmp = `${file}.${process.pid}.tmp`;
      await fsp.writeFile(tmp, text, { mode: 0o600 });
      await fsp.rename(tmp, file);
    });
    return this.saving;
  }
}

/** The key file's change time in ms (0 when absent). */
function keyFileChanged(adminDir: string): number {
  try { return statSync(adminKeyFile(adminDir)).ctimeMs; } catch { return 0; }
}

function readPublicKey(adminDir: string): string | undefined {
  try {
    const value = JSON.parse(readFileSync(adminKeyFile(adminDir), 'utf8')) as { public_key?: unknown };
    return typeof value.public_key === 'string' ? value.public_key : undefined;
  } catch {
    return undefined;
  }
}

function bearerOf(headers: IncomingHttpHeaders): string | undefined {
  const value = headers.authorization;
  if (typeof value !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return m ? m[1] : undefined;
}

/** `Authorization: Basic base64(name:secret)`; undefined for any other header. */
function basicOf(headers: IncomingHttpHeaders): { name: string; secret: string } | undefined {
  const value = headers.authorization;
  if (typeof value !== 'string') return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=]{1,4096})\s*$/i.exec(value);
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { name: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

function readSessions(adminDir: string): Map<string, number> {
  try {
    const value = JSON.parse(readFileSync(path.join(adminDir, 'sessions.json'), 'utf8')) as Record<string, unknown>;
    return new Map(Object.entries(value).filter((e): e is [string, number] => typeof e[1] === 'number'));
  } catch {
    return new Map();
  }
}

async function loadOrCreateProject(adminDir: string): Promise<AdminProject> {
  const file = path.join(adminDir, 'project.json');
  try {
    const value = JSON.parse(await fsp.readFile(file, 'utf8')) as AdminProject;
    if (/^[0-9a-f]{24}$/.test(value.group_id) && typeof value.user_id === 'string' && typeof value.domain_id === 'string') return value;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT' && !(e instanceof SyntaxError)) throw e;
  }
  const project: AdminProject = { group_id: objectIdHex(), user_id: objectIdHex(), domain_id: objectIdHex() };
  try {
    await fsp.writeFile(file, JSON.stringify(project, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return JSON.parse(await fsp.readFile(file, 'utf8')) as AdminProject;
    throw e;
  }
  return project;
}

/** A new ObjectId-shaped hex id: seconds, then random bytes. */
export function objectIdHex(): string {
  return Math.floor(Date.now() / 1000).toString(16).padStart(8, '0') + randomBytes(8).toString('hex');
}
