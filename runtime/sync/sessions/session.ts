// One session of a Realm sync connection (one realm the client opened on it), as the connection and the
// flexible room (`../flexible/flow.ts`) both handle it; and an UPLOAD's changesets as the engine takes them.
import type { ClientFileRecord, PartitionHistory } from '../history/history';
import type { FlexibleView } from '../flexible/view';
import type { SessionSchemaVersion } from '../schema-versions/sessions';
import type { ClientMessage } from '../wire/messages';
import type { UploadedChangeset } from './engine';
import type { TrafficLog } from './traffic';

export type RulesChange = 'the user\'s custom data changed' | 'the app\'s rules changed';

/** What a session has whatever its state. */
interface SessionCommon {
  ident: number;
  chain: Promise<void>;
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
  /** Flexible sync: objects of this session's compensating writes, until the client uploads on top of the revert. */
  reverted: Map<string, number>;
  /** TEST_COMMAND PAUSE_ROUTER_SESSION: no history reaches the session until its next subscription change. */
  routerPaused?: boolean;
  /** TEST_COMMAND PAUSE_DOWNLOAD_BUILDER: no DOWNLOAD is built for the session until RESUME_DOWNLOAD_BUILDER. */
  downloadsPaused?: { resumed: Promise<void>; resume: () => void };
  /** Flexible sync: the schema version it opened with and syncs at (`../schema-versions/`), set at BIND. */
  schemaVersion?: SessionSchemaVersion;
  /** Flexible sync: the partition value a client migrated from partition-based sync synced before (its BIND's `migratedPartition`). */
  migratedPartition?: string;
}

/** What BIND opened: the partition (or flexible sync's app-wide history) and what the user may do in it. */
export interface Opened {
  partitionId: string;
  history: PartitionHistory;
  /** Partition sync: the partition value. */
  partition?: unknown;
  canWrite: boolean;
  /** Flexible sync: the active subscription set and the objects the client holds through it. */
  view?: FlexibleView;
}

/** BIND received: permissions (or the flexible rules) being evaluated. */
export type BindingSession = SessionCommon & Partial<Opened> & { state: 'binding'; clientFile?: ClientFileRecord };
/** Bound: the partition opened; the client file is known once the server gave one (a new file) or IDENT named it. */
export type BoundSession = SessionCommon & Opened & { state: 'bound'; clientFile?: ClientFileRecord };
/** Identified (IDENT checked): uploads and downloads flow. */
export type IdentifiedSession = SessionCommon & Opened & { state: 'identified'; clientFile: ClientFileRecord };
/** Ended (an error, UNBIND, the connection's end): nothing more is sent for it. */
export type EndedSession = SessionCommon & Partial<Opened> & { state: 'ended'; clientFile?: ClientFileRecord };

/** A session in one of its states (as `client/runtimeStatus.ts` types the runtime's): what a state has is not optional in it. */
export type Session = BindingSession | BoundSession | IdentifiedSession | EndedSession;
export type SessionState = Session['state'];
/** An identified flexible sync session. */
export type FlexibleSession = IdentifiedSession & { view: FlexibleView };

/** A session as BIND opens it. */
export function newSession(ident: number, traffic: TrafficLog): Session {
  return {
    ident, state: 'binding', chain: Promise.resolve(), canWrite: false,
    downloadServerVersion: 0, downloadClientVersion: 0, reportedUploadVersion: -1, sentFirstDownload: false, pumpQueued: false, pendingMarks: [],
    traffic, reverted: new Map(), rulesChanges: new Set(),
  };
}

/** BIND succeeded. */
export function markBound(session: Session, opened: Opened): BoundSession {
  return Object.assign(session, opened, { state: 'bound' as const }) as BoundSession;
}

/** IDENT checked, with its client file. */
export function markIdentified(session: BoundSession, clientFile: ClientFileRecord): IdentifiedSession {
  return Object.assign(session, { clientFile, state: 'identified' as const }) as IdentifiedSession;
}

/** The session ended. */
export function markEnded(session: Session): EndedSession {
  return Object.assign(session, { state: 'ended' as const }) as EndedSession;
}

/** The state now: it changes across awaits (an error, UNBIND), whatever a session's type said before them. */
export function stateOf(session: Session): SessionState {
  return session.state;
}

/** A flexible session (its view set at BIND). */
export function isFlexible(session: IdentifiedSession): session is FlexibleSession {
  return session.view !== undefined;
}

/** An UPLOAD's changesets as the engine takes them. */
export function uploadedChangesets(message: Extract<ClientMessage, { type: 'upload' }>): UploadedChangeset[] {
  return message.changesets.map((c) => ({
    clientVersion: Number(c.version), baseVersion: Number(c.lastIntegratedRemoteVersion), timestamp: c.originTimestamp,
    instructions: c.instructions, size: c.bytes?.length ?? 0,
  }));
}
