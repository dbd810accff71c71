// What a flexible sync session asks of the schema versions: whether its BIND's version exists (else 235),
// which version a client file syncs at (a new file: the one it bound with; a known file: the one it last
// used, until it migrates), the migration error a client gets when it opens a known file with another
// known version (236, action MigrateSchema, `previousSchemaVersion`: realm-core uploads what it has at the
// old version, then wipes the file and binds again as a new file at the new version), and the schema
// a session's view translates with.
import type { SyncError } from '../../../core/sync';
import type { RealmSchema } from '../translate/schema';
import { ErrorCode } from '../wire/errors';
import type { VersionedSchemas } from './projection';
import type { SyncSchemaVersions } from './versions';

/** A flexible session's schema versions: the one its BIND named, the one it syncs at. */
export interface SessionSchemaVersion {
  bound: number;
  serving: number;
  /** The server gave the session its client file (no migration to check). */
  newFile?: boolean;
}

export class SessionVersioning {
  constructor(private readonly versions: SyncSchemaVersions | undefined, private readonly running: () => Promise<RealmSchema>) {}

  /** The BIND's version, or the refusal (235) when the app does not have it. */
  bind(bindJson: Record<string, unknown> | undefined): { ok: true; version: SessionSchemaVersion } | { ok: false; error: SyncError } {
    const claimed = bindJson?.schemaVersion ?? 0;
    if (!this.versions) {
      if (claimed === 0) return { ok: true, version: { bound: 0, serving: 0 } };
      return { ok: false, error: { code: ErrorCode.bad_schema_version, name: 'ErrorBadSchemaVersion', message: `Client provided invalid schema version: ${String(claimed).slice(0, 40)}; the app's sync schema versions are 0 (BIND)`, action: 'fix-client', tryAgain: false } };
    }
    const refusal = this.versions.refusal(bindJson);
    if (refusal) return { ok: false, error: refusal };
    return { ok: true, version: { bound: claimed as number, serving: claimed as number } };
  }

  /** The server gave the session a new client file: it syncs at the version it bound with. */
  async newClientFile(ident: number, version: SessionSchemaVersion): Promise<void> {
    version.newFile = true;
    await this.versions?.recordClientFile(ident, version.bound);
  }

  /**
   * A known client file identified itself: it syncs at the version it last used; when that is not the one
   * it bound with, the JSON_ERROR body that starts its migration (the session goes on at the old version).
   */
  async knownClientFile(ident: number, version: SessionSchemaVersion): Promise<Record<string, unknown> | undefined> {
    if (!this.versions || version.newFile) return undefined;
    const previous = await this.versions.clientFileVersion(ident);
    if (previous === version.bound) return undefined;
    // A file last synced at a version that is gone (a data folder reset) cannot be served at it: it takes the new one.
    if (!this.versions.has(previous)) {
      await this.versions.recordClientFile(ident, version.bound);
      return undefined;
    }
    version.serving = previous;
    return {
      message: `Client opened a session with a new valid schema version - migrating client to use new schema version (BIND): client file ${ident} synced at schema version ${previous}, it opened with ${version.bound}`,
      tryAgain: false, action: 'MigrateSchema', shouldClientReset: false, isRecoveryModeDisabled: false, logURL: '',
      previousSchemaVersion: previous,
    };
  }

  /** The schemas of a session at an older version or migrating; undefined at the newest, which needs no projection. */
  async schemas(version: SessionSchemaVersion | undefined): Promise<VersionedSchemas | undefined> {
    if (!version || !this.versions) return undefined;
    const schema = this.versions.snapshot(version.serving);
    if (!schema && version.bound === version.serving) return undefined;
    const latest = await this.running();
    const migratingTo = version.bound === version.serving ? undefined : this.versions.snapshot(version.bound) ?? latest;
    return { version: version.serving, schema: schema ?? latest, latest, ...(migratingTo ? { migratingTo } : {}) };
  }

  /** The schema a session's view translates documents and history with. */
  async viewSchema(version: SessionSchemaVersion | undefined): Promise<RealmSchema> {
    return (version && this.versions?.snapshot(version.serving)) || this.running();
  }
}
