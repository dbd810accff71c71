// The status bar item: server state and the apps the server loaded. Clicking it shows the output.
import * as vscode from 'vscode';
import type { StatusParams } from '../core/protocol';
import { describeStatus } from './status';
import type { ServerState } from './status';

export class ServerStatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private server: ServerState = 'starting';
  private workspace: StatusParams | undefined;

  constructor(clickCommand: string) {
    this.item = vscode.window.createStatusBarItem('appServicesLocal.status', vscode.StatusBarAlignment.Left, 0);
    this.item.name = 'App Services Local';
    this.item.command = clickCommand;
    this.render();
    this.item.show();
  }

  setServerState(server: ServerState): void {
    this.server = server;
    // A server that is not running has no apps loaded; the next one reports its own.
    if (server !== 'running') this.workspace = undefined;
    this.render();
  }

  setWorkspaceStatus(workspace: StatusParams): void {
    this.workspace = workspace;
    this.render();
  }

  dispose(): void {
    this.item.dispose();
  }

  private render(): void {
    const view = describeStatus(this.server, this.workspace);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.isError ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }
}
