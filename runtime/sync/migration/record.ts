// The migration's state in the data folder, `<data>/sync/migration.json`: the phase, the partition-based
// `sync/config.json` as it was (a rollback writes it back), the partition settings a migrated client's
// `migratedPartition` is read with, and what of its permissions had no flexible equivalent. Written whole
// through a temporary file, so a crash leaves the old record or the new one.
import fs from 'node:fs';
import path from 'node:path';
import { isObject } from '../../../core/json';
import type { MigrationPhase, MigrationRuleProblem, PartitionSettings } from '../../../core/sync';
import { writePrivateFile } from '../../data-folder';

export interface MigrationRecord {
  phase: MigrationPhase;
  /** `sync/config.json` as it was when the migration started (its text: a rollback restores it as written). */
  partitionFile: string;
  partition: PartitionSettings;
  startedAt: string;
  completedAt?: string;
  unmigratableRules: MigrationRuleProblem[];
}

const PHASES: readonly string[] = ['migrating', 'migrated', 'rolling-back', 'rolled-back'];

export function migrationRecordPath(dataDir: string): string {
  return path.join(dataDir, 'sync', 'migration.json');
}

/** The record, or undefined when the app never migrated (or the file cannot be read as one). */
export function readMigrationRecord(dataDir: string): MigrationRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(fs.readFileSync(migrationRecordPath(dataDir), 'utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(value) || !PHASES.includes(value.phase as string) || typeof value.partitionFile !== 'string' || !isObject(value.partition)) return undefined;
  return { ...value, unmigratableRules: Array.isArray(value.unmigratableRules) ? value.unmigratableRules : [] } as unknown as MigrationRecord;
}

export function writeMigrationRecord(dataDir: string, record: MigrationRecord): void {
  writePrivateFile(migrationRecordPath(dataDir), `${JSON.stringify(record, null, 2)}\n`);
}
