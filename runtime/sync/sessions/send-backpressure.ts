// Backpressure on what a sync connection sends. A client that reads slowly, or stops reading its socket,
// would otherwise make the runtime queue every DOWNLOAD of every change for it in memory. Instead, while the
// socket holds more than a high-water mark, the connection makes no more DOWNLOADs (what the client has not
// had stays in the history, which the server keeps anyway) and goes on once it drained below a low-water
// mark; a client that takes in nothing for a long while is told so and disconnected, to resume on a new
// connection from the progress it has.

/** Bytes queued on a connection's socket above which no more DOWNLOADs are made for it. */
export const SEND_HIGH_WATER_BYTES = 1024 * 1024;
/** Below this the DOWNLOADs go on. */
export const SEND_LOW_WATER_BYTES = 256 * 1024;
/** A connection with bytes queued on its socket that has taken in none of them for this long is closed. */
export const STALLED_READER_MS = 15_000;
const CHECK_EVERY_MS = 50;

export interface SendBackpressureOptions {
  /** Bytes queued on the socket now (`ws.bufferedAmount`). */
  buffered: () => number;
  /** The socket drained: the held DOWNLOADs may go on. */
  onDrained: () => void;
  /** Nothing was taken in for `stalledMs` while above the mark. */
  onStalled: (bufferedBytes: number) => void;
  highWater?: number;
  lowWater?: number;
  stalledMs?: number;
  now?: () => number;
  setInterval?: (run: () => void, ms: number) => unknown;
  clearInterval?: (timer: unknown) => void;
}

export class SendBackpressure {
  private timer: unknown;
  private holding = false;
  private lastBuffered = 0;
  private lastProgressAt = 0;

  constructor(private readonly options: SendBackpressureOptions) {}

  /**
   * True while DOWNLOADs must wait: from the socket holding more than the high-water mark until it drained
   * below the low-water mark (`onDrained`).
   */
  blocked(): boolean {
    if (this.holding) return true;
    if (this.options.buffered() <= (this.options.highWater ?? SEND_HIGH_WATER_BYTES)) return false;
    this.holding = true;
    this.watch();
    return true;
  }

  /** After a send: bytes the kernel did not take are watched, so a client that stops reading is found below the mark too. */
  sent(): void {
    if (this.options.buffered() > 0) this.watch();
  }

  private watch(): void {
    if (this.timer !== undefined) return;
    this.lastBuffered = this.options.buffered();
    this.lastProgressAt = (this.options.now ?? Date.now)();
    const every = this.options.setInterval ?? ((run, ms) => setInterval(run, ms).unref());
    this.timer = every(() => this.check(), CHECK_EVERY_MS);
  }

  private check(): void {
    const buffered = this.options.buffered();
    const now = (this.options.now ?? Date.now)();
    // A slow reader takes some in now and then: only a reader that takes in nothing is stalled.
    if (buffered < this.lastBuffered) this.lastProgressAt = now;
    this.lastBuffered = buffered;
    if (this.holding && buffered <= (this.options.lowWater ?? SEND_LOW_WATER_BYTES)) {
      this.holding = false;
      this.options.onDrained();
    }
    if (buffered === 0) {
      this.dispose();
    } else if (now - this.lastProgressAt >= (this.options.stalledMs ?? STALLED_READER_MS)) {
      this.dispose();
      this.options.onStalled(buffered);
    }
  }

  dispose(): void {
    if (this.timer === undefined) return;
    (this.options.clearInterval ?? ((t) => clearInterval(t as NodeJS.Timeout)))(this.timer);
    this.timer = undefined;
  }
}
