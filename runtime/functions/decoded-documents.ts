// Decoded documents a function worker keeps by their BSON, to hand out copies of instead of decoding the
// same bytes again: functions read the same documents request after request, and copying a decoded
// document costs a fraction of decoding it (BSON strings and field names are UTF-8 to be decoded; a copy
// shares the strings). A kept document is never given to function code, only copies of it.
import { Decimal128, Double, Long, ObjectId } from 'bson';
import { deserializeStored } from '../../core/bsonDecode';

/** Documents larger than this are decoded every time (a big one would crowd out many small ones). */
const MAX_KEPT_BYTES = 64 * 1024;

export class DecodedDocumentCache {
  private readonly byBytes = new Map<string, Record<string, unknown>>();
  private keptBytes = 0;

  /** At most `budgetBytes` of BSON is kept (the decoded documents take about as much again); the oldest go first. */
  constructor(private readonly budgetBytes = 8 * 1024 * 1024) {}

  /**
   * The document `bson` decodes to (as `deserializeStored(bson)`), fresh: the
   * caller may change it. `key` is the same bytes as a latin1 string.
   */
  decode(key: string, bson: Buffer): Record<string, unknown> {
    const kept = this.byBytes.get(key);
    if (kept) return copyDocument(kept);
    const doc = deserializeStored(bson);
    if (key.length <= MAX_KEPT_BYTES && copiable(doc, 0)) this.keep(key, copyDocument(doc));
    return doc;
  }

  /**
   * Whether `doc` is, value for value, the document the BSON `key` decodes to (same types, key order and
   * values), so it encodes as that does; undefined when no document is kept for `key`. Comparing with
   * the kept document is cheaper than reading the bytes: a copy shares its strings.
   */
  matches(key: string, doc: Record<string, unknown>): boolean | undefined {
    const kept = this.byBytes.get(key);
    return kept && sameAs(doc, kept);
  }

  private keep(key: string, kept: Record<string, unknown>): void {
    this.byBytes.set(key, kept);
    this.keptBytes += key.length;
    for (const [oldest] of this.byBytes) {
      if (this.keptBytes <= this.budgetBytes) break;
      this.byBytes.delete(oldest);
      this.keptBytes -= oldest.length;
    }
  }
}

const COPIED_BSON_TYPES = new Set(['ObjectId', 'Long', 'Decimal128', 'Double']);

function isOwnClass(value: object, bsonType: string): boolean {
  switch (bsonType) {
    case 'ObjectId': return value instanceof ObjectId;
    case 'Long': return value instanceof Long;
    case 'Double': return value instanceof Double;
    default: return value instanceof Decimal128;
  }
}

/** Nesting deeper than this is decoded every time rather than walked recursively. */
const MAX_DEPTH = 64;

/** Whether copyDocument copies every value of `value` (only the types decoding gives that it knows). */
function copiable(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object') return typeof value !== 'function' && typeof value !== 'symbol';
  if (depth > MAX_DEPTH) return false;
  if (value instanceof Date) return true;
  // By _bsontype, not instanceof alone: a Timestamp is an instance of Long.
  const bsonType = (value as { _bsontype?: unknown })._bsontype;
  if (bsonType !== undefined) return COPIED_BSON_TYPES.has(bsonType as string) && isOwnClass(value, bsonType as string);
  if (Array.isArray(value)) return value.every((item) => copiable(item, depth + 1));
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  return Object.keys(value).every((key) => copiable((value as Record<string, unknown>)[key], depth + 1));
}

/** A deep copy of a kept document: new objects, arrays and BSON values throughout, in the same key order. */
function copyDocument(kept: Record<string, unknown>): Record<string, unknown> {
  return copyValue(kept) as Record<string, unknown>;
}

function copyValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(copyValue);
  if (value instanceof Date) return new Date(value.getTime());
  // Only the BSON types `copiable` let through reach here.
  if (value instanceof ObjectId) return new ObjectId(Buffer.from(value.id));
  if (value instanceof Long) return new Long(value.low, value.high, value.unsigned);
  if (value instanceof Decimal128) return new Decimal128(Buffer.from(value.bytes));
  if (value instanceof Double) return new Double(value.value);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = copyValue((value as Record<string, unknown>)[key]);
    // As decoding does: a "__proto__" field is an own property, not the prototype.
    if (key === '__proto__') Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  return copy;
}

/**
 * Whether `value` serializes as `kept` does, `kept` being a copiable decoded value: the same
 * types throughout (numbers by Object.is, so -0 stays apart), the same keys in the same order. Anything
 * the serializer would treat otherwise (a `toBSON` method, a class instance, a wrapper type) answers false.
 */
function sameAs(value: unknown, kept: unknown): boolean {
  if (kept === null || typeof kept !== 'object') return typeof kept === 'number' ? Object.is(value, kept) : value === kept;
  if (value === null || typeof value !== 'object' || typeof (value as { toBSON?: unknown }).toBSON === 'function') return false;
  if (Array.isArray(kept)) {
    if (!Array.isArray(value) || value.length !== kept.length) return false;
    for (let i = 0; i < kept.length; i++) if (!sameAs(value[i], kept[i])) return false;
    return true;
  }
  if (kept instanceof Date) return value instanceof Date && !('_bsontype' in value) && value.getTime() === kept.getTime();
  if (kept instanceof ObjectId) return value instanceof ObjectId && value._bsontype === 'ObjectId' && sameBytes(value.id, kept.id, 12);
  if (kept instanceof Long) return value instanceof Long && value._bsontype === 'Long' && value.low === kept.low && value.high === kept.high;
  if (kept instanceof Decimal128) return value instanceof Decimal128 && value._bsontype === 'Decimal128' && sameBytes(value.bytes, kept.bytes, 16);
  if (kept instanceof Double) return value instanceof Double && value._bsontype === 'Double' && Object.is(value.value, kept.value);
  const proto = Object.getPrototypeOf(value);
  if (Array.isArray(value) || (proto !== Object.prototype && proto !== null) || '_bsontype' in value) return false;
  const keys = Object.keys(value);
  const keptKeys = Object.keys(kept);
  if (keys.length !== keptKeys.length) return false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (key !== keptKeys[i] || !sameAs((value as Record<string, unknown>)[key], (kept as Record<string, unknown>)[key])) return false;
  }
  return true;
}

function sameBytes(a: Uint8Array, b: Uint8Array, length: number): boolean {
  if (a.length !== length) return false;
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return false;
  return true;
}
