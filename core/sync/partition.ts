// Partition values (rules-and-sync §5, §6, §8.1): the EJSON text a client opens a partition with, its
// type against `partition.type` (`ErrorIllegalDatabasePath` otherwise), and which partition a stored
// document belongs to (or why sync ignores it).
import { Binary, EJSON, Long, ObjectId, UUID } from 'bson';
import type { PartitionSettings } from './config';
import { ErrorCode } from './errorCodes';

/** A sync protocol error as the spec's table names it (§8). */
export interface SyncError {
  code: number;
  name: string;
  message: string;
  /** What a client does about it (`migrate-to-flx`, `revert-to-pbs`: a reset into the app's other sync mode). */
  action: 'client-reset' | 'retry-later' | 'fix-client' | 'refresh-token' | 'none' | 'migrate-to-flx' | 'revert-to-pbs';
  tryAgain: boolean;
  /** More fields of the protocol's JSON error body (`partitionQuery` of a migration). */
  body?: Record<string, unknown>;
}

export const ILLEGAL_DATABASE_PATH = ErrorCode.illegal_realm_path;

export function illegalDatabasePath(message: string): SyncError {
  return { code: ILLEGAL_DATABASE_PATH, name: 'ErrorIllegalDatabasePath', message, action: 'fix-client', tryAgain: false };
}

/** Type name of a value as the partition errors name them: `string`, `objectId`, `long`, `uuid`, `null`, or the BSON type. */
export function partitionTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'missing';
  switch (typeof value) {
    case 'string': return 'string';
    case 'boolean': return 'bool';
    case 'number': return Number.isSafeInteger(value) ? 'long' : 'double';
    case 'bigint': return 'long';
    case 'object': break;
    default: return typeof value;
  }
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  const tag = (value as { _bsontype?: unknown })._bsontype;
  switch (tag) {
    case 'ObjectId': return 'objectId';
    case 'Long': case 'Int32': return 'long';
    case 'Double': return 'double';
    case 'Decimal128': return 'decimal';
    case 'Binary': {
      const binary = value as Binary;
      return binary.sub_type === Binary.SUBTYPE_UUID && binary.length() === 16 ? 'uuid' : 'binData';
    }
    case undefined: return 'object';
    default: return String(tag).toLowerCase();
  }
}

/** One representation per partition: numbers and Longs alike become a number (a Long past 2^53), UUIDs a UUID. */
export function normalizePartitionValue(value: unknown): unknown {
  const type = partitionTypeOf(value);
  if (type === 'long') {
    const big = typeof value === 'number' ? BigInt(value) : typeof value === 'bigint' ? value
      : (value as { _bsontype: string })._bsontype === 'Long' ? (value as Long).toBigInt() : BigInt(Number((value as { valueOf(): number }).valueOf()));
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : Long.fromBigInt(big);
  }
  if (type === 'uuid') return new UUID((value as Binary).value());
  return value;
}

/** A string naming the partition, for maps: equal for equal partition values whatever their representation. */
export function partitionId(value: unknown): string {
  const type = partitionTypeOf(value);
  switch (type) {
    case 'null': case 'missing': return 'null';
    case 'string': return `string:${value as string}`;
    case 'objectId': return `objectId:${(value as ObjectId).toHexString()}`;
    case 'uuid': return `uuid:${new UUID((value as Binary).value()).toHexString(true)}`;
    case 'long': return `long:${String(normalizePartitionValue(value))}`;
    default: return `${type}:${EJSON.stringify(value as never, { relaxed: false })}`;
  }
}

/** The partition value as EJSON text, as a client sends it in its bind path. */
export function partitionText(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  return EJSON.stringify(value as never, { relaxed: false });
}

export type ParsedPartition = { ok: true; value: unknown } | { ok: false; error: SyncError };

/**
 * Parses a bind path: EJSON text whose value must have the configured type (`null` too when the key is
 * optional). Anything else is the spec's `ErrorIllegalDatabasePath` with its exact message.
 */
export function parsePartitionValue(text: string, partition: Pick<PartitionSettings, 'type' | 'required'>): ParsedPartition {
  let value: unknown;
  try {
    value = EJSON.parse(text, { relaxed: false });
  } catch {
    return { ok: false, error: illegalDatabasePath(`Illegal Realm path (BIND): serialized partition '${text}' is invalid`) };
  }
  return checkPartitionValue(value, partition);
}

/** The type check of a parsed partition value (§8.1). */
export function checkPartitionValue(value: unknown, partition: Pick<PartitionSettings, 'type' | 'required'>): ParsedPartition {
  const found = partitionTypeOf(value);
  if (found === partition.type || (found === 'null' && !partition.required)) return { ok: true, value: normalizePartitionValue(value) };
  return {
    ok: false,
    error: illegalDatabasePath(`attempted to bind on illegal realm partition: expected partition to have type ${partition.type} but found ${found}`),
  };
}

export type Membership = { partition: unknown } | { ignored: string };

/** The partition a stored document belongs to, or why sync ignores it (§6). */
export function membershipOf(doc: Record<string, unknown>, partition: Pick<PartitionSettings, 'key' | 'type' | 'required'>): Membership {
  const value = Object.hasOwn(doc, partition.key) ? doc[partition.key] : undefined;
  if (value === undefined || value === null) {
    if (partition.required) return { ignored: `the required partition key "${partition.key}" is ${value === null ? 'null' : 'missing'}` };
    return { partition: null };
  }
  const found = partitionTypeOf(value);
  if (found !== partition.type) return { ignored: `the partition key "${partition.key}" is ${found}, not ${partition.type}` };
  return { partition: normalizePartitionValue(value) };
}

/** The store query selecting a partition's candidates (membership is then checked per document). */
export function partitionQuery(key: string, value: unknown): Record<string, unknown> {
  return { [key]: value === null ? null : value };
}
