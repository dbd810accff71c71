// Admin API drafts and deployments survive a restart of the runtime: a draft with an import staged in it,
// started before a stop, is listed, diffed and deployed after the next start on the same data folder, and the
// deployment history is still there.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { unzipSync } from 'fflate';
import { filesToAppJson, isTransferredPath } from '../../core/transfer/appJson';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { REPO_ROOT } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('Admin API drafts and deployments across a restart', () => {
  let appDir: string;
  let dataDir: string;
  let runtime: RunningRuntime | undefined;

  before(() => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-drafts-app-'));
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-drafts-data-'));
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  });
  after(async () => {
    await runtime?.close();
    fs.rmSync(appDir, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function start() {
    runtime = await startRuntime({ appDir, dataDir, port: 0, watch: false, log: quiet });
    const session = await runtime.mintAdminSession();
    const appPath = `${runtime.adminUrl}/groups/${runtime.groupId}/apps/${runtime.apps[0]!.id}`;
    const call = async (method: string, rel: string, body?: unknown) => {
      const response = await fetch(`${appPath}${rel}`, {
        method,
        headers: { Authorization: `Bearer ${session.access_token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const bytes = new Uint8Array(await response.arrayBuffer());
      const isJson = response.headers.get('content-type')?.startsWith('application/json');
      return { status: response.status, body: isJson ? JSON.parse(Buffer.from(bytes).toString('utf8')) : undefined, bytes };
    };
    return call;
  }

  test('a draft with a staged import and the deployment history are there after the restart; the draft then deploys', async () => {
    let call = await start();
    const emptyDraft = await call('POST', '/drafts');
    assert.equal(emptyDraft.status, 201);
    const first = await call('POST', `/drafts/${emptyDraft.body._id}/deployment`);
    assert.equal(first.status, 201);
    assert.equal((await call('GET', `/deployments/${first.body._id}`)).body.status, 'successful');

    const exported = unzipSync((await call('GET', '/export')).bytes);
    const files = new Map(Object.entries(exported).filter(([p]) => isTransferredPath(p)).map(([p, data]) => [p, Buffer.from(data).toString('utf8')]));
    files.set('functions/sum.js', 'exports = function (a, b) {\n  return a + b + 7;\n};\n');
    const draft = await call('POST', '/drafts');
    assert.equal(draft.status, 201);
    assert.equal((await call('POST', '/import?strategy=replace-by-name', filesToAppJson(files))).status, 204);
    assert.equal((await call('GET', `/drafts/${draft.body._id}/diff`)).body.diffs.length, 1);
    assert.equal(fs.statSync(path.join(dataDir, 'admin-work.json')).mode & 0o777, 0o600);

    await runtime!.close();
    runtime = undefined;
    call = await start();

    const drafts = await call('GET', '/drafts');
    assert.deepEqual(drafts.body.map((d: { _id: string }) => d._id), [draft.body._id]);
    const diff = await call('GET', `/drafts/${draft.body._id}/diff`);
    assert.equal(diff.body.diffs.length, 1);
    assert.match(diff.body.diffs[0], /\+ {2}return a \+ b \+ 7;/);
    const history = await call('GET', '/deployments');
    assert.deepEqual(history.body.map((d: { _id: string; status: string }) => [d._id, d.status]), [[first.body._id, 'successful']]);

    const second = await call('POST', `/drafts/${draft.body._id}/deployment`);
    assert.equal((await call('GET', `/deployments/${second.body._id}`)).body.status, 'successful');
    assert.match(fs.readFileSync(path.join(appDir, 'functions/sum.js'), 'utf8'), /a \+ b \+ 7/);
    assert.deepEqual((await call('GET', '/drafts')).body, []);
    assert.deepEqual((await call('GET', '/deployments')).body.map((d: { _id: string }) => d._id), [second.body._id, first.body._id]);
  });
});
