// What the runtime's sync answers its tools, declared once: the runtime builds these shapes, the editor's
// views and `asl` read them. The live Realm sessions and their traffic (`…/sync/sessions`, `…/traffic`),
// the simulator's report (`…/sync/simulate`), the sync status, and the JSON feed's messages.
import type { EvaluationTrace } from '../rules/evaluate';
import type { SyncError } from './partition';
import type { MigrationStatus } from './migration';
import type { SyncRuntimeState } from './state';

export type SyncSessionState = 'binding' | 'bound' | 'identified' | 'ended';

/** One live Realm protocol session, as `…/sync/sessions` lists it (the Sync Sessions view, `asl sync sessions`). */
export interface SyncSessionInfo {
  connection: string;
  session: number;
  userId: string;
  partition: string;
  protocolVersion: number;
  state: SyncSessionState;
  clientFileIdent?: number;
  downloadedVersion: number;
  uploadedClientVersion: number;
  /** Flexible sync: the schema version the client opened with, and the one it syncs at (older while it migrates). */
  schemaVersion?: { bound: number; serving: number };
  /** A flexible session of a client migrated from partition-based sync: the partition it synced. */
  migratedPartition?: string;
}

/** One numbered version of a flexible app's sync schema, as `…/sync/schema-versions` lists it. */
export interface SyncSchemaVersionInfo {
  version: number;
  /** ISO time it was made ('' for a version 0 not looked at yet). */
  createdAt: string;
  /** The breaking changes that made it (none for version 0). */
  changes: string[];
  /** Its top-level tables. */
  tables: string[];
}
/** The body of `GET …/sync/schema-versions`. */
export interface SyncSchemaVersionsReply { latest: number; versions: SyncSchemaVersionInfo[] }

export interface SyncTrafficChangeset {
  version: string;
  origin: string;
  timestamp: string;
  instructions: string[];
  /** Instructions not shown (past the limit). */
  more?: number;
}

/** One message of a session's recent traffic, as `…/traffic` lists it. */
export interface SyncTrafficEntry {
  /** Milliseconds since the epoch. */
  at: number;
  direction: 'in' | 'out';
  type: string;
  /** The head's fields as names and values (versions, progress, error codes). */
  fields: Record<string, string | number | boolean>;
  changesets?: SyncTrafficChangeset[];
  /** An error's message, a JSON_ERROR's body, a refusal's reason. */
  detail?: string;
}

/** The body of `GET …/sync/sessions`. */
export interface SyncSessionsReply { sessions: SyncSessionInfo[] }
/** The body of `GET …/sync/sessions/<connection>/<session>/traffic`. */
export interface SyncTrafficReply { traffic: SyncTrafficEntry[] }

/** A user's permissions on a partition, with the evaluation traces when asked for. */
export interface PermissionVerdict {
  read: boolean;
  write: boolean;
  /** `write` true grants read whatever the read expression says (§4). */
  readGrantedByWrite: boolean;
  readTrace?: EvaluationTrace;
  writeTrace?: EvaluationTrace;
  /** Problems while evaluating (a failing `%function`). */
  problems: string[];
}

export interface SyncStatusReport {
  status: SyncRuntimeState['status'];
  epoch: number;
  lastDisabled?: number;
  /** The configuration sync runs with (enabled or paused). */
  running?: { key: string; type: string; required: boolean; permissions: { read: unknown; write: unknown }; developmentMode: boolean; database?: string; service?: string };
  /** The last configuration change refused while enabled, with why. */
  refused?: string;
  notice?: string;
  sessions: number;
}

/** The body of `GET …/sync/status`: the state machine's report with the live Realm protocol sessions. */
export type SyncStatusReply = SyncStatusReport & { liveSessions: SyncSessionInfo[]; migration?: MigrationStatus };

/**
 * "Open partition P as user U" without a client (`…/sync/simulate`, `asl sync simulate`): the verdicts, the
 * error the client would get, the documents per type and those sync ignores. `Doc` is a stored document in
 * the runtime, its EJSON-parsed form in a tool.
 */
export interface SimulationReport<Doc = Record<string, unknown>> {
  status: SyncStatusReport;
  user?: { id: string; email?: string; customData: Record<string, unknown> };
  partition: { text: string; value?: unknown; type?: string };
  permissions?: PermissionVerdict;
  /** What the client gets instead of a partition; absent when the open succeeds. */
  error?: SyncError;
  collections: { type: string; namespace: string; count: number; first: Doc[] }[];
  ignored: { type: string; namespace: string; count: number; reasons: Record<string, number>; examples: { _id: unknown; reason: string }[] }[];
}

/** The live partition feed's path below `/api/client/v2.0/app/<client app id>/` (a WebSocket, EJSON text frames). */
export const FEED_ENDPOINT = 'sync/feed';

/** The feed message that opens a partition as the connection's user (`partition`: the value as EJSON text). */
export interface FeedOpenMessage { type: 'open'; session: number; partition: string; trace?: boolean; clientFile?: { epoch: number; ident: string } }

/** The `type` of every message the feed sends. */
export type FeedServerMessageType =
  | 'authenticated' | 'pong' | 'verdict' | 'opened' | 'snapshot' | 'change' | 'reevaluate' | 'ack' | 'rejected' | 'schema-applied' | 'error';
