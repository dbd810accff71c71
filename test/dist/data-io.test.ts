// `asl data` beside a running `node dist/cli.js serve` (its runtime record in the data folder): the commands go
// through the runtime's data routes. An import's documents are ordinary store writes: realm-core's own sync
// client (realm-sync-probe) with a session open gets them, a database trigger runs on them; export and backup
// are snapshots; restore waits for the runtime to stop. And the attacks on the routes: no admin session, a
// user's token, garbage, a body cut off, an oversized one, the runtime's own databases.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BSON, ObjectId } from 'bson';
import { probeAvailable, registerUser, startProbe } from '../helpers/realm-probe';
import { asl, CLI, writeDumpCollection, type CliRun } from '../helpers/dump';
import { copyApp, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';
import { DataFrameKind } from '../../core/runtime-protocol';
import { encodeFrame, jsonFrame } from '../../runtime/data-io/frames';

const TASK_SCHEMA = [{
  name: 'Task', primaryKey: '_id',
  properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool', priority: 'int?', tags: 'string[]' },
}];

/** The example app, its Task trigger also firing on inserts (it writes one tracker.TaskEvent per event). */
function appWithInsertTrigger(): string {
  const appDir = copyApp();
  const file = path.join(appDir, 'triggers', 'logTaskChange.json');
  const trigger = JSON.parse(fs.readFileSync(file, 'utf8')) as { config: { operation_types: string[] } };
  trigger.config.operation_types = ['INSERT', 'UPDATE', 'REPLACE'];
  fs.writeFileSync(file, JSON.stringify(trigger, null, 2));
  return appDir;
}

function aslAsync(args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString('utf8'); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString('utf8'); });
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/** The status of an import that declares 600 MiB and sends none of it. */
function declaredHuge(url: string, token: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Length': String(600 * 1024 * 1024) } }, (res) => {
      res.resume();
      resolve(res.statusCode);
      req.destroy();
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

function tasks(partition: string, count: number, from = 0): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    _id: new ObjectId(), _partition: partition, name: `imported ${from + i}`, status: 'open', isComplete: false, tags: ['imported'],
  }));
}

describe('asl data beside a running dist/cli.js serve', { timeout: 240_000 }, () => {
  let served: ServedDist;
  let work: string;
  let n = 0;
  const data = (...args: string[]) => asl(['data', ...args, '--local', served.appDir, '--data', served.dataDir]);
  const folder = (name: string) => path.join(work, `${name}-${++n}`);
  /** The runtime's documents of a collection, read through the export route. */
  const documentsOf = (database: string, collection: string): Record<string, unknown>[] => {
    const out = folder('export');
    const run = data('export', out, '--db', database);
    assert.equal(run.status, 0, run.stderr);
    const file = path.join(out, database, `${collection}.bson`);
    if (!fs.existsSync(file)) return [];
    const bytes = fs.readFileSync(file);
    const docs: Record<string, unknown>[] = [];
    for (let at = 0; at < bytes.length; at += bytes.readInt32LE(at)) docs.push(BSON.deserialize(bytes.subarray(at, at + bytes.readInt32LE(at))));
    return docs;
  };

  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-data-served-'));
    served = await serveDist({ appDir: appWithInsertTrigger() });
  });
  after(async () => {
    await served?.close();
    if (served) fs.rmSync(served.appDir, { recursive: true, force: true });
    fs.rmSync(work, { recursive: true, force: true });
  });

  test('an import goes through the runtime: database triggers run on its documents, and a malformed file is refused by name and offset', async () => {
    const dump = folder('dump');
    const imported = tasks('triggered', 20);
    writeDumpCollection(dump, { database: 'tracker', collection: 'Task', docs: imported });
    const run = data('import', dump);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`imported 20 document\\(s\\) in 1 collection\\(s\\) \\(through the runtime at ${served.url.replace(/[.]/g, '\\.')}\\)`));
    const deadline = Date.now() + 30_000;
    let events: Record<string, unknown>[] = [];
    while (Date.now() < deadline) {
      events = documentsOf('tracker', 'TaskEvent');
      if (events.length >= 20) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    const ids = new Set(imported.map((t) => (t._id as ObjectId).toHexString()));
    assert.equal(events.filter((e) => ids.has((e.taskId as ObjectId).toHexString())).length, 20, 'one trigger run per imported document');

    const bad = folder('dump');
    const { bson } = writeDumpCollection(bad, { database: 'tracker', collection: 'Task', docs: tasks('triggered', 3, 100) });
    const bytes = fs.readFileSync(bson);
    fs.writeFileSync(bson, bytes.subarray(0, bytes.length - 7));
    const refused = data('import', bad);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, new RegExp(`${bson.replace(/[.]/g, '\\.')}: the document at byte \\d+: truncated`));
    assert.equal(documentsOf('tracker', 'Task').filter((t) => ['imported 100', 'imported 101', 'imported 102'].includes(String(t.name))).length, 0, 'nothing of the refused file was written');
  });

  test('import while a client syncs: realm-core\'s client with its session open receives the imported objects of its partition only', { skip: probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine' }, async () => {
    const ada = { type: 'emailPassword', email: 'ada.import@example.com', password: 'ada-Passw0rd' };
    const adaId = await registerUser(served.app, ada.email, ada.password);
    const probe = startProbe({
      baseUrl: served.url, appId: served.appId, schema: TASK_SCHEMA, timeoutMs: 60_000, credentials: ada, partition: adaId,
      steps: [
        { waitDownload: true },
        { expect: { type: 'Task', count: 0 }, label: 'before' },
        { expect: { type: 'Task', count: 300, withinMs: 60_000 }, label: 'after' },
        { expect: { type: 'Task', count: 300, query: "name BEGINSWITH 'imported '" } },
      ],
    });
    try {
      const before = await probe.waitFor((l) => l.event === 'expect' && l.label === 'before');
      assert.equal(before.pass, true);
      const dump = folder('dump');
      writeDumpCollection(dump, { database: 'tracker', collection: 'Task', docs: [...tasks(adaId, 300), ...tasks('someone-else', 50)] });
      const run = await aslAsync(['data', 'import', dump, '--local', served.appDir, '--data', served.dataDir]);
      assert.equal(run.status, 0, run.stderr);
      const result = await probe.done;
      const expects = result.events('expect');
      assert.deepEqual(expects.map((e) => [e.label ?? null, e.actual, e.pass]), [['before', 0, true], ['after', 300, true], [null, 300, true]], JSON.stringify(result.result));
    } finally {
      probe.kill();
    }
  });

  test('exports taken while an import writes see whole batches only: each one a snapshot of one instant', async () => {
    const dump = folder('dump');
    writeDumpCollection(dump, { database: 'bulk', collection: 'rows', docs: Array.from({ length: 60_000 }, (_, i) => ({ _id: i, text: `row ${i}` })) });
    const importing = aslAsync(['data', 'import', dump, '--local', served.appDir, '--data', served.dataDir]);
    let done = false;
    void importing.then(() => { done = true; });
    const counts: number[] = [];
    while (!done) {
      const run = await aslAsync(['data', 'export', folder('export'), '--local', served.appDir, '--data', served.dataDir, '--db', 'bulk', '--json']);
      assert.equal(run.status, 0, run.stderr);
      counts.push((JSON.parse(run.stdout) as { documents: number }).documents);
    }
    assert.equal((await importing).status, 0);
    // The import commits 1,000 documents at a time; a snapshot between two of a commit's documents would show another count.
    assert.deepEqual(counts.filter((c) => c % 1000 !== 0), [], `counts seen: ${counts.join(', ')}`);
    assert.equal(documentsOf('bulk', 'rows').length, 60_000);
  });

  test('export through the runtime is a snapshot of the store; backup copies the folder; restore waits for the runtime to stop, then brings back users and documents', async () => {
    const dump = folder('dump');
    const docs = Array.from({ length: 5000 }, (_, i) => ({ _id: i, n: i, text: `row ${i}` }));
    writeDumpCollection(dump, { database: 'shop', collection: 'rows', docs });
    assert.equal(data('import', dump).status, 0);
    const out = folder('export');
    assert.equal(data('export', out, '--db', 'shop').status, 0);
    assert.deepEqual(fs.readFileSync(path.join(out, 'shop', 'rows.bson')), Buffer.concat(docs.map((d) => BSON.serialize(d))));

    await registerAndLogIn(served.app, 'kept@example.com', 'kept-Passw0rd');
    const backup = folder('backup');
    const made = data('backup', backup);
    assert.equal(made.status, 0, made.stderr);
    assert.match(made.stdout, /through the runtime at/);
    const refused = data('restore', backup);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /holds .*; stop it before restoring/);

    const extra = folder('dump');
    writeDumpCollection(extra, { database: 'shop', collection: 'after_backup', docs: [{ _id: 1 }] });
    assert.equal(data('import', extra).status, 0);
    const appDir = served.appDir;
    const dataDir = path.join(work, 'restored-data');
    fs.cpSync(served.dataDir, dataDir, { recursive: true });
    await served.close();
    const restored = asl(['data', 'restore', backup, '--local', appDir, '--data', dataDir]);
    assert.equal(restored.status, 0, restored.stderr);
    served = await serveDist({ appDir, dataDir });
    await registerAndLogIn(served.app, 'kept@example.com', 'kept-Passw0rd').catch((e: Error) => assert.match(e.message, /register: 409/));
    const login = await fetch(`${served.app}/auth/providers/local-userpass/login`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username: 'kept@example.com', password: 'kept-Passw0rd' }),
    });
    assert.equal(login.status, 200, 'the user made before the backup logs in');
    const shop = asl(['data', 'export', folder('export'), '--local', appDir, '--data', dataDir, '--db', 'shop', '--json']);
    assert.equal(shop.status, 0, shop.stderr);
    assert.deepEqual((JSON.parse(shop.stdout) as { collections: { collection: string; documents: number }[] }).collections.map((c) => [c.collection, c.documents]), [['rows', 5000]]);
  });

  describe('the data routes under attack', () => {
    let adminToken: string;
    const route = (suffix: string) => `${served.url}/api/admin/v3.0/local/app/${served.appId}/data/${suffix}`;
    before(async () => {
      const record = JSON.parse(fs.readFileSync(path.join(served.dataDir, 'runtime.json'), 'utf8')) as { admin: { refreshToken: string } };
      const session = await fetch(`${served.url}/api/admin/v3.0/auth/session`, { method: 'POST', headers: { Authorization: `Bearer ${record.admin.refreshToken}` } });
      adminToken = ((await session.json()) as { access_token: string }).access_token;
    });
    const post = (body: Uint8Array) => fetch(route('import'), {
      method: 'POST', headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/octet-stream' }, body: body as unknown as BodyInit,
    });

    test('no admin session, or a user\'s token, opens none of them', async () => {
      const user = await registerAndLogIn(served.app, 'mallory.data@example.com', 'mallory-Passw0rd');
      for (const suffix of ['export', 'backup']) {
        assert.equal((await fetch(route(suffix))).status, 401);
        const asUser = await fetch(route(suffix), { headers: { Authorization: `Bearer ${user.access_token}` } });
        assert.equal(asUser.status, 401);
        assert.equal(asUser.headers.get('content-type'), 'application/json');
      }
      const frames = Buffer.concat([jsonFrame(DataFrameKind.collection, { database: 'shop', collection: 'mallory', indexes: [] }), encodeFrame(DataFrameKind.documents, BSON.serialize({ _id: 1 })), jsonFrame(DataFrameKind.end, { collections: 1, documents: 1 })]);
      const asUser = await fetch(route('import'), { method: 'POST', headers: { Authorization: `Bearer ${user.access_token}` }, body: frames });
      assert.equal(asUser.status, 401);
      assert.deepEqual(documentsOf('shop', 'mallory'), []);
    });

    test('garbage, a body cut off, a malformed document, an oversized body: a clear 4xx and nothing written', async () => {
      const garbage = await post(Buffer.from('not frames at all, just text that goes on'));
      assert.equal(garbage.status, 400);
      assert.match(((await garbage.json()) as { error: string }).error, /not a stream of data frames: unknown frame kind/);

      const collection = jsonFrame(DataFrameKind.collection, { database: 'shop', collection: 'attack', indexes: ['owner'] });
      const cut = await post(Buffer.concat([collection, encodeFrame(DataFrameKind.documents, BSON.serialize({ _id: 1 }))]));
      assert.equal(cut.status, 400);
      assert.match(((await cut.json()) as { error: string }).error, /ends without its end frame/);

      const good = BSON.serialize({ _id: 2, ok: true });
      const broken = Buffer.from(BSON.serialize({ _id: 3, s: 'abc' }));
      broken[broken.length - 3] = 0xff;
      const malformed = await post(Buffer.concat([collection, encodeFrame(DataFrameKind.documents, Buffer.concat([good, broken])), jsonFrame(DataFrameKind.end, {})]));
      assert.equal(malformed.status, 400);
      const body = (await malformed.json()) as { error: string; error_code: string; namespace: string; offset: number };
      assert.equal(body.error_code, 'InvalidDump');
      assert.equal(body.namespace, 'shop.attack');
      assert.equal(body.offset, good.length);

      assert.equal(await declaredHuge(route('import'), adminToken), 413, 'a body declared over the limit is refused before it is read');
      const giantFrame = Buffer.alloc(5);
      giantFrame.writeUInt32LE(0xffffffff, 0);
      giantFrame.writeUInt8(DataFrameKind.documents, 4);
      const oversized = await post(Buffer.concat([collection, giantFrame]));
      assert.equal(oversized.status, 400);
      assert.match(((await oversized.json()) as { error: string }).error, /exceeds the limit/);

      const hostileNames = await post(Buffer.concat([jsonFrame(DataFrameKind.collection, { database: 'shop', collection: 'x', indexes: ['$where'] }), jsonFrame(DataFrameKind.end, {})]));
      assert.equal(hostileNames.status, 400);
      assert.deepEqual(documentsOf('shop', 'attack'), []);
    });

    test('one import at a time: a second one while the first is still being sent gets 409', async () => {
      const first = http.request(route('import'), { method: 'POST', headers: { Authorization: `Bearer ${adminToken}` } });
      const firstAnswer = new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
        first.on('response', (res) => { let body = ''; res.on('data', (d: Buffer) => { body += d; }); res.on('end', () => resolve({ status: res.statusCode, body })); });
        first.on('error', reject);
      });
      first.write(jsonFrame(DataFrameKind.collection, { database: 'shop', collection: 'slow', indexes: [] }));
      let second: Response | undefined;
      for (let attempt = 0; attempt < 50 && second?.status !== 409; attempt++) {
        await new Promise((r) => setTimeout(r, 100));
        second = await post(Buffer.concat([jsonFrame(DataFrameKind.collection, { database: 'shop', collection: 'second', indexes: [] }), jsonFrame(DataFrameKind.end, {})]));
      }
      assert.equal(second?.status, 409);
      assert.match(((await second!.json()) as { error: string }).error, /another import is running/);
      first.end(Buffer.concat([encodeFrame(DataFrameKind.documents, BSON.serialize({ _id: 1 })), jsonFrame(DataFrameKind.end, {})]));
      const answer = await firstAnswer;
      assert.equal(answer.status, 200);
      assert.equal((JSON.parse(answer.body.trim().split('\n').at(-1)!) as { kind: string }).kind, 'done');
      assert.deepEqual(documentsOf('shop', 'slow'), [{ _id: 1 }]);
      assert.deepEqual(documentsOf('shop', 'second'), []);
    });

    test('the runtime\'s own databases cannot be written through an import', async () => {
      const intruder = Buffer.concat([
        jsonFrame(DataFrameKind.collection, { database: '__asl_auth', collection: 'users', indexes: [] }),
        encodeFrame(DataFrameKind.documents, BSON.serialize({ _id: 'intruder', admin: true })),
        jsonFrame(DataFrameKind.end, {}),
      ]);
      const answer = await post(intruder);
      assert.equal(answer.status, 200);
      const lines = (await answer.text()).trim().split('\n').map((l) => JSON.parse(l) as { kind: string; error?: string });
      assert.equal(lines.at(-1)!.kind, 'failed');
      assert.match(lines.at(-1)!.error!, /__asl_auth is the runtime's own/);
      const exported = data('export', folder('export'), '--json');
      assert.ok(!exported.stdout.includes('__asl_auth'), 'the runtime\'s own databases are not exported either');
    });
  });
});

describe('asl data beside a runtime serving a folder of several apps', { timeout: 120_000 }, () => {
  let served: ServedDist;
  before(async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-data-apps-'));
    for (const [name, id] of [['one', 'one-app-aaaaa'], ['two', 'two-app-bbbbb']] as const) {
      const app = copyApp();
      fs.cpSync(app, path.join(root, name), { recursive: true });
      fs.rmSync(app, { recursive: true, force: true });
      const config = path.join(root, name, 'realm_config.json');
      fs.writeFileSync(config, JSON.stringify({ ...JSON.parse(fs.readFileSync(config, 'utf8')), app_id: id, name }));
    }
    served = await serveDist({ appDir: root });
  });
  after(async () => {
    await served?.close();
    if (served) fs.rmSync(served.appDir, { recursive: true, force: true });
  });

  test('--app picks the app whose runtime record is under the runtime\'s data folder', () => {
    const dump = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-data-dump-'));
    try {
      writeDumpCollection(dump, { database: 'shop', collection: 'items', docs: [{ _id: 1 }, { _id: 2 }] });
      const ambiguous = asl(['data', 'import', dump, '--data', served.dataDir]);
      assert.equal(ambiguous.status, 2);
      assert.match(ambiguous.stderr, /holds the data of several apps; pick one with --app/);
      const imported = asl(['data', 'import', dump, '--data', served.dataDir, '--app', 'two-app-bbbbb']);
      assert.equal(imported.status, 0, imported.stderr);
      assert.match(imported.stdout, /through the runtime at/);
      const count = (app: string) => {
        const run = asl(['data', 'export', path.join(dump, `out-${app}`), '--data', served.dataDir, '--app', app, '--db', 'shop', '--json']);
        assert.equal(run.status, 0, run.stderr);
        return (JSON.parse(run.stdout) as { documents: number }).documents;
      };
      assert.equal(count('two-app-bbbbb'), 2);
      assert.equal(count('one-app-aaaaa'), 0);
    } finally {
      fs.rmSync(dump, { recursive: true, force: true });
    }
  });
});
