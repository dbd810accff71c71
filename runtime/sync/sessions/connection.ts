// One Realm sync WebSocket connection: its sessions (one per partition realm the client opens) and their
// flow: BIND (permissions), IDENT (client file, resume point), UPLOAD (integrated by the engine),
// DOWNLOAD (bootstrap, then the history the client has not seen), MARK, UNBIND; PING/PONG; errors for a
// session (JSON_ERROR, the session ends) or the connection (ERROR, the connection closes). Messages of one
// session are handled in order; sessions run independently.
import { randomBytes } from 'node:crypto';
import type { WebSocket } from 'ws';
import type { EvaluationUser } from '../../../core/rules';
import { partitionId, partitionText, type SyncError } from '../../../core/sync';
import { SYNC_ERRORS } from '../service';
import { schemaVersionRefusal } from '../schema-versions';
import type { Logger } from '../../http/server';
import { StoreError, StoreErrorCode } from '../../store/types';
import type { ClientFileRecord, HistoryEntry, PartitionHistory, PendingCompensation } from '../history/history';
import { ErrorCode, WireError } from '../wire/errors';
import type { ChangesetEntry, Instruction } from '../wire/instructions';
import { encodeServerMessage, parseClientMessage, type ClientMessage, type ServerMessage } from '../wire/messages';
import { FLEXIBLE_HISTORY, type EngineError, type RealmSyncEngine, type UploadedChangeset } from './engine';
import { compileQueryBody, decodeHeld, FlexibleView, type CompiledQueries, type UserCollections } from '../flexible/view';
import { encodeBase64PrimaryKey, encodeChangeset, encodeChangesetBatches } from '../wire/changeset';
import { syncTimestamp } from '../translate/values';
import { SERVER_FILE_IDENT } from '../history/history';
import { TrafficLog, type TrafficEntry } from './traffic';
import { logs } from '../../log';
import { parseTestCommand, SESSION_KEEPING_ERRORS } from './test-commands';
import { SendBackpressure, STALLED_READER_MS } from './send-backpressure';

export const MAX_SESSIONS_PER_CONNECTION = 256;

/** An UPLOAD's changesets as the engine takes them. */
function uploadedChangesets(message: Extract<ClientMessage, { type: 'upload' }>): UploadedChangeset[] {
  return message.changesets.map((c) => ({
    clientVersion: Number(c.version), baseVersion: Number(c.lastIntegratedRemoteVersion), timestamp: c.originTimestamp,
    instructions: c.instructions, size: c.bytes?.length ?? 0,
  }));
}
/** For each user's rule-checked collections, what their rules' outcome depends on (`RealmSyncEngine.ruleOutcomeKey`). */
const rulesOutcomeKeys = new WeakMap<UserCollections, string>();
/**
 * A flexible bootstrap's changesets (one per DOWNLOAD): closed at this many instructions or bytes, so a large
 * bootstrap comes in several messages as the platform's did (realm-core's bootstrap tests count on it).
 */
const BOOTSTRAP_CHANGESET_LIMITS = { maxInstructions: 20_000, maxBytes: 1_000_000 };
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

/** What the sync sessions view and `asl sync status` show of a live session. */
export interface SessionInfo {
  connection: string;
  session: number;
  userId: string;
  partition: string;
  protocolVersion: number;
  state: SessionState;
  clientFileIdent?: number;
  downloadedVersion: number;
  uploadedClientVersion: number;
}

type SessionState = 'binding' | 'bound' | 'identified' | 'ended';

type RulesChange = 'the user\'s custom data changed' | 'the app\'s rules changed';

interface Session {
  ident: number;
  state: SessionState;
  chain: Promise<void>;
  partition?: unknown;
  partitionId?: string;
  canWrite: boolean;
  history?: PartitionHistory;
  clientFile?: ClientFileRecord;
  /** The last server version scanned for this client, and its client version integrated at that point. */
  downloadServerVersion: number;
  downloadClientVersion: number;
  /** Upload progress last reported, to know when a DOWNLOAD must acknowledge an upload. */
  reportedUploadVersion: number;
  sentFirstDownload: boolean;
  pumpQueued: boolean;
  /** MARK request idents not answered yet (their DOWNLOADs wait for the client to read). */
  pendingMarks: bigint[];
  /** Flexible sync: a re-evaluation of the user's rules is queued (custom user data or the app's rules changed). */
  rulesQueued?: boolean;
  /** Flexible sync: why the queued re-evaluation runs. */
  rulesChanges: Set<RulesChange>;
  /** Flexible sync: a new client file's first bootstrap waits for the messages that came with its IDENT. */
  bootstrapPending?: boolean;
  /** Flexible sync: the subscription set a new client file named at IDENT (the key of a shared bootstrap). */
  initialQueryBody?: string;
  unlisten?: () => void;
  traffic: TrafficLog;
  /** Flexible sync: the active subscription set and the objects the client holds through it. */
  view?: FlexibleView;
  /** Flexible sync: objects of this session's compensating writes, until the client uploads on top of the revert. */
  reverted: Map<string, number>;
  /** TEST_COMMAND PAUSE_ROUTER_SESSION: no history reaches the session until its next subscription change. */
  routerPaused?: boolean;
  /** TEST_COMMAND PAUSE_DOWNLOAD_BUILDER: no DOWNLOAD is built for the session until RESUME_DOWNLOAD_BUILDER. */
  downloadsPaused?: { resumed: Promise<void>; resume: () => void };
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
}

const ACTIONS: Record<SyncError['action'], string> = {
  'client-reset': 'ClientReset', 'retry-later': 'Transient', 'fix-client': 'ApplicationBug', 'refresh-token': 'RefreshUser', none: 'ApplicationBug',
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

  constructor(
    private readonly ws: WebSocket,
    readonly info: { user: EvaluationUser; protocolVersion: number; flexible?: boolean; remote: string; expiresAt?: number; loginSessionId?: string },
    private readonly options: ConnectionOptions,
    private readonly onClose: (connection: RealmSyncConnection) => void,
  ) {
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
        this.send({ type: 'error', errorCode: 101, message: `Other connection level error: the client read nothing for ${STALLED_READER_MS / 1000} s`, tryAgain: true, session: 0 });
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
  endSessions(match: (info: SessionInfo) => boolean, error: SyncError): void {
    for (const session of this.sessions.values()) {
      if (session.state !== 'ended' && match(this.sessionInfo(session))) this.sessionError(session, error);
    }
  }

  /** The recent traffic of one of this connection's sessions (an ended one too, until its ident is bound again). */
  traffic(session: number): TrafficEntry[] | undefined {
    return this.sessions.get(session)?.traffic.recent();
  }

  sessionInfos(): SessionInfo[] {
    return [...this.sessions.values()].filter((s) => s.state !== 'ended').map((s) => this.sessionInfo(s));
  }

  private sessionInfo(s: Session): SessionInfo {
    return {
      connection: this.id, session: s.ident, userId: this.info.user.id, partition: s.view ? `flexible (query version ${s.view.queryVersion})` : s.partition === undefined ? '' : partitionText(s.partition),
      protocolVersion: this.info.protocolVersion, state: s.state,
      ...(s.clientFile ? { clientFileIdent: s.clientFile.ident } : {}),
      downloadedVersion: s.downloadServerVersion, uploadedClientVersion: s.clientFile?.uploadClientVersion ?? 0,
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
      if (!isBinary) throw new WireError(102, 'Unknown type of input message: the protocol sends binary frames');
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
        return this.enqueue(session, () => this.query(session, Number(message.queryVersion), message.body));
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
    const session: Session = {
      ident: message.session, state: 'binding', chain: Promise.resolve(), canWrite: false,
      downloadServerVersion: 0, downloadClientVersion: 0, reportedUploadVersion: -1, sentFirstDownload: false, pumpQueued: false, pendingMarks: [],
      traffic: existing?.traffic ?? new TrafficLog(), reverted: new Map(), rulesChanges: new Set(),
    };
    session.traffic.add({ at: Date.now(), direction: 'in', type: 'bind', fields: { session: message.session, path: message.serverPath, needClientFileIdent: message.needClientFileIdent } });
    this.sessions.set(message.session, session);
    // 201, not realm's 224 (too_many_sessions), which a realm-core 14 client does not expect and stops on.
    if (tooMany) return this.sessionError(session, { code: ErrorCode.other_session_error, name: 'ErrorOtherSession', message: `Too many sessions in connection (BIND): at most ${MAX_SESSIONS_PER_CONNECTION}`, action: 'none', tryAgain: false });
    if (this.info.flexible) {
      const refusal = schemaVersionRefusal(message.bindJson);
      if (refusal) return this.sessionError(session, refusal);
      return this.enqueue(session, () => this.bindFlexible(session, message.needClientFileIdent));
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
      session.partition = opened.partition;
      session.partitionId = partitionId(opened.partition);
      session.canWrite = opened.verdict.write;
      session.history = await engine.history.partition(session.partitionId);
      session.state = 'bound';
      this.log.info(`${this.describe(session)}: bound (protocol ${this.info.protocolVersion}, ${session.canWrite ? 'read and write' : 'read only'})`);
      if (message.needClientFileIdent) {
        session.clientFile = await engine.history.allocateClientFile(session.partitionId, this.info.user.id);
        this.send({ type: 'ident', session: session.ident, clientFileIdent: BigInt(session.clientFile.ident), clientFileIdentSalt: session.clientFile.salt });
      }
    });
  }

  /** Flexible sync BIND: sync must run; the user's custom data is read now, and again whenever it changes. */
  private async bindFlexible(session: Session, needClientFileIdent: boolean): Promise<void> {
    const engine = this.options.engine;
    const service = engine.service;
    if (service.runtimeState.status === 'paused') return this.sessionError(session, SYNC_ERRORS.disabledSession('sync is paused (disabled session); try again after it resumes'));
    if (service.runtimeState.status !== 'enabled' || !service.flexible) return this.sessionError(session, SYNC_ERRORS.disabledSession('flexible sync is not enabled for this app'));
    session.view = new FlexibleView(await this.userCollections(), engine.storedCollections());
    session.partitionId = FLEXIBLE_HISTORY;
    session.canWrite = true;
    session.history = await engine.history.partition(FLEXIBLE_HISTORY);
    if (session.state === 'ended') return;
    session.state = 'bound';
    this.log.info(`${this.describe(session)}: bound (flexible sync, protocol ${this.info.protocolVersion})`);
    if (needClientFileIdent) {
      session.clientFile = await engine.history.allocateClientFile(FLEXIBLE_HISTORY, this.info.user.id);
      this.send({ type: 'ident', session: session.ident, clientFileIdent: BigInt(session.clientFile.ident), clientFileIdentSalt: session.clientFile.salt });
    }
  }

  /** The synced collections as the user's rules let this session use them, with the user's custom data as it is now. */
  private async userCollections(): Promise<UserCollections> {
    const engine = this.options.engine;
    const customData = await engine.service.appContext?.customUserData(this.info.user.id);
    const user = { ...this.info.user, custom_data: customData ?? {} };
    const collections = engine.userCollections(user);
    // What the rules' outcome depends on: clients with the same one and the same queries share a bootstrap.
    rulesOutcomeKeys.set(collections, engine.ruleOutcomeKey(user));
    return collections;
  }

  /**
   * The user's custom user data changed: the session's rules are evaluated again. The client first gets the
   * history as the old rules show it, then one changeset at that version erasing what it may no longer read
   * and bringing what it now may; later uploads are checked with the new rules.
   */
  private async reevaluateRules(session: Session): Promise<void> {
    session.rulesQueued = false;
    const why = [...session.rulesChanges].join('; ');
    session.rulesChanges.clear();
    if (!this.isLive(session)) return;
    const engine = this.options.engine;
    const collections = await this.userCollections();
    await engine.run(FLEXIBLE_HISTORY, async () => {
      await this.pump(session);
      if (!this.isLive(session)) return;
      const view = session.view!;
      const changes = await view.regrant(collections, await engine.realmSchema());
      if (!this.isLive(session) || changes.length === 0) return;
      view.noteChanges(session.downloadServerVersion);
      await view.record(engine.history.views, session.clientFile!.ident);
      if (!this.isLive(session)) return;
      this.log.info(`${this.describe(session)}: ${why}; rules evaluated again (${changes.filter((i) => i.type === 'EraseObject').length} objects erased, ${changes.filter((i) => i.type === 'CreateObject').length} brought or updated)`);
      this.sendDownload(session, [{
        version: BigInt(session.downloadServerVersion), lastIntegratedRemoteVersion: BigInt(session.downloadClientVersion), originTimestamp: syncTimestamp(Date.now()),
        originFileIdent: BigInt(SERVER_FILE_IDENT), originalChangesetSize: 0, instructions: changes,
      }]);
    }, this.info.user.id);
  }

  /**
   * Compiles a subscription set; a refusal is a QUERY_ERROR for that version, the session keeps its set.
   * In development mode, fields the queries read that are not queryable become queryable first.
   */
  private async compileQueries(session: Session, version: number, body: string): Promise<CompiledQueries> {
    const engine = this.options.engine;
    const service = engine.service;
    const schema = await engine.realmSchema();
    const compile = () => compileQueryBody(body, (type) => service.collectionOfType(type), service.runtimeState.running?.settings.queryable ?? {}, {
      asymmetric: (table) => schema.get(table)?.asymmetric === true,
    });
    let compiled = compile();
    if (!compiled.ok && compiled.notQueryable) {
      const added = await engine.developQueryableFields(compiled.notQueryable);
      if (added.length > 0) compiled = compile();
    }
    if (!compiled.ok && this.isLive(session)) {
      this.log.warn(`${this.describe(session)}: query version ${version} refused: ${compiled.message}`);
      this.send({ type: 'query_error', errorCode: 226, session: session.ident, queryVersion: BigInt(version), message: compiled.message });
    }
    return compiled;
  }

  /** QUERY: a new subscription set; what the client has is brought up to date, then the new view is bootstrapped. */
  private async query(session: Session, version: number, body: string): Promise<void> {
    if (session.state !== 'identified') return this.fail(ErrorCode.bad_message_order, 'Bad input message order: QUERY before IDENT');
    const view = session.view!;
    if (version <= view.queryVersion) return this.sessionError(session, { code: ErrorCode.bad_query, name: 'ErrorBadQuery', message: `Bad query (QUERY): query version ${version} is not after the active version ${view.queryVersion}`, action: 'fix-client', tryAgain: false });
    session.traffic.add({ at: Date.now(), direction: 'in', type: 'query', fields: { queryVersion: version }, detail: body.slice(0, 2000) });
    const compiled = await this.compileQueries(session, version, body);
    if (!compiled.ok || !this.isLive(session)) return;
    await this.bootstrapView(session, { version, tables: compiled.tables, body });
  }

  /**
   * Sends the active query version's bootstrap at the server version the client has reached: changesets
   * within BOOTSTRAP_CHANGESET_LIMITS, one per DOWNLOAD, `moreToCome` until the `lastInBatch`
   * one (the client applies them together).
   */
  private async bootstrapView(session: Session, next?: { version: number; tables: Parameters<FlexibleView['setQueries']>[1]; body: string }): Promise<void> {
    const engine = this.options.engine;
    const view = session.view!;
    if (session.downloadsPaused) await session.downloadsPaused.resumed;
    if (!this.isLive(session)) return;
    // A subscription change's bootstrap brings the session's router back (TEST_COMMAND PAUSE_ROUTER_SESSION).
    session.routerPaused = false;
    // Timed from here, the wait for the history's queue included, as a partition's bootstrap and an upload are.
    const started = performance.now();
    let sent = false;
    await engine.run(FLEXIBLE_HISTORY, async () => {
      // A client with no subscription yet (a new client file, or a first QUERY) gets what any client with the
      // same queries and rule outcome gets: such a bootstrap is built once and shared.
      const fromNothing = (view.queryVersion === 0 || session.downloadServerVersion === 0) && view.holdsNothing();
      const queryVersion = next ? next.version : view.queryVersion;
      const body = next ? next.body : session.initialQueryBody;
      const sharedKey = fromNothing && body !== undefined && rulesOutcomeKeys.has(view.collections)
        ? `${rulesOutcomeKeys.get(view.collections)}\u0000${queryVersion}\u0000${body}` : undefined;
      const history = session.history!;
      const cached = sharedKey === undefined ? undefined : engine.sharedFlexibleBootstrap(sharedKey, history);
      // A client never goes back to an older server version: a bootstrap older than the client's version
      // serves when the history between them changed no object (a new client's schema upload, empty ones).
      // Like the platform's cached snapshots, it may be older than the latest version: the history after it
      // follows as for any client catching up, before the MARK that completes the query version.
      const shared = cached && history.since(cached.version).every((e) => e.version > session.downloadServerVersion || engine.entryChanges(e).objects.size === 0) ? cached : undefined;
      if (next) {
        // In the history's queue nothing is appended meanwhile: what the client holds is brought up to the
        // latest version under the old queries, so the bootstrap only adds and erases objects (a client
        // that was not bootstrapped yet gets this version's bootstrap alone; one that holds nothing needs
        // nothing brought up before a shared bootstrap).
        if (!shared) await this.pump(session);
        if (!this.isLive(session)) return;
        view.setQueries(next.version, next.tables);
      }
      session.bootstrapPending = false;
      if (shared) {
        sent = true;
        return this.sendBootstrap(session, shared.changesets, Math.max(shared.version, session.downloadServerVersion), shared.held);
      }
      const instructions = await view.bootstrap(await engine.realmSchema());
      if (!this.isLive(session)) return;
      const changesets = encodeChangesetBatches(instructions, BOOTSTRAP_CHANGESET_LIMITS);
      // The documents the bootstrap read hold everything up to the latest version, this client's uploads included.
      const version = session.history!.latest;
      // Encoded once, sent to this client and to the next ones with the same queries and rule outcome.
      if (sharedKey !== undefined) engine.keepFlexibleBootstrap(sharedKey, { version, held: view.heldBytes(), changesets });
      sent = true;
      return this.sendBootstrap(session, changesets, version);
    }, this.info.user.id);
    if (sent) this.options.observer?.bootstrap((performance.now() - started) / 1000);
  }

  /**
   * Sends a bootstrap of the session's view (`held`: the objects a shared one brings, which the view takes
   * on) at `version` (its own, or the client's when no object changed since), then the history after it
   * through the view, as any client catches up.
   */
  private async sendBootstrap(session: Session, changesets: readonly Uint8Array[], atVersion: number, held?: Uint8Array): Promise<void> {
    const engine = this.options.engine;
    const view = session.view!;
    if (held) view.holdAlso(held);
    // Later than any version the client has: its uploads made before it integrated the bootstrap are based
    // on an earlier one, so the engine knows to transform them against the bootstrap as the client did.
    const version = atVersion > session.downloadServerVersion ? atVersion : await engine.newServerVersion(session.history!);
    session.downloadServerVersion = version;
    session.downloadClientVersion = Math.max(session.downloadClientVersion, session.clientFile!.uploadClientVersion);
    // Once the client applies it, its IDENT names this query version.
    await view.record(engine.history.views, session.clientFile!.ident, version);
    if (!this.isLive(session)) return;
    const timestamp = syncTimestamp(Date.now());
    engine.sentBootstraps.sent(session.clientFile!.ident, {
      version, clientVersion: session.downloadClientVersion, originTimestamp: timestamp, originFileIdent: BigInt(SERVER_FILE_IDENT), changesets,
    });
    changesets.forEach((bytes, i) => {
      this.sendDownload(session, [{
        version: BigInt(version), lastIntegratedRemoteVersion: BigInt(session.downloadClientVersion), originTimestamp: timestamp,
        originFileIdent: BigInt(SERVER_FILE_IDENT), originalChangesetSize: bytes.length, instructions: [], bytes,
      }], i === changesets.length - 1 ? 'lastInBatch' : 'moreToCome', (i + 1) / changesets.length);
    });
    await this.pump(session);
  }

  /** After an await: the session may have ended meanwhile. */
  private isLive(session: Session): boolean {
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
    const history = session.history!;
    const ident = Number(message.clientFileIdent);
    const reset = (code: number, name: string, why: string) => this.sessionError(session, { code, name, message: why, action: 'client-reset', tryAgain: false });
    if (session.clientFile && session.clientFile.ident !== ident) return reset(ErrorCode.bad_client_file_ident, 'ErrorBadClientFileIdent', `Bad client file identifier (IDENT): the server gave this session client file ${session.clientFile.ident}, not ${ident}`);
    // Read in the history's queue, after this user's earlier tasks: an upload of this client file still being
    // integrated (from a session that just ended) has saved its record by then.
    const file = session.clientFile ?? await engine.run(session.partitionId!, () => engine.history.clientFile(ident), this.info.user.id);
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
    session.clientFile = file;
    // Compensating writes whose revert the client has (saved so with the client file's next upload).
    if (file.compensations) file.compensations = file.compensations.filter((c) => c.serverVersion > downloadVersion);
    session.downloadServerVersion = downloadVersion;
    session.downloadClientVersion = Number(message.downloadClientVersion);
    session.state = 'identified';
    session.unlisten = engine.listen(session.partitionId!, () => this.schedulePump(session));
    if (session.view) {
      const unlisten = session.unlisten;
      const rulesMayHaveChanged = (why: RulesChange) => () => {
        session.rulesChanges.add(why);
        if (session.rulesQueued || session.state !== 'identified') return;
        session.rulesQueued = true;
        this.enqueue(session, () => this.reevaluateRules(session));
      };
      const unwatchData = engine.watchCustomData(this.info.user.id, rulesMayHaveChanged('the user\'s custom data changed'));
      const unwatchRules = engine.watchRules(rulesMayHaveChanged('the app\'s rules changed'));
      session.unlisten = () => { unlisten(); unwatchData(); unwatchRules(); };
      return this.identFlexible(session, message.query);
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

  /** Flexible IDENT: the active subscription set; a new client file gets its bootstrap, a known one resumes with its view. */
  private async identFlexible(session: Session, query: { version: bigint; body: string } | undefined): Promise<void> {
    const view = session.view!;
    const version = Number(query?.version ?? 0n);
    // A client file may have records whatever its IDENT says (a bootstrap interrupted before it completed,
    // a resume at query version 0): the next ones follow them.
    view.recordSequence = await this.options.engine.history.views.nextSequence(session.clientFile!.ident);
    if (!this.isLive(session)) return;
    if (version > 0) {
      const compiled = await this.compileQueries(session, version, query!.body);
      if (!this.isLive(session)) return;
      if (compiled.ok) {
        view.setQueries(version, compiled.tables);
        session.initialQueryBody = query!.body;
      }
    }
    if (session.downloadServerVersion === 0) {
      // As for partition sync: the client's first UPLOAD (its schema, offline writes) is integrated before
      // the bootstrap, which then says so, and the client need not transform it against every object.
      // Query version 0 (no subscription yet) is bootstrapped too, empty: its lastInBatch DOWNLOAD is what
      // moves the client's subscription set 0 to complete once the MARK comes back.
      session.bootstrapPending = true;
      setImmediate(() => this.enqueue(session, async () => {
        if (session.bootstrapPending) await this.bootstrapView(session);
      }));
      return;
    }
    if (session.downloadServerVersion > 0 && view.queryVersion > 0) await this.resumeView(session);
    await this.pump(session);
  }

  /**
   * A known client file resumes: it holds what its record says for the query version and server version its
   * IDENT names, so the history it has not seen erases what left its view meanwhile. The record is folded
   * into one snapshot at that point. Without a record (a file from before records were kept), the client is
   * taken to hold what its queries select now.
   */
  private async resumeView(session: Session): Promise<void> {
    const views = this.options.engine.history.views;
    const view = session.view!;
    const ident = session.clientFile!.ident;
    const recorded = await views.recorded(ident, view.queryVersion, session.downloadServerVersion);
    if (!recorded) {
      this.log.warn(`${this.describe(session)}: no record of what client file ${ident} holds at query version ${view.queryVersion}; taking it to hold what its queries select now`);
      await view.adopt();
      return;
    }
    view.restore(recorded.snapshot, recorded.changes);
    view.recordSequence = recorded.nextSequence;
    if (recorded.compactable) await views.compact(ident, view.recordSequence++, view.queryVersion, session.downloadServerVersion, view.heldBytes());
  }

  private async upload(session: Session, message: Extract<ClientMessage, { type: 'upload' }>): Promise<void> {
    if (session.state !== 'identified') return this.fail(ErrorCode.bad_message_order, 'Bad input message order: UPLOAD before IDENT');
    if (session.view) return this.uploadFlexible(session, message);
    const started = performance.now();
    const result = await this.options.engine.integrate(
      { clientFile: session.clientFile!, partition: session.partition, userId: this.info.user.id, canWrite: session.canWrite },
      uploadedChangesets(message),
    );
    this.options.observer?.upload((performance.now() - started) / 1000, result.ok ? 'ok' : 'refused');
    if (!this.isLive(session)) return;
    if (!result.ok) {
      this.log.warn(`${this.describe(session)}: upload refused: ${result.error.message}`);
      return this.sessionError(session, result.error);
    }
    await this.pump(session);
  }

  /**
   * A flexible upload: what the rules and the session's queries allow is applied; each rejected object is a
   * compensating write (JSON_ERROR 231 naming it), then a DOWNLOAD that puts the server's state back on the client.
   */
  private async uploadFlexible(session: Session, message: Extract<ClientMessage, { type: 'upload' }>): Promise<void> {
    const engine = this.options.engine;
    const view = session.view!;
    const started = performance.now();
    const result = await engine.integrateFlexible(
      { clientFile: session.clientFile!, userId: this.info.user.id, collections: view.collections, selects: (table, doc) => view.selects(table, doc), reverted: session.reverted },
      uploadedChangesets(message),
    );
    this.options.observer?.upload((performance.now() - started) / 1000, result.ok ? 'ok' : 'refused');
    if (!this.isLive(session)) return;
    if (!result.ok) {
      this.log.warn(`${this.describe(session)}: upload refused: ${result.error.message}`);
      return this.sessionError(session, result.error);
    }
    if (result.rejected.length > 0) this.log.warn(`${this.describe(session)}: compensating write: ${result.rejected.map((r) => r.reason).join('; ')}`);
    await this.pump(session);
  }

  /**
   * A compensating write, next to the server version of its revert: JSON_ERROR 231 naming the refused
   * objects, then a DOWNLOAD at that version that erases each on the client and brings back the server's
   * readable state when it is in view (the client reports the error once it integrated that version).
   */
  private async sendCompensation(session: Session, compensation: PendingCompensation): Promise<void> {
    const engine = this.options.engine;
    const view = session.view!;
    const schema = await engine.realmSchema();
    const objects = decodeHeld(compensation.objects);
    const revert: Instruction[] = [];
    // The client keeps no asymmetric object once uploaded: there is nothing to put back.
    for (const o of objects) if (!schema.get(o.table)?.asymmetric) revert.push(...await view.revert(schema, o.table, o.object));
    if (!this.isLive(session)) return;
    const version = compensation.serverVersion;
    const rejected = {
      rejectedUpdates: objects.map((o, i) => ({ table: o.table, pk: encodeBase64PrimaryKey(o.object), reason: compensation.reasons[i] ?? '' })),
      rejectedClientVersion: compensation.clientVersion,
    };
    view.noteChanges(version);
    await view.record(engine.history.views, session.clientFile!.ident);
    if (!this.isLive(session)) return;
    session.downloadServerVersion = version;
    const revertDownload: ChangesetEntry = {
      version: BigInt(version), lastIntegratedRemoteVersion: BigInt(session.downloadClientVersion), originTimestamp: syncTimestamp(Date.now()),
      originFileIdent: BigInt(SERVER_FILE_IDENT), originalChangesetSize: 0, instructions: revert,
    };
    if (objects.every((o) => schema.get(o.table)?.asymmetric)) {
      // Nothing can be put back, so the write is refused outright (write_not_allowed, no server version), which
      // ends the session. The DOWNLOAD goes first: it acknowledges the upload, so a reset does not send it again.
      this.sendDownload(session, [revertDownload]);
      return this.sessionError(session, SYNC_ERRORS.writeNotAllowed(compensation.reasons.join('; ')), rejected);
    }
    this.send({
      type: 'json_error', errorCode: 231, session: session.ident,
      body: {
        message: `Client attempted a write that is not allowed; it has been reverted: ${compensation.reasons.join('; ')}`,
        tryAgain: true, action: 'Warning', shouldClientReset: false, isRecoveryModeDisabled: engine.service.runtimeState.running?.settings.isRecoveryModeDisabled ?? false, logURL: '',
        ...rejected,
        compensatingWriteServerVersion: version,
      },
    });
    // Sent even with nothing to revert: the client reports the compensating write once it integrates a changeset of that version.
    this.sendDownload(session, [revertDownload]);
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
  private answerMarks(session: Session): void {
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
    if (session.bootstrapPending || session.routerPaused || session.downloadsPaused) return this.answerMarks(session);
    const history = session.history!;
    const file = session.clientFile!;
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
            const erased = await session.view.uploaded(engine.entryChanges(entry), await engine.realmSchema(), engine.entryDocuments(entry));
            if (!this.isLive(session)) return;
            session.view.noteChanges(entry.version);
            if (erased.length > 0 && add(entry, encodeChangeset(erased), SERVER_FILE_IDENT)) break;
          }
          continue;
        }
        if (entry.changeset.length === 0) continue;
        if (session.view) {
          const engine = this.options.engine;
          const filtered = await session.view.filter(engine.entryChanges(entry), await engine.realmSchema(), engine.entryDocuments(entry));
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
      if (compensation && batch.length === 0) {
        await this.sendCompensation(session, compensation);
        if (!this.isLive(session)) return;
      }
    }
    // A flexible client resuming with nothing to download gets its first DOWNLOAD with the answer to its MARK.
    const waitsForMark = !session.sentFirstDownload && session.view !== undefined;
    if (!waitsForMark && (!session.sentFirstDownload || session.reportedUploadVersion !== file.uploadClientVersion)) this.sendDownload(session, []);
    this.answerMarks(session);
  }

  /** `started`: when building it from the history began, for its duration. */
  private sendDownload(session: Session, changesets: ChangesetEntry[], batchState: 'moreToCome' | 'lastInBatch' | 'steadyState' = 'steadyState', progressEstimate = 1, started?: number): void {
    const history = session.history!;
    const file = session.clientFile!;
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
    session.state = 'ended';
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
    const sent = code === 104 ? { errorCode: 101, message: `Limits exceeded in input message: ${message}` } : { errorCode: code, message };
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

