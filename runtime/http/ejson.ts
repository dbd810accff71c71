// Canonical EJSON on the wire (client-api.md §3). Requests are read strictly so that `$numberLong`,
// `$oid`, `$date`, … become bson values; numbers take the store's form (store/bson-values.ts): Int32 and
// doubles become plain numbers, except a whole-number double such as {"$numberDouble": "4.0"}, which
// stays a `Double` so it is stored and sent back as a double. A wrapper whose value does not fit its type is
// refused (the bson library would wrap `$numberInt` values and read bad numbers and dates as NaN).
import { EJSON } from 'bson';

export function parseEjson(text: string): unknown {
  if (WRAPPER_CHECKED.test(text)) checkWrappers(JSON.parse(text), 0);
  return unwrapNumbers(EJSON.parse(text, { relaxed: false }));
}

export function stringifyEjson(value: unknown): string {
  if (value === undefined) return '{"$undefined":true}';
  return EJSON.stringify(value as never, { relaxed: false });
}

/** The wrappers whose values the bson library reads without checking their range or form. */
const WRAPPER_CHECKED = /"\$(?:numberInt|numberDouble|numberLong|date|binary|oid)"/;
const OBJECT_ID = /^[0-9a-fA-F]{24}$/;
const INT32 = /^-?\d{1,10}$/;
const INT64 = /^-?\d{1,19}$/;
const DOUBLE = /^(?:-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|Infinity|-Infinity|NaN)$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** The largest distance from 1970 in milliseconds a date can have (ECMAScript's time value range). */
const MAX_DATE_MS = 8.64e15;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Deeper documents are refused by the store anyway; the walk stops there rather than overflow the stack. */
const MAX_CHECKED_DEPTH = 200;

const show = (value: unknown) => JSON.stringify(value)?.slice(0, 80) ?? String(value);

function checkWrappers(value: unknown, depth: number): void {
  if (value === null || typeof value !== 'object' || depth > MAX_CHECKED_DEPTH) return;
  if (Array.isArray(value)) {
    for (const item of value) checkWrappers(item, depth + 1);
    return;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 1) checkWrapper(keys[0]!, record[keys[0]!]);
  for (const key of keys) checkWrappers(record[key], depth + 1);
}

function checkWrapper(key: string, inner: unknown): void {
  switch (key) {
    case '$numberInt':
      if (typeof inner !== 'string' || !INT32.test(inner) || Number(inner) > 2147483647 || Number(inner) < -2147483648) {
        throw new RangeError(`{"$numberInt": ${show(inner)}} is not a 32-bit integer`);
      }
      return;
    case '$numberLong':
      if (typeof inner !== 'string' || !INT64.test(inner) || BigInt(inner) > INT64_MAX || BigInt(inner) < INT64_MIN) {
        throw new RangeError(`{"$numberLong": ${show(inner)}} is not a 64-bit integer`);
      }
      return;
    case '$numberDouble':
      if (typeof inner !== 'string' || !DOUBLE.test(inner) || (!Number.isFinite(Number(inner)) && !/^-?Infinity$|^NaN$/.test(inner))) {
        throw new RangeError(`{"$numberDouble": ${show(inner)}} is not a double ("Infinity", "-Infinity" and "NaN" are spelled out)`);
      }
      return;
    case '$date': {
      const ms = typeof inner === 'string' ? Date.parse(inner)
        : inner !== null && typeof inner === 'object' && typeof (inner as { $numberLong?: unknown }).$numberLong === 'string'
          ? Number((inner as { $numberLong: string }).$numberLong)
          : typeof inner === 'number' ? inner : NaN;
      if (!Number.isFinite(ms) || Math.abs(ms) > MAX_DATE_MS) {
        throw new RangeError(`{"$date": ${show(inner)}} is not a date within ±${MAX_DATE_MS} ms of 1970`);
      }
      return;
    }
    case '$oid':
      if (typeof inner !== 'string' || !OBJECT_ID.test(inner)) throw new RangeError(`{"$oid": ${show(inner)}} is not an ObjectId (24 hexadecimal digits)`);
      return;
    case '$binary': {
      const base64 = inner !== null && typeof inner === 'object' ? (inner as { base64?: unknown }).base64 : undefined;
      if (typeof base64 === 'string' && !BASE64.test(base64)) throw new RangeError(`{"$binary": ${show(inner)}} holds malformed base64`);
      return;
    }
  }
}

function unwrapNumbers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unwrapNumbers);
  if (value === null || typeof value !== 'object') return value;
  const bsonType = (value as { _bsontype?: string })._bsontype;
  if (bsonType === 'Int32') return (value as { value: number }).value;
  if (bsonType === 'Double') {
    const n = (value as { value: number }).value;
    return Number.isInteger(n) ? value : n;
  }
  if (bsonType !== undefined || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = unwrapNumbers(v);
  return out;
}
