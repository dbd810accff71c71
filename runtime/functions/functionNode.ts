// Which Node runs an app's function process, and what its permission model offers. Normally the runtime's
// own; while debugging (asl serve --inspect-functions) it must be one whose permission model has
// --allow-inspector (Node 24 and later). A runtime on an older Node (Node 20/22, or the editor's Electron)
// then starts the function process with another Node: the one named (--functions-node), else the first
// suitable `node` on PATH. The sandbox is the same either way: the flags are that Node's own.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface FunctionNode {
  execPath: string;
  /** Its `process.versions.node`. */
  version: string;
  /** Node 20 names the permission model `--experimental-permission`; later versions `--permission`. */
  permissionFlag: '--permission' | '--experimental-permission';
  /** Whether its permission model also covers the network (Node 25), which functions then need granted. */
  allowNet: boolean;
  /** Whether its permission model can grant the inspector (Node 24 and later): needed to debug functions. */
  allowInspector: boolean;
}

const FLAGS = ['--permission', '--allow-net', '--allow-inspector'] as const;

function nodeOf(execPath: string, version: string, has: (flag: string) => boolean): FunctionNode {
  return {
    execPath, version, permissionFlag: has('--permission') ? '--permission' : '--experimental-permission',
    allowNet: has('--allow-net'), allowInspector: has('--allow-inspector'),
  };
}

/** The Node this process runs on. */
export function currentNode(): FunctionNode {
  return nodeOf(process.execPath, process.versions.node, (flag) => process.allowedNodeEnvironmentFlags.has(flag));
}

const PROBE = `process.stdout.write(JSON.stringify({ version: process.versions.node, flags: ${JSON.stringify(FLAGS)}.filter((f) => process.allowedNodeEnvironmentFlags.has(f)) }))`;

/** Asks the binary at `execPath` which Node it is (it runs with an empty environment, for at most 10 s). */
export function probeNode(execPath: string): FunctionNode | { error: string } {
  if (!path.isAbsolute(execPath)) return { error: `${execPath} is not an absolute path` };
  if (!fs.existsSync(execPath)) return { error: `${execPath} does not exist` };
  const run = spawnSync(execPath, ['-e', PROBE], {
    encoding: 'utf8', timeout: 10_000, windowsHide: true,
    // An Electron binary (an editor's) answers as Node only with this; Node ignores it.
    env: { ELECTRON_RUN_AS_NODE: '1', ...(process.platform === 'win32' && process.env.SystemRoot ? { SystemRoot: process.env.SystemRoot } : {}) },
  });
  if (run.error) return { error: `${execPath} could not run: ${run.error.message}` };
  try {
    const answer = JSON.parse(run.stdout) as { version?: unknown; flags?: unknown };
    if (typeof answer.version !== 'string' || !Array.isArray(answer.flags)) throw new Error('unexpected answer');
    const flags = new Set(answer.flags);
    return nodeOf(execPath, answer.version, (flag) => flags.has(flag));
  } catch {
    return { error: `${execPath} is not a Node binary (it did not answer as one; exit ${run.status ?? run.signal})` };
  }
}

/** `node` in each folder of a PATH value, in order, without duplicates. */
export function nodesOnPath(pathValue: string | undefined, platform: NodeJS.Platform = process.platform): string[] {
  const name = platform === 'win32' ? 'node.exe' : 'node';
  const found: string[] = [];
  for (const dir of (pathValue ?? '').split(platform === 'win32' ? ';' : ':')) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    if (!found.includes(candidate) && fs.existsSync(candidate)) found.push(candidate);
  }
  return found;
}

export const DEBUG_NODE_HINT = 'install Node 24 or later and put it on PATH, or name one with --functions-node PATH (in VS Code: the setting appServicesLocal.runtime.functionsNodePath)';

/**
 * The Node to run function processes on while debugging: `named` when given (it must have --allow-inspector),
 * else this process's own when it can, else the first `node` on PATH that can; or why there is none.
 */
export function findDebugNode(options: { named?: string; pathValue?: string; current?: FunctionNode; probe?: (execPath: string) => FunctionNode | { error: string } }): FunctionNode | { error: string } {
  const probe = options.probe ?? probeNode;
  const current = options.current ?? currentNode();
  const cannot = (node: FunctionNode) => `${node.execPath} is Node ${node.version}, whose permission model has no --allow-inspector (Node 24 or later has it)`;
  if (options.named) {
    const named = probe(options.named);
    if ('error' in named) return { error: `--functions-node: ${named.error}` };
    return named.allowInspector ? named : { error: `--functions-node: ${cannot(named)}` };
  }
  if (current.allowInspector) return current;
  const tried: string[] = [];
  for (const candidate of nodesOnPath(options.pathValue)) {
    if (samePath(candidate, current.execPath)) continue;
    const found = probe(candidate);
    if (!('error' in found) && found.allowInspector) return found;
    tried.push('error' in found ? found.error : `${candidate} is Node ${found.version}`);
  }
  return {
    error: `debugging functions needs a Node whose permission model has --allow-inspector (Node 24 or later): the runtime runs on Node ${current.version}, `
      + `and ${tried.length ? `PATH has no such Node (${tried.join('; ')})` : 'no other node is on PATH'}; ${DEBUG_NODE_HINT}`,
  };
}

function samePath(a: string, b: string): boolean {
  try {
    return fs.realpathSync(a) === fs.realpathSync(b);
  } catch {
    return a === b;
  }
}
