// The app explorer: each app of the workspace → runtime (state, URL), collections (schema, rules, document
// count when running, Browse Documents), custom resolvers (config, function, sample operation), functions
// (open, Run as…), auth providers (enabled state), users (when running: list, create, delete). Everything
// opens the file that defines it; refreshes on file changes and runtime events.
import path from 'node:path';
import * as vscode from 'vscode';
import type { AppModel } from '../core/model';
import type { CollectionCount } from '../core/apiRoutes';
import { browseDocuments, callFunction, collectionCounts, createUser, deleteUser, listUsers, type AppUser } from '../core/runner/local';
import { sampleOperation } from '../core/runner/samples';
import { describeIdentity } from '../core/runner/identities';
import type { AppModels } from './appModels';
import { commands } from './commands';
import { formatBytes } from './results';
import type { QueryRunner } from './runner';
import { messageOf } from './runner';
import type { RuntimeController } from './runtimeController';

export type ExplorerNode =
  | { kind: 'app'; dir: string }
  | { kind: 'runtime'; dir: string }
  | { kind: 'group'; dir: string; group: 'collections' | 'resolvers' | 'functions' | 'providers' | 'users' }
  | { kind: 'collection'; dir: string; dataSource: string; database: string; collection: string; folder: string; schema?: string; rules?: string }
  | { kind: 'file'; label: string; file: string; icon: string }
  | { kind: 'resolver'; dir: string; onType: string; fieldName: string; config: string; functionName: string; functionFile?: string }
  | { kind: 'function'; dir: string; name: string; file?: string; isPrivate: boolean }
  | { kind: 'provider'; name: string; type: string; disabled: boolean; file?: string }
  | { kind: 'user'; dir: string; user: AppUser }
  | { kind: 'message'; text: string; icon?: string };

export class AppExplorer implements vscode.TreeDataProvider<ExplorerNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ExplorerNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private counts: Promise<CollectionCount[]> | undefined;
  private users: Promise<AppUser[]> | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly runtime: RuntimeController, private readonly apps: AppModels, private readonly runner: QueryRunner) {
    const watcher = vscode.workspace.createFileSystemWatcher('**/*.{json,js}');
    let timer: NodeJS.Timeout | undefined;
    const onFile = (uri: vscode.Uri) => {
      if (uri.fsPath.includes(`${path.sep}node_modules${path.sep}`) || uri.fsPath.includes(`${path.sep}.asl${path.sep}`)) return;
      this.apps.invalidate(uri.fsPath);
      clearTimeout(timer);
      timer = setTimeout(() => this.refresh(), 200);
    };
    this.subscriptions.push(watcher, watcher.onDidChange(onFile), watcher.onDidCreate(onFile), watcher.onDidDelete(onFile), runtime.onDidChange(() => this.refresh()), this.changed);
  }

  dispose(): void { for (const s of this.subscriptions) s.dispose(); }

  refresh(): void {
    this.counts = undefined;
    this.users = undefined;
    this.changed.fire(undefined);
  }

  /** Whether the runtime serves this app folder right now. */
  private runningFor(dir: string): boolean {
    const target = this.runtime.target;
    return this.runtime.current.kind === 'running' && target !== undefined && (target.attached || target.appDir === dir);
  }

  private countsFor(dir: string): Promise<CollectionCount[]> | undefined {
    const pool = this.runtime.sessions;
    if (!pool || !this.runningFor(dir) || !pool.hasAdmin) return undefined;
    this.counts ??= collectionCounts(pool).catch(() => []);
    return this.counts;
  }

  getTreeItem(node: ExplorerNode): vscode.TreeItem | Thenable<vscode.TreeItem> {
    const collapsed = vscode.TreeItemCollapsibleState.Collapsed;
    switch (node.kind) {
      case 'app': {
        const item = new vscode.TreeItem(path.basename(node.dir), vscode.TreeItemCollapsibleState.Expanded);
        item.description = vscode.workspace.asRelativePath(node.dir);
        item.iconPath = new vscode.ThemeIcon('package');
        item.contextValue = 'app';
        item.id = `app:${node.dir}`;
        return item;
      }
      case 'runtime': {
        const state = this.runtime.current;
        const running = this.runningFor(node.dir);
        const item = new vscode.TreeItem(running ? 'Runtime: running' : `Runtime: ${state.kind === 'running' ? 'serving another app' : state.kind}`);
        item.description = running && state.kind === 'running' ? state.url : undefined;
        item.iconPath = new vscode.ThemeIcon(running ? 'play-circle' : state.kind === 'crashed' || state.kind === 'failed' ? 'error' : 'debug-stop');
        item.command = { title: 'Runtime Actions', command: commands.runtimeActions.id };
        item.contextValue = running ? 'runtimeRunning' : 'runtimeStopped';
        return item;
      }
      case 'group': {
        const labels = { collections: 'Collections', resolvers: 'Custom Resolvers', functions: 'Functions', providers: 'Auth Providers', users: 'Users' };
        const icons = { collections: 'database', resolvers: 'symbol-method', functions: 'symbol-function', providers: 'shield', users: 'account' };
        const item = new vscode.TreeItem(labels[node.group], collapsed);
        item.iconPath = new vscode.ThemeIcon(icons[node.group]);
        item.contextValue = `group-${node.group}`;
        item.id = `group:${node.dir}:${node.group}`;
        return item;
      }
      case 'collection': return this.collectionItem(node);
      case 'file': {
        const item = new vscode.TreeItem(node.label);
        item.iconPath = new vscode.ThemeIcon(node.icon);
        item.command = { title: 'Open', command: 'vscode.open', arguments: [vscode.Uri.file(node.file)] };
        item.resourceUri = vscode.Uri.file(node.file);
        item.description = path.basename(node.file);
        return item;
      }
      case 'resolver': {
        const item = new vscode.TreeItem(`${node.onType}.${node.fieldName}`, collapsed);
        item.description = `→ ${node.functionName}`;
        item.iconPath = new vscode.ThemeIcon('symbol-method');
        item.contextValue = 'resolver';
        return item;
      }
      case 'function': {
        const item = new vscode.TreeItem(node.name);
        item.description = node.isPrivate ? 'private' : undefined;
        item.iconPath = new vscode.ThemeIcon('symbol-function');
        item.contextValue = 'function';
        if (node.file) item.command = { title: 'Open', command: 'vscode.open', arguments: [vscode.Uri.file(node.file)] };
        return item;
      }
      case 'provider': {
        const item = new vscode.TreeItem(node.name);
        item.description = `${node.type} · ${node.disabled ? 'disabled' : 'enabled'}`;
        item.iconPath = new vscode.ThemeIcon(node.disabled ? 'circle-slash' : 'pass');
        if (node.file) item.command = { title: 'Open', command: 'vscode.open', arguments: [vscode.Uri.file(node.file)] };
        return item;
      }
      case 'user': {
        const item = new vscode.TreeItem(node.user.email ?? node.user.name ?? node.user.id);
        item.description = `${node.user.providers.join(', ')}${node.user.disabled ? ' · disabled' : ''}`;
        item.tooltip = `id ${node.user.id}`;
        item.iconPath = new vscode.ThemeIcon('person');
        item.contextValue = 'user';
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(node.text);
        if (node.icon) item.iconPath = new vscode.ThemeIcon(node.icon);
        return item;
      }
    }
  }

  private async collectionItem(node: Extract<ExplorerNode, { kind: 'collection' }>): Promise<vscode.TreeItem> {
    const item = new vscode.TreeItem(`${node.database}.${node.collection}`, vscode.TreeItemCollapsibleState.Collapsed);
    item.iconPath = new vscode.ThemeIcon('table');
    item.contextValue = 'collection';
    item.id = `collection:${node.folder}`;
    item.tooltip = `${node.dataSource} / ${node.database} / ${node.collection}`;
    const counts = await this.countsFor(node.dir);
    const count = counts?.find((c) => c.dataSource === node.dataSource && c.database === node.database && c.collection === node.collection);
    if (count) item.description = `${count.count} document${count.count === 1 ? '' : 's'}`;
    return item;
  }

  async getChildren(node?: ExplorerNode): Promise<ExplorerNode[]> {
    if (!node) {
      const dirs = await this.runtime.appFolders();
      return dirs.length ? dirs.map((dir) => ({ kind: 'app', dir })) : [{ kind: 'message', text: 'No app in this workspace', icon: 'info' }];
    }
    switch (node.kind) {
      case 'app': {
        const groups: ExplorerNode[] = (['collections', 'resolvers', 'functions', 'providers'] as const).map((group) => ({ kind: 'group', dir: node.dir, group }));
        if (this.runningFor(node.dir)) groups.push({ kind: 'group', dir: node.dir, group: 'users' });
        return [{ kind: 'runtime', dir: node.dir }, ...groups];
      }
      case 'group': return this.groupChildren(node.dir, node.group);
      case 'collection': {
        const files: ExplorerNode[] = [];
        if (node.schema) files.push({ kind: 'file', label: 'Schema', file: node.schema, icon: 'json' });
        if (node.rules) files.push({ kind: 'file', label: 'Rules', file: node.rules, icon: 'law' });
        return files;
      }
      case 'resolver': {
        const files: ExplorerNode[] = [{ kind: 'file', label: 'Config', file: node.config, icon: 'json' }];
        if (node.functionFile) files.push({ kind: 'file', label: `Function ${node.functionName}`, file: node.functionFile, icon: 'symbol-function' });
        return files;
      }
      default: return [];
    }
  }

  private async groupChildren(dir: string, group: 'collections' | 'resolvers' | 'functions' | 'providers' | 'users'): Promise<ExplorerNode[]> {
    let app: AppModel;
    try { app = await this.apps.get(dir); } catch (error) { return [{ kind: 'message', text: `Cannot load the app: ${messageOf(error)}`, icon: 'error' }]; }
    switch (group) {
      case 'collections': {
        const nodes: ExplorerNode[] = app.dataSources.flatMap((ds) => ds.collections.map((c): ExplorerNode => ({
          kind: 'collection', dir, dataSource: c.dataSource, database: c.database, collection: c.collection, folder: c.dir, schema: c.schema?.path, rules: c.rules?.path,
        })));
        return nodes.length ? nodes : [{ kind: 'message', text: 'No collections' }];
      }
      case 'resolvers': {
        const nodes = app.graphql.customResolvers.map((r): ExplorerNode => ({
          kind: 'resolver', dir, onType: r.onType, fieldName: r.fieldName, config: r.file.path, functionName: r.functionName, functionFile: app.functions.get(r.functionName)?.sourceFile?.path,
        }));
        return nodes.length ? nodes : [{ kind: 'message', text: 'No custom resolvers' }];
      }
      case 'functions': {
        const nodes = [...app.functions.values()].sort((a, b) => a.name.localeCompare(b.name))
          .map((f): ExplorerNode => ({ kind: 'function', dir, name: f.name, file: f.sourceFile?.path, isPrivate: f.private }));
        return nodes.length ? nodes : [{ kind: 'message', text: 'No functions' }];
      }
      case 'providers': {
        const nodes = app.authProviders.map((p): ExplorerNode => ({ kind: 'provider', name: p.name, type: p.type, disabled: p.disabled, file: p.source.file.path }));
        return nodes.length ? nodes : [{ kind: 'message', text: 'No auth providers' }];
      }
      case 'users': {
        const pool = this.runtime.sessions;
        if (!pool) return [{ kind: 'message', text: 'Start the runtime to see users' }];
        this.users ??= listUsers(pool);
        try {
          const users = await this.users;
          return users.length ? users.map((user): ExplorerNode => ({ kind: 'user', dir, user })) : [{ kind: 'message', text: 'No users yet' }];
        } catch (error) {
          this.users = undefined;
          return [{ kind: 'message', text: messageOf(error), icon: 'warning' }];
        }
      }
    }
  }

  // ---- actions ----

  async browse(node: Extract<ExplorerNode, { kind: 'collection' }>): Promise<vscode.Uri | undefined> {
    const target = await this.runtime.ensureRunning();
    const pool = this.runtime.sessions;
    if (!target || !pool) return undefined;
    const identity = await this.runner.lastIdentity() ?? await this.runner.pickIdentity();
    if (!identity) return undefined;
    try {
      const documents = await browseDocuments(pool, identity, node);
      const text = JSON.stringify(documents, null, 2);
      const header = `// ${node.database}.${node.collection}: the first 100 documents as ${describeIdentity(identity)} (${formatBytes(text.length)})\n`;
      const uri = this.runner.results.add(`${node.collection}-documents`, `${header}${text}\n`);
      await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri), { preview: false });
      return uri;
    } catch (error) {
      void vscode.window.showErrorMessage(`App Services: could not browse ${node.database}.${node.collection}: ${messageOf(error)}`);
      return undefined;
    }
  }

  async runFunction(node: Extract<ExplorerNode, { kind: 'function' }>, givenArguments?: unknown[]): Promise<vscode.Uri | undefined> {
    const target = await this.runtime.ensureRunning();
    const pool = this.runtime.sessions;
    if (!target || !pool) return undefined;
    const identity = givenArguments ? await this.runner.lastIdentity() ?? await this.runner.pickIdentity() : await this.runner.pickIdentity();
    if (!identity) return undefined;
    let args = givenArguments;
    if (!args) {
      const text = await vscode.window.showInputBox({
        title: `Run ${node.name} as ${describeIdentity(identity)}`, prompt: 'Arguments as a JSON array (EJSON allowed: {"$oid": "…"})', value: '[]', ignoreFocusOut: true,
        validateInput: (v) => { try { return Array.isArray(JSON.parse(v)) ? undefined : 'a JSON array, like [1, "two"]'; } catch (e) { return `not JSON: ${(e as Error).message}`; } },
      });
      if (text === undefined) return undefined;
      args = JSON.parse(text) as unknown[];
    }
    const started = performance.now();
    try {
      const value = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `App Services: running ${node.name}`, cancellable: true }, (_p, token) => {
        const controller = new AbortController();
        token.onCancellationRequested(() => controller.abort());
        return callFunction(pool, identity, { name: node.name, arguments: args! }, controller.signal);
      });
      const text = JSON.stringify(value, null, 2) ?? 'null';
      const uri = this.runner.results.add(`${node.name.replace(/\//g, '_')}-result`,
        `// function ${node.name}(${JSON.stringify(args).slice(1, -1)})\n// as ${describeIdentity(identity)} · ${Math.round(performance.now() - started)} ms\n${text}\n`);
      await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri), { preview: false });
      return uri;
    } catch (error) {
      void vscode.window.showErrorMessage(`App Services: ${node.name} failed: ${messageOf(error)}`);
      return undefined;
    }
  }

  async insertSample(node: Extract<ExplorerNode, { kind: 'resolver' }>): Promise<void> {
    const schema = await this.apps.schema(node.dir);
    const text = schema && sampleOperation(schema, node.onType, node.fieldName);
    if (!text) {
      void vscode.window.showErrorMessage(`App Services: ${node.onType}.${node.fieldName} is not in the generated schema (see the Problems panel for why).`);
      return;
    }
    const scratch = vscode.Uri.file(path.join(node.dir, 'scratch.graphql'));
    const existing = await vscode.workspace.fs.readFile(scratch).then((b) => new TextDecoder().decode(b), () => '');
    const next = `${existing}${existing && !existing.endsWith('\n\n') ? (existing.endsWith('\n') ? '\n' : '\n\n') : ''}${text}`;
    await vscode.workspace.fs.writeFile(scratch, new TextEncoder().encode(next));
    const editor = await vscode.window.showTextDocument(scratch, { preview: false });
    const end = editor.document.lineAt(editor.document.lineCount - 1).range.end;
    editor.revealRange(new vscode.Range(end, end));
  }

  async createUser(): Promise<void> {
    const pool = this.runtime.sessions;
    if (!pool) { void vscode.window.showErrorMessage('App Services: start the runtime first.'); return; }
    const email = await vscode.window.showInputBox({ title: 'Create user', prompt: 'Email', ignoreFocusOut: true, validateInput: (v) => (/^\S+@\S+$/.test(v) ? undefined : 'an email address') });
    if (!email) return;
    const password = await vscode.window.showInputBox({ title: 'Create user', prompt: `Password for ${email}`, password: true, ignoreFocusOut: true, validateInput: (v) => (v.length >= 6 ? undefined : 'at least 6 characters') });
    if (!password) return;
    try {
      await createUser(pool, email, password);
      this.refresh();
    } catch (error) {
      void vscode.window.showErrorMessage(`App Services: could not create ${email}: ${messageOf(error)}`);
    }
  }

  async deleteUser(node: Extract<ExplorerNode, { kind: 'user' }>): Promise<void> {
    const pool = this.runtime.sessions;
    if (!pool) return;
    const label = node.user.email ?? node.user.id;
    const choice = await vscode.window.showWarningMessage(`Delete the user ${label}? Their sessions end; their documents stay.`, { modal: true }, 'Delete User');
    if (choice !== 'Delete User') return;
    try {
      await deleteUser(pool, node.user.id);
      this.refresh();
    } catch (error) {
      void vscode.window.showErrorMessage(`App Services: could not delete ${label}: ${messageOf(error)}`);
    }
  }
}
