// "App Services: Debug Functions" in the real extension host: the command restarts the runtime with
// --inspect-functions and attaches VS Code's own Node debugger (js-debug); a breakpoint set through the
// debug API on a resolver's function file stops the GraphQL operation that calls it (checked through the
// debug API: the top stack frame's source and line), continuing lets the result arrive, and stopping the
// debug session turns debugging off again.
import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { AppServicesLocalApi } from '../../../client/api';
import { commands } from '../../../client/commands';
import { FUNCTIONS_DEBUG_SESSION_NAME } from '../../../client/functionsDebugConfig';

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

/** `vscode.debug.activeStackItem` (VS Code 1.90), newer than the API types the extension builds against. */
interface StackFrameItem { session: vscode.DebugSession; threadId: number; frameId: number }
const activeStackItem = (): StackFrameItem | undefined => {
  const item = (vscode.debug as unknown as { activeStackItem?: StackFrameItem }).activeStackItem;
  return item && typeof item.frameId === 'number' ? item : undefined;
};

export async function functionsDebugChecks(check: Check, api: AppServicesLocalApi): Promise<void> {
  const { runtime } = api.features();
  const folder = vscode.workspace.workspaceFolders![0]!;
  const resolverFile = vscode.Uri.joinPath(folder.uri, 'functions', 'taskSummary.js');

  await check('Debug Functions: a breakpoint in a resolver function stops its GraphQL operation at that line; continue, the result arrives; stopping the session ends debugging', async () => {
    const text = (await vscode.workspace.openTextDocument(resolverFile)).getText().split('\n');
    const line = text.findIndex((l) => /^\s*return \{ owner, status, count/.test(l));
    assert.ok(line > 0, 'taskSummary.js has no return line');
    assert.equal(await vscode.commands.executeCommand<boolean>(commands.debugFunctions.id), true, `Debug Functions failed: ${JSON.stringify(runtime.current)}`);
    const session = await waitFor('the functions debug session', () => vscode.debug.activeDebugSession?.name === FUNCTIONS_DEBUG_SESSION_NAME && vscode.debug.activeDebugSession);
    assert.equal(runtime.debuggingFunctions, true);
    assert.match(JSON.stringify(runtime.current), /"debuggingFunctions":true/);
    const breakpoint = new vscode.SourceBreakpoint(new vscode.Location(resolverFile, new vscode.Position(line, 0)));
    vscode.debug.addBreakpoints([breakpoint]);
    try {
      // js-debug sets breakpoints in each worker thread as it attaches to it; give it the time to.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const target = runtime.target!;
      // The query runner's "run as system": the local GraphQL route with the editor's admin session.
      const answer = fetch(`${target.baseUrl}/api/admin/v3.0/local/app/${target.appId}/graphql`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${target.admin!.accessToken}` },
        body: JSON.stringify({ query: 'query { taskSummary(input: { owner: "ada", status: "open" }) { owner status count } }' }),
      }).then(async (res) => ({ status: res.status, body: await res.json() as { data?: { taskSummary?: unknown } } }));
      const item = await waitFor('the debugger to stop at the breakpoint', () => activeStackItem(), 60_000);
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
    } finally {
      vscode.debug.removeBreakpoints([breakpoint]);
    }
    await vscode.debug.stopDebugging(session);
    // The runtime restarts without the inspector: running again, and not debugging.
    await waitFor('debugging to end and the runtime to run again without it', () => {
      const state = runtime.current;
      return !runtime.debuggingFunctions && state.kind === 'running' && state.debuggingFunctions !== true;
    }, 60_000);
    await vscode.commands.executeCommand(commands.stopRuntime.id);
  });
}
