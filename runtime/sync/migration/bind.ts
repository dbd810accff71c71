// In flexible sync, a BIND's `migratedPartition` (a client migrated from partition-based sync) is only taken
// from a client of a migrated app, and must be a value of the partition key's type: else 204 for that session.
import { parsePartitionValue, type PartitionSettings, type SyncError } from '../../../core/sync';
import { ErrorCode } from '../../../core/sync/errorCodes';

/**
 * The refusal of a flexible BIND naming `migratedPartition`, or undefined when it may go on: the app must
 * have been migrated (`migratedFrom`), and the value must be one of its partition key's type.
 */
export function migratedPartitionRefusal(bindJson: Record<string, unknown> | undefined, migratedFrom: PartitionSettings | undefined): SyncError | undefined {
  const claimed = bindJson?.migratedPartition;
  if (claimed === undefined) return undefined;
  const shown = JSON.stringify(claimed).slice(0, 60);
  if (!migratedFrom) return { code: ErrorCode.illegal_realm_path, name: 'ErrorIllegalDatabasePath', message: `Illegal Realm path (BIND): migratedPartition ${shown} was sent, but this app was not migrated from partition-based sync`, action: 'fix-client', tryAgain: false };
  if (typeof claimed !== 'string') return { code: ErrorCode.illegal_realm_path, name: 'ErrorIllegalDatabasePath', message: `Illegal Realm path (BIND): migratedPartition must be a serialized partition value, not ${shown}`, action: 'fix-client', tryAgain: false };
  const parsed = parsePartitionValue(claimed, migratedFrom);
  return parsed.ok ? undefined : parsed.error;
}
