// What Node's permission model leaves to code in the function process that reaches beyond the process or
// its permission model: taken away in each of its threads before any function code runs there. Each thread
// has its own instances of the modules, so the powers go from the modules themselves; each replacement is
// non-configurable and non-writable, so code that reaches the thread's modules cannot put the original back
// (it never holds the original: function code runs only after this).
import childProcess from 'node:child_process';
import fs from 'node:fs';
import inspector from 'node:inspector';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import workerThreads from 'node:worker_threads';

function refused(what: string): () => never {
  return () => {
    throw Object.assign(new Error(`${what} is not available to functions`), { code: 'ERR_ACCESS_DENIED' });
  };
}

/** Replaces `target[name]` for good (a refusal unless `value` is given). */
function seal(target: object, name: string, what: string, value: unknown = refused(what)): void {
  Object.defineProperty(target, name, { value, writable: false, configurable: false, enumerable: false });
}

/**
 * Call once per thread, after the thread's own setup (a worker lowers its priority first). `functionThread`:
 * the thread runs function code (a worker), which also loses what starts threads or processes and the
 * host realm's function constructors; the function process's main thread (the agent) starts the workers.
 */
export function lockDown(options: { functionThread: boolean } = { functionThread: false }): void {
  // Signals and priorities reach every process of the user (the runtime, the editor): a function could
  // stop the runtime or slow it down for good (`os.setPriority(runtimePid, 19)` cannot be undone unprivileged).
  for (const name of ['kill', '_kill']) delete (process as unknown as Record<string, unknown>)[name];
  // `_debugProcess(pid)` signals another process to open its inspector (the runtime's, which has no
  // permission model): as far-reaching as a kill.
  for (const name of ['_debugProcess', '_debugEnd']) seal(process, name, `process.${name}`);
  seal(os, 'setPriority', 'os.setPriority');
  if (options.functionThread) lockDownFunctionThread();
  // Node 20's realpathSync (the JavaScript one; the native one is checked) answers for paths the process
  // may not read: whether any file exists, and where a link points. The module loader resolves packages
  // through it, so it stays, for what the process may read.
  const permission = (process as unknown as { permission?: { has(scope: string, reference?: string): boolean } }).permission;
  if (!permission) return;
  const realpathSync = fs.realpathSync;
  const checked = ((target: fs.PathLike, options?: unknown) => {
    const asked = path.resolve(target instanceof URL ? target.pathname : String(target));
    if (!permission.has('fs.read', asked)) refused(`reading ${asked}`)();
    const real = realpathSync(target, options as fs.EncodingOption);
    if (!permission.has('fs.read', String(real))) refused(`reading ${asked}`)();
    return real;
  }) as typeof fs.realpathSync;
  checked.native = realpathSync.native;
  Object.defineProperty(fs, 'realpathSync', { value: checked, writable: false, configurable: false });
}

/**
 * A worker thread's second wall, for code that got out of its vm context anyway:
 * - no thread: a `Worker` given `execArgv` (even `[]`) runs without the permission model in every Node
 *   version this runs on (the model does not carry into it), so `worker_threads.Worker` goes; the worker
 *   itself is also started with a permission model of its own that does not allow workers (process.ts);
 * - no inspector: its module's `open`, `url`, and sessions (`connect`, `connectToMainThread`; the
 *   promise API's Session inherits them), allowed by the thread's model while debugging;
 * - no process, addon or binding: `child_process`'s functions, `process.binding`, `process._linkedBinding`,
 *   `process.dlopen`, `process.execve` (newer Node), and `process.getBuiltinModule`, the way to every
 *   module without `require`; `v8.setFlagsFromString` (it would change how later code is compiled);
 * - no compiler of host-realm code: the host realm's `Function`, `AsyncFunction`, `GeneratorFunction` and
 *   `AsyncGeneratorFunction` are reachable from any host object as `.constructor.constructor`, and
 *   `Function('return process')()` is how function code reached `process`: their prototypes' `constructor`
 *   now refuses (the global bindings stay for this thread's own code; function code never sees this realm's
 *   global object). `Error.prepareStackTrace` of this realm stays unset: function code could otherwise
 *   install one through a host error's constructor and see the call sites of host errors.
 */
function lockDownFunctionThread(): void {
  seal(workerThreads, 'Worker', 'worker_threads.Worker');
  for (const name of ['exec', 'execFile', 'execFileSync', 'execSync', 'fork', 'spawn', 'spawnSync']) seal(childProcess, name, `child_process.${name}`);
  // While debugging, the thread's permission model allows the inspector (Node debugs no worker otherwise):
  // code that connected a session to its own thread or to the process's main thread (which starts
  // workers) could run anything there. The debugger attaches from outside and needs none of these.
  for (const name of ['open', 'close', 'url', 'waitForDebugger']) seal(inspector, name, `inspector.${name}`);
  for (const name of ['connect', 'connectToMainThread']) seal(inspector.Session.prototype, name, `inspector.Session.${name}`);
  // The modules' ESM namespaces (`import('node:worker_threads')`) follow their CommonJS exports.
  syncBuiltinESMExports();
  for (const name of ['binding', '_linkedBinding', 'dlopen', 'execve', 'getBuiltinModule']) seal(process, name, `process.${name}`);
  seal(v8, 'setFlagsFromString', 'v8.setFlagsFromString');
  const constructors = [
    Function.prototype,
    Object.getPrototypeOf(async function () {}) as object,
    Object.getPrototypeOf(function* () {}) as object,
    Object.getPrototypeOf(async function* () {}) as object,
  ];
  for (const prototype of constructors) {
    const stub = refused('compiling code in the host realm');
    // Named as the original, which is how util.inspect names functions (`[AsyncFunction: f]`).
    Object.defineProperty(stub, 'name', { value: (prototype as { constructor: { name: string } }).constructor.name });
    seal(prototype, 'constructor', '', stub);
  }
  Object.defineProperty(Error, 'prepareStackTrace', { value: undefined, writable: false, configurable: false });
}
