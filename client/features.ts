// Runtime control, the query runner and the app explorer, bundled apart (dist/features.js) and loaded on
// first use, so activating the extension stays fast: `extension.ts` registers the commands, lenses and views
// and hands them to this module when one is first needed.
import * as vscode from 'vscode';
import { loadApp } from '../core/load';
import { nodeFileSystem } from '../core/fs';
import { AppModels } from './appModels';
import { commands } from './commands';
import { AppExplorer, type ExplorerNode } from './explorer';
import type { HistoryEntry } from './history';
import { QueryRunner, RESULT_SCHEME, messageOf, type FragmentSource } from './runner';
import { RuntimeController } from './runtimeController';
import { FunctionsDebugger } from './functionsDebugger';
import { PARTITION_SCHEME, PartitionSimulator } from './partitionSimulator';
import { SYNC_TRAFFIC_SCHEME, SyncSessionsView, type SyncSessionNode } from './syncSessions';

export type ExplorerNodeOrUndefined = ExplorerNode | undefined;
export type HistoryEntryOrUndefined = HistoryEntry | undefined;
export type { SyncSessionNode };

export interface Features {
  runtime: RuntimeController;
  runner: QueryRunner;
  explorer: AppExplorer;
  syncSessions: SyncSessionsView;
  /** "Debug Functions" and the `app-services` launch configurations. */
  functionsDebugger: FunctionsDebugger;
  /** Handlers of the commands this module owns, by command id. */
  handlers: Record<string, (...args: never[]) => unknown>;
}

export function createFeatures(context: vscode.ExtensionContext, runtimeLog: vscode.LogOutputChannel, statusItem: vscode.StatusBarItem,
  fragmentsFor?: FragmentSource): Features {
  const apps = new AppModels();
  const runtime = new RuntimeController(context, runtimeLog, statusItem);
  const runner = new QueryRunner(context, runtime, apps, fragmentsFor);
  const explorer = new AppExplorer(runtime, apps, runner);
  const partitions = new PartitionSimulator(runtime);
  const syncSessions = new SyncSessionsView(runtime);
  const functionsDebugger = new FunctionsDebugger(runtime, runtimeLog);
  context.subscriptions.push(
    runtime, runner, explorer, partitions, syncSessions, functionsDebugger,
    vscode.workspace.registerTextDocumentContentProvider(SYNC_TRAFFIC_SCHEME, syncSessions),
    vscode.workspace.registerTextDocumentContentProvider(RESULT_SCHEME, runner.results),
    vscode.workspace.registerTextDocumentContentProvider(PARTITION_SCHEME, partitions),
  );

  const openInBrowser = async () => {
    const target = await runtime.ensureRunning();
    if (target) await vscode.env.openExternal(vscode.Uri.parse(`${target.baseUrl}/`));
  };

  const attach = async () => {
    const url = await vscode.window.showInputBox({
      title: 'Attach to a running runtime', prompt: 'The URL "asl serve" printed (listening on …)', value: 'http://localhost:8080', ignoreFocusOut: true,
      validateInput: (v) => { try { const u = new URL(v); return u.protocol === 'http:' || u.protocol === 'https:' ? undefined : 'an http:// URL'; } catch { return 'a URL like http://localhost:8080'; } },
    });
    if (!url) return false;
    const appDir = await runtime.chooseApp();
    let suggested = '';
    if (appDir) suggested = (await loadApp(nodeFileSystem, appDir).then((a) => a.appId, () => undefined)) ?? '';
    const appId = await vscode.window.showInputBox({ title: 'Attach to a running runtime', prompt: 'The client app id it serves ("app id: …")', value: suggested, ignoreFocusOut: true, validateInput: (v) => (v.trim() ? undefined : 'the app id') });
    if (!appId) return false;
    return runtime.attach(url, appId.trim());
  };

  const runtimeActions = async () => {
    const state = runtime.current.kind;
    type Action = vscode.QuickPickItem & { command: string };
    const items: Action[] = state === 'running'
      ? [
        { label: '$(globe) Open in Browser', command: commands.openInBrowser.id },
        { label: '$(debug-restart) Restart', command: commands.restartRuntime.id },
        { label: '$(debug-alt) Debug Functions', command: commands.debugFunctions.id },
        { label: '$(debug-stop) Stop', command: commands.stopRuntime.id },
      ]
      : [
        { label: state === 'crashed' || state === 'failed' ? '$(debug-restart) Restart' : '$(play) Start', command: commands.startRuntime.id },
        { label: '$(plug) Attach to a Running Runtime…', command: commands.attachRuntime.id },
      ];
    items.push(
      { label: '$(output) Show Runtime Logs', command: commands.showRuntimeLogs.id },
      { label: '$(folder-library) Select the App to Run…', command: commands.selectApp.id },
      { label: '$(trash) Clear Local Data…', command: commands.clearLocalData.id },
    );
    const picked = await vscode.window.showQuickPick(items, { title: 'App Services runtime' });
    if (picked) await vscode.commands.executeCommand(picked.command);
  };

  const guarded = <A extends unknown[]>(what: string, run: (...args: A) => unknown) => async (...args: A) => {
    try {
      return await run(...args);
    } catch (error) {
      void vscode.window.showErrorMessage(`App Services: ${what} failed: ${messageOf(error)}`);
      return undefined;
    }
  };

  const handlers: Record<string, (...args: never[]) => unknown> = {
    [commands.startRuntime.id]: guarded('starting the runtime', () => runtime.start()),
    [commands.stopRuntime.id]: guarded('stopping the runtime', () => runtime.stop()),
    [commands.restartRuntime.id]: guarded('restarting the runtime', () => runtime.restart()),
    [commands.debugFunctions.id]: guarded('debugging functions', () => functionsDebugger.start()),
    [commands.showRuntimeLogs.id]: () => runtimeLog.show(true),
    [commands.openInBrowser.id]: guarded('opening the browser', openInBrowser),
    [commands.clearLocalData.id]: guarded('clearing the local data', () => runtime.clearLocalData()),
    [commands.attachRuntime.id]: guarded('attaching', attach),
    [commands.selectApp.id]: guarded('selecting the app', async () => {
      const dir = await runtime.chooseApp(true);
      if (dir && runtime.current.kind === 'running' && runtime.target?.appDir !== dir) {
        await runtime.stop();
        await runtime.start(dir);
      }
      return dir;
    }),
    [commands.runtimeActions.id]: guarded('the runtime action', runtimeActions),
    [commands.runOperation.id]: guarded('running the operation', (uri?: vscode.Uri, offset?: number) => runner.runOperation(uri, offset)),
    [commands.runOperationAs.id]: guarded('running the operation', (uri?: vscode.Uri, offset?: number) => runner.runOperation(uri, offset, true)),
    [commands.runSelection.id]: guarded('running the selection', () => runner.runSelection()),
    [commands.rerunHistory.id]: guarded('running again', (entry: HistoryEntry) => runner.rerun(entry)),
    [commands.openHistoryResult.id]: guarded('opening the result', (entry: HistoryEntry) => runner.openResult(entry)),
    [commands.copyHistoryCurl.id]: guarded('copying as curl', (entry: HistoryEntry) => runner.copyAsCurl(entry)),
    [commands.clearHistory.id]: guarded('clearing the history', () => runner.clearHistory()),
    [commands.refreshExplorer.id]: () => explorer.refresh(),
    [commands.browseDocuments.id]: guarded('browsing documents', (node: Extract<ExplorerNode, { kind: 'collection' }>) => explorer.browse(node)),
    [commands.runFunctionAs.id]: guarded('running the function', (node: Extract<ExplorerNode, { kind: 'function' }>, args?: unknown[]) => explorer.runFunction(node, args)),
    [commands.insertSampleOperation.id]: guarded('inserting a sample', (node: Extract<ExplorerNode, { kind: 'resolver' }>) => explorer.insertSample(node)),
    [commands.createUser.id]: guarded('creating the user', () => explorer.createUser()),
    [commands.deleteUser.id]: guarded('deleting the user', (node: Extract<ExplorerNode, { kind: 'user' }>) => explorer.deleteUser(node)),
    [commands.openPartitionAsUser.id]: guarded('opening the partition', (args?: { userId?: string; partition?: string }) => partitions.open(args)),
    [commands.refreshSyncSessions.id]: guarded('listing the sync sessions', () => syncSessions.refresh()),
    [commands.showSyncSessionTraffic.id]: guarded('opening the session\'s traffic', (node: SyncSessionNode) => syncSessions.showTraffic(node)),
  };

  return { runtime, runner, explorer, syncSessions, functionsDebugger, handlers };
}
