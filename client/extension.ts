// Extension entry: registers everything at activation and loads the heavy parts on first use, so activation
// stays fast: the language client and its GraphQL support (dist/language-client.js) start right after `activate()` returns; runtime
// control, the query runner and the app explorer (dist/features.js) load when a command, lens or view first
// needs them.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { GRAPHQL_FRAGMENTS_REQUEST, STATUS_NOTIFICATION, type GraphqlFragmentsResult, type StatusParams } from '../core/protocol';
import type { AppServicesLocalApi } from './api';
import { commands, syncSessionsViewId } from './commands';
import { APP_SERVICES_DEBUG_TYPE, defaultLaunchConfiguration } from './functionsDebugConfig';
import type * as FeaturesModule from './features';
import type { HistoryEntry } from './history';
import type * as LanguageClientModule from './languageBundle';
import { describeRuntimeStatus } from './runtimeStatus';
import { ServerStatusItem } from './statusItem';
import { createAppFromTemplate, downloadTemplateClient, templateSource, type CreateFromTemplateArgs } from './templateCommands';

const moduleStartedAt = performance.now();
let activeClient: LanguageClient | undefined;

/** Files that can hold GraphQL operations the runner's lenses go on. */
const graphqlSelector: vscode.DocumentSelector = [
  { scheme: 'file', pattern: '**/*.{graphql,gql}' },
  { scheme: 'file', language: 'graphql' },
  { scheme: 'file', language: 'javascript' }, { scheme: 'file', language: 'typescript' },
  { scheme: 'file', language: 'javascriptreact' }, { scheme: 'file', language: 'typescriptreact' },
];

/** Loads a sibling bundle of dist/ at run time (kept out of this bundle on purpose). */
function loadBundle<T>(file: string): T {
  return require(path.join(__dirname, file)) as T;
}

/** Fragments of other files, as the language server knows them; none while it is not running. */
async function fragmentsFromServer(uri: string, names: string[]): Promise<string[]> {
  try {
    const result = await activeClient?.sendRequest<GraphqlFragmentsResult>(GRAPHQL_FRAGMENTS_REQUEST, { uri, names });
    return result?.fragments.map((f) => f.text) ?? [];
  } catch {
    return [];
  }
}

export function activate(context: vscode.ExtensionContext): AppServicesLocalApi {
  const activateStartedAt = performance.now();
  const output = vscode.window.createOutputChannel('App Services Local', { log: true });
  const runtimeLog = vscode.window.createOutputChannel('App Services Runtime', { log: true });
  const status = new ServerStatusItem(commands.showOutput.id);
  const runtimeItem = vscode.window.createStatusBarItem('appServicesLocal.runtime', vscode.StatusBarAlignment.Left, -1);
  runtimeItem.name = 'App Services Runtime';
  const stopped = describeRuntimeStatus({ kind: 'stopped' });
  runtimeItem.text = stopped.text;
  runtimeItem.tooltip = stopped.tooltip;
  runtimeItem.command = commands.runtimeActions.id;
  runtimeItem.show();

  let loaded: FeaturesModule.Features | undefined;
  const features = (): FeaturesModule.Features => {
    loaded ??= loadBundle<typeof FeaturesModule>('features.js').createFeatures(context, runtimeLog, runtimeItem, fragmentsFromServer);
    return loaded;
  };

  const lensesChanged = new vscode.EventEmitter<void>();
  const explorerChanged = new vscode.EventEmitter<FeaturesModule.ExplorerNodeOrUndefined>();
  const historyChanged = new vscode.EventEmitter<FeaturesModule.HistoryEntryOrUndefined>();
  const syncSessionsChanged = new vscode.EventEmitter<void>();
  const wire = (f: FeaturesModule.Features) => {
    f.syncSessions.onDidChangeTreeData(() => syncSessionsChanged.fire());
    f.runner.onDidChangeCodeLenses(() => lensesChanged.fire());
    f.runner.onDidChangeTreeData(() => historyChanged.fire(undefined));
    f.explorer.onDidChangeTreeData((node) => explorerChanged.fire(node));
    return f;
  };
  let wired: FeaturesModule.Features | undefined;
  const ready = () => (wired ??= wire(features()));

  const ownCommands = [
    commands.startRuntime, commands.stopRuntime, commands.restartRuntime, commands.debugFunctions, commands.showRuntimeLogs, commands.openInBrowser,
    commands.clearLocalData, commands.attachRuntime, commands.selectApp, commands.runtimeActions, commands.runOperation,
    commands.runOperationAs, commands.runSelection, commands.rerunHistory, commands.openHistoryResult, commands.copyHistoryCurl,
    commands.clearHistory, commands.refreshExplorer, commands.browseDocuments, commands.runFunctionAs, commands.insertSampleOperation,
    commands.createUser, commands.deleteUser, commands.openPartitionAsUser, commands.refreshSyncSessions, commands.showSyncSessionTraffic,
  ];
  // Created here (not on first use) so its visibility is known before the features load: it polls only while shown.
  const syncSessionsView = vscode.window.createTreeView<FeaturesModule.SyncSessionNode>(syncSessionsViewId, {
    treeDataProvider: {
      onDidChangeTreeData: syncSessionsChanged.event,
      getTreeItem: (node) => ready().syncSessions.getTreeItem(node),
      getChildren: (node) => {
        const view = ready().syncSessions;
        if (!node) view.setVisible(syncSessionsView.visible);
        return view.getChildren(node);
      },
    },
  });

  context.subscriptions.push(
    output, runtimeLog, status, runtimeItem, lensesChanged, explorerChanged, historyChanged, syncSessionsChanged, syncSessionsView,
    syncSessionsView.onDidChangeVisibility(({ visible }) => { if (wired || visible) ready().syncSessions.setVisible(visible); }),
    vscode.commands.registerCommand(commands.showSyncSessions.id, () => vscode.commands.executeCommand(`${syncSessionsViewId}.focus`)),
    ...ownCommands.map((c) => vscode.commands.registerCommand(c.id, (...args: unknown[]) => (ready().handlers[c.id] as (...a: unknown[]) => unknown)(...args))),
    vscode.languages.registerCodeLensProvider(graphqlSelector, {
      onDidChangeCodeLenses: lensesChanged.event,
      provideCodeLenses: (document) => ready().runner.provideCodeLenses(document),
    }),
    vscode.window.registerTreeDataProvider('appServicesLocal.explorer', {
      onDidChangeTreeData: explorerChanged.event,
      getTreeItem: (node) => ready().explorer.getTreeItem(node),
      getChildren: (node) => ready().explorer.getChildren(node),
    }),
    vscode.window.registerTreeDataProvider<HistoryEntry>('appServicesLocal.history', {
      onDidChangeTreeData: historyChanged.event,
      getTreeItem: (entry) => ready().runner.getTreeItem(entry),
      getChildren: (entry) => ready().runner.getChildren(entry),
    }),
    // Launch configurations of type `app-services` (F5): resolved by the lazily loaded debugger part.
    vscode.debug.registerDebugConfigurationProvider(APP_SERVICES_DEBUG_TYPE, {
      provideDebugConfigurations: () => [defaultLaunchConfiguration()],
      resolveDebugConfiguration: (folder, config) => ready().functionsDebugger.resolveDebugConfiguration(folder, config),
    }),
    vscode.workspace.registerTextDocumentContentProvider('asl-result', {
      provideTextDocumentContent: (uri) => ready().runner.results.provideTextDocumentContent(uri),
    }),
  );
  if (vscode.workspace.getConfiguration('appServicesLocal.runtime').get<boolean>('autoStart', false)) {
    setImmediate(() => void ready().runtime.start());
  }

  let restartInProgress: Promise<void> | undefined;
  let client: LanguageClient | undefined;
  const restartServer = (): Promise<void> => {
    restartInProgress ??= (async () => {
      output.info('Restarting the language server');
      try {
        await languageReady;
        if (client) await loadBundle<typeof LanguageClientModule>('language-client.js').restartLanguageClient(client);
      } catch (error) {
        output.error(`The language server did not restart: ${describeError(error)}`);
        void vscode.window.showErrorMessage('App Services: the language server did not restart. See the output for details.');
      } finally {
        restartInProgress = undefined;
      }
    })();
    return restartInProgress;
  };
  context.subscriptions.push(
    vscode.commands.registerCommand(commands.restartServer.id, restartServer),
    vscode.commands.registerCommand(commands.showOutput.id, () => output.show(true)),
    vscode.commands.registerCommand(commands.createAppFromTemplate.id, (args?: CreateFromTemplateArgs) => createAppFromTemplate(templateSource(context), args)),
    vscode.commands.registerCommand(commands.downloadTemplateClient.id, (args?: { templateId?: string; parentDir?: string }) => downloadTemplateClient(templateSource(context), args)),
  );

  // The language client starts once activation has returned (its library is most of the load time).
  const languageReady = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
    const languageClient = loadBundle<typeof LanguageClientModule>('language-client.js');
    client = languageClient.createLanguageClient(context.asAbsolutePath(path.join('dist', 'server.js')), output);
    activeClient = client;
    const started = client;
    const graphql = new languageClient.GraphqlSupport(started, output);
    context.subscriptions.push(
      started.onDidChangeState(({ newState }) => {
        const state = languageClient.serverStateOf(newState);
        output.info(`Language server ${state}`);
        status.setServerState(state);
      }),
      graphql,
      started.onNotification(STATUS_NOTIFICATION, (params: StatusParams) => {
        status.setWorkspaceStatus(params);
        graphql.workspaceChanged(params);
      }),
    );
    return started.start();
  }).catch((error: unknown) => {
    output.error(`The language server did not start: ${describeError(error)}`);
    throw error;
  });
  // The failure is in the output channel and the status bar; callers who await `ready` still see it.
  languageReady.catch(() => undefined);
  // What VS Code counts as activation: evaluating this bundle plus the activate() call (not the wait between them).
  const activationMs = moduleEvaluationMs + (performance.now() - activateStartedAt);
  return { ready: languageReady, activationMs, features: () => ready() };
}

export function deactivate(): Promise<void> | undefined {
  const client = activeClient;
  activeClient = undefined;
  return client?.stop();
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const moduleEvaluationMs = performance.now() - moduleStartedAt;
