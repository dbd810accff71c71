// The language server: wires the LSP connection to the workspace model. Features stay out of this file.
import {
  CodeActionKind, DidChangeConfigurationNotification, DidChangeWatchedFilesNotification, FileChangeType, TextDocuments, TextDocumentSyncKind,
  type Connection, type Diagnostic as LspDiagnostic, type InitializeParams, type InitializeResult,
} from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import type { AppFileSystem } from '../core/fs';
import {
  GRAPHQL_APP_REQUEST, GRAPHQL_FRAGMENTS_REQUEST, GRAPHQL_SCHEMA_REQUEST, STATUS_NOTIFICATION,
  type GraphqlAppParams, type GraphqlFragmentsParams, type GraphqlSchemaParams, type GraphqlSchemaResult, type StatusParams,
} from '../core/protocol';
import { pathToUri, toLspDiagnostic, uriToPath } from './convert';
import { graphqlHostOf } from '../core/graphql/embedded';
import { LanguageFeatures } from './features';
import { WorkspaceFragments } from './features/graphqlFragments';
import { AppWorkspace } from './workspace';

/** What the server needs from its host process, injected so tests can run it in memory. */
export interface ServerRuntime {
  fs: AppFileSystem;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Delay between an edit and revalidation, so fast typing validates once. */
  editDebounceMs: number;
}

export function startServer(connection: Connection, runtime: ServerRuntime): void {
  const documents = new TextDocuments(TextDocument);
  let workspace = new AppWorkspace(runtime.fs);
  const published = new Map<string, Set<string>>();
  // A JavaScript file can have both app diagnostics and embedded-language ones (GraphQL templates, RQL
  // `.filtered("…")` strings): each is kept and sent together.
  const appDiagnostics = new Map<string, LspDiagnostic[]>();
  const graphqlDiagnostics = new Map<string, LspDiagnostic[]>();
  let configurationEvents = false;
  const pendingReloads = new Map<string, unknown>();
  let folders: string[] = [];
  let watchRegistration = false;
  let workspaceFolderEvents = false;
  const fragments = new WorkspaceFragments(runtime.fs);
  const features = new LanguageFeatures((file) => workspace.appOf(file), (uri) => documents.get(uri)?.getText(), (message) => connection.console.error(message),
    (file, preferred) => workspace.graphqlAppOf(file, preferred), () => workspace.allApps(), fragments);

  const safely = <A extends unknown[]>(what: string, fn: (...args: A) => Promise<void> | void) => async (...args: A) => {
    try { await fn(...args); } catch (e) { connection.console.error(`${what} failed: ${(e as Error)?.stack ?? e}`); }
  };

  function send(file: string): void {
    const own = appDiagnostics.get(file) ?? [];
    const graphql = graphqlDiagnostics.get(pathToUri(file)) ?? [];
    void connection.sendDiagnostics({ uri: pathToUri(file), diagnostics: graphql.length ? [...own, ...graphql] : own });
  }

  function publish(root: string): void {
    const app = workspace.allApps().find((a) => a.model.rootDir === root);
    const before = published.get(root) ?? new Set<string>();
    const now = new Set<string>();
    if (app) {
      for (const [file, diagnostics] of AppWorkspace.byFile(app.diagnostics)) {
        now.add(file);
        appDiagnostics.set(file, diagnostics.map(toLspDiagnostic));
        send(file);
      }
    }
    for (const file of before) {
      if (now.has(file)) continue;
      appDiagnostics.delete(file);
      send(file);
    }
    published.set(root, now);
    refreshGraphqlDiagnostics();
  }

  /** Checks the GraphQL and RQL of one open document now (no debounce: it does not reload any app). */
  function checkGraphql(uri: string): void {
    const file = uriToPath(uri);
    if (!file) return;
    const graphql = features.graphqlDiagnostics(uri);
    const rql = features.rqlDiagnostics(uri);
    const diagnostics = graphql || rql.length > 0 ? [...(graphql ?? []), ...rql] : undefined;
    if (diagnostics) graphqlDiagnostics.set(uri, diagnostics);
    else if (!graphqlDiagnostics.delete(uri)) return;
    send(file);
  }

  /** The schema changed (an app reloaded) or the settings did: every open document with GraphQL is checked again. */
  function refreshGraphqlDiagnostics(): void {
    for (const document of documents.all()) if (features.servesGraphql(document.uri) || graphqlDiagnostics.has(document.uri)) checkGraphql(document.uri);
  }

  function sendStatus(state: StatusParams['state']): void {
    const params: StatusParams = {
      state,
      apps: workspace.allApps().map(({ model, diagnostics }) => ({
        root: model.rootDir, name: model.name, appId: model.appId,
        errors: diagnostics.filter((d) => d.severity === 'error').length,
        warnings: diagnostics.filter((d) => d.severity === 'warning').length,
      })),
    };
    void connection.sendNotification(STATUS_NOTIFICATION, params);
  }

  async function rescanAll(): Promise<void> {
    sendStatus('loading');
    const before = [...published.keys()];
    await workspace.setFolders(folders);
    for (const root of new Set([...before, ...workspace.allApps().map((a) => a.model.rootDir)])) publish(root);
    sendStatus('ready');
    // Fragments in other files come after the first diagnostics, which do not wait for the search.
    await fragments.scan(folders);
    refreshGraphqlDiagnostics();
  }

  async function applyChange(file: string, kind: 'changed' | 'created' | 'deleted'): Promise<void> {
    const roots = await workspace.fileChanged(file, kind);
    for (const root of roots) publish(root);
    if (roots.length) sendStatus('ready');
  }

  function scheduleReload(file: string): void {
    // A .graphql/.gql document is never read into an app's model: its edits need no reload.
    if (graphqlHostOf(file) === 'graphql') return;
    const root = workspace.appRootOf(file) ?? file;
    const pending = pendingReloads.get(root);
    if (pending !== undefined) runtime.clearTimeout(pending);
    pendingReloads.set(root, runtime.setTimeout(safely('revalidation', async () => {
      pendingReloads.delete(root);
      await applyChange(file, 'changed');
    }), runtime.editDebounceMs));
  }

  connection.onInitialize((params: InitializeParams): InitializeResult => {
    folders = (params.workspaceFolders ?? []).map((f) => uriToPath(f.uri)).filter((p): p is string => !!p);
    if (!folders.length && params.rootUri) {
      const root = uriToPath(params.rootUri);
      if (root) folders = [root];
    }
    watchRegistration = params.capabilities.workspace?.didChangeWatchedFiles?.dynamicRegistration === true;
    workspaceFolderEvents = params.capabilities.workspace?.workspaceFolders === true;
    configurationEvents = params.capabilities.workspace?.didChangeConfiguration?.dynamicRegistration === true;
    // Disk reads can be cached only when the client will tell us about every change on disk.
    if (watchRegistration) workspace = new AppWorkspace(runtime.fs, { cacheDisk: true });
    features.configure(params.initializationOptions);
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        completionProvider: { triggerCharacters: ['"', '%', '$', '.', '@', '('] },
        hoverProvider: true,
        definitionProvider: true,
        documentSymbolProvider: true,
        codeActionProvider: { codeActionKinds: [CodeActionKind.QuickFix] },
        workspace: { workspaceFolders: { supported: true, changeNotifications: true } },
      },
      serverInfo: { name: 'App Services Local', version: '0.1.0' },
    };
  });

  connection.onInitialized(safely('initial scan', async () => {
    if (watchRegistration) {
      await connection.client.register(DidChangeWatchedFilesNotification.type, { watchers: [{ globPattern: '**/*.json' }, { globPattern: '**/*.js' }, { globPattern: '**/*.graphql' }, { globPattern: '**/*.gql' }] });
    }
    if (configurationEvents) await connection.client.register(DidChangeConfigurationNotification.type, { section: 'appServicesLocal' });
    if (workspaceFolderEvents) {
      connection.workspace.onDidChangeWorkspaceFolders(safely('workspace folder change', async (event) => {
        const removed = new Set(event.removed.map((f) => uriToPath(f.uri)));
        folders = [...folders.filter((f) => !removed.has(f)), ...event.added.map((f) => uriToPath(f.uri)).filter((p): p is string => !!p)];
        await rescanAll();
      }));
    }
    await rescanAll();
  }));

  documents.onDidChangeContent(safely('edit', (event) => {
    const file = uriToPath(event.document.uri);
    if (!file) return;
    workspace.setOpenText(file, event.document.getText());
    // A fragment another open document may spread changed: check them all, else just this one.
    if (fragments.setOpenText(file, event.document.getText())) refreshGraphqlDiagnostics();
    else checkGraphql(event.document.uri);
    scheduleReload(file);
  }));

  documents.onDidClose(safely('close', (event) => {
    const file = uriToPath(event.document.uri);
    if (!file) return;
    workspace.closeText(file);
    features.forgetDocument(event.document.uri);
    if (graphqlDiagnostics.delete(event.document.uri)) send(file);
    if (fragments.closeText(file)) refreshGraphqlDiagnostics();
    scheduleReload(file);
  }));

  connection.onDidChangeWatchedFiles(safely('file change on disk', async (params) => {
    for (const change of params.changes) {
      const file = uriToPath(change.uri);
      if (!file || (change.type === FileChangeType.Changed && workspace.openText(file) !== undefined)) continue;
      const kind = change.type === FileChangeType.Created ? 'created' : change.type === FileChangeType.Deleted ? 'deleted' : 'changed';
      if (await fragments.fileChanged(file, kind)) refreshGraphqlDiagnostics();
      await applyChange(file, kind);
    }
  }));

  connection.onCompletion((params) => features.completion(params));
  connection.onHover((params) => features.hover(params));
  connection.onCodeAction((params) => features.codeActions(params));
  connection.onDefinition((params) => features.definition(params));
  connection.onDocumentSymbol((params) => features.documentSymbols(params));
  connection.onRequest(GRAPHQL_APP_REQUEST, (params: GraphqlAppParams) => features.graphqlApp(params.uri));
  connection.onRequest(GRAPHQL_FRAGMENTS_REQUEST, (params: GraphqlFragmentsParams) => features.graphqlFragments(params));
  connection.onRequest(GRAPHQL_SCHEMA_REQUEST, (params: GraphqlSchemaParams): GraphqlSchemaResult => {
    const app = workspace.allApps().find((a) => a.model.rootDir === params.root);
    return app ? { sdl: app.cache.generatedSchema(app.model).sdl } : {};
  });
  connection.onDidChangeConfiguration(safely('configuration change', (params) => {
    const settings = (params.settings as { appServicesLocal?: { graphql?: unknown } } | null)?.appServicesLocal?.graphql;
    features.configureGraphql(settings);
    refreshGraphqlDiagnostics();
  }));

  documents.listen(connection);
  connection.listen();
}
