// One session of a Realm sync connection (one realm the client opened on it), as the connection and the
// flexible room (`../flexible/flow.ts`) both handle it; and an UPLOAD's changesets as the engine takes them.
import type { ClientFileRecord, PartitionHistory } from '../history/history';
import type { FlexibleView } from '../flexible/view';
import type { ClientMessage } from '../wire/messages';
import type { UploadedChangeset } from './engine';
import type { TrafficLog } from './traffic';

export type SessionState = 'binding' | 'bound' | 'identified' | 'ended';

export type RulesChange = 'the user\'s custom data changed' | 'the app\'s rules changed';

export interface Session {
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

/** An UPLOAD's changesets as the engine takes them. */
export function uploadedChangesets(message: Extract<ClientMessage, { type: 'upload' }>): UploadedChangeset[] {
  return message.changesets.map((c) => ({
    clientVersion: Number(c.version), baseVersion: Number(c.lastIntegratedRemoteVersion), timestamp: c.originTimestamp,
    instructions: c.instructions, size: c.bytes?.length ?? 0,
  }));
}
