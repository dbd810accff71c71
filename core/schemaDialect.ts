// The platform reads collection and resolver schemas more loosely than JSON Schema does, and real exports rely
// on it (issue 11 §2): `"bsonType": "float"` (written by development mode) is a double; `type` may carry a BSON
// type name; `items` written as a one-element array means that element; an object schema with `properties` and
// no type is an object. `platformSchema` rewrites a schema into the strict form the rest of the code reads.
import { isObject } from './json';

const JSON_SCHEMA_TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);

/** bsonType aliases: the name the platform stores → the one it means. */
export function canonicalBsonType(type: string): string {
  return type === 'float' ? 'double' : type;
}

function canonicalTypes(value: unknown): unknown {
  if (typeof value === 'string') return canonicalBsonType(value);
  return Array.isArray(value) ? value.map((t) => (typeof t === 'string' ? canonicalBsonType(t) : t)) : value;
}

/** A copy of `schema` in strict form (the input is never changed); anything not a schema object is returned as is. */
export function platformSchema(schema: unknown): unknown {
  if (!isObject(schema)) return schema;
  const out: Record<string, unknown> = { ...schema };
  if (out.bsonType !== undefined) out.bsonType = canonicalTypes(out.bsonType);
  else if (out.type !== undefined) {
    const types = Array.isArray(out.type) ? out.type : [out.type];
    if (types.some((t) => typeof t === 'string' && !JSON_SCHEMA_TYPES.has(t))) {
      out.bsonType = canonicalTypes(out.type);
      delete out.type;
    }
  } else if (isObject(out.properties)) out.bsonType = 'object';
  if (Array.isArray(out.items) && out.items.length === 1) out.items = out.items[0];
  if (out.items !== undefined) out.items = platformSchema(out.items);
  if (isObject(out.properties)) out.properties = Object.fromEntries(Object.entries(out.properties).map(([k, v]) => [k, platformSchema(v)]));
  if (isObject(out.additionalProperties)) out.additionalProperties = platformSchema(out.additionalProperties);
  return out;
}
