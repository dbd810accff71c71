// Access and refresh tokens: HS256 JWTs with the platform's claims (client-api.md §11), signed with a
// secret generated once per data dir. The clock is injected so tests can expire tokens.
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadJose, type JWTPayload } from './jose';
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

export class TokenService {
  constructor(
    private readonly secret: Uint8Array,
    private readonly clock: Clock,
    private readonly domainId: string,
  ) {}

  nowSeconds(): number { return Math.floor(this.clock.now() / 1000); }

  issueAccess(input: { userId: string; sessionId: string; deviceId: string; userData?: unknown }): Promise<string> {
    const iat = this.nowSeconds();
    const claims: Record<string, unknown> = {
      baas_device_id: input.deviceId, baas_domain_id: this.domainId,
      stitch_devId: input.deviceId, stitch_domainId: this.domainId,
      typ: 'access',
    };
    if (input.userData !== undefined) claims.user_data = input.userData;
    return this.sign({ ...claims, sub: input.userId, iss: input.sessionId, iat, exp: iat + ACCESS_TOKEN_SECONDS });
  }

  issueRefresh(input: { userId: string; sessionId: string; deviceId: string; identity: IdentityRecord; expiresAt: number }): Promise<string> {
    const identity = { id: input.identity.id, provider_type: input.identity.provider_type, provider_id: input.identity.provider_id };
    return this.sign({
      baas_data: null, baas_device_id: input.deviceId, baas_domain_id: this.domainId, baas_id: input.sessionId, baas_identity: identity,
      stitch_data: null, stitch_devId: input.deviceId, stitch_domainId: this.domainId, stitch_id: input.sessionId, stitch_ident: identity,
      typ: 'refresh', sub: input.userId, iat: this.nowSeconds(), exp: input.expiresAt,
    });
  }

  /** Verifies signature, expiry and kind; throws TokenFailure otherwise (the caller picks the 401 body). */
  async verify(token: string, kind: 'access'): Promise<AccessClaims>;
  async verify(token: string, kind: 'refresh'): Promise<RefreshClaims>;
  async verify(token: string, kind: 'access' | 'refresh'): Promise<AccessClaims | RefreshClaims> {
    if (token.length > MAX_TOKEN_CHARS) throw new TokenFailure('token too large');
    const { jwtVerify } = await loadJose();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.secret, {
        algorithms: ['HS256'], requiredClaims: ['sub', 'exp', 'iat', 'typ'], currentDate: new Date(this.clock.now()),
      }));
    } catch (e) {
      throw new TokenFailure((e as Error).message);
    }
    if (payload.typ !== kind) throw new TokenFailure(`expected a ${kind} token`);
    if (kind === 'access' && typeof payload.iss !== 'string') throw new TokenFailure('access token without session');
    if (kind === 'refresh' && typeof payload.baas_id !== 'string') throw new TokenFailure('refresh token without session');
    return payload as AccessClaims | RefreshClaims;
  }

  private async sign(claims: Record<string, unknown>): Promise<string> {
    const { SignJWT } = await loadJose();
    return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(this.secret);
  }
}

/** The data dir's token secret, created on first use with mode 0600; concurrent first starts agree on one. */
export async function loadOrCreateTokenSecret(dataDir: string): Promise<Uint8Array> {
  const file = path.join(dataDir, 'auth', 'token-secret');
  await fsp.mkdir(path.dirname(file), { recursive: true });
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
