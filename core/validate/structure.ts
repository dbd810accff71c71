// Structural validation: every config file is checked against its bundled JSON Schema (schemas/*.schema.json,
// the same files VS Code uses for hover and completion), and each violation becomes a diagnostic at the exact
// key or value. Cross-file checks (unknown functions, duplicate names…) belong to the semantic validators.
//
// Diagnostic codes (stable; quick fixes and docs key on them):
//
// | code                    | severity | when                                                            | range             |
// |-------------------------|----------|-----------------------------------------------------------------|-------------------|
// | schema/type             | error    | a value has the wrong JSON type                                 | the value         |
// | schema/string-boolean  | warning  | "true"/"false" as a string where a boolean belongs (read as the boolean) | the value |
// | schema/null-file        | warning  | the whole file is `null` (the exporter's empty list): read as empty | the first line |
// | schema/enum             | error    | a value is not one of the allowed values                        | the value         |
// | schema/const            | error    | a value must be one exact value (provider `name` = `type`)      | the value         |
// | schema/required         | error    | a required property is missing                                  | the object's key  |
// | schema/unknown-key      | warning  | a property the platform does not know (ignored by it)           | the key           |
// | schema/format           | error    | a string is not in the expected format (a URL)                  | the value         |
// | schema/pattern          | error    | a string does not have the expected form (names, routes, refs)  | the value         |
// | schema/length           | error    | a string is too short or too long                               | the value         |
// | schema/item-count       | error    | an array has too few or too many items                          | the array         |
// | schema/property-count   | error    | an object has too few or too many properties                    | the object        |
// | schema/range            | error    | a number is out of range                                        | the value         |
// | schema/duplicate-item   | error    | an array that must hold distinct items repeats one              | the repeated item |
// | schema/shape            | error    | a value matches none of the allowed alternatives                | the value         |
// | schema/not-allowed      | error    | a property is not allowed in this configuration                 | the key           |
// | schema/invalid          | error    | any other schema violation                                      | the value         |
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import type { DiagnosticSink, Severity } from '../diagnostics';
import { formatPath, isObject, type JSONPath, type JsonFile } from '../json';
import catalog from '../../schemas/catalog.json';
import authProviders from '../../schemas/auth-providers.schema.json';
import collectionSchema from '../../schemas/collection-schema.schema.json';
import customUserData from '../../schemas/custom-user-data.schema.json';
import dataApiConfig from '../../schemas/data-api-config.schema.json';
import dataSourceConfig from '../../schemas/data-source-config.schema.json';
import defaultRule from '../../schemas/default-rule.schema.json';
import endpointsConfig from '../../schemas/endpoints-config.schema.json';
import environment from '../../schemas/environment.schema.json';
import functionsConfig from '../../schemas/functions-config.schema.json';
import graphqlConfig from '../../schemas/graphql-config.schema.json';
import graphqlCustomResolver from '../../schemas/graphql-custom-resolver.schema.json';
import graphqlValidationSettings from '../../schemas/graphql-validation-settings.schema.json';
import hostingConfig from '../../schemas/hosting-config.schema.json';
import hostingMetadata from '../../schemas/hosting-metadata.schema.json';
import mdbMeta from '../../schemas/mdb-meta.schema.json';
import relationships from '../../schemas/relationships.schema.json';
import rootConfig from '../../schemas/root-config.schema.json';
import rules from '../../schemas/rules.schema.json';
import syncConfig from '../../schemas/sync-config.schema.json';
import trigger from '../../schemas/trigger.schema.json';
import value from '../../schemas/value.schema.json';
import { closestName } from '../spelling';

/** Every bundled schema by kind; the kinds are those of schemas/catalog.json. */
export const schemasByKind: Readonly<Record<string, object>> = {
  'root-config': rootConfig,
  'mdb-meta': mdbMeta,
  'auth-providers': authProviders,
  'custom-user-data': customUserData,
  'functions-config': functionsConfig,
  'data-source-config': dataSourceConfig,
  'default-rule': defaultRule,
  'collection-schema': collectionSchema,
  relationships,
  rules,
  'graphql-config': graphqlConfig,
  'graphql-validation-settings': graphqlValidationSettings,
  'graphql-custom-resolver': graphqlCustomResolver,
  'sync-config': syncConfig,
  environment,
  value,
  trigger,
  'endpoints-config': endpointsConfig,
  'data-api-config': dataApiConfig,
  'hosting-config': hostingConfig,
  'hosting-metadata': hostingMetadata,
};

// A root-level `config.json` is a legacy root file; no editor glob can single it out, so it is not in the catalog.
const rootOnlyKinds: Readonly<Record<string, string>> = { 'config.json': 'root-config' };

// The catalog's globs, anchored at the app root: relPath is relative to it, so `**/` drops away.
const pathMatchers: { kind: string; pattern: RegExp }[] = catalog.flatMap((entry) =>
  entry.fileMatch.map((glob) => ({ kind: entry.kind, pattern: globToRegExp(glob.replace(/^\*\*\//, '')) })));

function globToRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i];
    if (ch === '*' && glob[i + 1] === '*' && glob[i + 2] === '/') { source += '(?:[^/]+/)*'; i += 2; }
    else if (ch === '*') source += '[^/]*';
    else source += ch.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** The schema kind of a config file, from its path relative to the app root (forward slashes). */
export function schemaKindForPath(relPath: string): string | undefined {
  if (rootOnlyKinds[relPath]) return rootOnlyKinds[relPath];
  return pathMatchers.find((m) => m.pattern.test(relPath))?.kind;
}

// Keywords of VS Code's JSON language service: annotations only, so ajv must know them but not act on them.
const editorKeywords = ['markdownDescription', 'enumDescriptions', 'markdownEnumDescriptions', 'defaultSnippets', 'errorMessage', 'patternErrorMessage', 'deprecationMessage', 'doNotSuggest', 'suggestSortText', 'allowComments', 'allowTrailingCommas'];

let ajv: Ajv | undefined;
const validators = new Map<string, ValidateFunction>();

function validatorFor(kind: string): ValidateFunction | undefined {
  const cached = validators.get(kind);
  if (cached) return cached;
  const schema = schemasByKind[kind];
  if (!schema) return undefined;
  if (!ajv) {
    ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
    ajv.addVocabulary(editorKeywords);
    ajv.addFormat('uri', { type: 'string', validate: isAbsoluteUrl });
  }
  const validate = ajv.compile(schema);
  validators.set(kind, validate);
  return validate;
}

function isAbsoluteUrl(text: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text)) return false;
  try { new URL(text); return true; } catch { return false; }
}

/** Checks every file whose path has a bundled schema; files without a parsed value are left to the loader. */
export function validateStructure(files: Iterable<JsonFile>, sink: DiagnosticSink): void {
  for (const file of files) {
    if (file.value === undefined) continue;
    const kind = schemaKindForPath(file.relPath);
    const validate = kind ? validatorFor(kind) : undefined;
    if (!validate) continue;
    let valid: boolean;
    try {
      valid = validate(file.value) as boolean;
    } catch (e) {
      // ajv recurses per nesting level; a value nested deeper than the stack allows cannot be a real config.
      if (!(e instanceof RangeError)) throw e;
      sink.atRange(file, file.startRange, 'warning', 'schema/too-deep', `${file.relPath} is nested too deeply to check its structure; its keys and values were not validated`);
      continue;
    }
    if (valid) continue;
    const seen = new Set<string>();
    const identityOnly = kind === 'root-config' || kind === 'mdb-meta';
    for (const problem of describeErrors(validate.errors ?? [], file.value, validate.schema)) {
      // Templated exports leave the app's identity out or as a placeholder; nothing local depends on it being right.
      if (identityOnly && typeof problem.path[0] === 'string' && ROOT_IDENTITY_FIELDS.has(problem.path[0]) && problem.severity === 'error') problem.severity = 'information';
      const key = `${JSON.stringify(problem.path)}|${problem.target}|${problem.code}|${problem.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      // A problem of the whole document goes on its first line, not across the entire file.
      if (problem.path.length === 0) sink.atRange(file, file.startRange, problem.severity, problem.code, problem.message);
      else sink.at(file, problem.path, problem.severity, problem.code, problem.message, { target: problem.target });
    }
  }
}

/** Root fields that say which deployed app this is. */
const ROOT_IDENTITY_FIELDS = new Set(['name', 'app_id', 'client_app_id', 'group_id', 'location', 'deployment_model', 'provider_region', 'environment']);

/**
 * What the platform's exporter writes and so must not read as a mistake: `""` for an unset optional string,
 * enum or path (and, for a boolean, false), and `null` for an empty list or map.
 */
function writtenByExporter(e: ErrorObject): boolean {
  if (e.data === '') return e.keyword === 'enum' || e.keyword === 'pattern' || e.keyword === 'format' || e.keyword === 'minLength' || (e.keyword === 'type' && String((e.params as { type?: unknown }).type).split(',').includes('boolean'));
  if (e.data === null && e.keyword === 'type' && e.instancePath !== '') return String((e.params as { type?: unknown }).type).split(',').some((t) => t === 'array' || t === 'object');
  return false;
}

interface Problem { path: JSONPath; target: 'key' | 'value'; severity: Severity; code: string; message: string }

function describeErrors(errors: ErrorObject[], root: unknown, rootSchema: unknown): Problem[] {
  // Errors inside a failed alternative only explain why that alternative did not match; the alternative's
  // own error says it better. `if` errors merely repeat the errors of their `then` branch.
  const alternatives = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.schemaPath + '/');
  const relevant = errors.filter((e) => e.keyword !== 'if' && !writtenByExporter(e) && !alternatives.some((prefix) => e.schemaPath.startsWith(prefix)));
  return relevant.map((e) => describeError(e, toJsonPath(e.instancePath, root), rootSchema));
}

/** ajv's JSON pointer → a jsonc-parser path, with numbers for array indices. */
function toJsonPath(pointer: string, root: unknown): JSONPath {
  const path: JSONPath = [];
  let current = root;
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(current)) {
      const index = Number(segment);
      path.push(index);
      current = current[index];
    } else {
      path.push(segment);
      current = isObject(current) ? current[segment] : undefined;
    }
  }
  return path;
}

function describeError(e: ErrorObject, path: JSONPath, rootSchema: unknown): Problem {
  const where = `\`${formatPath(path)}\``;
  const parent = isObject(e.parentSchema) ? e.parentSchema : {};
  const custom = typeof parent.errorMessage === 'string' ? parent.errorMessage : undefined;
  const error = (code: string, message: string, target: 'key' | 'value' = 'value', at: JSONPath = path): Problem =>
    ({ path: at, target, severity: 'error', code, message });
  const params = e.params as Record<string, unknown>;

  switch (e.keyword) {
    case 'type': {
      const expected = String(params.type).split(',').map(typeWords).join(' or ');
      // The exporter writes a whole file as `null` for an empty list: it reads as empty, but looks like a mistake.
      if ((e.data === 'true' || e.data === 'false') && String(params.type).split(',').includes('boolean')) {
        return { path, target: 'value', severity: 'warning', code: 'schema/string-boolean', message: `${where} is the string "${e.data}", not a boolean; the platform stores it, and it reads as ${e.data}. Write ${e.data} without quotes.` };
      }
      if (path.length === 0 && e.data === null) {
        return { path, target: 'value', severity: 'warning', code: 'schema/null-file', message: `The file holds null, which reads as empty; it should contain ${expected}.` };
      }
      return error('schema/type', path.length === 0
        ? `The file must contain ${expected}; found ${describeValue(e.data)}.`
        : `${where} must be ${expected}; found ${describeValue(e.data)}.`);
    }
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]) ?? [];
      const suggestion = closest(e.data, allowed);
      return error('schema/enum', `${where} must be one of ${allowed.map(showAllowed).join(', ')}; found ${JSON.stringify(e.data)}.${suggestion === undefined ? '' : ` Did you mean ${JSON.stringify(suggestion)}?`}`);
    }
    case 'const':
      return error('schema/const', custom ?? `${where} must be ${JSON.stringify(params.allowedValue)}; found ${JSON.stringify(e.data)}.`);
    case 'required': {
      const missing = String(params.missingProperty);
      const owner = path.length === 0 ? 'The file' : where;
      const about = propertyDescription(rootSchema, e.schemaPath, missing);
      return error('schema/required', `${owner} is missing the required property \`${missing}\`${about ? `: ${about}` : ''}.`, 'value', [...path, missing]);
    }
    case 'additionalProperties': {
      const unknown = String(params.additionalProperty);
      const known = isObject(parent.properties) ? Object.keys(parent.properties) : [];
      const suggestion = closest(unknown, known);
      const owner = path.length === 0 ? '' : ` in ${where}`;
      return {
        path: [...path, unknown], target: 'key', severity: 'warning', code: 'schema/unknown-key',
        message: `Unknown property \`${unknown}\`${owner}; the platform ignores it.${suggestion === undefined ? '' : ` Did you mean \`${String(suggestion)}\`?`}`,
      };
    }
    case 'format':
      return error('schema/format', params.format === 'uri'
        ? `${where} must be an absolute URL such as "https://example.com"; found ${JSON.stringify(e.data)}.`
        : `${where} must be in ${String(params.format)} format; found ${JSON.stringify(e.data)}.`);
    case 'pattern': {
      const hint = typeof parent.patternErrorMessage === 'string' ? ` ${parent.patternErrorMessage}` : ` It must match ${String(params.pattern)}.`;
      return error('schema/pattern', `${where} has the wrong form: ${JSON.stringify(e.data)}.${hint}`);
    }
    case 'minLength':
    case 'maxLength': {
      const limit = Number(params.limit);
      const length = typeof e.data === 'string' ? e.data.length : 0;
      return error('schema/length', e.keyword === 'minLength'
        ? (limit === 1 ? `${where} must not be empty.` : `${where} must be at least ${limit} characters long; found ${length}.`)
        : `${where} must be at most ${limit} characters long; found ${length}.`);
    }
    case 'minItems':
    case 'maxItems': {
      const limit = Number(params.limit);
      const count = Array.isArray(e.data) ? e.data.length : 0;
      return error('schema/item-count', `${where} must have ${e.keyword === 'minItems' ? 'at least' : 'at most'} ${limit} item${limit === 1 ? '' : 's'}; found ${count}.`);
    }
    case 'minProperties':
    case 'maxProperties': {
      const limit = Number(params.limit);
      return error('schema/property-count', `${where} must have ${e.keyword === 'minProperties' ? 'at least' : 'at most'} ${limit} propert${limit === 1 ? 'y' : 'ies'}.`);
    }
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return error('schema/range', `${where} must be ${String(params.comparison)} ${String(params.limit)}; found ${JSON.stringify(e.data)}.`);
    case 'uniqueItems': {
      const first = Math.min(Number(params.i), Number(params.j)), second = Math.max(Number(params.i), Number(params.j));
      return error('schema/duplicate-item', `${where} repeats ${JSON.stringify((e.data as unknown[])[second])} (items ${first} and ${second}); each item must appear once.`, 'value', [...path, second]);
    }
    case 'anyOf':
    case 'oneOf':
      return error('schema/shape', custom ?? `${where} does not match any of the allowed forms.`);
    case 'not':
    case 'false schema':
      return error('schema/not-allowed', custom ?? `${where} is not allowed here.`, 'key');
    default:
      return error('schema/invalid', custom ?? `${where} is invalid: ${e.message ?? e.keyword}.`);
  }
}

function typeWords(type: string): string {
  switch (type) {
    case 'object': return 'an object';
    case 'array': return 'an array';
    case 'integer': return 'an integer';
    case 'null': return 'null';
    default: return `a ${type}`;
  }
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'number') return `number ${v}`;
  return `${typeof v} ${String(v)}`;
}

function showAllowed(v: unknown): string {
  return typeof v === 'string' ? (v === '' ? '""' : v) : JSON.stringify(v);
}

/**
 * First sentence of a property's description, to tell the user what the missing property is for. A `required`
 * in an `if`/`then` branch has no `properties` of its own, so the schemas enclosing it are searched outwards.
 */
function propertyDescription(rootSchema: unknown, schemaPath: string, name: string): string | undefined {
  const enclosing: unknown[] = [rootSchema];
  for (const raw of schemaPath.split('/').slice(1, -1)) {
    const parent = enclosing[enclosing.length - 1];
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    enclosing.push(Array.isArray(parent) ? parent[Number(segment)] : isObject(parent) ? parent[segment] : undefined);
  }
  for (const schema of enclosing.reverse()) {
    const prop = isObject(schema) && isObject(schema.properties) ? schema.properties[name] : undefined;
    if (!isObject(prop) || typeof prop.markdownDescription !== 'string') continue;
    const sentence = prop.markdownDescription.split(/(?<=[.;])\s/)[0].replace(/[.;]$/, '');
    // Lower-case the first word for the middle of a sentence, but keep acronyms (CRON, URL) as they are.
    return /^[A-Z][a-z]/.test(sentence) ? sentence.charAt(0).toLowerCase() + sentence.slice(1) : sentence;
  }
  return undefined;
}

/** A near miss among the allowed names (different case or a typo of at most two edits). */
function closest(actual: unknown, candidates: unknown[]): unknown {
  if (typeof actual !== 'string' || actual === '') return undefined;
  const names = candidates.filter((c): c is string => typeof c === 'string');
  return closestName(actual, names, Math.min(2, Math.floor(actual.length / 3)));
}
