// A raw Realm protocol client (our codec) that behaves like a device across crashes of the server: it keeps
// its client file (ident, salt), its download progress and its changesets in memory, reconnects whenever its
// connection ends, resumes with IDENT of that file, and uploads again every changeset the server has not
// acknowledged yet. "Acknowledged" is what realm's client counts: a DOWNLOAD whose upload progress
// (`uploadClientVersion`) reaches the changeset's client version. Used by sync-faults.ts for scale.
import WebSocket from 'ws';
import { encodeChangeset } from '../../runtime/sync/wire/changeset';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { encodeClientMessage, parseServerMessage, type ServerMessage } from '../../runtime/sync/wire/messages';

const PROTOCOL_VERSION = 14;
const SYNC_EPOCH_MS = Date.UTC(2015, 0, 1);

export interface ResumingClientOptions {
  /** The sync URL with the access token (`…/realm-sync?baas_at=…`). */
  url: string;
  /** Partition value as JSON text (`"abc"`); absent for flexible sync. */
  partition?: string;
  /** Flexible sync: the subscription set (object type → RQL), always version 1. */
  queries?: Record<string, string>;
}

interface Pending { version: bigint; base: bigint; timestamp: bigint; bytes: Uint8Array; instructions: Instruction[] }

export class ResumingClient {
  fileIdent = 0n;
  private salt = 0n;
  private downloadServerVersion = 0n;
  private downloadClientVersion = 0n;
  private latestServerVersion = 0n;
  private latestSalt = 0n;
  private clientVersion = 1n;
  /** The highest client version the server acknowledged. */
  acknowledged = 0n;
  private readonly pending: Pending[] = [];
  private ws: WebSocket | undefined;
  private ready = false;
  private stopped = false;
  /** ERROR / JSON_ERROR messages the server sent (a reset, a refused changeset, a protocol violation). */
  readonly errors: string[] = [];
  connects = 0;
  private readonly ackWaiters = new Set<() => void>();

  constructor(private readonly options: ResumingClientOptions) {}

  /** Connects, and keeps reconnecting (every 100–300 ms) until `stop`. */
  start(): void {
    this.stopped = false;
    this.connect();
  }

  /** A new changeset (made offline or online); it is uploaded now or at the next connection. */
  write(instructions: Instruction[]): bigint {
    const version = ++this.clientVersion;
    this.pending.push({ version, base: this.downloadServerVersion, timestamp: BigInt(Date.now() - SYNC_EPOCH_MS), bytes: encodeChangeset(instructions), instructions });
    if (this.ready) this.upload([this.pending.at(-1)!]);
    return version;
  }

  get unacknowledged(): number {
    return this.pending.length;
  }

  /** Resolves once every changeset written so far is acknowledged; false after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.pending.length > 0) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { this.ackWaiters.delete(done); resolve(); }, Math.min(left, 500));
        const done = (): void => { clearTimeout(timer); this.ackWaiters.delete(done); resolve(); };
        this.ackWaiters.add(done);
      });
    }
    return true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => ws.terminate(), 500);
      ws.once('close', () => { clearTimeout(timer); resolve(); });
      ws.close();
    });
  }

  private connect(): void {
    if (this.stopped) return;
    const flexible = this.options.queries !== undefined;
    const protocol = flexible ? `com.mongodb.realm-query-sync#${PROTOCOL_VERSION}` : `com.mongodb.realm-sync#${PROTOCOL_VERSION}`;
    const ws = new WebSocket(this.options.url, [protocol], { perMessageDeflate: false, handshakeTimeout: 5000 });
    this.ws = ws;
    this.ready = false;
    ws.on('error', () => undefined);
    ws.on('close', () => {
      this.ready = false;
      if (!this.stopped) setTimeout(() => this.connect(), 100 + Math.random() * 200);
    });
    ws.on('message', (data: Buffer) => {
      let message: ServerMessage;
      try {
        message = parseServerMessage(data, { protocolVersion: PROTOCOL_VERSION, flexible });
      } catch (error) {
        this.errors.push(`unparsable server message: ${String(error)}`);
        ws.terminate();
        return;
      }
      this.receive(message);
    });
    ws.on('open', () => {
      this.connects++;
      const serverPath = flexible ? '{}' : this.options.partition!;
      this.send({ type: 'bind', session: 1, serverPath, signedUserToken: '', needClientFileIdent: this.fileIdent === 0n, isSubserver: false });
      if (this.fileIdent !== 0n) this.sendIdent();
    });
  }

  private send(message: Parameters<typeof encodeClientMessage>[0]): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(encodeClientMessage(message, PROTOCOL_VERSION));
  }

  private sendIdent(): void {
    const query = this.options.queries ? { version: 1n, body: JSON.stringify(this.options.queries) } : undefined;
    this.send({
      type: 'ident', session: 1, clientFileIdent: this.fileIdent, clientFileIdentSalt: this.salt,
      downloadServerVersion: this.downloadServerVersion, downloadClientVersion: this.downloadClientVersion,
      latestServerVersion: this.latestServerVersion, latestServerVersionSalt: this.latestSalt, ...(query ? { query } : {}),
    });
    // Partition sync may upload right after IDENT; flexible sync waits for the bootstrap's end (below).
    if (!this.options.queries || this.downloadServerVersion > 0n) this.becomeReady();
  }

  private becomeReady(): void {
    if (this.ready) return;
    this.ready = true;
    if (this.pending.length > 0) this.upload(this.pending);
  }

  private upload(changesets: Pending[]): void {
    this.send({
      type: 'upload', session: 1, progressClientVersion: this.clientVersion, progressServerVersion: this.downloadServerVersion, lockedServerVersion: this.downloadServerVersion,
      changesets: changesets.map((c) => ({ version: c.version, lastIntegratedRemoteVersion: c.base, originTimestamp: c.timestamp, originFileIdent: 0n, instructions: c.instructions, bytes: c.bytes })),
    });
  }

  private receive(message: ServerMessage): void {
    if (message.type === 'ident') {
      this.fileIdent = message.clientFileIdent;
      this.salt = message.clientFileIdentSalt;
      this.sendIdent();
    } else if (message.type === 'download') {
      const lastOfBatch = !message.flexible || message.flexible.batchState !== 'moreToCome';
      if (lastOfBatch) {
        this.downloadServerVersion = message.downloadServerVersion;
        this.downloadClientVersion = message.downloadClientVersion;
        this.latestServerVersion = message.latestServerVersion;
        this.latestSalt = message.latestServerVersionSalt;
      }
      if (message.uploadClientVersion > this.acknowledged) {
        this.acknowledged = message.uploadClientVersion;
        while (this.pending.length > 0 && this.pending[0]!.version <= this.acknowledged) this.pending.shift();
        for (const waiter of [...this.ackWaiters]) waiter();
      }
      if (lastOfBatch) this.becomeReady();
    } else if (message.type === 'error' || message.type === 'json_error') {
      const body = message.type === 'error' ? message.message : JSON.stringify(message.body);
      this.errors.push(`${message.type} ${message.errorCode}: ${body.slice(0, 300)}`);
    }
  }
}
