// Quick fixes for diagnostics of the app: each turns the facts a diagnostic carries (its code, range and
// data) into a WorkspaceEdit. Edits to JSON go through jsonc-parser's `modify`, so they keep the file's
// formatting and comments.
import { modify, type EditResult, type JSONPath, type ModificationOptions } from 'jsonc-parser';
import path from 'node:path';
import {
  CodeActionKind, type CodeAction, type Diagnostic as LspDiagnostic, type Range, type TextDocumentEdit, type TextEdit, type WorkspaceEdit,
} from 'vscode-languageserver';
import { upperFirst } from '../../core/graphql/inflect';
import { isObject, JsonFile, type TextFile } from '../../core/json';
import { pathToUri } from '../convert';
import type { LoadedApp } from '../workspace';
import { indexOf } from './appIndex';
import { bsonTypeForPartitionType, partitionTypeForBsonType } from './shared';

export function codeActions(app: LoadedApp | undefined, file: JsonFile | TextFile, diagnostics: LspDiagnostic[]): CodeAction[] {
  if (!(file instanceof JsonFile)) return [];
  const actions: CodeAction[] = [];
  for (const diagnostic of diagnostics) {
    const data = isObject(diagnostic.data) ? diagnostic.data : {};
    const fix = (title: string, edit: WorkspaceEdit, isPreferred = false) => actions.push({ title, kind: CodeActionKind.QuickFix, diagnostics: [diagnostic], edit, ...(isPreferred ? { isPreferred } : {}) });
    switch (diagnostic.code) {
      case 'resolver/unknown-function': {
        const created = createResolverFunction(app, file, data);
        if (created) fix(`Create functions/${created.name}.js`, created.edit, true);
        break;
      }
      case 'graphql/invalid-custom-type':
      case 'schema/shape':
        for (const missing of missingTitles(app, file, diagnostic.range)) fix(`Add "title": "${missing.title}"`, editFile(file, formattedModify(file.text, missing.path, missing.title, { ...FORMAT, getInsertionIndex: () => 0 })), true);
        break;
      case 'sync/partition-type-mismatch': {
        const schemaType = typeof data.schemaType === 'string' ? data.schemaType : undefined;
        const partitionType = typeof data.partitionType === 'string' ? data.partitionType : undefined;
        const target = schemaType ? partitionTypeForBsonType(schemaType) : undefined;
        const syncFile = app?.model.sync?.file;
        if (target && syncFile) fix(`Set partition.type to "${target}" in sync/config.json`, editFile(syncFile, formattedModify(syncFile.text, ['partition', 'type'], target, FORMAT)));
        const bsonType = partitionType ? bsonTypeForPartitionType(partitionType) : undefined;
        const node = nodeAtRange(file, diagnostic.range);
        if (bsonType && node?.type === 'string') fix(`Change bsonType to "${bsonType}" to match partition.type`, replace(file, diagnostic.range, JSON.stringify(bsonType)));
        break;
      }
      case 'auth/jwk-uri-with-signing-keys':
        if (Array.isArray(data.path)) fix('Empty signingKeys: the JWK URI supplies the keys', editFile(file, formattedModify(file.text, data.path as JSONPath, [], FORMAT)), true);
        break;
      case 'rule/unknown-expansion':
      case 'rule/unknown-custom-data-field':
      case 'rule/unknown-operator':
      case 'rule/unknown-function':
        if (typeof data.suggestion === 'string') fix(`Change to '${data.suggestion}'`, replace(file, diagnostic.range, JSON.stringify(data.suggestion)), true);
        break;
      case 'rule/type-never-equal': {
        const text = neverEqualReplacement(data);
        if (text !== undefined && isRange(data.replaceRange)) fix(`Write ${data.suggestion as string}`, replace(file, data.replaceRange, text), true);
        break;
      }
      case 'schema/string-boolean': {
        const text = file.text.slice(file.offsetAt(diagnostic.range.start), file.offsetAt(diagnostic.range.end));
        if (text === '"true"' || text === '"false"') fix(`Write ${text.slice(1, -1)} without quotes`, replace(file, diagnostic.range, text.slice(1, -1)), true);
        break;
      }
      case 'json/trailing-comma':
        fix('Remove the trailing comma', replace(file, diagnostic.range, ''), true);
        break;
      case 'auth/name-type-mismatch':
        if (typeof data.expected === 'string') fix(`Set "name" to "${data.expected}"`, replace(file, diagnostic.range, JSON.stringify(data.expected)), true);
        break;
    }
  }
  // A missing title is reported by both the JSON Schema and GraphQL generation; offer its fix once.
  const seen = new Set<string>();
  return actions.filter((a) => {
    const key = a.title + JSON.stringify(a.edit);
    return !seen.has(key) && seen.add(key);
  });
}

const FORMAT = { formattingOptions: { insertSpaces: true, tabSize: 2, eol: '\n' } };

/**
 * jsonc-parser's formatter fails on some deeply indented one-line files (an off-by-one in its indent cache);
 * the edit is still right without formatting, so fall back to a plain one.
 */
function formattedModify(text: string, at: JSONPath, value: unknown, options: ModificationOptions): EditResult {
  try {
    return modify(text, at, value, options);
  } catch {
    return modify(text, at, value, { ...options, formattingOptions: undefined });
  }
}

function editFile(file: TextFile, edits: { offset: number; length: number; content: string }[]): WorkspaceEdit {
  const textEdits: TextEdit[] = edits.map((e) => ({ range: file.rangeOf(e.offset, e.length), newText: e.content }));
  return { changes: { [pathToUri(file.path)]: textEdits } };
}

function replace(file: TextFile, range: Range, newText: string): WorkspaceEdit {
  return { changes: { [pathToUri(file.path)]: [{ range, newText }] } };
}

function nodeAtRange(file: JsonFile, range: Range) {
  const offset = file.offsetAt(range.start);
  const search = (node: JsonFile['root']): JsonFile['root'] => {
    if (!node) return undefined;
    if (node.offset === offset && file.offsetAt(range.end) === node.offset + node.length) return node;
    for (const child of node.children ?? []) {
      if (offset >= child.offset && offset <= child.offset + child.length) {
        const found = search(child);
        if (found) return found;
      }
    }
    return undefined;
  };
  return search(file.root);
}

function isRange(value: unknown): value is Range {
  return isObject(value) && isObject(value.start) && isObject(value.end);
}

/**
 * The text replacing `replaceRange` of a `rule/type-never-equal` diagnostic. A suggestion that replaces a
 * whole property is an expression object; its entries become the property text.
 */
function neverEqualReplacement(data: Record<string, unknown>): string | undefined {
  if (typeof data.suggestion !== 'string') return undefined;
  if (data.replaces !== 'property') return data.suggestion;
  let parsed: unknown;
  try { parsed = JSON.parse(data.suggestion); } catch { return undefined; }
  if (!isObject(parsed)) return undefined;
  return Object.entries(parsed).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(', ');
}

// ---- resolver functions ----

function createResolverFunction(app: LoadedApp | undefined, file: JsonFile, data: Record<string, unknown>): { name: string; edit: WorkspaceEdit } | undefined {
  const config = isObject(file.value) ? file.value : {};
  const name = typeof data.functionName === 'string' ? data.functionName : typeof config.function_name === 'string' ? config.function_name : undefined;
  if (!name || name.split('/').some((segment) => segment === '' || segment === '..' || segment === '.')) return undefined;
  const hasInput = typeof data.hasInput === 'boolean' ? data.hasInput : typeof config.input_type_format === 'string' && config.input_type_format !== '' && config.input_type !== undefined;
  const onType = typeof config.on_type === 'string' ? config.on_type : '';
  const computed = typeof data.computed === 'boolean' ? data.computed : onType !== 'Query' && onType !== 'Mutation';
  const rootDir = app?.model.rootDir ?? file.path.slice(0, file.path.length - file.relPath.length);
  const target = path.join(rootDir, 'functions', ...`${name}.js`.split('/'));
  const field = typeof config.field_name === 'string' ? `${onType}.${config.field_name}` : onType;
  const uri = pathToUri(target);
  const edit: TextDocumentEdit = { textDocument: { uri, version: null }, edits: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: resolverSource(field, hasInput, computed) }] };
  return { name, edit: { documentChanges: [{ kind: 'create', uri, options: { ignoreIfExists: true } }, edit] } };
}

/** The resolver function's signature follows graphql.md §10.4: `(input, source)` with an input type, `(source)` without. */
function resolverSource(field: string, hasInput: boolean, computed: boolean): string {
  const source = computed ? 'the parent document this field is computed on' : 'undefined for Query and Mutation fields';
  const lines = [
    `// Resolves ${field}.`,
    ...(hasInput ? ['// input: the value of the field\'s "input" argument.'] : []),
    `// source: ${source}.`,
    `exports = async function (${hasInput ? 'input, source' : 'source'}) {`,
    '  // The return value must match the field\'s payload type.',
    '  return null;',
    '};',
    '',
  ];
  return lines.join('\n');
}

// ---- custom type titles ----

interface MissingTitle { path: JSONPath; title: string }

/** Custom input/payload schemas of a resolver file that have no title, where the diagnostic points into them. */
function missingTitles(app: LoadedApp | undefined, file: JsonFile, range: Range): MissingTitle[] {
  const config = file.value;
  if (!isObject(config)) return [];
  const offset = file.offsetAt(range.start);
  const taken = new Set<string>();
  const exists = (name: string) => taken.has(name) || !!(app && indexOf(app).generated.schema.getType(name));
  const fieldName = typeof config.field_name === 'string' && config.field_name !== '' ? upperFirst(config.field_name) : 'Custom';
  const result: MissingTitle[] = [];
  for (const side of ['input', 'payload'] as const) {
    const key = `${side}_type`;
    const schema = config[key];
    const value = file.nodeAt([key]);
    // The diagnostic may sit on the key (a missing title is reported at the enclosing property).
    const node = value?.parent?.type === 'property' ? value.parent : value;
    if (config[`${key}_format`] !== 'custom' || !isObject(schema) || !node || offset < node.offset || offset > node.offset + node.length) continue;
    const isArray = schema.bsonType === 'array' || schema.type === 'array';
    const items = isArray && isObject(schema.items) ? schema.items : undefined;
    if (typeof schema.title === 'string' && schema.title !== '') continue;
    if (items && typeof items.title === 'string' && items.title !== '') continue;
    const base = `${fieldName}${side === 'input' ? 'Input' : 'Payload'}`;
    let title = base;
    for (let n = 2; exists(title); n++) title = `${base}${n}`;
    taken.add(title);
    result.push({ path: items ? [key, 'items', 'title'] : [key, 'title'], title });
  }
  return result;
}
