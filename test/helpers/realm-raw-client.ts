// A sync connection that speaks the Realm protocol with our own codec, for tests that must send what
// realm-core's client never would (hostile input, asymmetric changes): frames in, server messages out.
import WebSocket from 'ws';
import { encodeClientMessage, parseServerMessage, type ClientMessage, type ServerMessage } from '../../runtime/sync/wire/messages';

export interface RawSyncClient {
  ws: WebSocket;
  /** Resolves with the WebSocket close code. */
  closed: Promise<number>;
  send(message: ClientMessage): void;
  close(): void;
  /** The first received message `match` accepts (earlier ones are dropped); rejects on close or timeout. */
  next(match?: (m: ServerMessage) => boolean, timeoutMs?: number): Promise<ServerMessage>;
}

/** JSON with bigints as strings (server messages carry them). */
export const messageText = (value: unknown) => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

/**
 * Opens `url` offering `protocols` (protocol version 14); an HTTP answer instead of an upgrade rejects with
 * its status. `options` reach the `ws` client (a `ca` for wss://, a `lookup`).
 */
export function connectRawSync(url: string, protocols: string[], flexible: boolean, options?: WebSocket.ClientOptions): Promise<RawSyncClient> {
  const ws = new WebSocket(url, protocols, options);
  const received: ServerMessage[] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (data: Buffer) => {
    received.push(parseServerMessage(data, { protocolVersion: 14, flexible }));
    for (const w of [...waiters]) w();
  });
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => { for (const w of [...waiters]) w(); resolve(code); }));
  return new Promise((resolve, reject) => {
    ws.on('open', () => resolve({
      ws, closed,
      send: (message) => ws.send(encodeClientMessage(message, 14)),
      close: () => ws.close(),
      next(match = () => true, timeoutMs = 10000) {
        return new Promise((res, rej) => {
          const check = () => {
            const i = received.findIndex(match);
            if (i >= 0) {
              waiters.delete(check);
              clearTimeout(timer);
              res(received.splice(0, i + 1)[i]!);
            } else if (ws.readyState === ws.CLOSED) {
              waiters.delete(check);
              clearTimeout(timer);
              rej(new Error(`the connection closed; received ${messageText(received)}`));
            }
          };
          const timer = setTimeout(() => { waiters.delete(check); rej(new Error(`no such message; received ${messageText(received)}`)); }, timeoutMs);
          waiters.add(check);
          check();
        });
      },
    }));
    ws.on('error', reject);
    ws.on('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
  });
}
