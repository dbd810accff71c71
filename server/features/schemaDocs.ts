// The bundled JSON Schemas as documentation: which keys and enum values fit at a JSON path, with the
// descriptions written for them. `if`/`then` branches are followed by the document's own values, so a
// custom-token provider offers its own config keys and a local-userpass provider its own.
import type { JSONPath } from 'jsonc-parser';
import { isObject } from '../../core/json';
import { schemasByKind } from '../../core/validate/structure';

type Schema = Record<string, unknown>;

export interface KeyDoc { name: string; documentation?: string; schema: Schema }
export interface ValueDoc { value: unknown; documentation?: string }

/** Guards against cyclic `$ref`s (node → properties → node …) that a deep instance would follow forever. */
const MAX_STEPS = 64;

function documentationOf(schema: Schema): string | undefined {
  const text = schema.markdownDescription ?? schema.description;
  return typeof text === 'string' ? text : undefined;
}

/** Every schema that applies at `path` of the document, outermost first. */
export function schemasAt(kind: string | undefined, document: unknown, path: JSONPath): Schema[] {
  const root = kind ? schemasByKind[kind] : undefined;
  if (!isObject(root) || path.length > MAX_STEPS) return [];
  let instance = document;
  let current = expand(root, root, instance, 0);
  for (const segment of path) {
    instance = isObject(instance) && typeof segment === 'string' ? instance[segment] : Array.isArray(instance) && typeof segment === 'number' ? instance[segment] : undefined;
    const next: Schema[] = [];
    for (const schema of current) {
      const child = childSchema(schema, segment);
      if (child) next.push(...expand(root, child, instance, 0));
    }
    current = next;
    if (!current.length) break;
  }
  return current;
}

function childSchema(schema: Schema, segment: string | number): Schema | undefined {
  if (typeof segment === 'number') {
    if (isObject(schema.items)) return schema.items;
    return Array.isArray(schema.items) && isObject(schema.items[segment]) ? schema.items[segment] : undefined;
  }
  if (isObject(schema.properties) && isObject(schema.properties[segment])) return schema.properties[segment];
  if (isObject(schema.patternProperties)) {
    for (const [pattern, sub] of Object.entries(schema.patternProperties)) if (isObject(sub) && new RegExp(pattern, 'u').test(segment)) return sub;
  }
  return isObject(schema.additionalProperties) ? schema.additionalProperties : undefined;
}

function expand(root: Schema, schema: Schema, instance: unknown, depth: number): Schema[] {
  if (depth > MAX_STEPS) return [];
  const out: Schema[] = [schema];
  if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#/definitions/')) {
    const target = (root.definitions as Record<string, unknown> | undefined)?.[schema.$ref.slice('#/definitions/'.length)];
    if (isObject(target)) out.push(...expand(root, target, instance, depth + 1));
  }
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
    const list = schema[key];
    if (Array.isArray(list)) for (const sub of list) if (isObject(sub)) out.push(...expand(root, sub, instance, depth + 1));
  }
  if (isObject(schema.if)) {
    const branch = matches(schema.if, instance) ? schema.then : schema.else;
    if (isObject(branch)) out.push(...expand(root, branch, instance, depth + 1));
  }
  return out;
}

/** The subset of JSON Schema that the bundled schemas use in `if`: type, const, enum, properties, required. */
function matches(schema: Schema, instance: unknown): boolean {
  if (typeof schema.type === 'string' && typeOf(instance) !== schema.type && !(schema.type === 'number' && typeOf(instance) === 'integer')) return false;
  if ('const' in schema && schema.const !== instance) return false;
  if (Array.isArray(schema.enum) && !schema.enum.includes(instance)) return false;
  if (Array.isArray(schema.required) && !(isObject(instance) && schema.required.every((k) => typeof k === 'string' && k in instance))) return false;
  if (isObject(schema.properties) && isObject(instance)) {
    for (const [key, sub] of Object.entries(schema.properties)) if (key in instance && isObject(sub) && !matches(sub, instance[key])) return false;
  }
  return true;
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** Keys the object at `objectPath` may have, each with its documentation (first description found wins). */
export function keysAt(kind: string | undefined, document: unknown, objectPath: JSONPath): KeyDoc[] {
  const byName = new Map<string, KeyDoc>();
  for (const schema of schemasAt(kind, document, objectPath)) {
    if (!isObject(schema.properties)) continue;
    for (const [name, sub] of Object.entries(schema.properties)) {
      if (!isObject(sub)) continue;
      const known = byName.get(name);
      const documentation = documentationOf(sub);
      if (!known) byName.set(name, { name, documentation, schema: sub });
      else if (documentation && !known.documentation) known.documentation = documentation;
    }
  }
  return [...byName.values()];
}

/** Values the schema lists for `path` (enums, consts, booleans), with their documentation. */
export function valuesAt(kind: string | undefined, document: unknown, path: JSONPath): ValueDoc[] {
  const values = new Map<string, ValueDoc>();
  const add = (value: unknown, documentation?: string) => {
    const key = JSON.stringify(value);
    const known = values.get(key);
    if (!known) values.set(key, { value, documentation });
    else if (documentation && !known.documentation) known.documentation = documentation;
  };
  for (const schema of schemasAt(kind, document, path)) {
    if (Array.isArray(schema.enum)) {
      const docs = (schema.markdownEnumDescriptions ?? schema.enumDescriptions) as unknown;
      schema.enum.forEach((v, i) => add(v, Array.isArray(docs) && typeof docs[i] === 'string' ? docs[i] : undefined));
    }
    if ('const' in schema) add(schema.const, documentationOf(schema));
    if (schema.type === 'boolean') { add(true); add(false); }
  }
  return [...values.values()];
}

/** Documentation of the value at `path`: the property's description, and the enum value's own when it has one. */
export function describeAt(kind: string | undefined, document: unknown, path: JSONPath, value?: unknown): string | undefined {
  const schemas = schemasAt(kind, document, path);
  const property = schemas.map(documentationOf).find((d) => d !== undefined);
  const enumDoc = value === undefined ? undefined : valuesAt(kind, document, path).find((v) => v.value === value && v.documentation)?.documentation;
  const parts = [enumDoc ? `\`${JSON.stringify(value)}\`: ${enumDoc}` : undefined, property].filter((p): p is string => !!p);
  return parts.length ? parts.join('\n\n') : undefined;
}
