// The platform's custom scalars with their wire forms (graphql.md §3): ObjectId as a 24-hex string,
// DateTime as an RFC 3339 string, Long as a number. Values coming from the database may be BSON
// objects, so serialisation accepts them by shape without importing a BSON library.
import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';

const objectIdHex = /^[0-9a-fA-F]{24}$/;

function hasMethod<K extends string>(value: unknown, method: K): value is Record<K, (...args: unknown[]) => unknown> {
  return typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[method] === 'function';
}

function describe(value: unknown): string {
  try { return JSON.stringify(value) ?? String(value); } catch { return String(value); }
}

function parseObjectId(value: unknown): string {
  if (typeof value === 'string' && objectIdHex.test(value)) return value.toLowerCase();
  throw new GraphQLError(`ObjectId cannot represent a non-ObjectId value: ${describe(value)}`);
}

export const GraphQLObjectId = new GraphQLScalarType<string, string>({
  name: 'ObjectId',
  serialize(value) {
    if (hasMethod(value, 'toHexString')) return String(value.toHexString());
    return parseObjectId(value);
  },
  parseValue: parseObjectId,
  parseLiteral(ast: ValueNode) {
    if (ast.kind !== Kind.STRING) throw new GraphQLError(`ObjectId must be a 24-hex string, got ${ast.kind}`, { nodes: ast });
    return parseObjectId(ast.value);
  },
});

/** RFC 3339 date-time, or a plain date, as accepted by `Date` parsing. */
const dateTimeText = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

function parseDateTime(value: unknown): Date {
  const date = typeof value === 'string' && dateTimeText.test(value) ? new Date(value)
    : typeof value === 'number' && Number.isFinite(value) ? new Date(value)
      : undefined;
  if (!date || Number.isNaN(date.getTime())) throw new GraphQLError(`DateTime cannot represent an invalid date-time value: ${describe(value)}`);
  return date;
}

export const GraphQLDateTime = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  serialize(value) {
    if (value instanceof Date) {
      if (Number.isNaN(value.getTime())) throw new GraphQLError('DateTime cannot represent an invalid Date');
      return value.toISOString();
    }
    // A BSON Timestamp: seconds since the epoch in its high part.
    if (typeof value === 'object' && value !== null && typeof (value as { t?: unknown }).t === 'number' && typeof (value as { i?: unknown }).i === 'number') {
      return new Date((value as { t: number }).t * 1000).toISOString();
    }
    return parseDateTime(value).toISOString();
  },
  parseValue: parseDateTime,
  parseLiteral(ast: ValueNode) {
    if (ast.kind === Kind.STRING) return parseDateTime(ast.value);
    if (ast.kind === Kind.INT) return parseDateTime(Number(ast.value));
    throw new GraphQLError(`DateTime must be an RFC 3339 string, got ${ast.kind}`, { nodes: ast });
  },
});

function toSafeInteger(value: unknown): number {
  const n = typeof value === 'number' ? value
    : typeof value === 'bigint' ? Number(value)
      : typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value)
        : NaN;
  if (!Number.isSafeInteger(n)) throw new GraphQLError(`Long cannot represent a non-integer or out-of-range value: ${describe(value)}`);
  return n;
}

export const GraphQLLong = new GraphQLScalarType<number, number>({
  name: 'Long',
  serialize(value) {
    // BSON Long / Int32 / Double all expose their numeric value through one of these.
    if (hasMethod(value, 'toNumber')) return toSafeInteger(value.toNumber());
    if (typeof value === 'object' && value !== null && hasMethod(value, 'valueOf')) return toSafeInteger(value.valueOf());
    return toSafeInteger(value);
  },
  parseValue: toSafeInteger,
  parseLiteral(ast: ValueNode) {
    if (ast.kind === Kind.INT || ast.kind === Kind.STRING) return toSafeInteger(ast.value);
    throw new GraphQLError(`Long must be an integer, got ${ast.kind}`, { nodes: ast });
  },
});

/** In print order. */
export const customScalars: Record<string, GraphQLScalarType> = {
  ObjectId: GraphQLObjectId,
  DateTime: GraphQLDateTime,
  Long: GraphQLLong,
};
