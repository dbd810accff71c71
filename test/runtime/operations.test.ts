// The operations parts in plain Node, their dependencies injected: JSON log lines, readiness, the scraper
// rule, route patterns, the metrics registry, and the HTTP server's drain.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';
import { Router, FirstMatchRouter } from '../../runtime/http/router';
import { createHttpServer, type HttpRequest } from '../../runtime/http/server';
import { ApiError } from '../../runtime/http/errors';
import { createLogger, formatJsonLine, formatLogRecord, type LogRecord } from '../../runtime/log';
import { readiness, worstOf } from '../../runtime/ops/health';
import { residentBytes, RuntimeMetrics } from '../../runtime/ops/metrics';
import { scraperAuthorization } from '../../runtime/ops/metrics-routes';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('JSON log lines', () => {
  test('one object per line with the record\'s fields, whatever the message holds', () => {
    const records: LogRecord[] = [];
    const log = createLogger('info', (r) => records.push(r), () => new Date('2026-01-02T03:04:05.678Z'));
    log.warn('two\nlines "quoted"');
    log.info('GET /x 200 1 ms', { request: { co_id: 'c', time: 't', method: 'GET', path: '/x', status: 200, ms: 1 } });
    log.debug?.('not kept at info');
    assert.equal(records.length, 2);
    const lines = records.map((r) => formatJsonLine(r));
    for (const line of lines) assert.equal(line.includes('\n'), false);
    assert.deepEqual(JSON.parse(lines[0]!), { time: '2026-01-02T03:04:05.678Z', level: 'warn', msg: 'two\nlines "quoted"' });
    assert.deepEqual(JSON.parse(lines[1]!).request, { co_id: 'c', time: 't', method: 'GET', path: '/x', status: 200, ms: 1 });
    assert.equal(formatLogRecord(records[0]!, 'text'), '03:04:05.678 warning: two\nlines "quoted"');
  });
});

describe('readiness', () => {
  test('200 only when every check is ok; the worst outcome of a kind wins', () => {
    assert.equal(readiness(() => ({ apps: 'ok', store: 'ok' })).status, 200);
    const starting = readiness(() => ({ apps: 'ok', functions: worstOf(['ok', 'starting']) }));
    assert.equal(starting.status, 503);
    assert.deepEqual(starting.body, { status: 'not ready', checks: { apps: 'ok', functions: 'starting' } });
    assert.equal(worstOf(['starting', 'failed', 'ok']), 'failed');
    assert.equal(worstOf([]), 'ok');
  });
});

describe('scraper authorization on the main port', () => {
  // `local` is what the HTTP server decided (loopback, not forwarded for someone else: addresses.ts).
  const request = (local: boolean) => ({ local, response: { once: () => undefined } }) as unknown as HttpRequest;

  test('another machine is refused (403) before any credential is checked, unless remote admin is allowed', async () => {
    let checked = 0;
    const authorize = scraperAuthorization(async () => { checked++; }, false);
    await assert.rejects(authorize(request(false)), (e: ApiError) => e.status === 403);
    assert.equal(checked, 0);
    await authorize(request(true));
    assert.equal(checked, 1);
    await scraperAuthorization(async () => { checked++; }, true)(request(false));
    assert.equal(checked, 2);
  });

  test('the credential check\'s refusal is the answer', async () => {
    const authorize = scraperAuthorization(async () => { throw new ApiError(401, 'InvalidSession', 'no'); }, false);
    await assert.rejects(authorize(request(true)), (e: ApiError) => e.status === 401);
  });
});

describe('route patterns', () => {
  test('a match names the pattern it was registered with, never the path', () => {
    const router = new Router().get('/api/client/v2.0/app/:appId/location', () => undefined);
    const match = new FirstMatchRouter([new Router(), router]).match('GET', '/api/client/v2.0/app/anything-at-all/location');
    assert.equal(match.kind, 'found');
    assert.equal(match.kind === 'found' && match.pattern, '/api/client/v2.0/app/:appId/location');
  });
});

describe('RuntimeMetrics', () => {
  test('function calls, failures and time; sync activity; an app\'s scrape-time figures leave with it', async () => {
    const metrics = new RuntimeMetrics({ defaultMetrics: false });
    assert.equal(await metrics.timeFunction('a', async () => 5), 5);
    await assert.rejects(metrics.timeFunction('a', async () => { throw new Error('x'); }), /x/);
    const observer = metrics.syncObserver('a', () => 'flexible');
    observer.upload(0.01, 'refused');
    observer.download(2, 100, 0.002);
    observer.download(0, 0);
    observer.bootstrap(0.5);
    const remove = metrics.addApp({
      appId: 'a', syncMode: () => 'flexible', syncCounts: () => ({ connections: 3, sessions: 4 }), historyEntries: async () => 7,
      storeStats: () => ({ open: true, snapshotBytes: 10, journalBytes: 20, journalPendingRecords: 1, journalRecords: 5, journalSyncs: 2 }),
      functionProcessUp: () => true, functionProcessMemory: () => 4096,
    });
    let text = await metrics.text();
    for (const line of [
      'asl_function_calls_total{app="a"} 2', 'asl_function_failures_total{app="a"} 1', 'asl_function_duration_seconds_count{app="a"} 2',
      'asl_sync_uploads_total{app="a",mode="flexible",outcome="refused"} 1', 'asl_sync_downloads_total{app="a",mode="flexible"} 2',
      'asl_sync_download_changeset_bytes_total{app="a",mode="flexible"} 100', 'asl_sync_download_duration_seconds_count{app="a",mode="flexible"} 1',
      'asl_sync_bootstrap_duration_seconds_count{app="a",mode="flexible"} 1',
      'asl_sync_connections{app="a",mode="flexible"} 3', 'asl_sync_sessions{app="a",mode="flexible"} 4', 'asl_sync_history_entries{app="a"} 7',
      'asl_store_size_bytes{app="a",part="journal"} 20', 'asl_store_journal_pending_records{app="a"} 1', 'asl_function_process_up{app="a"} 1', 'asl_function_process_resident_memory_bytes{app="a"} 4096',
      'asl_apps_served 1', 'asl_draining 0',
    ]) assert.ok(text.split('\n').includes(line), `${line} in\n${text}`);
    remove();
    metrics.draining = true;
    text = await metrics.text();
    assert.equal(text.includes('asl_sync_connections{app="a"'), false);
    assert.ok(text.split('\n').includes('asl_draining 1'));
  });

  test('a process\'s resident memory from /proc/<pid>/status; none for no process or an unreadable one', () => {
    const status = 'Name:\tnode\nVmPeak:\t  900 kB\nVmRSS:\t   51200 kB\nThreads:\t7\n';
    assert.equal(residentBytes(42, (file) => { assert.equal(file, '/proc/42/status'); return status; }), 51200 * 1024);
    assert.equal(residentBytes(undefined, () => status), undefined);
    assert.equal(residentBytes(42, () => { throw new Error('ENOENT'); }), undefined);
    assert.equal(residentBytes(42, () => 'Name:\tnode\n'), undefined);
  });

  test('HTTP answers by method, route and status', async () => {
    const metrics = new RuntimeMetrics({ defaultMetrics: false });
    metrics.httpAnswered({ method: 'GET', route: '/x/:id', status: 404, seconds: 0.003 });
    metrics.httpAnswered({ method: 'GET', route: '/x/:id', status: 404, seconds: 0.004 });
    const text = await metrics.text();
    assert.ok(text.includes('asl_http_requests_total{method="GET",route="/x/:id",status="404"} 2'));
    assert.ok(text.includes('asl_http_request_duration_seconds_count{method="GET",route="/x/:id"} 2'));
  });
});

describe('HTTP server drain', () => {
  test('the port is released, a request in flight finishes with Connection: close, then drain resolves', async () => {
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => { finish = resolve; });
    let arrived!: () => void;
    const started = new Promise<void>((resolve) => { arrived = resolve; });
    const answered: string[] = [];
    const server = await createHttpServer({
      log: quiet, onAnswered: (a) => answered.push(`${a.route} ${a.status}`),
      router: new Router().get('/slow/:n', async () => { arrived(); await finished; return { body: { done: true }, encoding: 'json' }; }),
    });
    const response = new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: server.port, path: '/slow/1', headers: { host: `localhost:${server.port}` } }, (res) => {
        let body = '';
        res.on('data', (d) => { body += d; });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
      }).on('error', reject);
    });
    await started;
    assert.equal(server.inFlight, 1);
    const drained = server.drain(10_000);
    const refused = await new Promise<boolean>((resolve) => {
      http.get({ host: '127.0.0.1', port: server.port, path: '/slow/2', agent: false }, () => resolve(false)).on('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
    });
    assert.equal(refused, true);
    finish();
    assert.deepEqual(await response, { status: 200, connection: 'close', body: '{"done":true}' });
    assert.equal(await drained, true);
    assert.deepEqual(answered, ['/slow/:n 200']);
    await server.close();
  });

  test('a request that outlasts the bound: drain resolves false, close cuts it', async () => {
    let arrived!: () => void;
    const started = new Promise<void>((resolve) => { arrived = resolve; });
    const server = await createHttpServer({ log: quiet, router: new Router().get('/never', () => { arrived(); return new Promise<never>(() => undefined); }) });
    const cut = new Promise<string>((resolve) => {
      http.get({ host: '127.0.0.1', port: server.port, path: '/never', headers: { host: `localhost:${server.port}` } }, () => resolve('answered')).on('error', () => resolve('cut'));
    });
    await started;
    assert.equal(await server.drain(50), false);
    await server.close();
    assert.equal(await cut, 'cut');
  });
});
