// Partition-based sync in the runtime (rules-and-sync §2–§10): see README.md in this folder.
export { SyncService, SYNC_ERRORS, syncedCollections, transitionError, type SyncAppContext, type SyncedCollection } from './service';
export type { PermissionVerdict, SyncSessionInfo, SyncStatusReport, SyncTrafficChangeset, SyncTrafficEntry } from '../../core/sync/messages';
export { createPartitionFeed, FEED_ENDPOINT, type PartitionFeed } from './feed';
export { applyClientWrite } from './writes';
export { addAsymmetricTables, addQueryableFields, developmentModeWrites, mirrorObjectTypes, type DevelopmentModeWrites } from './devmode';
export { createRealmSyncEndpoint, REALM_SYNC_ENDPOINT } from './sessions/endpoint';
export { RealmSyncEngine } from './sessions/engine';
export { registerSyncLocalRoutes } from './routes';
export { formatReport, reportToJson, simulatePartition, type SimulationReport, type SimulatedUser } from './simulate';
export {
  getServiceFlexibleSyncConfig, getServiceSyncConfig, patchServiceSyncConfig, syncData, SyncAdminError, type SyncAdminHost,
} from './admin';
export { readSyncConfigFile, readSyncState, syncStatePath, writeSyncConfigFile, writeSyncState } from './files';
export { SyncSchemaVersions, type SchemaVersionInfo } from './schema-versions/versions';

import type { SyncService as Service } from './service';
import type { SyncAdminHost as AdminHost } from './admin';
import type { SimulationReport as Report } from './simulate';
import type { SyncSessionInfo, SyncTrafficEntry } from '../../core/sync/messages';
import type { SyncSchemaVersions as SchemaVersions } from './schema-versions/versions';
import type { SyncMigration } from './migration/migration';

export { MigrationError, SyncMigration } from './migration/migration';
export { answerOtherKind } from './migration/answer';

/** One app's sync as the runtime exposes it. */
export interface RuntimeSync {
  readonly service: Service;
  /** What the Admin API's sync routes call (`getServiceSyncConfig`, `patchServiceSyncConfig`, `syncData`). */
  readonly admin: AdminHost;
  /** "Open partition P as user U" (user id or email; partition as EJSON text). */
  simulate(userRef: string, partitionText: string): Promise<Report>;
  /** The live Realm protocol sessions (user, partition, protocol version, state, progress). */
  sessions(): SyncSessionInfo[];
  /** A session's recent traffic, decoded (messages, changesets per object, verdicts with traces). */
  traffic(connection: string, session: number): SyncTrafficEntry[] | undefined;
  /** The Admin API's `sync/force_reset`: the client file must reset at its next IDENT; whether it was known. */
  forceClientReset(fileIdent: number): Promise<boolean>;
  /** The partition-based → flexible sync migration (`PUT`/`GET …/sync/migration`, `asl sync migrate`). */
  readonly migration: SyncMigration;
  /** Resolves once every store write made so far to a synced collection is in the sync history. */
  recorded(): Promise<void>;
  /** Flexible sync: the numbered versions of the sync schema (`schema-versions/`). */
  readonly schemaVersions: SchemaVersions;
}
