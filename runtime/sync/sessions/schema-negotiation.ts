// Schema negotiation of Realm sync: the Realm schema the server syncs (derived from the synced collections'
// JSON Schemas, with the tables clients declared kept in `__realm_sync.schema`), what a client's
// AddTable/AddColumn may change (nothing outside development mode; in it, new tables and columns from a
// session that may write, never a changed table kind, primary key or column), and development mode's
// edits of the app (new collection schemas, asymmetric tables, queryable fields), each followed by a reload.
import { Binary } from 'bson';
import type { Logger } from '../../http/server';
import { SYNC_METADATA_DATABASE, type DocumentStore } from '../../store/types';
import type { QueriedFields } from '../devmode';
import { SYNC_ERRORS, type SyncService } from '../service';
import { objectTypeOf } from '../translate/object-types';
import { applySchemaInstruction, tableInstructions, tablesFromJsonSchema, type RealmSchema, type RealmTable } from '../translate/schema';
import { encodeChangeset, parseChangeset } from '../wire/changeset';
import { ErrorCode } from '../wire/errors';
import { isSchemaInstruction, type Instruction } from '../wire/instructions';
import type { EngineError } from './engine';
import type { NotQueryableFields } from '../flexible/view';

/** The queue of development mode's edits of the app's files. */
const DEVELOPMENT_MODE_QUEUE = '__development_mode';

export interface SchemaNegotiationOptions {
  service: SyncService;
  store: DocumentStore;
  log: Logger;
  /** Development mode: a client's new object types become collection schemas (then the app reloads). */
  applySchema?(types: unknown[]): Promise<{ written: string[] }>;
  /** Development mode, flexible sync: queried fields become collection queryable fields (then the app reloads). */
  addQueryableFields?(queried: QueriedFields[]): Promise<{ added: { collection: string; field: string }[] }>;
  /** Development mode, flexible sync: object types a client declared asymmetric join `asymmetric_tables` (then the app reloads). */
  addAsymmetricTables?(tables: string[]): Promise<void>;
  /** Runs a task after the earlier ones of a queue (the engine's): development mode edits the app one at a time. */
  run<T>(queue: string, task: () => Promise<T>): Promise<T>;
  /** Told when the schema changed (what was derived from it is stale). */
  changed(): void;
}

export class SchemaNegotiation {
  private current?: RealmSchema;
  private stored?: Promise<Map<string, Instruction[]>>;

  constructor(private readonly options: SchemaNegotiationOptions) {}

  /** The app changed (reload) or a client declared something new: the Realm schema is derived again. */
  invalidate(): void {
    this.current = undefined;
    this.options.changed();
  }

  /** The Realm tables of the synced collections, with what clients declared on top. */
  async realmSchema(): Promise<RealmSchema> {
    if (this.current) return this.current;
    const schema: RealmSchema = new Map();
    const service = this.options.service;
    for (const c of service.collections) {
      const relationships = c.relationships.flatMap((r) => {
        const target = service.collectionOfNamespace(r.database, r.collection);
        const property = (c.schema.properties as Record<string, { bsonType?: unknown }> | undefined)?.[r.field];
        return target ? [{ field: r.field, targetType: target.type, many: property?.bsonType === 'array' }] : [];
      });
      tablesFromJsonSchema(c.type, c.schema, relationships, schema);
    }
    for (const instructions of (await this.declaredTables()).values()) for (const i of instructions) applySchemaInstruction(schema, i);
    // Which types are asymmetric is the app's setting, whatever was declared before it.
    const asymmetric = new Set(service.flexible ? service.runtimeState.running?.settings.asymmetricTables ?? [] : []);
    for (const table of schema.values()) table.asymmetric = !table.embedded && table.primaryKey !== undefined && asymmetric.has(table.name);
    this.current = schema;
    return schema;
  }

  private declaredTables(): Promise<Map<string, Instruction[]>> {
    this.stored ??= (async () => {
      const docs = await this.options.store.collection(SYNC_METADATA_DATABASE, 'schema').find({});
      const out = new Map<string, Instruction[]>();
      for (const doc of docs) {
        try {
          out.set(String(doc._id), parseChangeset((doc.cs as { buffer: Uint8Array }).buffer));
        } catch (e) {
          this.options.log.warn(`sync: ignoring the stored declaration of table ${String(doc._id)}: ${(e as Error).message}`);
        }
      }
      return out;
    })();
    return this.stored;
  }

  /** Records what a client declared for a table (its AddTable/AddColumn), kept for later bootstraps. */
  private async declareTable(table: RealmTable): Promise<void> {
    const declared = await this.declaredTables();
    const instructions = tableInstructions(table);
    declared.set(table.name, instructions);
    await this.options.store.collection(SYNC_METADATA_DATABASE, 'schema').replaceOne({ _id: table.name }, { cs: new Binary(encodeChangeset(instructions)) }, { upsert: true });
  }

  /** The Realm schema once an upload's schema instructions are declared (or the error refusing them). */
  async after(instructions: readonly Instruction[], mayWrite: boolean): Promise<{ ok: true; schema: RealmSchema } | { ok: false; error: EngineError }> {
    const declared = instructions.filter(isSchemaInstruction);
    if (declared.length > 0) {
      const problem = await this.declare(await this.realmSchema(), declared, mayWrite);
      if (problem) return { ok: false, error: problem };
    }
    return { ok: true, schema: await this.realmSchema() };
  }

  /**
   * Takes a client's schema instructions. What the server's schema already holds changes nothing (every new
   * client declares its whole schema, read-only ones too; a column's nullability is not compared). Anything else is refused (225) outside development
   * mode; in development mode a session that may write adds tables and columns, but never changes what a
   * synced table is (its kind, primary key or a column): other clients sync that table as it is.
   */
  private async declare(schema: RealmSchema, instructions: Instruction[], mayWrite: boolean): Promise<EngineError | undefined> {
    const service = this.options.service;
    const devMode = service.runtimeState.running?.settings.developmentModeEnabled === true && this.options.applySchema !== undefined;
    const declared = await this.declaredTables();
    const next: RealmSchema = new Map([...schema].map(([name, table]) => [name, { ...table, columns: new Map(table.columns) }]));
    const changed = new Set<string>();
    for (const instruction of instructions) {
      if (instruction.type === 'EraseTable' || instruction.type === 'EraseColumn') {
        return invalidSchemaChange(`${instruction.type} ${instruction.table}: destructive schema changes are not allowed on a synced realm`);
      }
      if (instruction.type === 'AddTable' && instruction.spec.kind === 'topLevel' && instruction.spec.asymmetric && !service.flexible) {
        return invalidSchemaChange(`table "${instruction.table}" declared asymmetric: data ingest needs flexible sync`);
      }
      const change = schemaChange(next, instruction);
      if (!change) continue;
      // In development mode the first client to declare a synced table asymmetric makes it so (and the
      // app's asymmetric_tables records it); outside it, only the setting does.
      const firstIngestDeclaration = 'breaking' in change && change.ingest === true && service.flexible && !declared.has(instruction.table) && !changed.has(instruction.table);
      if ('breaking' in change && !(firstIngestDeclaration && devMode)) {
        const asymmetricInvolved = instruction.type === 'AddTable' && instruction.spec.kind === 'topLevel' && (instruction.spec.asymmetric || next.get(instruction.table)?.asymmetric === true);
        const hint = asymmetricInvolved ? ' (the data ingest types are those listed in "asymmetric_tables" of sync/config.json)' : '';
        return invalidSchemaChange(`breaking schema change: ${change.breaking}${hint}`);
      }
      if ('additive' in change && !devMode) return invalidSchemaChange(`non-breaking schema change: ${change.additive}, schema changes from clients are restricted when developer mode is disabled`);
      applySchemaInstruction(next, instruction);
      changed.add(instruction.table);
    }
    if (changed.size === 0) return undefined;
    if (!mayWrite) return SYNC_ERRORS.permissionDenied('UPLOAD', 'a session that may not write cannot change the schema');
    const newlyAsymmetric = [...changed].filter((name) => next.get(name)?.asymmetric === true && schema.get(name)?.asymmetric !== true);
    if (newlyAsymmetric.length > 0) {
      if (!this.options.addAsymmetricTables) return invalidSchemaChange('asymmetric tables need development mode');
      try {
        await this.options.addAsymmetricTables(newlyAsymmetric);
      } catch (e) {
        return invalidSchemaChange(`development mode could not record the asymmetric tables: ${(e as Error).message}`);
      }
      this.invalidate();
    }
    const unknown = [...changed].filter((name) => {
      const table = next.get(name);
      return table && !table.embedded && !service.collectionOfType(name);
    });
    if (unknown.length > 0) {
      try {
        await this.options.applySchema!(unknown.map((name) => objectTypeOf(next, next.get(name)!)));
      } catch (e) {
        return invalidSchemaChange(`development mode could not write the schemas: ${(e as Error).message}`);
      }
      this.invalidate();
    }
    for (const name of changed) await this.declareTable(next.get(name)!);
    this.invalidate();
    return undefined;
  }
  /**
   * Development mode, flexible sync: the fields a subscription queried that are not queryable become
   * queryable fields of their collections, as the platform does. Returns the fields added (none outside
   * development mode, or when no field qualifies).
   */
  async addQueryableFields(notQueryable: readonly NotQueryableFields[]): Promise<{ collection: string; field: string }[]> {
    const running = this.options.service.runtimeState.running;
    const addQueryableFields = this.options.addQueryableFields;
    if (!running?.settings.developmentModeEnabled || running.settings.type !== 'flexible' || !addQueryableFields) return [];
    // One edit of sync/config.json (and reload) at a time.
    return this.options.run(DEVELOPMENT_MODE_QUEUE, async () => {
      const { added } = await addQueryableFields(notQueryable.map((n) => ({ collection: n.collection.collection, schema: n.collection.schema, fields: n.fields })));
      for (const { collection, field } of added) this.options.log.info(`sync: development mode: "${field}" is now a queryable field of collection ${collection}`);
      return added;
    });
  }
}

function invalidSchemaChange(why: string): EngineError {
  return { code: ErrorCode.invalid_schema_change, name: 'ErrorInvalidSchemaChange', message: `Invalid schema change (UPLOAD): ${why}`, action: 'none', tryAgain: false };
}

/**
 * How a client's AddTable or AddColumn differs from the schema: not at all (undefined), by adding a table or a
 * column, or by changing an existing table's kind, primary key or column (breaking).
 */
function schemaChange(schema: RealmSchema, instruction: Instruction): { additive: string } | { breaking: string; ingest?: boolean } | undefined {
  if (instruction.type === 'AddTable') {
    const table = schema.get(instruction.table);
    if (!table) return { additive: `adding schema for Realm table "${instruction.table}"` };
    const spec = instruction.spec;
    const declared = spec.kind === 'embedded' ? 'an embedded table'
      : tableText(spec.asymmetric, spec.pkField, spec.pkType, spec.pkNullable);
    const server = table.embedded || !table.primaryKey ? 'an embedded table'
      : tableText(table.asymmetric, table.primaryKey.field, table.primaryKey.type, table.primaryKey.nullable);
    if (declared === server) return undefined;
    // The same table, only made asymmetric (data ingest).
    const ingest = spec.kind === 'topLevel' && spec.asymmetric && !table.asymmetric && !table.embedded && table.primaryKey !== undefined
      && declared === tableText(true, table.primaryKey.field, table.primaryKey.type, table.primaryKey.nullable);
    return { breaking: `table "${instruction.table}" declared as ${declared}, the server's is ${server}`, ...(ingest ? { ingest } : {}) };
  }
  if (instruction.type === 'AddColumn') {
    const table = schema.get(instruction.table);
    if (!table) return { breaking: `column "${instruction.field}" added to table "${instruction.table}", which is not declared` };
    if (table.primaryKey?.field === instruction.field) return { breaking: `column "${instruction.field}" of table "${instruction.table}" is its primary key` };
    const column = table.columns.get(instruction.field);
    const declared = columnText(instruction.valueType, instruction.collectionType, instruction.linkTargetTable);
    if (!column) return { additive: `adding "${PLATFORM_TYPE_NAMES[instruction.valueType] ?? instruction.valueType}" column at field "${instruction.field}" in schema "${instruction.table}"` };
    // Nullability aside, as realm-core's own applier compares an existing column: clients whose models
    // differ from the collection schema only there sync as they are, and the server keeps its own.
    const server = columnText(column.type, column.collection, column.linkTarget);
    return declared === server ? undefined : { breaking: `column "${instruction.field}" of table "${instruction.table}" declared as ${declared}, the server's is ${server}` };
  }
  return undefined;
}

/** Value types as the platform's schema messages name them. */
const PLATFORM_TYPE_NAMES: Partial<Record<string, string>> = {
  int: 'Int', bool: 'Bool', string: 'String', binary: 'Binary', timestamp: 'Timestamp', float: 'Float', double: 'Double',
  decimal: 'Decimal128', objectId: 'ObjectID', uuid: 'UUID', link: 'Link', null: 'Mixed', mixed: 'Mixed',
};

function tableText(asymmetric: boolean, pkField: string, pkType: string, pkNullable: boolean): string {
  return `${asymmetric ? 'an asymmetric' : 'a top-level'} table with primary key "${pkField}" ${pkType}${pkNullable ? ' (nullable)' : ''}`;
}

function columnText(type: string, collection: string, linkTarget: string | undefined): string {
  return `${collection === 'single' ? '' : `${collection} of `}${type === 'null' ? 'mixed' : type}${linkTarget ? ` -> ${linkTarget}` : ''}`;
}
