// Development mode (rules-and-sync §7): a client's object types become collection schemas in
// `database_name` of the synced cluster, written into the app's files (`data_sources/<svc>/<db>/<Type>/
// schema.json`) so the language server and `asl check` see them. New types create a schema; known types
// gain the properties they lack; existing properties are never changed (schema changes only add). Flexible
// sync: the fields clients query become collection queryable fields of `sync/config.json`, and the types
// they declare asymmetric join its `asymmetric_tables`.
import fs from 'node:fs';
import path from 'node:path';
import { applyEdits, modify, parse } from 'jsonc-parser';
import { isPlainObject } from '../../core/rules/bsonValues';
import type { SyncSettings } from '../../core/sync';
import { syncConfigPath } from './files';

/**
 * An object type or property name as Realm and MongoDB allow it (spaces and other characters included, as
 * realm-core's own tests use them): 1–63 characters, no control character, no `$` first, no `.` (a path in
 * MongoDB) and no path separator (type names become folder names), not `.`/`..`.
 */
const NAME = /^(?![$])(?!\.{1,2}$)[^\u0000-\u001f\u007f./\\]{1,63}$/u;
/** A database or service name used as a folder name: no separators, no `..`. */
const FOLDER_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const BSON_TYPE_OF_KEY_TYPE: Record<string, string> = { string: 'string', objectId: 'objectId', long: 'long', uuid: 'uuid' };

/** Writes the object types as schemas; returns the files written (relative to the app). Throws with a message on bad input. */
export function mirrorObjectTypes(appDir: string, settings: SyncSettings, types: unknown): string[] {
  if (!settings.developmentModeEnabled) throw new Error('development mode is off: turn on "development_mode_enabled" in sync/config.json');
  if (!settings.databaseName || !settings.serviceName) throw new Error('development mode needs "database_name" and "service_name" in sync/config.json');
  if (!FOLDER_NAME.test(settings.databaseName) || !FOLDER_NAME.test(settings.serviceName)) throw new Error('"database_name" and "service_name" must be plain names to write schemas under data_sources/');
  if (!Array.isArray(types) || types.length === 0) throw new Error('"types" must be a non-empty list of {name, properties, required?}');
  const written: string[] = [];
  const planned: { file: string; schema: Record<string, unknown> }[] = [];
  for (const [i, type] of types.entries()) {
    if (!isPlainObject(type) || typeof type.name !== 'string' || !NAME.test(type.name)) throw new Error(`types[${i}].name must be a type name (1–63 characters, no '.', '/', '\\' or control character, not starting with '$')`);
    if (!isPlainObject(type.properties)) throw new Error(`types[${i}].properties must be an object of {bsonType}`);
    const properties: Record<string, unknown> = {};
    for (const [field, spec] of Object.entries(type.properties)) {
      if (!NAME.test(field)) throw new Error(`types[${i}].properties: "${field}" is not a field name`);
      const bsonType = typeof spec === 'string' ? spec : isPlainObject(spec) ? spec.bsonType : undefined;
      if (typeof bsonType !== 'string' && !(Array.isArray(bsonType) && bsonType.every((t) => typeof t === 'string'))) throw new Error(`types[${i}].properties.${field} needs a bsonType`);
      properties[field] = isPlainObject(spec) ? spec : { bsonType };
    }
    const key = settings.partition?.key;
    if (key && !properties[key]) properties[key] = { bsonType: BSON_TYPE_OF_KEY_TYPE[settings.partition!.type] ?? 'string' };
    const rel = path.join('data_sources', settings.serviceName, settings.databaseName, type.name, 'schema.json');
    const file = path.join(appDir, rel);
    let existing: Record<string, unknown> | undefined;
    try {
      const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
      if (isPlainObject(parsed)) existing = parsed;
    } catch {
      existing = undefined;
    }
    const required = Array.isArray(type.required) ? type.required.filter((r): r is string => typeof r === 'string' && r in properties) : [];
    const schema = existing
      ? { ...existing, properties: { ...properties, ...(isPlainObject(existing.properties) ? existing.properties : {}) } }
      : { title: type.name, bsonType: 'object', ...(required.length ? { required } : {}), properties: { _id: { bsonType: 'objectId' }, ...properties } };
    if (existing && JSON.stringify(existing) === JSON.stringify(schema)) continue;
    planned.push({ file, schema });
    written.push(rel.split(path.sep).join('/'));
  }
  for (const { file, schema } of planned) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(schema, null, 2)}\n`);
  }
  return written;
}

/** Fields a subscription queried that are not queryable yet, with the collection's JSON Schema. */
export interface QueriedFields {
  collection: string;
  schema: Record<string, unknown>;
  fields: string[];
}

/**
 * Development mode for flexible sync: the fields clients query become collection queryable fields
 * (`collection_queryable_fields_names.<collection>` of `sync/config.json`, edited in place). Only
 * top-level properties of the collection's schema with a scalar type (or a list of scalars) qualify, as
 * the platform's queryable fields. Returns the fields added.
 */
export function addQueryableFields(appDir: string, settings: SyncSettings, queried: readonly QueriedFields[]): { collection: string; field: string }[] {
  if (!settings.developmentModeEnabled) throw new Error('development mode is off: turn on "development_mode_enabled" in sync/config.json');
  const file = syncConfigPath(appDir);
  let text = fs.readFileSync(file, 'utf8');
  const config = parse(text, [], { allowTrailingComma: true }) as unknown;
  if (!isPlainObject(config)) throw new Error('sync/config.json is not a JSON object');
  // The file's lists, which may hold edits not reloaded yet, are what gains the fields.
  const byCollection = isPlainObject(config.collection_queryable_fields_names) ? config.collection_queryable_fields_names : {};
  const additions = new Map<string, string[]>();
  const added: { collection: string; field: string }[] = [];
  for (const { collection, schema, fields } of queried) {
    if (!NAME.test(collection)) continue;
    const properties = isPlainObject(schema.properties) ? schema.properties : {};
    const listed = byCollection[collection];
    const current = additions.get(collection) ?? (Array.isArray(listed) ? listed.filter((f): f is string => typeof f === 'string') : []);
    for (const field of fields) {
      if (!NAME.test(field) || current.includes(field) || !Object.hasOwn(properties, field) || !queryableProperty(properties[field])) continue;
      current.push(field);
      added.push({ collection, field });
    }
    additions.set(collection, current);
  }
  if (added.length === 0) return [];
  const formatting = { formattingOptions: { insertSpaces: true, tabSize: 2 } };
  for (const [collection, fields] of additions) text = applyEdits(text, modify(text, ['collection_queryable_fields_names', collection], fields, formatting));
  fs.writeFileSync(file, text);
  return added;
}

/**
 * Development mode, flexible sync: object types a client declared asymmetric (data ingest) join
 * `asymmetric_tables` of `sync/config.json`, edited in place, which is what makes a type asymmetric.
 */
export function addAsymmetricTables(appDir: string, settings: SyncSettings, tables: readonly string[]): void {
  if (!settings.developmentModeEnabled) throw new Error('development mode is off: list data ingest types in "asymmetric_tables" of sync/config.json');
  const file = syncConfigPath(appDir);
  const text = fs.readFileSync(file, 'utf8');
  const config = parse(text, [], { allowTrailingComma: true }) as unknown;
  if (!isPlainObject(config)) throw new Error('sync/config.json is not a JSON object');
  const listed = Array.isArray(config.asymmetric_tables) ? config.asymmetric_tables.filter((t): t is string => typeof t === 'string') : [];
  const added = tables.filter((table) => NAME.test(table) && !listed.includes(table));
  if (added.length === 0) return;
  const formatting = { formattingOptions: { insertSpaces: true, tabSize: 2 } };
  fs.writeFileSync(file, applyEdits(text, modify(text, ['asymmetric_tables'], [...listed, ...added], formatting)));
}

/** A scalar property, or a list of scalars (embedded objects and lists of them are not queryable). */
function queryableProperty(spec: unknown): boolean {
  if (!isPlainObject(spec)) return false;
  const type = spec.bsonType;
  if (type === 'object') return false;
  if (type === 'array') return !isPlainObject(spec.items) || spec.items.bsonType !== 'object';
  return true;
}

/** What a sync session (the Realm protocol's, the feed's) asks development mode to write into the app's files. */
export interface DevelopmentModeWrites {
  applySchema(types: unknown): Promise<{ written: string[] }>;
  addQueryableFields(queried: readonly QueriedFields[]): Promise<{ added: { collection: string; field: string }[] }>;
  addAsymmetricTables(tables: readonly string[]): Promise<void>;
}

/**
 * The writes of development mode for the app in `appDir`, each refused while sync is not enabled (`running`
 * gives the settings sync runs with) and followed by `reload` when it changed a file, so the sessions see
 * the new schemas and configuration.
 */
export function developmentModeWrites(appDir: string, running: () => SyncSettings | undefined, reload: () => Promise<unknown>): DevelopmentModeWrites {
  const write = async <T>(change: (settings: SyncSettings) => T, changed: (result: T) => boolean): Promise<T> => {
    const settings = running();
    if (!settings) throw new Error('sync is not enabled');
    const result = change(settings);
    if (changed(result)) await reload();
    return result;
  };
  return {
    applySchema: async (types) => ({ written: await write((s) => mirrorObjectTypes(appDir, s, types), (written) => written.length > 0) }),
    addQueryableFields: async (queried) => ({ added: await write((s) => addQueryableFields(appDir, s, queried), (added) => added.length > 0) }),
    addAsymmetricTables: async (tables) => { await write((s) => addAsymmetricTables(appDir, s, tables), () => true); },
  };
}
