// Completion in config files: rule expressions (expansions, members, custom data fields, operators,
// function names), names that must exist elsewhere in the app (functions, types, secrets, partition key
// fields), and every key and enum value the bundled JSON Schemas document.
import { CompletionItemKind, InsertTextFormat, MarkupKind, type CompletionItem, type CompletionList, type Position, type Range } from 'vscode-languageserver';
import { isObject, JsonFile, type TextFile } from '../../core/json';
import type { JSONPath } from 'jsonc-parser';
import { completionsAt, type RuleCompletion } from '../../core/rules';
import type { LoadedApp } from '../workspace';
import { declaredBsonTypes, indexOf, schemaProperties, type AppIndex } from './appIndex';
import { documentContextAt, type DocumentContext } from './documentContext';
import { keysAt, valuesAt } from './schemaDocs';
import { BSON_SCALARS, PARTITION_TYPE_DOCS, partitionTypeForBsonType, sdlMarkdown } from './shared';

export interface CompletionOptions {
  /** Offer the bundled JSON Schemas' keys and enum values (off when the editor already shows them). */
  schemaDocumentation: boolean;
}

/** A candidate before it is placed in the document. */
interface Candidate {
  label: string;
  kind: CompletionItemKind;
  detail?: string;
  documentation?: string;
  /** The JSON value to write; strings are quoted unless the cursor is already inside a string. */
  value: unknown;
  preselect?: boolean;
}

const FUNCTION_NAME_KEYS = new Set(['function_name', 'confirmationFunctionName', 'resetFunctionName', 'authFunctionName', 'on_user_creation_function_name']);

export function completion(app: LoadedApp | undefined, file: JsonFile | TextFile, position: Position, options: CompletionOptions = { schemaDocumentation: true }): CompletionList {
  if (!(file instanceof JsonFile)) return { isIncomplete: false, items: [] };
  const ctx = documentContextAt(file, position);
  const index = app ? indexOf(app) : undefined;
  if (ctx.expression) return list(ctx, ruleCandidates(ctx, index));
  const candidates = ctx.target === 'key' ? keyCandidates(ctx, options) : [...semanticValueCandidates(ctx, app, index), ...(options.schemaDocumentation ? schemaValueCandidates(ctx) : [])];
  return list(ctx, dedupe(candidates));
}

function list(ctx: DocumentContext, candidates: Candidate[]): CompletionList {
  return { isIncomplete: false, items: candidates.map((c) => toItem(ctx, c)) };
}

function dedupe(candidates: Candidate[]): Candidate[] {
  const seen = new Set<string>();
  return candidates.filter((c) => !seen.has(c.label) && seen.add(c.label));
}

// ---- rule expressions ----

function ruleCandidates(ctx: DocumentContext, index: AppIndex | undefined): Candidate[] {
  const facts = index?.facts ?? {};
  const { context } = ctx.expression!;
  const prefix = ctx.string?.prefix ?? '';
  const last = ctx.path[ctx.path.length - 1];
  const parentKey = ctx.path[ctx.path.length - 2];
  if (ctx.target === 'key' && parentKey === '%function') {
    return [
      { label: 'name', kind: CompletionItemKind.Property, value: 'name', documentation: 'The function to call.' },
      { label: 'arguments', kind: CompletionItemKind.Property, value: 'arguments', documentation: 'The arguments passed to the function: literals or expansions.' },
    ];
  }
  if (ctx.target === 'value' && parentKey === '%function' && last === 'name') return functionCandidates(index);
  const fromRules = (p: string) => completionsAt(p, facts, context);
  let found: RuleCompletion[];
  if (ctx.target === 'key') found = prefix === '' ? [...fromRules('%'), ...fromRules('$')] : fromRules(prefix);
  else found = fromRules(prefix.startsWith('%') ? prefix : '%%').filter((c) => c.kind !== 'operator');
  return found.map((c) => ({
    label: c.label, value: c.label, detail: c.detail, documentation: c.documentation,
    kind: c.kind === 'operator' ? CompletionItemKind.Operator : c.kind === 'expansion' ? CompletionItemKind.Variable : CompletionItemKind.Field,
  }));
}

// ---- values that name something in the app ----

function semanticValueCandidates(ctx: DocumentContext, app: LoadedApp | undefined, index: AppIndex | undefined): Candidate[] {
  if (!app || !index) return [];
  const path = ctx.path;
  const last = path[path.length - 1];
  const document = ctx.file.value;
  switch (ctx.kind) {
    case 'graphql-custom-resolver':
      return resolverValueCandidates(path, document, index);
    case 'sync-config':
      if (path.length === 2 && path[0] === 'partition' && last === 'key') return partitionKeyCandidates(index);
      if (path.length === 2 && path[0] === 'partition' && last === 'type') return partitionTypeCandidates(index, isObject(document) && isObject(document.partition) ? document.partition.key : undefined);
      if (path.length === 1 && last === 'service_name') return dataSourceCandidates(app);
      return [];
    case 'auth-providers':
      if (path[1] === 'secret_config' && path.length >= 3) return index.secretNames.map((name) => secretCandidate(app, name));
      if (typeof last === 'string' && FUNCTION_NAME_KEYS.has(last)) return functionCandidates(index);
      return [];
    case 'custom-user-data':
      if (last === 'on_user_creation_function_name') return functionCandidates(index);
      if (last === 'mongo_service_name') return dataSourceCandidates(app);
      return [];
    case 'trigger':
    case 'endpoints-config':
      return last === 'function_name' ? functionCandidates(index) : [];
    case 'collection-schema':
      return requiredCandidates(path, document);
    default:
      return [];
  }
}

function resolverValueCandidates(path: JSONPath, document: unknown, index: AppIndex): Candidate[] {
  const [first] = path;
  const value = isObject(document) ? document : {};
  const { generated } = index;
  if (path.length === 1 && first === 'on_type') {
    return [
      { label: 'Query', kind: CompletionItemKind.Class, value: 'Query', detail: 'root query field', documentation: 'The resolver adds a field to `type Query`.' },
      { label: 'Mutation', kind: CompletionItemKind.Class, value: 'Mutation', detail: 'root mutation field', documentation: 'The resolver adds a field to `type Mutation`.' },
      ...generated.types.map((t) => ({
        label: t.typeName, kind: CompletionItemKind.Class, value: t.typeName, detail: `computed field on ${t.database}.${t.collection}`,
        documentation: sdlMarkdown(generated, t.typeName),
      })),
    ];
  }
  if (path.length === 1 && first === 'function_name') return functionCandidates(index);
  if (path.length === 1 && (first === 'input_type' || first === 'payload_type')) {
    const side = first === 'input_type' ? 'input' : 'payload';
    const format = value[`${side}_type_format`];
    if (format === 'scalar' || format === 'scalar-list') {
      return BSON_SCALARS.map(([bsonType, scalar]) => ({ label: bsonType, kind: CompletionItemKind.TypeParameter, value: bsonType, detail: `GraphQL ${format === 'scalar' ? scalar : `[${scalar}]`}` }));
    }
    if (format === 'generated' || format === 'generated-list') {
      const documentTypes = new Set(generated.types.map((t) => t.typeName));
      const names = side === 'input' ? generated.generatedTypeNames.input : generated.generatedTypeNames.output;
      return names.map((name) => ({
        label: name, kind: CompletionItemKind.Class, value: name, detail: documentTypes.has(name) ? 'document type' : side === 'input' ? 'generated input type' : 'generated type',
        documentation: sdlMarkdown(generated, name), preselect: documentTypes.has(name) && side === 'payload',
      }));
    }
    return [];
  }
  return requiredCandidates(path, document);
}

/** Inside `"required": [...]` of an object schema: its property names not listed yet. */
function requiredCandidates(path: JSONPath, document: unknown): Candidate[] {
  if (path.length < 2 || path[path.length - 2] !== 'required' || typeof path[path.length - 1] !== 'number') return [];
  let schema: unknown = document;
  for (const segment of path.slice(0, -2)) schema = isObject(schema) ? schema[segment as string] : Array.isArray(schema) ? schema[segment as number] : undefined;
  if (!isObject(schema) || !isObject(schema.properties)) return [];
  const listed = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.keys(schema.properties).filter((name) => !listed.has(name)).map((name) => ({ label: name, kind: CompletionItemKind.Field, value: name, detail: 'property of this schema' }));
}

function functionCandidates(index: AppIndex | undefined): Candidate[] {
  return (index?.functionNames ?? []).map((name) => ({ label: name, kind: CompletionItemKind.Function, value: name, detail: `function functions/${name}.js` }));
}

function dataSourceCandidates(app: LoadedApp): Candidate[] {
  return app.model.dataSources.map((d) => ({ label: d.name, kind: CompletionItemKind.Module, value: d.name, detail: `data source (${d.type || 'no type'})` }));
}

function secretCandidate(app: LoadedApp, name: string): Candidate {
  const local = app.model.secretsFile && isObject(app.model.secretsFile.value) && name in app.model.secretsFile.value;
  return {
    label: name, kind: CompletionItemKind.Constant, value: name, detail: local ? 'secret (local value in secrets.json)' : 'secret (no local value)',
    documentation: local ? undefined : `Supply a local value in secrets.json at the app root (\`{"${name}": "..."}\`) or with \`asl serve --secret ${name}=...\`.`,
  };
}

/** Fields every synced schema has; the partition key must be one of them. */
function partitionKeyCandidates(index: AppIndex): Candidate[] {
  const schemas = index.syncedSchemas;
  if (!schemas.length) return [];
  const common = Object.keys(schemaProperties(schemas[0])).filter((name) => schemas.every((c) => Object.hasOwn(schemaProperties(c), name)));
  return common.map((name) => {
    const types = [...new Set(schemas.flatMap((c) => declaredBsonTypes(schemaProperties(c)[name])))];
    return { label: name, kind: CompletionItemKind.Field, value: name, detail: `in all ${schemas.length} synced schemas (${types.join('/') || 'no bsonType'})` };
  });
}

function partitionTypeCandidates(index: AppIndex, key: unknown): Candidate[] {
  const types = typeof key === 'string' ? new Set(index.syncedSchemas.flatMap((c) => declaredBsonTypes(schemaProperties(c)[key])).map(partitionTypeForBsonType)) : new Set<string | undefined>();
  return Object.entries(PARTITION_TYPE_DOCS).map(([type, documentation]) => ({
    label: type, kind: CompletionItemKind.EnumMember, value: type, documentation,
    detail: types.has(type) ? `matches the schemas' "${String(key)}"` : undefined, preselect: types.size === 1 && types.has(type),
  }));
}

// ---- the bundled JSON Schemas ----

function keyCandidates(ctx: DocumentContext, options: CompletionOptions): Candidate[] {
  if (!options.schemaDocumentation) return [];
  const objectPath = ctx.path.slice(0, -1);
  let existing: unknown = ctx.file.value;
  for (const segment of objectPath) existing = isObject(existing) ? existing[segment as string] : Array.isArray(existing) ? existing[segment as number] : undefined;
  const typing = ctx.path[ctx.path.length - 1];
  const present = new Set(isObject(existing) ? Object.keys(existing).filter((k) => k !== typing) : []);
  return keysAt(ctx.kind, ctx.file.value, objectPath).filter((k) => !present.has(k.name)).map((k) => ({
    label: k.name, kind: CompletionItemKind.Property, value: k.name, documentation: k.documentation, detail: typeLabel(k.schema),
  }));
}

function schemaValueCandidates(ctx: DocumentContext): Candidate[] {
  return valuesAt(ctx.kind, ctx.file.value, ctx.path).map((v) => ({
    label: typeof v.value === 'string' ? v.value : JSON.stringify(v.value), kind: CompletionItemKind.EnumMember, value: v.value, documentation: v.documentation,
  }));
}

function typeLabel(schema: Record<string, unknown>): string | undefined {
  const type = schema.type;
  return typeof type === 'string' ? type : Array.isArray(type) ? type.join(' | ') : undefined;
}

// ---- placing a candidate in the document ----

function toItem(ctx: DocumentContext, c: Candidate): CompletionItem {
  const item: CompletionItem = { label: c.label, kind: c.kind };
  if (c.detail) item.detail = c.detail;
  if (c.documentation) item.documentation = { kind: MarkupKind.Markdown, value: c.documentation };
  if (c.preselect) item.preselect = true;
  const cursor = ctx.file.positionAt(ctx.offset);
  const here: Range = { start: cursor, end: cursor };
  if (ctx.target === 'key') {
    const name = String(c.value);
    if (ctx.string) {
      // Inside a key that already has its colon, only the name changes.
      const after = ctx.file.text.slice(ctx.file.offsetAt(ctx.string.tokenRange.end));
      if (/^\s*:/.test(after)) item.textEdit = { range: ctx.string.contentRange, newText: escapeJson(name) };
      else { item.textEdit = { range: ctx.string.tokenRange, newText: `"${escapeJson(name)}": ` }; item.filterText = `"${name}"`; }
    } else item.textEdit = { range: here, newText: `"${escapeJson(name)}": ` };
    return item;
  }
  if (ctx.string && typeof c.value === 'string') {
    item.textEdit = { range: ctx.string.contentRange, newText: escapeJson(c.value) };
  } else {
    const text = JSON.stringify(c.value);
    item.textEdit = { range: ctx.string ? ctx.string.tokenRange : here, newText: text };
    item.filterText = ctx.string ? `"${c.label}` : c.label;
  }
  item.insertTextFormat = InsertTextFormat.PlainText;
  return item;
}

function escapeJson(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}
