// One log record per answered request (method, path, status, ms, user id; never a token), levels, the
// in-memory request log behind the `/logs?co_id=…` link of every error body, and the page at `GET /`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { homePage } from '../../runtime/http/home';
import { createLogger, formatLogLine, RequestLog, type LogRecord, type RequestLogEntry } from '../../runtime/log';
import { EXAMPLE_DIR, postJson } from './fixtures/e2e-runtime';

function copyExample(): string {
  const appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-reqlog-'));
  fs.cpSync(EXAMPLE_DIR, appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  return appDir;
}

describe('request log over HTTP', () => {
  let runtime: RunningRuntime;
  let appDir: string;
  const records: LogRecord[] = [];
  /** Resolves with the request record of `coId` once it is logged (the record is written when the response closes). */
  const recordOf = async (predicate: (entry: RequestLogEntry) => boolean, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = records.find((r) => r.request && predicate(r.request));
      if (found) return found;
      if (Date.now() > deadline) assert.fail(`no such request record; records: ${JSON.stringify(records)}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  before(async () => {
    appDir = copyExample();
    runtime = await startRuntime({ appDir, port: 0, log: createLogger('info', (r) => records.push(r)) });
  });
  after(async () => {
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('an error body links to /logs?co_id=…, which serves that request\'s entry as JSON', async () => {
    const res = await fetch(`${runtime.url}/api/client/v2.0/app/no-such-app/location`);
    assert.equal(res.status, 404);
    const body = await res.json() as { link: string; error_code: string };
    const link = new URL(body.link);
    assert.equal(link.pathname, '/logs');
    const coId = link.searchParams.get('co_id')!;
    assert.match(coId, /^[0-9a-f]{24}$/);
    const refused = await fetch(`${runtime.url}/logs?co_id=${coId}`);
    assert.equal(refused.status, 401, 'the log is the developer\'s: it needs the admin session');
    const admin = { headers: { Authorization: `Bearer ${(await runtime.mintAdminSession()).access_token}` } };
    const logged = await fetch(`${runtime.url}/logs?co_id=${coId}`, admin);
    assert.equal(logged.status, 200);
    assert.equal(logged.headers.get('content-type'), 'application/json');
    const entry = await logged.json() as RequestLogEntry;
    assert.deepEqual({ ...entry, ms: 0, time: '' }, {
      co_id: coId, time: '', method: 'GET', path: '/api/client/v2.0/app/no-such-app/location', status: 404, ms: 0,
      error: "cannot find app using Client App ID 'no-such-app'", error_code: 'AppNotFound',
    });
    assert.ok(entry.ms >= 0);
    const unknown = await fetch(`${runtime.url}/logs?co_id=000000000000000000000000`, admin);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error_code: string }).error_code, 'NotFound');
    const recent = await (await fetch(`${runtime.url}/logs`, admin)).json() as { requests: RequestLogEntry[] };
    assert.ok(recent.requests.some((r) => r.co_id === coId), 'the recent requests list it');
  });

  test('one record per request at info: method, path without query, status, ms, user id; no token anywhere', async () => {
    const app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    const credentials = { email: 'logged@example.com', password: 'logged-password-1' };
    await postJson(`${app}/auth/providers/local-userpass/register`, credentials);
    const login = await postJson(`${app}/auth/providers/local-userpass/login`, { username: credentials.email, password: credentials.password });
    const { access_token: token, refresh_token: refresh, user_id: userId } = login.body;
    const call = await postJson(`${app}/functions/call?marker=secret-query`, { name: 'sum', arguments: [1, 2] }, { Authorization: `Bearer ${token}` });
    assert.equal(call.status, 200);
    const record = await recordOf((e) => e.path === `/api/client/v2.0/app/${runtime.appId}/functions/call`);
    assert.equal(record.level, 'info');
    assert.equal(record.request!.method, 'POST');
    assert.equal(record.request!.status, 200);
    assert.equal(record.request!.user_id, userId);
    assert.equal(typeof record.request!.ms, 'number');
    assert.match(record.message, new RegExp(`^POST /api/client/v2\\.0/app/${runtime.appId}/functions/call 200 [\\d.]+ ms user ${userId} co_id [0-9a-f]{24}$`));
    const forged = await postJson(`${app}/functions/call`, { name: 'sum', arguments: [1, 2] }, { Authorization: `Bearer ${token.slice(0, -4)}AAAA` });
    assert.equal(forged.status, 401);
    const refused = await recordOf((e) => e.status === 401);
    assert.equal(refused.request!.user_id, undefined, 'a token the runtime did not verify names no user');
    const everything = JSON.stringify(records);
    for (const secret of [token, refresh, credentials.password, 'secret-query']) assert.ok(!everything.includes(secret), 'no credential is logged');
  });

  test('GET / is a page naming the app, its id, the client API base and GraphQL endpoint, under a strict CSP', async () => {
    const res = await fetch(`${runtime.url}/`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy')!;
    assert.match(csp, /^default-src 'none'; style-src 'nonce-[^']+'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'$/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const html = await res.text();
    const base = runtime.url; // the address the page was asked at
    for (const text of ['todo-tracker', runtime.appId, base, `${base}/api/client/v2.0/app/${runtime.appId}/graphql`, `href="${base}/logs"`]) {
      assert.ok(html.includes(text), `the page shows ${text}`);
    }
    assert.ok(!/<script/i.test(html), 'no script');
    const nonce = /'nonce-([^']+)'/.exec(csp)![1];
    assert.ok(html.includes(`<style nonce="${nonce}">`));
  });
});

describe('log levels and records', () => {
  test('a logger keeps its level and the more severe ones, and says which it keeps', () => {
    const kept: LogRecord[] = [];
    const log = createLogger('warn', (r) => kept.push(r), () => new Date('2026-01-02T03:04:05.678Z'));
    log.debug!('d'); log.info('i'); log.warn('w'); log.error('e');
    assert.deepEqual(kept.map((r) => [r.level, r.message]), [['warn', 'w'], ['error', 'e']]);
    assert.equal(log.enabled!('info'), false);
    assert.equal(log.enabled!('error'), true);
    assert.equal(formatLogLine(kept[0]!), '03:04:05.678 warning: w');
    assert.equal(formatLogLine({ ...kept[0]!, level: 'info', message: 'i' }), '03:04:05.678 i');
    assert.deepEqual(JSON.parse(JSON.stringify(kept[1])), { time: '2026-01-02T03:04:05.678Z', level: 'error', message: 'e' }, 'a record is a JSON line as it is');
  });

  test('at --log-level warn no request is logged, and the request log still serves /logs', async () => {
    const appDir = copyExample();
    const records: LogRecord[] = [];
    const runtime = await startRuntime({ appDir, port: 0, log: createLogger('warn', (r) => records.push(r)) });
    try {
      const res = await fetch(`${runtime.url}/nothing-here`);
      const { link } = await res.json() as { link: string };
      const admin = { headers: { Authorization: `Bearer ${(await runtime.mintAdminSession()).access_token}` } };
      const entry = await (await fetch(`${runtime.url}${new URL(link).pathname}${new URL(link).search}`, admin)).json() as RequestLogEntry;
      assert.equal(entry.status, 404);
      assert.deepEqual(records.filter((r) => r.request), []);
    } finally {
      await runtime.close();
      fs.rmSync(appDir, { recursive: true, force: true });
    }
  });

  test('the request log keeps the most recent entries only', () => {
    const log = new RequestLog(3);
    const entry = (n: number): RequestLogEntry => ({ co_id: `id${n}`, time: '', method: 'GET', path: '/', status: 200, ms: 0 });
    for (let n = 1; n <= 5; n++) log.add(entry(n));
    assert.equal(log.find('id2'), undefined);
    assert.equal(log.find('id5')?.co_id, 'id5');
    assert.deepEqual(log.recent(10).map((e) => e.co_id), ['id5', 'id4', 'id3']);
  });

  test('the page escapes every value', () => {
    const page = homePage({ baseUrl: 'http://localhost:1', apps: [{ name: '<img src=x onerror=alert(1)>"\'&', appId: 'a"b<c' }] });
    const html = page.text;
    assert.ok(!html.includes('<img'), html);
    assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;'));
    assert.ok(html.includes('a&quot;b&lt;c'));
  });
});
