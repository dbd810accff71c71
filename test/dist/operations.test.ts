// The operator's view of `dist/cli.js serve`: /healthz, /readyz, Prometheus /metrics (admin credentials on
// the main port; none on --metrics-port, which listens on 127.0.0.1 only), and --log-format json. Each
// with the attack an outsider would try: reading metrics without or with the wrong credentials, growing the
// metrics with random URLs, finding a password or token in the JSON log.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { connectRawSync } from '../helpers/realm-raw-client';
import fs from 'node:fs';
import path from 'node:path';
import { adminToken, copyApp, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

const PROTOCOL = 'com.mongodb.realm-sync#14';
const PASSWORD = 'ada-Secret-Passw0rd';

/** The value of one sample (`name{labels} value`) whose line holds every one of `parts`; undefined when none. */
function sample(text: string, name: string, ...parts: string[]): number | undefined {
  const line = text.split('\n').find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && parts.every((p) => l.includes(p)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('operations: health, readiness, metrics, JSON log', { timeout: 120_000 }, () => {
  let served: ServedDist;
  let metricsUrl: string;
  let admin: string;
  let basic: string;
  let appDir: string;

  before(async () => {
    // The example app, with a function that always throws.
    appDir = copyApp();
    const configFile = path.join(appDir, 'functions', 'config.json');
    fs.writeFileSync(configFile, JSON.stringify([...JSON.parse(fs.readFileSync(configFile, 'utf8')) as unknown[], { name: 'boom', private: false }]));
    fs.writeFileSync(path.join(appDir, 'functions', 'boom.js'), 'exports = () => { throw new Error("boom"); };');
    served = await serveDist({ appDir, args: ['--no-watch', '--metrics-port', '0', '--log-format', 'json'] });
    admin = await adminToken(served);
    const out = served.stdout();
    metricsUrl = /^metrics: (\S+)$/m.exec(out)![1]!;
    basic = `Basic ${Buffer.from(`${/admin public key: (\S+)/.exec(out)![1]}:${/admin private key: (\S+)/.exec(out)![1]}`).toString('base64')}`;
  });
  after(async () => {
    await served?.close();
    if (appDir) fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('/healthz answers at once; /readyz once apps, store and function process are up', async () => {
    const health = await fetch(`${served.url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    assert.equal(health.headers.get('cache-control'), 'no-store');
    // The function process starts in the background: readiness may take a moment.
    const deadline = Date.now() + 30_000;
    let ready: Response;
    for (;;) {
      ready = await fetch(`${served.url}/readyz`);
      if (ready.status === 200 || Date.now() > deadline) break;
      assert.equal(ready.status, 503);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ready', checks: { apps: 'ok', store: 'ok', functions: 'ok', draining: 'ok' } });
  });

  test('/metrics on the main port refuses without admin credentials, with a user\'s token and with a wrong key', async () => {
    const user = await registerAndLogIn(served.app, 'mallory@example.com', 'mallory-Passw0rd');
    const attempts: Record<string, string | undefined> = {
      none: undefined,
      'a user access token': `Bearer ${user.access_token}`,
      'a wrong private key': `Basic ${Buffer.from('whoever:not-the-key').toString('base64')}`,
      'a user\'s password as Basic': `Basic ${Buffer.from(`mallory@example.com:mallory-Passw0rd`).toString('base64')}`,
      'garbage Basic': 'Basic !!!',
    };
    for (const [what, authorization] of Object.entries(attempts)) {
      const res = await fetch(`${served.url}/metrics`, { headers: authorization ? { authorization } : {} });
      const body = await res.text();
      assert.equal(res.status, 401, `${what}: ${body}`);
      assert.doesNotMatch(body, /asl_|process_/, what);
    }
    for (const authorization of [`Bearer ${admin}`, basic]) {
      const res = await fetch(`${served.url}/metrics`, { headers: { authorization } });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      assert.match(await res.text(), /^# TYPE asl_http_requests_total counter$/m);
    }
    // A scraper keeps its connection: scrape after scrape on it leaves nothing behind (no listener pile-up).
    for (let i = 0; i < 15; i++) {
      const res = await fetch(`${served.url}/metrics`, { headers: { authorization: basic } });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
    assert.doesNotMatch(served.stderr(), /MaxListenersExceeded/);
  });

  test('--metrics-port serves without credentials on 127.0.0.1 only, and checks the Host (DNS rebinding)', async () => {
    assert.match(metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const res = await fetch(metricsUrl);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /^asl_apps_served 1$/m);
    const ready = await fetch(metricsUrl.replace('/metrics', '/readyz'));
    assert.equal(ready.status, 200);
    const port = new URL(metricsUrl).port;
    const rebound = await new Promise<number>((resolve, reject) => {
      // fetch sets Host itself; a raw request can send a foreign one, as a rebinding page's would arrive.
      import('node:http').then(({ request }) => {
        const req = request({ host: '127.0.0.1', port, path: '/metrics', headers: { host: `attacker.example:${port}` } }, (r) => { r.resume(); resolve(r.statusCode ?? 0); });
        req.on('error', reject);
        req.end();
      }, reject);
    });
    assert.equal(rebound, 421);
  });

  test('random URLs do not grow the metrics: routes are patterns, unknown paths one label', async () => {
    const token = (await registerAndLogIn(served.app, 'ada@example.com', PASSWORD)).access_token;
    const series = async () => (await (await fetch(metricsUrl)).text()).split('\n').filter((l) => l.startsWith('asl_http_requests_total{'));
    const hit = async (n: number, tag: string) => {
      for (let i = 0; i < n; i++) {
        const noise = `${tag}${i}x${Math.random().toString(36).slice(2)}`;
        await (await fetch(`${served.url}/${noise}/${noise}`)).arrayBuffer();
        await (await fetch(`${served.url}/api/client/v2.0/app/${noise}/location`)).arrayBuffer();
        await (await fetch(`${served.app}/functions/call`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: noise, arguments: [] }) })).arrayBuffer();
      }
    };
    await hit(5, 'first');
    const before = await series();
    await hit(60, 'noise');
    const afterwards = await series();
    assert.equal(afterwards.length, before.length, `new series:\n${afterwards.filter((l) => !before.some((b) => b.split(' ')[0] === l.split(' ')[0])).join('\n')}`);
    const text = (await (await fetch(metricsUrl)).text());
    assert.doesNotMatch(text, /noise\d+x/);
    assert.ok((sample(text, 'asl_http_requests_total', 'route="unmatched"', 'status="404"') ?? 0) >= 65);
    assert.ok((sample(text, 'asl_http_requests_total', 'route="/api/client/v2.0/app/:appId/location"') ?? 0) >= 65);
  });

  test('sync, function and store figures by app', async () => {
    const ada = await (await fetch(`${served.app}/auth/providers/local-userpass/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ada@example.com', password: PASSWORD }) })).json() as { access_token: string; user_id: string };
    const call = (name: string) => fetch(`${served.app}/functions/call`, { method: 'POST', headers: { authorization: `Bearer ${ada.access_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, arguments: [1, 2] }) });
    const app = `app="${served.appId}"`;
    const before = await (await fetch(metricsUrl)).text();
    assert.equal((await call('sum')).status, 200);
    assert.equal((await call('boom')).status, 400);
    const client = await connectRawSync(`${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${ada.access_token}`, [PROTOCOL], false);
    try {
      client.send({ type: 'bind', session: 1, serverPath: JSON.stringify(ada.user_id), signedUserToken: '', needClientFileIdent: true, isSubserver: false });
      const ident = await client.next((m) => m.type === 'ident');
      if (ident.type !== 'ident') throw new Error('no IDENT');
      client.send({ type: 'ident', session: 1, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n });
      await client.next((m) => m.type === 'download');
      client.send({ type: 'upload', session: 1, progressClientVersion: 1n, progressServerVersion: 0n, lockedServerVersion: 0n, changesets: [] });
      // The upload is integrated in the partition's queue; the scrape after it shows it.
      let text = '';
      for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
        text = await (await fetch(metricsUrl)).text();
        if (sample(text, 'asl_sync_uploads_total', app) !== undefined) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(sample(text, 'asl_sync_connections', app, 'mode="partition"'), 1);
      assert.equal(sample(text, 'asl_sync_sessions', app, 'mode="partition"'), 1);
      assert.ok((sample(text, 'asl_sync_bootstrap_duration_seconds_count', app) ?? 0) >= 1);
      assert.ok((sample(text, 'asl_sync_downloads_total', app) ?? 0) >= 1);
      assert.ok((sample(text, 'asl_sync_uploads_total', app, 'outcome="ok"') ?? 0) >= 1);
      assert.ok((sample(text, 'asl_sync_history_entries', app) ?? -1) >= 0);
      // sum and boom ran (names no function has are refused before any call: not calls).
      const grew = (name: string) => (sample(text, name, app) ?? 0) - (sample(before, name, app) ?? 0);
      assert.equal(grew('asl_function_calls_total'), 2);
      assert.equal(grew('asl_function_failures_total'), 1);
      assert.equal(grew('asl_function_duration_seconds_count'), 2);
      assert.ok((sample(text, 'asl_store_size_bytes', app, 'part="journal"') ?? 0) > 0);
      assert.equal(sample(text, 'asl_store_journal_pending_records', app), 0);
      assert.ok((sample(text, 'process_resident_memory_bytes') ?? 0) > 10_000_000);
      assert.equal(sample(text, 'asl_function_process_up', app), 1);
      if (process.platform === 'linux') assert.ok((sample(text, 'asl_function_process_resident_memory_bytes', app) ?? 0) > 10_000_000);
      assert.ok((sample(text, 'nodejs_heap_size_used_bytes') ?? 0) > 0);
      assert.equal(sample(text, 'asl_draining'), 0);
    } finally {
      client.close();
      await client.closed;
    }
  });

  test('--log-format json: one object per line, no password, token, query string or key', async () => {
    const login = await fetch(`${served.app}/auth/providers/local-userpass/login?marker=query-secret`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ada@example.com', password: PASSWORD }) });
    const { access_token: token, refresh_token: refresh } = await login.json() as { access_token: string; refresh_token: string };
    await (await fetch(`${served.app}/functions/call`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'sum', arguments: ['body-secret', 1] }) })).arrayBuffer();
    await served.waitForLog(/functions\/call 200/);
    const lines = served.stderr().split('\n').filter((l) => l.length > 0);
    assert.ok(lines.length > 10);
    for (const line of lines) {
      const record = JSON.parse(line) as { time: string; level: string; msg: string };
      assert.match(record.time, /^\d{4}-\d\d-\d\dT/);
      assert.ok(['error', 'warn', 'info', 'debug'].includes(record.level), line);
      assert.equal(typeof record.msg, 'string');
    }
    const request = lines.map((l) => JSON.parse(l) as { request?: { path: string; status: number; user_id?: string } }).find((r) => r.request?.path.endsWith('/functions/call') && r.request.status === 200);
    assert.ok(request?.request?.user_id, 'a request line names its user');
    const log = served.stderr();
    const out = served.stdout();
    for (const secret of [PASSWORD, token, refresh, admin, 'query-secret', 'body-secret', /admin private key: (\S+)/.exec(out)![1]!]) {
      assert.equal(log.includes(secret), false, `the log holds ${secret.slice(0, 12)}…`);
    }
  });
});

describe('operations: a flexible sync app', { timeout: 120_000 }, () => {
  test('connections, sessions and the bootstrap by mode "flexible"; SIGTERM ends the session with the try-again error', async () => {
    const appDir = copyApp();
    fs.writeFileSync(path.join(appDir, 'sync', 'config.json'), JSON.stringify({
      type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'tracker',
      is_recovery_mode_disabled: false, queryable_fields_names: ['_partition'],
    }));
    const served = await serveDist({ appDir, args: ['--no-watch', '--metrics-port', '0'] });
    try {
      await adminToken(served); // the lines after "listening on" (the metrics URL among them) are out
      const metricsUrl = /^metrics: (\S+)$/m.exec(served.stdout())![1]!;
      const ada = await registerAndLogIn(served.app, 'ada@example.com', PASSWORD);
      const client = await connectRawSync(`${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${ada.access_token}`, ['com.mongodb.realm-query-sync#14'], true);
      client.send({ type: 'bind', session: 1, serverPath: '{"schemaVersion":0,"sessionReason":0}', signedUserToken: '', needClientFileIdent: true, isSubserver: false });
      const ident = await client.next((m) => m.type === 'ident' || m.type === 'json_error' || m.type === 'error');
      assert.equal(ident.type, 'ident');
      if (ident.type !== 'ident') return;
      client.send({ type: 'ident', session: 1, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n, query: { version: 0n, body: '{}' } });
      await client.next((m) => m.type === 'download');
      const app = `app="${served.appId}"`;
      let text = '';
      for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
        text = await (await fetch(metricsUrl)).text();
        if (sample(text, 'asl_sync_bootstrap_duration_seconds_count', app, 'mode="flexible"') !== undefined) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(sample(text, 'asl_sync_connections', app, 'mode="flexible"'), 1);
      assert.equal(sample(text, 'asl_sync_sessions', app, 'mode="flexible"'), 1);
      assert.equal(sample(text, 'asl_sync_bootstrap_duration_seconds_count', app, 'mode="flexible"'), 1);
      served.child.kill('SIGTERM');
      const error = await client.next((m) => m.type === 'json_error');
      assert.ok(error.type === 'json_error' && error.errorCode === 201 && error.session === 1);
      assert.deepEqual([(error.body as { tryAgain: boolean }).tryAgain, (error.body as { action: string }).action], [true, 'Transient']);
      assert.equal(await client.closed, 1001);
      assert.equal(await served.close(), 0);
    } finally {
      await served.close();
      fs.rmSync(appDir, { recursive: true, force: true });
    }
  });
});
