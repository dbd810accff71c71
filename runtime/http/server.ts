// The runtime's HTTP front door on node:http. Every handler is wrapped so that a thrown error or malformed
// input becomes the platform's JSON error body with a fitting status: never a 500 without a body, never a
// dead process. Bodies are canonical EJSON with `Content-Type: application/json` exactly (client-api.md §3).
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { ApiError } from './errors';
import { parseEjson, stringifyEjson } from './ejson';
import { isOriginAllowed, preflightHeaders, type CorsPolicy } from './cors';
import { isOwnHost, type OwnHosts } from './origin';
import { baseUrlFor, bracketedHostName, calledAddress, type AddressOptions } from './addresses';
import type { TlsPair } from './tls';
import type { HostingHandler } from './hosting';
import type { Router } from './router';
import { formatRequestLine, logs, type Logger, type RequestLog, type RequestLogEntry } from '../log';

export type { Logger } from '../log';

export interface HttpRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: http.IncomingHttpHeaders;
  readonly params: Record<string, string>;
  /** 24-hex id of this request; error bodies link to it and the log names it. */
  readonly requestId: string;
  /**
   * What clients should use to reach this server, e.g. `http://localhost:8080`: the public URL naming the
   * host this request called (or the first public URL), otherwise the address it called (its Host, already
   * checked to be the runtime's own), so a client that called `http://127.0.0.1:8080` is told that again
   * (location, error links). See `addresses.ts` for requests through a trusted proxy.
   */
  readonly baseUrl: string;
  /** The client's IP address (the one a trusted proxy forwarded, otherwise the connection's peer). */
  readonly clientAddress: string | undefined;
  /** Whether the client is this machine (loopback, not forwarded for someone else): see `addresses.ts`. */
  readonly local: boolean;
  /** The body parsed as EJSON; undefined when empty. Malformed JSON throws a 400. */
  json(): Promise<unknown>;
  text(): Promise<string>;
  readonly raw: http.IncomingMessage;
  readonly response: http.ServerResponse;
  /** Whether the client has gone away (its connection closed): work for it can stop. */
  clientGone(): boolean;
}

/**
 * What a handler returns: `undefined` for 204 with no body; `{status}` alone for another status with no
 * body; `body` (EJSON, or plain JSON with `encoding: 'json'`); raw `text` with its content type; or
 * `'handled'` when it wrote the response itself. Empty responses never carry a Content-Type, which is
 * how the Web SDK recognises them.
 */
export type HttpResult =
  | undefined
  | 'handled'
  | { status: number }
  | { status?: number; body: unknown; encoding?: 'ejson' | 'json'; headers?: Record<string, string> }
  | { status?: number; text: string; contentType: string; headers?: Record<string, string> };

export type HttpHandler = (req: HttpRequest) => Promise<HttpResult | void> | HttpResult | void;

export interface HttpServerOptions {
  host?: string;
  port?: number;
  router: Router;
  log: Logger;
  /** One policy for every path, or the policy of a path (each app its own origins; admin routes the runtime's own). */
  cors?: CorsPolicy | ((pathname: string) => CorsPolicy | undefined);
  /** Names besides loopback, `host` and the public URLs' that requests may carry in Host; others get 421. */
  hostNames?: readonly string[];
  /** WebSocket (and other) upgrades whose Host is the runtime's own; others are answered 421 before this runs. */
  upgrade?(req: http.IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Largest accepted request body; larger ones get 413. */
  maxBodyBytes?: number;
  /** Base URLs announced to clients (`scheme://host[:port]`, see `baseUrlFor`); their hosts are the runtime's own. */
  publicUrls?: readonly string[];
  /** Serve HTTPS (and WSS) with this pair instead of plain HTTP; `RunningHttpServer.setTls` swaps it. */
  tls?: TlsPair;
  /** Peer addresses (the reverse proxy's) whose X-Forwarded-Proto/-Host/-For are believed. */
  trustedProxies?: readonly string[];
  /** Static hosting of apps' `hosting/files`, dispatched on the Host header before the API routes. */
  hosting?: HostingHandler;
  /** Keeps every answered request's entry (for `/logs?co_id=…`); each is also logged at info. */
  requestLog?: RequestLog;
  /** The user a request acts as, for its log entry: only from a token the runtime signed and verified. */
  userOf?(headers: http.IncomingHttpHeaders): string | undefined;
  /** Told of every answered request (metrics): `route` is the matched pattern or a fixed name, never the raw path. */
  onAnswered?(answer: AnsweredRequest): void;
}

/**
 * An answered request as metrics see it. `route` is bounded whatever clients send: a route pattern, or
 * `hosting` (static files), `preflight` (CORS), `unmatched` (no route, a malformed target) or `misdirected`
 * (a foreign Host).
 */
export interface AnsweredRequest { method: string; route: string; status: number; seconds: number }

export interface RunningHttpServer {
  readonly server: http.Server | https.Server;
  readonly port: number;
  /** `http(s)://<bound address>:<port>`. */
  readonly url: string;
  /** Requests whose response has not ended yet. */
  readonly inFlight: number;
  /**
   * Stops taking connections (the port is released: new ones are refused), closes idle keep-alive
   * connections, answers what is in flight with `Connection: close`, and resolves once every request in
   * flight has ended (true) or after `timeoutMs` (false). WebSocket connections are the caller's.
   */
  drain(timeoutMs: number): Promise<boolean>;
  /** Serves this pair to new connections (a renewed certificate); only for a server started with `tls`. */
  setTls(pair: TlsPair): void;
  close(): Promise<void>;
}

export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
/** Header limit above the largest token we accept (1,000,000 characters), so an oversized bearer token is refused with 401 rather than a bare 431. */
const MAX_HEADER_BYTES = 1_100_000;

export async function createHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const publicUrls = options.publicUrls ?? [];
  let baseUrl = publicUrls[0] ?? '';
  const own: OwnHosts = { bindHost: host, names: [...(options.hostNames ?? []), ...publicUrls.map(bracketedHostName)] };
  const addressing: AddressOptions = { tls: options.tls !== undefined, trustedProxies: options.trustedProxies, publicUrls };
  const inFlight = new Set<http.ServerResponse>();
  let draining = false;
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const requestId = newRequestId();
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
    // A request that arrives on a kept-alive connection while draining is answered, then the connection ends.
    if (draining) res.setHeader('Connection', 'close');
    logWhenAnswered(req, res, requestId, options);
    const address = calledAddress(req, addressing);
    if (!isOwnHost(address.authority, own)) {
      routeOf.set(res, 'misdirected');
      // Every request on the connection is checked again, so it may stay open for the sender to read this.
      discardRestOfBody(req);
      writeError(res, misdirected(address.authority), baseUrl, requestId);
      return;
    }
    const called = baseUrlFor(address, addressing, baseUrl);
    handle(req, res, options, { baseUrl: called, clientAddress: address.clientAddress, local: address.local }, maxBody, requestId).catch((e) => {
      options.log.error(`unhandled failure while answering ${req.method} ${req.url}: ${describe(e)}`);
      if (!res.headersSent) writeError(res, new ApiError(500, 'InternalServerError', 'internal server error'), called, requestId);
      else res.destroy();
    });
  };
  const server = options.tls
    ? https.createServer({ maxHeaderSize: MAX_HEADER_BYTES, cert: options.tls.cert, key: options.tls.key }, onRequest)
    : http.createServer({ maxHeaderSize: MAX_HEADER_BYTES }, onRequest);
  if (options.tls) server.on('tlsClientError', (err: NodeJS.ErrnoException, socket) => answerPlainHttp(err, socket, baseUrl));
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) { socket.destroy(); return; }
    // Only credentials make a header this large, so an overflow is answered as a refused token.
    const error = err.code === 'HPE_HEADER_OVERFLOW'
      ? { status: '401 Unauthorized', error: `invalid session: request headers exceed ${MAX_HEADER_BYTES} bytes (oversized token)`, code: 'InvalidSession' }
      : { status: '400 Bad Request', error: `malformed request: ${err.message}`, code: 'BadRequest' };
    const body = JSON.stringify({ error: error.error, error_code: error.code, link: baseUrl });
    socket.end(`HTTP/1.1 ${error.status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  // CONNECT asks for a tunnel, which node:http hands to this event instead of the request handler.
  server.on('connect', (req: http.IncomingMessage, socket: Duplex) => {
    const body = errorBody(new ApiError(405, 'BadRequest', `method ${req.method} is not supported`), baseUrl, newRequestId());
    socket.end(`HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const authority = calledAddress(req, addressing).authority;
    const refusal = !isOwnHost(authority, own) ? misdirected(authority)
      : options.upgrade ? undefined : new ApiError(404, 'NotFound', 'no WebSocket endpoint at this path');
    if (!refusal) { options.upgrade!(req, socket, head); return; }
    answerUpgrade(socket, refusal, baseUrl);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => { server.off('error', reject); resolve(); });
  });
  const port = (server.address() as AddressInfo).port;
  const scheme = options.tls ? 'https' : 'http';
  if (!baseUrl) baseUrl = `${scheme}://localhost:${port}`;
  return {
    server,
    port,
    url: `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    setTls(pair) {
      if (!(server instanceof https.Server)) throw new Error('setTls: this server was started without TLS');
      server.setSecureContext({ cert: pair.cert, key: pair.key });
    },
    get inFlight() { return inFlight.size; },
    async drain(timeoutMs) {
      if (!draining) {
        draining = true;
        server.close();
      }
      server.closeIdleConnections();
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
      if (inFlight.size === 0) return true;
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => { clearInterval(poll); resolve(false); }, timeoutMs);
        // Each ended response may leave its connection idle; those are closed as they appear.
        const poll = setInterval(() => {
          server.closeIdleConnections();
          if (inFlight.size === 0) { clearTimeout(timer); clearInterval(poll); resolve(true); }
        }, 25);
      });
    },
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/**
 * A failed TLS handshake. Plain HTTP sent to the TLS port (OpenSSL recognises it) is told, in plain HTTP, to
 * use https: otherwise the client sees only a closed connection. The reply goes on the connection under the
 * TLS layer, which Node keeps as the TLS socket's `_parent`.
 */
function answerPlainHttp(err: NodeJS.ErrnoException, socket: Duplex, baseUrl: string): void {
  const raw = (socket as Duplex & { _parent?: Duplex })._parent;
  if (err.code !== 'ERR_SSL_HTTP_REQUEST' || !raw?.writable) { socket.destroy(); return; }
  const body = JSON.stringify({ error: `this port serves HTTPS only: use ${baseUrl}`, error_code: 'BadRequest', link: baseUrl });
  raw.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * Once the response ends (or the client goes away), one entry: into the request log, and a line at info;
 * and the answer to `onAnswered` (metrics). One listener for all three; nothing for a server with none.
 */
function logWhenAnswered(req: http.IncomingMessage, res: http.ServerResponse, requestId: string, options: HttpServerOptions): void {
  const logLine = logs(options.log, 'info');
  const { onAnswered } = options;
  if (!logLine && !options.requestLog && !onAnswered) return;
  const started = performance.now();
  const arrived = Date.now();
  res.once('close', () => {
    if (onAnswered) onAnswered({ method: (req.method ?? 'GET').toUpperCase(), route: routeOf.get(res) ?? 'unmatched', status: res.statusCode, seconds: (performance.now() - started) / 1000 });
    if (!logLine && !options.requestLog) return;
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const answered = answeredErrors.get(res);
    const error = answered?.error;
    const userId = options.userOf?.(req.headers);
    const entry: RequestLogEntry = {
      co_id: requestId, time: new Date(arrived).toISOString(), method: (req.method ?? 'GET').toUpperCase(),
      path: query < 0 ? url : url.slice(0, query), status: res.statusCode, ms: Math.round((performance.now() - started) * 10) / 10,
      ...(userId ? { user_id: userId } : {}),
      ...(error ? { ...(answered!.bodyRead ? {} : { error: error.message }), error_code: error.errorCode } : {}),
      ...(res.writableFinished ? {} : { aborted: true as const }),
    };
    options.requestLog?.add(entry);
    if (logLine) options.log.info(formatRequestLine(entry), { request: entry });
  });
}

/** The route pattern (or fixed name, see AnsweredRequest) each response answered for. */
const routeOf = new WeakMap<http.ServerResponse, string>();

/**
 * The error each response answered with, for its log entry. Its message goes into the entry only when the
 * request's body was never read: messages may quote what a client sent (a function's name, an email), and
 * log texts carry no request-body value.
 */
const answeredErrors = new WeakMap<http.ServerResponse, { error: ApiError; bodyRead: boolean }>();

const STATUS_TEXT: Record<number, string> = { 404: 'Not Found', 421: 'Misdirected Request' };

function misdirected(host: string | undefined): ApiError {
  return new ApiError(421, 'MisdirectedRequest', `this runtime does not answer for host ${JSON.stringify(String(host).slice(0, 100))}: use localhost, 127.0.0.1, [::1], the --host it was started with or one of its --public-url names`);
}

/** Refuses an upgrade with a JSON error and closes the socket. */
export function answerUpgrade(socket: Duplex, error: ApiError, baseUrl: string): void {
  const body = JSON.stringify({ error: error.message, error_code: error.errorCode, ...(baseUrl ? { link: baseUrl } : {}) });
  socket.end(`HTTP/1.1 ${error.status} ${STATUS_TEXT[error.status] ?? 'Error'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse, options: HttpServerOptions, caller: { baseUrl: string; clientAddress: string | undefined; local: boolean }, maxBody: number, requestId: string): Promise<void> {
  const { baseUrl } = caller;
  const method = (req.method ?? 'GET').toUpperCase();
  const target = requestTarget(req.url ?? '/');
  if (!target) {
    req.resume();
    writeError(res, new ApiError(400, 'BadRequest', 'malformed request URL'), baseUrl, requestId);
    return;
  }
  const { pathname } = target;
  const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
  const cors = typeof options.cors === 'function' ? options.cors(pathname) : options.cors;
  const originAllowed = origin !== undefined && cors !== undefined && isOriginAllowed(cors, origin);

  if (method === 'OPTIONS' && origin !== undefined && req.headers['access-control-request-method']) {
    routeOf.set(res, 'preflight');
    req.resume();
    const headers = originAllowed ? preflightHeaders(origin, headerText(req.headers['access-control-request-headers'])) : {};
    res.writeHead(204, headers).end();
    return;
  }
  if (originAllowed) {
    res.setHeader('Access-Control-Allow-Origin', origin!);
    res.setHeader('Vary', 'Origin');
  }
  if (options.hosting) {
    // Named before the handler runs: its response may end before it returns.
    routeOf.set(res, 'hosting');
    if (await options.hosting(req, res, method, pathname)) return;
    routeOf.delete(res);
  }
  const match = options.router.match(method, pathname);
  if (match.kind === 'found') routeOf.set(res, match.pattern);
  if (match.kind !== 'found') {
    req.resume();
    const error = match.kind === 'wrong-method'
      ? new ApiError(405, 'BadRequest', `method ${method} is not allowed on ${pathname} (allowed: ${match.allowed.join(', ')})`)
      : new ApiError(404, 'NotFound', `no route matches ${method} ${pathname}`);
    writeError(res, error, baseUrl, requestId);
    return;
  }

  let bodyText: Promise<string> | undefined;
  const text = () => (bodyText ??= readBody(req, maxBody));
  let query: URLSearchParams | undefined;
  const request: HttpRequest = {
    method, path: pathname, headers: req.headers, params: match.params, requestId, baseUrl,
    clientAddress: caller.clientAddress, local: caller.local,
    get query() { return (query ??= new URLSearchParams(target.search)); },
    raw: req, response: res, text,
    clientGone: () => req.socket.destroyed,
    async json() {
      const t = await text();
      if (t.trim() === '') return undefined;
      try { return parseEjson(t); } catch (e) { throw new ApiError(400, 'BadRequest', `invalid JSON body: ${(e as Error).message}`); }
    },
  };

  let result: HttpResult | void;
  try {
    result = await match.handler(request);
  } catch (e) {
    if (!(e instanceof ApiError)) options.log.error(`${method} ${pathname} failed (co_id ${requestId}): ${describe(e)}`);
    const error = e instanceof ApiError ? e : new ApiError(500, 'InternalServerError', 'internal server error');
    if (res.headersSent) { res.destroy(); return; }
    if (error.status === 413) discardRestOfBody(req);
    writeError(res, error, baseUrl, requestId, bodyText !== undefined);
    return;
  }
  if (result === 'handled') return;
  if (bodyText === undefined) req.resume();
  if (result === undefined) { res.writeHead(204).end(); return; }
  if (!('text' in result) && !('body' in result)) { res.writeHead(result.status).end(); return; }
  if ('text' in result) {
    res.writeHead(result.status ?? 200, { ...result.headers, 'Content-Type': result.contentType }).end(result.text);
    return;
  }
  const payload = result.encoding === 'json' ? JSON.stringify(result.body) : stringifyEjson(result.body);
  writeJson(res, result.status ?? 200, payload, result.headers);
}

/** An origin-form target made only of characters a URL keeps as they are, with no dot segments (plain or encoded). */
const PLAIN_TARGET = /^\/(?!\/)[\w\-.~!$&'()*+,;=:@/%?]*$/;
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;

/**
 * The path and query of a request target, as WHATWG URL parsing against `http://localhost` gives them.
 * Plain targets (nearly all) are split as they are, which is what that parsing yields for them, without
 * its cost; any other goes through URL. Undefined when it does not parse.
 */
export function requestTarget(raw: string): { pathname: string; search: string } | undefined {
  if (PLAIN_TARGET.test(raw)) {
    const at = raw.indexOf('?');
    const pathname = at < 0 ? raw : raw.slice(0, at);
    const search = at < 0 || at === raw.length - 1 ? '' : raw.slice(at);
    if (!DOT_SEGMENT.test(pathname)) return { pathname, search };
  }
  try {
    const url = new URL(raw, 'http://localhost');
    return { pathname: url.pathname, search: url.search };
  } catch {
    return undefined;
  }
}

function readBody(req: http.IncomingMessage, maxBody: number): Promise<string> {
  const tooLarge = () => new ApiError(413, 'BadRequest', `request body exceeds the limit of ${maxBody} bytes`);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBody) { req.resume(); return Promise.reject(tooLarge()); }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > maxBody) { failed = true; chunks.length = 0; reject(tooLarge()); return; }
      chunks.push(chunk);
    });
    req.on('end', () => { if (!failed) resolve((chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8')); });
    req.on('error', (e) => { if (!failed) { failed = true; reject(new ApiError(400, 'BadRequest', `could not read the request body: ${e.message}`)); } });
  });
}

/** How long the rest of a refused body (413, 421) is read and dropped before the connection is cut. */
const REFUSED_BODY_LINGER_MS = 10_000;

/**
 * Reads and drops the rest of a body refused as too large, so its sender gets to read the 413: closing with
 * its bytes still unread would reset the connection under a client that is still sending (EPIPE), and it
 * would never see the answer. The connection is cut if the body has not ended within the linger time.
 */
function discardRestOfBody(req: http.IncomingMessage): void {
  req.resume();
  if (req.complete) return;
  const cut = setTimeout(() => req.socket.destroy(), REFUSED_BODY_LINGER_MS);
  cut.unref();
  const settle = () => clearTimeout(cut);
  req.once('end', settle);
  req.socket.once('close', settle);
}

export function writeJson(res: http.ServerResponse, status: number, payload: string, headers?: Record<string, string>): void {
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(payload)) }).end(payload);
}

export function errorBody(error: ApiError, baseUrl: string, requestId: string): string {
  return JSON.stringify({ error: error.message, error_code: error.errorCode, link: `${baseUrl}/logs?co_id=${requestId}` });
}

function writeError(res: http.ServerResponse, error: ApiError, baseUrl: string, requestId: string, bodyRead = false): void {
  answeredErrors.set(res, { error, bodyRead });
  writeJson(res, error.status, errorBody(error, baseUrl, requestId));
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

/** Request ids only need to be unique in this process's log: a random prefix per process and a counter. */
const REQUEST_ID_PREFIX = randomBytes(6).toString('hex');
let requestCounter = 0;

function newRequestId(): string {
  requestCounter = (requestCounter + 1) % 0x1000000000000;
  return REQUEST_ID_PREFIX + requestCounter.toString(16).padStart(12, '0');
}

function describe(e: unknown): string {
  return e instanceof Error ? (e.stack ?? e.message) : String(e);
}
