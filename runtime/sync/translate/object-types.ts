// A Realm table as development mode writes it into the app: the collection schema (JSON Schema with
// `bsonType`s) of a table a client declared, its embedded tables inline and links as their target's key.
import type { RealmSchema, RealmTable } from './schema';

const BSON_TYPE_OF_PAYLOAD: Record<string, string> = {
  int: 'long', bool: 'bool', string: 'string', binary: 'binData', timestamp: 'date', float: 'float', double: 'double',
  decimal: 'decimal', objectId: 'objectId', uuid: 'uuid', null: 'mixed',
};

/** A client's table as development mode writes it: `{name, properties: {field: JSON Schema}, required}`. */
export function objectTypeOf(schema: RealmSchema, table: RealmTable): { name: string; properties: Record<string, unknown>; required: string[] } {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  if (table.primaryKey) {
    properties[table.primaryKey.field] = { bsonType: table.primaryKey.type === 'int' ? 'long' : BSON_TYPE_OF_PAYLOAD[table.primaryKey.type] ?? 'objectId' };
    required.push(table.primaryKey.field);
  }
  for (const column of table.columns.values()) {
    const element = propertySchema(schema, column.type, column.linkTarget, 0);
    if (!element) continue;
    properties[column.name] = column.collection === 'list' ? { bsonType: 'array', items: element }
      : column.collection === 'set' ? { bsonType: 'array', uniqueItems: true, items: element }
        : column.collection === 'dictionary' ? { bsonType: 'object', additionalProperties: element }
          : element;
    if (column.collection === 'single' && !column.nullable && column.type !== 'null') required.push(column.name);
  }
  return { name: table.name, properties, required };
}

function propertySchema(schema: RealmSchema, type: string, linkTarget: string | undefined, depth: number): Record<string, unknown> | undefined {
  if (type !== 'link') return BSON_TYPE_OF_PAYLOAD[type] ? { bsonType: BSON_TYPE_OF_PAYLOAD[type] } : undefined;
  const target = linkTarget ? schema.get(linkTarget) : undefined;
  if (!target || depth > 16) return undefined;
  if (!target.embedded) return { bsonType: target.primaryKey?.type === 'int' ? 'long' : BSON_TYPE_OF_PAYLOAD[target.primaryKey?.type ?? 'objectId'] ?? 'objectId' };
  const { properties, required } = objectTypeOf(schema, target);
  return { bsonType: 'object', title: target.name, ...(required.length ? { required } : {}), properties };
}

