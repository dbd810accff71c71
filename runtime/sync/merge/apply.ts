// A small in-memory model of a synced realm (tables → objects by primary key → fields, with lists, sets,
// dictionaries and embedded objects) and the application of changeset instructions to it, with the
// checks realm-core's instruction applier makes (list sizes, missing objects and fields). The merge's
// tests use it to check convergence; it is also a readable reference for what each instruction does.
import type { CollectionType, Instruction, Payload, PayloadTypeName, PrimaryKey } from '../wire/instructions';

export type Value =
  | { kind: 'scalar'; value: Payload }
  | { kind: 'list'; items: Value[] }
  | { kind: 'set'; items: Payload[] }
  | { kind: 'dictionary'; entries: Map<string, Value> }
  | { kind: 'object'; fields: Map<string, Value> };

export interface Column {
  valueType: PayloadTypeName;
  nullable: boolean;
  collectionType: CollectionType;
  linkTargetTable?: string;
}

export interface Table {
  spec: Extract<Instruction, { type: 'AddTable' }>['spec'];
  columns: Map<string, Column>;
  /** Top-level objects by `keyText(primary key)`; embedded tables have none (their objects live in fields). */
  objects: Map<string, { pk: PrimaryKey; fields: Map<string, Value> }>;
}

export interface RealmState { tables: Map<string, Table> }

/** A changeset the model refuses, as realm-core's applier refuses it ("bad changeset"). */
export class ApplyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ApplyError';
  }
}

export function emptyState(): RealmState {
  return { tables: new Map() };
}

export function cloneState(state: RealmState): RealmState {
  const tables = new Map<string, Table>();
  for (const [name, table] of state.tables) {
    const objects = new Map<string, { pk: PrimaryKey; fields: Map<string, Value> }>();
    for (const [key, object] of table.objects) objects.set(key, { pk: object.pk, fields: cloneFields(object.fields) });
    tables.set(name, { spec: table.spec, columns: new Map(table.columns), objects });
  }
  return { tables };
}

function cloneFields(fields: Map<string, Value>): Map<string, Value> {
  return new Map([...fields].map(([name, value]) => [name, cloneValue(value)]));
}

function cloneValue(value: Value): Value {
  switch (value.kind) {
    case 'scalar': return value;
    case 'list': return { kind: 'list', items: value.items.map(cloneValue) };
    case 'set': return { kind: 'set', items: [...value.items] };
    case 'dictionary': return { kind: 'dictionary', entries: new Map([...value.entries].map(([k, v]) => [k, cloneValue(v)])) };
    case 'object': return { kind: 'object', fields: cloneFields(value.fields) };
  }
}

export function keyText(pk: PrimaryKey): string {
  switch (pk.type) {
    case 'null': return 'null';
    case 'int': return `int:${pk.value}`;
    case 'string': return `string:${pk.value}`;
    case 'objectId': return `objectId:${pk.value.toHexString()}`;
    case 'uuid': return `uuid:${pk.value.toHexString()}`;
    case 'globalKey': return `globalKey:${pk.hi}:${pk.lo}`;
  }
}

/** Applies the instructions in order to `state` (modified in place). Throws `ApplyError`. */
export function applyChangeset(state: RealmState, instructions: Instruction[]): void {
  for (const instr of instructions) applyInstruction(state, instr);
}

function applyInstruction(state: RealmState, instr: Instruction): void {
  switch (instr.type) {
    case 'AddTable': {
      const existing = state.tables.get(instr.table);
      if (existing) {
        if (JSON.stringify(existing.spec) !== JSON.stringify(instr.spec)) throw new ApplyError(`AddTable: '${instr.table}' exists with another shape`);
        return;
      }
      state.tables.set(instr.table, { spec: instr.spec, columns: new Map(), objects: new Map() });
      return;
    }
    case 'EraseTable':
      if (!state.tables.delete(instr.table)) throw new ApplyError(`EraseTable: no table '${instr.table}'`);
      return;
    case 'AddColumn': {
      const table = tableOf(state, instr.table);
      const column: Column = { valueType: instr.valueType, nullable: instr.nullable, collectionType: instr.collectionType, linkTargetTable: instr.linkTargetTable };
      const existing = table.columns.get(instr.field);
      if (existing) {
        if (JSON.stringify(existing) !== JSON.stringify(column)) throw new ApplyError(`AddColumn: '${instr.table}.${instr.field}' exists with another type`);
        return;
      }
      table.columns.set(instr.field, column);
      forEachObjectOf(state, instr.table, (fields) => fields.set(instr.field, defaultValue(column)));
      return;
    }
    case 'EraseColumn': {
      const table = tableOf(state, instr.table);
      if (!table.columns.delete(instr.field)) throw new ApplyError(`EraseColumn: no field '${instr.table}.${instr.field}'`);
      forEachObjectOf(state, instr.table, (fields) => fields.delete(instr.field));
      return;
    }
    case 'CreateObject': {
      const table = tableOf(state, instr.table);
      if (table.spec.kind !== 'topLevel') throw new ApplyError(`CreateObject in embedded table '${instr.table}'`);
      if (instr.object.type !== table.spec.pkType && !(instr.object.type === 'null' && table.spec.pkNullable)) {
        throw new ApplyError(`CreateObject(${instr.object.type}) on a table with primary key type ${table.spec.pkType}`);
      }
      const key = keyText(instr.object);
      if (!table.objects.has(key)) table.objects.set(key, { pk: instr.object, fields: newFields(table) });
      return;
    }
    case 'EraseObject':
      // Idempotent: erasing a missing object does nothing. Links to it stay and read as unresolved.
      tableOf(state, instr.table).objects.delete(keyText(instr.object));
      return;
    default:
      return applyPathInstruction(state, instr);
  }
}

function tableOf(state: RealmState, name: string): Table {
  const table = state.tables.get(name);
  if (!table) throw new ApplyError(`No such table '${name}'`);
  return table;
}

/** Calls `visit` with the fields of every object of `tableName`, embedded ones included. */
function forEachObjectOf(state: RealmState, tableName: string, visit: (fields: Map<string, Value>) => void): void {
  const walkValue = (value: Value, column: Column | undefined) => {
    if (!column || column.valueType !== 'link' || !column.linkTargetTable) return;
    const target = state.tables.get(column.linkTargetTable);
    if (!target || target.spec.kind !== 'embedded') return;
    const elements = value.kind === 'list' ? value.items : value.kind === 'dictionary' ? [...value.entries.values()] : [value];
    for (const element of elements) if (element.kind === 'object') walkObject(column.linkTargetTable, element.fields);
  };
  const walkObject = (name: string, fields: Map<string, Value>) => {
    const table = state.tables.get(name)!;
    for (const [field, value] of fields) walkValue(value, table.columns.get(field));
    if (name === tableName) visit(fields);
  };
  for (const [name, table] of state.tables) for (const object of table.objects.values()) walkObject(name, object.fields);
}

function newFields(table: Table): Map<string, Value> {
  return new Map([...table.columns].map(([name, column]) => [name, defaultValue(column)]));
}

function defaultValue(column: Column): Value {
  switch (column.collectionType) {
    case 'list': return { kind: 'list', items: [] };
    case 'set': return { kind: 'set', items: [] };
    case 'dictionary': return { kind: 'dictionary', entries: new Map() };
    case 'single': return { kind: 'scalar', value: column.nullable ? { type: 'null' } : zeroOf(column.valueType) };
  }
}

function zeroOf(type: PayloadTypeName): Payload {
  switch (type) {
    case 'int': return { type: 'int', value: 0n };
    case 'bool': return { type: 'bool', value: false };
    case 'string': return { type: 'string', value: '' };
    case 'binary': return { type: 'binary', value: new Uint8Array() };
    case 'timestamp': return { type: 'timestamp', seconds: 0n, nanoseconds: 0 };
    case 'float': return { type: 'float', value: 0 };
    case 'double': return { type: 'double', value: 0 };
    default: return { type: 'null' };
  }
}

// --- paths ---

type PathInstruction = Extract<Instruction, { path: unknown }>;

/** Where a path instruction lands. */
type Target =
  | { kind: 'property'; fields: Map<string, Value>; name: string; column: Column }
  | { kind: 'collection'; value: Value; column: Column }
  | { kind: 'listIndex'; list: Extract<Value, { kind: 'list' }>; index: number; column: Column }
  | { kind: 'dictionaryKey'; dictionary: Extract<Value, { kind: 'dictionary' }>; key: string; column: Column };

function resolve(state: RealmState, instr: PathInstruction): Target {
  const table = tableOf(state, instr.table);
  const object = table.objects.get(keyText(instr.object));
  if (!object) throw new ApplyError(`${instr.type}: No such object: ${keyText(instr.object)} in class '${instr.table}'`);
  let fields = object.fields;
  let tableName = instr.table;
  let name = instr.field;
  let position = 0;
  for (;;) {
    const column = tableOf(state, tableName).columns.get(name);
    if (!column) throw new ApplyError(`${instr.type}: No such field: '${name}' in class '${tableName}'`);
    const value = fields.get(name)!;
    const rest = instr.path.length - position;
    if (rest === 0) return column.collectionType === 'single' ? { kind: 'property', fields, name, column } : { kind: 'collection', value, column };
    const element = instr.path[position];
    let embedded: Value | undefined;
    let fieldAt = position + 1;
    if (column.collectionType === 'list' && value.kind === 'list') {
      if (typeof element !== 'number') throw new ApplyError(`${instr.type}: List index is not an integer on field '${name}'`);
      if (rest === 1) return { kind: 'listIndex', list: value, index: element, column };
      if (element >= value.items.length) throw new ApplyError(`${instr.type}: Out-of-bounds index through list at '${name}[${element}]'`);
      embedded = value.items[element];
    } else if (column.collectionType === 'dictionary' && value.kind === 'dictionary') {
      if (typeof element !== 'string') throw new ApplyError(`${instr.type}: Dictionary key is not a string on field '${name}'`);
      if (rest === 1) return { kind: 'dictionaryKey', dictionary: value, key: element, column };
      embedded = value.entries.get(element);
      if (!embedded) throw new ApplyError(`${instr.type}: Unmatched key '${element}' through dictionary '${name}'`);
    } else if (column.collectionType === 'single') {
      embedded = value;
      fieldAt = position;
    } else {
      throw new ApplyError(`${instr.type}: Resolving path through unstructured field '${name}'`);
    }
    if (embedded.kind !== 'object' || !column.linkTargetTable) throw new ApplyError(`${instr.type}: Reference through a non-embedded value at '${name}'`);
    const fieldName = instr.path[fieldAt];
    if (typeof fieldName !== 'string') throw new ApplyError(`${instr.type}: Embedded object field reference is not a string`);
    fields = embedded.fields;
    tableName = column.linkTargetTable;
    name = fieldName;
    position = fieldAt + 1;
  }
}

function isEmbeddedLink(state: RealmState, column: Column): boolean {
  return column.valueType === 'link' && !!column.linkTargetTable && state.tables.get(column.linkTargetTable)?.spec.kind === 'embedded';
}

/** The stored value for a payload written into a place of `column`'s type. */
function valueFor(state: RealmState, column: Column, payload: Payload, what: string): Value {
  if (payload.type === 'objectValue') {
    if (!isEmbeddedLink(state, column)) throw new ApplyError(`${what}: Creation of an embedded object in a field that holds none`);
    return { kind: 'object', fields: newFields(tableOf(state, column.linkTargetTable!)) };
  }
  if (payload.type === 'list' || payload.type === 'set' || payload.type === 'dictionary' || payload.type === 'erased') {
    throw new ApplyError(`${what}: ${payload.type} payload where a value is expected (mixed collections are not modelled)`);
  }
  if (payload.type === 'null') {
    if (!column.nullable && column.collectionType !== 'dictionary' && column.valueType !== 'link') throw new ApplyError(`${what}: NULL in a non-nullable field`);
    return { kind: 'scalar', value: payload };
  }
  if (payload.type === 'link') {
    if (column.valueType !== 'link' || payload.table !== column.linkTargetTable) throw new ApplyError(`${what}: Target table mismatch`);
    tableOf(state, payload.table);
    return { kind: 'scalar', value: payload };
  }
  // A column of value type null is a mixed column: any value goes.
  if (column.valueType !== 'null' && payload.type !== column.valueType) {
    throw new ApplyError(`${what}: Type mismatch (expected ${column.valueType}, got ${payload.type})`);
  }
  return { kind: 'scalar', value: payload };
}

function applyPathInstruction(state: RealmState, instr: PathInstruction): void {
  const target = resolve(state, instr);
  switch (instr.type) {
    case 'Update': {
      if (target.kind === 'property') {
        const current = target.fields.get(target.name)!;
        // Creating an embedded object where one exists keeps it (idempotent).
        if (instr.value.type === 'objectValue' && current.kind === 'object') return;
        target.fields.set(target.name, valueFor(state, target.column, instr.value, 'Update'));
      } else if (target.kind === 'listIndex') {
        if (target.index >= target.list.items.length) throw new ApplyError(`Update: Index out of bounds (${target.index} >= ${target.list.items.length})`);
        if (instr.value.type === 'objectValue') return;
        target.list.items[target.index] = valueFor(state, target.column, instr.value, 'Update');
      } else if (target.kind === 'dictionaryKey') {
        if (instr.value.type === 'erased') target.dictionary.entries.delete(target.key);
        else target.dictionary.entries.set(target.key, valueFor(state, target.column, instr.value, 'Update'));
      } else {
        throw new ApplyError('Update: Invalid path (a whole collection)');
      }
      return;
    }
    case 'AddInteger': {
      if (target.kind !== 'property') throw new ApplyError('AddInteger: Invalid path');
      const current = target.fields.get(target.name)!;
      if (current.kind !== 'scalar' || current.value.type === 'null') return;
      if (current.value.type !== 'int') throw new ApplyError(`AddInteger: Not an integer field '${target.name}'`);
      target.fields.set(target.name, { kind: 'scalar', value: { type: 'int', value: BigInt.asIntN(64, current.value.value + instr.value) } });
      return;
    }
    case 'ArrayInsert': {
      if (target.kind !== 'listIndex') throw new ApplyError('ArrayInsert: Invalid path');
      const size = target.list.items.length;
      if (target.index > instr.priorSize) throw new ApplyError(`ArrayInsert: Invalid insertion index (index = ${target.index}, prior_size = ${instr.priorSize})`);
      if (target.index > size) throw new ApplyError(`ArrayInsert: Index out of bounds (${target.index} > ${size})`);
      if (instr.priorSize !== size) throw new ApplyError(`ArrayInsert: Invalid prior_size (list size = ${size}, prior_size = ${instr.priorSize})`);
      target.list.items.splice(target.index, 0, valueFor(state, target.column, instr.value, 'ArrayInsert'));
      return;
    }
    case 'ArrayMove': {
      if (target.kind !== 'listIndex') throw new ApplyError('ArrayMove: Invalid path');
      const size = target.list.items.length;
      if (target.index >= size) throw new ApplyError(`ArrayMove from out of bounds (${target.index} >= ${size})`);
      if (instr.ndx2 >= size) throw new ApplyError(`ArrayMove to out of bounds (${instr.ndx2} >= ${size})`);
      if (target.index === instr.ndx2) throw new ApplyError(`ArrayMove to same location (${target.index})`);
      if (instr.priorSize !== size) throw new ApplyError(`ArrayMove: Invalid prior_size (list size = ${size}, prior_size = ${instr.priorSize})`);
      const [moved] = target.list.items.splice(target.index, 1);
      target.list.items.splice(instr.ndx2, 0, moved);
      return;
    }
    case 'ArrayErase': {
      if (target.kind !== 'listIndex') throw new ApplyError('ArrayErase: Invalid path');
      const size = target.list.items.length;
      if (target.index >= instr.priorSize) throw new ApplyError(`ArrayErase: Invalid index (index = ${target.index}, prior_size = ${instr.priorSize})`);
      if (target.index >= size) throw new ApplyError(`ArrayErase: Index out of bounds (${target.index} >= ${size})`);
      if (instr.priorSize !== size) throw new ApplyError(`ArrayErase: Invalid prior_size (list size = ${size}, prior_size = ${instr.priorSize})`);
      target.list.items.splice(target.index, 1);
      return;
    }
    case 'Clear': {
      if (target.kind !== 'collection') throw new ApplyError('Clear: Invalid path');
      const value = target.value;
      if (value.kind === 'list' || value.kind === 'set') value.items.length = 0;
      else if (value.kind === 'dictionary') value.entries.clear();
      return;
    }
    case 'SetInsert':
    case 'SetErase': {
      if (target.kind !== 'collection' || target.value.kind !== 'set') throw new ApplyError(`${instr.type}: Invalid path (not a set)`);
      const stored = valueFor(state, target.column, instr.value, instr.type);
      if (stored.kind !== 'scalar') throw new ApplyError(`${instr.type}: Sets of embedded objects are not supported.`);
      const set = target.value;
      const at = set.items.findIndex((item) => payloadText(item) === payloadText(stored.value));
      if (instr.type === 'SetInsert' && at < 0) set.items.push(stored.value);
      if (instr.type === 'SetErase' && at >= 0) set.items.splice(at, 1);
      return;
    }
  }
}

// --- a comparable form ---

/** A canonical text form of a payload (sets compare by it; dumps use it). */
export function payloadText(payload: Payload): string {
  switch (payload.type) {
    case 'null': case 'objectValue': case 'list': case 'set': case 'dictionary': case 'erased': return payload.type;
    case 'int': case 'bool': case 'string': case 'float': case 'double': return `${payload.type}:${String(payload.value)}`;
    case 'binary': return `binary:${Buffer.from(payload.value).toString('base64')}`;
    case 'timestamp': return `timestamp:${payload.seconds}.${payload.nanoseconds}`;
    case 'decimal': return `decimal:${payload.value.toString()}`;
    case 'link': return `link:${payload.table}:${keyText(payload.target)}`;
    case 'objectId': return `objectId:${payload.value.toHexString()}`;
    case 'uuid': return `uuid:${payload.value.toHexString()}`;
    case 'globalKey': return `globalKey:${payload.hi}:${payload.lo}`;
  }
}

export type DumpValue = string | null | DumpValue[] | { [key: string]: DumpValue };

/**
 * The state as plain data with sorted keys and set members in a canonical order, for comparing peers.
 * Links to objects that do not exist (erased, or not created yet) read as null in a field and are left
 * out of lists and dictionaries, as realm shows unresolved links.
 */
export function dumpState(state: RealmState): Record<string, Record<string, Record<string, DumpValue>>> {
  const out: Record<string, Record<string, Record<string, DumpValue>>> = {};
  for (const name of [...state.tables.keys()].sort()) {
    const table = state.tables.get(name)!;
    if (table.spec.kind === 'embedded') continue;
    const objects: Record<string, Record<string, DumpValue>> = {};
    for (const key of [...table.objects.keys()].sort()) objects[key] = dumpFields(state, table.objects.get(key)!.fields);
    out[name] = objects;
  }
  return out;
}

function dumpFields(state: RealmState, fields: Map<string, Value>): Record<string, DumpValue> {
  const out: Record<string, DumpValue> = {};
  for (const name of [...fields.keys()].sort()) out[name] = dumpValue(state, fields.get(name)!);
  return out;
}

function isDangling(state: RealmState, value: Value): boolean {
  if (value.kind !== 'scalar' || value.value.type !== 'link') return false;
  return !state.tables.get(value.value.table)?.objects.has(keyText(value.value.target));
}

function dumpValue(state: RealmState, value: Value): DumpValue {
  switch (value.kind) {
    case 'scalar': return value.value.type === 'null' || isDangling(state, value) ? null : payloadText(value.value);
    case 'list': return value.items.filter((item) => !isDangling(state, item)).map((item) => dumpValue(state, item));
    case 'set': return value.items.filter((item) => !isDangling(state, { kind: 'scalar', value: item })).map(payloadText).sort();
    case 'dictionary': {
      const out: Record<string, DumpValue> = {};
      for (const key of [...value.entries.keys()].sort()) {
        const entry = value.entries.get(key)!;
        out[key] = isDangling(state, entry) ? null : dumpValue(state, entry);
      }
      return out;
    }
    case 'object': return dumpFields(state, value.fields);
  }
}
