// Runtime control in the editor: which app runs (picked when the workspace has several, remembered per
// workspace), start/stop/restart of the child process, attach to a runtime started elsewhere, the status bar
// item's state, the "App Services Runtime" log channel, and the session pool the runner and explorer share.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { CLIENT_API, CLIENT_ROUTES, routePath } from '../core/apiRoutes';
import { findAppRoots } from '../core/load';
import { nodeFileSystem } from '../core/fs';
import { SessionPool, type RunnerTarget } from '../core/runner/identities';
import type { AdminSessionGrant, RuntimeLogLevel } from '../core/runtime-protocol';
import { commands, runtimeRunningContext } from './commands';
import { RuntimeProcess, RuntimeStartError, type RuntimeReady } from './runtimeProcess';
import { describeRuntimeStatus, type RuntimeState } from './runtimeStatus';

const PICKED_APP_KEY = 'appServicesLocal.runtime.app';

export interface RunningTarget extends RunnerTarget {
  appDir?: string;
  dataDir?: string;
  attached: boolean;
  admin?: AdminSessionGrant;
  /** While debugging functions: the WebSocket address of the app's function inspector. */
  functionsInspector?: string;
}

export class RuntimeController implements vscode.Disposable {
  private state: RuntimeState = { kind: 'stopped' };
  private process: RuntimeProcess | undefined;
  private running: RunningTarget | undefined;
  private pool: SessionPool | undefined;
  private transition: Promise<unknown> = Promise.resolve();
  /** Whether the runtime runs (and restarts) with `--inspect-functions`. */
  private inspectFunctions = false;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires on every state change and reload of the running app (the explorer refreshes on it). */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly item: vscode.StatusBarItem,
  ) {
    this.render();
  }

  get current(): RuntimeState { return this.state; }
  get target(): RunningTarget | undefined { return this.running; }
  get sessions(): SessionPool | undefined { return this.pool; }
  get pid(): number | undefined { return this.process?.pid; }
  get debuggingFunctions(): boolean { return this.inspectFunctions; }

  /**
   * Restarts the runtime with functions debuggable (or no longer), serving `appDir` when given; resolves
   * with whether it runs. Turning debugging off while no runtime runs starts none.
   */
  async setFunctionsDebugging(on: boolean, appDir?: string): Promise<boolean> {
    if (on === this.inspectFunctions && this.state.kind === 'running' && (!appDir || appDir === this.running?.appDir)) return true;
    this.inspectFunctions = on;
    if (!on && this.state.kind !== 'running' && this.state.kind !== 'starting') {
      this.render();
      return false;
    }
    const dir = appDir ?? (this.running?.attached ? undefined : this.running?.appDir);
    await this.stop();
    return this.start(dir);
  }

  private setState(state: RuntimeState): void {
    this.state = state;
    // The walkthrough's "Start the runtime" step completes on this context key.
    void vscode.commands.executeCommand('setContext', runtimeRunningContext, state.kind === 'running');
    this.render();
    this.changed.fire();
  }

  private render(): void {
    const view = describeRuntimeStatus(this.state);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.command = commands.runtimeActions.id;
    this.item.backgroundColor = view.isError ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  /** App folders of the workspace (folders holding a root config file). */
  async appFolders(): Promise<string[]> {
    const roots: string[] = [];
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      if (folder.uri.scheme !== 'file') continue;
      roots.push(...await findAppRoots(nodeFileSystem, folder.uri.fsPath));
    }
    return [...new Set(roots)].sort();
  }

  /** The app to run: the only one, the remembered one, or the user's pick (remembered). */
  async chooseApp(forcePick = false): Promise<string | undefined> {
    const apps = await this.appFolders();
    if (apps.length === 0) {
      void vscode.window.showErrorMessage('App Services: no app in this workspace (no folder holds realm_config.json, root_config.json or stitch.json). Open the folder of an exported app.');
      return undefined;
    }
    if (apps.length === 1 && !forcePick) return apps[0];
    const remembered = this.context.workspaceState.get<string>(PICKED_APP_KEY);
    if (!forcePick && remembered && apps.includes(remembered)) return remembered;
    const picked = await vscode.window.showQuickPick(apps.map((dir) => ({ label: path.basename(dir), description: vscode.workspace.asRelativePath(dir), dir })), {
      title: 'App Services: which app should the runtime serve?', placeHolder: 'The choice is remembered for this workspace',
    });
    if (!picked) return undefined;
    await this.context.workspaceState.update(PICKED_APP_KEY, picked.dir);
    return picked.dir;
  }

  /** Runs one state change at a time (a Restart clicked twice does not start two runtimes). */
  private serialize<T>(step: () => Promise<T>): Promise<T> {
    const next = this.transition.then(step, step);
    this.transition = next.catch(() => undefined);
    return next;
  }

  start(appDir?: string): Promise<boolean> {
    return this.serialize(() => this.startNow(appDir));
  }

  private async startNow(appDirArg?: string): Promise<boolean> {
    if (this.state.kind === 'running' || this.state.kind === 'starting') return true;
    const appDir = appDirArg ?? await this.chooseApp();
    if (!appDir) return false;
    const appName = path.basename(appDir);
    const settings = vscode.workspace.getConfiguration('appServicesLocal.runtime', vscode.Uri.file(appDir));
    const dataFolder = settings.get<string>('dataFolder', '').trim();
    const launch = {
      cliPath: this.context.asAbsolutePath(path.join('dist', 'cli.js')),
      appDir,
      port: settings.get<number>('port', 0),
      dataDir: dataFolder ? path.resolve(appDir, dataFolder) : undefined,
      functionTimeoutSec: settings.get<number>('functionTimeoutSeconds', 300),
      secrets: settings.get<string[]>('secrets', []).filter((s) => typeof s === 'string' && s.includes('=')),
      execPath: process.execPath,
      startTimeoutMs: 60_000,
      inspectFunctions: this.inspectFunctions,
      // Debugging needs a Node 24+ for the function process; the editor's own may be older (see runtimeProcess.ts).
      functionsNode: this.inspectFunctions ? settings.get<string>('functionsNodePath', '').trim() || undefined : undefined,
    };
    this.setState({ kind: 'starting', appName });
    this.log.info(`Starting the runtime for ${appDir} (port ${launch.port || 'any free'})`);
    const started = RuntimeProcess.start(launch, {
      onLog: (level, message) => this.writeLog(level, message),
      onReloaded: (applied, errors) => {
        if (!applied) this.log.warn(`The app's files have ${errors} error(s); the runtime keeps serving the last good version (see the Problems panel)`);
        this.changed.fire();
      },
      onCrash: (description, lastLines) => this.crashed(appName, description, lastLines),
      onFunctionsInspector: (appId, url) => {
        if (this.running?.appId !== appId) return;
        this.running.functionsInspector = url;
        this.log.info('The function process started again, its inspector at a new address');
        this.changed.fire();
      },
    });
    this.process = started.process;
    let ready: RuntimeReady;
    try {
      ready = await started.ready;
    } catch (error) {
      this.process = undefined;
      const message = error instanceof Error ? error.message : String(error);
      this.log.error(`The runtime did not start: ${message}`);
      this.setState({ kind: 'failed', appName, message });
      if (error instanceof RuntimeStartError && error.reason === 'app-errors') {
        const where = error.problems.slice(0, 3).map((p) => `${path.relative(appDir, p.file)}:${p.line + 1}:${p.character + 1} ${p.message}`).join('; ');
        void vscode.window.showErrorMessage(`App Services: the runtime did not start: ${message}. ${where}`, 'Show Problems', 'Show Runtime Logs').then((choice) => {
          if (choice === 'Show Problems') void vscode.commands.executeCommand('workbench.actions.view.problems');
          if (choice === 'Show Runtime Logs') this.log.show(true);
        });
      } else {
        void vscode.window.showErrorMessage(`App Services: the runtime for ${appName} did not start: ${message}`, 'Show Runtime Logs').then((choice) => {
          if (choice) this.log.show(true);
        });
      }
      return false;
    }
    const app = ready.apps[0]!;
    this.running = {
      baseUrl: ready.url, appId: app.appId, appDir: app.appDir, dataDir: app.dataDir, attached: false, admin: ready.admin, adminAppPath: app.adminAppPath,
      ...(app.functionsInspector ? { functionsInspector: app.functionsInspector } : {}),
    };
    this.pool = new SessionPool(this.running);
    this.log.info(`Runtime ready: ${app.appId} at ${ready.url}${ready.warnings ? ` (${ready.warnings} warning(s) in the app's files)` : ''}`);
    this.setState({ kind: 'running', appId: app.appId, port: ready.port, url: ready.url, attached: false, debuggingFunctions: this.inspectFunctions });
    return true;
  }

  private writeLog(level: RuntimeLogLevel, message: string): void {
    switch (level) {
      case 'trace': this.log.trace(message); break;
      case 'debug': this.log.debug(message); break;
      case 'info': this.log.info(message); break;
      case 'warn': this.log.warn(message); break;
      case 'error': this.log.error(message); break;
    }
  }

  private crashed(appName: string, description: string, lastLines: string[]): void {
    this.process = undefined;
    this.running = undefined;
    this.pool = undefined;
    this.log.error(`The runtime for ${appName} stopped: ${description}`);
    this.setState({ kind: 'crashed', appName, description, lastLines });
    void vscode.window.showErrorMessage(`App Services: the runtime for ${appName} stopped: ${description}.`, 'Restart', 'Show Runtime Logs').then((choice) => {
      if (choice === 'Restart') void this.restart();
      if (choice === 'Show Runtime Logs') this.log.show(true);
    });
  }

  stop(): Promise<void> {
    return this.serialize(() => this.stopNow());
  }

  private async stopNow(): Promise<void> {
    const running = this.process;
    this.process = undefined;
    this.running = undefined;
    this.pool = undefined;
    if (running) {
      this.log.info('Stopping the runtime');
      await running.stop();
      this.log.info('Runtime stopped');
    }
    this.setState({ kind: 'stopped' });
  }

  async restart(): Promise<boolean> {
    const appDir = this.running?.appDir;
    await this.stop();
    return this.start(appDir);
  }

  /** Talks to a runtime started elsewhere (`npm start` in a terminal); no admin session, so no admin-only features. */
  async attach(url: string, appId: string): Promise<boolean> {
    const baseUrl = url.replace(/\/+$/, '');
    const response = await fetch(`${baseUrl}${CLIENT_API}${routePath(CLIENT_ROUTES.location, { appId })}`).catch((e: Error) => e);
    if (response instanceof Error || !response.ok) {
      const why = response instanceof Error ? response.message : `HTTP ${response.status}`;
      void vscode.window.showErrorMessage(`App Services: no runtime serving app ${appId} answers at ${baseUrl} (${why}). Check the URL printed by "asl serve".`);
      return false;
    }
    await this.stop();
    const port = Number(new URL(baseUrl).port) || 80;
    this.running = { baseUrl, appId, attached: true };
    this.pool = new SessionPool(this.running);
    this.log.info(`Attached to ${appId} at ${baseUrl}`);
    this.setState({ kind: 'running', appId, port, url: baseUrl, attached: true });
    return true;
  }

  /** Deletes the app's data folder (documents, users, sessions), with the runtime stopped. */
  async clearLocalData(): Promise<void> {
    const appDir = this.running?.appDir ?? await this.chooseApp();
    if (!appDir) return;
    const dataFolder = vscode.workspace.getConfiguration('appServicesLocal.runtime', vscode.Uri.file(appDir)).get<string>('dataFolder', '').trim();
    const dataDir = this.running?.dataDir ?? path.resolve(appDir, dataFolder || '.asl');
    if (!fs.existsSync(dataDir)) {
      void vscode.window.showInformationMessage(`App Services: ${dataDir} does not exist; there is no local data to clear.`);
      return;
    }
    const choice = await vscode.window.showWarningMessage(
      `Delete the local data of ${path.basename(appDir)}? This removes ${dataDir} (documents, users, sessions). The app's files are not touched.`,
      { modal: true }, 'Delete Local Data');
    if (choice !== 'Delete Local Data') return;
    const wasRunning = this.state.kind === 'running' && !this.running?.attached;
    if (wasRunning) await this.stop();
    await fs.promises.rm(dataDir, { recursive: true, force: true });
    this.log.info(`Deleted ${dataDir}`);
    void vscode.window.showInformationMessage(`App Services: deleted the local data of ${path.basename(appDir)}.`);
    if (wasRunning) await this.start(appDir);
  }

  /** The running target, starting the runtime first when the user agrees (lazy start). */
  async ensureRunning(): Promise<RunningTarget | undefined> {
    if (this.state.kind === 'running' && this.running) return this.running;
    if (this.state.kind === 'starting') {
      await this.transition;
      return this.running;
    }
    const started = await this.start();
    return started ? this.running : undefined;
  }

  dispose(): void {
    void this.process?.stop();
    this.changed.dispose();
  }
}
