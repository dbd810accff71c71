// What the runtime's status bar item says in each state. No `vscode` imports: plain Node tests check the words.

export type RuntimeState =
  | { kind: 'stopped' }
  | { kind: 'starting'; appName: string }
  | { kind: 'running'; appId: string; port: number; url: string; attached: boolean; debuggingFunctions?: boolean }
  | { kind: 'crashed'; appName: string; description: string; lastLines: string[] }
  | { kind: 'failed'; appName: string; message: string };

export interface RuntimeStatusView {
  /** `$(name)` is a codicon. */
  text: string;
  tooltip: string;
  isError: boolean;
}

const TOOLTIP_LINES = 12;

export function describeRuntimeStatus(state: RuntimeState): RuntimeStatusView {
  switch (state.kind) {
    case 'stopped':
      return { text: '$(debug-stop) App Services: stopped', tooltip: 'The app runtime is not running. Click for runtime actions (Start, Attach…).', isError: false };
    case 'starting':
      return { text: '$(sync~spin) App Services: starting', tooltip: `Starting the runtime for ${state.appName}…`, isError: false };
    case 'running':
      return {
        text: `${state.debuggingFunctions ? '$(debug-alt)' : '$(play-circle)'} ${state.appId} :${state.port}${state.debuggingFunctions ? ' (debugging functions)' : ''}`,
        tooltip: `${state.attached ? 'Attached to' : 'Running'} ${state.appId} at ${state.url}.${state.debuggingFunctions ? ' Functions are being debugged: breakpoints in functions/*.js stop their calls, which have no time limit meanwhile; stop the debug session to end it.' : ''} Click for runtime actions (Open in Browser, Restart, Stop, Logs…).`,
        isError: false,
      };
    case 'crashed': {
      const lines = state.lastLines.slice(-TOOLTIP_LINES);
      return {
        text: '$(error) App Services: crashed',
        tooltip: `The runtime for ${state.appName} stopped: ${state.description}.${lines.length ? `\nLast log lines:\n${lines.join('\n')}` : ''}\nClick to restart it or see its logs.`,
        isError: true,
      };
    }
    case 'failed':
      return {
        text: '$(error) App Services: start failed',
        tooltip: `The runtime for ${state.appName} did not start: ${state.message}\nClick for runtime actions.`,
        isError: true,
      };
  }
}
