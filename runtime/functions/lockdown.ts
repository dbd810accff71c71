// What Node's permission model leaves to code in the function process that reaches beyond the process:
// taken away in each of its threads before any function code runs there. Function code that leaves its vm
// context finds the thread's `process` and can require any built-in, so the powers go from the modules
// themselves (each thread has its own instances).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function refused(what: string): () => never {
  return () => {
    throw Object.assign(new Error(`${what} is not available to functions`), { code: 'ERR_ACCESS_DENIED' });
  };
}

/** Call once per thread, after the thread's own setup (a worker lowers its priority first). */
export function lockDown(): void {
  // Signals and priorities reach every process of the user (the runtime, the editor): a function could
  // stop the runtime or slow it down for good (`os.setPriority(runtimePid, 19)` cannot be undone unprivileged).
  for (const name of ['kill', '_kill']) delete (process as unknown as Record<string, unknown>)[name];
  Object.defineProperty(os, 'setPriority', { value: refused('os.setPriority'), writable: false, configurable: false });
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
