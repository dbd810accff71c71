// The runtime the editor starts: the bundled CLI as a child process with an IPC channel, the typed handshake
// (ready / failed / log / reloaded), stopping on request, and a kill from outside reported as a crash.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { isRuntimeMessage } from '../../core/runtime-protocol';
import { RuntimeProcess, RuntimeStartError } from '../../client/runtimeProcess';
import { baseApp } from '../helpers/app';
import { DIST, REPO_ROOT, writeApp } from '../helpers/disk';

const example = path.join(REPO_ROOT, 'examples', 'todo-tracker');

function launchFor(appDir: string) {
  return {
    cliPath: path.join(DIST, 'cli.js'), appDir, port: 0, execPath: process.execPath,
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'asl-ipc-data-')), startTimeoutMs: 30_000,
  };
}

function waitFor<T>(what: string, register: (resolve: (value: T) => void) => void, ms = 15_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
    register((value) => { clearTimeout(timer); resolve(value); });
  });
}

describe('runtime child process and handshake', () => {
  test('the handshake names the URL, the port and the app; the runtime answers there and stops when asked', async () => {
    const { process: runtime, ready } = RuntimeProcess.start(launchFor(example));
    const info = await ready;
    try {
      assert.match(info.url, /^http:\/\/(localhost|127\.0\.0\.1):\d+$/);
      assert.ok(info.port > 0);
      assert.equal(info.apps.length, 1);
      assert.equal(info.apps[0]!.appId, 'todo-tracker-abcde');
      assert.equal(info.apps[0]!.appDir, example);
      assert.equal(info.errors, 0);
      const location = await fetch(`${info.url}/api/client/v2.0/app/${info.apps[0]!.appId}/location`);
      assert.equal(location.status, 200);
    } finally {
      await runtime.stop();
    }
  });

  test('an app with errors fails the start with its problems (file, position, code)', async () => {
    const files = baseApp();
    (files['graphql/custom_resolvers/mutation_renameTask.json'] as Record<string, unknown>).function_name = 'nope';
    const root = writeApp(files);
    const { ready } = RuntimeProcess.start(launchFor(root));
    const error = await ready.then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof RuntimeStartError, String(error));
    assert.equal(error.reason, 'app-errors');
    assert.match(error.message, /1 error/);
    assert.equal(error.problems.length, 1);
    assert.equal(error.problems[0]!.code, 'resolver/unknown-function');
    assert.equal(error.problems[0]!.file, path.join(fs.realpathSync(root), 'graphql/custom_resolvers/mutation_renameTask.json'));
  });

  test('a folder without an app fails with a message, not a hang', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-empty-'));
    const { ready } = RuntimeProcess.start(launchFor(empty));
    const error = await ready.then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof RuntimeStartError);
    assert.match(error.message, /no app found/);
    assert.doesNotMatch(error.message, /undefined/);
  });

  test('a kill from outside is reported as a crash', async () => {
    let crashed: ((v: { description: string; lines: string[] }) => void) | undefined;
    const crash = waitFor<{ description: string; lines: string[] }>('the crash report', (resolve) => { crashed = resolve; });
    const { process: runtime, ready } = RuntimeProcess.start(launchFor(example), { onCrash: (description, lines) => crashed?.({ description, lines }) });
    await ready;
    process.kill(runtime.pid!, 'SIGKILL');
    const report = await crash;
    assert.match(report.description, /ended unexpectedly \(killed by SIGKILL\)/);
  });

  test('a change to the app files is reported as a reload', async () => {
    const root = writeApp(baseApp());
    let reloaded: ((v: { applied: boolean; errors: number }) => void) | undefined;
    const reload = waitFor<{ applied: boolean; errors: number }>('the reload message', (resolve) => { reloaded = resolve; });
    const { process: runtime, ready } = RuntimeProcess.start(launchFor(root), { onReloaded: (applied, errors) => reloaded?.({ applied, errors }) });
    await ready;
    try {
      fs.writeFileSync(path.join(root, 'values/appName.json'), JSON.stringify({ name: 'appName', from_secret: false, value: 'Renamed' }));
      assert.deepEqual(await reload, { applied: true, errors: 0 });
    } finally {
      await runtime.stop();
    }
  });

  test('messages are checked before they are trusted', () => {
    assert.equal(isRuntimeMessage({ type: 'ready', version: 1, url: 'http://x', port: 1, apps: [{ appId: 1 }], errors: 0, warnings: 0 }), false);
    assert.equal(isRuntimeMessage({ type: 'log', level: 'loud', message: 'x' }), false);
    assert.equal(isRuntimeMessage({ type: 'log', level: 'warn', message: 'x' }), true);
    assert.equal(isRuntimeMessage(null), false);
  });
});
