// Canonical EJSON on the wire (client-api.md §3). Requests are read strictly so that `$numberLong`,
// `$oid`, `$date`, … become bson values; Int32 and Double wrappers become plain numbers, which is what
// functions and the store expect for ordinary numbers.
import { EJSON } from 'bson';

export function parseEjson(text: string): unknown {
  return unwrapNumbers(EJSON.parse(text, { relaxed: false }));
}

export function stringifyEjson(value: unknown): string {
  if (value === undefined) return '{"$undefined":true}';
  return EJSON.stringify(value as never, { relaxed: false });
}

function unwrapNumbers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unwrapNumbers);
  if (value === null || typeof value !== 'object') return value;
  const bsonType = (value as { _bsontype?: string })._bsontype;
  if (bsonType === 'Int32' || bsonType === 'Double') return (value as { value: number }).value;
  if (bsonType !== undefined || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = unwrapNumbers(v);
  return out;
}
