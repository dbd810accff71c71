// The live partition feed: our own JSON protocol over WebSocket (README "Live partition feed") at
// `/api/client/v2.0/app/<appId>/sync/feed`. A connection authenticates with a user's bearer token, then
// opens sessions, each on one partition: verdicts (with traces on request), the snapshot, then changes
// as they happen; writes take the Realm protocol's upload path (`sessions/engine.ts`). Every message is canonical EJSON text. A connection
// lives as long as its login: a revoked session, a disabled or deleted user, an expired access token end it.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { EJSON } from 'bson';
import { WebSocketServer, type WebSocket } from 'ws';
import { isPlainObject } from '../../core/rules/bsonValues';
import type { EvaluationUser } from '../../core/rules';
import { partitionId, type SyncError } from '../../core/sync';
import type { AccountEnd, WatchedLogin } from '../auth/account-events';
import type { Logger } from '../http/server';
import { SYNC_ERRORS, type ClientFile, type SessionMessage, type SyncService, type SyncSession } from './service';
import type { RealmSyncEngine } from './sessions/engine';
import { applyClientWrite } from './writes';
import { ErrorCode } from './wire/errors';

export { FEED_ENDPOINT } from '../../core/sync/messages';
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const MAX_SESSIONS_PER_CONNECTION = 256;

export interface PartitionFeedOptions {
  service: SyncService;
  /** The sync engine the Realm protocol runs on: writes take its upload path. */
  engine: RealmSyncEngine;
  appId: string;
  /** The user of a bearer token and the login it belongs to; throws when it is not valid. */
  authenticate(headers: IncomingHttpHeaders): Promise<{ user: EvaluationUser; login: WatchedLogin }>;
  /** Calls `onEnd` once when the login ends (revoked, user disabled or deleted, token expired); returns the stop. */
  watchAccount(login: WatchedLogin, onEnd: (end: AccountEnd) => void): () => void;
  /** Whether permission traces may be sent: only to developer tools, never to an ordinary client. */
  tracesAllowed?(headers: IncomingHttpHeaders): boolean;
  /** Development mode: mirrors a client's object types as collection schemas. */
  applySchema?(types: unknown): Promise<{ written: string[] }>;
  log: Logger;
}

export interface PartitionFeed {
  /** Completes a WebSocket upgrade routed to this app's feed (`OpenedApp.upgrades`). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): void;
}

export function createPartitionFeed(options: PartitionFeedOptions): PartitionFeed {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  return {
    handleUpgrade(req, socket, head) {
      const traces = options.tracesAllowed?.(req.headers) ?? false;
      wss.handleUpgrade(req, socket, head, (ws) => {
        new FeedConnection(ws, options, req.headers.authorization ? req.headers : undefined, traces);
      });
    },
    close() {
      for (const client of wss.clients) client.terminate();
      wss.close();
    },
  };
}

interface OpenSession extends SyncSession {
  id: number;
  detach(): void;
}

/** Canonical EJSON of a change, encoded once for every session of its partition. */
const encodedBodies = new WeakMap<SessionMessage, string>();

class FeedConnection {
  private user?: EvaluationUser;
  private stopWatching?: () => void;
  private authenticating?: Promise<void>;
  private readonly sessions = new Map<number, OpenSession>();
  private closed = false;

  constructor(private readonly ws: WebSocket, private readonly options: PartitionFeedOptions, headers: IncomingHttpHeaders | undefined, private readonly tracesAllowed: boolean) {
    if (headers) this.authenticating = this.authenticate(headers);
    ws.on('message', (data, isBinary) => {
      if (isBinary) return this.fail({ code: ErrorCode.connection_closed, name: 'ErrorConnectionClosed', message: 'messages must be text (EJSON)', action: 'none', tryAgain: false });
      void this.receive(data.toString()).catch((e) => {
        this.options.log.error(`sync feed: ${(e as Error).stack ?? e}`);
        this.send({ type: 'error', code: ErrorCode.other_session_error, name: 'ErrorOtherError', message: `internal error: ${(e as Error).message}`, tryAgain: true });
      });
    });
    ws.on('close', () => this.dispose());
    ws.on('error', () => this.dispose());
  }

  private async authenticate(headers: IncomingHttpHeaders): Promise<void> {
    try {
      const { user, login } = await this.options.authenticate(headers);
      if (this.closed) return;
      this.user = user;
      this.stopWatching = this.options.watchAccount(login, (end) => this.loginEnded(end));
      if (this.closed) return;
      this.send({ type: 'authenticated', userId: user.id });
    } catch (e) {
      this.fail(SYNC_ERRORS.badAuthentication(`invalid access token: ${(e as Error).message}`));
    }
  }

  /** The login this connection rests on ended: every session ends with the platform's error, then the connection. */
  private loginEnded(end: AccountEnd): void {
    const error = end.kind === 'token-expired' ? SYNC_ERRORS.tokenExpired(end.message) : SYNC_ERRORS.badAuthentication(end.message);
    for (const session of [...this.sessions.values()]) this.sendError(session.id, error, true);
    this.fail(error);
  }

  private async receive(text: string): Promise<void> {
    let message: unknown;
    try {
      message = EJSON.parse(text);
    } catch {
      return this.sendError(undefined, { code: ErrorCode.other_session_error, name: 'ErrorOtherError', message: 'a message must be one EJSON object', action: 'none', tryAgain: false }, false);
    }
    if (!isPlainObject(message) || typeof message.type !== 'string') {
      return this.sendError(undefined, { code: ErrorCode.other_session_error, name: 'ErrorOtherError', message: 'a message must be an object with a "type"', action: 'none', tryAgain: false }, false);
    }
    if (message.type === 'auth') {
      if (this.user || this.authenticating) return;
      this.authenticating = this.authenticate({ authorization: `Bearer ${typeof message.token === 'string' ? message.token : ''}` });
      return this.authenticating;
    }
    await this.authenticating;
    if (this.closed) return;
    if (!this.user) return this.fail(SYNC_ERRORS.badAuthentication('authenticate first: an Authorization: Bearer header at the upgrade, or {"type":"auth","token":…}'));
    const session = typeof message.session === 'number' ? message.session : undefined;
    switch (message.type) {
      case 'open': return this.open(session, message);
      case 'write': return this.write(session, message);
      case 'close': {
        if (session !== undefined) this.sessions.get(session)?.detach();
        return;
      }
      case 'schema': return this.schema(message);
      case 'ping': return this.send({ type: 'pong', ...(message.id !== undefined ? { id: message.id } : {}) });
      default:
        return this.sendError(session, { code: ErrorCode.other_session_error, name: 'ErrorOtherError', message: `unknown message type ${JSON.stringify(message.type)}: use auth, open, write, close, schema or ping`, action: 'none', tryAgain: false }, false);
    }
  }

  private async open(sessionId: number | undefined, message: Record<string, unknown>): Promise<void> {
    if (sessionId === undefined) return this.sendError(undefined, { code: ErrorCode.other_session_error, name: 'ErrorOtherError', message: '"open" needs a numeric "session"', action: 'none', tryAgain: false }, false);
    if (this.sessions.has(sessionId)) return this.sendError(sessionId, { code: ErrorCode.other_session_error, name: 'ErrorOtherError', message: `session ${sessionId} is already open`, action: 'none', tryAgain: false }, false);
    if (this.sessions.size >= MAX_SESSIONS_PER_CONNECTION) return this.sendError(sessionId, { code: ErrorCode.other_session_error, name: 'ErrorOtherError', message: `at most ${MAX_SESSIONS_PER_CONNECTION} sessions per connection`, action: 'none', tryAgain: true }, false);
    if (typeof message.partition !== 'string') {
      return this.sendError(sessionId, { code: ErrorCode.illegal_realm_path, name: 'ErrorIllegalDatabasePath', message: '"partition" must be the partition value as EJSON text, e.g. "\\"abc\\"" or "{\\"$oid\\":\\"…\\"}"', action: 'fix-client', tryAgain: false }, false);
    }
    const clientFile = parseClientFile(message.clientFile);
    const service = this.options.service;
    const result = await service.open(this.user!, message.partition, { trace: message.trace === true && this.tracesAllowed, ...(clientFile ? { clientFile } : {}) });
    if (this.closed) return;
    if (!result.ok) {
      if (result.verdict) this.send({ type: 'verdict', session: sessionId, permissions: result.verdict });
      return this.sendError(sessionId, result.error, false);
    }
    const file = clientFile ?? service.newClientFile();
    const session: OpenSession = {
      id: sessionId,
      partitionId: partitionId(result.partition),
      partition: result.partition,
      userId: this.user!.id,
      canWrite: result.verdict.write,
      clientFile: file,
      send: (change) => this.sendChange(sessionId, change),
      end: (error) => this.sendError(sessionId, error, true),
      detach: () => undefined,
    };
    // Registered before the snapshot is read, so no change between the two is missed; the version tells them apart.
    const detach = service.attach(session);
    session.detach = () => {
      detach();
      this.sessions.delete(sessionId);
    };
    this.sessions.set(sessionId, session);
    const version = service.currentVersion();
    this.send({ type: 'opened', session: sessionId, partition: result.partition, clientFile: file, version, permissions: result.verdict });
    const snapshot = await service.snapshot(result.partition);
    if (!this.sessions.has(sessionId)) return;
    const collections: Record<string, unknown[]> = {};
    for (const [c, docs] of snapshot) collections[c.type] = docs;
    this.send({ type: 'snapshot', session: sessionId, version, collections });
  }

  private async write(sessionId: number | undefined, message: Record<string, unknown>): Promise<void> {
    const session = sessionId === undefined ? undefined : this.sessions.get(sessionId);
    if (!session) return this.sendError(sessionId, { code: ErrorCode.other_session_error, name: 'ErrorOtherError', message: `no open session ${sessionId}`, action: 'none', tryAgain: false }, false);
    const outcome = await applyClientWrite(this.options.service, this.options.engine, session, message.changes);
    if (outcome.ok) return this.send({ type: 'ack', session: sessionId, id: message.id ?? null, version: outcome.version });
    if ('rejected' in outcome) return this.send({ type: 'rejected', session: sessionId, id: message.id ?? null, message: outcome.rejected });
    this.sendError(sessionId, outcome.error, true);
  }

  private async schema(message: Record<string, unknown>): Promise<void> {
    if (!this.options.applySchema) {
      return this.send({ type: 'rejected', id: message.id ?? null, message: 'development mode is off: object types are not written as schemas (turn on "development_mode_enabled" in sync/config.json)' });
    }
    try {
      const result = await this.options.applySchema(message.types);
      this.send({ type: 'schema-applied', id: message.id ?? null, written: result.written });
    } catch (e) {
      this.send({ type: 'rejected', id: message.id ?? null, message: (e as Error).message });
    }
  }

  private sendChange(sessionId: number, change: SessionMessage): void {
    if (this.closed) return;
    let body = encodedBodies.get(change);
    if (body === undefined) {
      body = EJSON.stringify(change as never, { relaxed: false });
      encodedBodies.set(change, body);
    }
    this.ws.send(`{"session":${sessionId},${body.slice(1)}`);
  }

  /** Ends a session with a protocol error (or only reports it when `endSession` is false). */
  private sendError(sessionId: number | undefined, error: SyncError, endSession: boolean): void {
    if (endSession && sessionId !== undefined) this.sessions.get(sessionId)?.detach();
    this.send({
      type: 'error', ...(sessionId !== undefined ? { session: sessionId } : {}),
      code: error.code, name: error.name, message: error.message, tryAgain: error.tryAgain,
      shouldClientReset: error.action === 'client-reset',
      isRecoveryModeEnabled: !(this.options.service.runtimeState.running?.settings.isRecoveryModeDisabled ?? false),
      action: error.action,
    });
  }

  /** A connection-level error: reported, then the connection closes. */
  private fail(error: SyncError): void {
    this.sendError(undefined, error, false);
    this.ws.close(4000 + Math.min(error.code, 999), error.name);
    this.dispose();
  }

  private send(message: Record<string, unknown>): void {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(EJSON.stringify(message as never, { relaxed: false }));
  }

  private dispose(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopWatching?.();
    for (const session of [...this.sessions.values()]) session.detach();
  }
}

function parseClientFile(value: unknown): ClientFile | undefined {
  if (!isPlainObject(value) || typeof value.epoch !== 'number' || typeof value.ident !== 'string') return undefined;
  return { epoch: value.epoch, ident: value.ident };
}
