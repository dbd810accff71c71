// `context.http`: the platform's HTTP client for functions (get, post, put, patch, delete, head), with its
// request document (`url` or its parts, headers and query as `{name: [values]}`, cookies, body or form,
// `encodeBodyAsJSON`, `followRedirects`, basic or digest authentication, `authUrl`) and its response document
// (`status`, `statusCode`, `contentLength`, `headers`, `cookies`, `body` as a BSON Binary with `text()`).
// Requests run here, in the function's worker thread, with Node's fetch: the same network access a function
// already has through `fetch`, and nothing of the runtime's.
import { createHash, randomBytes } from 'node:crypto';
import { Binary, EJSON } from 'bson';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';

/** The URL parts a request may give instead of `url`. */
const URL_PARTS = ['scheme', 'host', 'path', 'query', 'fragment'] as const;

/** As many redirects as a followed request takes before it fails (Go's client, which the platform uses, stops at 10). */
const MAX_REDIRECTS = 10;

/** The platform's `Binary.text()`: the bytes read as UTF-8 (response bodies are Binaries). */
Object.defineProperty(Binary.prototype, 'text', {
  value(this: Binary): string {
    return Buffer.from(this.buffer.buffer, this.buffer.byteOffset, this.position).toString('utf8');
  },
  writable: true, configurable: true, enumerable: false,
});

export interface HttpResponse {
  status: string;
  statusCode: number;
  contentLength: number;
  headers: Record<string, string[]>;
  cookies: Record<string, ResponseCookie>;
  body: Binary;
}

export interface ResponseCookie {
  value: string;
  path?: string;
  domain?: string;
  expires?: string;
  maxAge?: number;
  secure?: boolean;
  httpOnly?: boolean;
}

interface PreparedRequest {
  method: Method;
  url: URL;
  headers: Headers;
  body?: string | Uint8Array<ArrayBuffer> | FormData;
  followRedirects: boolean;
  credentials?: { username: string; password: string; digest: boolean };
  authUrl?: URL;
}

/** `context.http`, whose errors are the function's realm's `Error` (so `instanceof Error` holds there). */
export function createHttpClient(RealmError: ErrorConstructor): Readonly<Record<Lowercase<Method>, (request: unknown) => Promise<HttpResponse>>> {
  const send = (method: Method) => async (request: unknown): Promise<HttpResponse> => {
    let prepared: PreparedRequest;
    try {
      prepared = prepare(method, request);
    } catch (error) {
      throw new RealmError(`context.http.${method.toLowerCase()}: ${messageOf(error)}`);
    }
    try {
      return await perform(prepared);
    } catch (error) {
      // Go's client, which the platform uses, words it as `Get "url": reason`.
      throw new RealmError(`${method[0]}${method.slice(1).toLowerCase()} "${prepared.url.href}": ${networkReason(error)}`);
    }
  };
  return Object.freeze({ get: send('GET'), post: send('POST'), put: send('PUT'), patch: send('PATCH'), delete: send('DELETE'), head: send('HEAD') });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What fetch's `fetch failed` stands for: its cause (`connect ECONNREFUSED 127.0.0.1:9`), else its message. */
function networkReason(error: unknown): string {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  if (cause instanceof Error && cause.message) return cause.message;
  if (cause !== undefined && cause !== null) return String(cause);
  return messageOf(error);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function optionalText(request: Record<string, unknown>, key: string): string | undefined {
  const value = request[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new Error(`'${key}' must be a string`);
  return value;
}

/** `{name: [values]}` (a lone value is taken as one value) as name/value pairs. */
function valuesOf(field: string, document: unknown): [string, string][] {
  if (document === undefined || document === null) return [];
  if (!isObject(document)) throw new Error(`'${field}' must be a document of {name: [values]}`);
  const pairs: [string, string][] = [];
  for (const [name, values] of Object.entries(document)) {
    for (const value of Array.isArray(values) ? values : [values]) pairs.push([name, String(value)]);
  }
  return pairs;
}

function prepare(method: Method, request: unknown): PreparedRequest {
  if (!isObject(request)) throw new Error('expects one argument, a request document such as { url: "https://example.com" }');
  const url = requestUrl(request);
  const headers = new Headers();
  for (const [name, value] of valuesOf('headers', request.headers)) headers.append(name, value);
  const cookies = valuesOf('cookies', request.cookies).map(([name, value]) => `${name}=${value}`);
  if (cookies.length > 0) headers.append('Cookie', cookies.join('; '));

  const username = optionalText(request, 'username') ?? (url.username ? decodeURIComponent(url.username) : undefined);
  const password = optionalText(request, 'password') ?? (url.password ? decodeURIComponent(url.password) : undefined);
  // fetch refuses URLs with credentials; they travel in the Authorization header instead.
  url.username = '';
  url.password = '';
  const digest = request.digestAuth === true;
  if (digest && username === undefined) throw new Error('digestAuth needs a username and password (as fields or in the URL)');
  const credentials = username !== undefined ? { username, password: password ?? '', digest } : undefined;
  if (credentials && !digest && !headers.has('Authorization')) {
    headers.set('Authorization', `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`);
  }

  const authUrlText = optionalText(request, 'authUrl');
  const authUrl = authUrlText === undefined ? undefined : httpUrl(authUrlText, 'authUrl');
  return { method, url, headers, body: requestBody(method, request, headers), followRedirects: request.followRedirects === true, credentials, authUrl };
}

function httpUrl(text: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`'${field}' is not a valid URL: ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`'${field}' must be an http or https URL, not ${url.protocol}`);
  return url;
}

/** `url`, or the URL put together from `scheme` (http by default), `host`, `path`, `query` and `fragment`. */
function requestUrl(request: Record<string, unknown>): URL {
  const url = optionalText(request, 'url');
  const parts = URL_PARTS.filter((part) => request[part] !== undefined && request[part] !== null);
  if (url !== undefined) {
    if (parts.length > 0) throw new Error(`'url' and the URL's parts (${parts.join(', ')}) are exclusive: give one or the other`);
    return httpUrl(url, 'url');
  }
  const host = optionalText(request, 'host');
  if (!host) throw new Error("needs a 'url', or a 'host' (with 'scheme', 'path', 'query', 'fragment' as needed)");
  const scheme = optionalText(request, 'scheme') ?? 'http';
  if (scheme !== 'http' && scheme !== 'https') throw new Error(`'scheme' must be http or https, not ${JSON.stringify(scheme)}`);
  const built = httpUrl(`${scheme}://${host}`, 'host');
  const path = optionalText(request, 'path');
  if (path) built.pathname = path;
  for (const [name, value] of valuesOf('query', request.query)) built.searchParams.append(name, value);
  const fragment = optionalText(request, 'fragment');
  if (fragment) built.hash = fragment;
  return built;
}

/** The body to send: a string, bytes, the EJSON of `body` with `encodeBodyAsJSON`, or `form` as multipart form data. */
function requestBody(method: Method, request: Record<string, unknown>, headers: Headers): PreparedRequest['body'] {
  const { body, form } = request;
  const hasBody = body !== undefined && body !== null;
  const hasForm = form !== undefined && form !== null;
  if (!hasBody && !hasForm) return undefined;
  if (method === 'GET' || method === 'HEAD') throw new Error(`a ${method} request has no body`);
  if (hasBody && hasForm) throw new Error("'body' and 'form' are exclusive: give one or the other");
  if (hasForm) {
    const data = new FormData();
    for (const [name, value] of valuesOf('form', form)) data.append(name, value);
    // fetch writes the multipart Content-Type itself, with the boundary the parts are separated by.
    headers.delete('Content-Type');
    return data;
  }
  if (request.encodeBodyAsJSON === true) {
    if (!headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
    return EJSON.stringify(body);
  }
  if (typeof body === 'string') return body;
  // Copies: the function may change its bytes while the request is under way.
  if (body instanceof Binary) return new Uint8Array(body.value());
  if (body instanceof Uint8Array) return new Uint8Array(body);
  throw new Error("'body' is an object: set encodeBodyAsJSON: true to send it as JSON, or pass a string");
}

async function perform(request: PreparedRequest): Promise<HttpResponse> {
  if (request.authUrl) {
    const granted = await fetch(request.authUrl, { headers: request.headers, redirect: 'follow' });
    await granted.arrayBuffer();
    const cookies = granted.headers.getSetCookie().map((line) => line.split(';')[0]!.trim()).filter(Boolean);
    if (cookies.length > 0) request.headers.set('Cookie', [request.headers.get('Cookie'), ...cookies].filter(Boolean).join('; '));
  }
  let response = await send(request, request.url);
  if (response.status === 401 && request.credentials?.digest) {
    const challenge = response.headers.get('WWW-Authenticate');
    if (challenge && /^digest\s/i.test(challenge)) {
      await response.arrayBuffer();
      const headers = new Headers(request.headers);
      headers.set('Authorization', digestAuthorization(challenge, request.method, request.url, request.credentials));
      response = await send({ ...request, headers }, request.url);
    }
  }
  return responseDocument(request.method, response);
}

/** One request, following redirects itself when asked to (so that the limit and the methods are Go's). */
async function send(request: PreparedRequest, url: URL): Promise<Response> {
  let target = url;
  let method: Method = request.method;
  let body = request.body;
  let headers = request.headers;
  for (let redirects = 0; ; redirects++) {
    const response = await fetch(target, { method, headers, body, redirect: 'manual' });
    const location = response.headers.get('Location');
    if (!request.followRedirects || response.status < 300 || response.status > 399 || !location) return response;
    if (redirects === MAX_REDIRECTS) throw new Error(`stopped after ${MAX_REDIRECTS} redirects`);
    await response.arrayBuffer();
    const next = new URL(location, target);
    // Credentials and cookies are for the host they were given for, not for wherever it redirects to.
    if (next.host !== target.host && (headers.has('Authorization') || headers.has('Cookie'))) {
      headers = new Headers(headers);
      headers.delete('Authorization');
      headers.delete('Cookie');
    }
    target = next;
    // 307 and 308 repeat the request as it was; the others continue with a GET without a body (HEAD stays HEAD).
    if (response.status !== 307 && response.status !== 308 && method !== 'HEAD') {
      method = 'GET';
      body = undefined;
    }
  }
}

/** Go's canonical header name (`content-type` → `Content-Type`), as the platform reports response headers. */
function canonicalHeaderName(name: string): string {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_match, dash: string, letter: string) => dash + letter.toUpperCase());
}

async function responseDocument(method: Method, response: Response): Promise<HttpResponse> {
  const bytes = method === 'HEAD' ? new Uint8Array(0) : new Uint8Array(await response.arrayBuffer());
  const headers: Record<string, string[]> = {};
  for (const [name, value] of response.headers) {
    if (name === 'set-cookie') continue;
    (headers[canonicalHeaderName(name)] ??= []).push(value);
  }
  const setCookies = response.headers.getSetCookie();
  if (setCookies.length > 0) headers['Set-Cookie'] = setCookies;
  const declaredLength = Number(response.headers.get('Content-Length'));
  return {
    status: `${response.status} ${response.statusText}`.trim(),
    statusCode: response.status,
    contentLength: Number.isSafeInteger(declaredLength) && response.headers.has('Content-Length') ? declaredLength : bytes.byteLength,
    headers,
    cookies: responseCookies(setCookies),
    body: new Binary(bytes),
  };
}

function responseCookies(lines: string[]): Record<string, ResponseCookie> {
  const cookies: Record<string, ResponseCookie> = {};
  for (const line of lines) {
    const [pair, ...attributes] = line.split(';');
    const equals = pair!.indexOf('=');
    if (equals <= 0) continue;
    const cookie: ResponseCookie = { value: pair!.slice(equals + 1).trim() };
    for (const attribute of attributes) {
      const [rawName, ...rest] = attribute.split('=');
      const value = rest.join('=').trim();
      switch (rawName!.trim().toLowerCase()) {
        case 'path': cookie.path = value; break;
        case 'domain': cookie.domain = value; break;
        case 'expires': cookie.expires = value; break;
        case 'max-age': if (/^-?\d+$/.test(value)) cookie.maxAge = Number(value); break;
        case 'secure': cookie.secure = true; break;
        case 'httponly': cookie.httpOnly = true; break;
      }
    }
    cookies[pair!.slice(0, equals).trim()] = cookie;
  }
  return cookies;
}

/** The `Authorization` answering a Digest challenge (RFC 7616: MD5, SHA-256 and their -sess forms, qop auth). */
function digestAuthorization(challenge: string, method: Method, url: URL, credentials: { username: string; password: string }): string {
  const params: Record<string, string> = {};
  for (const match of challenge.replace(/^digest\s+/i, '').matchAll(/([a-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/gi)) {
    params[match[1]!.toLowerCase()] = match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3]!;
  }
  const algorithm = params.algorithm ?? 'MD5';
  const hashName = /^sha-256/i.test(algorithm) ? 'sha256' : 'md5';
  const hash = (text: string) => createHash(hashName).update(text).digest('hex');
  const realm = params.realm ?? '';
  const nonce = params.nonce ?? '';
  const uri = url.pathname + url.search;
  const cnonce = randomBytes(8).toString('hex');
  const nc = '00000001';
  let ha1 = hash(`${credentials.username}:${realm}:${credentials.password}`);
  if (/-sess$/i.test(algorithm)) ha1 = hash(`${ha1}:${nonce}:${cnonce}`);
  const ha2 = hash(`${method}:${uri}`);
  const qop = params.qop?.split(',').map((q) => q.trim()).includes('auth') ? 'auth' : undefined;
  const response = qop ? hash(`${ha1}:${nonce}:${nc}:${cnonce}:${qop}:${ha2}`) : hash(`${ha1}:${nonce}:${ha2}`);
  const quoted = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;
  const fields = [
    `username=${quoted(credentials.username)}`, `realm=${quoted(realm)}`, `nonce=${quoted(nonce)}`, `uri=${quoted(uri)}`,
    `algorithm=${algorithm}`, `response=${quoted(response)}`,
    ...(qop ? [`qop=${qop}`, `nc=${nc}`, `cnonce=${quoted(cnonce)}`] : []),
    ...(params.opaque !== undefined ? [`opaque=${quoted(params.opaque)}`] : []),
  ];
  return `Digest ${fields.join(', ')}`;
}
