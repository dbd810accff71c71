// Access and refresh tokens: HS256 JWTs with the platform's claims (client-api.md §11), signed with a
// secret generated once per data dir. The clock is injected so tests can expire tokens.
import fsp from 'node:fs/promises';
import path from 'node:path';
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { JWTPayload } from './jose';
import type { IdentityRecord } from './repository';

export interface Clock { now(): number }
export const systemClock: Clock = { now: () => Date.now() };

export const ACCESS_TOKEN_SECONDS = 30 * 60;
export const DEFAULT_REFRESH_TOKEN_SECONDS = 60 * 24 * 60 * 60;
/** Refresh-token expiry the platform gives anonymous users: effectively never. */
export const ANONYMOUS_REFRESH_EXPIRY = 3244738818;
/** Longest token we try to verify; anything longer is refused before any parsing. */
export const MAX_TOKEN_CHARS = 1_000_000;
export const NO_DEVICE_ID = '000000000000000000000000';

export interface AccessClaims extends JWTPayload { sub: string; typ: 'access'; iss: string; baas_device_id: string; user_data?: unknown }
export interface RefreshClaims extends JWTPayload { sub: string; typ: 'refresh'; baas_id: string; baas_identity: Pick<IdentityRecord, 'id' | 'provider_type' | 'provider_id'>; baas_device_id: string }

export class TokenFailure extends Error {}

/**
 * The runtime's own tokens are signed and checked only here, always HS256 with one key, so they are
 * handled with node:crypto directly: an order of magnitude cheaper per request than a general JOSE library,
 * which matters because every authenticated request verifies one. (Tokens from identity providers, with
 * their many algorithms and key sets, go through jose in customJwt.ts.)
 */
export class TokenService {
  private readonly key: KeyObject;

  constructor(
    secret: Uint8Array,
    private readonly clock: Clock,
    private readonly domainId: string,
    /** How long an access token lasts; the platform's 30 minutes unless an operator or a test shortens it. */
    private readonly accessTokenSeconds = ACCESS_TOKEN_SECONDS,
  ) {
    this.key = createSecretKey(secret);
  }

  nowSeconds(): number { return Math.floor(this.clock.now() / 1000); }

  issueAccess(input: { userId: string; sessionId: string; deviceId: string; userData?: unknown }): Promise<string> {
    const iat = this.nowSeconds();
    const claims: Record<string, unknown> = {
      baas_device_id: input.deviceId, baas_domain_id: this.domainId,
      stitch_devId: input.deviceId, stitch_domainId: this.domainId,
      typ: 'access',
    };
    if (input.userData !== undefined) claims.user_data = input.userData;
    return Promise.resolve(this.sign({ ...claims, sub: input.userId, iss: input.sessionId, iat, exp: iat + this.accessTokenSeconds, jti: newTokenId() }));
  }

  issueRefresh(input: { userId: string; sessionId: string; deviceId: string; identity: IdentityRecord; expiresAt: number }): Promise<string> {
    const identity = { id: input.identity.id, provider_type: input.identity.provider_type, provider_id: input.identity.provider_id };
    return Promise.resolve(this.sign({
      baas_data: null, baas_device_id: input.deviceId, baas_domain_id: this.domainId, baas_id: input.sessionId, baas_identity: identity,
      stitch_data: null, stitch_devId: input.deviceId, stitch_domainId: this.domainId, stitch_id: input.sessionId, stitch_ident: identity,
      typ: 'refresh', sub: input.userId, iat: this.nowSeconds(), exp: input.expiresAt, jti: newTokenId(),
    }));
  }

  /** Verifies signature, algorithm, expiry and kind; rejects with TokenFailure otherwise (the caller picks the 401 body). */
  async verify(token: string, kind: 'access'): Promise<AccessClaims>;
  async verify(token: string, kind: 'refresh'): Promise<RefreshClaims>;
  async verify(token: string, kind: 'access' | 'refresh'): Promise<AccessClaims | RefreshClaims> {
    return this.check(token, kind);
  }

  /** `verify` without the promise, for the per-request path; throws TokenFailure. */
  check(token: string, kind: 'access'): AccessClaims;
  check(token: string, kind: 'refresh'): RefreshClaims;
  check(token: string, kind: 'access' | 'refresh'): AccessClaims | RefreshClaims;
  check(token: string, kind: 'access' | 'refresh'): AccessClaims | RefreshClaims {
    if (typeof token !== 'string' || token.length > MAX_TOKEN_CHARS) throw new TokenFailure('token too large');
    const known = this.verified.get(token);
    const payload = known ?? this.checkSignature(token);
    if (!known) this.remember(token, payload);
    const now = this.nowSeconds();
    if ((payload.exp as number) <= now) throw new TokenFailure('"exp" claim timestamp check failed');
    if (typeof payload.nbf === 'number' && payload.nbf > now) throw new TokenFailure('"nbf" claim timestamp check failed');
    if (payload.typ !== kind) throw new TokenFailure(`expected a ${kind} token`);
    if (kind === 'access' && typeof payload.iss !== 'string') throw new TokenFailure('access token without session');
    if (kind === 'refresh' && typeof payload.baas_id !== 'string') throw new TokenFailure('refresh token without session');
    return payload as unknown as AccessClaims | RefreshClaims;
  }

  /**
   * The user of an `Authorization: Bearer <token>` header whose token this service signed and has already
   * verified, else undefined; for the request log, so it never verifies anything itself.
   */
  verifiedSubject(authorization: string | undefined): string | undefined {
    if (authorization === undefined || !/^bearer\s/i.test(authorization)) return undefined;
    const sub = this.verified.get(authorization.slice(7).trim())?.sub;
    return typeof sub === 'string' ? sub : undefined;
  }

  /**
   * Tokens whose signature checked out, by their exact text: a client sends the same access token with
   * every request for up to 30 minutes. Only the signature check is skipped; expiry and kind are checked
   * on every use, and the caller still looks the session up.
   */
  private readonly verified = new Map<string, Record<string, unknown>>();

  private remember(token: string, payload: Record<string, unknown>): void {
    this.verified.set(token, payload);
    if (this.verified.size > VERIFIED_TOKENS_KEPT) this.verified.delete(this.verified.keys().next().value!);
  }

  /** The payload of a token signed with our key (HS256, well-formed, with the required claims), else TokenFailure. */
  private checkSignature(token: string): Record<string, unknown> {
    const parts = token.split('.');
    if (parts.length !== 3) throw new TokenFailure('malformed token');
    const [header, body, signature] = parts;
    // The signature is compared as the exact base64url text we would produce, so no lenient decoding matters.
    const expected = Buffer.from(this.signature(`${header}.${body}`));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new TokenFailure('signature verification failed');
    const protectedHeader = decodeJson(header);
    if (protectedHeader?.alg !== 'HS256') throw new TokenFailure('unexpected "alg" header value');
    const payload = decodeJson(body);
    if (!payload) throw new TokenFailure('malformed payload');
    for (const claim of ['sub', 'typ'] as const) if (typeof payload[claim] !== 'string') throw new TokenFailure(`missing required "${claim}" claim`);
    for (const claim of ['exp', 'iat'] as const) if (typeof payload[claim] !== 'number') throw new TokenFailure(`missing required "${claim}" claim`);
    return Object.freeze(payload);
  }

  private sign(claims: Record<string, unknown>): string {
    const signingInput = `${TOKEN_HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    return `${signingInput}.${this.signature(signingInput)}`;
  }

  private signature(signingInput: string): string {
    return createHmac('sha256', this.key).update(signingInput).digest('base64url');
  }
}

/**
 * A unique `jti` claim makes every issued token distinct, even two issued in the same second with the same
 * claims (a refresh right after login): clients tell tokens apart by their text.
 */
function newTokenId(): string {
  return randomBytes(12).toString('base64url');
}

/** Verified tokens remembered (about 0.5 KiB each). */
const VERIFIED_TOKENS_KEPT = 10_000;

const TOKEN_HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The data dir's token secret, created on first use with mode 0600; concurrent first starts agree on one. */
export async function loadOrCreateTokenSecret(dataDir: string, file = path.join(dataDir, 'auth', 'token-secret')): Promise<Uint8Array> {
  await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    return decodeSecret(await fsp.readFile(file, 'utf8'), file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  const handle = await fsp.open(tmp, 'wx', 0o600);
  try { await handle.write(randomBytes(48).toString('base64url')); await handle.sync(); } finally { await handle.close(); }
  try {
    await fsp.link(tmp, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    await fsp.unlink(tmp);
  }
  return decodeSecret(await fsp.readFile(file, 'utf8'), file);
}

function decodeSecret(text: string, file: string): Uint8Array {
  const bytes = Buffer.from(text.trim(), 'base64url');
  if (bytes.length < 32) throw new Error(`${file} does not hold a valid token secret; delete it to make a new one (all sessions end)`);
  return new Uint8Array(bytes);
}
