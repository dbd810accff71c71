// Reads a JSON schema (collection schema.json or a custom resolver's inline type) into the shapes GraphQL
// generation works with, reporting every property that cannot be exposed at the property itself.
import type { DiagnosticSink } from '../diagnostics';
import { isObject, type JSONPath, type JsonFile } from '../json';
import { canonicalBsonType } from '../schemaDialect';
import { sanitizeGraphqlName } from './inflect';
import type { GraphqlScalar } from './types';

export type Shape =
  /** `enumValues`: the stored strings of a `string` schema with `enum` (graphql.md: it becomes a GraphQL enum). */
  | { kind: 'scalar'; scalar: GraphqlScalar; bsonType: string; enumValues?: string[] }
  | { kind: 'object'; properties: PropertyShape[] }
  | { kind: 'array'; items: ScalarShape | ObjectShape };

export type ScalarShape = Extract<Shape, { kind: 'scalar' }>;
export type ObjectShape = Extract<Shape, { kind: 'object' }>;

export interface PropertyShape {
  /** The key in `properties`. */
  key: string;
  /** GraphQL field name. */
  name: string;
  required: boolean;
  shape: Shape;
  /** JSON path of the property's schema in its file. */
  path: JSONPath;
}

/** bsonType (or JSON schema `type`) → GraphQL scalar (graphql.md §3, §10.2). */
const scalarOfBsonType: Record<string, GraphqlScalar> = {
  objectId: 'ObjectId',
  string: 'String',
  bool: 'Boolean',
  boolean: 'Boolean',
  int: 'Int',
  integer: 'Int',
  long: 'Long',
  double: 'Float',
  decimal: 'Float',
  number: 'Float',
  date: 'DateTime',
  timestamp: 'DateTime',
};

/** Real BSON types that GraphQL cannot represent: skipping them is expected, not a mistake. */
const bsonTypesWithoutGraphql = new Set(['binData', 'mixed', 'uuid', 'null', 'regex', 'javascript', 'javascriptWithScope', 'symbol', 'dbPointer', 'undefined', 'minKey', 'maxKey']);

export function scalarForBsonType(bsonType: string): GraphqlScalar | undefined {
  return Object.hasOwn(scalarOfBsonType, bsonType) ? scalarOfBsonType[bsonType] : undefined;
}

/** The schema's type: `bsonType`, else JSON schema `type`; a `null` alternative is ignored. Undefined when absent. */
function declaredType(schema: Record<string, unknown>): { type: string; key: 'bsonType' | 'type' } | { ambiguous: string[]; key: 'bsonType' | 'type' } | undefined {
  for (const key of ['bsonType', 'type'] as const) {
    const raw = schema[key];
    if (typeof raw === 'string') return { type: canonicalBsonType(raw), key };
    if (Array.isArray(raw)) {
      const types = raw.filter((t): t is string => typeof t === 'string' && t !== 'null').map(canonicalBsonType);
      return types.length === 1 ? { type: types[0], key } : { ambiguous: types, key };
    }
  }
  if (isObject(schema.properties)) return { type: 'object', key: 'bsonType' };
  if (schema.items !== undefined) return { type: 'array', key: 'bsonType' };
  return undefined;
}

export interface ShapeReader {
  file: JsonFile;
  sink: DiagnosticSink;
}

/**
 * The GraphQL-visible properties of an object schema at `path`. Empty when none can be exposed;
 * callers decide whether that is a problem.
 */
export function readObjectProperties(reader: ShapeReader, schema: Record<string, unknown>, path: JSONPath): PropertyShape[] {
  const { file, sink } = reader;
  const properties = schema.properties;
  if (!isObject(properties)) return [];
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : []);
  const result: PropertyShape[] = [];
  const keyOfName = new Map<string, string>();
  for (const [key, propertySchema] of Object.entries(properties)) {
    const propertyPath = [...path, 'properties', key];
    const sanitized = sanitizeGraphqlName(key);
    if (!sanitized.ok) {
      sink.at(file, propertyPath, 'warning', 'graphql/invalid-field-name',
        sanitized.reason === 'reserved-prefix'
          ? `Property "${key}" is not exposed in GraphQL: names starting with "__" are reserved.`
          : `Property "${key}" is not exposed in GraphQL: it has no characters usable in a GraphQL name.`,
        { target: 'key', data: { key } });
      continue;
    }
    const shape = readShape(reader, propertySchema, propertyPath, key);
    if (!shape) continue;
    const clash = keyOfName.get(sanitized.name);
    if (clash !== undefined) {
      sink.at(file, propertyPath, 'warning', 'graphql/duplicate-field-name',
        `Property "${key}" is not exposed in GraphQL: its field name "${sanitized.name}" is already used by "${clash}".`,
        { target: 'key', data: { key, fieldName: sanitized.name } });
      continue;
    }
    if (sanitized.changed) {
      sink.at(file, propertyPath, 'information', 'graphql/renamed-field',
        `Property "${key}" is exposed in GraphQL as "${sanitized.name}".`, { target: 'key', data: { key, fieldName: sanitized.name } });
    }
    keyOfName.set(sanitized.name, key);
    result.push({ key, name: sanitized.name, required: required.has(key), shape, path: propertyPath });
  }
  return result;
}

function readShape(reader: ShapeReader, schema: unknown, path: JSONPath, key: string): Shape | undefined {
  const { file, sink } = reader;
  if (!isObject(schema)) {
    sink.at(file, path, 'warning', 'graphql/invalid-schema', `Property "${key}" is not exposed in GraphQL: its schema is not an object.`);
    return undefined;
  }
  const declared = declaredType(schema);
  if (!declared) {
    sink.at(file, path, 'warning', 'graphql/unsupported-type', `Property "${key}" is not exposed in GraphQL: it has no bsonType.`, { target: 'key' });
    return undefined;
  }
  const typePath = [...path, declared.key];
  if ('ambiguous' in declared) {
    sink.at(file, typePath, 'warning', 'graphql/unsupported-type',
      `Property "${key}" is not exposed in GraphQL: a GraphQL field has one type, but this property allows ${declared.ambiguous.map((t) => `"${t}"`).join(', ') || 'none'}.`);
    return undefined;
  }
  const { type } = declared;
  const scalar = scalarForBsonType(type);
  if (scalar) {
    const enumValues = scalar === 'String' && Array.isArray(schema.enum) ? schema.enum.filter((v): v is string => typeof v === 'string') : [];
    return enumValues.length > 0 ? { kind: 'scalar', scalar, bsonType: type, enumValues } : { kind: 'scalar', scalar, bsonType: type };
  }
  if (type === 'object') {
    const properties = readObjectProperties(reader, schema, path);
    if (properties.length === 0) {
      sink.at(file, path, 'information', 'graphql/empty-object',
        `Property "${key}" is not exposed in GraphQL: an embedded object needs at least one property with a GraphQL type.`, { target: 'key' });
      return undefined;
    }
    return { kind: 'object', properties };
  }
  if (type === 'array') {
    // A one-element array of schemas means that element (the platform reads it so).
    const oneItem = Array.isArray(schema.items) && schema.items.length === 1;
    const itemsPath = oneItem ? [...path, 'items', 0] : [...path, 'items'];
    const itemsSchema = oneItem ? (schema.items as unknown[])[0] : schema.items;
    if (!isObject(itemsSchema)) {
      sink.at(file, schema.items === undefined ? typePath : itemsPath, 'warning', 'graphql/unsupported-type',
        `Property "${key}" is not exposed in GraphQL: an array needs a single schema object in "items".`);
      return undefined;
    }
    const items = readShape(reader, itemsSchema, itemsPath, key);
    if (!items) return undefined;
    if (items.kind === 'array') {
      sink.at(file, itemsPath, 'warning', 'graphql/unsupported-type', `Property "${key}" is not exposed in GraphQL: arrays of arrays are not supported.`);
      return undefined;
    }
    return { kind: 'array', items };
  }
  if (bsonTypesWithoutGraphql.has(type)) {
    sink.at(file, typePath, 'information', 'graphql/unsupported-type',
      `Property "${key}" is not exposed in GraphQL: bsonType "${type}" has no GraphQL equivalent.`, { data: { bsonType: type } });
  } else {
    sink.at(file, typePath, 'warning', 'graphql/unsupported-type', `Property "${key}" is not exposed in GraphQL: unknown bsonType "${type}".`, { data: { bsonType: type } });
  }
  return undefined;
}
