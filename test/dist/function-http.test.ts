// `context.http` in app functions (the platform's HTTP client), as a user meets it: an app served by
// `dist/cli.js serve`, a function called through the client API, and a small HTTP server this test starts on
// 127.0.0.1 that records what reached it and answers by path. The function returns what it saw of the
// response, so both directions are checked: what the request carried, and the response document's shape.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { EJSON } from 'bson';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';
import { registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

/** Calls `context.http[method](request)` and returns what the response document holds, in JSON terms. */
const HTTP_CALL = `exports = async (method, request) => {
  const response = await context.http[method](request);
  return {
    status: response.status,
    statusCode: response.statusCode,
    contentLength: response.contentLength,
    headers: response.headers,
    cookies: response.cookies,
    bodyIsBinary: response.body instanceof BSON.Binary,
    text: response.body.text(),
  };
};`;

/** The error a failing request throws, as the function sees it. */
const HTTP_ERROR = `exports = async (method, request) => {
  try {
    await context.http[method](request);
    return { threw: false };
  } catch (error) {
    return { threw: true, isError: error instanceof Error, message: error.message };
  }
};`;

/** Global fetch, beside context.http. */
const FETCH_CALL = `exports = async (url) => {
  const response = await fetch(url);
  return { status: response.status, text: await response.text(), header: new Headers([['a', 'b']]).get('a') };
};`;

interface Received { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }

const DIGEST_REALM = 'asl-test';
const DIGEST_NONCE = 'n0nce';

function md5(text: string): string {
  return createHash('md5').update(text).digest('hex');
}

/** Whether an `Authorization: Digest …` header answers this server's challenge for `who:secret`. */
function digestValid(header: string | undefined, method: string): boolean {
  if (!header?.startsWith('Digest ')) return false;
  const fields = Object.fromEntries([...header.slice(7).matchAll(/(\w+)=(?:"([^"]*)"|([^\s,]+))/g)].map((m) => [m[1], m[2] ?? m[3]]));
  const ha1 = md5(`${fields.username}:${DIGEST_REALM}:secret`);
  const ha2 = md5(`${method}:${fields.uri}`);
  return fields.username === 'who' && fields.response === md5(`${ha1}:${DIGEST_NONCE}:${fields.nc}:${fields.cnonce}:${fields.qop}:${ha2}`);
}

describe('context.http in functions (dist/cli.js serve)', { timeout: 120_000 }, () => {
  let served: ServedDist;
  let appDir: string;
  let target: http.Server;
  let targetUrl: string;
  /** A second server (another host:port) that `/away` on the first redirects to. */
  let other: http.Server;
  let otherUrl: string;
  let closedPortUrl: string;
  let token: string;
  const received: Received[] = [];

  before(async () => {
    const answer = (req: http.IncomingMessage, res: http.ServerResponse) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => { body += chunk; });
      req.on('end', () => {
        received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        const { pathname } = new URL(req.url!, 'http://x');
        if (pathname === '/echo') {
          res.writeHead(201, 'Created Here', { 'Content-Type': 'application/json', 'X-Reply': 'yes', 'Set-Cookie': ['session=abc; Path=/; HttpOnly', 'theme=dark; Max-Age=60'] });
          res.end(JSON.stringify({ method: req.method, url: req.url, body }));
        } else if (pathname === '/redirect') {
          res.writeHead(302, { Location: '/landing' });
          res.end('moved');
        } else if (pathname === '/away') {
          res.writeHead(302, { Location: `${otherUrl}/echo` });
          res.end('elsewhere');
        } else if (pathname === '/landing') {
          res.writeHead(200, { 'Content-Type': 'text/plain' });
          res.end(`landed by ${req.method}`);
        } else if (pathname === '/digest') {
          if (digestValid(req.headers.authorization, req.method!)) {
            res.writeHead(200);
            res.end('digest accepted');
          } else {
            res.writeHead(401, { 'WWW-Authenticate': `Digest realm="${DIGEST_REALM}", nonce="${DIGEST_NONCE}", qop="auth", algorithm=MD5` });
            res.end('who are you');
          }
        } else {
          res.writeHead(404, { 'Content-Type': 'text/plain' });
          res.end('no such thing');
        }
      });
    };
    target = http.createServer(answer);
    other = http.createServer(answer);
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    // A port that was just listened on and closed: a connection there is refused.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    closedPortUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-http-'));
    writeApp({
      ...baseApp(),
      'functions/config.json': [{ name: 'httpCall', private: false }, { name: 'httpError', private: false }, { name: 'fetchCall', private: false }],
      'functions/httpCall.js': HTTP_CALL,
      'functions/httpError.js': HTTP_ERROR,
      'functions/fetchCall.js': FETCH_CALL,
    }, appDir);
    served = await serveDist({ appDir, args: ['--no-watch'] });
    token = (await registerAndLogIn(served.app, 'caller@example.com', 'password1')).access_token;
  });

  after(async () => {
    await served?.close();
    target?.close();
    other?.close();
    if (appDir) fs.rmSync(appDir, { recursive: true, force: true });
  });

  async function callFunction(name: string, args: unknown[]): Promise<any> {
    const res = await fetch(`${served.app}/functions/call`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` }, body: JSON.stringify({ name, arguments: args }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    // The client API answers in canonical EJSON; relaxed reading gives the function's plain values back.
    return EJSON.parse(text, { relaxed: true });
  }

  function lastReceived(): Received {
    const last = received.at(-1);
    assert.ok(last, 'the request reached the test server');
    return last;
  }

  test('GET from URL parts with a query and headers: what arrived, and the response document', async () => {
    const { port } = target.address() as AddressInfo;
    const result = await callFunction('httpCall', ['get', {
      scheme: 'http', host: `127.0.0.1:${port}`, path: '/echo', query: { q: ['one', 'two'], word: ['a b&c'] }, fragment: 'ignored-by-server',
      headers: { 'X-Custom': ['first', 'second'], Accept: ['application/json'] }, cookies: { flavour: 'oat' },
    }]);
    const arrived = lastReceived();
    assert.equal(arrived.method, 'GET');
    assert.equal(arrived.url, '/echo?q=one&q=two&word=a+b%26c');
    assert.equal(arrived.headers['x-custom'], 'first, second');
    assert.equal(arrived.headers.accept, 'application/json');
    assert.equal(arrived.headers.cookie, 'flavour=oat');

    assert.equal(result.statusCode, 201);
    assert.equal(result.status, '201 Created Here');
    assert.deepEqual(result.headers['X-Reply'], ['yes']);
    assert.deepEqual(result.headers['Content-Type'], ['application/json']);
    assert.deepEqual(result.headers['Set-Cookie'], ['session=abc; Path=/; HttpOnly', 'theme=dark; Max-Age=60']);
    assert.deepEqual(result.cookies, { session: { value: 'abc', path: '/', httpOnly: true }, theme: { value: 'dark', maxAge: 60 } });
    assert.equal(result.bodyIsBinary, true);
    const echoed = JSON.parse(result.text);
    assert.equal(echoed.url, '/echo?q=one&q=two&word=a+b%26c');
    assert.equal(result.contentLength, Buffer.byteLength(result.text));
  });

  test('POST with encodeBodyAsJSON sends the body as JSON; a string body goes as it is', async () => {
    const document = { name: 'Ada', tags: ['x', 'y'], nested: { n: 2.5, ok: true } };
    const result = await callFunction('httpCall', ['post', { url: `${targetUrl}/echo`, body: document, encodeBodyAsJSON: true }]);
    const arrived = lastReceived();
    assert.equal(arrived.method, 'POST');
    assert.equal(arrived.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(arrived.body), document);
    assert.equal(JSON.parse(result.text).body, arrived.body);

    await callFunction('httpCall', ['put', { url: `${targetUrl}/echo`, body: 'plain words', headers: { 'Content-Type': ['text/plain'] } }]);
    assert.equal(lastReceived().method, 'PUT');
    assert.equal(lastReceived().body, 'plain words');
    assert.equal(lastReceived().headers['content-type'], 'text/plain');
  });

  test('PATCH, DELETE and HEAD use their methods; HEAD has an empty body', async () => {
    await callFunction('httpCall', ['patch', { url: `${targetUrl}/echo`, body: { op: 'x' }, encodeBodyAsJSON: true }]);
    assert.equal(lastReceived().method, 'PATCH');
    assert.deepEqual(JSON.parse(lastReceived().body), { op: 'x' });
    await callFunction('httpCall', ['delete', { url: `${targetUrl}/echo` }]);
    assert.equal(lastReceived().method, 'DELETE');
    const head = await callFunction('httpCall', ['head', { url: `${targetUrl}/echo` }]);
    assert.equal(lastReceived().method, 'HEAD');
    assert.equal(head.statusCode, 201);
    assert.equal(head.text, '');
  });

  test('a redirect is not followed by default, and followed with followRedirects; credentials stay with their host', async () => {
    const notFollowed = await callFunction('httpCall', ['get', { url: `${targetUrl}/redirect` }]);
    assert.equal(notFollowed.statusCode, 302);
    assert.deepEqual(notFollowed.headers.Location, ['/landing']);
    assert.equal(notFollowed.text, 'moved');
    assert.equal(lastReceived().url, '/redirect');

    const followed = await callFunction('httpCall', ['post', { url: `${targetUrl}/redirect`, body: 'x', followRedirects: true }]);
    assert.equal(followed.statusCode, 200);
    assert.equal(followed.text, 'landed by GET', 'a 302 after a POST continues with a GET, as Go\'s client does');
    assert.equal(lastReceived().url, '/landing');

    await callFunction('httpCall', ['get', { url: `${targetUrl}/away`, followRedirects: true, headers: { Authorization: ['Bearer kept-home'] }, cookies: { session: 'home' } }]);
    const redirected = lastReceived();
    assert.equal(redirected.url, '/echo');
    assert.equal(redirected.headers.host, otherUrl.slice('http://'.length), 'the redirect reached the other host');
    assert.equal(redirected.headers.authorization, undefined, 'credentials are not sent on to another host');
    assert.equal(redirected.headers.cookie, undefined, 'cookies are not sent on to another host');
  });

  test('a 404 is a response, not an error', async () => {
    const result = await callFunction('httpCall', ['get', { url: `${targetUrl}/missing` }]);
    assert.equal(result.statusCode, 404);
    assert.equal(result.status, '404 Not Found');
    assert.equal(result.text, 'no such thing');
  });

  test('digestAuth answers the server\'s challenge; credentials without it go as basic authentication', async () => {
    const digest = await callFunction('httpCall', ['get', { url: `${targetUrl}/digest`, username: 'who', password: 'secret', digestAuth: true }]);
    assert.equal(digest.statusCode, 200);
    assert.equal(digest.text, 'digest accepted');
    const wrong = await callFunction('httpCall', ['get', { url: `${targetUrl}/digest`, username: 'who', password: 'wrong', digestAuth: true }]);
    assert.equal(wrong.statusCode, 401);

    const { port } = target.address() as AddressInfo;
    await callFunction('httpCall', ['get', { url: `http://ann:p%40ss@127.0.0.1:${port}/echo` }]);
    assert.equal(lastReceived().headers.authorization, `Basic ${Buffer.from('ann:p@ss').toString('base64')}`);
  });

  test('an unreachable host is an error the function can catch, naming the request and the reason', async () => {
    const result = await callFunction('httpError', ['get', { url: closedPortUrl }]);
    assert.equal(result.threw, true);
    assert.equal(result.isError, true, 'the error is an Error of the function\'s own realm');
    assert.match(result.message, new RegExp(`^Get "${closedPortUrl.replace(/[.]/g, '\\.')}": .*ECONNREFUSED`));
  });

  test('a malformed request is a clear error, and the function process keeps serving', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['get', 'not a document', /expects one argument, a request document/],
      ['get', {}, /needs a 'url', or a 'host'/],
      ['get', { url: 'file:///etc/passwd' }, /must be an http or https URL/],
      ['get', { url: `${targetUrl}/echo`, host: 'elsewhere' }, /exclusive/],
      ['post', { url: `${targetUrl}/echo`, body: { an: 'object' } }, /encodeBodyAsJSON/],
      ['get', { url: `${targetUrl}/echo`, body: 'x' }, /a GET request has no body/],
    ];
    for (const [method, request, expected] of cases) {
      const result = await callFunction('httpError', [method, request]);
      assert.equal(result.threw, true, JSON.stringify(request));
      assert.match(result.message, expected);
    }
    const still = await callFunction('fetchCall', [`${targetUrl}/landing`]);
    assert.deepEqual(still, { status: 200, text: 'landed by GET', header: 'b' }, 'global fetch (and its classes) keep working beside context.http');
  });
});
