// One Realm sync WebSocket connection: its sessions (one per partition realm the client opens) and their
// flow: BIND (permissions), IDENT (client file, resume point), UPLOAD (integrated by the engine),
// DOWNLOAD (bootstrap, then the history the client has not seen), MARK, UNBIND; PING/PONG; errors for a
// session (JSON_ERROR, the session ends) or the connection (ERROR, the connection closes). Messages of one
// session are handled in order; sessions run independently.
import { randomBytes } from 'node:crypto';
import type { WebSocket } from 'ws';
import type { EvaluationUser } from '../../../core/rules';
import { partitionId, partitionText, type SyncError } from '../../../core/sync';
import type { SyncSessionInfo, SyncTrafficEntry } from '../../../core/sync/messages';
import { SYNC_ERRORS } from '../service';
import { SessionVersioning } from '../schema-versions/sessions';
import type { SyncSchemaVersions } from '../schema-versions/versions';
import { migratedPartitionRefusal } from '../migration/bind';
import type { Logger } from '../../http/server';
import { StoreError, StoreErrorCode } from '../../store/types';
import type { HistoryEntry, PendingCompensation } from '../history/history';
import { ErrorCode, WireError } from '../wire/errors';
import type { ChangesetEntry } from '../wire/instructions';
import { encodeServerMessage, parseClientMessage, type ClientMessage, type ServerMessage } from '../wire/messages';
import { FlexibleFlow } from '../flexible/flow';
import type { EngineError, RealmSyncEngine } from './engine';
import { isFlexible, markBound, markEnded, markIdentified, newSession, stateOf, uploadedChangesets, type IdentifiedSession, type RulesChange, type Session } from './session';
import { encodeChangeset } from '../wire/changeset';
import { SERVER_FILE_IDENT } from '../history/history';
import { TrafficLog } from './traffic';
import { logs } from '../../log';
import { parseTestCommand, SESSION_KEEPING_ERRORS } from './test-commands';
import { SendBackpressure, STALLED_READER_MS } from './send-backpressure';

export const MAX_SESSIONS_PER_CONNECTION = 256;

/** WebSocket close codes realm-core reads as an authentication failure (its RLM_ERR_WEBSOCKET_UNAUTHORIZED / _FORBIDDEN). */
const WS_CLOSE_UNAUTHORIZED = 4001;
const WS_CLOSE_FORBIDDEN = 4002;
/** The standard close code of a server going down; realm-core reconnects after its backoff. */
const WS_CLOSE_GOING_AWAY = 1001;
/** Soft limit of the changesets' bytes in one DOWNLOAD. */
const DOWNLOAD_BATCH_BYTES = 256 * 1024;
/**
 * What one client message may make the server inflate and parse (synchronously). realm-core's client sends
 * UPLOADs of about 128 KiB of changesets (only a single large transaction exceeds it) and its server sends
 * DOWNLOADs of at most 16 MiB. 200,000 instructions (20,000 objects of ten fields in one transaction) parse
 * in about 0.3 s into about 55 MB; more is a bad changeset (212), a larger body limits exceeded (104).
 */
export const CLIENT_MESSAGE_LIMITS = { maxBodySize: 16 * 1024 * 1024, changeset: { maxInstructions: 200_000 } } as const;
/** Instructions of UPLOADs parsed and not yet integrated, per connection: past it, frames wait unparsed. */
const MAX_PENDING_UPLOAD_INSTRUCTIONS = CLIENT_MESSAGE_LIMITS.changeset.maxInstructions;
/** Frames waiting to be parsed before the connection stops reading its socket (TCP then holds the client back). */
const MAX_QUEUED_FRAMES = 16;
/** How long a client has to answer the server's close frame before its socket is cut. */
const CLOSE_HANDSHAKE_MS = 1000;

export interface ConnectionInfo {
  id: string;
  userId: string;
  protocolVersion: number;
  remote: string;
}

/** Told of a connection's work as it happens (the runtime's metrics); every method is cheap and never throws. */
export interface SyncActivityObserver {
  /** An UPLOAD integrated (`ok`) or refused, and how long it took (its wait in the partition's queue included). */
  upload(seconds: number, outcome: 'ok' | 'refused'): void;
  /** A DOWNLOAD sent: its changesets and their bytes, and how long building it took when it read the history. */
  download(changesets: number, bytes: number, seconds?: number): void;
  /** A bootstrap sent (a new client file, a new flexible query version), and how long it took to send it (queue included). */
  bootstrap(seconds: number): void;
}

export interface ConnectionOptions {
  engine: RealmSyncEngine;
  log: Logger;
  observer?: SyncActivityObserver;
  /** Milliseconds since the epoch; the access token's expiry ends the connection's sessions. */
  now?: () => number;
  /** Flexible sync: the app's sync schema versions (absent: version 0 only). */
  schemaVersions?: SyncSchemaVersions;
}

const ACTIONS: Record<SyncError['action'], string> = {
  'client-reset': 'ClientReset', 'retry-later': 'Transient', 'fix-client': 'ApplicationBug', 'refresh-token': 'RefreshUser', none: 'ApplicationBug',
  'migrate-to-flx': 'MigrateToFLX', 'revert-to-pbs': 'RevertToPBS',
};

const text = (v: bigint | number | boolean | string) => (typeof v === 'bigint' ? v.toString() : v);

function incoming(message: Extract<ClientMessage, { type: 'ident' | 'upload' | 'mark' }>): Parameters<TrafficLog['add']>[0] {
  const at = Date.now();
  switch (message.type) {
    case 'ident': return { at, direction: 'in', type: 'ident', fields: { clientFileIdent: text(message.clientFileIdent), downloadServerVersion: text(message.downloadServerVersion), downloadClientVersion: text(message.downloadClientVersion), latestServerVersion: text(message.latestServerVersion) } };
    case 'upload': return { at, direction: 'in', type: 'upload', fields: { progressClientVersion: text(message.progressClientVersion), progressServerVersion: text(message.progressServerVersion), changesets: message.changesets.length }, raw: message.changesets };
    case 'mark': return { at, direction: 'in', type: 'mark', fields: { requestIdent: text(message.requestIdent) } };
  }
}

function outgoing(message: ServerMessage): Parameters<TrafficLog['add']>[0] {
  const at = Date.now();
  switch (message.type) {
    case 'download': return {
      at, direction: 'out', type: 'download',
      fields: { downloadServerVersion: text(message.downloadServerVersion), downloadClientVersion: text(message.downloadClientVersion), latestServerVersion: text(message.latestServerVersion), uploadClientVersion: text(message.uploadClientVersion), changesets: message.changesets.length },
      raw: message.changesets,
    };
    case 'ident': return { at, direction: 'out', type: 'ident', fields: { clientFileIdent: text(message.clientFileIdent) } };
    case 'mark': return { at, direction: 'out', type: 'mark', fields: { requestIdent: text(message.requestIdent) } };
    case 'json_error': return { at, direction: 'out', type: 'json_error', fields: { errorCode: message.errorCode }, detail: JSON.stringify(message.body) };
    case 'error': return { at, direction: 'out', type: 'error', fields: { errorCode: message.errorCode, tryAgain: message.tryAgain }, detail: message.message };
    default: return { at, direction: 'out', type: message.type, fields: {} };
  }
}

/** One line for the debug log: the message's scalar fields, the number of its changesets. */
function describeMessage(message: ClientMessage | ServerMessage): string {
  const fields = Object.entries(message).map(([key, value]) => {
    if (key === 'type' || key === 'signedUserToken') return undefined;
    if (Array.isArray(value)) return `${key}=[${value.length}]`;
    if (typeof value === 'object' && value !== null) return `${key}=${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)).slice(0, 300)}`;
    return `${key}=${typeof value === 'string' ? JSON.stringify(value.slice(0, 300)) : String(value)}`;
  }).filter((f) => f !== undefined);
  return `${message.type.toUpperCase()} ${fields.join(' ')}`;
}

/** The session ident in a message head (`upload 3 …`), for a session-level error in its body. */
function sessionOfHead(frame: Buffer): number {
  const m = /^[a-z_]+ (\d{1,15}) /.exec(frame.subarray(0, 64).toString('latin1'));
  return m ? Number(m[1]) : 0;
}

export class RealmSyncConnection {
  readonly id = randomBytes(12).toString('hex');
  private readonly sessions = new Map<number, Session>();
  private closed = false;
  private expiryTimer?: NodeJS.Timeout;
  /** Frames received and not parsed yet: one is parsed per turn of the event loop, so a burst cannot hold the runtime. */
  private readonly inbox: { data: Buffer; isBinary: boolean }[] = [];
  private drainScheduled = false;
  private pendingUploadInstructions = 0;
  /** Sessions whose DOWNLOADs wait for the client to read what the socket holds. */
  private readonly waitingForReader = new Set<Session>();
  private readonly sendGate: SendBackpressure;
  private readonly versioning: SessionVersioning;
  private flexibleFlow?: FlexibleFlow;

  constructor(
    private readonly ws: WebSocket,
    readonly info: { user: EvaluationUser; protocolVersion: number; flexible?: boolean; remote: string; expiresAt?: number; loginSessionId?: string },
    private readonly options: ConnectionOptions,
    private readonly onClose: (connection: RealmSyncConnection) => void,
  ) {
    this.versioning = new SessionVersioning(options.schemaVersions, () => options.engine.realmSchema());
    this.sendGate = new SendBackpressure({
      buffered: () => this.ws.bufferedAmount,
      onDrained: () => {
        const waiting = [...this.waitingForReader];
        this.waitingForReader.clear();
        for (const session of waiting) this.schedulePump(session);
      },
      onStalled: (bytes) => {
        // Queued behind what the client does not read, the ERROR reaches it only if it reads again.
        this.log.warn(`${this.describe()}: the client took in none of ${Math.round(bytes / 1024)} KiB for ${STALLED_READER_MS / 1000} s: disconnected`);
        this.send({ type: 'error', errorCode: ErrorCode.other_error, message: `Other connection level error: the client read nothing for ${STALLED_READER_MS / 1000} s`, tryAgain: true, session: 0 });
        this.ws.terminate();
        this.dispose();
      },
    });
    ws.on('message', (data, isBinary) => this.receive(data as Buffer, isBinary));
    ws.on('close', () => this.dispose());
    ws.on('error', () => this.dispose());
    if (info.protocolVersion >= 10) this.send({ type: 'log_message', session: 0, level: 'info', message: 'Client connection established with server', coId: this.id });
    if (info.expiresAt !== undefined) this.scheduleExpiry(info.expiresAt);
  }

  /** What a flexible session holds and sends because of its subscriptions (`../flexible/flow.ts`); made for the first flexible session. */
  private get flexibleRoom(): FlexibleFlow {
    this.flexibleFlow ??= new FlexibleFlow({
      engine: this.options.engine, log: this.options.log, ...(this.options.observer ? { observer: this.options.observer } : {}),
      user: this.info.user, protocolVersion: this.info.protocolVersion, versioning: this.versioning,
      describe: (session) => this.describe(session),
      isLive: (session) => this.isLive(session),
      send: (message) => this.send(message),
      sendDownload: (...args) => this.sendDownload(...args),
      sessionError: (...args) => this.sessionError(...args),
      pump: (session) => this.pump(session),
      enqueue: (session, task) => this.enqueue(session, task),
      fail: (code, message) => this.fail(code, message),
    });
    return this.flexibleFlow;
  }

  private get log(): Logger {
    return this.options.log;
  }

  private describe(session?: Session): string {
    return `sync connection ${this.id} user ${this.info.user.id}${session ? ` session ${session.ident}${session.partition !== undefined ? ` partition ${partitionText(session.partition)}` : ''}` : ''}`;
  }

  private scheduleExpiry(expiresAt: number): void {
    const now = this.options.now?.() ?? Date.now();
    // Timers cap at about 24.8 days; a later expiry re-arms.
    const delay = Math.min(Math.max(0, expiresAt - now), 2 ** 31 - 1);
    this.expiryTimer = setTimeout(() => {
      if ((this.options.now?.() ?? Date.now()) < expiresAt) return this.scheduleExpiry(expiresAt);
      this.endForAccount('unauthorized', 'access token expired: refresh it and reconnect');
    }, delay);
    this.expiryTimer.unref();
  }

  /**
   * Ends the connection for its account: `unauthorized` (the access token expired; the SDK refreshes it and
   * reconnects) or `forbidden` (the login was revoked, the user disabled or deleted; the SDK logs the user
   * out). realm-core takes these as WebSocket close codes, as it takes HTTP 401/403 at the upgrade: the
   * session errors 202 and 203 would stop a realm-core 14 client outright (it does not expect them).
   */
  endForAccount(kind: 'unauthorized' | 'forbidden', reason: string): void {
    if (this.closed) return;
    this.log.info(`${this.describe()}: ended (${reason})`);
    this.closeAfter(kind === 'unauthorized' ? WS_CLOSE_UNAUTHORIZED : WS_CLOSE_FORBIDDEN, reason);
  }

  /** Nothing more is read from the connection from now on; the client gets the close frame, then loses the socket. */
  private closeAfter(code: number, reason?: string): void {
    this.ws.close(code, reason);
    this.dispose();
    setTimeout(() => this.ws.terminate(), CLOSE_HANDSHAKE_MS).unref();
  }

  /** Ends every session with a session error (revocation, pause, terminate, token expiry). */
  endAllSessions(error: SyncError): void {
    for (const session of this.sessions.values()) {
      if (session.state !== 'ended') this.sessionError(session, error);
    }
  }

  /** Ends the sessions of a partition (or all) when `match` says so. */
  endSessions(match: (info: SyncSessionInfo) => boolean, error: SyncError): void {
    for (const session of this.sessions.values()) {
      if (session.state !== 'ended' && match(this.sessionInfo(session))) this.sessionError(session, error);
    }
  }

  /** The recent traffic of one of this connection's sessions (an ended one too, until its ident is bound again). */
  traffic(session: number): SyncTrafficEntry[] | undefined {
    return this.sessions.get(session)?.traffic.recent();
  }

  sessionInfos(): SyncSessionInfo[] {
    return [...this.sessions.values()].filter((s) => s.state !== 'ended').map((s) => this.sessionInfo(s));
  }

  private sessionInfo(s: Session): SyncSessionInfo {
    return {
      connection: this.id, session: s.ident, userId: this.info.user.id, partition: s.view ? `flexible (query version ${s.view.queryVersion})` : s.partition === undefined ? '' : partitionText(s.partition),
      protocolVersion: this.info.protocolVersion, state: s.state,
      ...(s.clientFile ? { clientFileIdent: s.clientFile.ident } : {}),
      downloadedVersion: s.downloadServerVersion, uploadedClientVersion: s.clientFile?.uploadClientVersion ?? 0,
      ...(s.schemaVersion ? { schemaVersion: { bound: s.schemaVersion.bound, serving: s.schemaVersion.serving } } : {}),
      ...(s.migratedPartition !== undefined ? { migratedPartition: s.migratedPartition } : {}),
    };
  }

  private receive(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    this.inbox.push({ data, isBinary });
    this.scheduleDrain();
  }

  private scheduleDrain(): void {
    if (this.drainScheduled || this.closed) return;
    this.drainScheduled = true;
    setImmediate(() => this.drain());
  }

  /** Handles the next received frame unless uploads wait for the engine; pauses reading while it falls behind. */
  private drain(): void {
    this.drainScheduled = false;
    if (this.closed) return;
    if (this.pendingUploadInstructions < MAX_PENDING_UPLOAD_INSTRUCTIONS) {
      const frame = this.inbox.shift();
      if (frame) this.handleFrame(frame.data, frame.isBinary);
    }
    if (this.closed) return;
    const behind = this.inbox.length >= MAX_QUEUED_FRAMES || this.pendingUploadInstructions >= MAX_PENDING_UPLOAD_INSTRUCTIONS;
    if (behind && !this.ws.isPaused) this.ws.pause();
    else if (!behind && this.ws.isPaused) this.ws.resume();
    // An upload's end schedules the next drain when the backlog holds the frames.
    if (this.inbox.length > 0 && this.pendingUploadInstructions < MAX_PENDING_UPLOAD_INSTRUCTIONS) this.scheduleDrain();
  }

  private handleFrame(data: Buffer, isBinary: boolean): void {
    let message: ClientMessage;
    try {
      if (!isBinary) throw new WireError(ErrorCode.unknown_message, 'Unknown type of input message: the protocol sends binary frames');
      message = parseClientMessage(data, { protocolVersion: this.info.protocolVersion, flexible: this.info.flexible === true, limits: CLIENT_MESSAGE_LIMITS });
    } catch (e) {
      if (e instanceof WireError) {
        const session = e.sessionLevel ? this.sessions.get(sessionOfHead(data)) : undefined;
        if (session && session.state !== 'ended') return this.sessionError(session, { code: e.code, name: 'ErrorBadChangeset', message: e.message, action: 'none', tryAgain: false });
        return this.fail(e.sessionLevel ? 101 : e.code, e.message);
      }
      return this.fail(ErrorCode.other_error, `message not understood: ${(e as Error).message}`);
    }
    if (logs(this.log, 'debug') && message.type !== 'ping') this.log.debug?.(`${this.describe()}: received ${describeMessage(message)}`);
    switch (message.type) {
      case 'ping': return this.send({ type: 'pong', timestamp: message.timestamp });
      case 'bind': return this.bind(message);
      case 'json_error': {
        const session = this.sessions.get(message.session);
        this.log.warn(`${this.describe(session)}: the client reported error ${message.errorCode}: ${message.body.slice(0, 500)}`);
        // A client that could not integrate what it was sent cannot go on from its file: it must reset.
        if (session && session.state !== 'ended') this.enqueue(session, async () => this.sessionError(session, SYNC_ERRORS.badClientFile(`the client reported error ${message.errorCode} integrating what it was sent`)));
        return;
      }
      case 'unbind': return this.unbind(message.session);
      case 'ident': case 'upload': case 'mark': {
        const session = this.sessions.get(message.session);
        if (!session) return this.fail(ErrorCode.bad_session_ident, `Bad session identifier in input message: no session ${message.session} is bound`);
        if (session.state === 'ended') return;
        if (message.type !== 'upload') return this.enqueue(session, () => this.handle(session, message));
        const instructions = message.changesets.reduce((n, c) => n + c.instructions.length, 0);
        this.pendingUploadInstructions += instructions;
        return this.enqueue(session, async () => {
          try {
            await this.handle(session, message);
          } finally {
            this.pendingUploadInstructions -= instructions;
            this.scheduleDrain();
          }
        });
      }
      case 'test_command': {
        const session = this.sessions.get(message.session);
        if (!session) return this.fail(ErrorCode.bad_session_ident, `Bad session identifier in input message: no session ${message.session} is bound`);
        if (session.state === 'ended') return;
        // Not queued behind the session's work: a RESUME_DOWNLOAD_BUILDER must reach a bootstrap that waits for it.
        return this.testCommand(session, message.requestIdent, message.body);
      }
      case 'query': {
        const session = this.sessions.get(message.session);
        if (!session) return this.fail(ErrorCode.bad_session_ident, `Bad session identifier in input message: no session ${message.session} is bound`);
        if (session.state === 'ended') return;
        return this.enqueue(session, () => this.flexibleRoom.query(session, Number(message.queryVersion), message.body));
      }
    }
  }

  /** A TEST_COMMAND: it acts on the sending session only; the answer follows what was done. */
  private testCommand(session: Session, requestIdent: bigint, body: string): void {
    const command = parseTestCommand(body);
    this.log.info(`${this.describe(session)}: test command ${command.kind}`);
    const answer = (reply: Record<string, unknown>) => this.send({ type: 'test_command', session: session.ident, requestIdent, body: JSON.stringify(reply) });
    switch (command.kind) {
      case 'refused': return answer({ error: command.reason });
      case 'pauseRouter':
        session.routerPaused = true;
        return answer({});
      case 'pauseDownloads': {
        if (!session.downloadsPaused) {
          let resume!: () => void;
          const resumed = new Promise<void>((resolve) => { resume = resolve; });
          session.downloadsPaused = { resumed, resume };
        }
        return answer({});
      }
      case 'resumeDownloads': {
        const paused = session.downloadsPaused;
        session.downloadsPaused = undefined;
        paused?.resume();
        answer({});
        return this.schedulePump(session);
      }
      case 'echoError': {
        answer({});
        // As the platform's server filled them in: realm-core's client requires both.
        const body = { action: 'ApplicationBug', logURL: '', ...command.body };
        if (command.errorCode < 200) {
          // A connection-level code: the connection ends with it, as with any connection error.
          this.send({ type: 'json_error', errorCode: command.errorCode, session: 0, body });
          return this.closeAfter(1000);
        }
        if (!SESSION_KEEPING_ERRORS.has(command.errorCode)) this.endSession(session);
        return this.send({ type: 'json_error', errorCode: command.errorCode, session: session.ident, body });
      }
    }
  }

  private enqueue(session: Session, task: () => Promise<void>): void {
    session.chain = session.chain.then(task).catch((e) => {
      // A full disk is the operator's to fix, not a bug: its message says so, without a stack.
      if (e instanceof StoreError && e.code === StoreErrorCode.OutOfDiskSpace) this.log.warn(`${this.describe(session)}: ${e.message}`);
      else this.log.error(`${this.describe(session)}: ${(e as Error).stack ?? e}`);
      if (session.state !== 'ended') this.sessionError(session, { code: ErrorCode.other_session_error, name: 'ErrorOtherSessionError', message: `internal error: ${(e as Error).message}`, action: 'retry-later', tryAgain: true });
    });
  }

  private bind(message: Extract<ClientMessage, { type: 'bind' }>): void {
    const existing = this.sessions.get(message.session);
    if (existing && existing.state !== 'ended') return this.fail(ErrorCode.reuse_of_session_ident, `Overlapping reuse of session identifier (BIND): session ${message.session} is still bound`);
    const tooMany = this.liveSessions() >= MAX_SESSIONS_PER_CONNECTION;
    const session = newSession(message.session, existing?.traffic ?? new TrafficLog());
    session.traffic.add({ at: Date.now(), direction: 'in', type: 'bind', fields: { session: message.session, path: message.serverPath, needClientFileIdent: message.needClientFileIdent } });
    this.sessions.set(message.session, session);
    // 201, not realm's 224 (too_many_sessions), which a realm-core 14 client does not expect and stops on.
    if (tooMany) return this.sessionError(session, { code: ErrorCode.other_session_error, name: 'ErrorOtherSession', message: `Too many sessions in connection (BIND): at most ${MAX_SESSIONS_PER_CONNECTION}`, action: 'none', tryAgain: false });
    if (this.info.flexible) {
      const refusal = migratedPartitionRefusal(message.bindJson, this.options.engine.service.migratedFrom);
      if (refusal) return this.sessionError(session, refusal);
      const version = this.versioning.bind(message.bindJson);
      if (!version.ok) return this.sessionError(session, version.error);
      session.schemaVersion = version.version;
      if (typeof message.bindJson?.migratedPartition === 'string') session.migratedPartition = message.bindJson.migratedPartition;
      return this.enqueue(session, () => this.flexibleRoom.bind(session, message.needClientFileIdent));
    }
    this.enqueue(session, async () => {
      const engine = this.options.engine;
      const opened = await engine.service.open(this.info.user, message.serverPath, { trace: true });
      if (session.state === 'ended') return;
      if (opened.verdict) {
        session.traffic.add({
          at: Date.now(), direction: 'in', type: 'permissions',
          fields: { read: opened.verdict.read, write: opened.verdict.write, readGrantedByWrite: opened.verdict.readGrantedByWrite },
          detail: JSON.stringify({ read: opened.verdict.readTrace, write: opened.verdict.writeTrace, problems: opened.verdict.problems }),
        });
      }
      if (!opened.ok) {
        this.log.warn(`${this.describe(session)}: BIND ${message.serverPath} refused: ${opened.error.message}`);
        return this.sessionError(session, opened.error);
      }
      const id = partitionId(opened.partition);
      const bound = markBound(session, { partition: opened.partition, partitionId: id, canWrite: opened.verdict.write, history: await engine.history.partition(id) });
      this.log.info(`${this.describe(bound)}: bound (protocol ${this.info.protocolVersion}, ${bound.canWrite ? 'read and write' : 'read only'})`);
      if (message.needClientFileIdent) {
        bound.clientFile = await engine.history.allocateClientFile(id, this.info.user.id);
        this.send({ type: 'ident', session: bound.ident, clientFileIdent: BigInt(bound.clientFile.ident), clientFileIdentSalt: bound.clientFile.salt });
      }
    });
  }

  /** After an await: the session may have ended meanwhile. */
  private isLive(session: Session): session is IdentifiedSession {
    return session.state === 'identified' && !this.closed;
  }

  private liveSessions(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.state !== 'ended') n++;
    return n;
  }

  private async handle(session: Session, message: Extract<ClientMessage, { type: 'ident' | 'upload' | 'mark' }>): Promise<void> {
    if (session.state === 'ended') return;
    session.traffic.add(incoming(message));
    switch (message.type) {
      case 'ident': return this.ident(session, message);
      case 'upload': return this.upload(session, message);
      case 'mark': {
        if (session.state !== 'identified') return this.fail(ErrorCode.bad_message_order, 'Bad input message order: MARK before IDENT');
        // Answered once everything the server had is sent: after the wait, when the client reads slowly.
        session.pendingMarks.push(message.requestIdent);
        await this.pump(session);
      }
    }
  }

  private async ident(session: Session, message: Extract<ClientMessage, { type: 'ident' }>): Promise<void> {
    if (session.state !== 'bound') return this.fail(ErrorCode.bad_message_order, `Bad input message order: IDENT ${session.state === 'identified' ? 'sent twice' : 'before the session was bound'}`);
    const engine = this.options.engine;
    const history = session.history;
    const ident = Number(message.clientFileIdent);
    const reset = (code: number, name: string, why: string) => this.sessionError(session, { code, name, message: why, action: 'client-reset', tryAgain: false });
    if (session.clientFile && session.clientFile.ident !== ident) return reset(ErrorCode.bad_client_file_ident, 'ErrorBadClientFileIdent', `Bad client file identifier (IDENT): the server gave this session client file ${session.clientFile.ident}, not ${ident}`);
    // Read in the history's queue, after this user's earlier tasks: an upload of this client file still being
    // integrated (from a session that just ended) has saved its record by then.
    const file = session.clientFile ?? await engine.run(session.partitionId, () => engine.history.clientFile(ident), this.info.user.id);
    if (!file || file.salt !== message.clientFileIdentSalt) {
      return reset(ErrorCode.bad_client_file_ident, 'ErrorBadClientFileIdent', `Bad client file identifier (IDENT): client file ${ident} is unknown to this server (its sync history was reset or terminated); the client must reset`);
    }
    if (file.partition !== session.partitionId) return reset(ErrorCode.bad_client_file_ident, 'ErrorBadClientFileIdent', `Bad client file identifier (IDENT): client file ${ident} belongs to another partition`);
    if (file.userId !== this.info.user.id) return reset(ErrorCode.user_mismatch, 'ErrorUserMismatch', `User mismatch for client file identifier (IDENT): client file ${ident} belongs to another user`);
    for (const other of this.sessions.values()) {
      if (other !== session && other.state === 'identified' && other.clientFile?.ident === ident) return this.fail(ErrorCode.bound_in_other_session, `Client file bound in other session (IDENT): client file ${ident} is bound in session ${other.ident}`);
    }
    const downloadVersion = Number(message.downloadServerVersion);
    const latestVersion = Number(message.latestServerVersion);
    if (downloadVersion > history.latest || latestVersion > history.latest) {
      return reset(ErrorCode.bad_server_version, 'ErrorBadServerVersion', `Bad server version (IDENT): the client has server version ${Math.max(downloadVersion, latestVersion)}, the server's latest is ${history.latest}; the server's history was lost`);
    }
    if (latestVersion > 0 && message.latestServerVersionSalt !== history.salt) {
      return reset(ErrorCode.diverging_histories, 'ErrorDivergingHistories', 'Diverging histories (IDENT): the client synced with another history of this partition');
    }
    if (downloadVersion > 0 && downloadVersion < history.base) {
      return reset(ErrorCode.client_file_expired, 'ErrorClientFileExpired', `Client file has expired: it last synced at server version ${downloadVersion}, and the history before ${history.base} was compacted`);
    }
    // An upload integrated just before a crash may be in the history without its client file record updated.
    for (const entry of history.entries) {
      if (entry.originFileIdent === file.ident && entry.clientVersion > file.uploadClientVersion) {
        file.uploadClientVersion = entry.clientVersion;
        file.uploadServerVersion = entry.baseVersion;
      }
    }
    // Compensating writes whose revert the client has (saved so with the client file's next upload).
    if (file.compensations) file.compensations = file.compensations.filter((c) => c.serverVersion > downloadVersion);
    const identified = markIdentified(session, file);
    identified.downloadServerVersion = downloadVersion;
    identified.downloadClientVersion = Number(message.downloadClientVersion);
    identified.unlisten = engine.listen(identified.partitionId, () => this.schedulePump(identified));
    if (isFlexible(identified)) {
      const unlisten = identified.unlisten;
      const rulesMayHaveChanged = (why: RulesChange) => () => {
        identified.rulesChanges.add(why);
        if (identified.rulesQueued || stateOf(identified) !== 'identified') return;
        identified.rulesQueued = true;
        this.enqueue(identified, () => this.flexibleRoom.reevaluateRules(identified));
      };
      const unwatchData = engine.watchCustomData(this.info.user.id, rulesMayHaveChanged('the user\'s custom data changed'));
      const unwatchRules = engine.watchRules(rulesMayHaveChanged('the app\'s rules changed'));
      identified.unlisten = () => { unlisten(); unwatchData(); unwatchRules(); };
      return this.flexibleRoom.ident(identified, message.query);
    }
    // A new client sends its first UPLOAD (its schema, its offline writes) right after IDENT: integrated
    // first, the bootstrap says so and the client need not transform those changes against the whole
    // partition's state. The pump waits for the messages that came with the IDENT.
    if (session.downloadServerVersion === 0) {
      setImmediate(() => this.schedulePump(session));
      return;
    }
    await this.pump(session);
  }

  private async upload(session: Session, message: Extract<ClientMessage, { type: 'upload' }>): Promise<void> {
    if (session.state !== 'identified') return this.fail(ErrorCode.bad_message_order, 'Bad input message order: UPLOAD before IDENT');
    const started = performance.now();
    const changesets = uploadedChangesets(message);
    const result = isFlexible(session)
      ? await this.flexibleRoom.integrate(session, changesets)
      : await this.options.engine.integrate({ clientFile: session.clientFile, partition: session.partition, userId: this.info.user.id, canWrite: session.canWrite }, changesets);
    this.options.observer?.upload((performance.now() - started) / 1000, result.ok ? 'ok' : 'refused');
    if (!this.isLive(session)) return;
    if (!result.ok) {
      this.log.warn(`${this.describe(session)}: upload refused: ${result.error.message}`);
      return this.sessionError(session, result.error);
    }
    await this.pump(session);
  }

  private schedulePump(session: Session): void {
    if (session.pumpQueued || session.state !== 'identified') return;
    session.pumpQueued = true;
    this.enqueue(session, async () => {
      session.pumpQueued = false;
      await this.pump(session);
    });
  }

  /** The MARKs received so far, answered once their DOWNLOADs are sent. */
  private answerMarks(session: IdentifiedSession): void {
    for (const requestIdent of session.pendingMarks.splice(0)) {
      this.send({ type: 'mark', session: session.ident, requestIdent });
      // A resumed flexible client with nothing to download: the answer completes its download (realm-core
      // completes it on the MARK when it holds the server's version); the session's first DOWNLOAD follows.
      if (!session.sentFirstDownload && !session.bootstrapPending) this.sendDownload(session, []);
    }
  }

  /**
   * Sends DOWNLOADs until the client has every server version (a bootstrap first for a new client file), then
   * answers its MARKs; stops while the socket holds more than the client has read (SendBackpressure), to go on
   * once it drained.
   */
  private async pump(session: Session): Promise<void> {
    if (session.state !== 'identified' || this.closed) return;
    // A MARK waits for a pending bootstrap: its answer after the lastInBatch DOWNLOAD is what completes the
    // query version (a migrating client's fresh realm waits for set 0 to complete before it subscribes).
    if (session.bootstrapPending) return;
    if (session.routerPaused || session.downloadsPaused) return this.answerMarks(session);
    const history = session.history;
    const file = session.clientFile;
    if (session.downloadServerVersion === 0 && !session.view) {
      const started = performance.now();
      const bootstrap = await this.options.engine.bootstrap(session.partition, file);
      if (!this.isLive(session)) return;
      session.downloadServerVersion = bootstrap.version;
      session.downloadClientVersion = bootstrap.clientVersion;
      this.sendDownload(session, bootstrap.instructionCount > 0 ? [{
        version: BigInt(bootstrap.version), lastIntegratedRemoteVersion: BigInt(bootstrap.clientVersion), originTimestamp: bootstrap.timestamp,
        originFileIdent: 1n, originalChangesetSize: bootstrap.changeset.length, instructions: [], bytes: bootstrap.changeset,
      }] : []);
      this.options.observer?.bootstrap((performance.now() - started) / 1000);
    }
    for (;;) {
      const pending = history.since(session.downloadServerVersion);
      if (pending.length === 0) break;
      if (this.sendGate.blocked()) {
        this.waitingForReader.add(session);
        return;
      }
      const started = performance.now();
      const batch: ChangesetEntry[] = [];
      let bytes = 0;
      let compensation: PendingCompensation | undefined;
      // A changeset of `entry`'s version for the batch; true when the batch is full.
      const add = (entry: HistoryEntry, bytesOut: Uint8Array, originFileIdent = entry.originFileIdent, originalSize = bytesOut.length): boolean => {
        batch.push({
          version: BigInt(entry.version), lastIntegratedRemoteVersion: BigInt(session.downloadClientVersion), originTimestamp: entry.timestamp,
          originFileIdent: BigInt(originFileIdent), originalChangesetSize: originalSize, instructions: [], bytes: bytesOut,
        });
        bytes += bytesOut.length;
        return bytes >= DOWNLOAD_BATCH_BYTES;
      };
      for (const entry of pending) {
        compensation = session.view && file.compensations?.find((c) => c.serverVersion === entry.version);
        // Its own message, after what came before it.
        if (compensation) break;
        session.downloadServerVersion = entry.version;
        if (entry.originFileIdent === file.ident) {
          session.downloadClientVersion = entry.clientVersion;
          if (session.view && entry.changeset.length > 0) {
            const engine = this.options.engine;
            const erased = await session.view.uploaded(engine.entryChanges(entry), await this.versioning.viewSchema(session.schemaVersion), engine.entryDocuments(entry));
            if (!this.isLive(session)) return;
            session.view.noteChanges(entry.version);
            if (erased.length > 0 && add(entry, encodeChangeset(erased), SERVER_FILE_IDENT)) break;
          }
          continue;
        }
        if (entry.changeset.length === 0) continue;
        if (session.view) {
          const engine = this.options.engine;
          const filtered = await session.view.filter(engine.entryChanges(entry), await this.versioning.viewSchema(session.schemaVersion), engine.entryDocuments(entry));
          if (!this.isLive(session)) return;
          session.view.noteChanges(entry.version);
          if (filtered.instructions.length === 0) continue;
          if (add(entry, filtered.unchanged ? entry.changeset : encodeChangeset(filtered.instructions))) break;
          continue;
        }
        if (add(entry, entry.changeset, entry.originFileIdent, entry.originalSize || entry.changeset.length)) break;
      }
      if (session.view?.changesNoted) {
        await session.view.record(this.options.engine.history.views, file.ident);
        if (!this.isLive(session)) return;
      }
      if (batch.length > 0 || !compensation) this.sendDownload(session, batch, 'steadyState', 1, started);
      if (compensation && batch.length === 0 && isFlexible(session)) {
        await this.flexibleRoom.sendCompensation(session, compensation);
        if (!this.isLive(session)) return;
      }
    }
    // A flexible client resuming with nothing to download gets its first DOWNLOAD with the answer to its MARK.
    const waitsForMark = !session.sentFirstDownload && session.view !== undefined;
    if (!waitsForMark && (!session.sentFirstDownload || session.reportedUploadVersion !== file.uploadClientVersion)) this.sendDownload(session, []);
    this.answerMarks(session);
  }

  /** `started`: when building it from the history began, for its duration. */
  private sendDownload(session: IdentifiedSession, changesets: ChangesetEntry[], batchState: 'moreToCome' | 'lastInBatch' | 'steadyState' = 'steadyState', progressEstimate = 1, started?: number): void {
    const history = session.history;
    const file = session.clientFile;
    if (this.options.observer && !this.closed) {
      let bytes = 0;
      for (const c of changesets) bytes += c.bytes?.length ?? 0;
      this.options.observer.download(changesets.length, bytes, started === undefined ? undefined : (performance.now() - started) / 1000);
    }
    session.sentFirstDownload = true;
    session.reportedUploadVersion = file.uploadClientVersion;
    this.send({
      type: 'download', session: session.ident,
      downloadServerVersion: BigInt(session.downloadServerVersion), downloadClientVersion: BigInt(session.downloadClientVersion),
      latestServerVersion: BigInt(history.latest), latestServerVersionSalt: history.salt,
      uploadClientVersion: BigInt(file.uploadClientVersion), uploadServerVersion: BigInt(file.uploadServerVersion),
      downloadableBytes: 0n, changesets,
      ...(session.view ? { flexible: { queryVersion: BigInt(session.view.queryVersion), batchState, progressEstimate } } : {}),
    });
  }

  private unbind(ident: number): void {
    const session = this.sessions.get(ident);
    if (!session) return this.fail(ErrorCode.bad_session_ident, `Bad session identifier in input message: UNBIND of session ${ident}, which is not bound`);
    if (session.state === 'ended') {
      // The answer to a session error: the session ident may be bound again.
      this.sessions.delete(ident);
      return;
    }
    this.enqueue(session, async () => {
      this.endSession(session);
      this.sessions.delete(ident);
      this.send({ type: 'unbound', session: ident });
    });
  }

  private endSession(session: Session): void {
    markEnded(session);
    session.unlisten?.();
    session.unlisten = undefined;
    session.downloadsPaused?.resume();
  }

  /** A session-level error: JSON_ERROR (the client answers with UNBIND), the session ends. */
  private sessionError(session: Session, error: SyncError | EngineError, details: Record<string, unknown> = {}): void {
    if (session.state === 'ended') return;
    this.endSession(session);
    const recoveryDisabled = this.options.engine.service.runtimeState.running?.settings.isRecoveryModeDisabled ?? false;
    const body: Record<string, unknown> = {
      // The client follows `action` over the two flags: a reset with recovery disabled says so in it.
      message: error.message, tryAgain: error.tryAgain,
      action: error.code === 212 ? 'ProtocolViolation' : error.action === 'client-reset' && recoveryDisabled ? 'ClientResetNoRecovery' : ACTIONS[error.action],
      shouldClientReset: error.action === 'client-reset', isRecoveryModeDisabled: recoveryDisabled, logURL: '',
      ...(error.action === 'retry-later' ? { backoffIntervalSec: 5, backoffMaxDelaySec: 300, backoffMultiplier: 2 } : {}),
      ...error.body,
      ...details,
    };
    if (this.info.protocolVersion >= 4) this.send({ type: 'json_error', errorCode: error.code, session: session.ident, body });
    else this.send({ type: 'error', errorCode: error.code, message: error.message, tryAgain: error.tryAgain, session: session.ident });
  }

  /** A connection-level error: ERROR, then the connection closes. */
  private fail(code: number, message: string): void {
    if (this.closed) return;
    this.log.warn(`${this.describe()}: error ${code}: ${message}`);
    // realm-core 14 stops outright on an ERROR with limits_exceeded (104): it gets other_error (101), which it reports.
    const sent = code === ErrorCode.limits_exceeded ? { errorCode: ErrorCode.other_error, message: `Limits exceeded in input message: ${message}` } : { errorCode: code, message };
    this.send({ type: 'error', ...sent, tryAgain: false, session: 0 });
    this.closeAfter(1000);
  }

  private send(message: ServerMessage): void {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return;
    if ('session' in message && message.session !== 0) this.sessions.get(message.session)?.traffic.add(outgoing(message));
    if (logs(this.log, 'debug')) this.log.debug?.(`${this.describe()}: sent ${describeMessage(message)}`);
    this.ws.send(encodeServerMessage(message, this.info.protocolVersion));
    this.sendGate.sent();
  }

  /**
   * The runtime is stopping: every live session gets `error` (a try-again error, so the SDK keeps the realm
   * and comes back after its backoff), then the connection closes with 1001 (going away). Nothing the
   * client sends from now on is read.
   */
  goAway(error: SyncError): void {
    if (this.closed) return;
    this.endAllSessions(error);
    this.closeAfter(WS_CLOSE_GOING_AWAY, 'the server is shutting down');
  }

  /** Closes the connection now (runtime shutdown, revocation). */
  close(): void {
    this.ws.terminate();
    this.dispose();
  }

  private dispose(): void {
    if (this.closed) return;
    this.closed = true;
    this.inbox.length = 0;
    this.sendGate.dispose();
    this.waitingForReader.clear();
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    for (const session of this.sessions.values()) this.endSession(session);
    this.onClose(this);
  }
}

