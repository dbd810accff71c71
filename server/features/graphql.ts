// GraphQL language features against the app's generated schema, for `.graphql`/`.gql` files and for the
// GraphQL templates of JavaScript/TypeScript files (core/graphql/embedded.ts finds them and maps positions).
// graphql-language-service does the GraphQL work; this module maps positions and adds what only we know:
// which collection property or resolver config a field comes from.
import {
  getAutocompleteSuggestions, getContextAtPosition, getHoverInformation, Position as GlsPosition, validateWithCustomRules,
  type CompletionItem as GlsCompletionItem,
} from 'graphql-language-service';
import {
  getNamedType, Kind, NoDeprecatedCustomRule, TokenKind, validate, type GraphQLError,
  type DefinitionNode, type DocumentNode, type ExecutableDefinitionNode, type FragmentDefinitionNode, type GraphQLSchema, type Location as Location_,
  type SelectionSetNode,
} from 'graphql';
import {
  CompletionItemKind, DiagnosticSeverity, MarkupKind, SymbolKind,
  type CompletionItem, type Diagnostic, type DocumentSymbol, type Hover, type Location, type Position, type Range,
} from 'vscode-languageserver';
import {
  definitionOffsetToDocument, definitionPositionToDocument, documentPositionToFile, filePositionToDocument, findGraphqlDocuments,
  graphqlDefinitionSpans, graphqlHostOf, type EmbeddedGraphqlDocument, type GraphqlDefinition,
} from '../../core/graphql/embedded';
import type { CollectionTypeInfo, GeneratedResolver, GeneratedSchema, ObjectTypeInfo } from '../../core/graphql';
import type { JSONPath, JsonFile } from '../../core/json';
import { pathToUri } from '../convert';
import type { LoadedApp } from '../workspace';
import { indexOf } from './appIndex';
import type { WorkspaceFragment } from './graphqlFragments';

export const GRAPHQL_DIAGNOSTIC_SOURCE = 'asl graphql';

/** Whether a file can hold GraphQL our features serve. */
export function holdsGraphql(fileName: string): boolean {
  return graphqlHostOf(fileName) !== undefined;
}

/** The GraphQL documents of a file's text, kept for the last text of each file (requests repeat on one version). */
export class GraphqlDocuments {
  private readonly cache = new Map<string, { text: string; documents: EmbeddedGraphqlDocument[] }>();

  of(fileName: string, text: string): EmbeddedGraphqlDocument[] {
    const hit = this.cache.get(fileName);
    if (hit && hit.text === text) return hit.documents;
    const documents = findGraphqlDocuments(fileName, text);
    this.cache.set(fileName, { text, documents });
    return documents;
  }

  forget(fileName: string): void { this.cache.delete(fileName); }
}

/**
 * graphql-js validation of every document against the schema (graphql-language-service's rules), or its syntax
 * error. Each operation or fragment is validated with the fragments it spreads, and the result is kept by
 * their text: an edit revalidates only the definitions it changed (results move with their definition).
 */
export function graphqlDiagnostics(schema: GraphQLSchema, documents: EmbeddedGraphqlDocument[], workspace: WorkspaceFragment[] = []): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const document of documents) {
    // A schema file (such as the one "Write GraphQL Schema for Other Tools" writes) is not a set of queries.
    if (document.definitions.some((d) => !isExecutable(d.node))) continue;
    const found = document.syntaxError
      ? [syntaxProblem(document.text, document.syntaxError.offset - document.start, document.syntaxError.message)]
      : validateDefinitions(schema, document.definitions, externalFragments(documents, document, workspace));
    for (const d of found) {
      out.push({ range: toFileRange(document, d.range), severity: d.severity as DiagnosticSeverity, source: GRAPHQL_DIAGNOSTIC_SOURCE, message: d.message });
    }
  }
  return out;
}

interface FoundProblem { range: { start: Position; end: Position }; message: string; severity: number }

/** A syntax error at the token it names; at the end of the text, at its last character. */
function syntaxProblem(text: string, offset: number, message: string): FoundProblem {
  let at = offset;
  let length = 1;
  if (!text.slice(at).trim()) at = Math.max(0, text.trimEnd().length - 1);
  else {
    const token = /[_A-Za-z][_0-9A-Za-z]*|-?\d[\w.+-]*|"(?:[^"\\\n]|\\.)*"?|\.\.\.|\S/y;
    token.lastIndex = at;
    length = token.exec(text)?.[0].length ?? 1;
  }
  const start = offsetToPosition(text, at);
  return { message, severity: DiagnosticSeverity.Error, range: { start, end: { line: start.line, character: start.character + length } } };
}

/**
 * Per schema: problems of a definition (with its fragments), positions relative to the definition's start.
 * Emptied when it holds too many entries or too many characters of keys.
 */
const validationCache = new WeakMap<GraphQLSchema, { entries: Map<string, FoundProblem[]>; characters: number }>();
const VALIDATION_CACHE_LIMIT = 20000;
const VALIDATION_CACHE_CHARACTERS = 16 * 1024 * 1024;

function validateDefinitions(schema: GraphQLSchema, definitions: GraphqlDefinition[], external: FragmentDefinitionNode[]): FoundProblem[] {
  let cache = validationCache.get(schema);
  if (!cache || cache.entries.size > VALIDATION_CACHE_LIMIT || cache.characters > VALIDATION_CACHE_CHARACTERS) {
    validationCache.set(schema, (cache = { entries: new Map(), characters: 0 }));
  }
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const f of external) fragments.set(f.name.value, f);
  for (const { node } of definitions) if (isFragment(node)) fragments.set(node.name.value, node);
  const out: FoundProblem[] = [];
  for (const definition of definitions) {
    const def = definition.node;
    if (!isExecutable(def) || !def.loc) continue;
    const parts: ExecutableDefinitionNode[] = [def, ...spreadFragments(def, fragments)];
    const key = parts.map((p) => p.loc ? p.loc.source.body.slice(p.loc.start, p.loc.end) : '').join('\u0000');
    let relative = cache.entries.get(key);
    if (!relative) {
      cache.entries.set(key, (relative = validateDocument(schema, { kind: Kind.DOCUMENT, definitions: parts }, def.loc)));
      cache.characters += key.length;
    }
    const origin = definitionPositionToDocument(definition, def.loc.startToken.line, def.loc.startToken.column);
    for (const d of relative) out.push({ ...d, range: shiftRange(d.range, origin) });
  }
  out.push(...crossDefinitionProblems(definitions));
  const seen = new Set<string>();
  return out.filter((d) => {
    const id = `${d.range.start.line}:${d.range.start.character}:${d.message}`;
    return !seen.has(id) && !!seen.add(id);
  });
}

/**
 * graphql-language-service's rules (validation errors, deprecation warnings), each at the name of the node
 * concerned, for the nodes inside `owner` (problems inside spread fragments are reported with the fragments
 * themselves); positions relative to the owner's first token.
 */
function validateDocument(schema: GraphQLSchema, ast: DocumentNode, owner: Location_): FoundProblem[] {
  const out: FoundProblem[] = [];
  const relative = (line: number, column: number): Position => line === owner.startToken.line
    ? { line: 0, character: column - owner.startToken.column }
    : { line: line - owner.startToken.line, character: column - 1 };
  const annotate = (errors: readonly GraphQLError[], severity: DiagnosticSeverity) => {
    for (const error of errors) {
      for (const node of error.nodes ?? []) {
        const highlighted = node.kind !== Kind.VARIABLE && 'name' in node && node.name ? node.name
          : 'variable' in node && node.variable ? node.variable : node;
        const loc = highlighted.loc;
        if (!loc || loc.source !== owner.source || loc.start < owner.start || loc.end > owner.end) continue;
        const start = relative(loc.startToken.line, loc.startToken.column);
        const end = loc.startToken.line === loc.endToken.line
          ? { line: start.line, character: start.character + (loc.end - loc.start) }
          : relative(loc.endToken.line, loc.endToken.column + (loc.endToken.end - loc.endToken.start));
        out.push({ message: error.message, severity, range: { start, end } });
      }
    }
  };
  annotate(validateWithCustomRules(schema, ast), DiagnosticSeverity.Error);
  annotate(validate(schema, ast, [NoDeprecatedCustomRule]), DiagnosticSeverity.Warning);
  return out;
}

/** The fragments a definition spreads, directly or through other fragments (the known ones). */
function spreadFragments(def: ExecutableDefinitionNode, fragments: Map<string, FragmentDefinitionNode>): FragmentDefinitionNode[] {
  const out: FragmentDefinitionNode[] = [];
  const seen = new Set<string>(isFragment(def) ? [def.name.value] : []);
  const walk = (set: SelectionSetNode | undefined) => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (seen.has(name) || !fragment) continue;
        seen.add(name);
        out.push(fragment);
        walk(fragment.selectionSet);
      } else {
        walk(selection.selectionSet);
      }
    }
  };
  walk(def.selectionSet);
  return out;
}

/** The rules about the whole document, which per-definition validation cannot see: names unique, a lone anonymous operation. */
function crossDefinitionProblems(definitions: GraphqlDefinition[]): FoundProblem[] {
  const out: FoundProblem[] = [];
  const at = (definition: GraphqlDefinition, loc: Location_ | undefined, length: number, message: string) => {
    if (!loc) return;
    const start = definitionPositionToDocument(definition, loc.startToken.line, loc.startToken.column);
    out.push({ message, severity: DiagnosticSeverity.Error, range: { start, end: { line: start.line, character: start.character + length } } });
  };
  const counted = (kind: Kind.OPERATION_DEFINITION | Kind.FRAGMENT_DEFINITION, message: (name: string) => string) => {
    const named = definitions.flatMap((definition) => {
      const node = definition.node;
      return node.kind === kind && node.name ? [{ definition, name: node.name }] : [];
    });
    const byName = new Map<string, number>();
    for (const { name } of named) byName.set(name.value, (byName.get(name.value) ?? 0) + 1);
    for (const { definition, name } of named) {
      if ((byName.get(name.value) ?? 0) > 1 && name.loc) at(definition, name.loc, name.loc.end - name.loc.start, message(name.value));
    }
  };
  counted(Kind.OPERATION_DEFINITION, (name) => `There can be only one operation named "${name}".`);
  counted(Kind.FRAGMENT_DEFINITION, (name) => `There can be only one fragment named "${name}".`);
  const operations = definitions.filter((d) => d.node.kind === Kind.OPERATION_DEFINITION);
  if (operations.length > 1) {
    for (const definition of operations) {
      const { node } = definition;
      if (node.kind !== Kind.OPERATION_DEFINITION || node.name || !node.loc) continue;
      const length = node.loc.startToken.kind === TokenKind.BRACE_L ? 1 : node.loc.end - node.loc.start;
      at(definition, node.loc, length, 'This anonymous operation must be the only defined operation.');
    }
  }
  return out;
}

/** A range relative to a definition's start, moved to the definition's document position. */
function shiftRange(range: { start: Position; end: Position }, origin: Position): { start: Position; end: Position } {
  const shift = (p: Position): Position => p.line === 0 ? { line: origin.line, character: p.character + origin.character } : { line: p.line + origin.line, character: p.character };
  return { start: shift(range.start), end: shift(range.end) };
}

export function graphqlCompletion(schema: GraphQLSchema, documents: EmbeddedGraphqlDocument[], position: Position, workspace: WorkspaceFragment[] = []): CompletionItem[] | null {
  const located = locate(documents, position);
  if (!located) return null;
  const { document, at } = located;
  const own = document.definitions.map((d) => d.node).filter(isFragment);
  const names = new Set(own.map((f) => f.name.value));
  // One suggestion per name: the nearest definition (this document, this file, another file).
  const fragments = [...own, ...externalFragments(documents, document, workspace).reverse().filter((f) => !names.has(f.name.value) && !!names.add(f.name.value))];
  const definition = definitionAt(document, at);
  const items = getAutocompleteSuggestions(schema, definition.text, definition.at, undefined, fragments);
  return items.map((item) => toCompletionItem(item));
}

export function graphqlHover(app: LoadedApp, documents: EmbeddedGraphqlDocument[], position: Position): Hover | null {
  const located = locate(documents, position);
  if (!located) return null;
  const { generated } = indexOf(app);
  const { document, at } = located;
  const parts: string[] = [];
  const definition = definitionAt(document, at);
  const described = getHoverInformation(generated.schema, definition.text, definition.at, undefined, { useMarkdown: true });
  if (typeof described === 'string' && described) parts.push(described);
  const field = fieldAt(generated.schema, document, at);
  if (field) {
    const resolver = generated.resolvers.find((r) => r.parent === field.parent && r.fieldName === field.name);
    if (resolver) parts.push(resolverDescription(app, resolver));
    else {
      const source = generatedFieldSource(generated, field.parent, field.name);
      if (source) parts.push(`From ${source.what} in \`${relative(app, source.collection.schemaPath)}\`.`);
    }
  }
  if (!parts.length) return null;
  return { contents: { kind: MarkupKind.Markdown, value: parts.join('\n\n---\n\n') } };
}

/** A field → where it is defined in the app's files; a fragment spread → its definition, in this file or another. */
export function graphqlDefinition(app: LoadedApp | undefined, documents: EmbeddedGraphqlDocument[], position: Position, fileUri: string,
  workspace: WorkspaceFragment[] = []): Location[] | null {
  const located = locate(documents, position);
  if (!located) return null;
  const { document, at } = located;
  const fragmentName = fragmentSpreadAt(document, at);
  if (fragmentName !== undefined) {
    for (const d of documents) {
      const fragment = d.fragments.find((f) => f.name === fragmentName);
      if (fragment) return [{ uri: fileUri, range: fragment.nameRange }];
    }
    const elsewhere = workspace.filter((f) => f.node.name.value === fragmentName);
    return elsewhere.length ? elsewhere.map((f) => ({ uri: pathToUri(f.file), range: f.nameRange })) : null;
  }
  if (!app) return null;
  const { generated } = indexOf(app);
  const field = fieldAt(generated.schema, document, at);
  if (!field) return null;
  const resolver = generated.resolvers.find((r) => r.parent === field.parent && r.fieldName === field.name);
  if (resolver) return [jsonLocation(resolver.config.file, ['field_name'])];
  const source = generatedFieldSource(generated, field.parent, field.name);
  const schemaFile = source && app.model.files.get(source.collection.schemaPath);
  if (!source || !schemaFile || !('range' in schemaFile)) return null;
  return [jsonLocation(schemaFile as JsonFile, source.path, source.path.length ? 'key' : 'value')];
}

/** Operations and fragments with their selected fields as children. */
export function graphqlSymbols(documents: EmbeddedGraphqlDocument[]): DocumentSymbol[] {
  const out: DocumentSymbol[] = [];
  for (const document of documents) {
    const byStart = new Map<number, { definition: GraphqlDefinition; set: SelectionSetNode }>();
    for (const definition of document.definitions) {
      const def = definition.node;
      if (isExecutable(def) && def.loc) byStart.set(document.start + definitionOffsetToDocument(definition, def.loc.start), { definition, set: def.selectionSet });
    }
    const children = (start: number) => {
      const found = byStart.get(start);
      return found ? selectionSymbols(document, found.definition, found.set) : [];
    };
    for (const op of document.operations) {
      out.push({
        name: op.name ?? `(anonymous ${op.kind})`, detail: op.kind, kind: SymbolKind.Function,
        range: op.range, selectionRange: op.nameRange, children: children(op.start),
      });
    }
    for (const fragment of document.fragments) {
      out.push({
        name: fragment.name, detail: `fragment on ${fragment.typeCondition}`, kind: SymbolKind.Class,
        range: fragment.range, selectionRange: fragment.nameRange, children: children(fragment.start),
      });
    }
  }
  return out.sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
}

function selectionSymbols(document: EmbeddedGraphqlDocument, definition: GraphqlDefinition, set: SelectionSetNode | undefined): DocumentSymbol[] {
  const out: DocumentSymbol[] = [];
  for (const selection of set?.selections ?? []) {
    if (selection.kind !== Kind.FIELD || !selection.loc) continue;
    const name = selection.alias ? `${selection.alias.value}: ${selection.name.value}` : selection.name.value;
    out.push({
      name, kind: SymbolKind.Field,
      range: locRange(document, definition, selection.loc),
      selectionRange: locRange(document, definition, selection.name.loc!),
      children: selectionSymbols(document, definition, selection.selectionSet),
    });
  }
  return out;
}

/** The file range of a node's location, from its first token's start to its last token's end. */
function locRange(document: EmbeddedGraphqlDocument, definition: GraphqlDefinition, loc: Location_): Range {
  const { startToken, endToken } = loc;
  const start = definitionPositionToDocument(definition, startToken.line, startToken.column);
  const endColumn = endToken.column + (endToken.end - endToken.start);
  const end = endToken.kind === TokenKind.BLOCK_STRING && endToken.value.includes('\n')
    ? offsetToPosition(document.text, definitionOffsetToDocument(definition, endToken.end))
    : definitionPositionToDocument(definition, endToken.line, endColumn);
  return { start: documentPositionToFile(document, start), end: documentPositionToFile(document, end) };
}

function offsetToPosition(text: string, offset: number): Position {
  let line = 0, lineStart = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, character: offset - lineStart };
}

function resolverDescription(app: LoadedApp, resolver: GeneratedResolver): string {
  const fn = app.model.functions.get(resolver.functionName);
  const lines = [
    `**Custom resolver** \`${resolver.parent}.${resolver.fieldName}\``,
    `- function: \`${resolver.functionName}\`${fn?.sourceFile ? ` (\`${relative(app, fn.sourceFile.path)}\`)` : fn ? '' : ' (no such function)'}`,
    `- input: ${formatDescription(resolver.config.inputTypeFormat, resolver.hasInput ? resolver.inputTypeName : undefined)}`,
    `- payload: ${formatDescription(resolver.config.payloadTypeFormat, resolver.payload.isList ? `[${resolver.payload.typeName}]` : resolver.payload.typeName)}`,
    `- config: \`${relative(app, resolver.config.file.path)}\``,
  ];
  return lines.join('\n');
}

function formatDescription(format: string, typeName: string | undefined): string {
  if (!typeName) return 'none';
  return `${format ? `\`${format}\`` : 'default'} → \`${typeName}\``;
}

interface FieldSource { collection: CollectionTypeInfo; path: JSONPath; what: string }

/** The collection schema property (or the collection itself, for root fields) a generated field comes from. */
function generatedFieldSource(generated: GeneratedSchema, parent: string, fieldName: string): FieldSource | undefined {
  if (parent === 'Query' || parent === 'Mutation') {
    const collection = generated.types.find((t) => t.singularField === fieldName || t.pluralField === fieldName || Object.values(t.mutations).includes(fieldName));
    return collection && { collection, path: [], what: `the collection \`${collection.database}.${collection.collection}\`` };
  }
  for (const collection of generated.types) {
    const found = findInObjectType(collection, parent, fieldName, []);
    if (found) return { collection, path: found, what: `the property \`${found.filter((p) => p !== 'properties' && p !== 'items').join('.')}\`` };
  }
  return undefined;
}

function findInObjectType(type: ObjectTypeInfo, parent: string, fieldName: string, path: JSONPath): JSONPath | undefined {
  for (const field of type.fields) {
    const fieldPath = [...path, 'properties', field.sourceKey];
    if (type.typeName === parent && field.name === fieldName) return fieldPath;
    if (field.embedded) {
      const found = findInObjectType(field.embedded, parent, fieldName, field.isList ? [...fieldPath, 'items'] : fieldPath);
      if (found) return found;
    }
  }
  return undefined;
}

function jsonLocation(file: JsonFile, path: JSONPath, target: 'key' | 'value' = 'value'): Location {
  return { uri: pathToUri(file.path), range: file.range(path, target) };
}

function relative(app: LoadedApp, file: string): string {
  return file.startsWith(app.model.rootDir) ? file.slice(app.model.rootDir.length + 1).split('\\').join('/') : file;
}

/** The field under the cursor: its parent type and name, by graphql-language-service's online parser. */
function fieldAt(schema: GraphQLSchema, document: EmbeddedGraphqlDocument, at: GlsPosition): { parent: string; name: string } | undefined {
  const definition = definitionAt(document, at);
  const context = getContextAtPosition(definition.text, definition.at, schema);
  if (!context) return undefined;
  const { token, typeInfo } = context;
  const kind = token.state.kind;
  if ((kind !== 'Field' && kind !== 'AliasedField') || token.style !== 'property') return undefined;
  if (!typeInfo.fieldDef || !typeInfo.parentType) return undefined;
  return { parent: getNamedType(typeInfo.parentType).name, name: typeInfo.fieldDef.name };
}

function fragmentSpreadAt(document: EmbeddedGraphqlDocument, at: GlsPosition): string | undefined {
  const offset = positionToOffset(document.text, at);
  for (const match of document.text.matchAll(/\.\.\.\s*([_A-Za-z][_0-9A-Za-z]*)/g)) {
    const nameStart = match.index! + match[0].length - match[1].length;
    if (match[1] !== 'on' && offset >= match.index! && offset <= nameStart + match[1].length) return match[1];
  }
  return undefined;
}

function positionToOffset(text: string, position: { line: number; character: number }): number {
  let offset = 0;
  for (let line = 0; line < position.line; line++) {
    const next = text.indexOf('\n', offset);
    if (next < 0) return text.length;
    offset = next + 1;
  }
  return offset + position.character;
}

const spansByDocument = new WeakMap<EmbeddedGraphqlDocument, Array<[number, number]>>();

/**
 * The top-level definition under the cursor, as its own text and the cursor's position in it: the language
 * service's online parser then reads one definition rather than everything before the cursor.
 */
function definitionAt(document: EmbeddedGraphqlDocument, at: GlsPosition): { text: string; at: GlsPosition } {
  let spans = spansByDocument.get(document);
  if (!spans) spansByDocument.set(document, (spans = graphqlDefinitionSpans(document.text)));
  const offset = positionToOffset(document.text, at);
  const span = spans.find(([start, end]) => start <= offset && offset <= end);
  if (!span) return { text: document.text, at };
  const before = document.text.slice(span[0], offset);
  const lines = before.split('\n');
  return { text: document.text.slice(span[0], span[1]), at: new GlsPosition(lines.length - 1, lines[lines.length - 1].length) };
}

function locate(documents: EmbeddedGraphqlDocument[], position: Position): { document: EmbeddedGraphqlDocument; at: GlsPosition } | undefined {
  for (const document of documents) {
    const at = filePositionToDocument(document, position);
    if (at) return { document, at: new GlsPosition(at.line, at.character) };
  }
  return undefined;
}

function toFileRange(document: EmbeddedGraphqlDocument, range: { start: Position; end: Position }): Range {
  return {
    start: documentPositionToFile(document, { line: range.start.line, character: range.start.character }),
    end: documentPositionToFile(document, { line: range.end.line, character: range.end.character }),
  };
}

function isFragment(def: { kind: string }): def is FragmentDefinitionNode {
  return def.kind === Kind.FRAGMENT_DEFINITION;
}

function isExecutable(def: DefinitionNode): def is ExecutableDefinitionNode {
  return def.kind === Kind.OPERATION_DEFINITION || def.kind === Kind.FRAGMENT_DEFINITION;
}

/**
 * Fragments defined outside the document, farthest first (a later one of the same name wins): in other files,
 * then in the file's other documents (templates often interpolate them).
 */
function externalFragments(documents: EmbeddedGraphqlDocument[], document: EmbeddedGraphqlDocument, workspace: WorkspaceFragment[]): FragmentDefinitionNode[] {
  const out: FragmentDefinitionNode[] = workspace.map((f) => f.node);
  for (const other of documents) if (other !== document) for (const { node } of other.definitions) if (isFragment(node)) out.push(node);
  return out;
}

function toCompletionItem(item: GlsCompletionItem): CompletionItem {
  const documentation = typeof item.documentation === 'string' && item.documentation ? { kind: MarkupKind.Markdown, value: item.documentation } : undefined;
  return {
    label: item.label,
    kind: (item.kind ?? CompletionItemKind.Field) as CompletionItemKind,
    ...(item.detail ? { detail: item.detail } : {}),
    ...(documentation ? { documentation } : {}),
    ...(item.sortText ? { sortText: item.sortText } : {}),
    ...(item.filterText ? { filterText: item.filterText } : {}),
    ...(item.insertText ? { insertText: item.insertText, insertTextFormat: item.insertTextFormat } : {}),
    ...(item.labelDetails ? { labelDetails: item.labelDetails } : {}),
    ...(item.isDeprecated ? { deprecated: true } : {}),
  };
}
