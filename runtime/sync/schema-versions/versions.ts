// The numbered versions of a flexible sync app's schema. Version 0 is the schema sync started with; each
// breaking change of the synced schema while flexible sync runs (a table or field removed, a type or an
// optionality changed: diff.ts) adds the next version, whose snapshot is the schema after it; additive
// changes update the newest version in place. Older versions keep their snapshot, which the sessions of
// clients built for them sync through (projection.ts). While an Admin API draft is open (`hold`) changes
// are not looked at: its deployment is one change, so one version, as the platform's was.
//
// Kept in the data folder (`<data>/sync/schema-versions.json`), not the app's files: the platform kept
// them server-side (an export or `pull` has no such file), they describe what clients were built against
// rather than what the app is, and the app's files stay the source of the newest one.
import fs from 'node:fs';
import path from 'node:path';
import type { SyncError } from '../../../core/sync';
import type { SyncSchemaVersionInfo } from '../../../core/sync/messages';
import type { Logger } from '../../http/server';
import { SYNC_METADATA_DATABASE, type DocumentStore } from '../../store/types';
import { writePrivateFile } from '../../data-folder';
import type { RealmSchema } from '../translate/schema';
import { ErrorCode } from '../wire/errors';
import { diffSchemas, loadSchema, storeSchema, type StoredTable } from './diff';

/** What `GET …/sync/schemas/versions` and `asl sync schema-versions` show of a version. */
export type SchemaVersionInfo = SyncSchemaVersionInfo;

interface StoredVersion {
  version: number;
  createdAt: string;
  changes: string[];
  tables: StoredTable[];
}

/** The running schema, and whether breaking changes of it make versions now (flexible sync enabled or paused). */
export type CurrentSchema = () => Promise<{ schema: RealmSchema; versioning: boolean }>;

export interface SchemaVersionsOptions {
  dataDir: string;
  store: DocumentStore;
  current: CurrentSchema;
  log: Logger;
  now?: () => number;
}

/** Client file idents with the schema version they last synced at (absent: 0, as before versions existed). */
const CLIENT_FILES = 'client_schema_versions';

export class SyncSchemaVersions {
  private versions: StoredVersion[] = [];
  private readonly file: string;
  private held = 0;
  private observing: Promise<void> = Promise.resolve();
  private readonly snapshots = new Map<number, RealmSchema>();

  constructor(private readonly options: SchemaVersionsOptions) {
    this.file = path.join(options.dataDir, 'sync', 'schema-versions.json');
    try {
      const saved = JSON.parse(fs.readFileSync(this.file, 'utf8')) as { versions?: StoredVersion[] };
      if (Array.isArray(saved.versions)) this.versions = saved.versions.filter((v) => Number.isSafeInteger(v.version) && Array.isArray(v.tables));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') options.log.warn(`sync schema versions: ${this.file} is unreadable (${(e as Error).message}); starting again from version 0`);
    }
  }

  /** The newest version (0 before any breaking change). */
  get latest(): number {
    return this.versions.at(-1)?.version ?? 0;
  }

  list(): SchemaVersionInfo[] {
    if (this.versions.length === 0) return [{ version: 0, createdAt: '', changes: [], tables: [] }];
    return this.versions.map((v) => ({ version: v.version, createdAt: v.createdAt, changes: v.changes, tables: v.tables.filter((t) => !t.embedded).map((t) => t.name) }));
  }

  has(version: number): boolean {
    return version === 0 || this.versions.some((v) => v.version === version);
  }

  /** The schema of an older version; undefined for the newest one, which is the running schema. */
  snapshot(version: number): RealmSchema | undefined {
    if (version === this.latest) return undefined;
    let schema = this.snapshots.get(version);
    if (!schema) {
      const stored = this.versions.find((v) => v.version === version);
      if (!stored) return undefined;
      this.snapshots.set(version, (schema = loadSchema(stored.tables)));
    }
    return schema;
  }

  /** The error for a flexible BIND whose `schemaVersion` the app does not have; undefined when it has it. */
  refusal(bindJson: Record<string, unknown> | undefined): SyncError | undefined {
    const claimed = bindJson?.schemaVersion ?? 0;
    if (typeof claimed === 'number' && Number.isSafeInteger(claimed) && this.has(claimed)) return undefined;
    const named = typeof claimed === 'number' ? String(claimed) : JSON.stringify(claimed).slice(0, 40);
    return {
      code: ErrorCode.bad_schema_version, name: 'ErrorBadSchemaVersion',
      message: `Client provided invalid schema version: ${named}; the app's sync schema versions are ${this.list().map((v) => v.version).join(', ')} (BIND)`,
      action: 'fix-client', tryAgain: false,
    };
  }

  /** Changes of the schema wait until `release` (an Admin API draft is open). */
  hold(): void {
    this.held++;
  }

  release(): Promise<void> {
    this.held = Math.max(0, this.held - 1);
    return this.observe();
  }

  /** Looks at the running schema (after a reload): a breaking change adds a version, another updates the newest. */
  observe(): Promise<void> {
    this.observing = this.observing.then(() => this.look()).catch((e) => this.options.log.error(`sync schema versions: ${(e as Error).stack ?? e}`));
    return this.observing;
  }

  private async look(): Promise<void> {
    if (this.held > 0) return;
    const { schema, versioning } = await this.options.current();
    const createdAt = new Date(this.options.now?.() ?? Date.now()).toISOString();
    const newest = this.versions.at(-1);
    const tables = storeSchema(schema);
    if (!newest) {
      this.versions = [{ version: 0, createdAt, changes: [], tables }];
      return this.save();
    }
    const diff = diffSchemas(loadSchema(newest.tables), schema);
    if (diff.breaking.length === 0 && diff.additive.length === 0) return;
    if (diff.breaking.length > 0 && versioning) {
      const version = newest.version + 1;
      this.versions.push({ version, createdAt, changes: diff.breaking, tables });
      this.options.log.info(`sync schema version ${version}: ${diff.breaking.join('; ')}; clients built for version ${newest.version} keep syncing on it`);
    } else {
      newest.tables = tables;
      this.snapshots.delete(newest.version);
    }
    return this.save();
  }

  private save(): void {
    writePrivateFile(this.file, JSON.stringify({ versions: this.versions }, null, 1) + '\n');
  }

  /** The version a client file last synced at. */
  async clientFileVersion(ident: number): Promise<number> {
    const doc = await this.options.store.collection(SYNC_METADATA_DATABASE, CLIENT_FILES).findOne({ _id: ident });
    return typeof doc?.version === 'number' ? doc.version : 0;
  }

  /** A new client file syncs at this version. */
  async recordClientFile(ident: number, version: number): Promise<void> {
    await this.options.store.collection(SYNC_METADATA_DATABASE, CLIENT_FILES).replaceOne({ _id: ident }, { version }, { upsert: true });
  }
}
