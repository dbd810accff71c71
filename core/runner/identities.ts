// Who a query runs as, and how that becomes HTTP headers through the runtime's real client API: logins
// give real access/refresh tokens, refreshed when the runtime says the access token expired. Credential
// headers go as they are; an existing user (without a password) and *system* need the admin session from
// the runtime handshake. `fetch` is injected; nothing here needs VS Code.
import { SignJWT } from 'jose';
import { ADMIN_API, ADMIN_ROUTES, CLIENT_API, CLIENT_ROUTES, LOCAL_APP_ROUTES, localAppPath, routePath } from '../apiRoutes';
import type { AdminSessionGrant } from '../runtime-protocol';

export type Identity =
  | { kind: 'anonymous' }
  | { kind: 'email-password'; email: string; password: string }
  | { kind: 'api-key'; key: string; name?: string }
  | { kind: 'custom-jwt'; token: string; sub?: string }
  | { kind: 'existing-user'; userId: string; label?: string }
  | { kind: 'credential-headers'; headers: CredentialHeaders }
  | { kind: 'system' };

export type CredentialHeaders = { email: string; password: string } | { apiKey: string } | { jwtTokenString: string };

/** Where the runner talks to: one app of a running runtime. */
export interface RunnerTarget {
  /** `http://localhost:PORT`, no trailing slash. */
  baseUrl: string;
  appId: string;
  /** The admin session from the handshake; needed for existing users and system. */
  admin?: AdminSessionGrant;
  /** The app's Admin API path (`/api/admin/v3.0/groups/{groupId}/apps/{id}`), for its user routes. */
  adminAppPath?: string;
}

export type Fetch = typeof fetch;

/** A failure that names what failed and what to do; never "undefined". */
export class RunnerError extends Error {
  constructor(message: string, readonly status?: number, readonly errorCode?: string) { super(message); }
}

export function describeIdentity(identity: Identity): string {
  switch (identity.kind) {
    case 'anonymous': return 'anonymous';
    case 'email-password': return identity.email;
    case 'api-key': return `API key${identity.name ? ` ${identity.name}` : ''}`;
    case 'custom-jwt': return `custom JWT${identity.sub ? ` (sub ${identity.sub})` : ''}`;
    case 'existing-user': return identity.label ?? `user ${identity.userId}`;
    case 'credential-headers': return `credential headers (${Object.keys(identity.headers).join(', ')})`;
    case 'system': return 'system (rules bypassed)';
  }
}

/** A stable key per identity, to keep its session and remember it (secrets hashed out of it). */
export function identityKey(identity: Identity): string {
  switch (identity.kind) {
    case 'anonymous': case 'system': return identity.kind;
    case 'email-password': return `email-password:${identity.email}`;
    case 'api-key': return `api-key:${identity.key}`;
    case 'custom-jwt': return `custom-jwt:${identity.token}`;
    case 'existing-user': return `existing-user:${identity.userId}`;
    case 'credential-headers': return `credential-headers:${JSON.stringify(identity.headers)}`;
  }
}

interface Session { accessToken: string; refreshToken: string; userId: string }

interface ErrorBody { error?: unknown; error_code?: unknown }

/** Turns a runtime error answer into a message a person can act on. */
export async function errorOf(response: Response, what: string): Promise<RunnerError> {
  let body: ErrorBody = {};
  const text = await response.text().catch(() => '');
  try { body = JSON.parse(text) as ErrorBody; } catch { /* not JSON: the status says enough */ }
  const detail = typeof body.error === 'string' && body.error ? body.error : text.slice(0, 200) || response.statusText || 'no details';
  const code = typeof body.error_code === 'string' ? body.error_code : undefined;
  return new RunnerError(`${what} failed: ${detail} (HTTP ${response.status}${code ? ` ${code}` : ''})`, response.status, code);
}

/**
 * Keeps one session per identity for one runtime app. `headersFor` logs in on first use; `refreshed`
 * exchanges the refresh token after the runtime answered 401 InvalidSession, and logs in again when the
 * refresh token is gone too.
 */
export class SessionPool {
  private readonly sessions = new Map<string, Promise<Session>>();
  private admin: AdminSessionGrant | undefined;
  private adminRefresh: Promise<void> | undefined;

  /** `fetchImpl`: how every request of this pool and of the clients that use it (`local.ts`, `../sync/*Client.ts`) is sent. */
  constructor(readonly target: RunnerTarget, readonly fetchImpl: Fetch = fetch) {
    this.admin = target.admin;
  }

  /** Whether admin-only identities and actions are available. */
  get hasAdmin(): boolean { return this.admin !== undefined; }

  private url(path: string): string { return `${this.target.baseUrl}${path}`; }

  private async post(path: string, body: unknown, headers: Record<string, string>, what: string, signal?: AbortSignal): Promise<unknown> {
    const response = await this.fetchImpl(this.url(path), {
      method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...headers }, body: JSON.stringify(body), signal,
    });
    if (!response.ok) throw await errorOf(response, what);
    const text = await response.text();
    return text ? JSON.parse(text) : undefined;
  }

  /** The admin bearer header; a clear error when the runtime gave none. */
  adminHeaders(): Record<string, string> {
    if (!this.admin) {
      throw new RunnerError('this needs the admin session of a runtime the editor started; a runtime attached by URL has none. Start the runtime from the editor (App Services: Start Runtime)');
    }
    return { Authorization: `Bearer ${this.admin.accessToken}` };
  }

  /** A new admin access token from the admin refresh token (admin access tokens last 30 minutes). */
  async refreshAdmin(signal?: AbortSignal): Promise<void> {
    const admin = this.admin;
    if (!admin) return;
    this.adminRefresh ??= (async () => {
      const response = await this.fetchImpl(this.url(`${ADMIN_API}${ADMIN_ROUTES.session}`), {
        method: 'POST', headers: { Accept: 'application/json', Authorization: `Bearer ${admin.refreshToken}` }, signal,
      });
      if (!response.ok) throw await errorOf(response, 'Refreshing the admin session (restart the runtime to get a new one)');
      const body = await response.json() as { access_token: string };
      this.admin = { ...admin, accessToken: body.access_token };
    })().finally(() => { this.adminRefresh = undefined; });
    await this.adminRefresh;
  }

  /** Runs an admin request, refreshing the admin session once when the runtime says it expired. */
  async asAdmin<T>(send: (headers: Record<string, string>) => Promise<T>, signal?: AbortSignal): Promise<T> {
    try {
      return await send(this.adminHeaders());
    } catch (error) {
      if (!(error instanceof RunnerError && error.status === 401 && error.errorCode === 'InvalidSession')) throw error;
      await this.refreshAdmin(signal);
      return send(this.adminHeaders());
    }
  }

  private async login(provider: string, payload: Record<string, unknown>, signal?: AbortSignal): Promise<Session> {
    const body = await this.post(`${CLIENT_API}${routePath(CLIENT_ROUTES.login, { appId: this.target.appId, provider })}`,
      payload, {}, `Logging in with the ${provider} provider`, signal) as { access_token: string; refresh_token: string; user_id: string };
    return { accessToken: body.access_token, refreshToken: body.refresh_token, userId: body.user_id };
  }

  private async startSession(identity: Identity, signal?: AbortSignal): Promise<Session> {
    switch (identity.kind) {
      case 'anonymous': return this.login('anon-user', {}, signal);
      case 'email-password': return this.login('local-userpass', { username: identity.email, password: identity.password }, signal);
      case 'api-key': return this.login('api-key', { key: identity.key }, signal);
      case 'custom-jwt': return this.login('custom-token', { token: identity.token }, signal);
      case 'existing-user': {
        const body = await this.asAdmin((headers) => this.post(localAppPath(this.target.appId, LOCAL_APP_ROUTES.userSession, { userId: identity.userId }),
          {}, headers, `Acting as user ${identity.userId}`, signal), signal) as { access_token: string; refresh_token: string; user_id: string };
        return { accessToken: body.access_token, refreshToken: body.refresh_token, userId: body.user_id };
      }
      case 'credential-headers': case 'system':
        throw new RunnerError(`${describeIdentity(identity)} has no session`);
    }
  }

  private session(identity: Identity, signal?: AbortSignal): Promise<Session> {
    const key = identityKey(identity);
    let session = this.sessions.get(key);
    if (!session) {
      session = this.startSession(identity, signal);
      this.sessions.set(key, session);
      session.catch(() => { if (this.sessions.get(key) === session) this.sessions.delete(key); });
    }
    return session;
  }

  /** The headers a client request of this identity carries. */
  async headersFor(identity: Identity, signal?: AbortSignal): Promise<Record<string, string>> {
    if (identity.kind === 'credential-headers') return { ...identity.headers } as Record<string, string>;
    if (identity.kind === 'system') return this.adminHeaders();
    const session = await this.session(identity, signal);
    return { Authorization: `Bearer ${session.accessToken}` };
  }

  /** The user id behind an identity with a session (logs in when needed). */
  async userIdOf(identity: Identity, signal?: AbortSignal): Promise<string> {
    return (await this.session(identity, signal)).userId;
  }

  /** Whether an identity's requests can be retried after a refresh. */
  static hasSession(identity: Identity): boolean {
    return identity.kind !== 'credential-headers' && identity.kind !== 'system';
  }

  /** Gets a new access token after a 401; a refresh token the runtime no longer knows means a new login. */
  async refreshed(identity: Identity, signal?: AbortSignal): Promise<void> {
    const key = identityKey(identity);
    const current = this.sessions.get(key);
    if (!current) return;
    const next = (async () => {
      const session = await current;
      const response = await this.fetchImpl(this.url(`${CLIENT_API}${CLIENT_ROUTES.session}`), {
        method: 'POST', headers: { Accept: 'application/json', Authorization: `Bearer ${session.refreshToken}` }, signal,
      });
      if (response.status === 401) return this.startSession(identity, signal);
      if (!response.ok) throw await errorOf(response, 'Refreshing the access token');
      const body = await response.json() as { access_token: string };
      return { ...session, accessToken: body.access_token };
    })();
    this.sessions.set(key, next);
    next.catch(() => { if (this.sessions.get(key) === next) this.sessions.delete(key); });
    await next;
  }

  /** Forgets every session (the runtime restarted, or its data was cleared). */
  clear(): void { this.sessions.clear(); }

  /** Registers an email/password user through the client API (then log in with it as an identity). */
  async registerEmailPasswordUser(email: string, password: string, signal?: AbortSignal): Promise<void> {
    await this.post(`${CLIENT_API}${routePath(CLIENT_ROUTES.register, { appId: this.target.appId, provider: 'local-userpass' })}`,
      { email, password }, {}, `Registering ${email}`, signal);
  }
}

export interface MintJwtOptions {
  /** The provider's HS256 signing key: the secret's raw text. */
  key: string;
  sub: string;
  aud: string | string[];
  /** Extra claims (metadata fields such as `name`, `email`). */
  claims?: Record<string, unknown>;
  /** Lifetime; default one hour. */
  expiresInSeconds?: number;
  /** Seconds since the epoch; injected for tests. */
  now?: number;
}

/** A custom JWT for testing, signed HS256 with the provider's own key (the raw UTF-8 bytes of the secret). */
export async function mintCustomJwt(options: MintJwtOptions): Promise<string> {
  if (!options.sub) throw new RunnerError('a custom JWT needs a subject (sub): the id of the user in your identity system');
  const now = options.now ?? Math.floor(Date.now() / 1000);
  return new SignJWT({ ...(options.claims ?? {}) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(options.sub)
    .setAudience(options.aud)
    .setIssuedAt(now)
    .setExpirationTime(now + (options.expiresInSeconds ?? 3600))
    .sign(new TextEncoder().encode(options.key));
}
