// The language server: wires the LSP connection to the workspace model. Features stay out of this file.
import {
  CodeActionKind, DidChangeWatchedFilesNotification, FileChangeType, TextDocuments, TextDocumentSyncKind,
  type Connection, type InitializeParams, type InitializeResult,
} from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import type { AppFileSystem } from '../core/fs';
import { STATUS_NOTIFICATION, type StatusParams } from '../core/protocol';
import { pathToUri, toLspDiagnostic, uriToPath } from './convert';
import { LanguageFeatures } from './features';
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
  const pendingReloads = new Map<string, unknown>();
  let folders: string[] = [];
  let watchRegistration = false;
  let workspaceFolderEvents = false;
  const features = new LanguageFeatures((file) => workspace.appOf(file), (uri) => documents.get(uri)?.getText(), (message) => connection.console.error(message));

  const safely = <A extends unknown[]>(what: string, fn: (...args: A) => Promise<void> | void) => async (...args: A) => {
    try { await fn(...args); } catch (e) { connection.console.error(`${what} failed: ${(e as Error)?.stack ?? e}`); }
  };

  function publish(root: string): void {
    const app = workspace.allApps().find((a) => a.model.rootDir === root);
    const before = published.get(root) ?? new Set<string>();
    const now = new Set<string>();
    if (app) {
      for (const [file, diagnostics] of AppWorkspace.byFile(app.diagnostics)) {
        now.add(file);
        void connection.sendDiagnostics({ uri: pathToUri(file), diagnostics: diagnostics.map(toLspDiagnostic) });
      }
    }
    for (const file of before) if (!now.has(file)) void connection.sendDiagnostics({ uri: pathToUri(file), diagnostics: [] });
    published.set(root, now);
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
  }

  async function applyChange(file: string, kind: 'changed' | 'created' | 'deleted'): Promise<void> {
    const roots = await workspace.fileChanged(file, kind);
    for (const root of roots) publish(root);
    if (roots.length) sendStatus('ready');
  }

  function scheduleReload(file: string): void {
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
    // Disk reads can be cached only when the client will tell us about every change on disk.
    if (watchRegistration) workspace = new AppWorkspace(runtime.fs, { cacheDisk: true });
    features.configure(params.initializationOptions);
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        completionProvider: { triggerCharacters: ['"', '%', '$', '.'] },
        hoverProvider: true,
        codeActionProvider: { codeActionKinds: [CodeActionKind.QuickFix] },
        workspace: { workspaceFolders: { supported: true, changeNotifications: true } },
      },
      serverInfo: { name: 'App Services Local', version: '0.1.0' },
    };
  });

  connection.onInitialized(safely('initial scan', async () => {
    if (watchRegistration) {
      await connection.client.register(DidChangeWatchedFilesNotification.type, { watchers: [{ globPattern: '**/*.json' }, { globPattern: '**/*.js' }] });
    }
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
    scheduleReload(file);
  }));

  documents.onDidClose(safely('close', (event) => {
    const file = uriToPath(event.document.uri);
    if (!file) return;
    workspace.closeText(file);
    scheduleReload(file);
  }));

  connection.onDidChangeWatchedFiles(safely('file change on disk', async (params) => {
    for (const change of params.changes) {
      const file = uriToPath(change.uri);
      if (!file || (change.type === FileChangeType.Changed && workspace.openText(file) !== undefined)) continue;
      await applyChange(file, change.type === FileChangeType.Created ? 'created' : change.type === FileChangeType.Deleted ? 'deleted' : 'changed');
    }
  }));

  connection.onCompletion((params) => features.completion(params));
  connection.onHover((params) => features.hover(params));
  connection.onCodeAction((params) => features.codeActions(params));

  documents.listen(connection);
  connection.listen();
}
