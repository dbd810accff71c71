// "App Services: Debug Functions": restarts the runtime with `--inspect-functions`, attaches VS Code's Node
// debugger to the app's function inspector, and turns debugging off (restarting the runtime without it)
// when that debug session ends. The status bar item says while it is on (runtimeStatus.ts).
import * as vscode from 'vscode';
import { FUNCTIONS_DEBUG_SESSION_NAME, functionsDebugConfiguration } from './functionsDebugConfig';
import type { RuntimeController } from './runtimeController';

export class FunctionsDebugger implements vscode.Disposable {
  private session: vscode.DebugSession | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly runtime: RuntimeController) {
    this.subscriptions.push(vscode.debug.onDidTerminateDebugSession((ended) => {
      if (ended !== this.session) return;
      this.session = undefined;
      if (this.runtime.debuggingFunctions) void this.runtime.setFunctionsDebugging(false);
    }));
  }

  /** Starts (or restarts) debugging; resolves with whether a debug session is attached. */
  async start(): Promise<boolean> {
    if (this.session) await vscode.debug.stopDebugging(this.session);
    this.session = undefined;
    if (!(await this.runtime.setFunctionsDebugging(true))) return false;
    const target = this.runtime.target;
    if (!target?.functionsInspector || !target.appDir) {
      void vscode.window.showErrorMessage('App Services: the runtime gave no function inspector to attach to (see the runtime logs)');
      await this.runtime.setFunctionsDebugging(false);
      return false;
    }
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(target.appDir));
    const started = new Promise<vscode.DebugSession>((resolve) => {
      const listening = vscode.debug.onDidStartDebugSession((session) => {
        if (session.name !== FUNCTIONS_DEBUG_SESSION_NAME) return;
        listening.dispose();
        resolve(session);
      });
      this.subscriptions.push(listening);
    });
    if (!(await vscode.debug.startDebugging(folder, functionsDebugConfiguration(target.functionsInspector, target.appDir)))) {
      await this.runtime.setFunctionsDebugging(false);
      return false;
    }
    this.session = await started;
    return true;
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
  }
}
