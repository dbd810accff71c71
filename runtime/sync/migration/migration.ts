// `SyncMigration`: one app's partition-based → flexible sync migration and its rollback, as the Admin
// API's `PUT …/sync/migration` (`start`, `rollback`) and `asl sync migrate` drive it. Each step is written
// to the data folder first (`record.ts`), then what runs changes mode (`SyncService.adoptMode`: a new
// epoch), then `sync/config.json`, then the app reloads, then the step is marked done; a runtime stopped
// halfway finishes the step at its next start (`resume`). Connected clients of the old mode are told to
// migrate (232, with their partition's query) or to revert (234) before the mode changes.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'jsonc-parser';
import { DiagnosticSink, type Diagnostic } from '../../../core/diagnostics';
import type { AppModel } from '../../../core/model';
import {
  flexibleSettingsOf, migrationStatus, parsePartitionValue, syncSettingsFromFile, syncSettingsToFile,
  type MigrationRuleProblem, type MigrationStatus, type SyncError, type SyncSettings,
} from '../../../core/sync';
import { validateSyncRoles } from '../../../core/validate/syncRoles';
import type { Logger } from '../../http/server';
import { syncConfigPath, writeSyncConfigFile } from '../files';
import type { SyncService } from '../service';
import type { SyncSessionInfo as SessionInfo } from '../../../core/sync/messages';
import { ErrorCode } from '../../../core/sync/errorCodes';
import { migrateToFlexibleError, REVERT_TO_PARTITION_ERROR, SWITCH_TO_PARTITION_ERROR, type OtherKindPlan } from './answer';
import { readMigrationRecord, writeMigrationRecord, type MigrationRecord } from './record';

export interface MigrationHost {
  appDir: string;
  dataDir: string;
  service: SyncService;
  /** Reloads the app's files into the runtime. */
  reload(): Promise<unknown>;
  /** The current app model. */
  app(): AppModel;
  /** The app's current diagnostics (`rule/migration-blocker` names what has no flexible equivalent). */
  diagnostics(): readonly Diagnostic[];
  /** The live Realm protocol sessions, and ending some with a session error. */
  sessions(): SessionInfo[];
  endSessions(match: (session: SessionInfo) => boolean, error: SyncError): void;
  log: Logger;
  /** Milliseconds since the epoch. */
  now(): number;
}

/** A refused migration request: the route answers `status` with `{error, error_code}`. */
export class MigrationError extends Error {
  constructor(readonly status: number, readonly errorCode: string, message: string) {
    super(message);
  }
}

/** The partition feed's sessions end with this when the app leaves partition-based sync. */
const FEED_MIGRATED: SyncError = { code: ErrorCode.migrate_to_flx, name: 'ErrorMigrateToFlx', message: 'the app migrated to flexible sync: partitions are no longer served', action: 'fix-client', tryAgain: false };

export class SyncMigration {
  private record?: MigrationRecord;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly host: MigrationHost) {
    this.record = readMigrationRecord(host.dataDir);
    if (this.record && (this.record.phase === 'migrating' || this.record.phase === 'migrated')) host.service.migratedFrom = this.record.partition;
  }

  status(): MigrationStatus {
    return migrationStatus(this.record && { ...this.record, partitionKey: this.record.partition.key }, this.record?.unmigratableRules ?? this.unmigratableRules());
  }

  /** The phase the app is in, for session listings; undefined when it never migrated. */
  get phase(): MigrationRecord['phase'] | undefined {
    return this.record?.phase;
  }

  /** How a connection of the other sync kind is answered now; undefined: refused as a wrong sync type. */
  otherKindPlan(clientFlexible: boolean): OtherKindPlan | undefined {
    const phase = this.record?.phase;
    const recoveryDisabled = this.host.service.runtimeState.running?.settings.isRecoveryModeDisabled ?? false;
    if (!clientFlexible && (phase === 'migrated' || phase === 'migrating') && this.host.service.flexible) return { kind: 'migrate', partition: this.record!.partition, recoveryDisabled };
    if (clientFlexible && (phase === 'rolled-back' || phase === 'rolling-back') && !this.host.service.flexible) return { kind: 'revert', recoveryDisabled };
    return undefined;
  }

  /** `action: "start"`: the running partition-based sync becomes flexible sync. */
  start(): Promise<MigrationStatus> {
    return this.serial(async () => {
      if (this.record?.phase === 'migrated' || this.record?.phase === 'migrating') throw new MigrationError(400, 'SyncMigrationInProgress', 'the app is already migrated to flexible sync; roll it back first to migrate again');
      const state = this.host.service.runtimeState;
      const running = state.running?.settings;
      if ((state.status !== 'enabled' && state.status !== 'paused') || running?.type !== 'partition' || !running.partition) {
        throw new MigrationError(400, 'SyncMigrationNotAllowed', 'only an app whose partition-based sync is enabled can migrate to flexible sync');
      }
      let partitionFile: string;
      try {
        partitionFile = fs.readFileSync(syncConfigPath(this.host.appDir), 'utf8');
      } catch {
        throw new MigrationError(400, 'SyncMigrationNotAllowed', 'sync/config.json is absent: the migration rewrites it');
      }
      const unmigratableRules = this.unmigratableRules();
      this.record = { phase: 'migrating', partitionFile, partition: running.partition, startedAt: new Date(this.host.now()).toISOString(), unmigratableRules };
      writeMigrationRecord(this.host.dataDir, this.record);
      this.host.log.info(`sync migration: moving partition-based sync (key "${running.partition.key}") to flexible sync${unmigratableRules.length ? `; ${unmigratableRules.length} part(s) of its permissions have no flexible equivalent: flexible sync uses the collections' rules` : ''}`);
      await this.finishMigrating();
      return this.status();
    });
  }

  /** `action: "rollback"`: a migrated app goes back to the partition-based sync it ran before. */
  rollback(): Promise<MigrationStatus> {
    return this.serial(async () => {
      const record = this.record;
      if (!record || (record.phase !== 'migrated' && record.phase !== 'migrating')) throw new MigrationError(400, 'SyncMigrationNotAllowed', 'the app is not migrated to flexible sync: there is nothing to roll back');
      this.record = { ...record, phase: 'rolling-back', startedAt: new Date(this.host.now()).toISOString() };
      delete this.record.completedAt;
      writeMigrationRecord(this.host.dataDir, this.record);
      this.host.log.info('sync migration: rolling back to partition-based sync');
      await this.finishRollingBack();
      return this.status();
    });
  }

  /** Finishes a step a stopped runtime left halfway (called once the app has loaded). */
  resume(): Promise<void> {
    return this.serial(async () => {
      if (this.record?.phase === 'migrating') {
        this.host.log.info('sync migration: finishing the migration to flexible sync the last run left unfinished');
        await this.finishMigrating();
      } else if (this.record?.phase === 'rolling-back') {
        this.host.log.info('sync migration: finishing the rollback to partition-based sync the last run left unfinished');
        await this.finishRollingBack();
      }
    });
  }

  private async finishMigrating(): Promise<void> {
    const record = this.record!;
    const partitionSettings = this.settingsOf(record.partitionFile);
    const flexible = flexibleSettingsOf(partitionSettings);
    const service = this.host.service;
    service.migratedFrom = record.partition;
    if (!service.flexible) {
      // Each connected partition session is told to migrate, with the query of its own partition.
      for (const info of this.host.sessions()) {
        const parsed = info.partition.startsWith('flexible') || info.partition === '' ? undefined : parsePartitionValue(info.partition, record.partition);
        if (!parsed?.ok) continue;
        this.host.endSessions((s) => s.connection === info.connection && s.session === info.session, migrateToFlexibleError(record.partition, parsed.value));
      }
      service.adoptMode(flexible, FEED_MIGRATED);
    }
    writeSyncConfigFile(this.host.appDir, flexible);
    await this.host.reload();
    this.record = { ...record, phase: 'migrated', completedAt: new Date(this.host.now()).toISOString() };
    writeMigrationRecord(this.host.dataDir, this.record);
    this.host.log.info(`sync migration: migrated to flexible sync; partition-based clients reset into flexible sync with subscriptions on "${record.partition.key}"`);
  }

  private async finishRollingBack(): Promise<void> {
    const record = this.record!;
    const settings = this.settingsOf(record.partitionFile);
    const service = this.host.service;
    service.migratedFrom = undefined;
    if (service.flexible) {
      this.host.endSessions((s) => s.migratedPartition !== undefined, REVERT_TO_PARTITION_ERROR);
      this.host.endSessions((s) => s.partition.startsWith('flexible'), SWITCH_TO_PARTITION_ERROR);
      service.adoptMode(settings, FEED_MIGRATED);
    }
    fs.mkdirSync(path.dirname(syncConfigPath(this.host.appDir)), { recursive: true });
    fs.writeFileSync(syncConfigPath(this.host.appDir), record.partitionFile);
    await this.host.reload();
    this.record = { ...record, phase: 'rolled-back', completedAt: new Date(this.host.now()).toISOString() };
    writeMigrationRecord(this.host.dataDir, this.record);
    this.host.log.info('sync migration: rolled back to partition-based sync; migrated clients reset back into their partitions');
  }

  /** The partition settings of the file as it was. */
  private settingsOf(text: string): SyncSettings {
    const parsed = syncSettingsFromFile(parse(text, [], { allowTrailingComma: true }));
    if (!parsed.ok || parsed.settings.type !== 'partition') throw new MigrationError(500, 'SyncMigrationFailed', `the partition-based sync/config.json the migration kept cannot be read: ${parsed.ok ? 'it is not partition-based' : parsed.message}`);
    return parsed.settings;
  }

  /**
   * What of the app's rules does not carry over: the partition permissions' `%function` and `%%partition`
   * (`asl check`'s rule/migration-blocker), and the collection roles flexible sync cannot assign to a
   * session (the same check `asl check` makes of a flexible app, run on the flexible form to come).
   */
  private unmigratableRules(): MigrationRuleProblem[] {
    const running = this.host.service.runtimeState.running?.settings;
    const sink = new DiagnosticSink();
    if (running?.type === 'partition' && running.partition) {
      validateSyncRoles(this.host.app(), sink, { settings: syncSettingsToFile(flexibleSettingsOf(running)), partitionKey: running.partition.key });
    }
    const found = [...this.host.diagnostics().filter((d) => d.code === 'rule/migration-blocker'), ...sink.items];
    return found.map((d) => ({ file: path.relative(this.host.appDir, d.file) || d.file, line: d.range.start.line + 1, code: d.code, message: d.message }));
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
