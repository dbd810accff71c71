// "App Services: Debug Functions" without the editor: the runtime the extension starts (RuntimeProcess) with
// `inspectFunctions` announces its function inspector in the handshake; the debug configuration the
// extension starts attaches there; a breakpoint in a custom resolver's function file stops the query the
// query runner sends (the local GraphQL route, as system) at that line, the function's console reaches the
// debugger's console and the runtime log with the function's name, and the query's result arrives once
// resumed. The status bar item says functions are being debugged.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { isInspectorAddress } from '../../core/runtime-protocol';
import { functionsDebugConfiguration, FUNCTIONS_DEBUG_SESSION_NAME } from '../../client/functionsDebugConfig';
import { RuntimeProcess, serveArguments } from '../../client/runtimeProcess';
import { describeRuntimeStatus } from '../../client/runtimeStatus';
import { connectCdp, nodeWithInspectorPermission, type CdpClient } from '../helpers/cdp';
import { DIST } from '../helpers/disk';
import { copyApp } from '../dist/fixtures/serve';

/** taskSummary.js with a console line; `return` is on line 14 (1-based). */
const RESOLVER = `// test/client/functions-debug.test.ts
exports = async function ({ owner, status }) {
  const tasks = context.services.get("mongodb-atlas").db("tracker").collection("Task");
  const [group] = await tasks
    .aggregate([
      { $match: { _partition: owner, status } },
      { $group: { _id: null, count: { $sum: 1 } } },
    ])
    .toArray();
  console.log('summary for', owner);
  const summary = { owner, status, count: group ? group.count : 0 };


  return summary;
};
`;

describe('debugging functions from the editor', () => {
  test('the debug configuration attaches to the announced inspector only', () => {
    const address = 'ws://127.0.0.1:9229/0f9c7a52-1f2e-4a8b-9c3d-5e6f7a8b9c0d';
    const config = functionsDebugConfiguration(address, '/apps/todo');
    assert.deepEqual({ type: config.type, request: config.request, name: config.name, websocketAddress: config.websocketAddress, cwd: config.cwd },
      { type: 'node', request: 'attach', name: FUNCTIONS_DEBUG_SESSION_NAME, websocketAddress: address, cwd: '/apps/todo' });
    for (const bad of ['ws://0.0.0.0:9229/0f9c7a52-1f2e-4a8b-9c3d-5e6f7a8b9c0d', 'ws://evil.example:9229/x', 'http://127.0.0.1:9229/json']) {
      assert.throws(() => functionsDebugConfiguration(bad, '/apps/todo'));
      assert.equal(isInspectorAddress(bad), false);
    }
    assert.deepEqual(serveArguments({ cliPath: 'cli.js', appDir: '/a', port: 0, execPath: 'node', inspectFunctions: true }).slice(-1), ['--inspect-functions']);
    assert.equal(serveArguments({ cliPath: 'cli.js', appDir: '/a', port: 0, execPath: 'node' }).includes('--inspect-functions'), false);
  });

  test('the status bar item says functions are being debugged', () => {
    const on = describeRuntimeStatus({ kind: 'running', appId: 'todo-abcde', port: 8080, url: 'http://127.0.0.1:8080', attached: false, debuggingFunctions: true });
    assert.match(on.text, /debugging functions/);
    assert.match(on.tooltip, /no time limit/);
    const off = describeRuntimeStatus({ kind: 'running', appId: 'todo-abcde', port: 8080, url: 'http://127.0.0.1:8080', attached: false });
    assert.doesNotMatch(off.text, /debugging/);
  });

  test('a breakpoint in a resolver function stops the query runner\'s query there; its console reaches the debugger and the log; the result arrives', async () => {
    const appDir = copyApp();
    const resolverFile = path.join(appDir, 'functions', 'taskSummary.js');
    fs.writeFileSync(resolverFile, RESOLVER);
    const logs: string[] = [];
    const { process: runtime, ready } = RuntimeProcess.start({
      cliPath: path.join(DIST, 'cli.js'), appDir, port: 0, execPath: nodeWithInspectorPermission(), inspectFunctions: true,
      dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'asl-ipc-data-')), startTimeoutMs: 30_000,
    }, { onLog: (_level, message) => logs.push(message) });
    let cdp: CdpClient | undefined;
    try {
      const info = await ready;
      const inspectorAddress = info.apps[0]!.functionsInspector;
      assert.ok(inspectorAddress && isInspectorAddress(inspectorAddress), `no inspector in the handshake: ${JSON.stringify(info.apps[0])}`);
      assert.ok(logs.some((l) => /function debugging is on/.test(l)), logs.join('\n'));
      assert.equal(logs.some((l) => l.includes(new URL(inspectorAddress).pathname)), false, 'the inspector secret is in the log');
      cdp = await connectCdp(functionsDebugConfiguration(inspectorAddress, appDir).websocketAddress);
      const fileUrl = pathToFileURL(resolverFile).href;
      type Worker = Parameters<Parameters<CdpClient['onWorker']>[0]>[0];
      const ready_: Promise<unknown>[] = [];
      let pausedAtBreakpoint: (hit: { worker: Worker; params: any }) => void = () => undefined;
      const paused = new Promise<{ worker: Worker; params: any }>((resolve) => { pausedAtBreakpoint = resolve; });
      cdp.onWorker((worker) => {
        ready_.push((async () => {
          await worker.send('Runtime.enable');
          await worker.send('Debugger.enable');
          await worker.send('Debugger.setBreakpointByUrl', { url: fileUrl, lineNumber: 13 });
          await worker.send('Runtime.runIfWaitingForDebugger');
        })());
        void (async () => {
          for (;;) {
            const params = await worker.next('Debugger.paused', undefined, 120000);
            if (params.hitBreakpoints?.length) pausedAtBreakpoint({ worker, params });
            else await worker.send('Debugger.resume');
          }
        })().catch(() => undefined);
      });
      await cdp.send('NodeWorker.enable', { waitForDebuggerOnStart: true });
      await Promise.all(ready_);
      // What the query runner sends when run as system: the local GraphQL route with the editor's admin session.
      const answer = fetch(`${info.url}/api/admin/v3.0/local/app/${info.apps[0]!.appId}/graphql`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${info.admin!.accessToken}` },
        body: JSON.stringify({ query: 'query { taskSummary(input: { owner: "ada", status: "Open" }) { owner status count } }' }),
      }).then(async (res) => ({ status: res.status, body: await res.json() as any }));
      const { worker, params } = await paused;
      const top = params.callFrames[0];
      const script = await worker.next('Debugger.scriptParsed', (p) => p.scriptId === top.location.scriptId, 5000);
      assert.equal(script.url, fileUrl);
      assert.equal(top.location.lineNumber, 13);
      const logged = await worker.next('Runtime.consoleAPICalled', (p) => p.args?.[0]?.value === '[function taskSummary]', 5000);
      assert.deepEqual(logged.args.map((a: { value?: unknown }) => a.value), ['[function taskSummary]', 'summary for', 'ada']);
      await worker.send('Debugger.resume');
      const result = await answer;
      assert.equal(result.status, 200, JSON.stringify(result.body));
      assert.deepEqual(result.body.data.taskSummary, { owner: 'ada', status: 'Open', count: 0 });
      assert.ok(logs.some((l) => /\[function taskSummary\] summary for ada/.test(l)), logs.join('\n'));
    } finally {
      cdp?.close();
      await runtime.stop();
      fs.rmSync(appDir, { recursive: true, force: true });
    }
  });
});
