// The editor's "Open Partition as User…" without VS Code: the local admin route of the running runtime
// (behind the admin session), the rendered JSONC view, and the live refresh over the sync feed when a
// document of the partition or the user's custom data changes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { parse } from 'jsonc-parser';
import { SessionPool } from '../../core/runner/identities';
import { traceLines } from '../../core/rules/trace';
import { fetchSimulation, renderSimulation, watchPartition } from '../../core/sync/simulatorClient';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { formatReport } from '../../runtime/sync';
import { REPO_ROOT } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('the partition simulator view against a running runtime', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let pool: SessionPool;
  let adaId: string;

  before(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-sync-view-'));
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    runtime = await startRuntime({ appDir, port: 0, log: quiet });
    const app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.ok((await post(`${app}/auth/providers/local-userpass/register`, { email: 'ada@example.com', password: 'correct horse' })).ok);
    adaId = ((await (await post(`${app}/auth/providers/local-userpass/login`, { username: 'ada@example.com', password: 'correct horse' })).json()) as { user_id: string }).user_id;
    const session = await runtime.mintAdminSession();
    pool = new SessionPool({ baseUrl: runtime.url, appId: runtime.appId, admin: { accessToken: session.access_token, refreshToken: session.refresh_token } });
  });
  after(async () => {
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('the local route needs the admin session', async () => {
    const res = await fetch(`${runtime.url}/api/admin/v3.0/local/app/${runtime.appId}/sync/simulate?user=${adaId}&partition=%22x%22`);
    assert.equal(res.status, 401);
  });

  test('the report over HTTP, rendered as JSONC with the traces as comments', async () => {
    const view = await fetchSimulation(pool, 'ada@example.com', JSON.stringify(adaId));
    assert.equal(view.user?.id, adaId);
    assert.equal(view.permissions?.write, true);
    const text = renderSimulation(view);
    assert.match(text, /^\/\/ write: ALLOWED$/m);
    assert.match(text, new RegExp(`^// +✓ "%%user\\.id": "%%partition" {3}\\[subject "${adaId}", operand "${adaId}"\\]$`, 'm'));
    assert.match(text, /^\/\/ client error: none/m);
    const parsed = parse(text) as { partition: { text: string } };
    assert.equal(parsed.partition.text, JSON.stringify(adaId));
    const wrong = renderSimulation(await fetchSimulation(pool, adaId, '7'));
    assert.match(wrong, /^\/\/ client error: 204 ErrorIllegalDatabasePath: attempted to bind on illegal realm partition: expected partition to have type string but found long$/m);
  });

  test('the trace reads the same in the editor\'s view and in asl sync simulate: one formatter', async () => {
    const view = await fetchSimulation(pool, 'ada@example.com', JSON.stringify(adaId));
    const report = await runtime.sync.simulate('ada@example.com', JSON.stringify(adaId));
    const trace = traceLines(report.permissions!.writeTrace!);
    assert.ok(trace.length >= 1 && trace[0]!.includes('✓'), trace.join('\n'));
    const cli = formatReport(report).split('\n');
    const editor = renderSimulation(view).split('\n').map((line) => line.replace(/^\/\/ /, ''));
    for (const line of trace) {
      assert.ok(cli.includes(line), `asl sync simulate lacks: ${line}`);
      assert.ok(editor.includes(line), `the editor's view lacks: ${line}`);
    }
  });

  test('live: a document written into the partition refreshes the view', async () => {
    let notify: ((why: string) => void) | undefined;
    const changed = new Promise<string>((resolve) => { notify = resolve; });
    const watch = await watchPartition(pool, adaId, JSON.stringify(adaId), (why) => notify?.(why), 10);
    try {
      // The feed's snapshot arrives before anything changes; a write after it is seen.
      await new Promise<void>((resolve) => {
        const poll = () => (runtime.sync.service.status().sessions > 0 ? resolve() : setImmediate(poll));
        poll();
      });
      await runtime.sync.service.store.collection('tracker', 'Task').insertOne({ _id: new ObjectId(), _partition: adaId, name: 'live', status: 'open', isComplete: false });
      assert.equal(await changed, 'a document changed');
      const view = await fetchSimulation(pool, adaId, JSON.stringify(adaId));
      assert.equal(view.collections.find((c) => c.type === 'Task')?.count, 1);
    } finally {
      watch.close();
    }
  });
});
