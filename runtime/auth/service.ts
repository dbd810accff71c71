// Authentication for one app: login per provider, sessions, profile, user deletion, user API keys,
// the email/password flows and request authentication for GraphQL (client-api.md §4–§7, §9).
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { EJSON, ObjectId } from 'bson';
import type { AuthProvider } from '../../core/model';
import { ApiError, authError, badRequest, invalidAccessToken, invalidRefreshToken, mustAuthenticate } from '../http/errors';
import type { Logger } from '../http/server';
import type { SecretStore } from '../secrets';
import { CustomJwtVerifier, type KeySetOptions } from './customJwt';
import { decoyHash, hashPassword, verifyPassword } from './passwords';
import type { ApiKeyRecord, AuthRepository, IdentityRecord, SessionRecord, UserRecord, UserpassRecord } from './repository';
import { ANONYMOUS_REFRESH_EXPIRY, DEFAULT_REFRESH_TOKEN_SECONDS, NO_DEVICE_ID, TokenFailure, type AccessClaims, type Clock, type TokenService } from './tokens';
import { isObject } from '../../core/json';

/** The user as other parts of the runtime see it (function context, rules, GraphQL). */
export interface AuthUser {
  id: string;
  type: 'normal' | 'server';
  data: Record<string, unknown>;
  identities: IdentityRecord[];
}

export interface AuthenticatedRequest {
  user: AuthUser;
  /** The custom user data document, when enabled and present. */
  customData?: Record<string, unknown>;
  /** Set when the request carried an access token. */
  sessionId?: string;
}

export interface LoginResponse { access_token: string; refresh_token: string | null; user_id: string; device_id: string }

export interface EmailMessage {
  kind: 'confirm' | 'reset';
  to: string;
  subject: string;
  /** The confirmation or reset URL with `token` and `tokenId` added; undefined when the provider names none. */
  url?: string;
  token: string;
  tokenId: string;
}

export interface AuthServiceOptions {
  appId: string;
  providers: readonly AuthProvider[];
  repository: AuthRepository;
  tokens: TokenService;
  secrets: SecretStore;
  clock: Clock;
  /** App domain id carried in tokens (`baas_domain_id`) and the profile. */
  domainId: string;
  log: Logger;
  /** Runs an app function as system (confirmation, reset and custom-function authentication). */
  runFunction?: (name: string, args: unknown[]) => Promise<unknown>;
  /** The custom user data document of a user, from the configured collection. */
  findCustomUserData?: (user: AuthUser) => Promise<Record<string, unknown> | undefined>;
  /**
   * Authentication events for AUTHENTICATION triggers (never rejects). CREATE is awaited, so what its triggers
   * write (custom user data) is in the new user's first access token; LOGIN and DELETE are not.
   */
  onAuthEvent?: (event: { operationType: 'CREATE' | 'LOGIN' | 'DELETE'; providers: string[]; user: AuthUser }) => Promise<void>;
  /** Called once for every new user (the custom user data creation function). */
  onUserCreated?: (user: AuthUser) => Promise<void>;
  /** Delivers confirmation and reset mails; locally they are logged by default. */
  sendEmail?: (mail: EmailMessage) => void | Promise<void>;
  keySets?: KeySetOptions;
  refreshTokenSeconds?: number;
}

const TOKEN_LIFETIME_MS = 30 * 60 * 1000;
/** Access tokens whose caller is remembered (see `bearerCallers`); the oldest is forgotten first. */
const BEARER_CALLERS_KEPT = 10_000;
const HEX24 = /^[0-9a-f]{24}$/;

export class AuthService {
  private readonly repo: AuthRepository;
  private readonly jwtVerifiers = new Map<string, CustomJwtVerifier>();

  constructor(private readonly o: AuthServiceOptions) {
    this.repo = o.repository;
  }

  get appId(): string { return this.o.appId; }

  /** Stable 24-hex id of a provider, derived from the app id and the provider's name. */
  providerId(provider: AuthProvider): string {
    return createHash('sha256').update(`${this.o.appId}\u0000${provider.name}`).digest('hex').slice(0, 24);
  }

  /** The enabled provider with that name. */
  provider(name: string): AuthProvider {
    const p = this.o.providers.find((x) => x.name === name);
    if (!p || p.disabled) throw new ApiError(404, 'AuthProviderNotFound', `authentication via '${name}' is unsupported`);
    return p;
  }

  private enabledOfType(type: string): AuthProvider | undefined {
    return this.o.providers.find((p) => p.type === type && !p.disabled);
  }

  // ---- login and sessions ----

  async login(providerName: string, body: unknown, linkingAccessToken?: string): Promise<LoginResponse> {
    const provider = this.provider(providerName);
    const payload = asObject(body ?? {});
    const deviceId = deviceIdOf(payload);
    if (linkingAccessToken !== undefined) return this.link(provider, payload, linkingAccessToken, deviceId);
    const { user, identity } = await this.authenticateIdentity(provider, payload);
    const response = await this.startSession(user, identity, deviceId ?? newDeviceId());
    void this.o.onAuthEvent?.({ operationType: 'LOGIN', providers: [identity.provider_type], user: toAuthUser(user) });
    return response;
  }

  private async link(provider: AuthProvider, payload: Record<string, unknown>, accessToken: string, deviceId: string | undefined): Promise<LoginResponse> {
    const current = this.checkAccess(accessToken);
    if (provider.type === 'anon-user') throw badRequest('an anonymous identity cannot be linked to a user');
    const resolved = await this.resolveIdentity(provider, payload);
    const owner = resolved.ownerId !== undefined ? this.repo.user(resolved.ownerId) : this.repo.userByIdentity(resolved.identity.provider_id, resolved.identity.id);
    if (owner && owner._id !== current.user._id) throw new ApiError(409, 'BadRequest', 'a user already exists with the specified provider identity');
    let user = current.user;
    if (!owner && provider.type !== 'api-key') {
      user = { ...user, identities: [...user.identities, resolved.identity], data: { ...user.data, ...resolved.data } };
      await this.repo.putUser(user);
    }
    const session = current.session;
    return {
      access_token: await this.accessTokenFor(user, session),
      refresh_token: await this.o.tokens.issueRefresh({ userId: user._id, sessionId: session._id, deviceId: session.deviceId, identity: session.identity, expiresAt: session.expiresAt }),
      user_id: user._id,
      device_id: deviceId ?? session.deviceId,
    };
  }

  private async startSession(user: UserRecord, identity: IdentityRecord, deviceId: string): Promise<LoginResponse> {
    const now = this.o.tokens.nowSeconds();
    const expiresAt = identity.provider_type === 'anon-user'
      ? Math.max(ANONYMOUS_REFRESH_EXPIRY, now + (this.o.refreshTokenSeconds ?? DEFAULT_REFRESH_TOKEN_SECONDS))
      : now + (this.o.refreshTokenSeconds ?? DEFAULT_REFRESH_TOKEN_SECONDS);
    const session: SessionRecord = { _id: newId(), userId: user._id, identity: stripData(identity), deviceId, createdAt: this.o.clock.now(), expiresAt };
    await this.repo.putSession(session);
    return {
      access_token: await this.accessTokenFor(user, session),
      refresh_token: await this.o.tokens.issueRefresh({ userId: user._id, sessionId: session._id, deviceId, identity: session.identity, expiresAt }),
      user_id: user._id,
      device_id: deviceId,
    };
  }

  /**
   * A session for an existing user without their credentials: the editor's local admin capability ("run as
   * this user"), reachable only through an admin route. The user's first identity is the session's.
   */
  async sessionForUser(userId: string): Promise<LoginResponse> {
    const user = this.repo.user(userId);
    if (!user) throw new ApiError(404, 'UserNotFound', `user not found: '${userId}'`);
    if (user.disabled) throw new ApiError(403, 'UserDisabled', `user '${userId}' is disabled`);
    const identity = user.identities[0];
    if (!identity) throw new ApiError(400, 'BadRequest', `user '${userId}' has no identity to start a session with`);
    return this.startSession(user, identity, newDeviceId());
  }

  async refresh(refreshToken: string | undefined): Promise<{ access_token: string }> {
    const { user, session } = await this.verifyRefresh(refreshToken);
    return { access_token: await this.accessTokenFor(user, session) };
  }

  async logout(refreshToken: string | undefined): Promise<void> {
    const { session } = await this.verifyRefresh(refreshToken);
    await this.repo.deleteSession(session._id);
  }

  private async accessTokenFor(user: UserRecord, session: SessionRecord): Promise<string> {
    const customData = await this.customData(user);
    return this.o.tokens.issueAccess({
      userId: user._id, sessionId: session._id, deviceId: session.deviceId,
      ...(customData ? { userData: EJSON.serialize(customData, { relaxed: true }) } : {}),
    });
  }

  private async customData(user: UserRecord): Promise<Record<string, unknown> | undefined> {
    return this.o.findCustomUserData ? this.o.findCustomUserData(toAuthUser(user)) : undefined;
  }

  /**
   * The Admin API's `users/verify_token`: the claims of an access token this app signed that has not
   * expired; 401 otherwise. As on the platform, revoking a user's sessions ends its refresh tokens, not the
   * access tokens already issued (they run out), so the session is not looked up here.
   */
  verifyAccessToken(token: unknown): AccessClaims {
    if (typeof token !== 'string' || token === '') throw invalidAccessToken();
    try { return this.o.tokens.check(token, 'access'); } catch (e) {
      if (e instanceof TokenFailure) throw invalidAccessToken();
      throw e;
    }
  }

  private checkAccess(token: string | undefined): { user: UserRecord; session: SessionRecord; claims: AccessClaims } {
    if (!token) throw mustAuthenticate();
    let claims: AccessClaims;
    try { claims = this.o.tokens.check(token, 'access'); } catch (e) {
      if (e instanceof TokenFailure) throw invalidAccessToken();
      throw e;
    }
    const session = this.repo.session(claims.iss);
    const user = this.repo.user(claims.sub);
    if (!session || session.userId !== claims.sub || !user) throw invalidAccessToken();
    if (user.disabled) throw userDisabled();
    return { user, session, claims };
  }

  private async verifyRefresh(token: string | undefined): Promise<{ user: UserRecord; session: SessionRecord }> {
    if (!token) throw mustAuthenticate();
    let claims;
    try { claims = await this.o.tokens.verify(token, 'refresh'); } catch (e) {
      if (e instanceof TokenFailure) throw invalidRefreshToken();
      throw e;
    }
    const session = this.repo.session(claims.baas_id);
    const user = this.repo.user(claims.sub);
    // A disabled user's refresh tokens stop working (the platform revokes them), so the SDK logs the user out.
    if (!session || session.userId !== claims.sub || !user || user.disabled || session.expiresAt < this.o.tokens.nowSeconds()) throw invalidRefreshToken();
    return { user, session };
  }

  // ---- identities ----

  /** Checks the credentials and returns the user they belong to, creating it on first login. */
  private async authenticateIdentity(provider: AuthProvider, payload: Record<string, unknown>): Promise<{ user: UserRecord; identity: IdentityRecord }> {
    const resolved = await this.resolveIdentity(provider, payload);
    if (resolved.ownerId !== undefined) {
      const owner = this.repo.user(resolved.ownerId);
      if (!owner) throw authError('unauthorized: the API key has no user');
      if (owner.disabled) throw userDisabled();
      return { user: owner, identity: resolved.identity };
    }
    const existing = this.repo.userByIdentity(resolved.identity.provider_id, resolved.identity.id);
    if (existing) {
      if (existing.disabled) throw userDisabled();
      if (resolved.identity.data === undefined) return { user: existing, identity: resolved.identity };
      // Metadata is rewritten on every login (auth-custom-jwt.md §4).
      const updated: UserRecord = {
        ...existing,
        data: { ...existing.data, ...resolved.data },
        identities: existing.identities.map((i) => (i.provider_id === resolved.identity.provider_id && i.id === resolved.identity.id ? resolved.identity : i)),
      };
      await this.repo.putUser(updated);
      return { user: updated, identity: resolved.identity };
    }
    const user: UserRecord = { _id: newId(), type: 'normal', disabled: false, createdAt: this.o.clock.now(), data: resolved.data, identities: [resolved.identity] };
    await this.repo.putUser(user);
    if (this.o.onUserCreated) {
      try { await this.o.onUserCreated(toAuthUser(user)); } catch (e) {
        this.o.log.warn(`the user creation function failed for user ${user._id}: ${(e as Error).message}`);
      }
    }
    await this.o.onAuthEvent?.({ operationType: 'CREATE', providers: [resolved.identity.provider_type], user: toAuthUser(user) });
    return { user, identity: resolved.identity };
  }

  private async resolveIdentity(provider: AuthProvider, payload: Record<string, unknown>): Promise<{ identity: IdentityRecord; data: Record<string, unknown>; ownerId?: string }> {
    const providerId = this.providerId(provider);
    const identity = (id: string, data?: Record<string, unknown>): IdentityRecord => ({ id, provider_type: provider.type, provider_id: providerId, ...(data ? { data } : {}) });
    switch (provider.type) {
      case 'anon-user':
        return { identity: identity(newId()), data: {} };
      case 'local-userpass': {
        const account = await this.checkPassword(payload.username, payload.password);
        return { identity: identity(account._id), data: { email: account.email } };
      }
      case 'api-key': {
        const key = this.apiKeyFromSecret(payload.key);
        return { identity: identity(key._id), data: {}, ownerId: key.userId };
      }
      case 'custom-token': {
        const { sub, metadata } = await this.jwtVerifier(provider).verify(payload.token);
        return { identity: identity(sub, metadata), data: metadata };
      }
      case 'custom-function':
        return { identity: identity(await this.runAuthFunction(provider, payload)), data: {} };
      default:
        throw new ApiError(400, 'AuthProviderNotFound', `authentication via '${provider.name}' (${provider.type}) is not supported by the local runtime`);
    }
  }

  private async checkPassword(username: unknown, password: unknown): Promise<UserpassRecord> {
    // Unknown users and wrong passwords get the same answer after the same work, so neither is revealed.
    const account = typeof username === 'string' ? this.repo.accountByEmail(username) : undefined;
    const ok = await verifyPassword(typeof password === 'string' ? password : '', account?.passwordHash ?? await decoyHash());
    if (!account || !ok) throw new ApiError(401, 'InvalidPassword', 'invalid username/password');
    if (!account.confirmed) throw authError('confirmation required');
    return account;
  }

  private apiKeyFromSecret(key: unknown): ApiKeyRecord {
    const record = typeof key === 'string' && key !== '' ? this.repo.apiKeyByHash(sha256(key)) : undefined;
    if (!record) throw authError('invalid API key');
    if (record.disabled) throw authError('API key is disabled');
    return record;
  }

  private jwtVerifier(provider: AuthProvider): CustomJwtVerifier {
    let v = this.jwtVerifiers.get(provider.name);
    if (!v) this.jwtVerifiers.set(provider.name, (v = new CustomJwtVerifier(provider, this.o.appId, this.o.secrets, this.o.clock, this.o.keySets)));
    return v;
  }

  private async runAuthFunction(provider: AuthProvider, payload: Record<string, unknown>): Promise<string> {
    const name = provider.config.authFunctionName;
    if (typeof name !== 'string' || name === '') throw new ApiError(500, 'InternalServerError', `auth provider '${provider.name}' names no authFunctionName`);
    const { options: _device, ...credentials } = payload;
    let result: unknown;
    try { result = await this.system(name, [credentials]); } catch (e) {
      throw authError(`authentication function '${name}' failed: ${(e as Error).message}`);
    }
    const id = typeof result === 'string' ? result
      : result !== null && typeof result === 'object' && typeof (result as { id?: unknown }).id === 'string' ? (result as { id: string }).id
        : result !== null && typeof result === 'object' && typeof (result as { toHexString?: unknown }).toHexString === 'function' ? (result as { toHexString(): string }).toHexString()
          : undefined;
    if (!id) throw authError(`authentication function '${name}' must return a string id or an object with a string 'id'`);
    return id;
  }

  private system(name: string, args: unknown[]): Promise<unknown> {
    if (!this.o.runFunction) throw new ApiError(500, 'InternalServerError', `function '${name}' cannot run: no function runner is attached`);
    return this.o.runFunction(name, args);
  }

  // ---- request authentication ----

  /** The caller of a request with `Authorization: Bearer <access token>`; synchronous work, as a promise. */
  requireAccessToken(headers: IncomingHttpHeaders): Promise<AuthenticatedRequest> {
    try {
      return Promise.resolve(this.bearerCaller(headers));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private bearerCaller(headers: IncomingHttpHeaders): AuthenticatedRequest {
    const auth = headerValue(headers.authorization);
    // No header, or `Bearer` with no token (what the native SDKs send for a logged-out user).
    if (auth === undefined || /^\s*(?:Bearer\s*)?$/i.test(auth)) throw mustAuthenticate();
    const match = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (!match) throw invalidAccessToken();
    const token = match[1];
    const { user, session, claims } = this.checkAccess(token);
    const known = this.bearerCallers.get(token);
    if (known && known.user === user && known.session === session) return known.caller;
    // As on the platform, custom user data is what the access token carries: read when the token was
    // issued, fresh again after a refresh (the SDKs' refreshCustomData), not looked up on every request.
    const customData = isObject(claims.user_data) ? EJSON.deserialize(claims.user_data, { relaxed: true }) as Record<string, unknown> : undefined;
    const caller: AuthenticatedRequest = { user: toAuthUser(user), sessionId: session._id, ...(customData ? { customData } : {}) };
    this.bearerCallers.set(token, { user, session, caller });
    if (this.bearerCallers.size > BEARER_CALLERS_KEPT) this.bearerCallers.delete(this.bearerCallers.keys().next().value!);
    return caller;
  }

  /**
   * The caller each access token last stood for, handed out again (the same object) while its user and
   * session records are unchanged (they are replaced, never mutated, on change), so that what later
   * steps derive from a caller (rule decisions) can be kept per caller. Every check still runs per request.
   */
  private readonly bearerCallers = new Map<string, { user: UserRecord; session: SessionRecord; caller: AuthenticatedRequest }>();

  /** GraphQL authentication, in the platform's order (client-api.md §9). */
  authenticateRequest(headers: IncomingHttpHeaders): Promise<AuthenticatedRequest> {
    return headers.authorization !== undefined ? this.requireAccessToken(headers) : this.authenticateByCredentials(headers);
  }

  private async authenticateByCredentials(headers: IncomingHttpHeaders): Promise<AuthenticatedRequest> {
    const email = headerValue(headers.email);
    const password = headerValue(headers.password);
    const apiKey = headerValue(headers.apikey);
    const jwt = headerValue(headers.jwttokenstring);
    let found: { user: UserRecord } | undefined;
    if (email !== undefined || password !== undefined) {
      found = await this.authenticateIdentity(this.credentialProvider('local-userpass', 'email/password'), { username: email, password });
    } else if (apiKey !== undefined) {
      found = await this.authenticateIdentity(this.credentialProvider('api-key', 'API key'), { key: apiKey });
    } else if (jwt !== undefined) {
      found = await this.authenticateIdentity(this.credentialProvider('custom-token', 'custom JWT'), { token: jwt });
    }
    if (!found) throw new ApiError(401, 'MissingAuthReq', 'must authenticate first: send an Authorization: Bearer <access token> header or credential headers');
    const customData = await this.customData(found.user);
    return { user: toAuthUser(found.user), ...(customData ? { customData } : {}) };
  }

  private credentialProvider(type: string, what: string): AuthProvider {
    const p = this.enabledOfType(type);
    if (!p) throw authError(`${what} credential headers were sent but the ${type} provider is not enabled`);
    return p;
  }

  // ---- profile and users ----

  async profile(accessToken: string | undefined): Promise<Record<string, unknown>> {
    const { user } = this.checkAccess(accessToken);
    return {
      user_id: user._id,
      domain_id: this.o.domainId,
      identities: user.identities.map((i) => ({ id: i.id, provider_type: i.provider_type, provider_id: i.provider_id, ...(i.data ? { data: i.data } : {}) })),
      data: user.data,
      type: user.type,
    };
  }

  async deleteCurrentUser(accessToken: string | undefined): Promise<void> {
    const { user } = this.checkAccess(accessToken);
    await this.repo.deleteUser(user._id);
    void this.o.onAuthEvent?.({ operationType: 'DELETE', providers: [...new Set(user.identities.map((i) => i.provider_type))], user: toAuthUser(user) });
  }

  /** Every user of the app (the editor's user list). */
  users(): Array<AuthUser & { disabled: boolean }> {
    return this.repo.users().map((u) => ({ ...toAuthUser(u), disabled: u.disabled }));
  }

  /** An email/password user made by the developer: confirmed at once, with its user record. */
  async createEmailPasswordUser(email: unknown, password: unknown): Promise<AuthUser> {
    const provider = this.userpass();
    if (typeof email !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(email.trim())) throw badRequest('email invalid');
    checkNewPassword(password);
    if (this.repo.accountByEmail(email)) throw new ApiError(409, 'AccountNameInUse', 'name already in use');
    await this.repo.putAccount({ _id: newId(), email: email.trim(), passwordHash: await hashPassword(password as string), confirmed: true, createdAt: this.o.clock.now() });
    const { user } = await this.authenticateIdentity(provider, { username: email.trim(), password });
    return toAuthUser(user);
  }

  /** Deletes a user and its sessions (the developer's action; the user's documents stay). */
  async deleteUserById(userId: string): Promise<void> {
    const user = this.repo.user(userId);
    if (!user) throw new ApiError(404, 'UserNotFound', `user not found: '${userId}'`);
    await this.repo.deleteUser(user._id);
    void this.o.onAuthEvent?.({ operationType: 'DELETE', providers: [...new Set(user.identities.map((i) => i.provider_type))], user: toAuthUser(user) });
  }

  /** For the admin API: a disabled user cannot log in, refresh or use its tokens. */
  async setUserDisabled(userId: string, disabled: boolean): Promise<void> {
    const user = this.repo.user(userId);
    if (!user) throw new ApiError(404, 'UserNotFound', 'user not found');
    await this.repo.putUser({ ...user, disabled });
  }

  user(userId: string): AuthUser | undefined {
    const u = this.repo.user(userId);
    return u ? toAuthUser(u) : undefined;
  }

  /** For the admin API: every user record, as stored. */
  userRecords(): UserRecord[] { return this.repo.users(); }

  /** For the admin API: ends every session of the user (their refresh and access tokens stop working). */
  async revokeSessions(userId: string): Promise<void> {
    if (!this.repo.user(userId)) throw new ApiError(404, 'UserNotFound', `user not found: '${userId}'`);
    await Promise.all(this.repo.sessionsOf(userId).map((s) => this.repo.deleteSession(s._id)));
  }

  // ---- push registrations (access token; see push.ts) ----

  /**
   * Registers the caller's device (the device of its session) for notifications of `service`, replacing
   * that device's earlier token. Only the caller's own registrations are ever touched. A user keeps at most
   * MAX_PUSH_REGISTRATIONS_PER_USER (a new login is a new device): the oldest go first.
   */
  async registerPushDevice(caller: AuthenticatedRequest, service: string, registrationToken: string): Promise<void> {
    const { userId, deviceId } = this.deviceOf(caller);
    const id = pushRegistrationId(userId, deviceId, service);
    await this.repo.putPushRegistration({ _id: id, userId, deviceId, service, registrationToken, updatedAt: this.o.clock.now() });
    const all = this.repo.pushRegistrations(userId);
    const excess = all.filter((r) => r._id !== id).slice(0, Math.max(0, all.length - MAX_PUSH_REGISTRATIONS_PER_USER));
    await Promise.all(excess.map((r) => this.repo.deletePushRegistration(r._id)));
  }

  /** Removes the caller's device's registration for `service`; nothing to remove is not an error. */
  async deregisterPushDevice(caller: AuthenticatedRequest, service: string): Promise<void> {
    const { userId, deviceId } = this.deviceOf(caller);
    const id = pushRegistrationId(userId, deviceId, service);
    if (this.repo.pushRegistration(id)) await this.repo.deletePushRegistration(id);
  }

  /** A user's push registrations (service, device, token), oldest first. */
  pushRegistrations(userId: string): Array<{ service: string; deviceId: string; registrationToken: string }> {
    return this.repo.pushRegistrations(userId).map((r) => ({ service: r.service, deviceId: r.deviceId, registrationToken: r.registrationToken }));
  }

  private deviceOf(caller: AuthenticatedRequest): { userId: string; deviceId: string } {
    const session = caller.sessionId === undefined ? undefined : this.repo.session(caller.sessionId);
    if (!session || session.userId !== caller.user.id) throw invalidAccessToken();
    return { userId: session.userId, deviceId: session.deviceId };
  }

  // ---- user API keys (refresh token) ----

  async createApiKey(refreshToken: string | undefined, body: unknown): Promise<{ _id: string; key: string; name: string; disabled: boolean }> {
    const { user } = await this.verifyRefresh(refreshToken);
    if (!this.enabledOfType('api-key')) throw new ApiError(400, 'AuthProviderNotFound', "API keys need the 'api-key' provider to be enabled");
    const name = asObject(body ?? {}).name;
    if (typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw new ApiError(400, 'InvalidParameter', 'API key name must be 1-64 letters, digits, "_" or "-"');
    if (this.repo.apiKeys(user._id).some((k) => k.name === name)) throw new ApiError(409, 'APIKeyAlreadyExists', `API key with name already exists: ${name}`);
    const key = randomBytes(48).toString('base64url');
    const record: ApiKeyRecord = { _id: newId(), userId: user._id, name, keyHash: sha256(key), disabled: false, createdAt: this.o.clock.now() };
    await this.repo.putApiKey(record);
    return { _id: record._id, key, name, disabled: false };
  }

  async listApiKeys(refreshToken: string | undefined): Promise<Array<{ _id: string; name: string; disabled: boolean }>> {
    const { user } = await this.verifyRefresh(refreshToken);
    return this.repo.apiKeys(user._id).map(publicKey);
  }

  async getApiKey(refreshToken: string | undefined, id: string): Promise<{ _id: string; name: string; disabled: boolean }> {
    const { user } = await this.verifyRefresh(refreshToken);
    return publicKey(this.ownKey(user, id));
  }

  async setApiKeyDisabled(refreshToken: string | undefined, id: string, disabled: boolean): Promise<void> {
    const { user } = await this.verifyRefresh(refreshToken);
    await this.repo.putApiKey({ ...this.ownKey(user, id), disabled });
  }

  async deleteApiKey(refreshToken: string | undefined, id: string): Promise<void> {
    const { user } = await this.verifyRefresh(refreshToken);
    await this.repo.deleteApiKey(this.ownKey(user, id)._id);
  }

  private ownKey(user: UserRecord, id: string): ApiKeyRecord {
    const key = this.repo.apiKey(id);
    if (!key || key.userId !== user._id) throw new ApiError(404, 'APIKeyNotFound', 'API key not found');
    return key;
  }

  // ---- email/password flows ----

  private userpass(): AuthProvider {
    const p = this.enabledOfType('local-userpass');
    if (!p) throw new ApiError(404, 'AuthProviderNotFound', "authentication via 'local-userpass' is unsupported");
    return p;
  }

  async register(body: unknown): Promise<void> {
    const provider = this.userpass();
    const { email, password } = asObject(body ?? {});
    if (typeof email !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(email.trim())) throw badRequest('email invalid');
    checkNewPassword(password);
    if (this.repo.accountByEmail(email)) throw new ApiError(409, 'AccountNameInUse', 'name already in use');
    const account: UserpassRecord = { _id: newId(), email: email.trim(), passwordHash: await hashPassword(password), confirmed: false, createdAt: this.o.clock.now() };
    if (provider.config.autoConfirm === true) {
      await this.repo.putAccount({ ...account, confirmed: true });
      return;
    }
    await this.repo.putAccount(account);
    if (provider.config.runConfirmationFunction === true) {
      const status = await this.runConfirmation(provider, account);
      if (status === 'fail') {
        await this.repo.deleteAccount(account._id);
        throw badRequest(`failed to confirm user "${account.email}"`);
      }
      return;
    }
    await this.mailToken(provider, account, 'confirm');
  }

  async confirm(body: unknown): Promise<void> {
    this.userpass();
    const { token, tokenId } = asObject(body ?? {});
    const record = this.takeToken(token, tokenId, 'confirm');
    const account = this.repo.account(record.accountId);
    if (!account) throw tokenInvalid();
    await this.repo.deleteToken(record._id);
    if (account.confirmed) throw new ApiError(400, 'UserAlreadyConfirmed', 'already confirmed');
    await this.repo.putAccount({ ...account, confirmed: true });
  }

  async resendConfirmation(body: unknown): Promise<void> {
    const provider = this.userpass();
    const account = this.pendingAccount(asObject(body ?? {}).email);
    await this.mailToken(provider, account, 'confirm');
  }

  async rerunConfirmation(body: unknown): Promise<void> {
    const provider = this.userpass();
    const { email } = asObject(body ?? {});
    if (provider.config.autoConfirm === true) throw badRequest(`cannot run confirmation for ${String(email)}: automatic confirmation is enabled`);
    if (provider.config.runConfirmationFunction !== true) throw badRequest(`cannot run confirmation for ${String(email)}: the confirmation function is not enabled`);
    const account = this.pendingAccount(email);
    if (await this.runConfirmation(provider, account) === 'fail') throw badRequest(`failed to confirm user "${account.email}"`);
  }

  async resetPassword(body: unknown): Promise<void> {
    this.userpass();
    const { token, tokenId, password } = asObject(body ?? {});
    const record = this.takeToken(token, tokenId, 'reset');
    checkNewPassword(password);
    const account = this.repo.account(record.accountId);
    if (!account) throw tokenInvalid();
    await this.repo.deleteToken(record._id);
    await this.repo.putAccount({ ...account, passwordHash: await hashPassword(password) });
  }

  async sendResetEmail(body: unknown): Promise<void> {
    const provider = this.userpass();
    if (provider.config.runResetFunction === true) throw badRequest('please use reset password via function');
    const account = this.knownAccount(asObject(body ?? {}).email);
    await this.mailToken(provider, account, 'reset');
  }

  async callResetFunction(body: unknown): Promise<void> {
    const provider = this.userpass();
    if (provider.config.runResetFunction !== true) throw badRequest('reset password via function is not enabled');
    const { email, password, arguments: args } = asObject(body ?? {});
    checkNewPassword(password);
    const account = this.knownAccount(email);
    const name = functionName(provider, 'resetFunctionName');
    const { token, tokenId } = await this.newToken(account, 'reset');
    let status: string;
    try {
      status = statusOf(await this.system(name, [{ token, tokenId, username: account.email, password }, ...(Array.isArray(args) ? args : [])]));
    } catch (e) {
      this.o.log.warn(`reset function '${name}' failed for "${account.email}": ${(e as Error).message}`);
      status = 'fail';
    }
    if (status === 'success') {
      await this.repo.deleteToken(tokenId);
      await this.repo.putAccount({ ...account, passwordHash: await hashPassword(password) });
      return;
    }
    if (status === 'pending') return;
    await this.repo.deleteToken(tokenId);
    throw badRequest(`failed to reset password for user "${account.email}"`);
  }

  private async runConfirmation(provider: AuthProvider, account: UserpassRecord): Promise<string> {
    const name = functionName(provider, 'confirmationFunctionName');
    const { token, tokenId } = await this.newToken(account, 'confirm');
    let status: string;
    try {
      status = statusOf(await this.system(name, [{ token, tokenId, username: account.email }]));
    } catch (e) {
      this.o.log.warn(`confirmation function '${name}' failed for "${account.email}": ${(e as Error).message}`);
      status = 'fail';
    }
    if (status === 'success') {
      await this.repo.deleteToken(tokenId);
      await this.repo.putAccount({ ...account, confirmed: true });
    } else if (status === 'fail') {
      await this.repo.deleteToken(tokenId);
    }
    return status;
  }

  private async mailToken(provider: AuthProvider, account: UserpassRecord, kind: 'confirm' | 'reset'): Promise<void> {
    const { token, tokenId } = await this.newToken(account, kind);
    const base = provider.config[kind === 'confirm' ? 'emailConfirmationUrl' : 'resetPasswordUrl'];
    let url: string | undefined;
    if (typeof base === 'string' && base !== '') {
      try {
        const u = new URL(base);
        u.searchParams.set('token', token);
        u.searchParams.set('tokenId', tokenId);
        url = u.toString();
      } catch { url = undefined; }
    }
    const subjectKey = kind === 'confirm' ? 'confirmEmailSubject' : 'resetPasswordSubject';
    const subject = typeof provider.config[subjectKey] === 'string' ? provider.config[subjectKey] as string : kind === 'confirm' ? 'Confirm your email' : 'Reset your password';
    const mail: EmailMessage = { kind, to: account.email, subject, token, tokenId, ...(url ? { url } : {}) };
    if (this.o.sendEmail) await this.o.sendEmail(mail);
    else this.o.log.info(`email to ${mail.to} (${subject}): ${url ?? `token=${token} tokenId=${tokenId}`}`);
  }

  private async newToken(account: UserpassRecord, kind: 'confirm' | 'reset'): Promise<{ token: string; tokenId: string }> {
    const token = randomBytes(32).toString('hex');
    const tokenId = newId();
    await this.repo.putToken({ _id: tokenId, kind, accountId: account._id, tokenHash: sha256(token), expiresAt: this.o.clock.now() + TOKEN_LIFETIME_MS });
    return { token, tokenId };
  }

  private takeToken(token: unknown, tokenId: unknown, kind: 'confirm' | 'reset') {
    const record = typeof tokenId === 'string' ? this.repo.token(tokenId) : undefined;
    if (!record || record.kind !== kind || typeof token !== 'string' || record.tokenHash !== sha256(token) || record.expiresAt < this.o.clock.now()) throw tokenInvalid();
    return record;
  }

  private knownAccount(email: unknown): UserpassRecord {
    const account = typeof email === 'string' ? this.repo.accountByEmail(email) : undefined;
    if (!account) throw new ApiError(404, 'UserNotFound', 'user not found');
    return account;
  }

  private pendingAccount(email: unknown): UserpassRecord {
    const account = this.knownAccount(email);
    if (account.confirmed) throw new ApiError(400, 'UserAlreadyConfirmed', 'already confirmed');
    return account;
  }
}

export function toAuthUser(u: UserRecord): AuthUser {
  return { id: u._id, type: u.type, data: u.data, identities: u.identities };
}

function publicKey(k: ApiKeyRecord) {
  return { _id: k._id, name: k.name, disabled: k.disabled };
}

function stripData(i: IdentityRecord): IdentityRecord {
  return { id: i.id, provider_type: i.provider_type, provider_id: i.provider_id };
}

/** The device id the client sent in `options.device.deviceId` (24 hex digits, not all zeros); undefined when none. */
function deviceIdOf(payload: Record<string, unknown>): string | undefined {
  const options = payload.options;
  const device = options && typeof options === 'object' ? (options as Record<string, unknown>).device : undefined;
  const id = device && typeof device === 'object' ? (device as Record<string, unknown>).deviceId : undefined;
  return typeof id === 'string' && HEX24.test(id) && id !== NO_DEVICE_ID ? id : undefined;
}

/**
 * A new device for a login that named none: as on the platform, an ObjectId the client keeps and sends
 * again (the native core reads `has_device_id()` as "not the all-zero id"; the Web SDK stores it).
 */
function newDeviceId(): string {
  return new ObjectId().toHexString();
}

function asObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('the request body must be a JSON object');
  return body as Record<string, unknown>;
}

function checkNewPassword(password: unknown): asserts password is string {
  if (typeof password !== 'string' || password.length < 6 || password.length > 128) throw badRequest('password must be between 6 and 128 characters');
}

function functionName(provider: AuthProvider, key: string): string {
  const name = provider.config[key];
  if (typeof name !== 'string' || name === '') throw new ApiError(500, 'InternalServerError', `auth provider '${provider.name}' has no ${key}`);
  return name;
}

function statusOf(result: unknown): string {
  const status = result !== null && typeof result === 'object' ? (result as { status?: unknown }).status : undefined;
  return status === 'success' || status === 'pending' ? status : 'fail';
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

const userDisabled = () => new ApiError(401, 'UserDisabled', 'user disabled');
const tokenInvalid = () => new ApiError(400, 'UserpassTokenInvalid', 'invalid token data');

function newId(): string {
  return randomBytes(12).toString('hex');
}

/** How many push registrations one user keeps. */
export const MAX_PUSH_REGISTRATIONS_PER_USER = 50;

function pushRegistrationId(userId: string, deviceId: string, service: string): string {
  return sha256(`push\u0000${userId}\u0000${deviceId}\u0000${service}`).slice(0, 24);
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
