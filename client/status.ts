// What the status bar item says, from the client's view of the server process and the server's own
// status notification. No `vscode` imports: the extension maps this onto a StatusBarItem, and plain
// Node tests check the wording.
import type { AppSummary, StatusParams } from '../core/protocol';

/** The language client's view of the server process. */
export type ServerState = 'starting' | 'running' | 'stopped';

export interface StatusView {
  /** Status bar text; `$(name)` is a codicon. */
  text: string;
  tooltip: string;
  /** Stopped is the one state that needs the user's attention. */
  isError: boolean;
}

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : 's'}`;
}

export function appCountLabel(apps: number): string {
  return apps === 0 ? 'no apps' : plural(apps, 'app');
}

function describeApp(app: AppSummary): string {
  return `${app.name} (${app.root}): ${plural(app.errors, 'error')}, ${plural(app.warnings, 'warning')}`;
}

/** `workspace` is the server's latest status notification, undefined until the running server sent one. */
export function describeStatus(server: ServerState, workspace: StatusParams | undefined): StatusView {
  if (server === 'stopped') {
    return {
      text: '$(error) App Services: server stopped',
      tooltip: 'The App Services language server is not running. Click to show its output; run "App Services: Restart Language Server" to start it again.',
      isError: true,
    };
  }
  if (server === 'starting') {
    return { text: '$(sync~spin) App Services: starting', tooltip: 'The App Services language server is starting.', isError: false };
  }
  if (workspace === undefined || workspace.state === 'loading') {
    return { text: '$(sync~spin) App Services: loading apps', tooltip: 'The App Services language server is loading the apps of the workspace.', isError: false };
  }
  const apps = workspace.apps.length === 0
    ? 'No app root (realm_config.json, root_config.json, stitch.json) in the workspace.'
    : workspace.apps.map(describeApp).join('\n');
  // The icon and the count say whether the apps have problems: a check mark only when they have none.
  const errors = workspace.apps.reduce((n, app) => n + app.errors, 0);
  const warnings = workspace.apps.reduce((n, app) => n + app.warnings, 0);
  const problems = errors > 0 ? `$(error) App Services: ${appCountLabel(workspace.apps.length)}, ${plural(errors, 'error')}`
    : warnings > 0 ? `$(warning) App Services: ${appCountLabel(workspace.apps.length)}, ${plural(warnings, 'warning')}`
      : `$(check) App Services: ${appCountLabel(workspace.apps.length)}`;
  return {
    text: problems,
    tooltip: `${apps}\nClick to show the language server's output.`,
    isError: false,
  };
}
