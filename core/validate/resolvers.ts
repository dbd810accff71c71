// Custom resolver checks that neither the JSON Schema nor GraphQL generation make: settings that are
// silently ignored, fields that replace generated ones, `required` lists naming absent properties, and
// functions no request can ever call.
//
// Codes: resolver/shadows-generated-field, resolver/input-type-ignored, resolver/payload-type-ignored,
// resolver/missing-payload-type, resolver/unknown-required-property, resolver/function-never-callable.
import { DiagnosticSink, type Diagnostic } from '../diagnostics';
import { isObject, type JSONPath, type JsonFile } from '../json';
import type { AppModel, CustomResolver } from '../model';
import type { GeneratedSchema } from '../graphql';

export function validateResolvers(app: AppModel, generated: GeneratedSchema, sink: DiagnosticSink): void {
  for (const entry of generated.resolvers) {
    if (!entry.overridesGeneratedField) continue;
    const field = `${entry.parent}.${entry.fieldName}`;
    sink.at(entry.config.file, ['field_name'], 'warning', 'resolver/shadows-generated-field',
      `${field} is a generated field; this resolver replaces it, so clients calling ${field} get the function's result instead of the generated behaviour. Pick another name to keep both.`,
      { data: { field } });
  }
  for (const resolver of app.graphql.customResolvers) {
    checkFormats(resolver, sink);
    checkCustomSchemas(resolver, sink);
    checkFunction(app, resolver, sink);
  }
}

function raw(resolver: CustomResolver): Record<string, unknown> {
  return isObject(resolver.file.value) ? resolver.file.value : {};
}

/** A type without a format (or a format without a type) is ignored by generation; say so where it is written. */
function checkFormats(resolver: CustomResolver, sink: DiagnosticSink): void {
  const value = raw(resolver);
  const file = resolver.file;
  if (value.input_type !== undefined && resolver.inputTypeFormat === '') {
    sink.at(file, ['input_type'], 'warning', 'resolver/input-type-ignored',
      '"input_type" is ignored because "input_type_format" is empty or missing, so the field takes no input. Set "input_type_format" to scalar, scalar-list, generated, generated-list or custom.');
  }
  if (value.payload_type !== undefined && resolver.payloadTypeFormat === '') {
    sink.at(file, ['payload_type'], 'warning', 'resolver/payload-type-ignored',
      '"payload_type" is ignored because "payload_type_format" is empty or missing, so the field returns DefaultPayload. Set "payload_type_format" to scalar, scalar-list, generated, generated-list or custom.');
  }
  if (value.payload_type === undefined && resolver.payloadTypeFormat !== '') {
    sink.at(file, ['payload_type_format'], 'warning', 'resolver/missing-payload-type',
      `"payload_type_format" is "${resolver.payloadTypeFormat}" but there is no "payload_type", so the field returns DefaultPayload.`);
  }
}

/**
 * What checkCustomSchemas found in each resolver file: it reads nothing but the file, and a parsed file
 * keeps its identity while its text is unchanged, so after an edit only the edited file is walked again.
 */
const customSchemaFindings = new WeakMap<JsonFile, Diagnostic[]>();

function checkCustomSchemas(resolver: CustomResolver, sink: DiagnosticSink): void {
  let found = customSchemaFindings.get(resolver.file);
  if (!found) {
    const own = new DiagnosticSink();
    const value = raw(resolver);
    if (resolver.inputTypeFormat === 'custom' && isObject(value.input_type)) checkRequired(resolver.file, value.input_type, ['input_type'], own, 0);
    if (resolver.payloadTypeFormat === 'custom' && isObject(value.payload_type)) checkRequired(resolver.file, value.payload_type, ['payload_type'], own, 0);
    customSchemaFindings.set(resolver.file, (found = own.items));
  }
  for (const d of found) sink.add(d);
}

/** Schemas nested deeper than this are not walked; real custom types are a few levels deep. */
const MAX_SCHEMA_DEPTH = 32;

/** Every name in a `required` list must be one of the same object's `properties`. */
function checkRequired(file: JsonFile, schema: Record<string, unknown>, path: JSONPath, sink: DiagnosticSink, depth: number): void {
  if (depth > MAX_SCHEMA_DEPTH) return;
  const properties = isObject(schema.properties) ? schema.properties : {};
  if (Array.isArray(schema.required)) {
    const known = Object.keys(properties);
    schema.required.forEach((name, i) => {
      if (typeof name !== 'string' || Object.hasOwn(properties, name)) return;
      sink.at(file, [...path, 'required', i], 'error', 'resolver/unknown-required-property',
        `"${name}" is listed in "required" but is not one of the properties (${known.length ? known.join(', ') : 'there are none'}).`,
        { data: { name, properties: known } });
    });
  }
  for (const [key, child] of Object.entries(properties)) if (isObject(child)) checkRequired(file, child, [...path, 'properties', key], sink, depth + 1);
  if (isObject(schema.items)) checkRequired(file, schema.items, [...path, 'items'], sink, depth + 1);
}

/**
 * Resolvers run their function on the server, so a private function works; a function whose
 * `can_evaluate` is the literal `false` refuses every call, so every request of the field fails.
 */
function checkFunction(app: AppModel, resolver: CustomResolver, sink: DiagnosticSink): void {
  const fn = app.functions.get(resolver.functionName);
  if (!fn || fn.canEvaluate !== false) return;
  sink.at(resolver.file, ['function_name'], 'warning', 'resolver/function-never-callable',
    `The function "${fn.name}" has "can_evaluate": false in functions/config.json, so it refuses every call and every request of this field fails.`,
    { data: { functionName: fn.name } });
}
