// BSON value handling for the embedded store:
// - `toStorable` copies caller input into the stored form, where every number keeps its BSON type: int32
//   is a JS number (a whole number: every whole JS number in the stored form is an int32), a double is a
//   JS number when it has a fraction (or is NaN/±Infinity) and a `Double` when it is whole (4.0, 5e9,
//   -0), int64 a `Long`. So 4.0 is written back and sent out as a double, and canonical EJSON prints it
//   {"$numberDouble": "4.0"}. Values from another copy of the bson package become this copy's classes;
// - `valueKey` gives the canonical key MongoDB equality implies (5, Long(5) and Decimal128("5") are equal);
// - `toComparable` maps stored values into the form mingo compares correctly (mingo compares custom
//   classes by `toString()` and only within one class, so Long/Decimal128 become numbers and
//   Binary gets an order-preserving string form).
import { BSON, BSONRegExp, Binary, Decimal128, Double, Long, ObjectId } from 'bson';
import { StoreError, type Document } from './types';

const MAX_DEPTH = 100;
const TWO_POW_53 = 2 ** 53;
const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;

/** Whether BSON writes this JS number as an int32 (else as a double): a whole number in int32 range, not -0. */
export function isInt32Number(n: number): boolean {
  return Number.isInteger(n) && n >= INT32_MIN && n <= INT32_MAX && !Object.is(n, -0);
}

/** The stored form of a double: a `Double` when it is a whole number (which as a JS number would mean int32), else a JS number. */
export function storedDouble(n: number): number | Double {
  return Number.isInteger(n) ? new Double(n) : n;
}

export function bsonType(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const tag = (value as { _bsontype?: unknown })._bsontype;
  return typeof tag === 'string' ? tag : undefined;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Re-creates a bson value made by another copy of the bson package with this copy's classes. */
function adoptForeignBson(value: object): unknown {
  return BSON.deserialize(BSON.serialize({ v: value }), { promoteLongs: false, promoteValues: true, bsonRegExp: true }).v;
}

const OWN_CLASSES: Record<string, new (...args: never[]) => unknown> = {
  ObjectId, Long, Decimal128, Binary, BSONRegExp,
};

function doubleValue(value: object): number {
  return (value as { valueOf(): number }).valueOf();
}

/** Deep-copies caller input into the stored form; throws a StoreError for values BSON cannot hold. */
export function toStorable(value: unknown, path = '', depth = 0): unknown {
  if (depth > MAX_DEPTH) throw StoreError.badValue(`Document nesting is deeper than ${MAX_DEPTH} levels at '${path}'`);
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // BSON writes a whole number beyond int32 range (or -0) as a double.
      return Number.isInteger(value) && !isInt32Number(value) ? new Double(value) : value;
    case 'undefined':
      return null;
    case 'bigint':
      return Long.fromBigInt(value);
    case 'function':
    case 'symbol':
      throw StoreError.badValue(`Cannot store a ${typeof value} at '${path || '(root)'}'`);
  }
  if (value === null) return null;
  const obj = value as object;
  if (Array.isArray(obj)) return obj.map((item, i) => toStorable(item, join(path, String(i)), depth + 1));
  if (obj instanceof Date) return new Date(obj.getTime());
  if (obj instanceof RegExp) return new RegExp(obj.source, obj.flags);
  const tag = bsonType(obj);
  if (tag !== undefined) {
    if (tag === 'Int32') return doubleValue(obj);
    if (tag === 'Double') {
      const n = doubleValue(obj);
      return Number.isInteger(n) ? (obj instanceof Double ? obj : new Double(n)) : n;
    }
    const own = OWN_CLASSES[tag];
    if (own && obj instanceof own) return obj;
    // Rarer bson types (Timestamp, MinKey, ...) take the round trip, which also adopts foreign copies.
    return adoptForeignBson(obj);
  }
  if (obj instanceof Uint8Array) return new Binary(Uint8Array.from(obj));
  if (!isPlainObject(obj)) {
    const name = Object.getPrototypeOf(obj)?.constructor?.name ?? 'object';
    throw StoreError.badValue(`Cannot store a value of type ${name} at '${path || '(root)'}'`);
  }
  const out: Document = {};
  for (const [key, child] of Object.entries(obj)) out[key] = toStorable(child, join(path, key), depth + 1);
  return out;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** Copies a stored value for handing to a caller; bson value objects are immutable and shared. */
export function cloneStored<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(cloneStored) as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (bsonType(value) !== undefined || value instanceof RegExp) return value;
  const out: Document = {};
  for (const key in value) out[key] = cloneStored((value as Document)[key]);
  return out as T;
}

/** Canonical key of a number, shared by every numeric bson type so equal numbers share a key. */
function numberKey(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) >= TWO_POW_53) return 'n' + BigInt(n).toString();
  return 'n' + String(n);
}

function longKey(value: Long): string {
  const big = value.toBigInt();
  return big > -BigInt(TWO_POW_53) && big < BigInt(TWO_POW_53) ? 'n' + String(Number(big)) : 'n' + big.toString();
}

function decimalKey(value: Decimal128): string {
  const text = value.toString();
  if (/^-?\d+$/.test(text)) {
    const big = BigInt(text);
    return big > -BigInt(TWO_POW_53) && big < BigInt(TWO_POW_53) ? 'n' + String(Number(big)) : 'n' + big.toString();
  }
  const asNumber = Number(text);
  if (Number.isNaN(asNumber) && !/nan/i.test(text)) return 'D' + text;
  return numberKey(asNumber);
}

/**
 * The key under which MongoDB equality groups a value: equal values (across numeric types) get the
 * same key, different values different keys. Used for `_id` uniqueness and field indexes.
 */
export function valueKey(value: unknown): string {
  return keyOf(value, false);
}

/**
 * Like `valueKey`, but numbers of different BSON types (4 as int32, double, long) get different keys:
 * whether a document written again is the same as the stored one, as MongoDB tells a modified document.
 */
export function typedValueKey(value: unknown): string {
  return keyOf(value, true);
}

function numericTypeKey(value: unknown, typed: boolean): string {
  if (!typed) return '';
  if (typeof value === 'number') return isInt32Number(value) ? 'i' : Object.is(value, -0) ? 'f-' : 'f';
  switch (bsonType(value)) {
    case 'Int32': return 'i';
    case 'Double': return Object.is(doubleValue(value as object), -0) ? 'f-' : 'f';
    case 'Long': return 'l';
    default: return 'm' + String(value);
  }
}

function keyOf(value: unknown, typed: boolean): string {
  switch (typeof value) {
    case 'string': return 's' + value;
    case 'number': return numericTypeKey(value, typed) + numberKey(value);
    case 'boolean': return value ? 'b1' : 'b0';
    case 'undefined': return 'z';
    case 'bigint': return numericTypeKey(Long.fromBigInt(value), typed) + longKey(Long.fromBigInt(value));
  }
  if (value === null) return 'z';
  if (Array.isArray(value)) return 'a[' + value.map((item) => keyOf(item, typed)).join('\u0000') + ']';
  if (value instanceof Date) return 'd' + value.getTime();
  if (value instanceof RegExp) return regExpKey(value.source, value.flags);
  const obj = value as Record<string, unknown>;
  switch (bsonType(obj)) {
    case 'BSONRegExp': return regExpKey((obj as unknown as BSONRegExp).pattern, (obj as unknown as BSONRegExp).options);
    case 'ObjectId': return 'o' + (obj as unknown as ObjectId).toHexString();
    case 'Long': return numericTypeKey(obj, typed) + longKey(obj as unknown as Long);
    case 'Int32':
    case 'Double': return numericTypeKey(obj, typed) + numberKey(doubleValue(obj));
    case 'Decimal128': return numericTypeKey(obj, typed) + decimalKey(obj as unknown as Decimal128);
    case 'Binary': {
      const bin = obj as unknown as Binary;
      return 'x' + bin.sub_type + ':' + bin.toString('hex');
    }
    case undefined: break;
    default: return 't' + bsonType(obj) + ':' + String(obj);
  }
  return 'j{' + Object.keys(obj).map((k) => k + '\u0001' + keyOf(obj[k], typed)).join('\u0000') + '}';
}

/** A regular expression's key, the same for a JS `RegExp` and a `BSONRegExp` of one pattern and options (JS-only flags left out). */
function regExpKey(pattern: string, flags: string): string {
  return 'r' + pattern + '/' + [...flags].filter((f) => f !== 'g' && f !== 'y' && f !== 'd' && f !== 'v').sort().join('');
}

/**
 * Binary data in a form mingo orders and compares correctly: MongoDB orders BinData by length,
 * then subtype, then bytes, which the fixed-width string below preserves.
 */
export class ComparableBinary {
  constructor(readonly original: Binary) {}

  toString(): string {
    const len = String(this.original.position).padStart(10, '0');
    const subtype = String(this.original.sub_type).padStart(3, '0');
    return `${len}:${subtype}:${this.original.toString('hex')}`;
  }
}

function decimalToNumber(value: Decimal128): number {
  return Number(value.toString());
}

function bsonRegExpToRegExp(value: { pattern: string; options: string }): RegExp {
  const flags = [...value.options].filter((f) => 'imsu'.includes(f)).join('');
  return new RegExp(value.pattern, flags);
}

/**
 * Maps a stored value (or a filter) into the form mingo compares with MongoDB semantics. Returns the
 * input itself when nothing needs mapping, so ordinary documents cost no copy. Longs beyond 2^53 and
 * Decimal128 values beyond double precision compare by their nearest double.
 */
export function toComparable(value: unknown): unknown {
  if (value === null || typeof value !== 'object') {
    return typeof value === 'bigint' ? Number(value) : value;
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const mapped = toComparable(value[i]);
      if (mapped !== value[i]) (copy ??= value.slice())[i] = mapped;
    }
    return copy ?? value;
  }
  if (value instanceof Date || value instanceof RegExp) return value;
  const tag = bsonType(value);
  if (tag !== undefined) {
    switch (tag) {
      case 'Long': return (value as Long).toNumber();
      case 'Int32':
      case 'Double': return (value as { valueOf(): number }).valueOf();
      case 'Decimal128': return decimalToNumber(value as Decimal128);
      case 'Binary': return new ComparableBinary(value as Binary);
      case 'BSONRegExp': return bsonRegExpToRegExp(value as unknown as { pattern: string; options: string });
      case 'ObjectId': return value instanceof ObjectId ? value : toStorable(value);
      default: return value;
    }
  }
  if (!isPlainObject(value)) return value;
  let copy: Document | undefined;
  const obj = value as Document;
  for (const key in obj) {
    const mapped = toComparable(obj[key]);
    if (mapped !== obj[key]) (copy ??= { ...obj })[key] = mapped;
  }
  return copy ?? value;
}

/** Reverses `toComparable` on aggregation output, producing a fresh copy the caller owns. */
export function fromComparable(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof ComparableBinary) return value.original;
  if (Array.isArray(value)) return value.map(fromComparable);
  if (value instanceof Date) return new Date(value.getTime());
  if (bsonType(value) !== undefined || !isPlainObject(value)) return value;
  const out: Document = {};
  for (const key in value as Document) out[key] = fromComparable((value as Document)[key]);
  return out;
}

export type NumericValue = number | Double | Long | Decimal128;

export function isNumeric(value: unknown): value is NumericValue {
  if (typeof value === 'number') return true;
  const tag = bsonType(value);
  return tag === 'Long' || tag === 'Decimal128' || tag === 'Double';
}

/** The BSON type of a stored number, as `$inc`/`$mul` promote them. */
function numericType(value: NumericValue): 'int' | 'long' | 'double' | 'decimal' {
  if (typeof value === 'number') return isInt32Number(value) ? 'int' : 'double';
  switch (bsonType(value)) {
    case 'Long': return 'long';
    case 'Decimal128': return 'decimal';
    default: return 'double';
  }
}

/** Exact decimal arithmetic on Decimal128 strings through BigInt coefficient and exponent. */
interface ExactDecimal { coefficient: bigint; exponent: number }

function parseExactDecimal(text: string): ExactDecimal | undefined {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match || (match[2] === '' && (match[3] ?? '') === '')) return undefined;
  const fraction = match[3] ?? '';
  const digits = (match[2] + fraction).replace(/^0+(?=\d)/, '');
  const coefficient = BigInt(digits || '0') * (match[1] === '-' ? -1n : 1n);
  return { coefficient, exponent: Number(match[4] ?? 0) - fraction.length };
}

function toExactDecimal(value: NumericValue): ExactDecimal | undefined {
  if (typeof value === 'number' || bsonType(value) === 'Double') {
    const n = toNumber(value);
    return Number.isFinite(n) ? parseExactDecimal(String(n)) : undefined;
  }
  if (bsonType(value) === 'Long') return { coefficient: (value as Long).toBigInt(), exponent: 0 };
  return parseExactDecimal(value.toString());
}

function formatExactDecimal(value: ExactDecimal): Decimal128 {
  const sign = value.coefficient < 0n ? '-' : '';
  const digits = (value.coefficient < 0n ? -value.coefficient : value.coefficient).toString();
  return Decimal128.fromStringWithRounding(`${sign}${digits}E${value.exponent}`);
}

function decimalOp(a: NumericValue, b: NumericValue, op: 'add' | 'mul'): Decimal128 {
  const x = toExactDecimal(a);
  const y = toExactDecimal(b);
  if (!x || !y) {
    const result = op === 'add' ? toNumber(a) + toNumber(b) : toNumber(a) * toNumber(b);
    return Decimal128.fromString(Number.isNaN(result) ? 'NaN' : String(result));
  }
  if (op === 'mul') return formatExactDecimal({ coefficient: x.coefficient * y.coefficient, exponent: x.exponent + y.exponent });
  const exponent = Math.min(x.exponent, y.exponent);
  const scale = (d: ExactDecimal): bigint => d.coefficient * 10n ** BigInt(d.exponent - exponent);
  return formatExactDecimal({ coefficient: scale(x) + scale(y), exponent });
}

export function toNumber(value: NumericValue): number {
  if (typeof value === 'number') return value;
  switch (bsonType(value)) {
    case 'Long': return (value as Long).toNumber();
    case 'Decimal128': return decimalToNumber(value as Decimal128);
    default: return doubleValue(value);
  }
}

function toBigInt(value: NumericValue): bigint {
  return typeof value === 'number' ? BigInt(value) : (value as Long).toBigInt();
}

/**
 * `$inc`/`$mul` arithmetic with MongoDB's type promotion: Decimal128 wins, then double, then long, then
 * int32; two int32 values whose result leaves int32 range give a long, as MongoDB does.
 */
export function numericOp(current: NumericValue, operand: NumericValue, op: 'add' | 'mul'): NumericValue {
  const types = [numericType(current), numericType(operand)];
  if (types.includes('decimal')) return decimalOp(current, operand, op);
  if (types.includes('double')) {
    const a = toNumber(current);
    const b = toNumber(operand);
    return storedDouble(op === 'add' ? a + b : a * b);
  }
  const a = toBigInt(current);
  const b = toBigInt(operand);
  const result = BigInt.asIntN(64, op === 'add' ? a + b : a * b);
  if (!types.includes('long') && result >= BigInt(INT32_MIN) && result <= BigInt(INT32_MAX)) return Number(result);
  return Long.fromBigInt(result);
}
