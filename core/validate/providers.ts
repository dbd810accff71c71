// Authentication provider rules that depend on several keys at once (auth-custom-jwt.md §1–§4); single-key
// shapes (types, enums, known keys per provider type, at most three keys) are the JSON Schema's job.
//
// Codes: auth/jwk-uri-missing, auth/jwk-uri-not-https, auth/jwk-uri-with-signing-keys, auth/jwk-uri-needs-rs256,
// auth/missing-signing-algorithm, auth/missing-signing-keys, auth/duplicate-signing-key,
// auth/require-any-audience-single, auth/invalid-metadata-path, auth/duplicate-metadata-field.
import type { DiagnosticSink } from '../diagnostics';
import { isObject, type JSONPath } from '../json';
import type { AppModel, AuthProvider } from '../model';

export function validateProviders(app: AppModel, sink: DiagnosticSink): void {
  for (const p of app.authProviders) if (p.type === 'custom-token') checkCustomToken(p, sink);
}

function checkCustomToken(p: AuthProvider, sink: DiagnosticSink): void {
  const { file, path } = p.source;
  const at = (...rest: JSONPath): JSONPath => [...path, ...rest];
  const config = p.config;
  const keys = p.secretConfig.signingKeys;
  const keyCount = Array.isArray(keys) ? keys.length : 0;

  if (config.useJWKURI === true) {
    const uri = config.jwkURI;
    if (typeof uri !== 'string' || uri.trim() === '') {
      sink.at(file, at('config', 'useJWKURI'), 'error', 'auth/jwk-uri-missing', '"useJWKURI" is true but "config.jwkURI" is not set: give the https URL of the identity provider\'s JWK set.');
    } else if (!/^https:\/\//i.test(uri)) {
      sink.at(file, at('config', 'jwkURI'), 'error', 'auth/jwk-uri-not-https', `"jwkURI" must be an https URL; found "${uri}".`);
    }
    if (keyCount > 0) {
      sink.at(file, at('secret_config', 'signingKeys'), 'error', 'auth/jwk-uri-with-signing-keys',
        '"signingKeys" must be [] when "useJWKURI" is true: the keys come from the JWK set.', { data: { path: at('secret_config', 'signingKeys') } });
    }
    // Absent or "" (the exporter's "not set") means RS256 here.
    if (typeof config.signingAlgorithm === 'string' && config.signingAlgorithm !== '' && config.signingAlgorithm !== 'RS256') {
      sink.at(file, at('config', 'signingAlgorithm'), 'error', 'auth/jwk-uri-needs-rs256', `A JWK URI serves RSA keys, so "signingAlgorithm" must be "RS256"; found "${config.signingAlgorithm}".`);
    }
  } else {
    if (config.signingAlgorithm === undefined) {
      sink.at(file, at('config', 'signingAlgorithm'), 'error', 'auth/missing-signing-algorithm', 'Without a JWK URI, "config.signingAlgorithm" must say how tokens are signed: "HS256" (shared secret) or "RS256" (PEM public key).');
    }
    if (keyCount === 0) {
      sink.at(file, at('secret_config', 'signingKeys'), 'error', 'auth/missing-signing-keys',
        'Without a JWK URI, "secret_config.signingKeys" must name one to three secrets holding the signing keys.');
    }
  }
  if (Array.isArray(keys)) {
    const seen = new Set<string>();
    keys.forEach((name, i) => {
      if (typeof name !== 'string') return;
      if (seen.has(name)) sink.at(file, at('secret_config', 'signingKeys', i), 'warning', 'auth/duplicate-signing-key', `The secret "${name}" is listed twice.`);
      seen.add(name);
    });
  }

  const audiences = typeof config.audience === 'string' ? (config.audience === '' ? [] : [config.audience]) : Array.isArray(config.audience) ? config.audience : [];
  if (config.requireAnyAudience === true && audiences.length < 2) {
    sink.at(file, at('config', 'requireAnyAudience'), 'warning', 'auth/require-any-audience-single',
      `"requireAnyAudience" only matters with several audiences; "audience" lists ${audiences.length === 0 ? 'none, so the app id is expected' : 'one'}.`);
  }

  checkMetadataFields(p, sink, at);
}

function checkMetadataFields(p: AuthProvider, sink: DiagnosticSink, at: (...rest: JSONPath) => JSONPath): void {
  const fieldOwners = new Map<string, number>();
  p.metadataFields.forEach((item, i) => {
    if (!isObject(item) || typeof item.name !== 'string') return;
    const segments = claimPath(item.name);
    if (item.name !== '' && segments.some((s) => s === '')) {
      sink.at(p.source.file, at('metadata_fields', i, 'name'), 'error', 'auth/invalid-metadata-path',
        `"${item.name}" is not a valid claim path: segments are separated by single dots and none may be empty (write a literal dot as \\.).`);
      return;
    }
    const fieldName = typeof item.field_name === 'string' && item.field_name !== '' ? item.field_name : segments[segments.length - 1];
    if (fieldName === undefined) return;
    const first = fieldOwners.get(fieldName);
    if (first !== undefined) {
      sink.at(p.source.file, typeof item.field_name === 'string' ? at('metadata_fields', i, 'field_name') : at('metadata_fields', i, 'name'), 'warning', 'auth/duplicate-metadata-field',
        `metadata_fields[${first}] already writes the user data field "${fieldName}"; this one overwrites it.`);
    } else fieldOwners.set(fieldName, i);
  });
}

/** Splits a claim path on dots that are not escaped as `\.`. */
export function claimPath(name: string): string[] {
  const segments: string[] = [];
  let current = '';
  for (let i = 0; i < name.length; i++) {
    if (name[i] === '\\' && name[i + 1] === '.') { current += '.'; i++; } else if (name[i] === '.') { segments.push(current); current = ''; } else current += name[i];
  }
  segments.push(current);
  return segments;
}
