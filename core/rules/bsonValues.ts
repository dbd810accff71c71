// BSON-typed equality, ordering and conversions for rule evaluation (rules-and-sync §1.4). Values come
// from JSON configs (plain numbers and strings) and from the runtime (bson ObjectId, Long, UUID, …), so
// types are recognised by their `_bsontype` tag rather than `instanceof`, which breaks across bson copies.
import { Binary, EJSON, ObjectId, UUID } from 'bson';

/** Deeper values than this compare unequal instead of recursing without end (cyclic runtime data). */
const MAX_VALUE_DEPTH = 100;

type Kind = 'undefined' | 'null' | 'boolean' | 'string' | 'number' | 'objectId' | 'binary' | 'date' | 'array' | 'document' | 'bson' | 'other';

function bsonTypeOf(value: object): string | undefined {
  const tag = (value as { _bsontype?: unknown })._bsontype;
  return typeof tag === 'string' ? tag : undefined;
}

function kindOf(value: unknown): Kind {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean': return 'boolean';
    case 'string': return 'string';
    case 'number': case 'bigint': return 'number';
    case 'object': break;
    default: return 'other';
  }
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  const tag = bsonTypeOf(value as object);
  if (tag === 'ObjectId') return 'objectId';
  if (tag === 'Binary') return 'binary';
  if (tag === 'Long' || tag === 'Int32' || tag === 'Double' || tag === 'Decimal128') return 'number';
  if (tag !== undefined) return 'bson';
  return isPlainObject(value) ? 'document' : 'other';
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Equality as rules compare: ObjectId by hex, numbers (number, Long, Int32, Double, Decimal128)
 * numerically, binaries and UUIDs by subtype and bytes, dates by time, documents and arrays deeply.
 * An array subject equals a non-array value when any element does (the array rule of §1.4).
 * `undefined` (a missing or unknown expansion) equals nothing, not even another `undefined`.
 */
export function bsonEquals(subject: unknown, value: unknown, depth = 0): boolean {
  if (depth > MAX_VALUE_DEPTH) return false;
  const a = kindOf(subject), b = kindOf(value);
  if (a === 'undefined' || b === 'undefined') return false;
  if (a === 'array' && b !== 'array') return (subject as unknown[]).some((element) => bsonEquals(element, value, depth + 1));
  if (a !== b) return false;
  switch (a) {
    case 'null': return true;
    case 'boolean': case 'string': return subject === value;
    case 'number': return compareNumbers(subject, value) === 0;
    case 'objectId': return hexOf(subject) === hexOf(value);
    case 'binary': return binaryEquals(subject as Binary, value as Binary);
    case 'date': return (subject as Date).getTime() === (value as Date).getTime();
    case 'array': {
      const left = subject as unknown[], right = value as unknown[];
      return left.length === right.length && left.every((element, i) => bsonEquals(element, right[i], depth + 1));
    }
    case 'document': {
      const left = subject as Record<string, unknown>, right = value as Record<string, unknown>;
      const keys = Object.keys(left);
      return keys.length === Object.keys(right).length
        && keys.every((key) => Object.hasOwn(right, key) && bsonEquals(left[key], right[key], depth + 1));
    }
    case 'bson': return bsonTypeOf(subject as object) === bsonTypeOf(value as object) && canonical(subject) === canonical(value);
    default: return false;
  }
}

/**
 * Ordering for `$gt`/`$gte`/`$lt`/`$lte`: negative, zero or positive, or undefined when the two values
 * have no common order (different types, NaN). Only numbers, strings, dates, ObjectIds and booleans order.
 */
export function bsonCompare(subject: unknown, value: unknown): number | undefined {
  const a = kindOf(subject), b = kindOf(value);
  if (a !== b) return undefined;
  switch (a) {
    case 'number': return compareNumbers(subject, value);
    case 'string': return order(subject as string, value as string);
    case 'boolean': return Number(subject) - Number(value);
    case 'date': return (subject as Date).getTime() - (value as Date).getTime();
    case 'objectId': return order(hexOf(subject), hexOf(value));
    default: return undefined;
  }
}

function order(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

interface Numeric { exact?: bigint; approx: number }

function numeric(value: unknown): Numeric {
  if (typeof value === 'number') return { approx: value, ...(Number.isSafeInteger(value) ? { exact: BigInt(value) } : {}) };
  if (typeof value === 'bigint') return { approx: Number(value), exact: value };
  const object = value as { toBigInt?: () => bigint; valueOf(): unknown; toString(): string };
  const tag = bsonTypeOf(value as object);
  if (tag === 'Long') {
    const exact = (object.toBigInt as () => bigint).call(object);
    return { approx: Number(exact), exact };
  }
  if (tag === 'Decimal128') {
    const text = object.toString();
    return { approx: Number(text), ...(/^-?\d+$/.test(text) ? { exact: BigInt(text) } : {}) };
  }
  return numeric(Number(object.valueOf()));
}

function compareNumbers(a: unknown, b: unknown): number | undefined {
  const x = numeric(a), y = numeric(b);
  if (x.exact !== undefined && y.exact !== undefined) return x.exact < y.exact ? -1 : x.exact > y.exact ? 1 : 0;
  if (Number.isNaN(x.approx) || Number.isNaN(y.approx)) return undefined;
  return x.approx < y.approx ? -1 : x.approx > y.approx ? 1 : 0;
}

function hexOf(value: unknown): string {
  return (value as ObjectId).toHexString().toLowerCase();
}

function binaryEquals(a: Binary, b: Binary): boolean {
  if (a.sub_type !== b.sub_type) return false;
  const x = a.value(), y = b.value();
  return x.length === y.length && x.every((byte, i) => byte === y[i]);
}

function canonical(value: unknown): string {
  return EJSON.stringify(value as Parameters<typeof EJSON.stringify>[0], { relaxed: false });
}

const HEX_OBJECT_ID = /^[0-9a-fA-F]{24}$/;
const UUID_TEXT = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function isUuidBinary(value: unknown): value is Binary {
  return kindOf(value) === 'binary' && (value as Binary).sub_type === Binary.SUBTYPE_UUID && (value as Binary).value().length === 16;
}

/** The conversion operators (§1.3). Each returns undefined when its input does not fit, which compares false. */
export const CONVERSIONS: ReadonlyMap<string, (value: unknown) => unknown> = new Map(Object.entries({
  '%stringToOid': (value: unknown) => {
    if (typeof value === 'string') return HEX_OBJECT_ID.test(value) ? ObjectId.createFromHexString(value) : undefined;
    return kindOf(value) === 'objectId' ? value : undefined;
  },
  '%oidToString': (value: unknown) => (kindOf(value) === 'objectId' ? hexOf(value) : undefined),
  '%stringToUuid': (value: unknown) => {
    if (typeof value === 'string') return UUID_TEXT.test(value) ? new UUID(value) : undefined;
    return isUuidBinary(value) ? value : undefined;
  },
  '%uuidToString': (value: unknown) => (isUuidBinary(value) ? new UUID(value.value()).toHexString(true) : undefined),
}));
