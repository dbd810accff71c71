// Conversions between GraphQL values and stored BSON values (graphql.md §3). The generated scalars parse
// ObjectId to a hex string, DateTime to a Date and Long to a number; what is written to or compared in the
// store follows the schema's bsonType of each field instead.
import { Decimal128, Long, ObjectId } from 'bson';
import { storedDouble } from '../store/bson-values';

export type Document = Record<string, unknown>;

/** A GraphQL input value converted to the BSON value a field of `bsonType` stores. */
export function toBson(value: unknown, bsonType: string): unknown {
  if (value === null || value === undefined) return value;
  switch (bsonType) {
    case 'objectId':
      return typeof value === 'string' && ObjectId.isValid(value) && value.length === 24 ? new ObjectId(value) : value;
    case 'long':
      return typeof value === 'number' && Number.isInteger(value) ? Long.fromNumber(value) : value;
    case 'decimal':
      return typeof value === 'number' ? Decimal128.fromString(String(value)) : value;
    case 'double':
      // A whole Float such as 4 would be stored as an int32; the field keeps its double type.
      return typeof value === 'number' ? storedDouble(value) : value;
    case 'date':
    case 'timestamp':
      return typeof value === 'string' ? new Date(value) : value;
    default:
      return value;
  }
}

export function toBsonList(value: unknown, bsonType: string): unknown {
  return Array.isArray(value) ? value.map((item) => toBson(item, bsonType)) : toBson(value, bsonType);
}

export function bsonTag(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const tag = (value as { _bsontype?: unknown })._bsontype;
  return typeof tag === 'string' ? tag : undefined;
}

/** Decimal128 has no GraphQL scalar: it is served as a Float (graphql.md §3). */
export function decimalToFloat(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decimalToFloat);
  return bsonTag(value) === 'Decimal128' ? Number(String(value)) : value;
}

/**
 * A BSON `undefined` stored in a field: served as `{}` (graphql.md §3), unlike a missing field or null.
 * Serialised into BSON (a document handed to a function) it becomes null, since BSON cannot carry undefined.
 */
class BsonUndefined {
  toBSON(): null { return null; }
}
export const BSON_UNDEFINED: object = Object.freeze(new BsonUndefined());

/**
 * Replaces, in place, every own property holding `undefined` in documents read from the store by the
 * BSON_UNDEFINED marker, so the response can tell it from a missing field. Store results are fresh copies.
 */
export function markUndefined<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (value[i] === undefined) value[i] = BSON_UNDEFINED;
      else markUndefined(value[i]);
    }
    return value;
  }
  if (bsonTag(value) !== undefined || value instanceof Date) return value;
  const doc = value as Document;
  for (const key in doc) {
    const child = doc[key];
    if (child === undefined) doc[key] = BSON_UNDEFINED;
    else if (child !== null && typeof child === 'object') markUndefined(child);
  }
  return value;
}

/**
 * A key under which equal link values (an ObjectId and its hex string, equal numbers of any BSON
 * numeric type) meet, for matching relationship values in memory.
 */
export function linkKey(value: unknown): string {
  switch (typeof value) {
    case 'string': return ObjectId.isValid(value) && value.length === 24 ? `o${value.toLowerCase()}` : `s${value}`;
    case 'number': return `n${value}`;
    case 'boolean': return `b${value}`;
    case 'bigint': return `n${value}`;
  }
  if (value === null || value === undefined || value === BSON_UNDEFINED) return 'z';
  if (value instanceof Date) return `d${value.getTime()}`;
  switch (bsonTag(value)) {
    case 'ObjectId': return `o${(value as ObjectId).toHexString()}`;
    case 'Long': return `n${(value as Long).toString()}`;
    case 'Decimal128': return `n${Number(String(value))}`;
    case 'Int32': case 'Double': return `n${Number((value as { valueOf(): number }).valueOf())}`;
  }
  return `j${JSON.stringify(value)}`;
}
