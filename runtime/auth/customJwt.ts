// The `custom-token` provider (auth-custom-jwt.md): verifies a JWT from an external identity system,
// with HS256/RS256 keys from secrets or an asymmetric key set fetched from `jwkURI`, and maps
// `metadata_fields` into the user's data. Every failure is a 401 AuthError with a clear reason.
import { createSecretKey, type KeyObject } from 'node:crypto';
import { loadJose, type FetchImplementation, type Jose, type JWTPayload, type RemoteKeySet, type VerificationKey } from './jose';
import type { AuthProvider } from '../../core/model';
import { ApiError, authError } from '../http/errors';
import type { SecretStore } from '../secrets';
import { MissingSecretError } from '../secrets';
import { MAX_TOKEN_CHARS, type Clock } from './tokens';

/** Algorithms accepted through a key set: every asymmetric JWS algorithm jose verifies. */
const KEY_SET_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
const MAX_METADATA_CHARS = 4096;

export interface KeySetOptions {
  /** Give up on a key-set fetch after this long (jose's default 5000 ms). */
  timeoutMs?: number;
  /** Least time between two refetches triggered by an unknown `kid` (jose's default 30000 ms). */
  cooldownMs?: number;
  /** Refetch the key set when it is older than this (jose's default 600000 ms). */
  cacheMaxAgeMs?: number;
  /** Replaces global fetch for key-set requests (tests). */
  fetch?: FetchImplementation;
}

export interface VerifiedCustomToken {
  sub: string;
  /** `metadata_fields` mapped to their field names. */
  metadata: Record<string, unknown>;
}

interface MetadataField { path: string[]; name: string; fieldName: string; required: boolean }

export class CustomJwtVerifier {
  private readonly keySets = new Map<string, RemoteKeySet>();
  private readonly hmacKeys = new Map<string, KeyObject>();
  private readonly fields: MetadataField[];

  constructor(
    private readonly provider: AuthProvider,
    private readonly appId: string,
    private readonly secrets: SecretStore,
    private readonly clock: Clock,
    private readonly keySetOptions: KeySetOptions = {},
  ) {
    this.fields = provider.metadataFields.flatMap((f) => parseMetadataField(f));
  }

  async verify(token: unknown): Promise<VerifiedCustomToken> {
    if (typeof token !== 'string' || token === '') throw authError('a custom JWT must be given as the string "token"');
    if (token.length > MAX_TOKEN_CHARS) throw authError(`token is larger than ${MAX_TOKEN_CHARS} characters`);
    const payload = await this.verifySignatureAndClaims(token);
    if (typeof payload.sub !== 'string' || payload.sub === '') throw authError("token has no 'sub' claim");
    this.checkAudience(payload);
    return { sub: payload.sub, metadata: this.mapMetadata(payload) };
  }

  private async verifySignatureAndClaims(token: string): Promise<JWTPayload> {
    const jose = await loadJose();
    const { decodeProtectedHeader, errors, jwtVerify } = jose;
    const config = this.provider.config;
    const options = { requiredClaims: ['exp', 'sub', 'aud'], currentDate: new Date(this.clock.now()) };
    try {
      if (config.useJWKURI === true) {
        let header: ReturnType<typeof decodeProtectedHeader>;
        try { header = decodeProtectedHeader(token); } catch { throw authError('malformed token: the header is not base64url-encoded JSON'); }
        if (typeof header.kid !== 'string') throw authError("token header has no 'kid', which a JWK URI provider requires");
        return (await jwtVerify(token, this.keySet(jose), { ...options, algorithms: KEY_SET_ALGORITHMS })).payload;
      }
      const algorithm = config.signingAlgorithm === 'RS256' ? 'RS256' : 'HS256';
      const keys = await this.signingKeys(jose, algorithm);
      let lastFailure: unknown = new errors.JWSSignatureVerificationFailed();
      for (const key of keys) {
        try {
          return (await jwtVerify(token, key, { ...options, algorithms: [algorithm] })).payload;
        } catch (e) {
          if (!(e instanceof errors.JWSSignatureVerificationFailed)) throw e;
          lastFailure = e;
        }
      }
      throw lastFailure;
    } catch (e) {
      throw describeFailure(jose, e, config.jwkURI);
    }
  }

  private keySet({ createRemoteJWKSet, customFetch }: Jose): RemoteKeySet {
    const uri = this.provider.config.jwkURI;
    if (typeof uri !== 'string' || uri === '') throw new ApiError(500, 'InternalServerError', `auth provider '${this.provider.name}' has useJWKURI set but no jwkURI`);
    let set = this.keySets.get(uri);
    if (!set) {
      let url: URL;
      try { url = new URL(uri); } catch { throw new ApiError(500, 'InternalServerError', `auth provider '${this.provider.name}' has an invalid jwkURI '${uri}'`); }
      const o = this.keySetOptions;
      set = createRemoteJWKSet(url, {
        timeoutDuration: o.timeoutMs ?? 5000,
        cooldownDuration: o.cooldownMs ?? 30000,
        cacheMaxAge: o.cacheMaxAgeMs ?? 600000,
        ...(o.fetch ? { [customFetch]: o.fetch } : {}),
      });
      this.keySets.set(uri, set);
    }
    return set;
  }

  private async signingKeys({ importSPKI }: Jose, algorithm: 'HS256' | 'RS256'): Promise<VerificationKey[]> {
    const names = this.provider.secretConfig.signingKeys;
    const list = (Array.isArray(names) ? names : [names]).filter((n): n is string => typeof n === 'string' && n !== '');
    if (list.length === 0) throw new ApiError(500, 'InternalServerError', `auth provider '${this.provider.name}' names no signing keys in secret_config.signingKeys`);
    const neededBy = `auth provider '${this.provider.name}'`;
    const keys: VerificationKey[] = [];
    for (const name of list.slice(0, 3)) {
      let value: string;
      try { value = this.secrets.resolve(name, neededBy); } catch (e) {
        if (e instanceof MissingSecretError) throw new ApiError(500, 'InternalServerError', e.message);
        throw e;
      }
      if (algorithm === 'HS256') {
        // The HMAC key is the secret's raw UTF-8 bytes (auth-custom-jwt.md §1), imported once per value.
        let key = this.hmacKeys.get(value);
        if (!key) this.hmacKeys.set(value, (key = createSecretKey(Buffer.from(value, 'utf8'))));
        keys.push(key);
        continue;
      }
      try { keys.push(await importSPKI(value, 'RS256')); } catch {
        throw authError('could not find PEM formatted data in the provided public key');
      }
    }
    return keys;
  }

  private checkAudience(payload: JWTPayload): void {
    const aud = ([] as unknown[]).concat(payload.aud ?? []).filter((a): a is string => typeof a === 'string');
    const configured = this.provider.config.audience;
    const wanted = ([] as unknown[]).concat(configured ?? []).filter((a): a is string => typeof a === 'string' && a !== '');
    if (wanted.length === 0) {
      if (!aud.includes(this.appId)) throw authError(`'${this.appId}' not found in 'aud' claim`);
      return;
    }
    if (this.provider.config.requireAnyAudience === true) {
      if (!wanted.some((a) => aud.includes(a))) throw authError(`none of '${wanted.join("', '")}' found in 'aud' claim`);
      return;
    }
    const missing = wanted.find((a) => !aud.includes(a));
    if (missing !== undefined) throw authError(`'${missing}' not found in 'aud' claim`);
  }

  private mapMetadata(payload: JWTPayload): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const field of this.fields) {
      let value: unknown = payload;
      for (const segment of field.path) {
        value = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[segment] : undefined;
      }
      if (value === undefined || value === null) {
        if (field.required) throw authError(`required metadata field '${field.name}' not found in the token`);
        continue;
      }
      if (JSON.stringify(value).length > MAX_METADATA_CHARS) throw authError(`metadata field '${field.name}' is longer than ${MAX_METADATA_CHARS} characters`);
      out[field.fieldName] = value;
    }
    return out;
  }
}

/** Splits `a.b\.c` into `["a", "b.c"]`. */
export function splitMetadataPath(name: string): string[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < name.length; i++) {
    const ch = name[i]!;
    if (ch === '\\' && name[i + 1] === '.') { current += '.'; i++; }
    else if (ch === '.') { parts.push(current); current = ''; }
    else current += ch;
  }
  parts.push(current);
  return parts;
}

function parseMetadataField(raw: unknown): MetadataField[] {
  if (raw === null || typeof raw !== 'object') return [];
  const f = raw as Record<string, unknown>;
  if (typeof f.name !== 'string' || f.name === '') return [];
  const path = splitMetadataPath(f.name);
  const fieldName = typeof f.field_name === 'string' && f.field_name !== '' ? f.field_name : path[path.length - 1]!;
  return [{ path, name: f.name, fieldName, required: f.required === true }];
}

function describeFailure({ errors }: Jose, e: unknown, jwkURI: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof errors.JWTExpired) return authError('token is expired');
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.claim === 'nbf' || e.claim === 'iat') return authError(`token is not valid yet ('${e.claim}' claim is in the future)`);
    return authError(`token claim '${e.claim}' is invalid: ${e.reason}`);
  }
  if (e instanceof errors.JWSSignatureVerificationFailed) return authError('token signature is invalid');
  if (e instanceof errors.JOSEAlgNotAllowed) return authError(`token signing algorithm is not allowed: ${e.message}`);
  if (e instanceof errors.JWKSNoMatchingKey) return authError(`no key in the key set at ${String(jwkURI)} matches the token's 'kid'`);
  if (e instanceof errors.JWKSMultipleMatchingKeys) return authError(`several keys in the key set at ${String(jwkURI)} match the token`);
  if (e instanceof errors.JWKSTimeout) return authError(`the key set at ${String(jwkURI)} did not answer in time`);
  if (e instanceof errors.JWKSInvalid) return authError(`the key set at ${String(jwkURI)} is not a valid JSON Web Key Set`);
  if (e instanceof errors.JWTInvalid || e instanceof errors.JWSInvalid) return authError(`malformed token: ${e.message}`);
  if (e instanceof errors.JOSEError && e.code === 'ERR_JOSE_GENERIC' && jwkURI !== undefined) return authError(`could not fetch the key set at ${String(jwkURI)}: ${e.message}`);
  if (e instanceof errors.JOSEError) return authError(`token rejected: ${e.message}`);
  if (jwkURI !== undefined && e instanceof Error) return authError(`could not fetch the key set at ${String(jwkURI)}: ${e.message}`);
  return authError(`token rejected: ${e instanceof Error ? e.message : String(e)}`);
}
