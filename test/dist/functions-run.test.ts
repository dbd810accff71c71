// `asl functions run NAME` (dist/cli.js): a function tried without a client, its result printed, or its
// error with the function's own stack (its file, line and column); as the system user or as a given user;
// against the runtime that holds the data folder when one runs, else in the command's own process. The
// client API keeps answering with the message alone: the stack is the developer's.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI, copyApp, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

/** Throws on line 5 (1-based), column 20, for an argument over 1. */
const BOOM = `// test/dist/functions-run.test.ts
exports = function (x) {
  console.log('boom called with', x);
  const who = context.user.type === 'system' ? 'system' : context.user.data.email;
  if (x > 1) throw new Error('too big: ' + x);
  return { ok: x, who, typed: x instanceof BSON.Long ? 'long' : typeof x };
};
`;

function runCli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

describe('asl functions run', () => {
  let appDir: string;
  let dataDir: string;
  let boomFile: string;

  before(() => {
    appDir = copyApp();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-fnrun-data-'));
    const manifest = path.join(appDir, 'functions', 'config.json');
    const entries = JSON.parse(fs.readFileSync(manifest, 'utf8')) as unknown[];
    entries.push({ name: 'boom', private: false });
    fs.writeFileSync(manifest, JSON.stringify(entries, null, 2));
    boomFile = path.join(appDir, 'functions', 'boom.js');
    fs.writeFileSync(boomFile, BOOM);
  });
  after(() => {
    fs.rmSync(appDir, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  describe('beside a running runtime', () => {
    let served: ServedDist;
    before(async () => {
      served = await serveDist({ appDir, dataDir });
      await registerAndLogIn(served.app, 'ada@example.com', 'password-ada');
    });
    after(async () => { await served?.close(); });

    test('prints the result, as the system user by default', async () => {
      const run = await runCli(['functions', 'run', 'boom', appDir, '--data', dataDir, '--args', '[1]']);
      assert.equal(run.code, 0, run.err);
      assert.deepEqual(JSON.parse(run.out), { ok: 1, who: 'system', typed: 'number' });
      // It ran in the runtime: its log has the function's line.
      await served.waitForLog(/\[function boom\] boom called with 1/);
    });

    test('as a user, by email; EJSON arguments keep their types', async () => {
      const run = await runCli(['functions', 'run', 'boom', appDir, '--data', dataDir, '--as', 'ada@example.com', '--args', '[{"$numberLong":"1"}]']);
      assert.equal(run.code, 0, run.err);
      assert.deepEqual(JSON.parse(run.out), { ok: 1, who: 'ada@example.com', typed: 'long' });
    });

    test("an error prints with the function's own file, line and column; the client API answers with the message alone", async () => {
      const run = await runCli(['functions', 'run', 'boom', appDir, '--data', dataDir, '--args', '[7]']);
      assert.equal(run.code, 1);
      assert.match(run.err, /boom failed \(FunctionExecutionError\): too big: 7\n/);
      assert.ok(run.err.includes(`at exports (${boomFile}:5:20)`), run.err);
      assert.doesNotMatch(run.err, /function-worker\.js|node:internal/);
      const { access_token } = await registerAndLogIn(served.app, 'bob@example.com', 'password-bob');
      const res = await fetch(`${served.app}/functions/call`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${access_token}` }, body: JSON.stringify({ name: 'boom', arguments: [7] }),
      });
      const text = await res.text();
      assert.equal(res.status, 400, text);
      assert.match(text, /too big: 7/);
      assert.equal(text.includes('boom.js'), false, text);
    });

    test('an unknown user or function, and bad arguments, are clear errors', async () => {
      const nobody = await runCli(['functions', 'run', 'boom', appDir, '--data', dataDir, '--as', 'nobody@example.com']);
      assert.equal(nobody.code, 1);
      assert.match(nobody.err, /no user with id or email "nobody@example.com"/);
      const missing = await runCli(['functions', 'run', 'nope', appDir, '--data', dataDir]);
      assert.equal(missing.code, 1);
      assert.match(missing.err, /function not found: 'nope'/);
      const notArray = await runCli(['functions', 'run', 'boom', appDir, '--data', dataDir, '--args', '{"x": 1}']);
      assert.equal(notArray.code, 2);
      assert.match(notArray.err, /--args must be an EJSON array/);
      const both = await runCli(['functions', 'run', 'boom', appDir, '--as', 'a@b.c', '--system']);
      assert.equal(both.code, 2);
    });
  });

  test('without a running runtime: starts one in its own process for the call, the function log on stderr', async () => {
    const ok = await runCli(['functions', 'run', 'boom', appDir, '--data', dataDir, '--as', 'ada@example.com', '--args', '[1]']);
    assert.equal(ok.code, 0, ok.err);
    assert.deepEqual(JSON.parse(ok.out), { ok: 1, who: 'ada@example.com', typed: 'number' });
    assert.match(ok.err, /\[function boom\] boom called with 1/);
    const failed = await runCli(['functions', 'run', 'boom', appDir, '--data', dataDir, '--args', '[3]']);
    assert.equal(failed.code, 1);
    assert.ok(failed.err.includes(`at exports (${boomFile}:5:20)`), failed.err);
  });
});
