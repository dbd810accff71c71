// A client of the live partition feed for tests: sends EJSON messages and waits for the ones it expects,
// each wait with a deadline.
import { EJSON } from 'bson';
import WebSocket from 'ws';

export type FeedMessage = Record<string, unknown> & { type: string };

export class FeedClient {
  readonly received: FeedMessage[] = [];
  private waiters: { test: (m: FeedMessage) => boolean; resolve: (m: FeedMessage) => void }[] = [];
  closed = false;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const message = EJSON.parse(data.toString()) as FeedMessage;
      this.received.push(message);
      for (const waiter of [...this.waiters]) {
        if (waiter.test(message)) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve(message);
        }
      }
    });
    ws.on('close', () => { this.closed = true; });
  }

  /** `headers`: e.g. `X-Admin-Authorization: Bearer <admin token>`, which a developer tool sends to get permission traces. */
  static async connect(url: string, token?: string, headers: Record<string, string> = {}): Promise<FeedClient> {
    const ws = new WebSocket(url, { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } });
    // Listening before the upgrade completes: the first message can arrive with the upgrade's answer.
    const client = new FeedClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
    return client;
  }

  send(message: Record<string, unknown>): void {
    this.ws.send(EJSON.stringify(message as never, { relaxed: false }));
  }

  /** The first message (already received since `from`, or coming) that passes `test`. */
  next(test: (m: FeedMessage) => boolean, what = 'a message', timeoutMs = 10_000, from = 0): Promise<FeedMessage> {
    const seen = this.received.slice(from).find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}; received ${JSON.stringify(this.received.map((m) => m.type))}`)), timeoutMs);
      this.waiters.push({ test, resolve: (m) => { clearTimeout(timer); resolve(m); } });
    });
  }

  /** Waits for a message that has not been received yet. */
  upcoming(test: (m: FeedMessage) => boolean, what = 'a message', timeoutMs = 10_000): Promise<FeedMessage> {
    return this.next(test, what, timeoutMs, this.received.length);
  }

  async open(session: number, partition: string, extra: Record<string, unknown> = {}): Promise<FeedMessage> {
    const from = this.received.length;
    this.send({ type: 'open', session, partition, ...extra });
    return this.next((m) => m.session === session && (m.type === 'snapshot' || m.type === 'error'), `open of session ${session}`, 10_000, from);
  }

  close(): void {
    this.ws.close();
  }
}
