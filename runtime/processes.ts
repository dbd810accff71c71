// Whether a process still runs, for files a process leaves behind (runtime records, store locks, function
// sockets). A leaf: Node's `process` only, so the function process's bundle may take it too.

/** Whether process `pid` runs (under any user: EPERM means it exists). */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
