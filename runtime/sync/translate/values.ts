// Values between a changeset's payloads and the documents' BSON values, typed by the Realm column and the
// collection schema's bsonType (an `int` column is Int32 where the schema says "int", Long otherwise).
import { Binary, DBRef, Decimal128, Double, Int32, Long, ObjectId, UUID } from 'bson';
import type { Payload, PrimaryKey } from '../wire/instructions';
import type { RealmColumn, RealmSchema } from './schema';

/** Realm's sync timestamps count milliseconds from 2015-01-01T00:00:00Z. */
export const SYNC_EPOCH_MS = Date.UTC(2015, 0, 1);

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function tagOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const tag = (value as { _bsontype?: unknown })._bsontype;
  return typeof tag === 'string' ? tag : undefined;
}

export function intValue(value: bigint, bsonType: string | undefined): unknown {
  if (bsonType === 'int' && value >= BigInt(INT32_MIN) && value <= BigInt(INT32_MAX)) return Number(value);
  return Long.fromBigInt(value);
}

export function primaryKeyValue(key: PrimaryKey, bsonType?: string): unknown {
  switch (key.type) {
    case 'null': return null;
    case 'int': return intValue(key.value, bsonType ?? 'long');
    case 'string': return key.value;
    case 'objectId': return key.value;
    case 'uuid': return key.value;
    case 'globalKey': return `${key.hi}:${key.lo}`;
  }
}

/** A document's `_id` as a changeset's primary key; undefined when the value cannot be one. */
export function primaryKeyOf(value: unknown): PrimaryKey | undefined {
  if (value === null || value === undefined) return { type: 'null' };
  if (typeof value === 'string') return { type: 'string', value };
  if (typeof value === 'number') return Number.isInteger(value) ? { type: 'int', value: BigInt(value) } : undefined;
  if (typeof value === 'bigint') return { type: 'int', value };
  const tag = tagOf(value);
  if (tag === 'ObjectId') return { type: 'objectId', value: value as ObjectId };
  if (tag === 'Long') return { type: 'int', value: (value as Long).toBigInt() };
  if (tag === 'Int32') return { type: 'int', value: BigInt((value as Int32).valueOf()) };
  if (tag === 'Binary' && (value as Binary).sub_type === Binary.SUBTYPE_UUID) return { type: 'uuid', value: new UUID((value as Binary).buffer) };
  return undefined;
}

/** A stable text of a primary key (map keys, log lines). */
/** A primary key as the platform's server wrote it in compensating write reasons: ObjectID("…"), 123, "text", UUID(…). */
export function primaryKeyForClients(key: PrimaryKey): string {
  switch (key.type) {
    case 'null': return 'null';
    case 'int': return key.value.toString();
    case 'string': return JSON.stringify(key.value);
    case 'objectId': return `ObjectID("${key.value.toHexString()}")`;
    case 'uuid': return `UUID(${key.value.toHexString(true)})`;
    case 'globalKey': return `GlobalKey(${key.hi}, ${key.lo})`;
  }
}

export function primaryKeyText(key: PrimaryKey): string {
  switch (key.type) {
    case 'null': return 'null';
    case 'int': return key.value.toString();
    case 'string': return JSON.stringify(key.value);
    case 'objectId': return `oid(${key.value.toHexString()})`;
    case 'uuid': return `uuid(${key.value.toHexString()})`;
    case 'globalKey': return `gk(${key.hi},${key.lo})`;
  }
}

export type LinkResolver = (table: string, key: PrimaryKey) => unknown;

/** The BSON value a payload stores in a document. Collections and embedded objects are created empty. */
export function payloadToValue(payload: Payload, column: RealmColumn | undefined, schema: RealmSchema): unknown {
  switch (payload.type) {
    case 'null': return null;
    case 'int': return intValue(payload.value, column?.bsonType ?? (column?.type === 'null' ? 'long' : column?.bsonType));
    case 'bool': return payload.value;
    case 'string': return payload.value;
    case 'binary': return new Binary(payload.value);
    case 'timestamp': return new Date(Number(payload.seconds) * 1000 + Math.trunc(payload.nanoseconds / 1e6));
    case 'float': return new Double(payload.value);
    case 'double': return new Double(payload.value);
    case 'decimal': return payload.value;
    case 'objectId': return payload.value;
    case 'uuid': return payload.value;
    case 'link': {
      const target = schema.get(payload.table);
      const pkColumn = target?.primaryKey;
      const key = primaryKeyValue(payload.target, pkColumn?.type === 'int' ? 'long' : undefined);
      // A link in a mixed value names its table: stored as a DBRef, as the platform's translator stored it.
      return column === undefined || column.type === 'null' ? new DBRef(payload.table, key as ObjectId) : key;
    }
    case 'globalKey': return `${payload.hi}:${payload.lo}`;
    case 'objectValue': return {};
    case 'dictionary': return {};
    case 'list': case 'set': return [];
    case 'erased': return undefined;
  }
}

/** The payload of a stored value for a column (or a mixed one when the column is unknown); undefined when it does not fit. */
export function valueToPayload(value: unknown, column: Pick<RealmColumn, 'type' | 'linkTarget'> | undefined): Payload | undefined {
  if (value === null || value === undefined) return { type: 'null' };
  const type = column?.type ?? 'null';
  if (type === 'link') {
    const key = primaryKeyOf(value);
    return key && column?.linkTarget ? { type: 'link', table: column.linkTarget, target: key } : undefined;
  }
  const tag = tagOf(value);
  if (type === 'null') {
    const ref = dbRefOf(value);
    if (ref) return ref;
  }
  switch (typeof value) {
    case 'string': return type === 'string' || type === 'null' ? { type: 'string', value } : undefined;
    case 'boolean': return type === 'bool' || type === 'null' ? { type: 'bool', value } : undefined;
    case 'bigint': return type === 'int' || type === 'null' ? { type: 'int', value } : undefined;
    case 'number':
      if (type === 'int') return Number.isInteger(value) ? { type: 'int', value: BigInt(value) } : undefined;
      if (type === 'double' || type === 'float') return { type, value };
      if (type === 'decimal') return { type: 'decimal', value: Decimal128.fromString(String(value)) };
      if (type === 'null') return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER ? { type: 'int', value: BigInt(value) } : { type: 'double', value };
      return undefined;
    default:
  }
  if (value instanceof Date) {
    if (type !== 'timestamp' && type !== 'null') return undefined;
    const ms = value.getTime();
    const seconds = Math.floor(ms / 1000);
    return { type: 'timestamp', seconds: BigInt(seconds), nanoseconds: (ms - seconds * 1000) * 1e6 };
  }
  switch (tag) {
    case 'Long': {
      const n = (value as Long).toBigInt();
      if (type === 'int' || type === 'null') return { type: 'int', value: n };
      if (type === 'double' || type === 'float') return { type, value: Number(n) };
      return undefined;
    }
    case 'Int32': return type === 'int' || type === 'null' ? { type: 'int', value: BigInt((value as Int32).valueOf()) } : undefined;
    case 'Double': {
      const n = (value as Double).valueOf();
      if (type === 'double' || type === 'float' || type === 'null') return { type: type === 'null' ? 'double' : type, value: n };
      return type === 'int' && Number.isInteger(n) ? { type: 'int', value: BigInt(n) } : undefined;
    }
    case 'Decimal128': return type === 'decimal' || type === 'null' ? { type: 'decimal', value: value as Decimal128 } : undefined;
    case 'ObjectId': return type === 'objectId' || type === 'null' ? { type: 'objectId', value: value as ObjectId } : undefined;
    case 'Binary': {
      const binary = value as Binary;
      if (binary.sub_type === Binary.SUBTYPE_UUID && (type === 'uuid' || type === 'null')) return { type: 'uuid', value: new UUID(binary.buffer) };
      return type === 'binary' || type === 'null' ? { type: 'binary', value: binary.buffer } : undefined;
    }
    default: return undefined;
  }
}

/** Whether a mixed value is a collection (a list as an array, a dictionary as a plain document that is no link or BSON value). */
export function mixedCollectionOf(value: unknown): 'list' | 'dictionary' | undefined {
  if (Array.isArray(value)) return 'list';
  if (value === null || typeof value !== 'object' || value instanceof Date || tagOf(value) !== undefined || dbRefOf(value)) return undefined;
  return Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null ? 'dictionary' : undefined;
}

/** A mixed value's link (a DBRef, or the `{$ref, $id}` document it is stored as). */
function dbRefOf(value: unknown): Payload | undefined {
  if (value instanceof DBRef) {
    const key = primaryKeyOf(value.oid);
    return key ? { type: 'link', table: value.collection, target: key } : undefined;
  }
  if (value === null || typeof value !== 'object' || tagOf(value) !== undefined) return undefined;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (typeof record.$ref !== 'string' || !('$id' in record) || !keys.every((k) => k === '$ref' || k === '$id' || k === '$db')) return undefined;
  const key = primaryKeyOf(record.$id);
  return key ? { type: 'link', table: record.$ref, target: key } : undefined;
}

/** Milliseconds since realm's sync epoch, as changesets carry them. */
export function syncTimestamp(nowMs: number): bigint {
  return BigInt(Math.max(0, Math.floor(nowMs - SYNC_EPOCH_MS)));
}

/**
 * What a Realm client's new object holds in each required scalar column it did not set: the column type's
 * default (0, false, "", the zero ObjectId…). A client's CreateObject carries no Set for those, so the
 * document written for it must hold them, or the collection schema's `required` would refuse it.
 */
export function requiredDefaults(table: { columns: ReadonlyMap<string, RealmColumn> }): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const column of table.columns.values()) {
    if (column.nullable || column.collection !== 'single') continue;
    const value = defaultOf(column);
    if (value !== undefined) out[column.name] = value;
  }
  return out;
}

function defaultOf(column: RealmColumn): unknown {
  switch (column.type) {
    case 'int': return intValue(0n, column.bsonType);
    case 'bool': return false;
    case 'string': return '';
    case 'binary': return new Binary(new Uint8Array(0));
    case 'timestamp': return new Date(0);
    case 'float': case 'double': return new Double(0);
    case 'decimal': return Decimal128.fromString('0');
    case 'objectId': return new ObjectId('000000000000000000000000');
    case 'uuid': return new UUID('00000000-0000-0000-0000-000000000000');
    default: return undefined;
  }
}
