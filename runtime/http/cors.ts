// Browser access (issue 5 item 3): the app's allowed origins (and localhost in development) may call the
// API, but a preflight never allows the credential headers, so browsers must authenticate with bearer tokens.

export interface CorsPolicy {
  /** Exact origins, e.g. `https://example.org` (the app's `allowed_request_origins`). */
  allowedOrigins: readonly string[];
  /** Also allow `http(s)://localhost` (and its subdomains, where apps are hosted), `127.0.0.1` and `[::1]` on any port. */
  allowLocalhost: boolean;
}

/** Headers that carry credentials for GraphQL (client-api.md §9); lower case, as node:http reports them. */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['email', 'password', 'apikey', 'jwttokenstring']);

const LOCALHOST = /^https?:\/\/((?:[a-z0-9_-]{1,63}\.){0,4}localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i;

export function isOriginAllowed(policy: CorsPolicy, origin: string): boolean {
  const normalized = origin.replace(/\/+$/, '');
  if (policy.allowLocalhost && LOCALHOST.test(normalized)) return true;
  return policy.allowedOrigins.some((o) => o.replace(/\/+$/, '').toLowerCase() === normalized.toLowerCase());
}

/** Response headers for a preflight from an allowed origin; the credential headers are never echoed back. */
export function preflightHeaders(origin: string, requestedHeaders: string | undefined): Record<string, string> {
  const allowed = (requestedHeaders ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h.length > 0 && !CREDENTIAL_HEADERS.has(h.toLowerCase()));
  const headers: Record<string, string> = {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
    'Access-Control-Max-Age': '600',
    Vary: 'Origin, Access-Control-Request-Headers',
  };
  if (allowed.length) headers['Access-Control-Allow-Headers'] = allowed.join(', ');
  return headers;
}
