// The debug configuration "App Services: Debug Functions" starts: VS Code's Node debugger (js-debug)
// attached to the function inspector's WebSocket, which follows the worker threads functions run on.
// No `vscode` import: plain Node tests check it. The same configuration works in launch.json with the
// address `asl serve --inspect-functions` prints.

/** The debug session's name, by which the extension knows its own session when it ends. */
export const FUNCTIONS_DEBUG_SESSION_NAME = 'App Services: Functions';

export interface FunctionsDebugConfiguration {
  type: 'node';
  request: 'attach';
  name: string;
  websocketAddress: string;
  /** Stepping skips the runtime's worker and Node's own code: a step goes from function code to function code. */
  skipFiles: string[];
  /** Breakpoints in the app's files: js-debug resolves sources under this folder. */
  cwd: string;
  /** Workers that start while attached wait for the debugger, which lets them go on once breakpoints are set. */
  continueOnAttach: boolean;
}

export function functionsDebugConfiguration(inspectorAddress: string, appDir: string): FunctionsDebugConfiguration {
  if (!/^ws:\/\/127\.0\.0\.1:\d{1,5}\/[0-9a-f-]{36}$/.test(inspectorAddress)) throw new Error(`not a function inspector's address: ${inspectorAddress}`);
  return {
    type: 'node', request: 'attach', name: FUNCTIONS_DEBUG_SESSION_NAME, websocketAddress: inspectorAddress,
    skipFiles: ['<node_internals>/**', '**/dist/function-worker.js', '**/dist/function-process.js'], cwd: appDir, continueOnAttach: true,
  };
}
