import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Long, ObjectId } from 'bson';
import { Router } from '../../runtime/http/router';
import { createHttpServer, requestTarget, type Logger, type RunningHttpServer } from '../../runtime/http/server';
import fc from 'fast-check';
import { ApiError } from '../../runtime/http/errors';

describe('HTTP server wire conventions', () => {
  let server: RunningHttpServer;
  const logged: string[] = [];
  const seen: unknown[] = [];
  before(async () => {
    const log: Logger = { info: (m) => logged.push(m), warn: (m) => logged.push(m), error: (m) => logged.push(m) };
    const router = new Router()
      .post('/echo/:name', async (req) => { const body = await req.json(); seen.push(body); return { body: { name: req.params.name, body } }; })
      .get('/values', () => ({ body: { id: new ObjectId('65a1b2c3d4e5f60718293a4b'), count: Long.fromNumber(19), n: 1, x: 1.5, when: new Date(0) } }))
      .get('/empty', () => undefined)
      .get('/throws', () => { throw new Error('secret internals'); })
      .get('/api-error', () => { throw new ApiError(409, 'AccountNameInUse', 'name already in use'); })
      .get('/rejects', async () => { await Promise.resolve(); throw 'not even an Error'; })
      .put('/only-put', () => undefined);
    server = await createHttpServer({
      router, log, maxBodyBytes: 1024,
      cors: { allowedOrigins: ['https://app.example.org'], allowLocalhost: true },
    });
  });
  after(() => server.close());

  const call = (path: string, init?: RequestInit) => fetch(server.url + path, init);

  test('binds 127.0.0.1 and announces localhost', () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  test('EJSON request bodies are parsed, responses are canonical EJSON with the exact content type', async () => {
    const res = await call('/echo/a%20b', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"n":{"$numberInt":"7"},"d":{"$numberDouble":"1.5"},"l":{"$numberLong":"9007199254740993"},"o":{"$oid":"65a1b2c3d4e5f60718293a4b"},"t":{"$date":{"$numberLong":"1000"}}}' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const parsed = seen.at(-1) as Record<string, unknown>;
    assert.equal(parsed.n, 7);
    assert.equal(parsed.d, 1.5);
    assert.ok(parsed.l instanceof Long);
    assert.ok(parsed.o instanceof ObjectId);
    assert.ok(parsed.t instanceof Date);
    const body = await res.json() as { name: string; body: Record<string, unknown> };
    assert.equal(body.name, 'a b');
    assert.deepEqual(body.body.n, { $numberInt: '7' });
    assert.deepEqual(body.body.l, { $numberLong: '9007199254740993' });
    const values = await (await call('/values')).text();
    assert.equal(values, '{"id":{"$oid":"65a1b2c3d4e5f60718293a4b"},"count":{"$numberLong":"19"},"n":{"$numberInt":"1"},"x":{"$numberDouble":"1.5"},"when":{"$date":{"$numberLong":"0"}}}');
  });

  test('204 has no content type and no body', async () => {
    const res = await call('/empty');
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('content-type'), null);
    assert.equal(await res.text(), '');
  });

  test('failures become the error body, never a bare 500 or a dead process', async () => {
    const cases: Array<[string, RequestInit | undefined, number, string]> = [
      ['/throws', undefined, 500, 'InternalServerError'],
      ['/rejects', undefined, 500, 'InternalServerError'],
      ['/api-error', undefined, 409, 'AccountNameInUse'],
      ['/nowhere', undefined, 404, 'NotFound'],
      ['/only-put', { method: 'GET' }, 405, 'BadRequest'],
      ['/echo/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"broken": ' }, 400, 'BadRequest'],
      ['/echo/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"$oid": 5}' }, 400, 'BadRequest'],
      ['/echo/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ big: 'x'.repeat(5000) }) }, 413, 'BadRequest'],
    ];
    for (const [path, init, status, code] of cases) {
      const res = await call(path, init);
      assert.equal(res.status, status, path);
      assert.equal(res.headers.get('content-type'), 'application/json');
      const body = await res.json() as Record<string, string>;
      assert.equal(body.error_code, code, path);
      assert.equal(typeof body.error, 'string');
      assert.match(body.link, /co_id=[0-9a-f]{24}$/);
    }
    const internal = await (await call('/throws')).json() as Record<string, string>;
    assert.equal(internal.error, 'internal server error', 'internals are logged, not sent');
    assert.ok(logged.some((l) => l.includes('secret internals')));
    assert.equal((await call('/empty')).status, 204, 'still serving');
  });

  test('a body over the limit sent without content-length is refused with 413', async () => {
    const chunks = new ReadableStream({ start(c) { for (let i = 0; i < 4; i++) c.enqueue(new TextEncoder().encode('x'.repeat(600))); c.close(); } });
    const res = await call('/echo/x', { method: 'POST', body: chunks, duplex: 'half' } as RequestInit);
    assert.equal(res.status, 413);
    assert.equal((await res.json() as Record<string, string>).error_code, 'BadRequest');
  });

  /**
   * Sends `declared` bytes of body in 64 KiB pieces after the head, the rest only once the answer is in, then
   * a second request on the same connection: the answer, the connection errors and the second answer.
   */
  async function refusedWhileSending(head: string, declared: number, next: string): Promise<{ first: string; errors: string[]; second: string }> {
    const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
    const errors: string[] = [];
    socket.on('error', (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => { received += chunk; });
    const until = async (done: () => boolean) => {
      for (let waited = 0; !done() && waited < 5000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    const chunk = Buffer.alloc(64 * 1024, 'x');
    socket.write(`${head}Content-Length: ${declared}\r\n\r\n`);
    socket.write(chunk);
    await until(() => received.includes('"error_code"'));
    const first = received;
    for (let sent = chunk.length; sent < declared; sent += chunk.length) {
      await new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
      await new Promise((resolve) => setImmediate(resolve));
    }
    received = '';
    socket.write(next);
    await until(() => /\r\n\r\n/.test(received) || socket.destroyed);
    socket.destroy();
    return { first, errors, second: received };
  }

  test('a body over the limit gets its 413 while the client is still sending, and the rest of the body is read, not reset', async () => {
    // Closing with the body's bytes unread would reset the connection under a client still sending (EPIPE),
    // which then never reads the answer. The sender here gets the 413 first, then sends the rest.
    const { first, errors, second } = await refusedWhileSending('POST /echo/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n',
      4 * 1024 * 1024, 'GET /empty HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    assert.match(first, /^HTTP\/1\.1 413 /);
    assert.deepEqual(errors, [], 'no reset while sending');
    assert.match(second, /^HTTP\/1\.1 204 /, 'the connection survives the refused body');
  });

  test('a foreign Host gets its 421 while the client is still sending, and so does the next request on that connection', async () => {
    const { first, errors, second } = await refusedWhileSending('POST /echo/x HTTP/1.1\r\nHost: rebound.example\r\nContent-Type: application/json\r\n',
      2 * 1024 * 1024, 'GET /empty HTTP/1.1\r\nHost: rebound.example\r\n\r\n');
    assert.match(first, /^HTTP\/1\.1 421 /);
    assert.deepEqual(errors, [], 'no reset while sending');
    assert.match(second, /^HTTP\/1\.1 421 /, 'each request on the connection is checked');
  });

  test('CORS: allowed origins and localhost get the header; preflight never allows credential headers', async () => {
    const preflight = (origin: string, headers: string) => call('/echo/x', {
      method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': headers },
    });
    const ok = await preflight('https://app.example.org', 'authorization, content-type, email, password, apiKey, jwtTokenString');
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('access-control-allow-origin'), 'https://app.example.org');
    assert.equal(ok.headers.get('access-control-allow-headers'), 'authorization, content-type');
    assert.match(ok.headers.get('access-control-allow-methods') ?? '', /POST/);
    const local = await preflight('http://localhost:5173', 'authorization');
    assert.equal(local.headers.get('access-control-allow-origin'), 'http://localhost:5173');
    const evil = await preflight('https://evil.example.com', 'authorization');
    assert.equal(evil.headers.get('access-control-allow-origin'), null);

    const simple = await call('/empty', { headers: { Origin: 'https://app.example.org' } });
    assert.equal(simple.headers.get('access-control-allow-origin'), 'https://app.example.org');
    const refused = await call('/empty', { headers: { Origin: 'https://evil.example.com' } });
    assert.equal(refused.headers.get('access-control-allow-origin'), null);
  });

  test('CORS without development mode refuses localhost', async () => {
    const other = await createHttpServer({ router: new Router().get('/x', () => undefined), log: { info() {}, warn() {}, error() {} }, cors: { allowedOrigins: [], allowLocalhost: false } });
    try {
      const res = await fetch(other.url + '/x', { method: 'OPTIONS', headers: { Origin: 'http://localhost:3000', 'Access-Control-Request-Method': 'GET' } });
      assert.equal(res.headers.get('access-control-allow-origin'), null);
    } finally { await other.close(); }
  });
});

describe('request targets', () => {
  const viaUrl = (raw: string) => {
    try {
      const url = new URL(raw, 'http://localhost');
      return { pathname: url.pathname, query: [...url.searchParams] };
    } catch {
      return undefined;
    }
  };
  const split = (raw: string) => {
    const target = requestTarget(raw);
    return target && { pathname: target.pathname, query: [...new URLSearchParams(target.search)] };
  };

  test('path and query are what URL parsing gives, for any target', () => {
    const piece = fc.constantFrom('/', 'api', 'v2.0', '.', '..', '%2e', '%2E', '%', '%41', '?', '&', '=', 'a b', '#', '\\', '//', 'é', "'", ':appId', '+', ';');
    const target = fc.array(piece, { maxLength: 8 }).map((parts) => `/${parts.join('')}`);
    fc.assert(fc.property(target, (raw) => {
      assert.deepEqual(split(raw), viaUrl(raw), raw);
    }), { numRuns: 3000 });
    for (const raw of ['/api/client/v2.0/app/x/graphql', '/a/../b', '/a/%2e%2E/b', '/a/./b', '//evil/x', '/x?link=true&a=%20', '/x?', '/a/.', '/a/..']) {
      assert.deepEqual(split(raw), viaUrl(raw), raw);
    }
  });
});
