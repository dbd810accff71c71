// Partition-based sync in the runtime (rules-and-sync §2–§10): see README.md in this folder.
export { SyncService, SYNC_ERRORS, syncedCollections, transitionError, type PermissionVerdict, type SyncAppContext, type SyncStatusReport, type SyncedCollection } from './service';
export { createPartitionFeed, FEED_ENDPOINT, type PartitionFeed } from './feed';
export { applyClientWrite } from './writes';
export { addAsymmetricTables, addQueryableFields, mirrorObjectTypes } from './devmode';
export { formatReport, reportToJson, simulatePartition, type SimulationReport, type SimulatedUser } from './simulate';
export {
  getServiceFlexibleSyncConfig, getServiceSyncConfig, patchServiceSyncConfig, syncData, SyncAdminError, type SyncAdminHost,
} from './admin';
export { readSyncConfigFile, readSyncState, syncStatePath, writeSyncConfigFile, writeSyncState } from './files';

import type { SyncService as Service } from './service';
import type { SyncAdminHost as AdminHost } from './admin';
import type { SimulationReport as Report } from './simulate';
import type { SessionInfo } from './sessions/connection';
import type { TrafficEntry } from './sessions/traffic';

export type { SessionInfo } from './sessions/connection';
export type { TrafficChangeset, TrafficEntry } from './sessions/traffic';

/** One app's sync as the runtime exposes it. */
export interface RuntimeSync {
  readonly service: Service;
  /** What the Admin API's sync routes call (`getServiceSyncConfig`, `patchServiceSyncConfig`, `syncData`). */
  readonly admin: AdminHost;
  /** "Open partition P as user U" (user id or email; partition as EJSON text). */
  simulate(userRef: string, partitionText: string): Promise<Report>;
  /** The live Realm protocol sessions (user, partition, protocol version, state, progress). */
  sessions(): SessionInfo[];
  /** A session's recent traffic, decoded (messages, changesets per object, verdicts with traces). */
  traffic(connection: string, session: number): TrafficEntry[] | undefined;
  /** The Admin API's `sync/force_reset`: the client file must reset at its next IDENT; whether it was known. */
  forceClientReset(fileIdent: number): Promise<boolean>;
  /** Resolves once every store write made so far to a synced collection is in the sync history. */
  recorded(): Promise<void>;
}
