// Instructions ↔ documents. An upload's object instructions are applied to copies of the documents they
// touch (all addressed by a top-level table and primary key; embedded objects are reached by paths);
// documents (a bootstrap, or a write from GraphQL, functions or the Data API) become the instructions that
// recreate them on a client.
import { isDeepStrictEqual } from 'node:util';
import type { Instruction, Payload, PathElement, PrimaryKey } from '../wire/instructions';
import type { RealmColumn, RealmSchema, RealmTable } from './schema';
import { mixedCollectionOf, payloadToValue, primaryKeyOf, valueToPayload } from './values';

export type Document = Record<string, unknown>;

/** Why an instruction could not be applied: the upload is a bad changeset. */
export class InstructionError extends Error {}
/** An instruction that does not fit the document as stored (a list shorter than its index, a path to nothing). */
export class StoredStateError extends InstructionError {}

const MAX_PATH_DEPTH = 32;

/** The column a path leads to inside a table (through embedded objects), for typing the payload. */
function columnAt(schema: RealmSchema, table: RealmTable, field: string, path: readonly PathElement[]): RealmColumn | undefined {
  let column = table.columns.get(field);
  for (const element of path) {
    if (!column) return undefined;
    if (typeof element === 'number' || column.collection === 'dictionary') {
      if (column.collection === 'single') return undefined;
      column = { ...column, collection: 'single' };
      continue;
    }
    const embedded = column.linkTarget ? schema.get(column.linkTarget) : undefined;
    if (!embedded?.embedded) return undefined;
    column = embedded.columns.get(element);
  }
  return column;
}

function containerAt(doc: Document, field: string, path: readonly PathElement[]): unknown {
  let current: unknown = doc[field];
  for (const element of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = typeof element === 'number' ? (Array.isArray(current) ? current[element] : undefined) : (current as Document)[element];
  }
  return current;
}

/** The object or array holding the last path element, and that element. */
function parentOf(doc: Document, field: string, path: readonly PathElement[]): { parent: unknown; key: PathElement } {
  if (path.length === 0) return { parent: doc, key: field };
  return { parent: containerAt(doc, field, path.slice(0, -1)), key: path[path.length - 1]! };
}

/**
 * Collections exist (empty) on every object, embedded ones included: a client's first insert into a list or
 * dictionary of a new embedded object comes with no instruction creating it, so the document gets it here.
 */
function materializeCollection(doc: Document, schema: RealmSchema, table: RealmTable, field: string, containerPath: readonly PathElement[]): void {
  if (containerPath.length === 0) return;
  const { parent, key } = parentOf(doc, field, containerPath);
  if (parent === null || typeof parent !== 'object' || Array.isArray(parent) || typeof key !== 'string') return;
  const holder = parent as Document;
  if (holder[key] !== undefined && holder[key] !== null) return;
  const column = columnAt(schema, table, field, containerPath);
  if (column && column.collection !== 'single') holder[key] = column.collection === 'dictionary' ? {} : [];
}

/** Whether the path ends at a key of a dictionary (rather than at a field of an object). */
function inDictionary(schema: RealmSchema, table: RealmTable, field: string, path: readonly PathElement[]): boolean {
  if (path.length === 0) return false;
  const holder = path.length === 1 ? table.columns.get(field) : columnAt(schema, table, field, path.slice(0, -1));
  return holder?.collection === 'dictionary';
}

const needArray = (value: unknown, what: string): unknown[] => {
  if (!Array.isArray(value)) throw new StoredStateError(`${what}: the path does not lead to a list`);
  return value;
};

/** Applies one object instruction to a document (mutating it). */
export function applyToDocument(doc: Document, instruction: Instruction, table: RealmTable, schema: RealmSchema): void {
  if (!('path' in instruction)) return;
  const { field, path } = instruction;
  if (path.length > MAX_PATH_DEPTH) throw new InstructionError(`${instruction.type} on ${instruction.table}.${field}: the path is deeper than ${MAX_PATH_DEPTH}`);
  const what = `${instruction.type} ${instruction.table}.${[field, ...path].join('.')}`;
  // The primary key is the object's identity (the document's `_id`): changing it would make the write land on another document.
  if (field === '_id' || field === table.primaryKey?.field) throw new InstructionError(`${what}: the primary key "${field}" of an object cannot be changed`);
  const column = columnAt(schema, table, field, path);
  // A collection column exists (empty) on every object; the document holds it from its first element on.
  const own = table.columns.get(field);
  if (own && own.collection !== 'single' && (doc[field] === undefined || doc[field] === null)) doc[field] = own.collection === 'dictionary' ? {} : [];
  if (instruction.type === 'Update' || instruction.type === 'ArrayInsert') materializeCollection(doc, schema, table, field, path.slice(0, -1));
  else if (instruction.type === 'SetInsert') materializeCollection(doc, schema, table, field, path);
  switch (instruction.type) {
    case 'Update': {
      const { parent, key } = parentOf(doc, field, path);
      // Making a list or a dictionary where one is keeps it, as realm-core applies it (its merge relies on that).
      const current = parent !== null && typeof parent === 'object' ? (parent as Record<string | number, unknown>)[key] : undefined;
      if ((instruction.value.type === 'list' || instruction.value.type === 'dictionary') && mixedCollectionOf(current) === instruction.value.type) return;
      const value = payloadToValue(instruction.value, column, schema);
      if (Array.isArray(parent) && typeof key === 'number') {
        if (key >= parent.length) throw new StoredStateError(`${what}: index ${key} is past the end of a list of ${parent.length}`);
        parent[key] = value;
      } else if (parent !== null && typeof parent === 'object' && typeof key === 'string') {
        const target = parent as Document;
        if (instruction.value.type === 'erased') delete target[key];
        // An embedded object field keeps its object (creation is idempotent); a dictionary's value is a new object.
        else if (instruction.value.type === 'objectValue' && !inDictionary(schema, table, field, path) && target[key] !== null && typeof target[key] === 'object' && !Array.isArray(target[key])) return;
        else target[key] = value;
      } else throw new StoredStateError(`${what}: the path leads nowhere`);
      return;
    }
    case 'AddInteger': {
      const { parent, key } = parentOf(doc, field, path);
      if (parent === null || typeof parent !== 'object') throw new StoredStateError(`${what}: the path leads nowhere`);
      const holder = parent as Record<string | number, unknown>;
      const current = holder[key];
      if (current === null || current === undefined) return;
      const base = typeof current === 'number' ? BigInt(Math.trunc(current)) : typeof (current as { toBigInt?: unknown }).toBigInt === 'function' ? (current as { toBigInt(): bigint }).toBigInt() : undefined;
      if (base === undefined) throw new StoredStateError(`${what}: the field is not an integer`);
      holder[key] = payloadToValue({ type: 'int', value: BigInt.asIntN(64, base + instruction.value) }, column, schema);
      return;
    }
    case 'ArrayInsert': {
      const list = needArray(containerAt(doc, field, path.slice(0, -1)) ?? (path.length === 1 ? (doc[field] = []) : undefined), what);
      const index = path[path.length - 1];
      if (typeof index !== 'number' || index > list.length) throw new StoredStateError(`${what}: index ${String(index)} is past the end of a list of ${list.length}`);
      list.splice(index, 0, payloadToValue(instruction.value, column, schema));
      return;
    }
    case 'ArrayErase': {
      const list = needArray(containerAt(doc, field, path.slice(0, -1)), what);
      const index = path[path.length - 1];
      if (typeof index !== 'number' || index >= list.length) throw new StoredStateError(`${what}: index ${String(index)} is past the end of a list of ${list.length}`);
      list.splice(index, 1);
      return;
    }
    case 'ArrayMove': {
      const list = needArray(containerAt(doc, field, path.slice(0, -1)), what);
      const from = path[path.length - 1];
      if (typeof from !== 'number' || from >= list.length || instruction.ndx2 >= list.length) throw new StoredStateError(`${what}: index out of range of a list of ${list.length}`);
      const [moved] = list.splice(from, 1);
      list.splice(instruction.ndx2, 0, moved);
      return;
    }
    case 'Clear': {
      const { parent, key } = parentOf(doc, field, path);
      if (parent === null || typeof parent !== 'object') throw new StoredStateError(`${what}: the path leads nowhere`);
      (parent as Record<string | number, unknown>)[key] = instruction.collectionType === 'dictionary' ? {} : [];
      return;
    }
    case 'SetInsert': case 'SetErase': {
      const { parent, key } = parentOf(doc, field, path);
      if (parent === null || typeof parent !== 'object') throw new StoredStateError(`${what}: the path leads nowhere`);
      const holder = parent as Record<string | number, unknown>;
      const set = Array.isArray(holder[key]) ? holder[key] as unknown[] : (holder[key] = []) as unknown[];
      const value = payloadToValue(instruction.value, column ? { ...column, collection: 'single' } : undefined, schema);
      const at = set.findIndex((v) => isDeepStrictEqual(v, value));
      if (instruction.type === 'SetInsert' && at < 0) set.push(value);
      if (instruction.type === 'SetErase' && at >= 0) set.splice(at, 1);
      return;
    }
    default:
  }
}

/** The instructions that set a column of a new object to a document's value, appended to `out`. */
function emitValue(out: Instruction[], schema: RealmSchema, tableName: string, object: PrimaryKey, field: string, path: PathElement[], column: RealmColumn, value: unknown): void {
  if (value === undefined) return;
  // The common case, a scalar in a single column, without the closures below (a bulk write's every field).
  if (column.collection === 'single' && column.type !== 'null' && (!column.linkTarget || !schema.get(column.linkTarget)?.embedded)) {
    const payload = valueToPayload(value, column);
    if (payload) out.push({ type: 'Update', table: tableName, object, field, path, value: payload, isDefault: false, priorSize: 0 });
    return;
  }
  const target = column.linkTarget ? schema.get(column.linkTarget) : undefined;
  const embedded = target?.embedded ? target : undefined;
  const single = { ...column, collection: 'single' as const };
  const base = { table: tableName, object, field };
  const emitElement = (elementPath: PathElement[], element: unknown, insert: (payload: Payload) => void): void => {
    if (embedded) {
      if (element === null || typeof element !== 'object' || Array.isArray(element)) return insert({ type: 'null' });
      insert({ type: 'objectValue' });
      emitObjectFields(out, schema, tableName, object, field, elementPath, embedded, element as Document);
      return;
    }
    if (column.type === 'null') return emitMixed(elementPath, element, insert);
    const payload = valueToPayload(element, single);
    if (payload) insert(payload);
  };
  // A mixed value holding a list or a dictionary: the collection made in place, then its elements, at any depth.
  const emitMixed = (elementPath: PathElement[], element: unknown, insert: (payload: Payload) => void): void => {
    const kind = mixedCollectionOf(element);
    if (!kind) {
      const payload = valueToPayload(element, single);
      if (payload) insert(payload);
      return;
    }
    insert({ type: kind });
    if (kind === 'list') {
      let size = 0;
      for (const item of element as unknown[]) {
        const at = size;
        emitMixed([...elementPath, at], item, (payload) => { out.push({ type: 'ArrayInsert', ...base, path: [...elementPath, at], value: payload, priorSize: at }); size++; });
      }
      return;
    }
    for (const [key, item] of Object.entries(element as Document)) {
      emitMixed([...elementPath, key], item, (payload) => out.push({ type: 'Update', ...base, path: [...elementPath, key], value: payload, isDefault: false, priorSize: 0 }));
    }
  };
  switch (column.collection) {
    case 'single':
      emitElement(path, value, (payload) => out.push({ type: 'Update', ...base, path, value: payload, isDefault: false, priorSize: 0 }));
      return;
    case 'list': {
      if (!Array.isArray(value)) return;
      let size = 0;
      for (const element of value) {
        const at = size;
        emitElement([...path, at], element, (payload) => { out.push({ type: 'ArrayInsert', ...base, path: [...path, at], value: payload, priorSize: at }); size++; });
      }
      return;
    }
    case 'set':
      if (!Array.isArray(value)) return;
      for (const element of value) {
        const payload = valueToPayload(element, single);
        if (payload) out.push({ type: 'SetInsert', ...base, path, value: payload });
      }
      return;
    case 'dictionary':
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
      for (const [key, element] of Object.entries(value as Document)) {
        emitElement([...path, key], element, (payload) => out.push({ type: 'Update', ...base, path: [...path, key], value: payload, isDefault: false, priorSize: 0 }));
      }
  }
}

function emitObjectFields(out: Instruction[], schema: RealmSchema, tableName: string, object: PrimaryKey, field: string, path: PathElement[], table: RealmTable, doc: Document): void {
  for (const column of table.columns.values()) {
    if (!Object.hasOwn(doc, column.name)) continue;
    emitValue(out, schema, tableName, object, field, [...path, column.name], column, doc[column.name]);
  }
}

/** The instructions that create a document's object on a client. */
export function documentInstructions(schema: RealmSchema, table: RealmTable, doc: Document): Instruction[] {
  const object = primaryKeyOf(doc._id);
  if (!object) return [];
  const out: Instruction[] = [{ type: 'CreateObject', table: table.name, object }];
  for (const column of table.columns.values()) {
    // A null where the table's column is required (a field optional in another schema version) is left to the client's default.
    if (!Object.hasOwn(doc, column.name) || (doc[column.name] === null && !column.nullable && column.collection === 'single')) continue;
    emitValue(out, schema, table.name, object, column.name, [], column, doc[column.name]);
  }
  return out;
}

/** The instructions that turn `before` into `after` on a client (per changed column, whole values). */
export function changeInstructions(schema: RealmSchema, table: RealmTable, before: Document | undefined, after: Document | undefined): Instruction[] {
  if (!after) {
    const object = before ? primaryKeyOf(before._id) : undefined;
    return object ? [{ type: 'EraseObject', table: table.name, object }] : [];
  }
  if (!before) return documentInstructions(schema, table, after);
  const object = primaryKeyOf(after._id);
  if (!object) return [];
  const out: Instruction[] = [];
  for (const column of table.columns.values()) {
    const was = before[column.name];
    const is = after[column.name];
    if (isDeepStrictEqual(was, is)) continue;
    const base = { table: table.name, object, field: column.name, path: [] as PathElement[] };
    if (column.collection !== 'single') {
      out.push({ type: 'Clear', ...base, collectionType: column.collection });
      emitValue(out, schema, table.name, object, column.name, [], column, is);
      continue;
    }
    const target = column.linkTarget ? schema.get(column.linkTarget) : undefined;
    if (target?.embedded && was !== null && was !== undefined) out.push({ type: 'Update', ...base, value: { type: 'null' }, isDefault: false, priorSize: 0 });
    if (is === undefined || is === null) {
      if (!(target?.embedded && was !== null && was !== undefined)) out.push({ type: 'Update', ...base, value: { type: 'null' }, isDefault: false, priorSize: 0 });
      continue;
    }
    emitValue(out, schema, table.name, object, column.name, [], column, is);
  }
  return out;
}
