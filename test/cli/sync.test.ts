// `asl sync` as a user runs it: the bundled CLI in a child process, on a copy of the example app.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EJSON } from 'bson';
import { startRuntime } from '../../runtime';
import { DIST, REPO_ROOT } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

function asl(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [path.join(DIST, 'cli.js'), ...args], { cwd, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('asl sync on the example app', () => {
  let appDir: string;
  let adaId: string;

  before(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-sync-cli-'));
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    const runtime = await startRuntime({ appDir, port: 0, log: quiet });
    const app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.ok((await post(`${app}/auth/providers/local-userpass/register`, { email: 'ada@example.com', password: 'correct horse' })).ok);
    const login = await (await post(`${app}/auth/providers/local-userpass/login`, { username: 'ada@example.com', password: 'correct horse' })).json() as { user_id: string };
    adaId = login.user_id;
    const tasks = runtime.sync.service.store.collection('tracker', 'Task');
    for (let i = 0; i < 7; i++) await tasks.insertOne({ name: `task ${i}`, _partition: adaId, status: 'open', isComplete: false });
    await tasks.insertOne({ name: 'shared', status: 'open', isComplete: false });
    await tasks.insertOne({ name: 'mistyped', _partition: 12, status: 'open', isComplete: false });
    await runtime.close();
  });
  after(() => fs.rmSync(appDir, { recursive: true, force: true }));

  test('simulate prints the verdicts with their trace, the documents, the ignored ones and the client error', () => {
    const r = asl(['sync', 'simulate', appDir, '--user', 'ada@example.com', '--partition', JSON.stringify(adaId)], os.tmpdir());
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^write: ALLOWED$/m);
    assert.match(r.stdout, new RegExp(`✓ "%%user\\.id": "%%partition"   \\[subject "${adaId}", operand "${adaId}"\\]`));
    assert.match(r.stdout, /^read: ALLOWED/m);
    assert.match(r.stdout, /^client error: none/m);
    assert.match(r.stdout, /^ {2}Task \(tracker\.Task\): 7$/m);
    assert.match(r.stdout, /… and 2 more/);
    assert.match(r.stdout, /1 × the partition key "_partition" is long, not string/);
  });

  test('simulate --json: the null partition holds the document without a key; a wrong type is the exact client error', () => {
    const nullPartition = asl(['sync', 'simulate', appDir, '--user', adaId, '--partition', 'null', '--json'], os.tmpdir());
    const report = EJSON.parse(nullPartition.stdout) as { error?: unknown; permissions: { read: boolean }; collections: { type: string; count: number }[] };
    // Nobody may read the null partition under the example's rules.
    assert.equal(nullPartition.code, 1);
    assert.equal(report.permissions.read, false);
    const wrong = asl(['sync', 'simulate', appDir, '--user', adaId, '--partition', '{"$numberLong":"5"}'], os.tmpdir());
    assert.equal(wrong.code, 1);
    assert.match(wrong.stdout, /client error: 204 ErrorIllegalDatabasePath: attempted to bind on illegal realm partition: expected partition to have type string but found long/);
  });

  test('status, pause, resume and terminate drive the state machine through sync/config.json', () => {
    let r = asl(['sync', 'status', appDir, '--json'], os.tmpdir());
    assert.equal(JSON.parse(r.stdout).status, 'enabled');
    r = asl(['sync', 'resume', appDir], os.tmpdir());
    assert.equal(r.code, 1);
    assert.match(r.stderr, /not paused/);
    r = asl(['sync', 'pause', appDir], os.tmpdir());
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /sync paused: connected sessions end with error 213/);
    const paused = JSON.parse(fs.readFileSync(path.join(appDir, 'sync/config.json'), 'utf8'));
    assert.equal(paused.state, 'disabled');
    assert.equal(typeof paused.last_disabled, 'number');
    r = asl(['sync', 'resume', appDir], os.tmpdir());
    assert.match(r.stdout, /sync resumed: clients reconnect normally, without a client reset/);
    // A terminate without a terminal to ask on needs --yes, and says what clients will do.
    r = asl(['sync', 'terminate', appDir], os.tmpdir());
    assert.equal(r.code, 2);
    assert.match(r.stderr, /client-reset[\s\S]*Pass --yes to confirm/);
    r = asl(['sync', 'terminate', appDir, '--yes', '--json'], os.tmpdir());
    assert.equal(r.code, 0, r.stderr);
    const terminated = JSON.parse(r.stdout);
    assert.deepEqual([terminated.transition, terminated.status, terminated.epoch], ['terminated', 'terminated', 2]);
    assert.equal(JSON.parse(fs.readFileSync(path.join(appDir, 'sync/config.json'), 'utf8')).state, '');
    r = asl(['sync', 'enable', appDir], os.tmpdir());
    assert.match(r.stdout, /sync re-enabled/);
  });

  test('while enabled, asl check reports a changed key at its value, saying to terminate first', () => {
    const file = path.join(appDir, 'sync/config.json');
    const original = fs.readFileSync(file, 'utf8');
    try {
      fs.writeFileSync(file, original.replace('"key": "_partition"', '"key": "owner_id"'));
      const r = asl(['check', appDir], os.tmpdir());
      assert.equal(r.code, 1);
      assert.match(r.stdout, /sync\/config\.json:8:12 {2}error {2}sync\/frozen-while-enabled {2}sync is enabled, so the partition key and the permissions cannot change \(changed: partition\.key\); terminate sync first/m);
      const status = asl(['sync', 'status', appDir], os.tmpdir());
      assert.match(status.stdout, /refused: sync is enabled, so the partition key and the permissions cannot change/);
    } finally {
      fs.writeFileSync(file, original);
    }
  });

  test('beside a running "asl serve" on the same data folder, simulate and status give the answers they give when it is stopped', async () => {
    const simulateArgs = (json: boolean) => ['sync', 'simulate', appDir, '--user', 'ada@example.com', '--partition', JSON.stringify(adaId), ...(json ? ['--json'] : [])];
    const stopped = { text: asl(simulateArgs(false), os.tmpdir()), json: asl(simulateArgs(true), os.tmpdir()), status: asl(['sync', 'status', appDir, '--json'], os.tmpdir()) };
    const wrongStopped = asl(['sync', 'simulate', appDir, '--user', adaId, '--partition', '{"$numberLong":"5"}'], os.tmpdir());
    assert.equal(stopped.text.code, 0, stopped.text.stderr);
    const record = path.join(appDir, '.asl', 'runtime.json');
    const child = spawn(process.execPath, [path.join(DIST, 'cli.js'), 'serve', appDir, '--port', '0', '--no-watch'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('serve did not start')), 20_000);
        child.stdout.on('data', (d: Buffer) => { if (/admin public key/.test(String(d))) { clearTimeout(timer); resolve(); } });
      });
      assert.equal(fs.statSync(record).mode & 0o777, 0o600, 'the record holds a session: owner only');
      const whileRunning = { text: asl(simulateArgs(false), os.tmpdir()), json: asl(simulateArgs(true), os.tmpdir()), status: asl(['sync', 'status', appDir, '--json'], os.tmpdir()) };
      assert.equal(whileRunning.text.code, 0, whileRunning.text.stderr);
      assert.equal(whileRunning.text.stdout, stopped.text.stdout);
      assert.equal(whileRunning.json.stdout, stopped.json.stdout);
      const wrongRunning = asl(['sync', 'simulate', appDir, '--user', adaId, '--partition', '{"$numberLong":"5"}'], os.tmpdir());
      assert.equal(wrongRunning.code, wrongStopped.code);
      assert.equal(wrongRunning.stdout, wrongStopped.stdout);
      // The status asked of the runtime is the folder's, plus its live session counts.
      const { liveSessions, ...live } = JSON.parse(whileRunning.status.stdout);
      assert.deepEqual(liveSessions, { realm: 0, feed: 0 });
      assert.deepEqual(live, JSON.parse(stopped.status.stdout));
      assert.match(asl(['sync', 'status', appDir], os.tmpdir()).stdout, /^live sync sessions: 0 Realm client\(s\), 0 partition feed\(s\) \(asked the running runtime\)$/m);
      // An expired access token is refreshed with the record's refresh token.
      const saved = JSON.parse(fs.readFileSync(record, 'utf8'));
      fs.writeFileSync(record, JSON.stringify({ ...saved, admin: { ...saved.admin, accessToken: 'expired' } }), { mode: 0o600 });
      assert.equal(asl(simulateArgs(false), os.tmpdir()).stdout, stopped.text.stdout);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    assert.ok(!fs.existsSync(record), 'the runtime removes its record when it stops');
  });

  test('a record left by a runtime that no longer runs is ignored', () => {
    const record = path.join(appDir, '.asl', 'runtime.json');
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    fs.writeFileSync(record, JSON.stringify({ version: 1, pid: Number(gone.stdout), url: 'http://127.0.0.1:9', appId: 'x', admin: { accessToken: 'a', refreshToken: 'r' } }), { mode: 0o600 });
    try {
      const r = asl(['sync', 'simulate', appDir, '--user', 'ada@example.com', '--partition', JSON.stringify(adaId)], os.tmpdir());
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^write: ALLOWED/m);
    } finally {
      fs.rmSync(record, { force: true });
    }
  });
});
