// The Realm object schema of a synced app: what a Realm client's tables and columns look like for each
// synced collection. Derived from the collection schemas (JSON Schema `bsonType`s, `title`s and
// relationships), and overridden by what clients declare (their AddTable / AddColumn instructions), so
// the server's downloads name columns exactly as the clients made them.
import { isObject } from '../../../core/json';
import type { CollectionType, Instruction, PayloadTypeName } from '../wire/instructions';

export interface RealmColumn {
  name: string;
  /** `null` for a mixed column. */
  type: PayloadTypeName;
  nullable: boolean;
  collection: CollectionType;
  linkTarget?: string;
  /** The JSON Schema bsonType the column stores as ('int' vs 'long', 'float' vs 'double'); undefined for mixed. */
  bsonType?: string;
}

export interface RealmTable {
  name: string;
  embedded: boolean;
  asymmetric: boolean;
  primaryKey?: { field: string; type: PayloadTypeName; nullable: boolean; bsonType?: string };
  columns: Map<string, RealmColumn>;
}

export type RealmSchema = Map<string, RealmTable>;

const SCALARS: Record<string, PayloadTypeName> = {
  objectId: 'objectId', string: 'string', int: 'int', long: 'int', bool: 'bool', double: 'double', float: 'float',
  decimal: 'decimal', date: 'timestamp', binData: 'binary', uuid: 'uuid', mixed: 'null',
};

/** A relationship of a collection: which field links to which type. */
export interface SchemaRelationship { field: string; targetType: string; many: boolean }

/** Derives the Realm tables of one collection schema (its embedded objects become embedded tables). */
export function tablesFromJsonSchema(type: string, schema: unknown, relationships: readonly SchemaRelationship[], into: RealmSchema): void {
  if (!isObject(schema) || !isObject(schema.properties)) return;
  // The SDKs' test harnesses also give each embedded type a collection schema of its own (no `_id`): the
  // embedded table another schema defines stays embedded.
  if (!isObject(schema.properties._id) && into.get(type)?.embedded) return;
  const table = tableFromObjectSchema(type, schema, false, relationships, into);
  const id = table.columns.get('_id');
  if (id && id.collection === 'single' && ['objectId', 'string', 'int', 'uuid'].includes(id.type)) {
    // Nullable when the schema lets `_id` be absent or null (the SDKs' ObjectId? / String? primary keys).
    table.primaryKey = { field: '_id', type: id.type, nullable: id.nullable, ...(id.bsonType ? { bsonType: id.bsonType } : {}) };
    table.columns.delete('_id');
  }
  into.set(type, table);
}

function tableFromObjectSchema(name: string, schema: Record<string, unknown>, embedded: boolean, relationships: readonly SchemaRelationship[], into: RealmSchema): RealmTable {
  const table: RealmTable = { name, embedded, asymmetric: false, columns: new Map() };
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : []);
  for (const [field, property] of Object.entries(schema.properties as Record<string, unknown>)) {
    const relationship = relationships.find((r) => r.field === field);
    if (relationship) {
      const collection = linkCollectionOf(property, relationship.many);
      table.columns.set(field, { name: field, type: 'link', nullable: collection === 'single' || collection === 'dictionary', collection, linkTarget: relationship.targetType });
      continue;
    }
    const column = columnOf(`${name}_${field}`, field, property, required.has(field), into);
    if (column) table.columns.set(field, column);
  }
  return table;
}

/** A relationship's collection: a set (`uniqueItems`) or list of links, a dictionary of links, or one link. */
function linkCollectionOf(property: unknown, many: boolean): CollectionType {
  if (isObject(property) && property.bsonType === 'object' && isObject(property.additionalProperties)) return 'dictionary';
  if (!many) return 'single';
  return isObject(property) && property.uniqueItems === true ? 'set' : 'list';
}

function bsonTypeOf(property: Record<string, unknown>): { type?: string; nullable: boolean } {
  const raw = property.bsonType;
  if (typeof raw === 'string') return { type: raw, nullable: false };
  if (Array.isArray(raw)) {
    const types = raw.filter((t): t is string => typeof t === 'string');
    const nonNull = types.filter((t) => t !== 'null');
    return { type: nonNull.length === 1 ? nonNull[0] : undefined, nullable: types.includes('null') };
  }
  return { nullable: false };
}

function columnOf(embeddedName: string, field: string, property: unknown, required: boolean, into: RealmSchema): RealmColumn | undefined {
  if (!isObject(property)) return undefined;
  const { type, nullable } = bsonTypeOf(property);
  if (type === undefined) return undefined;
  if (type === 'array') {
    const items = property.items;
    if (!isObject(items)) return undefined;
    const element = columnOf(typeof items.title === 'string' ? items.title : embeddedName, field, items, true, into);
    if (!element || element.collection !== 'single') return undefined;
    return { ...element, collection: property.uniqueItems === true ? 'set' : 'list', nullable: element.type === 'link' ? false : element.nullable };
  }
  if (type === 'object') {
    // A dictionary may also carry an empty `properties` (as the SDKs' test harnesses write it).
    const isDictionary = isObject(property.additionalProperties) && !(isObject(property.properties) && Object.keys(property.properties).length > 0);
    if (!isDictionary && isObject(property.properties)) {
      const tableName = typeof property.title === 'string' ? property.title : embeddedName;
      into.set(tableName, tableFromObjectSchema(tableName, property, true, [], into));
      return { name: field, type: 'link', nullable: true, collection: 'single', linkTarget: tableName };
    }
    if (isDictionary) {
      const value = columnOf(embeddedName, field, property.additionalProperties, true, into);
      if (!value || value.collection !== 'single') return undefined;
      return { ...value, collection: 'dictionary', nullable: value.type === 'link' ? true : value.nullable };
    }
    return undefined;
  }
  const scalar = SCALARS[type];
  if (scalar === undefined) return undefined;
  return { name: field, type: scalar, nullable: scalar === 'null' ? true : nullable || !required, collection: 'single', ...(scalar === 'null' ? {} : { bsonType: type }) };
}

/** Takes a client's schema instruction into the schema (a client's declaration wins over the derived one). */
export function applySchemaInstruction(schema: RealmSchema, instruction: Instruction): void {
  switch (instruction.type) {
    case 'AddTable': {
      const existing = schema.get(instruction.table);
      const table: RealmTable = existing ?? { name: instruction.table, embedded: false, asymmetric: false, columns: new Map() };
      if (instruction.spec.kind === 'embedded') table.embedded = true;
      else {
        table.embedded = false;
        table.asymmetric = instruction.spec.asymmetric;
        const derived = table.primaryKey?.type === instruction.spec.pkType ? table.primaryKey.bsonType : undefined;
        table.primaryKey = { field: instruction.spec.pkField, type: instruction.spec.pkType, nullable: instruction.spec.pkNullable, ...(derived ? { bsonType: derived } : {}) };
        table.columns.delete(instruction.spec.pkField);
      }
      schema.set(instruction.table, table);
      return;
    }
    case 'AddColumn': {
      const table = schema.get(instruction.table);
      if (!table) return;
      const before = table.columns.get(instruction.field);
      table.columns.set(instruction.field, {
        name: instruction.field, type: instruction.valueType, nullable: instruction.nullable, collection: instruction.collectionType,
        ...(instruction.linkTargetTable ? { linkTarget: instruction.linkTargetTable } : {}),
        ...(before?.bsonType && before.type === instruction.valueType ? { bsonType: before.bsonType } : {}),
      });
      return;
    }
    case 'EraseTable':
      schema.delete(instruction.table);
      return;
    case 'EraseColumn':
      schema.get(instruction.table)?.columns.delete(instruction.field);
      return;
    default:
  }
}

/** The schema instructions that create tables and their columns on a client: every table first, so links find their targets. */
export function schemaInstructions(tables: readonly RealmTable[]): Instruction[] {
  return [...tables.map(addTableInstruction), ...tables.flatMap(addColumnInstructions)];
}

/** A table's own schema instructions (as a client declares it). */
export function tableInstructions(table: RealmTable): Instruction[] {
  return [addTableInstruction(table), ...addColumnInstructions(table)];
}

function addTableInstruction(table: RealmTable): Instruction {
  return table.embedded || !table.primaryKey
    ? { type: 'AddTable', table: table.name, spec: { kind: 'embedded' } }
    : { type: 'AddTable', table: table.name, spec: { kind: 'topLevel', pkField: table.primaryKey.field, pkType: table.primaryKey.type, pkNullable: table.primaryKey.nullable, asymmetric: table.asymmetric } };
}

function addColumnInstructions(table: RealmTable): Instruction[] {
  return [...table.columns.values()].map((column): Instruction => ({
      type: 'AddColumn', table: table.name, field: column.name, valueType: column.type,
      keyType: column.collection === 'dictionary' ? 'string' : 'null',
      nullable: column.nullable, collectionType: column.collection,
      ...(column.linkTarget ? { linkTargetTable: column.linkTarget } : {}),
  }));
}

/** The named tables and every table their links reach, link targets first. */
export function reachableTables(schema: RealmSchema, names: Iterable<string>): RealmTable[] {
  const out: RealmTable[] = [];
  const seen = new Set<string>();
  const visit = (name: string, depth: number) => {
    if (seen.has(name) || depth > 64) return;
    const table = schema.get(name);
    if (!table) return;
    seen.add(name);
    for (const column of table.columns.values()) if (column.linkTarget) visit(column.linkTarget, depth + 1);
    out.push(table);
  };
  for (const name of names) visit(name, 0);
  return out;
}
