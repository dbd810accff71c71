// Debugging functions in the editor: "App Services: Debug Functions" and launch configurations of type
// `app-services` (F5) restart the runtime with `--inspect-functions` and attach VS Code's Node debugger to
// the app's function inspector. When the runtime or the function process restarts (new inspector address)
// the debugger attaches again; when the developer stops the debug session, debugging is turned off (the
// runtime restarts without it). The status bar item says while it is on (runtimeStatus.ts).
import * as vscode from 'vscode';
import {
  APP_SERVICES_DEBUG_TYPE, checkLaunchConfiguration, defaultLaunchConfiguration, functionsDebugConfiguration,
  FUNCTIONS_DEBUG_SESSION_NAME, type FunctionsDebugConfiguration,
} from './functionsDebugConfig';
import { afterFunctionsSessionEnded, inspectorReachable } from './functionsReattach';
import type { RuntimeController } from './runtimeController';

/** Time for the runtime to announce a new inspector before a session's end is judged (functionsReattach.ts). */
const SETTLE_MS = 300;

export class FunctionsDebugger implements vscode.Disposable, vscode.DebugConfigurationProvider {
  /** The top-level attach session, while attached. */
  private session: vscode.DebugSession | undefined;
  /** The inspector address the current (or starting) session attaches to. */
  private attachedUrl: string | undefined;
  /** Debugging is wanted: from a start until the developer stops the session (it survives restarts). */
  private wanted = false;
  /** How sessions are named and where: those of the last start (the command's, or a launch configuration's). */
  private sessionName = FUNCTIONS_DEBUG_SESSION_NAME;
  private folder: vscode.WorkspaceFolder | undefined;
  /** Sessions this class stops itself to attach again: their end is no request to stop debugging. */
  private readonly replaced = new WeakSet<vscode.DebugSession>();
  private readonly started = new vscode.EventEmitter<vscode.DebugSession>();
  private reattaching: Promise<unknown> = Promise.resolve();
  private readonly subscriptions: vscode.Disposable[] = [this.started];

  constructor(private readonly runtime: RuntimeController, private readonly log: vscode.LogOutputChannel) {
    this.subscriptions.push(
      vscode.debug.onDidStartDebugSession((session) => {
        if (session.parentSession || session.configuration.websocketAddress !== this.attachedUrl || !this.attachedUrl) return;
        this.session = session;
        this.started.fire(session);
      }),
      vscode.debug.onDidTerminateDebugSession((ended) => {
        if (ended !== this.session) return;
        this.session = undefined;
        if (!this.replaced.has(ended)) void this.sessionEnded(ended.configuration.websocketAddress as string | undefined);
      }),
      runtime.onDidChange(() => this.runtimeChanged()),
    );
  }

  /** The debug session attached to the functions, if any. */
  get activeSession(): vscode.DebugSession | undefined { return this.session; }

  /** "App Services: Debug Functions": starts (or restarts) debugging; resolves with whether a debug session is attached. */
  async start(): Promise<boolean> {
    const config = await this.prepare(FUNCTIONS_DEBUG_SESSION_NAME, undefined, undefined);
    if (!config) return false;
    const attached = this.nextSession();
    if (!(await vscode.debug.startDebugging(this.folder, config))) {
      await this.turnOff();
      return false;
    }
    return Boolean(await attached);
  }

  /**
   * A launch configuration of type `app-services` (F5): the runtime restarts with the inspector, and the
   * configuration becomes the Node attach one (VS Code then resolves it as js-debug's own), or undefined
   * (nothing starts) when the runtime cannot debug functions, with the reason shown.
   */
  async resolveDebugConfiguration(folder: vscode.WorkspaceFolder | undefined, config: vscode.DebugConfiguration): Promise<vscode.DebugConfiguration | undefined> {
    // F5 with no launch.json, with this debugger picked.
    const given = config.type ? config : { ...defaultLaunchConfiguration(), ...config };
    const checked = checkLaunchConfiguration(given, folder?.uri.fsPath);
    if ('error' in checked) {
      void vscode.window.showErrorMessage(`App Services: the launch configuration "${String(given.name ?? APP_SERVICES_DEBUG_TYPE)}" cannot start: ${checked.error}`);
      return undefined;
    }
    if (checked.appDir && !(await this.runtime.appFolders()).includes(checked.appDir)) {
      void vscode.window.showErrorMessage(`App Services: the launch configuration "${checked.name}" names ${checked.appDir}, which is no app folder of this workspace (none of realm_config.json, root_config.json or stitch.json there)`);
      return undefined;
    }
    return this.prepare(checked.name, checked.appDir, folder);
  }

  /** Restarts the runtime with the inspector; the attach configuration, or undefined (the reason shown, debugging off). */
  private async prepare(name: string, appDir: string | undefined, folder: vscode.WorkspaceFolder | undefined): Promise<FunctionsDebugConfiguration | undefined> {
    this.wanted = false;
    if (this.session) {
      this.replaced.add(this.session);
      await vscode.debug.stopDebugging(this.session);
      this.session = undefined;
    }
    const wasRunning = this.runtime.current.kind === 'running';
    const previousApp = this.runtime.target?.attached ? undefined : this.runtime.target?.appDir;
    if (!(await this.runtime.setFunctionsDebugging(true, appDir))) {
      // The runtime said why (a Node without --allow-inspector among the reasons); leave it as it was.
      await this.runtime.setFunctionsDebugging(false);
      if (wasRunning) await this.runtime.start(previousApp);
      return undefined;
    }
    const target = this.runtime.target;
    if (!target?.functionsInspector || !target.appDir) {
      void vscode.window.showErrorMessage('App Services: the runtime gave no function inspector to attach to (see the runtime logs)');
      await this.runtime.setFunctionsDebugging(false);
      return undefined;
    }
    this.wanted = true;
    this.sessionName = name;
    this.folder = folder ?? vscode.workspace.getWorkspaceFolder(vscode.Uri.file(target.appDir));
    this.attachedUrl = target.functionsInspector;
    return functionsDebugConfiguration(target.functionsInspector, target.appDir, name);
  }

  /** The next top-level session on `attachedUrl`, or undefined when none starts within 30 s. */
  private nextSession(): Promise<vscode.DebugSession | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => { listening.dispose(); resolve(undefined); }, 30_000);
      const listening = this.started.event((session) => { clearTimeout(timer); listening.dispose(); resolve(session); });
    });
  }

  /** The runtime changed: a new inspector address while debugging is wanted means attach there. */
  private runtimeChanged(): void {
    if (!this.wanted || !this.runtime.debuggingFunctions || this.runtime.current.kind !== 'running') return;
    const url = this.runtime.target?.functionsInspector;
    if (!url || url === this.attachedUrl) return;
    this.reattaching = this.reattaching.then(() => this.reattach(), () => this.reattach());
  }

  private async reattach(): Promise<void> {
    const target = this.runtime.target;
    const url = target?.functionsInspector;
    if (!this.wanted || !url || !target.appDir || url === this.attachedUrl) return;
    if (this.session) {
      this.replaced.add(this.session);
      await vscode.debug.stopDebugging(this.session);
      this.session = undefined;
    }
    this.attachedUrl = url;
    this.log.info('The function inspector has a new address (the runtime or the function process started again): attaching the debugger again');
    const attached = this.nextSession();
    if (!(await vscode.debug.startDebugging(this.folder, functionsDebugConfiguration(url, target.appDir, this.sessionName))) || !(await attached)) {
      this.log.warn('The debugger did not attach again: run "App Services: Debug Functions"');
    }
  }

  /** Our session ended without this class asking: the developer stopped it, or its target went away. */
  private async sessionEnded(endedUrl: string | undefined): Promise<void> {
    if (!this.wanted) return;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    if (this.session) return; // attached again meanwhile
    const decision = afterFunctionsSessionEnded({
      endedUrl, currentUrl: this.runtime.target?.functionsInspector, runtime: this.runtime.current.kind,
      inspectorReachable: await inspectorReachable(endedUrl),
    });
    if (decision === 'end') await this.turnOff();
    else if (decision === 'reattach') this.runtimeChanged();
    else this.log.info('The function inspector went away: the debugger attaches again when the runtime announces the next one');
  }

  private async turnOff(): Promise<void> {
    this.wanted = false;
    this.attachedUrl = undefined;
    if (this.runtime.debuggingFunctions) await this.runtime.setFunctionsDebugging(false);
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
  }
}
