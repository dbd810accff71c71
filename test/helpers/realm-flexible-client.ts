// A flexible sync client for attacks and tests (reliability/sync-flexible-attacks.ts): our codec on a raw
// WebSocket, so it sends what realm-core's client never would and sees every byte the server sends, decoded
// (a hidden value that reached the wire shows here even where realm-core's client would drop it). It keeps
// every message in order and the versions a resuming client needs (its client file, the server version and
// salt it downloaded).
import WebSocket from 'ws';
import { encodeChangeset } from '../../runtime/sync/wire/changeset';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { encodeClientMessage, parseServerMessage, type ClientMessage, type ServerMessage } from '../../runtime/sync/wire/messages';

const FLEXIBLE_PROTOCOL = 'com.mongodb.realm-query-sync#14';
/** Realm's changeset timestamps count milliseconds from 2015-01-01T00:00:00Z. */
const SYNC_EPOCH_MS = Date.UTC(2015, 0, 1);

export const messageText = (value: unknown) => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? undefined : v));

/** Where a client file stands: what a later connection of it says in its IDENT. */
export interface FileState {
  ident: bigint;
  salt: bigint;
  serverVersion: bigint;
  clientVersion: bigint;
  latestServerVersion: bigint;
  latestServerVersionSalt: bigint;
  queryVersion: bigint;
  queries: string;
}

export class FlexClient {
  /** Every message received, in order. */
  readonly received: ServerMessage[] = [];
  private readonly waiters = new Set<() => void>();
  private marks = 0n;
  private closedCode: number | undefined;
  state: FileState = { ident: 0n, salt: 0n, serverVersion: 0n, clientVersion: 1n, latestServerVersion: 0n, latestServerVersionSalt: 0n, queryVersion: 0n, queries: '{}' };

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const message = parseServerMessage(data, { protocolVersion: 14, flexible: true });
      this.received.push(message);
      if (message.type === 'download') {
        if (message.downloadServerVersion > this.state.serverVersion) this.state.serverVersion = message.downloadServerVersion;
        this.state.latestServerVersion = message.latestServerVersion;
        this.state.latestServerVersionSalt = message.latestServerVersionSalt;
      }
      for (const w of [...this.waiters]) w();
    });
    ws.on('close', (code) => { this.closedCode = code; for (const w of [...this.waiters]) w(); });
  }

  static connect(syncUrl: string): Promise<FlexClient> {
    const ws = new WebSocket(syncUrl, [FLEXIBLE_PROTOCOL], { perMessageDeflate: false });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new FlexClient(ws)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`sync upgrade answered HTTP ${res.statusCode}`)));
    });
  }

  send(message: ClientMessage): void {
    this.ws.send(encodeClientMessage(message, 14));
  }

  /** The first message from index `from` on that `match` accepts; rejects on close or after `timeoutMs`. */
  waitFor(match: (m: ServerMessage) => boolean, from = 0, timeoutMs = 30_000): Promise<ServerMessage> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.received.slice(from).find(match);
        if (found) { done(); resolve(found); } else if (this.closedCode !== undefined) { done(); reject(new Error(`the connection closed (${this.closedCode}); last messages ${messageText(this.received.slice(-3))}`)); }
      };
      const done = () => { this.waiters.delete(check); clearTimeout(timer); };
      const timer = setTimeout(() => { done(); reject(new Error(`no such sync message within ${timeoutMs} ms; last ${messageText(this.received.slice(-3))}`)); }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** BIND as a new client file, IDENT with `queries` (object type → RQL) as subscription set 1, its bootstrap, a MARK round trip. */
  async bindNew(queries: Record<string, string>): Promise<void> {
    const from = this.received.length;
    this.send({ type: 'bind', session: 1, serverPath: '{"schemaVersion":0,"sessionReason":0}', signedUserToken: '', needClientFileIdent: true, isSubserver: false });
    const ident = await this.waitFor((m) => m.type === 'ident' || m.type === 'error' || m.type === 'json_error', from);
    if (ident.type !== 'ident') throw new Error(`BIND answered ${messageText(ident)}`);
    this.state = { ...this.state, ident: ident.clientFileIdent, salt: ident.clientFileIdentSalt, queryVersion: 1n, queries: JSON.stringify(queries) };
    const at = this.received.length;
    this.send({
      type: 'ident', session: 1, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt,
      downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n, query: { version: 1n, body: this.state.queries },
    });
    await this.bootstrapped(1n, at);
    await this.mark();
  }

  /** BIND as the known client file `state` (a client resuming), IDENT with what it downloaded, then a MARK round trip. */
  async resume(state: FileState): Promise<void> {
    this.state = { ...state };
    this.send({ type: 'bind', session: 1, serverPath: '{"schemaVersion":0,"sessionReason":0}', signedUserToken: '', needClientFileIdent: false, isSubserver: false });
    this.send({
      type: 'ident', session: 1, clientFileIdent: state.ident, clientFileIdentSalt: state.salt, downloadServerVersion: state.serverVersion, downloadClientVersion: state.clientVersion,
      latestServerVersion: state.latestServerVersion, latestServerVersionSalt: state.latestServerVersionSalt, query: { version: state.queryVersion, body: state.queries },
    });
    await this.mark();
  }

  private async bootstrapped(version: bigint, from: number): Promise<string | undefined> {
    const answer = await this.waitFor((m) => m.type === 'error' || m.type === 'json_error'
      || (m.type === 'query_error' && m.queryVersion === version)
      || (m.type === 'download' && m.flexible?.queryVersion === version && m.flexible.batchState === 'lastInBatch'), from, 60_000);
    if (answer.type === 'query_error') return answer.message;
    if (answer.type !== 'download') throw new Error(`expected a bootstrap, got ${messageText(answer)}`);
    return undefined;
  }

  /** A new subscription set (QUERY); resolves with its QUERY_ERROR's message, or undefined once its bootstrap came. */
  subscribe(queries: Record<string, string>): Promise<string | undefined> {
    const version = ++this.state.queryVersion;
    this.state.queries = JSON.stringify(queries);
    const from = this.received.length;
    this.send({ type: 'query', session: 1, queryVersion: version, body: this.state.queries });
    return this.bootstrapped(version, from);
  }

  /** A MARK round trip: everything the server had for this session when it arrived has been sent. */
  async mark(): Promise<void> {
    const ident = ++this.marks;
    const from = this.received.length;
    this.send({ type: 'mark', session: 1, requestIdent: ident });
    await this.waitFor((m) => (m.type === 'mark' && m.requestIdent === ident) || m.type === 'error' || (m.type === 'json_error' && m.errorCode !== 231), from, 60_000);
  }

  /**
   * Uploads changesets (each one its own client version) on top of `base` (default: what this client
   * downloaded). Resolves with the messages that answered them: up to the DOWNLOAD acknowledging the last
   * one, and for a compensating write (231) up to the DOWNLOAD of its server version.
   */
  async upload(changesets: Instruction[][], options: { base?: bigint; timestamp?: bigint } = {}): Promise<ServerMessage[]> {
    const from = this.received.length;
    const base = options.base ?? this.state.serverVersion;
    const entries = changesets.map((instructions) => {
      const version = ++this.state.clientVersion;
      return { version, lastIntegratedRemoteVersion: base, originTimestamp: options.timestamp ?? BigInt(Date.now() - SYNC_EPOCH_MS), originFileIdent: 0n, instructions, bytes: encodeChangeset(instructions) };
    });
    const last = this.state.clientVersion;
    this.send({ type: 'upload', session: 1, progressClientVersion: last, progressServerVersion: base, lockedServerVersion: base, changesets: entries });
    const acknowledged = await this.waitFor((m) => m.type === 'error' || (m.type === 'json_error' && m.errorCode !== 231) || (m.type === 'download' && m.uploadClientVersion >= last), from, 120_000);
    const compensation = this.received.slice(from).find((m) => m.type === 'json_error' && m.errorCode === 231);
    if (compensation?.type === 'json_error') {
      const version = BigInt(String(compensation.body.compensatingWriteServerVersion ?? 0));
      await this.waitFor((m) => m.type === 'download' && m.downloadServerVersion >= version, from, 30_000);
    }
    return acknowledged.type === 'download' || compensation ? this.received.slice(from) : [acknowledged];
  }

  /** Every DOWNLOAD's changesets, decoded, as text. */
  downloadedText(from = 0): string {
    return this.received.slice(from).filter((m) => m.type === 'download').map(messageText).join('\n');
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.ws.terminate(), 500);
      this.ws.once('close', () => { clearTimeout(timer); resolve(); });
      this.ws.close();
    });
  }
}
