// A TCP proxy on 127.0.0.1 that puts a bad network between a client and `dist/cli.js serve` for the
// reliability suite: added latency and jitter, a bandwidth cap, a connection cut after N bytes (so mid-frame,
// with a FIN or a reset), a connection that stays open and passes nothing (half-open), and a listener that
// refuses new connections for a while. The faults of each connection are chosen when its first bytes
// arrive (the HTTP request line), so a test can keep logins clean and fault only the sync WebSockets.
import net from 'node:net';

export interface ConnectionFaults {
  /** Delay added to every chunk, each way, plus up to `jitterMs` more (order is kept). */
  latencyMs?: number;
  jitterMs?: number;
  /** Bytes per second each way; unlimited when absent. */
  bytesPerSecond?: number;
  /** After this many bytes (both ways together) the connection is cut, mid-chunk. */
  cutAfterBytes?: number;
  /** Cut with a TCP reset instead of a FIN. */
  reset?: boolean;
  /** After this many bytes (0: from the first) nothing more passes either way; the sockets stay open `holdMs`. */
  stallAfterBytes?: number;
  holdMs?: number;
}

export interface FaultProxyStats {
  connections: number;
  /** Connections reset at accept while refusing (most refused ones never reach the closed listener). */
  refused: number;
  /** Times `refuseFor` closed the listener. */
  refusals: number;
  cut: number;
  stalled: number;
  bytes: number;
}

interface Direction {
  queue: { at: number; data: Buffer }[];
  timer: NodeJS.Timeout | undefined;
  lastAt: number;
}

export class FaultProxy {
  readonly stats: FaultProxyStats = { connections: 0, refused: 0, refusals: 0, cut: 0, stalled: 0, bytes: 0 };
  private readonly open = new Set<net.Socket>();
  private refusingUntil = 0;
  private refuseTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Chooses the faults of a new connection from its first bytes; no faults by default. */
  choose: (firstBytes: Buffer) => ConnectionFaults = () => ({});

  private constructor(private server: net.Server, readonly port: number, public targetPort: number) {}

  /** Listens on a free loopback port and forwards to 127.0.0.1:`targetPort`. */
  static async start(targetPort: number): Promise<FaultProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', () => resolve()); });
    const proxy = new FaultProxy(server, (server.address() as net.AddressInfo).port, targetPort);
    proxy.attach(server);
    return proxy;
  }

  /**
   * New connections are refused (the listener is closed: ECONNREFUSED) for `ms`, then accepted again on the
   * same port. Connections already open are left as they are.
   */
  refuseFor(ms: number): void {
    if (this.closed) return;
    this.refusingUntil = Math.max(this.refusingUntil, Date.now() + ms);
    if (this.refuseTimer) return;
    this.stats.refusals++;
    this.server.close();
    const reopen = (): void => {
      const wait = this.refusingUntil - Date.now();
      if (wait > 0) { this.refuseTimer = setTimeout(reopen, wait); return; }
      this.refuseTimer = undefined;
      if (this.closed) return;
      const server = net.createServer();
      // The port was ours a moment ago; should another process have taken it, try again shortly.
      server.once('error', () => { this.refuseTimer = setTimeout(reopen, 50); });
      server.listen(this.port, '127.0.0.1', () => { this.server = server; this.attach(server); });
    };
    this.refuseTimer = setTimeout(reopen, ms);
  }

  /** Cuts every open connection (both sides) at once. */
  dropAll(): void {
    for (const socket of this.open) socket.destroy();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.refuseTimer);
    this.dropAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private attach(server: net.Server): void {
    server.on('connection', (client) => this.accept(client));
  }

  private track(socket: net.Socket): void {
    this.open.add(socket);
    socket.on('close', () => this.open.delete(socket));
    socket.on('error', () => undefined);
  }

  private accept(client: net.Socket): void {
    this.track(client);
    if (this.closed || Date.now() < this.refusingUntil) {
      this.stats.refused++;
      client.resetAndDestroy();
      return;
    }
    this.stats.connections++;
    client.once('data', (first: Buffer) => {
      client.pause();
      const faults = this.choose(first);
      const upstream = net.connect(this.targetPort, '127.0.0.1');
      this.track(upstream);
      const end = (): void => { client.destroy(); upstream.destroy(); };
      client.on('close', end);
      upstream.on('close', end);
      let passed = 0;
      let stalled = false;
      const stall = (): void => {
        stalled = true;
        this.stats.stalled++;
        setTimeout(end, faults.holdMs ?? 10_000).unref();
      };
      const cut = (): void => {
        this.stats.cut++;
        if (faults.reset) { client.resetAndDestroy(); upstream.resetAndDestroy(); } else end();
      };
      const forward = (to: net.Socket, from: net.Socket, dir: Direction) => (chunk: Buffer): void => {
        if (stalled) return;
        let data = chunk;
        if (faults.stallAfterBytes !== undefined && passed + data.length > faults.stallAfterBytes) {
          data = data.subarray(0, Math.max(0, faults.stallAfterBytes - passed));
          this.deliver(to, from, dir, data, faults);
          passed += data.length;
          stall();
          return;
        }
        if (faults.cutAfterBytes !== undefined && passed + data.length >= faults.cutAfterBytes) {
          const part = data.subarray(0, Math.max(0, faults.cutAfterBytes - passed));
          passed += part.length;
          // The part that fits goes out at once, then the cut: the peer sees a frame broken off.
          if (part.length > 0 && !to.destroyed) to.write(part);
          this.stats.bytes += part.length;
          setImmediate(cut);
          stalled = true;
          return;
        }
        passed += data.length;
        this.deliver(to, from, dir, data, faults);
      };
      const up: Direction = { queue: [], timer: undefined, lastAt: 0 };
      const down: Direction = { queue: [], timer: undefined, lastAt: 0 };
      client.on('data', forward(upstream, client, up));
      upstream.on('data', forward(client, upstream, down));
      upstream.once('connect', () => {
        if (faults.stallAfterBytes === 0) { stall(); return; }
        forward(upstream, client, up)(first);
        client.resume();
      });
    });
  }

  /** Queues `data` for `to` after the latency, jitter and bandwidth of `faults`; the source pauses while much is queued. */
  private deliver(to: net.Socket, from: net.Socket, dir: Direction, data: Buffer, faults: ConnectionFaults): void {
    if (data.length === 0) return;
    this.stats.bytes += data.length;
    const delay = (faults.latencyMs ?? 0) + Math.random() * (faults.jitterMs ?? 0);
    const transfer = faults.bytesPerSecond ? (data.length / faults.bytesPerSecond) * 1000 : 0;
    if (delay === 0 && transfer === 0 && dir.queue.length === 0) {
      if (!to.write(data)) { from.pause(); to.once('drain', () => from.resume()); }
      return;
    }
    const at = Math.max(Date.now() + delay, dir.lastAt) + transfer;
    dir.lastAt = at;
    dir.queue.push({ at, data });
    if (dir.queue.length > 64) from.pause();
    const flush = (): void => {
      dir.timer = undefined;
      while (dir.queue.length > 0 && dir.queue[0]!.at <= Date.now()) {
        if (!to.destroyed) to.write(dir.queue.shift()!.data);
        else dir.queue.shift();
      }
      if (dir.queue.length <= 16 && from.isPaused()) from.resume();
      if (dir.queue.length > 0) dir.timer = setTimeout(flush, Math.max(1, dir.queue[0]!.at - Date.now()));
    };
    if (!dir.timer) dir.timer = setTimeout(flush, Math.max(1, dir.queue[0]!.at - Date.now()));
  }
}
