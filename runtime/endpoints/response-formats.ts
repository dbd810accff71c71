// Response data formats of the Data API and custom endpoints: standard JSON, which writes BSON values as plain
// JSON types and loses some type information, or canonical EJSON, which keeps it. A request's Accept header
// picks one and overrides the configured `return_type`.
import { EJSON } from 'bson';

export type ReturnType = 'JSON' | 'EJSON';

export function returnTypeOf(configured: unknown): ReturnType {
  return configured === 'EJSON' ? 'EJSON' : 'JSON';
}

/** The format the caller asked for in `Accept`, else the configured one. */
export function negotiateReturnType(accept: string | string[] | undefined, configured: ReturnType): ReturnType {
  const types = (Array.isArray(accept) ? accept.join(',') : accept ?? '').split(',').map((t) => t.split(';')[0]!.trim().toLowerCase());
  if (types.includes('application/ejson')) return 'EJSON';
  if (types.includes('application/json')) return 'JSON';
  return configured;
}

export function encodeBody(value: unknown, format: ReturnType): { text: string; contentType: string } {
  if (format === 'EJSON') {
    return { text: value === undefined ? '{"$undefined":true}' : EJSON.stringify(value as never, { relaxed: false }), contentType: 'application/ejson' };
  }
  return { text: JSON.stringify(toPlainJson(value) ?? null), contentType: 'application/json' };
}

/**
 * BSON values as standard JSON: ObjectId → hex string, dates → ISO strings, Int32/Int64/Double → numbers,
 * Decimal128 → string, Binary → `{Subtype, Data}`, regular expressions → `{Pattern, Options}`,
 * Timestamp → `{T, I}`. MinKey and MaxKey have no JSON form and keep their EJSON one.
 */
export function toPlainJson(value: unknown): unknown {
  if (value === null || value === undefined || typeof value !== 'object') return typeof value === 'bigint' ? Number(value) : value;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Array.isArray(value)) return value.map((v) => toPlainJson(v) ?? null);
  if (value instanceof RegExp) return { Pattern: value.source, Options: value.flags };
  const bson = value as { _bsontype?: string } & Record<string, unknown>;
  switch (bson._bsontype) {
    case 'ObjectId': return (value as { toHexString(): string }).toHexString();
    case 'Int32': case 'Double': return (value as { valueOf(): number }).valueOf();
    case 'Long': return (value as { toNumber(): number }).toNumber();
    case 'Decimal128': return String(value);
    case 'Binary': {
      const binary = value as { sub_type: number; toString(encoding: 'base64'): string };
      return { Subtype: binary.sub_type, Data: binary.toString('base64') };
    }
    case 'BSONRegExp': return { Pattern: bson.pattern, Options: bson.options };
    case 'Timestamp': return { T: (value as { t: number }).t, I: (value as { i: number }).i };
    case 'Code': return String(bson.code);
    case 'BSONSymbol': return String(bson.value);
    case 'MinKey': return { $minKey: 1 };
    case 'MaxKey': return { $maxKey: 1 };
    case undefined: break;
    default: return EJSON.serialize(value, { relaxed: false });
  }
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) if (v !== undefined) out[key] = toPlainJson(v);
  return out;
}
