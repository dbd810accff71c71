// Flexible sync's queryable fields against the synced collection schemas: a queryable field that no
// synced schema has cannot select anything (usually a misspelling), and the indexed queryable field must
// be a global queryable field present in every synced schema.
//
// An asymmetric (data ingest) table no synced schema defines makes nothing asymmetric.
//
// Codes: sync/queryable-field-not-in-schema, sync/queryable-collection-unknown,
// sync/collection-queryable-field-not-in-schema, sync/indexed-field-not-queryable,
// sync/indexed-field-not-in-schema, sync/asymmetric-table-unknown.
import type { DiagnosticSink } from '../diagnostics';
import { isObject, type JsonFile } from '../json';
import type { AppModel, Collection } from '../model';
import { ALWAYS_QUERYABLE_FIELDS } from '../rql/fields';
import { closestName } from '../spelling';

interface SyncedSchema {
  collection: Collection;
  schema: JsonFile;
  /** The object type name clients use (the schema's title), else the collection name. */
  table: string;
  properties: Set<string>;
}

function syncedSchemas(app: AppModel): SyncedSchema[] {
  const sync = app.sync!;
  const ds = app.dataSources.find((d) => d.name === sync.serviceName) ?? (sync.serviceName ? undefined : app.dataSources[0]);
  if (!ds) return [];
  const out: SyncedSchema[] = [];
  for (const collection of ds.collections) {
    const schema = collection.schema;
    if (!schema || !isObject(schema.value)) continue;
    if (sync.developmentModeEnabled && sync.databaseName && collection.database !== sync.databaseName) continue;
    const properties = isObject(schema.value.properties) ? Object.keys(schema.value.properties) : [];
    const table = typeof schema.value.title === 'string' ? schema.value.title : collection.collection;
    out.push({ collection, schema, table, properties: new Set(properties) });
  }
  return out;
}

function stringEntries(value: unknown): Array<{ name: string; index: number }> {
  return Array.isArray(value) ? value.flatMap((v, index) => (typeof v === 'string' ? [{ name: v, index }] : [])) : [];
}

function suggestion(name: string, candidates: Iterable<string>): string {
  const close = closestName(name, candidates);
  return close ? `; did you mean "${close}"?` : '';
}

export function validateFlexibleSync(app: AppModel, sink: DiagnosticSink): void {
  const file = app.sync!.file;
  const config = file.value;
  if (!isObject(config)) return;
  const schemas = syncedSchemas(app);
  const global = stringEntries(config.queryable_fields_names);
  const allProperties = new Set(schemas.flatMap((s) => [...s.properties]));
  const tables = schemas.map((s) => s.table).join(', ');

  if (schemas.length > 0) {
    for (const { name, index } of global) {
      if (ALWAYS_QUERYABLE_FIELDS.includes(name) || allProperties.has(name)) continue;
      sink.at(file, ['queryable_fields_names', index], 'warning', 'sync/queryable-field-not-in-schema',
        `No synced collection schema has a "${name}" property (synced: ${tables}), so subscriptions on it match nothing${suggestion(name, allProperties)}`, { data: { field: name } });
    }
  }

  const perCollection = isObject(config.collection_queryable_fields_names) ? config.collection_queryable_fields_names : {};
  if (schemas.length > 0) {
    for (const [key, fields] of Object.entries(perCollection)) {
      const target = schemas.find((s) => s.collection.collection === key || s.table === key);
      if (!target) {
        sink.at(file, ['collection_queryable_fields_names', key], 'warning', 'sync/queryable-collection-unknown',
          `No synced collection is named "${key}" (synced: ${tables})${suggestion(key, schemas.flatMap((s) => [s.collection.collection, s.table]))}`, { target: 'key', data: { collection: key } });
        continue;
      }
      for (const { name, index } of stringEntries(fields)) {
        if (ALWAYS_QUERYABLE_FIELDS.includes(name) || target.properties.has(name)) continue;
        sink.at(file, ['collection_queryable_fields_names', key, index], 'warning', 'sync/collection-queryable-field-not-in-schema',
          `The schema of ${target.collection.database}.${target.collection.collection} has no "${name}" property, so subscriptions on it match nothing${suggestion(name, target.properties)}`, { data: { field: name, collection: key } });
      }
    }
  }

  if (schemas.length > 0 && !app.sync!.developmentModeEnabled) {
    const names = schemas.map((s) => s.table);
    for (const { name, index } of stringEntries(config.asymmetric_tables)) {
      if (names.includes(name)) continue;
      sink.at(file, ['asymmetric_tables', index], 'warning', 'sync/asymmetric-table-unknown',
        `No synced collection schema is titled "${name}" (synced: ${tables}), so no object type is made asymmetric by this entry${suggestion(name, names)}`, { data: { table: name } });
    }
  }

  for (const { name, index } of stringEntries(config.indexed_queryable_fields_names)) {
    if (!global.some((g) => g.name === name)) {
      sink.at(file, ['indexed_queryable_fields_names', index], 'error', 'sync/indexed-field-not-queryable',
        `The indexed queryable field "${name}" must also be listed in "queryable_fields_names"`, { data: { field: name } });
    }
    const missing = schemas.filter((s) => !s.properties.has(name) && !ALWAYS_QUERYABLE_FIELDS.includes(name));
    if (missing.length > 0 && schemas.length > 0) {
      sink.at(file, ['indexed_queryable_fields_names', index], 'warning', 'sync/indexed-field-not-in-schema',
        `The indexed queryable field "${name}" must be in every synced collection; ${missing.map((s) => `${s.collection.database}.${s.collection.collection}`).join(', ')} ${missing.length === 1 ? 'has' : 'have'} no "${name}" property`,
        { data: { field: name }, related: missing.map((s) => ({ file: s.schema.path, range: s.schema.range(['properties']), message: `${s.table} has no "${name}"` })) });
    }
  }
}
