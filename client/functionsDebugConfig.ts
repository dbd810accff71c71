// The debug configurations of debugging functions, without `vscode` (plain Node tests check them):
// - the `node` attach configuration the extension starts: VS Code's Node debugger (js-debug) attached to
//   the function inspector's WebSocket, which follows the worker threads functions run on (the same
//   configuration works in launch.json with the address `asl serve --inspect-functions` prints);
// - the `app-services` launch configuration (launch.json, F5): which app, checked, and what it resolves to.
import path from 'node:path';

/** The debug session's name when "App Services: Debug Functions" starts it. */
export const FUNCTIONS_DEBUG_SESSION_NAME = 'App Services: Functions';

/** The launch configuration type the extension contributes (package.json `contributes.debuggers`). */
export const APP_SERVICES_DEBUG_TYPE = 'app-services';

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

const INSPECTOR_ADDRESS = /^ws:\/\/127\.0\.0\.1:\d{1,5}\/[0-9a-f-]{36}$/;

export function functionsDebugConfiguration(inspectorAddress: string, appDir: string, name = FUNCTIONS_DEBUG_SESSION_NAME): FunctionsDebugConfiguration {
  if (!INSPECTOR_ADDRESS.test(inspectorAddress)) throw new Error(`not a function inspector's address: ${inspectorAddress}`);
  return {
    type: 'node', request: 'attach', name, websocketAddress: inspectorAddress,
    skipFiles: ['<node_internals>/**', '**/dist/function-worker.js', '**/dist/function-process.js'], cwd: appDir, continueOnAttach: true,
  };
}

/** What launch.json holds for `"type": "app-services"` (contributes.debuggers' configurationAttributes). */
export interface AppServicesLaunchConfiguration {
  type: typeof APP_SERVICES_DEBUG_TYPE;
  request: 'launch';
  name: string;
  /** The app folder (absolute, or relative to the workspace folder; `${workspaceFolder}` allowed). */
  app?: string;
}

/** The configuration "Add Configuration…" and an F5 without launch.json get. */
export function defaultLaunchConfiguration(): AppServicesLaunchConfiguration {
  return { type: APP_SERVICES_DEBUG_TYPE, request: 'launch', name: 'Debug App Services Functions' };
}

/**
 * A launch configuration checked: its name and the app folder it names (an absolute path, or undefined:
 * the app the runtime serves, else the workspace's), or what is wrong with it. `folder` is the workspace
 * folder launch.json belongs to. Whether the folder holds an app is the caller's check.
 */
export function checkLaunchConfiguration(config: Record<string, unknown>, folder: string | undefined): { name: string; appDir?: string } | { error: string } {
  const name = typeof config.name === 'string' && config.name.trim() ? config.name : defaultLaunchConfiguration().name;
  if (config.request !== undefined && config.request !== 'launch') return { error: `"request" must be "launch" (the runtime is started with the inspector), got ${JSON.stringify(config.request)}` };
  if (config.app === undefined) return { name };
  if (typeof config.app !== 'string' || !config.app.trim() || config.app.includes('\0')) return { error: `"app" must be the path of an app folder, got ${JSON.stringify(config.app)}` };
  let app = config.app.trim();
  if (app.includes('${workspaceFolder}')) {
    if (!folder) return { error: '"app" uses ${workspaceFolder}, but launch.json belongs to no workspace folder' };
    app = app.split('${workspaceFolder}').join(folder);
  }
  if (/\$\{[^}]*\}/.test(app)) return { error: `"app" may use \${workspaceFolder} only, got ${JSON.stringify(config.app)}` };
  if (!path.isAbsolute(app)) {
    if (!folder) return { error: `"app" is relative (${JSON.stringify(config.app)}), but launch.json belongs to no workspace folder` };
    return { name, appDir: path.resolve(folder, app) };
  }
  return { name, appDir: path.resolve(app) };
}
