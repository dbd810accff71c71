// Debugging functions in the real extension host, with VS Code's own Node debugger (js-debug):
// - "App Services: Debug Functions": the command restarts the runtime with --inspect-functions and attaches;
// - a launch.json configuration of type "app-services" started as F5 starts it (vscode.debug.startDebugging
//   with its name): it resolves to a Node attach on the restarted runtime's inspector; the debugger attaches
//   again when the function process is killed and when the runtime restarts;
// - a Node without --allow-inspector named for the function process is refused and the runtime left running.
// Each time a breakpoint set through the debug API on a resolver's function file stops the GraphQL operation
// that calls it (checked through the debug API: the top stack frame's source and line), continuing lets the
// result arrive, and stopping the debug session turns debugging off again.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import * as vscode from 'vscode';
import type { AppServicesLocalApi } from '../../../client/api';
import { commands } from '../../../client/commands';
import { APP_SERVICES_DEBUG_TYPE, FUNCTIONS_DEBUG_SESSION_NAME } from '../../../client/functionsDebugConfig';
import type { RuntimeController } from '../../../client/runtimeController';

type Check = (name: string, body: () => Promise<void>) => Promise<void>;

async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `vscode.debug.activeStackItem` and its event (VS Code 1.90), newer than the API types the extension builds against. */
interface StackFrameItem { session: vscode.DebugSession; threadId: number; frameId: number }
const debugApi = vscode.debug as unknown as { onDidChangeActiveStackItem: vscode.Event<unknown> };

/** The next stack frame the editor focuses (a stop), from now on. */
function nextStop(ms: number): Promise<StackFrameItem> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { listening.dispose(); reject(new Error(`the debugger did not stop within ${ms / 1000} s`)); }, ms);
    const listening = debugApi.onDidChangeActiveStackItem((item) => {
      const frame = item as StackFrameItem | undefined;
      if (!frame || typeof frame.frameId !== 'number') return;
      clearTimeout(timer);
      listening.dispose();
      resolve(frame);
    });
  });
}

/**
 * With a breakpoint on `line` (0-based) of `resolverFile`: the GraphQL operation whose custom resolver calls
 * it stops there (top frame's source and line), and once continued its result arrives.
 */
async function breakpointStopsOperation(runtime: RuntimeController, resolverFile: vscode.Uri, line: number): Promise<void> {
  // js-debug sets breakpoints in each worker thread as it attaches to it; give it the time to.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const target = runtime.target!;
  const stopped = nextStop(60_000);
  // The query runner's "run as system": the local GraphQL route with the editor's admin session.
  const answer = fetch(`${target.baseUrl}/api/admin/v3.0/local/app/${target.appId}/graphql`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${target.admin!.accessToken}` },
    body: JSON.stringify({ query: 'query { taskSummary(input: { owner: "ada", status: "open" }) { owner status count } }' }),
  }).then(async (res) => ({ status: res.status, body: await res.json() as { data?: { taskSummary?: unknown } } }));
  const item = await stopped;
  const trace = await item.session.customRequest('stackTrace', { threadId: item.threadId, startFrame: 0, levels: 1 }) as { stackFrames: Array<{ line: number; source?: { path?: string } }> };
  const top = trace.stackFrames[0]!;
  // In a remote extension host (code-server) js-debug names the source by its vscode-remote URI.
  const sourcePath = top.source?.path ?? '';
  assert.equal(sourcePath.includes('://') ? vscode.Uri.parse(sourcePath).path : vscode.Uri.file(sourcePath).path, resolverFile.path, JSON.stringify(top));
  assert.equal(top.line, line + 1, JSON.stringify(top));
  await item.session.customRequest('continue', { threadId: item.threadId });
  const result = await answer;
  assert.equal(result.status, 200, JSON.stringify(result.body));
  const summary = result.body.data?.taskSummary as { owner: string; status: string; count: number } | undefined;
  assert.deepEqual({ owner: summary?.owner, status: summary?.status, counted: typeof summary?.count }, { owner: 'ada', status: 'open', counted: 'number' }, JSON.stringify(result.body));
}

/** The runtime's function process: its child running dist/function-process.js (Linux /proc). */
function functionProcessOf(runtimePid: number): number | undefined {
  for (const task of fs.readdirSync(`/proc/${runtimePid}/task`)) {
    const children = fs.readFileSync(`/proc/${runtimePid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    for (const pid of children) {
      try {
        if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('function-process.js')) return pid;
      } catch { /* gone */ }
    }
  }
  return undefined;
}

/** Debugging ended: the runtime runs again without the inspector. */
async function debuggingEnded(runtime: RuntimeController): Promise<void> {
  await waitFor('debugging to end and the runtime to run again without it', () => {
    const state = runtime.current;
    return !runtime.debuggingFunctions && state.kind === 'running' && state.debuggingFunctions !== true;
  }, 60_000);
}

const LAUNCH_NAME = 'Functions from launch.json';

export async function functionsDebugChecks(check: Check, api: AppServicesLocalApi): Promise<void> {
  const { runtime, functionsDebugger } = api.features();
  const folder = vscode.workspace.workspaceFolders![0]!;
  const resolverFile = vscode.Uri.joinPath(folder.uri, 'functions', 'taskSummary.js');
  const text = (await vscode.workspace.openTextDocument(resolverFile)).getText().split('\n');
  const line = text.findIndex((l) => /^\s*return \{ owner, status, count/.test(l));
  const breakpoint = new vscode.SourceBreakpoint(new vscode.Location(resolverFile, new vscode.Position(line, 0)));

  await check('Debug Functions: a breakpoint in a resolver function stops its GraphQL operation at that line; continue, the result arrives; stopping the session ends debugging', async () => {
    assert.ok(line > 0, 'taskSummary.js has no return line');
    assert.equal(await vscode.commands.executeCommand<boolean>(commands.debugFunctions.id), true, `Debug Functions failed: ${JSON.stringify(runtime.current)}`);
    const session = await waitFor('the functions debug session', () => vscode.debug.activeDebugSession?.name === FUNCTIONS_DEBUG_SESSION_NAME && vscode.debug.activeDebugSession);
    assert.equal(runtime.debuggingFunctions, true);
    assert.match(JSON.stringify(runtime.current), /"debuggingFunctions":true/);
    vscode.debug.addBreakpoints([breakpoint]);
    try {
      await breakpointStopsOperation(runtime, resolverFile, line);
    } finally {
      vscode.debug.removeBreakpoints([breakpoint]);
    }
    await vscode.debug.stopDebugging(session);
    await debuggingEnded(runtime);
  });

  await check('launch.json "type": "app-services" (F5): the runtime restarts with the inspector and the Node debugger attaches; a breakpoint stops a GraphQL operation at its line; after the function process is killed and after a runtime restart the debugger attaches again and stops there again; stopping ends debugging', async () => {
    const launchFile = vscode.Uri.joinPath(folder.uri, '.vscode', 'launch.json');
    fs.mkdirSync(vscode.Uri.joinPath(folder.uri, '.vscode').fsPath, { recursive: true });
    fs.writeFileSync(launchFile.fsPath, JSON.stringify({
      version: '0.2.0',
      configurations: [{ type: APP_SERVICES_DEBUG_TYPE, request: 'launch', name: LAUNCH_NAME, app: '${workspaceFolder}' }],
    }, null, 2));
    vscode.debug.addBreakpoints([breakpoint]);
    try {
      await waitFor('VS Code to read launch.json', () => vscode.workspace.getConfiguration('launch', folder.uri).get<Array<{ name?: string }>>('configurations')?.some((c) => c.name === LAUNCH_NAME));
      // What F5 does with this configuration selected.
      assert.equal(await vscode.debug.startDebugging(folder, LAUNCH_NAME), true, `the launch configuration did not start: ${JSON.stringify(runtime.current)}`);
      const first = await waitFor('the launch configuration\'s debug session', () => functionsDebugger.activeSession?.name === LAUNCH_NAME && functionsDebugger.activeSession);
      assert.match(first.type, /^(pwa-)?node$/, 'it became a Node attach session');
      assert.equal(first.configuration.websocketAddress, runtime.target?.functionsInspector);
      assert.equal(runtime.debuggingFunctions, true);
      assert.match(JSON.stringify(runtime.current), /"debuggingFunctions":true/);
      await breakpointStopsOperation(runtime, resolverFile, line);

      // The function process dies (as when its Node is killed or runs out of memory): it starts again with a new inspector, and the debugger follows.
      const functionProcess = await waitFor('the function process', () => functionProcessOf(runtime.pid!));
      process.kill(functionProcess, 'SIGKILL');
      const second = await waitFor('the debugger to attach to the new function process', () => {
        const s = functionsDebugger.activeSession;
        return s && s.configuration.websocketAddress !== first.configuration.websocketAddress && s;
      }, 60_000);
      assert.equal(second.name, LAUNCH_NAME);
      assert.equal(second.configuration.websocketAddress, runtime.target?.functionsInspector);
      assert.notEqual(functionProcessOf(runtime.pid!), functionProcess);
      assert.equal(runtime.debuggingFunctions, true);
      await breakpointStopsOperation(runtime, resolverFile, line);

      // The runtime restarts (Restart Runtime): still debugging, and the debugger follows.
      const runtimePid = runtime.pid;
      assert.equal(await vscode.commands.executeCommand<boolean>(commands.restartRuntime.id), true);
      const third = await waitFor('the debugger to attach to the restarted runtime', () => {
        const s = functionsDebugger.activeSession;
        return s && s.configuration.websocketAddress !== second.configuration.websocketAddress && s;
      }, 60_000);
      assert.notEqual(runtime.pid, runtimePid);
      assert.equal(third.configuration.websocketAddress, runtime.target?.functionsInspector);
      assert.match(JSON.stringify(runtime.current), /"debuggingFunctions":true/);
      await breakpointStopsOperation(runtime, resolverFile, line);

      await vscode.debug.stopDebugging(third);
      await debuggingEnded(runtime);
      assert.equal(functionsDebugger.activeSession, undefined);
    } finally {
      vscode.debug.removeBreakpoints([breakpoint]);
      fs.rmSync(launchFile.fsPath, { force: true });
    }
  });

  // A Node older than 24 on this machine (the system's), to name as the function process's Node.
  const olderNode = ['/usr/bin/node', '/usr/local/bin/node'].find((candidate) => {
    const run = spawnSync(candidate, ['-p', 'process.allowedNodeEnvironmentFlags.has("--allow-inspector")'], { encoding: 'utf8' });
    return run.status === 0 && run.stdout.trim() === 'false';
  });
  if (olderNode) {
    await check(`functionsNodePath naming a Node without --allow-inspector (${olderNode}): debugging is refused, nothing attaches, and the runtime runs on without it`, async () => {
      const settings = vscode.workspace.getConfiguration('appServicesLocal.runtime', folder.uri);
      await settings.update('functionsNodePath', olderNode, vscode.ConfigurationTarget.Global);
      try {
        assert.equal(runtime.current.kind, 'running');
        assert.equal(await vscode.commands.executeCommand<boolean>(commands.debugFunctions.id), false);
        await debuggingEnded(runtime);
        assert.equal(functionsDebugger.activeSession, undefined);
        assert.equal(vscode.debug.activeDebugSession, undefined);
      } finally {
        await settings.update('functionsNodePath', undefined, vscode.ConfigurationTarget.Global);
      }
    });
  }
  await vscode.commands.executeCommand(commands.stopRuntime.id);
}
