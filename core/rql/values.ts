// Values as RQL compares them: BSON documents' values (number, Long, Int32, Double, Decimal128, Date,
// ObjectId, Binary/UUID, strings, booleans, null) and the query's literals, compared by type class the way
// MongoDB brackets types (a number never equals a string). Numbers compare exactly across types:
// integers as BigInt, Decimal128 and doubles as exact decimals.
import { ObjectId, UUID } from 'bson';
import type { Literal } from './ast';

/** A `B64"…"` literal: realm-core's form for strings with quotes or control characters; also binary data. */
export class Base64Value {
  readonly text: string;
  constructor(readonly bytes: Uint8Array) {
    this.text = new TextDecoder().decode(bytes);
  }
}

/** A timestamp literal with its nanoseconds (a Date holds milliseconds only). */
export class TimestampValue {
  constructor(readonly nanos: bigint) {}
  toDate(): Date {
    return new Date(Number(this.nanos / 1_000_000n));
  }
  get wholeMilliseconds(): boolean {
    return this.nanos % 1_000_000n === 0n;
  }
}

export type TypeClass = 'null' | 'number' | 'string' | 'boolean' | 'date' | 'objectId' | 'binary' | 'object' | 'array' | 'other';

export function bsonTag(value: object): string | undefined {
  const tag = (value as { _bsontype?: unknown })._bsontype;
  return typeof tag === 'string' ? tag : undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function typeClass(value: unknown): TypeClass {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'number': case 'bigint': return 'number';
    case 'string': return 'string';
    case 'boolean': return 'boolean';
    case 'object': break;
    default: return 'other';
  }
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date || value instanceof TimestampValue) return 'date';
  if (value instanceof Base64Value) return 'string';
  switch (bsonTag(value as object)) {
    case 'Long': case 'Int32': case 'Double': case 'Decimal128': return 'number';
    case 'ObjectId': return 'objectId';
    case 'Binary': return 'binary';
    case undefined: return isPlainObject(value) ? 'object' : 'other';
    default: return 'other';
  }
}

/** The runtime value of a literal. */
export function literalValue(literal: Literal): unknown {
  switch (literal.type) {
    case 'string': return literal.value;
    case 'base64': return new Base64Value(literal.bytes);
    case 'number': return literal.integer !== undefined && !Number.isSafeInteger(literal.value) ? literal.integer : literal.value;
    case 'boolean': return literal.value;
    case 'null': return null;
    case 'timestamp': return new TimestampValue(literal.seconds * 1_000_000_000n + BigInt(literal.nanoseconds));
    case 'objectId': return ObjectId.createFromHexString(literal.hex);
    case 'uuid': return UUID.createFromHexString(literal.hex);
  }
}

/** An exact decimal: coefficient × 10^exponent. */
interface Exact { coefficient: bigint; exponent: number }

const DECIMAL_TEXT = /^([+-]?)(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

function exactOfDouble(n: number): Exact {
  if (Number.isInteger(n) && Math.abs(n) < 2 ** 63) return { coefficient: BigInt(n), exponent: 0 };
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, n);
  const bits = view.getBigUint64(0);
  const negative = bits >> 63n === 1n;
  const rawExponent = Number((bits >> 52n) & 0x7ffn);
  let mantissa = bits & ((1n << 52n) - 1n);
  let exponent2: number;
  if (rawExponent === 0) exponent2 = -1074;
  else {
    mantissa |= 1n << 52n;
    exponent2 = rawExponent - 1075;
  }
  const signed = negative ? -mantissa : mantissa;
  if (exponent2 >= 0) return { coefficient: signed << BigInt(exponent2), exponent: 0 };
  // m × 2^-k = m × 5^k × 10^-k
  return { coefficient: signed * 5n ** BigInt(-exponent2), exponent: exponent2 };
}

function exactOfText(text: string): Exact | undefined {
  const m = DECIMAL_TEXT.exec(text);
  if (!m) return undefined;
  const fraction = m[3] ?? '';
  const digits = BigInt(m[2]! + fraction);
  return { coefficient: m[1] === '-' ? -digits : digits, exponent: Number(m[4] ?? 0) - fraction.length };
}

/** A number as a double when that is exact enough to compare, else exact; NaN and infinities as doubles. */
function numeric(value: unknown): number | bigint | Exact | undefined {
  switch (typeof value) {
    case 'number': case 'bigint': return value;
    case 'object': break;
    default: return undefined;
  }
  switch (bsonTag(value as object)) {
    case 'Int32': case 'Double': return (value as { valueOf(): number }).valueOf();
    case 'Long': {
      const text = (value as { toString(): string }).toString();
      return BigInt(text);
    }
    case 'Decimal128': {
      const text = (value as { toString(): string }).toString();
      if (text === 'NaN' || text === '-NaN') return NaN;
      if (text === 'Infinity') return Infinity;
      if (text === '-Infinity') return -Infinity;
      return exactOfText(text);
    }
    default: return undefined;
  }
}

/**
 * A double meeting a Decimal128 compares by its shortest decimal text, as Realm converts a query's `1.1`
 * to the decimal 1.1 when the property is a decimal; elsewhere by its exact binary value.
 */
function toExact(n: number | bigint | Exact, otherIsDecimal: boolean): Exact {
  if (typeof n === 'bigint') return { coefficient: n, exponent: 0 };
  if (typeof n === 'number') return otherIsDecimal && !Number.isInteger(n) ? exactOfText(String(n))! : exactOfDouble(n);
  return n;
}

function sign(n: bigint): number {
  return n < 0n ? -1 : n > 0n ? 1 : 0;
}

/** Exponent gaps beyond this compare by magnitude without building 10^gap. */
const MAX_ALIGN = 10_000;

function compareExact(a: Exact, b: Exact): number {
  const sa = sign(a.coefficient), sb = sign(b.coefficient);
  if (sa !== sb || sa === 0) return Math.sign(sa - sb);
  const gap = a.exponent - b.exponent;
  if (Math.abs(gap) > MAX_ALIGN) {
    const magnitude = (x: Exact) => x.exponent + (x.coefficient < 0n ? -x.coefficient : x.coefficient).toString().length;
    const order = Math.sign(magnitude(a) - magnitude(b));
    return a.coefficient < 0n ? -order : order;
  }
  const left = gap > 0 ? a.coefficient * 10n ** BigInt(gap) : a.coefficient;
  const right = gap < 0 ? b.coefficient * 10n ** BigInt(-gap) : b.coefficient;
  return sign(left - right);
}

/** -1, 0, 1, or NaN when either is NaN (NaN equals NaN, and orders against nothing). */
export function compareNumbers(x: unknown, y: unknown): number {
  const a = numeric(x), b = numeric(y);
  if (a === undefined || b === undefined) return NaN;
  if (typeof a === 'number' && typeof b === 'number') {
    if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b) ? 0 : NaN;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (typeof a === 'number' && !Number.isFinite(a)) return Number.isNaN(a) ? NaN : a > 0 ? 1 : -1;
  if (typeof b === 'number' && !Number.isFinite(b)) return Number.isNaN(b) ? NaN : b > 0 ? -1 : 1;
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  return compareExact(toExact(a, typeof b === 'object'), toExact(b, typeof a === 'object'));
}

/** Strings in code-point order, which is the UTF-8 byte order MongoDB and Realm use. */
export function compareStrings(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i), y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate (an astral code point) sorts above every BMP unit in code-point order.
    const xs = x >= 0xd800 && x <= 0xdfff, ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

function nanosOf(value: unknown): bigint {
  return value instanceof TimestampValue ? value.nanos : BigInt((value as Date).getTime()) * 1_000_000n;
}

export function bytesOf(value: unknown): Uint8Array {
  if (value instanceof Base64Value) return value.bytes;
  const binary = value as { buffer: Uint8Array; position: number };
  return binary.buffer.subarray(0, binary.position);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return 0;
}

export function stringOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Base64Value) return value.text;
  return undefined;
}

/**
 * The order of two values of one type class: -1, 0 or 1; NaN when they do not compare (different
 * classes, documents, arrays, NaN). `null` compares equal to `null` only.
 */
export function compareValues(a: unknown, b: unknown, caseInsensitive = false): number {
  if (typeof a === 'string' && typeof b === 'string' && !caseInsensitive) return a === b ? 0 : compareStrings(a, b);
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : a === b ? 0 : (Number.isNaN(a) && Number.isNaN(b) ? 0 : NaN);
  const ca = typeClass(a), cb = typeClass(b);
  if (ca !== cb) {
    // A B64 literal compares with binary data by its bytes.
    if (ca === 'string' && cb === 'binary' && a instanceof Base64Value) return compareBytes(a.bytes, bytesOf(b));
    if (cb === 'string' && ca === 'binary' && b instanceof Base64Value) return compareBytes(bytesOf(a), b.bytes);
    return NaN;
  }
  switch (ca) {
    case 'null': return 0;
    case 'number': return compareNumbers(a, b);
    case 'string': {
      let x = stringOf(a)!, y = stringOf(b)!;
      if (caseInsensitive) {
        x = foldCase(x);
        y = foldCase(y);
      }
      return x === y ? 0 : compareStrings(x, y);
    }
    case 'boolean': return a === b ? 0 : a ? 1 : -1;
    case 'date': {
      const x = nanosOf(a), y = nanosOf(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'objectId': {
      const x = (a as ObjectId).toHexString(), y = (b as ObjectId).toHexString();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'binary': return compareBytes(bytesOf(a), bytesOf(b));
    default: return NaN;
  }
}

export function foldCase(s: string): string {
  return s.toLowerCase();
}

/** Realm's `@type` names. */
export function typeName(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'number': return Number.isInteger(value) ? 'int' : 'double';
    case 'bigint': return 'int';
    case 'string': return 'string';
    case 'boolean': return 'bool';
    default: break;
  }
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'timestamp';
  switch (bsonTag(value as object)) {
    case 'Long': case 'Int32': return 'int';
    case 'Double': return 'double';
    case 'Decimal128': return 'decimal128';
    case 'ObjectId': return 'objectId';
    case 'Binary': return (value as { sub_type: number }).sub_type === 4 ? 'uuid' : 'binary';
    default: return isPlainObject(value) ? 'object' : 'mixed';
  }
}
