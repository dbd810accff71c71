// What to do when the functions debug session ends, without `vscode` (plain Node tests check it). A Node
// attach session ends both when the developer stops it and when its target goes away: the runtime
// restarted, or the app's function process did (it had crashed, or was stopped), each time with a new
// inspector address. Only the first turns debugging off; after the others the debugger attaches again.
import net from 'node:net';

export type AfterFunctionsSessionEnd =
  /** The developer stopped the session: debugging ends. */
  | 'end'
  /** Its target went away: attach again once the runtime announces the next inspector (or now, to `url`). */
  | 'wait'
  | 'reattach';

export interface FunctionsSessionEnd {
  /** The inspector the ended session was attached to. */
  endedUrl: string | undefined;
  /** The inspector the runtime announces now, if any. */
  currentUrl: string | undefined;
  runtime: 'running' | 'starting' | 'stopped' | 'crashed' | 'failed';
  /** Whether the ended session's inspector port still accepts connections. */
  inspectorReachable: boolean;
}

export function afterFunctionsSessionEnded(end: FunctionsSessionEnd): AfterFunctionsSessionEnd {
  // A restart is on its way: the new address comes with it.
  if (end.runtime === 'starting') return 'wait';
  if (end.runtime === 'running' && end.currentUrl && end.currentUrl !== end.endedUrl) return 'reattach';
  // The inspector still listens at the same address: nothing went away, so the developer stopped the session.
  if (end.runtime === 'running' && end.inspectorReachable && end.currentUrl === end.endedUrl) return 'end';
  // The function process (or the whole runtime) is gone; a stopped runtime started again debugs again.
  return end.runtime === 'failed' ? 'end' : 'wait';
}

/** Whether something accepts TCP connections at the host and port of an inspector's `ws://` address. */
export function inspectorReachable(url: string | undefined, timeoutMs = 1000): Promise<boolean> {
  if (!url) return Promise.resolve(false);
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const done = (up: boolean) => { socket.destroy(); resolve(up); };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
