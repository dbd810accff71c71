// Partition-based → flexible sync migration, the pure parts: the flexible configuration a partition one
// becomes, the RQL query a migrated client subscribes with for its partition value (the `partitionQuery`
// of error 232, which realm-core applies to every table of its realm), and the status the Admin API's
// `GET …/sync/migration` answers (the fields realm-core's test harness reads: `statusMessage`, empty once
// the step is done, `isMigrated`, `isCancelable`, `isRevertible`, `errorMessage`).
import { Binary, UUID, type ObjectId } from 'bson';
import type { SyncSettings } from './config';
import { partitionTypeOf } from './partition';

/** `migrating` and `rolling-back` are a step begun and not yet finished (the runtime finishes it at its next start). */
export type MigrationPhase = 'migrating' | 'migrated' | 'rolling-back' | 'rolled-back';

/** A part of the partition permissions with no flexible sync equivalent (as `asl check` reports it). */
export interface MigrationRuleProblem {
  file: string;
  line: number;
  /** The diagnostic's code: `rule/migration-blocker`, `sync/role-not-sync-compatible`, … */
  code: string;
  message: string;
}

/**
 * The flexible configuration a partition one becomes: what it shares (cluster, database, development
 * mode, recovery, offline days, state) is kept, and the partition key becomes a queryable field of every
 * collection so the clients' derived subscriptions compile.
 */
export function flexibleSettingsOf(settings: SyncSettings): SyncSettings {
  const key = settings.partition?.key;
  const { partition: _partition, queryable: _queryable, asymmetricTables: _asymmetric, ...shared } = settings;
  return { ...shared, type: 'flexible', queryable: { queryable_fields_names: key ? [key] : [] } };
}

/** The RQL of one partition value on its key: `_partition == "p1"`, `owner == oid(…)`, `n == 5`, `k == nil`. */
export function partitionRql(key: string, value: unknown): string {
  const field = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : `\`${key}\``;
  return `${field} == ${rqlLiteral(value)}`;
}

function rqlLiteral(value: unknown): string {
  switch (partitionTypeOf(value)) {
    case 'null': case 'missing': return 'nil';
    case 'string': return JSON.stringify(value);
    case 'long': return typeof value === 'object' ? String((value as { toString(): string }).toString()) : String(value);
    case 'objectId': return `oid(${(value as ObjectId).toHexString()})`;
    case 'uuid': return `uuid(${(value instanceof UUID ? value : new UUID((value as Binary).value())).toHexString(true)})`;
    default: throw new Error(`a partition value of type ${partitionTypeOf(value)} has no RQL form`);
  }
}

/** What `GET …/sync/migration` answers. */
export interface MigrationStatus {
  /** Empty when no step is in progress (realm-core's harness waits for that). */
  statusMessage: string;
  isMigrated: boolean;
  isCancelable: boolean;
  isRevertible: boolean;
  errorMessage: string;
  phase?: MigrationPhase;
  partitionKey?: string;
  startedAt?: string;
  completedAt?: string;
  /** The partition permissions with no flexible equivalent: flexible sync runs on the collections' rules instead. */
  unmigratableRules: MigrationRuleProblem[];
}

export function migrationStatus(record: { phase: MigrationPhase; partitionKey: string; startedAt: string; completedAt?: string; error?: string } | undefined, unmigratableRules: MigrationRuleProblem[]): MigrationStatus {
  if (!record) return { statusMessage: '', isMigrated: false, isCancelable: false, isRevertible: false, errorMessage: '', unmigratableRules };
  const inProgress = record.phase === 'migrating' || record.phase === 'rolling-back';
  return {
    statusMessage: inProgress ? (record.phase === 'migrating' ? 'migrating to flexible sync' : 'rolling back to partition-based sync') : '',
    isMigrated: record.phase === 'migrated',
    isCancelable: record.phase === 'migrating',
    isRevertible: record.phase === 'migrated',
    errorMessage: record.error ?? '',
    phase: record.phase,
    partitionKey: record.partitionKey,
    startedAt: record.startedAt,
    ...(record.completedAt ? { completedAt: record.completedAt } : {}),
    unmigratableRules,
  };
}
