// `asl serve` with its data folder on a disk that fills up (issue 34): HTTP writes are refused with a clear
// error (not a 500) and sync uploads get a protocol error the client retries; acknowledged data stays
// readable; once space is freed the same runtime takes writes again and the client's pending upload
// arrives; a restart reads the files. The disk is a size-limited tmpfs (root, as in CI; skipped otherwise).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { probeAvailable, registerUser, runProbe } from '../helpers/realm-probe';
import { copyApp, graphql, serveDist, type ServedDist } from './fixtures/serve';

const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-full-disk-'));
const mounted = process.getuid?.() === 0 && spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mount]).status === 0;
const skip = !mounted ? 'mounting a size-limited tmpfs needs root' : probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

const SCHEMA = [{ name: 'Task', primaryKey: '_id', properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool' } }];
const task = (partition: string, name: string) => ({ op: 'create', type: 'Task', value: { _id: { $oid: new ObjectId().toHexString() }, _partition: partition, name, status: 'open', isComplete: false } });

/** Fills what is left of the disk; returns the file to remove to free it again. */
function fillDisk(): string {
  const file = path.join(mount, 'filler');
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    fs.closeSync(fd);
  }
  return file;
}

describe('asl serve on a full disk', { skip, timeout: 180_000 }, () => {
  const dataDir = path.join(mount, 'data');
  const device = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-full-disk-device-'));
  const appDir = copyApp();
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  let served: ServedDist;
  let adaId: string;
  let token: string;
  const script = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, credentials: ada, partition: adaId, schema: SCHEMA, timeoutMs: 10_000, ...extra });
  const names = async () => {
    const read = await graphql(`${served.app}/graphql`, token, '{ tasks { name } }');
    assert.equal(read.status, 200, JSON.stringify(read.body));
    return (read.body.data.tasks as { name: string }[]).map((t) => t.name).sort();
  };
  const insert = (name: string) => graphql(`${served.app}/graphql`, token, `mutation { insertOneTask(data: { _id: "${new ObjectId().toHexString()}", _partition: "${adaId}", name: "${name}", status: "open", isComplete: false }) { name } }`);

  before(async () => {
    served = await serveDist({ appDir, args: ['--data', dataDir] });
    adaId = await registerUser(served.app, ada.email, ada.password);
    const login = await (await fetch(`${served.app}/auth/providers/local-userpass/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: ada.email, password: ada.password }) })).json() as { access_token: string };
    token = login.access_token;
  });
  after(async () => {
    await served?.close();
    spawnSync('umount', [mount]);
    fs.rmSync(mount, { recursive: true, force: true });
    fs.rmSync(device, { recursive: true, force: true });
  });

  test('writes are refused while the disk is full, acknowledged data stays, writes and the pending upload go through once space is freed', async () => {
    const synced = await runProbe(script({ dataDir: device, writes: [task(adaId, 'synced before')] }));
    assert.equal(synced.result.exitCode, 0, JSON.stringify(synced.result));
    assert.equal((await insert('written before')).status, 200);

    const filler = fillDisk();
    // What is left of the journal file's last page may still take a few small records.
    const acknowledged: string[] = [];
    let refused: Awaited<ReturnType<typeof insert>> | undefined;
    for (let n = 0; n < 200 && !refused; n++) {
      const answer = await insert(`while full ${n}`);
      if (answer.status === 200 && !answer.body.errors) acknowledged.push(`while full ${n}`);
      else refused = answer;
    }
    assert.ok(refused, 'writes are refused once the disk is full');
    assert.notEqual(refused.status, 500, 'a full disk is not an internal error');
    assert.match(JSON.stringify(refused.body), /disk is full/, `the error says why: ${JSON.stringify(refused.body)}`);
    const upload = await runProbe(script({ dataDir: device, writes: [task(adaId, 'uploaded while full')], timeoutMs: 5000 }), ['--reconnect', 'testing']);
    const errors = upload.lines.filter((l) => l.event === 'protocol_error' || l.event === 'sync_error');
    assert.ok(errors.some((e) => /disk is full/.test(JSON.stringify(e))), `the upload got a protocol error saying why: ${JSON.stringify(errors)}`);
    assert.ok(errors.every((e) => !/reset/i.test(String(e.action ?? ''))), 'not a client reset');
    assert.deepEqual(await names(), ['synced before', 'written before', ...acknowledged].sort(), 'acknowledged data stays readable, refused writes are not there');

    fs.rmSync(filler);
    assert.equal((await insert('written after')).status, 200, 'the same runtime takes writes again');
    const resumed = await runProbe(script({ dataDir: device }));
    assert.equal(resumed.result.exitCode, 0, JSON.stringify(resumed.result));
    assert.equal(resumed.result.clientReset, false);
    const all = ['synced before', 'uploaded while full', 'written after', 'written before', ...acknowledged].sort();
    assert.deepEqual(await names(), all, 'the upload refused while full arrived once space was freed');

    await served.close();
    served = await serveDist({ appDir, args: ['--data', dataDir] });
    const fresh = await runProbe(script({}));
    assert.deepEqual(fresh.objects('Task').map((t) => t.name).sort(), all, 'a restart reads the files');
  });
});
