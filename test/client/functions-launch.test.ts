// The `app-services` launch configuration and the re-attach rule, without the editor: what launch.json may
// say (and what it is refused for), what it resolves to, and what the extension does when the functions
// debug session ends (the developer stopped it, or the runtime / the function process started again), with
// the inspector probe against real sockets on 127.0.0.1.
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { checkLaunchConfiguration, defaultLaunchConfiguration, functionsDebugConfiguration } from '../../client/functionsDebugConfig';
import { afterFunctionsSessionEnded, inspectorReachable } from '../../client/functionsReattach';
import { serveArguments } from '../../client/runtimeProcess';

const folder = path.resolve('/work/apps');
const INSPECTOR = 'ws://127.0.0.1:9229/0f9c7a52-1f2e-4a8b-9c3d-5e6f7a8b9c0d';
const NEXT = 'ws://127.0.0.1:9229/1a2b3c4d-1f2e-4a8b-9c3d-5e6f7a8b9c0d';

describe('the app-services launch configuration', () => {
  test('names the app folder absolutely, relatively to the workspace folder or with ${workspaceFolder}; none means the running or only app', () => {
    assert.deepEqual(checkLaunchConfiguration({ ...defaultLaunchConfiguration() }, folder), { name: 'Debug App Services Functions' });
    assert.deepEqual(checkLaunchConfiguration({ type: 'app-services', request: 'launch', name: 'Mine', app: 'todo' }, folder), { name: 'Mine', appDir: path.join(folder, 'todo') });
    assert.deepEqual(checkLaunchConfiguration({ type: 'app-services', name: 'x', app: '${workspaceFolder}/apps/../todo/' }, folder), { name: 'x', appDir: path.join(folder, 'todo') });
    assert.deepEqual(checkLaunchConfiguration({ type: 'app-services', name: 'x', app: path.resolve('/elsewhere/app') }, folder), { name: 'x', appDir: path.resolve('/elsewhere/app') });
    // No name: the default one (VS Code asks for one, but a hand-written file may lack it).
    assert.deepEqual(checkLaunchConfiguration({ type: 'app-services' }, folder), { name: 'Debug App Services Functions' });
  });

  test('refuses what it cannot honour, by name', () => {
    const refused = (config: Record<string, unknown>, f: string | null = folder) => {
      const checked = checkLaunchConfiguration(config, f ?? undefined);
      assert.ok('error' in checked, JSON.stringify(checked));
      return checked.error;
    };
    assert.match(refused({ type: 'app-services', request: 'attach', name: 'a' }), /"request" must be "launch"/);
    for (const app of [42, '', '   ', 'a\0b', ['todo'], null]) assert.match(refused({ type: 'app-services', name: 'a', app }), /"app" must be the path of an app folder/);
    assert.match(refused({ type: 'app-services', name: 'a', app: '${env:HOME}/todo' }), /may use \$\{workspaceFolder\} only/);
    assert.match(refused({ type: 'app-services', name: 'a', app: 'todo' }, null), /relative .* no workspace folder/);
    assert.match(refused({ type: 'app-services', name: 'a', app: '${workspaceFolder}/todo' }, null), /no workspace folder/);
  });

  test('resolves to a Node attach on the announced inspector, under its own name', () => {
    const config = functionsDebugConfiguration(INSPECTOR, '/apps/todo', 'Debug App Services Functions');
    assert.deepEqual({ type: config.type, request: config.request, name: config.name, websocketAddress: config.websocketAddress, cwd: config.cwd },
      { type: 'node', request: 'attach', name: 'Debug App Services Functions', websocketAddress: INSPECTOR, cwd: '/apps/todo' });
  });

  test('the runtime is asked for the function process\'s Node only while debugging', () => {
    const base = { cliPath: 'cli.js', appDir: '/a', port: 0, execPath: 'node', functionsNode: '/opt/node24/bin/node' };
    assert.deepEqual(serveArguments({ ...base, inspectFunctions: true }).slice(-3), ['--inspect-functions', '--functions-node', '/opt/node24/bin/node']);
    assert.equal(serveArguments(base).includes('--functions-node'), false);
  });
});

describe('when the functions debug session ends', () => {
  test('the developer stopped it (the same inspector still listens): debugging ends', () => {
    assert.equal(afterFunctionsSessionEnded({ endedUrl: INSPECTOR, currentUrl: INSPECTOR, runtime: 'running', inspectorReachable: true }), 'end');
  });

  test('the function process started again (a new address): attach again; gone and not back yet: wait for it', () => {
    assert.equal(afterFunctionsSessionEnded({ endedUrl: INSPECTOR, currentUrl: NEXT, runtime: 'running', inspectorReachable: true }), 'reattach');
    assert.equal(afterFunctionsSessionEnded({ endedUrl: INSPECTOR, currentUrl: INSPECTOR, runtime: 'running', inspectorReachable: false }), 'wait');
  });

  test('the runtime restarts, stopped or crashed: wait for its next inspector; it failed to start: debugging ends', () => {
    for (const runtime of ['starting', 'stopped', 'crashed'] as const) {
      assert.equal(afterFunctionsSessionEnded({ endedUrl: INSPECTOR, currentUrl: undefined, runtime, inspectorReachable: false }), 'wait', runtime);
    }
    // Mid-restart the runtime still says running, with no target yet, and the old inspector is gone.
    assert.equal(afterFunctionsSessionEnded({ endedUrl: INSPECTOR, currentUrl: undefined, runtime: 'running', inspectorReachable: false }), 'wait');
    assert.equal(afterFunctionsSessionEnded({ endedUrl: INSPECTOR, currentUrl: undefined, runtime: 'failed', inspectorReachable: false }), 'end');
  });

  test('the inspector probe: a listening port is reachable, a closed one is not', async () => {
    const server = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    const url = `ws://127.0.0.1:${port}/0f9c7a52-1f2e-4a8b-9c3d-5e6f7a8b9c0d`;
    assert.equal(await inspectorReachable(url), true);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    assert.equal(await inspectorReachable(url), false);
    assert.equal(await inspectorReachable(undefined), false);
  });
});
