// Partition-based sync in the runtime (rules-and-sync §2–§10): see README.md in this folder.
export { SyncService, SYNC_ERRORS, syncedCollections, type PermissionVerdict, type SyncAppContext, type SyncStatusReport, type SyncedCollection } from './service';
export { createPartitionFeed, FEED_ENDPOINT, type PartitionFeed } from './feed';
export { applyClientWrite } from './writes';
export { mirrorObjectTypes } from './devmode';
export { formatReport, reportToJson, simulatePartition, type SimulationReport, type SimulatedUser } from './simulate';
export {
  getServiceFlexibleSyncConfig, getServiceSyncConfig, patchServiceSyncConfig, syncData, SyncAdminError, type SyncAdminHost,
} from './admin';
export { readSyncConfigFile, readSyncState, syncStatePath, writeSyncConfigFile, writeSyncState } from './files';

import type { SyncService as Service } from './service';
import type { SyncAdminHost as AdminHost } from './admin';
import type { SimulationReport as Report } from './simulate';

/** One app's sync as the runtime exposes it. */
export interface RuntimeSync {
  readonly service: Service;
  /** What the Admin API's sync routes call (`getServiceSyncConfig`, `patchServiceSyncConfig`, `syncData`). */
  readonly admin: AdminHost;
  /** "Open partition P as user U" (user id or email; partition as EJSON text). */
  simulate(userRef: string, partitionText: string): Promise<Report>;
}
