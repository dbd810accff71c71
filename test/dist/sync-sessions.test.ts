// `asl sync sessions` beside `node dist/cli.js serve`, with realm-core's own sync client (realm-sync-probe)
// holding a session open: the list names the user, partition, protocol and state; `--json` gives one object
// per line; `--follow` prints the traffic as it arrives (the BIND's verdict with its trace, the UPLOAD with its
// changeset's instructions) until SIGINT; with no runtime on the data folder, a clear error.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeAvailable, registerUser, startProbe } from '../helpers/realm-probe';
import { CLI, copyApp, serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

const TASK_SCHEMA = [{
  name: 'Task', primaryKey: '_id',
  properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool', priority: 'int?', tags: 'string[]' },
}];
const TASK_ID = '65a0000000000000000000c1';

describe('asl sync sessions beside dist/cli.js serve', { skip, timeout: 120_000 }, () => {
  let served: ServedDist;
  let adaId: string;
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };

  before(async () => {
    served = await serveDist();
    adaId = await registerUser(served.app, ada.email, ada.password);
  });
  after(async () => {
    await served?.close();
  });

  const sessionsCommand = (...flags: string[]) => spawnSync(process.execPath, [CLI, 'sync', 'sessions', served.appDir, '--data', served.dataDir, ...flags], { encoding: 'utf8', timeout: 20000 });

  test('lists the live session, follows its traffic (verdict trace, UPLOAD instructions) until SIGINT', async () => {
    const follow = spawn(process.execPath, [CLI, 'sync', 'sessions', served.appDir, '--data', served.dataDir, '--follow'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let followed = '';
    let followErr = '';
    follow.stdout.on('data', (d: Buffer) => { followed += d.toString('utf8'); });
    follow.stderr.on('data', (d: Buffer) => { followErr += d.toString('utf8'); });
    const followExit = new Promise<number | null>((resolve) => follow.on('exit', (code) => resolve(code)));

    const probe = startProbe({
      baseUrl: served.url, appId: served.appId, schema: TASK_SCHEMA, timeoutMs: 20000, credentials: ada, partition: adaId,
      steps: [
        { waitDownload: true },
        { write: { op: 'create', type: 'Task', value: { _id: { $oid: TASK_ID }, _partition: adaId, name: 'seen in the traffic', status: 'open', isComplete: false, tags: ['x'] } } },
        { waitUpload: true },
        { watchMs: 8000 },
      ],
    });
    try {
      await probe.waitFor((l) => l.event === 'watch' && l.phase === 'begin');

      const listed = sessionsCommand();
      assert.equal(listed.status, 0, listed.stderr);
      assert.match(listed.stdout, /^1 live sync session\(s\)/);
      assert.ok(listed.stdout.includes(`user ${adaId} · partition ${JSON.stringify(adaId)} · protocol 14 · identified`), listed.stdout);
      assert.match(listed.stdout, /client file \d+, downloaded server version \d+, uploaded client version [1-9]/);

      const asJson = sessionsCommand('--json');
      assert.equal(asJson.status, 0, asJson.stderr);
      const objects = asJson.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.equal(objects.length, 1);
      assert.equal(objects[0]!.kind, 'session');
      assert.equal(objects[0]!.userId, adaId);
      assert.equal(objects[0]!.partition, JSON.stringify(adaId));
      assert.equal(objects[0]!.state, 'identified');

      const deadline = Date.now() + 15000;
      while (!followed.includes(`CreateObject Task oid(${TASK_ID})`) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      const key = `[${String(objects[0]!.connection)}/${String(objects[0]!.session)}]`;
      assert.ok(followed.includes(`${key} session: user ${adaId}`), followed);
      assert.match(followed, new RegExp(`client BIND session=1 path=${JSON.stringify(adaId)} needClientFileIdent=true`));
      assert.match(followed, /client PERMISSIONS read=true write=true/);
      assert.ok(followed.includes(`${key}     write ALLOWED:`), followed);
      assert.match(followed, /✓ .*%%user\.id/, 'the verdict trace is shown');
      assert.match(followed, /client UPLOAD progressClientVersion=\d+ progressServerVersion=\d+ changesets=[1-9]/);
      assert.ok(followed.includes(`${key}         CreateObject Task oid(${TASK_ID})`), followed);
      assert.ok(followed.includes(`${key}         Update Task oid(${TASK_ID}) .name = "seen in the traffic"`), followed);
      assert.match(followed, /server DOWNLOAD /);
    } finally {
      follow.kill('SIGINT');
      probe.kill();
    }
    assert.equal(await followExit, 0, followErr);
  });

  test('with no runtime on the data folder, a clear error', () => {
    const appDir = copyApp();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-no-runtime-'));
    try {
      for (const flags of [[], ['--follow']]) {
        const result = spawnSync(process.execPath, [CLI, 'sync', 'sessions', appDir, '--data', dataDir, ...flags], { encoding: 'utf8', timeout: 20000 });
        assert.equal(result.status, 1);
        assert.equal(result.stdout, '');
        assert.ok(result.stderr.includes(`asl sync sessions: no runtime is running on ${dataDir}`), result.stderr);
      }
    } finally {
      fs.rmSync(appDir, { recursive: true, force: true });
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
