// Custom resolver values crossing the function boundary: the `input` argument converted for the
// function (ObjectId scalars become BSON ObjectIds), and the function's return value checked against
// the payload type (graphql.md §10.2–10.4) and shaped for the response.
import { ObjectId } from 'bson';
import {
  getNamedType, isInputObjectType, isListType, isNonNullType, isObjectType, isScalarType,
  type GraphQLInputType, type GraphQLObjectType, type GraphQLOutputType, type GraphQLSchema,
} from 'graphql';
import { sanitizeGraphqlName, type GeneratedResolver } from '../../core/graphql';
import type { RuntimeModel, TypeTables } from './model';
import { bsonTag } from './values';

/** A function's result that does not fit its resolver's payload type. */
export class PayloadMismatchError extends Error {
  readonly errorCode = 'FunctionExecutionError';
  constructor(resolver: GeneratedResolver, detail: string) {
    super(`custom resolver ${resolver.parent}.${resolver.fieldName} (function "${resolver.functionName}") returned a value that does not fit its payload type ${describePayload(resolver)}: ${detail}`);
    this.name = 'PayloadMismatchError';
  }
}

function describePayload(resolver: GeneratedResolver): string {
  return resolver.payload.isList ? `[${resolver.payload.typeName}]` : resolver.payload.typeName;
}

/** Thrown while walking a value; carries the path to the part that did not fit. */
class Mismatch extends Error {}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (bsonTag(value)) return `${bsonTag(value)}(${String(value)})`;
  if (value instanceof Date) return `Date(${value.toISOString()})`;
  try {
    const text = JSON.stringify(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return String(value);
  }
}

const int32 = (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31;
const rfc3339 = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

function numericValue(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  switch (bsonTag(value)) {
    case 'Long': case 'Int32': case 'Double': case 'Decimal128': return Number(String(value));
  }
  return undefined;
}

/** The value served for a scalar, or a Mismatch naming `at`. */
/** What `scalarValue` gives for a value that is not of the scalar. */
const NOT_OF_SCALAR = Symbol('not of the scalar');

/** The value as the scalar serves it, or NOT_OF_SCALAR. */
function scalarValue(scalar: string, value: unknown): unknown {
  switch (scalar) {
    case 'String': return typeof value === 'string' ? value : NOT_OF_SCALAR;
    case 'Boolean': return typeof value === 'boolean' ? value : NOT_OF_SCALAR;
    case 'Int': { const n = numericValue(value); return n !== undefined && int32(n) ? n : NOT_OF_SCALAR; }
    case 'Long': { const n = numericValue(value); return n !== undefined && Number.isSafeInteger(n) ? n : NOT_OF_SCALAR; }
    case 'Float': { const n = numericValue(value); return n !== undefined && Number.isFinite(n) ? n : NOT_OF_SCALAR; }
    case 'ObjectId':
      if (bsonTag(value) === 'ObjectId') return value;
      return typeof value === 'string' && /^[0-9a-fA-F]{24}$/.test(value) ? value : NOT_OF_SCALAR;
    case 'DateTime':
      if (value instanceof Date && !Number.isNaN(value.getTime())) return value;
      return typeof value === 'string' && rfc3339.test(value) && !Number.isNaN(new Date(value).getTime()) ? value : NOT_OF_SCALAR;
    default: return value;
  }
}

function conformScalar(scalar: string, value: unknown, at: string): unknown {
  const conformed = scalarValue(scalar, value);
  if (conformed === NOT_OF_SCALAR) throw new Mismatch(`${at}: expected ${scalar}, got ${describe(value)}`);
  return conformed;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && bsonTag(value) === undefined && !(value instanceof Date);

/** Checks a resolver's result against its payload type; returns the value to resolve the field with. */
export function conformPayload(model: RuntimeModel, resolver: GeneratedResolver, value: unknown): unknown {
  const { payload } = resolver;
  if (payload.kind === 'default') return { status: 'complete' };
  const schema = model.generated.schema;
  const one = (item: unknown, at: string): unknown => {
    if (item === null || item === undefined) return null;
    switch (payload.kind) {
      case 'scalar': return conformScalar(payload.typeName, item, at);
      case 'generated': return conformDocument(model, model.types.get(payload.typeName)!, item, at);
      case 'custom': return conformCustom(schema, schema.getType(payload.typeName) as GraphQLObjectType, customItemSchema(resolver), item, at);
    }
  };
  try {
    if (!payload.isList) return one(value, 'the result');
    if (value === null || value === undefined) return null;
    if (!Array.isArray(value)) throw new Mismatch(`the result: expected a list, got ${describe(value)}`);
    return value.map((item, i) => one(item, `the result[${i}]`));
  } catch (error) {
    if (error instanceof Mismatch) throw new PayloadMismatchError(resolver, error.message);
    throw error;
  }
}

function customItemSchema(resolver: GeneratedResolver): Record<string, unknown> {
  const schema = resolver.config.payloadType as Record<string, unknown>;
  return resolver.payload.isList ? (schema.items as Record<string, unknown>) : schema;
}

/**
 * A generated document type: stored keys, checked per schema field; relationship keys keep their link values.
 * The document itself is returned when every value already fits as it is (the usual case), else a copy.
 */
function conformDocument(model: RuntimeModel, tables: TypeTables, value: unknown, at: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw new Mismatch(`${at}: expected a ${tables.info.typeName} object, got ${describe(value)}`);
  let out: Record<string, unknown> | undefined;
  for (const field of tables.info.fields) {
    if (field.kind === 'relationship') continue;
    const raw = value[field.sourceKey];
    if (raw === null || raw === undefined) {
      if (field.required) throw new Mismatch(`${at}.${field.name}: required field is missing`);
      continue;
    }
    const conformed = field.isList ? conformList(model, field, raw, at) : conformField(model, field, raw, at, -1);
    if (conformed !== raw) (out ??= { ...value })[field.sourceKey] = conformed;
  }
  return out ?? value;
}

/** A list field's items, conformed; the list itself when every item fits as it is. */
function conformList(model: RuntimeModel, field: DocumentField, raw: unknown, at: string): unknown[] {
  if (!Array.isArray(raw)) throw new Mismatch(`${at}.${field.name}: expected a list, got ${describe(raw)}`);
  let items: unknown[] | undefined;
  for (let i = 0; i < raw.length; i++) {
    const conformed = conformField(model, field, raw[i], at, i);
    if (conformed !== raw[i]) (items ??= raw.slice())[i] = conformed;
  }
  return items ?? raw;
}

type DocumentField = TypeTables['info']['fields'][number];

/** One value of a field of a document at `at` (`index` ≥ 0: an item of a list field); paths are spelt out only when needed. */
function conformField(model: RuntimeModel, field: DocumentField, item: unknown, at: string, index: number): unknown {
  if (item === null || item === undefined) return null;
  const path = (): string => `${at}.${field.name}${index >= 0 ? `[${index}]` : ''}`;
  if (field.kind === 'embedded') return conformDocument(model, model.types.get(field.embedded!.typeName)!, item, path());
  const conformed = scalarValue(field.scalarType!, item);
  if (conformed === NOT_OF_SCALAR) throw new Mismatch(`${path()}: expected ${field.scalarType}, got ${describe(item)}`);
  return conformed;
}

/**
 * A custom type built from an inline schema: its fields are the schema's properties under their GraphQL
 * names, so the result is rebuilt keyed by those names. Properties GraphQL cannot represent are dropped.
 */
function conformCustom(schema: GraphQLSchema, type: GraphQLObjectType, jsonSchema: Record<string, unknown>, value: unknown, at: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw new Mismatch(`${at}: expected a ${type.name} object, got ${describe(value)}`);
  const fields = type.getFields();
  const properties = (jsonSchema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const out: Record<string, unknown> = {};
  for (const [key, propertySchema] of Object.entries(properties)) {
    const sanitized = sanitizeGraphqlName(key);
    const field = sanitized.ok ? fields[sanitized.name] : undefined;
    if (!field) continue;
    const path = `${at}.${field.name}`;
    const raw = Object.hasOwn(value, key) ? value[key] : value[field.name];
    out[field.name] = conformOutput(schema, field.type, propertySchema, raw, path);
  }
  return out;
}

function conformOutput(schema: GraphQLSchema, type: GraphQLOutputType, jsonSchema: Record<string, unknown>, value: unknown, at: string): unknown {
  if (value === null || value === undefined) {
    if (isNonNullType(type)) throw new Mismatch(`${at}: required field is missing`);
    return null;
  }
  const inner = isNonNullType(type) ? type.ofType : type;
  if (isListType(inner)) {
    if (!Array.isArray(value)) throw new Mismatch(`${at}: expected a list, got ${describe(value)}`);
    const items = (jsonSchema.items ?? {}) as Record<string, unknown>;
    return value.map((item, i) => conformOutput(schema, inner.ofType, items, item, `${at}[${i}]`));
  }
  if (isObjectType(inner)) return conformCustom(schema, inner, jsonSchema, value, at);
  return conformScalar(getNamedType(inner).name, value, at);
}

/** The `input` argument as the function receives it: ObjectId scalars become BSON ObjectIds. */
export function toFunctionInput(type: GraphQLInputType, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  if (isNonNullType(type)) return toFunctionInput(type.ofType, value);
  if (isListType(type)) return Array.isArray(value) ? value.map((item) => toFunctionInput(type.ofType, item)) : toFunctionInput(type.ofType, value);
  if (isInputObjectType(type)) {
    const fields = type.getFields();
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) out[key] = fields[key] ? toFunctionInput(fields[key].type, item) : item;
    return out;
  }
  if (isScalarType(type) && type.name === 'ObjectId' && typeof value === 'string') return new ObjectId(value);
  return value;
}
