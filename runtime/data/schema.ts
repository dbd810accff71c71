// Write validation against a collection's schema.json (config-format §7.2): JSON Schema through ajv,
// plus the `bsonType` keyword checked against the BSON value types documents really hold. Validators
// are compiled once per collection. Settings come from graphql/validation_settings.json.
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { platformSchema } from '../../core/schemaDialect';
import { isRecord } from './rules';

export interface SchemaViolation {
  /** Dotted path of the offending field (`checklist.1.done`), or `` for the document itself. */
  path: string;
  message: string;
}

export type SchemaValidator = (doc: unknown) => SchemaViolation | undefined;

export type ValidationAction = 'ERROR' | 'WARN';
export type ValidationLevel = 'STRICT' | 'MODERATE' | 'OFF';

export interface WriteValidationSettings {
  action: ValidationAction;
  level: ValidationLevel;
}

/**
 * The platform writes `ERROR`/`STRICT` into validation_settings.json for new apps, and those are the
 * values every observed export carries, so they are also the behaviour when the file is absent.
 * Unknown values fall back to the same defaults.
 */
export function writeValidationSettings(value: unknown): WriteValidationSettings {
  const settings = isRecord(value) ? value : {};
  const action = String(settings.write_validation_action ?? '').toUpperCase();
  const level = String(settings.write_validation_level ?? '').toUpperCase();
  return {
    action: action === 'WARN' ? 'WARN' : 'ERROR',
    level: level === 'OFF' || level === 'MODERATE' ? level : 'STRICT',
  };
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function tagOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const tag = (value as { _bsontype?: unknown })._bsontype;
  return typeof tag === 'string' ? tag : undefined;
}

/**
 * Whether a value has a bsonType. Input reaches the rules before the store's form is certain (plain JSON
 * numbers carry no int/double distinction; the store keeps only whole-number doubles as `Double`), so a
 * plain number is an `int` when it is a 32-bit integer, a `long` when it is a safe integer, and a `double`
 * or `decimal` always; explicit bson wrappers must match exactly.
 */
export function matchesBsonType(type: string, value: unknown): boolean {
  const tag = tagOf(value);
  switch (type) {
    case 'mixed': return true;
    case 'objectId': return tag === 'ObjectId';
    case 'string': return typeof value === 'string';
    case 'bool': case 'boolean': return typeof value === 'boolean';
    case 'int': return tag === 'Int32' || (typeof value === 'number' && Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX);
    case 'long': return tag === 'Long' || typeof value === 'bigint' || (typeof value === 'number' && Number.isSafeInteger(value));
    case 'double': return tag === 'Double' || typeof value === 'number';
    case 'decimal': return tag === 'Decimal128' || typeof value === 'number';
    case 'number': return typeof value === 'number' || typeof value === 'bigint' || tag === 'Int32' || tag === 'Long' || tag === 'Double' || tag === 'Decimal128';
    case 'date': return value instanceof Date;
    case 'timestamp': return tag === 'Timestamp';
    case 'uuid': return tag === 'Binary' && (value as { sub_type?: number }).sub_type === 4;
    case 'binData': return tag === 'Binary' || value instanceof Uint8Array;
    case 'object': return isRecord(value);
    case 'array': return Array.isArray(value);
    case 'null': return value === null;
    case 'undefined': return value === undefined || value === null;
    case 'regex': return value instanceof RegExp || tag === 'BSONRegExp';
    case 'javascript': return tag === 'Code';
    case 'minKey': return tag === 'MinKey';
    case 'maxKey': return tag === 'MaxKey';
    default: return false;
  }
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  const tag = tagOf(value);
  if (tag === 'Binary' && (value as { sub_type?: number }).sub_type === 4) return 'uuid';
  if (tag) return tag === 'ObjectId' ? 'objectId' : tag.charAt(0).toLowerCase() + tag.slice(1);
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'double';
  return typeof value === 'object' ? 'object' : typeof value;
}

let ajv: Ajv | undefined;

function sharedAjv(): Ajv {
  if (!ajv) {
    ajv = new Ajv({ strict: false, allErrors: false, validateSchema: false, verbose: true });
    ajv.addKeyword({
      keyword: 'bsonType',
      schemaType: ['string', 'array'],
      errors: false,
      validate: (types: string | string[], data: unknown) =>
        (Array.isArray(types) ? types : [types]).some((type) => matchesBsonType(String(type), data)),
    });
  }
  return ajv;
}

/** Compiles a collection schema; undefined when the schema is absent or cannot be compiled (`asl check` reports why). */
export function compileSchema(schema: unknown): SchemaValidator | undefined {
  if (!isRecord(schema)) return undefined;
  let validate: ValidateFunction;
  try {
    validate = sharedAjv().compile(platformSchema(schema) as Record<string, unknown>);
  } catch {
    return undefined;
  }
  return (doc) => (validate(doc) ? undefined : violationOf(validate.errors?.[0]));
}

function violationOf(error: ErrorObject | undefined): SchemaViolation {
  if (!error) return { path: '', message: 'document does not match the collection schema' };
  const segments = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const path = segments.join('.');
  switch (error.keyword) {
    case 'required': {
      const missing = [...segments, String(error.params.missingProperty)].join('.');
      return { path: missing, message: `missing required field "${missing}"` };
    }
    case 'bsonType': {
      const expected = Array.isArray(error.schema) ? error.schema.join(' or ') : String(error.schema);
      return { path, message: `field "${path || '(document)'}" must be of bsonType ${expected}, got ${describeType(error.data)}` };
    }
    case 'additionalProperties': {
      const extra = [...segments, String(error.params.additionalProperty)].join('.');
      return { path: extra, message: `field "${extra}" is not allowed by the schema` };
    }
    default:
      return { path, message: `field "${path || '(document)'}" ${error.message ?? 'does not match the schema'}` };
  }
}
