// GraphQL documents inside files: the whole text of a `.graphql`/`.gql` file, and in JavaScript/TypeScript
// files the template literals tagged `gql`/`graphql` (also as `gql(`…`)`) or preceded by `/* GraphQL */`.
// Each `${…}` substitution is replaced by spaces of the same length (newlines kept), so a document's text has
// the same length and line structure as its slice of the file: document offset + `start` = file offset.
import { Kind, Lexer, Source, TokenKind, parse, type ASTNode, type DefinitionNode } from 'graphql';
import type { Position, Range } from '../json';

/** How a file holds GraphQL: as its whole text, or inside script template literals. */
export type GraphqlHost = 'graphql' | 'script';

/** How a document was marked in its file. */
export type GraphqlDocumentOrigin = 'file' | 'tag' | 'call' | 'comment';

export type GraphqlOperationKind = 'query' | 'mutation' | 'subscription';

export interface GraphqlVariableDefinition {
  name: string;
  /** The type as written: `[String!]!`. */
  type: string;
  /** The default value as written, when there is one. */
  defaultValue?: string;
  /** Non-null type without a default: a caller must supply it. */
  required: boolean;
  range: Range;
}

export interface GraphqlOperation {
  kind: GraphqlOperationKind;
  /** Absent for an anonymous operation. */
  name?: string;
  /** File offsets of the operation's first character and one past its last. */
  start: number;
  end: number;
  range: Range;
  /** The range of the name, else of the `query`/`mutation`/`subscription` keyword or the opening brace. */
  nameRange: Range;
  variables: GraphqlVariableDefinition[];
}

export interface GraphqlFragment {
  name: string;
  typeCondition: string;
  start: number;
  end: number;
  range: Range;
  nameRange: Range;
}

export interface GraphqlSubstitution {
  /** File offsets of `${` and one past the closing `}`. */
  start: number;
  end: number;
  /** The JavaScript expression between `${` and `}`, as written. */
  expression: string;
}

export interface GraphqlSyntaxError { message: string; offset: number; range: Range }

/**
 * A top-level definition of a document. Definitions are usually parsed one by one, each from its own text
 * (an edit then re-parses only the definition it touched), so a node's locations count from `offset`.
 */
export interface GraphqlDefinition {
  node: DefinitionNode;
  /** The document offset of the node's source offset 0: document offset = `offset` + `node.loc.start`. */
  offset: number;
  /** The document position (0-based) of the node's source line 1, column 1. */
  origin: Position;
}

/** The document offset of an offset in a definition's source. */
export function definitionOffsetToDocument(definition: GraphqlDefinition, sourceOffset: number): number {
  return definition.offset + sourceOffset;
}

/** The document position (0-based) of a 1-based line and column of a definition's source, as graphql-js tokens have them. */
export function definitionPositionToDocument(definition: GraphqlDefinition, line: number, column: number): Position {
  const { origin } = definition;
  return line === 1 ? { line: origin.line, character: origin.character + column - 1 } : { line: origin.line + line - 1, character: column - 1 };
}

export interface EmbeddedGraphqlDocument {
  origin: GraphqlDocumentOrigin;
  /** The text graphql-js sees: the file slice with substitutions blanked. */
  text: string;
  /** File offsets of the document text (inside the backticks for a template). */
  start: number;
  end: number;
  range: Range;
  substitutions: GraphqlSubstitution[];
  /** The parsed top-level definitions: all of them when the text parses, else those that parse on their own. */
  definitions: GraphqlDefinition[];
  /** The first syntax error, when the text does not parse (text of only whitespace and comments is not an error). */
  syntaxError?: GraphqlSyntaxError;
  /** Operations found; when the whole text does not parse, those that parse on their own. */
  operations: GraphqlOperation[];
  fragments: GraphqlFragment[];
}

const scriptExtensions = new Set(['js', 'jsx', 'mjs', 'cjs', 'ts', 'tsx', 'mts', 'cts']);
const scriptLanguageIds = new Set(['javascript', 'javascriptreact', 'typescript', 'typescriptreact']);

/** Whether a file (by VS Code language id, file name or path) can hold GraphQL, and how. */
export function graphqlHostOf(languageIdOrFileName: string): GraphqlHost | undefined {
  const lower = languageIdOrFileName.toLowerCase();
  if (lower === 'graphql') return 'graphql';
  if (scriptLanguageIds.has(lower)) return 'script';
  const dot = lower.lastIndexOf('.');
  if (dot < 0) return undefined;
  const ext = lower.slice(dot + 1);
  if (ext === 'graphql' || ext === 'gql') return 'graphql';
  return scriptExtensions.has(ext) ? 'script' : undefined;
}

/** Every GraphQL document of a file, in file order. An unknown kind of file has none. */
export function findGraphqlDocuments(languageIdOrFileName: string, text: string): EmbeddedGraphqlDocument[] {
  const host = graphqlHostOf(languageIdOrFileName);
  if (!host) return [];
  const lines = new LineIndex(text);
  if (host === 'graphql') return [buildDocument('file', text, 0, text.length, [], lines)];
  return findTemplates(text).map((t) => buildDocument(t.origin, text, t.start, t.end, t.substitutions, lines));
}

/** The document whose text contains a file offset (its ends included, so a cursor at either edge counts). */
export function graphqlDocumentAt(documents: readonly EmbeddedGraphqlDocument[], fileOffset: number): EmbeddedGraphqlDocument | undefined {
  return documents.find((d) => d.start <= fileOffset && fileOffset <= d.end);
}

/** The operation of a document that contains a file offset. */
export function graphqlOperationAt(document: EmbeddedGraphqlDocument, fileOffset: number): GraphqlOperation | undefined {
  return document.operations.find((o) => o.start <= fileOffset && fileOffset <= o.end);
}

export function documentOffsetToFile(document: EmbeddedGraphqlDocument, documentOffset: number): number {
  return document.start + documentOffset;
}

/** The document offset of a file offset, or undefined outside the document. */
export function fileOffsetToDocument(document: EmbeddedGraphqlDocument, fileOffset: number): number | undefined {
  return fileOffset < document.start || fileOffset > document.end ? undefined : fileOffset - document.start;
}

/** A 0-based position in the document text → the same character's position in the file. */
export function documentPositionToFile(document: EmbeddedGraphqlDocument, position: Position): Position {
  const origin = document.range.start;
  return position.line === 0
    ? { line: origin.line, character: origin.character + position.character }
    : { line: origin.line + position.line, character: position.character };
}

/** A file position → the document position, or undefined outside the document. */
export function filePositionToDocument(document: EmbeddedGraphqlDocument, position: Position): Position | undefined {
  const { start, end } = document.range;
  const before = position.line < start.line || (position.line === start.line && position.character < start.character);
  const after = position.line > end.line || (position.line === end.line && position.character > end.character);
  if (before || after) return undefined;
  return position.line === start.line
    ? { line: 0, character: position.character - start.character }
    : { line: position.line - start.line, character: position.character };
}

function buildDocument(origin: GraphqlDocumentOrigin, fileText: string, start: number, end: number,
  substitutions: GraphqlSubstitution[], lines: LineIndex): EmbeddedGraphqlDocument {
  const text = blank(fileText.slice(start, end), substitutions.map((s) => [s.start - start, s.end - start]));
  const document: EmbeddedGraphqlDocument = {
    origin, text, start, end, range: lines.range(start, end), substitutions, definitions: [], operations: [], fragments: [],
  };
  const rangeOf = (docStart: number, docEnd: number) => lines.range(start + docStart, start + docEnd);
  const scan = scanDefinitions(text);
  const parsed = scan.spans.map(([from, to]) => {
    const node = parseDefinition(text.slice(from, to));
    return node && { node, offset: from, origin: filePositionToDocument(document, rangeOf(from, from).start)! };
  });
  const firstUnparsed = scan.complete ? parsed.findIndex((d) => d === undefined) : 0;
  if (firstUnparsed < 0) {
    document.definitions = parsed as GraphqlDefinition[];
  } else {
    // A definition does not parse on its own (or the text is not all definitions, such as a schema):
    // graphql-js's parse decides, from there on. The definitions before it each parsed as exactly one, so
    // the whole text's parse would reach that point in the same state.
    const from = scan.complete ? scan.spans[firstUnparsed][0] : 0;
    try {
      const origin = filePositionToDocument(document, rangeOf(from, from).start)!;
      const rest = parse(text.slice(from)).definitions.map((node) => ({ node, offset: from, origin }));
      document.definitions = [...(parsed.slice(0, firstUnparsed) as GraphqlDefinition[]), ...rest];
    } catch (e) {
      if (!hasTokens(text)) return document;
      const offset = from + syntaxErrorOffset(e, text.slice(from));
      document.syntaxError = { message: (e as Error).message, offset: start + offset, range: rangeOf(offset, Math.min(offset + 1, text.length)) };
      document.definitions = parsed.filter((d): d is GraphqlDefinition => d !== undefined);
    }
  }
  collectDefinitions(document, rangeOf);
  return document;
}

/**
 * Parsed definitions by their text, shared by every document: an edit re-parses only the definitions it changed.
 * Bounded by entries and by characters (a long definition typed key by key leaves a copy per key).
 */
const definitionCache = new Map<string, DefinitionNode | null>();
const DEFINITION_CACHE_LIMIT = 4000;
const DEFINITION_CACHE_CHARACTERS = 8 * 1024 * 1024;
let definitionCacheCharacters = 0;

/** The one definition a text holds, or undefined when it does not parse as exactly one. */
function parseDefinition(text: string): DefinitionNode | undefined {
  const cached = definitionCache.get(text);
  if (cached !== undefined) {
    // Least recently used goes first.
    definitionCache.delete(text);
    definitionCache.set(text, cached);
    return cached ?? undefined;
  }
  let node: DefinitionNode | null = null;
  // A copy, so that the cached text and AST do not keep the whole text they were sliced from alive.
  const own = detached(text);
  try {
    const definitions = parse(own).definitions;
    if (definitions.length === 1) node = definitions[0];
  } catch { /* not one definition */ }
  if (own.length > DEFINITION_CACHE_CHARACTERS / 16) return node ?? undefined;
  while (definitionCache.size && (definitionCache.size >= DEFINITION_CACHE_LIMIT || definitionCacheCharacters + own.length > DEFINITION_CACHE_CHARACTERS)) {
    const oldest = definitionCache.keys().next().value!;
    definitionCache.delete(oldest);
    definitionCacheCharacters -= oldest.length;
  }
  definitionCache.set(own, node);
  definitionCacheCharacters += own.length;
  return node ?? undefined;
}

/** A flat copy of a string (V8 keeps a slice as a view of the string it came from). */
function detached(text: string): string {
  return (' ' + text).slice(1);
}

function collectDefinitions(document: EmbeddedGraphqlDocument, rangeOf: (from: number, to: number) => Range): void {
  const { start } = document;
  for (const definition of document.definitions) {
    const def = definition.node;
    if (!def.loc) continue;
    const at = (loc: { start: number; end: number }) => rangeOf(definitionOffsetToDocument(definition, loc.start), definitionOffsetToDocument(definition, loc.end));
    const from = start + definitionOffsetToDocument(definition, def.loc.start);
    const to = start + definitionOffsetToDocument(definition, def.loc.end);
    if (def.kind === Kind.OPERATION_DEFINITION) {
      const nameLoc = def.name?.loc ?? (def.loc.startToken.kind === TokenKind.NAME || def.loc.startToken.kind === TokenKind.BRACE_L ? def.loc.startToken : def.loc);
      document.operations.push({
        kind: def.operation as GraphqlOperationKind,
        ...(def.name ? { name: def.name.value } : {}),
        start: from, end: to, range: at(def.loc), nameRange: at(nameLoc),
        variables: (def.variableDefinitions ?? []).map((v) => ({
          name: v.variable.name.value,
          type: sourceOf(v.type),
          ...(v.defaultValue ? { defaultValue: sourceOf(v.defaultValue) } : {}),
          required: v.type.kind === Kind.NON_NULL_TYPE && !v.defaultValue,
          range: at(v.loc!),
        })),
      });
    } else if (def.kind === Kind.FRAGMENT_DEFINITION) {
      document.fragments.push({
        name: def.name.value, typeCondition: def.typeCondition.name.value,
        start: from, end: to, range: at(def.loc), nameRange: at(def.name.loc!),
      });
    }
  }
}

/** Whether a text has anything but whitespace and comments (blank documents are not errors). */
function hasTokens(text: string): boolean {
  try {
    return new Lexer(new Source(text)).advance().kind !== TokenKind.EOF;
  } catch {
    return true;
  }
}

/** A node's text as written in its document. */
function sourceOf(node: ASTNode): string {
  return node.loc ? node.loc.source.body.slice(node.loc.start, node.loc.end) : '';
}

/**
 * Spans `[start, end)` of the top-level definitions of a document text (document offsets), also when it does not
 * parse: a definition starts at `query`/`mutation`/`subscription`/`fragment` or `{` at depth 0 and runs until the
 * next one starts. Language features use the definition under the cursor instead of a whole long document.
 */
export function graphqlDefinitionSpans(text: string): Array<[number, number]> {
  return scanDefinitions(text).spans;
}

function syntaxErrorOffset(error: unknown, text: string): number {
  const positions = (error as { positions?: readonly number[] }).positions;
  return Math.max(0, Math.min(positions?.[0] ?? 0, text.length));
}

const definitionKeywords = new Set(['query', 'mutation', 'subscription', 'fragment']);

/**
 * The spans of the top-level definitions, found with graphql-js's lexer by brace depth; a definition runs until
 * the next one starts. `complete` is false when the spans may not cover every token: a token before the first
 * definition (a schema's `type`, say) or a character the lexer stops at.
 */
function scanDefinitions(text: string): { spans: Array<[number, number]>; complete: boolean } {
  const starts: number[] = [];
  const lexer = new Lexer(new Source(text));
  let depth = 0;
  let pendingStart: number | undefined;
  let firstColumn = Infinity;
  let previousLine = 0;
  let complete = true;
  try {
    for (let token = lexer.advance(); token.kind !== TokenKind.EOF; token = lexer.advance()) {
      const isKeyword = token.kind === TokenKind.NAME && definitionKeywords.has(token.value);
      // An unclosed definition ends where a keyword starts a line no deeper than the first definition.
      if (isKeyword && depth > 0 && token.line !== previousLine && token.column <= firstColumn) {
        depth = 0;
        pendingStart = undefined;
      }
      previousLine = token.line;
      if (depth === 0 && pendingStart === undefined && (token.kind === TokenKind.BRACE_L || isKeyword)) {
        starts.push(token.start);
        pendingStart = token.start;
        firstColumn = Math.min(firstColumn, token.column);
      } else if (!starts.length) {
        complete = false;
      }
      if (token.kind === TokenKind.BRACE_L || token.kind === TokenKind.PAREN_L || token.kind === TokenKind.BRACKET_L) depth++;
      else if (token.kind === TokenKind.BRACE_R || token.kind === TokenKind.PAREN_R || token.kind === TokenKind.BRACKET_R) {
        depth = Math.max(0, depth - 1);
        if (depth === 0 && token.kind === TokenKind.BRACE_R) pendingStart = undefined;
      }
    }
  } catch {
    // The rest of the text is not GraphQL tokens.
    complete = false;
  }
  return { spans: starts.map((s, i) => [s, starts[i + 1] ?? text.length]), complete };
}

/** The text with each span replaced by spaces, line breaks kept (so offsets and lines stay put). */
function blank(text: string, spans: Array<[number, number]>): string {
  if (!spans.length) return text;
  let out = '';
  let at = 0;
  for (const [from, to] of spans) {
    out += text.slice(at, from) + text.slice(from, to).replace(/[^\r\n]/g, ' ');
    at = to;
  }
  return out + text.slice(at);
}

interface FoundTemplate { origin: Exclude<GraphqlDocumentOrigin, 'file'>; start: number; end: number; substitutions: GraphqlSubstitution[] }

interface TemplateFrame { type: 'template'; origin?: FoundTemplate['origin']; start: number; substitutions: GraphqlSubstitution[] }
interface SubstitutionFrame { type: 'substitution'; start: number; braces: number }
type Frame = TemplateFrame | SubstitutionFrame;

const graphqlTags = new Set(['gql', 'graphql']);
// After these words an expression starts, so a `/` begins a regular expression rather than a division.
const expressionKeywords = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);

/**
 * The GraphQL template literals of a JavaScript/TypeScript text. A small scanner, not a parser: it skips
 * comments, strings and regular expressions (told from division by the previous token) and follows
 * templates nested inside substitutions. Quotes in JSX text can start a string; strings end at a line break,
 * which bounds the damage to that line.
 */
function findTemplates(text: string): FoundTemplate[] {
  const found: FoundTemplate[] = [];
  const stack: Frame[] = [];
  const n = text.length;
  // The last two tokens outside comments (a word, or one punctuation character), and the last comment.
  let previous = '';
  let beforePrevious = '';
  let previousIsWord = false;
  let lastComment: { text: string; end: number } | undefined;
  let expectExpression = true;
  const pushToken = (token: string, isWord: boolean) => {
    beforePrevious = previous;
    previous = token;
    previousIsWord = isWord;
  };

  let i = 0;
  while (i < n) {
    const top = stack[stack.length - 1];
    if (top?.type === 'template') {
      const ch = text[i];
      if (ch === '\\') { i += 2; continue; }
      if (ch === '`') {
        stack.pop();
        if (top.origin) found.push({ origin: top.origin, start: top.start, end: i, substitutions: top.substitutions });
        i++;
        pushToken('`', false);
        expectExpression = false;
        continue;
      }
      if (ch === '$' && text[i + 1] === '{') {
        stack.push({ type: 'substitution', start: i, braces: 0 });
        i += 2;
        expectExpression = true;
        previous = beforePrevious = '';
        continue;
      }
      i++;
      continue;
    }

    const ch = text[i];
    const next = text[i + 1];
    if (ch === '/' && next === '/') {
      const lineEnd = text.indexOf('\n', i);
      i = lineEnd < 0 ? n : lineEnd;
      continue;
    }
    if (ch === '/' && next === '*') {
      const close = text.indexOf('*/', i + 2);
      const end = close < 0 ? n : close + 2;
      lastComment = { text: text.slice(i + 2, close < 0 ? n : close), end };
      i = end;
      continue;
    }
    if (ch === '/' && expectExpression) {
      i = skipRegex(text, i);
      pushToken('/', false);
      expectExpression = false;
      continue;
    }
    if (ch === '"' || ch === "'") {
      i = skipString(text, i, ch);
      pushToken(ch, false);
      expectExpression = false;
      continue;
    }
    if (ch === '`') {
      stack.push({ type: 'template', origin: templateOrigin(), start: i + 1, substitutions: [] });
      i++;
      continue;
    }
    if (isIdentifierStart(ch)) {
      let j = i + 1;
      while (j < n && isIdentifierPart(text[j])) j++;
      const word = text.slice(i, j);
      pushToken(word, true);
      expectExpression = expressionKeywords.has(word);
      i = j;
      continue;
    }
    if (ch >= '0' && ch <= '9') {
      let j = i + 1;
      while (j < n && /[\w.]/.test(text[j])) j++;
      pushToken(text.slice(i, j), false);
      expectExpression = false;
      i = j;
      continue;
    }
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') { i++; continue; }
    if (top?.type === 'substitution') {
      if (ch === '{') top.braces++;
      else if (ch === '}') {
        if (top.braces === 0) {
          stack.pop();
          const template = stack[stack.length - 1] as TemplateFrame;
          template.substitutions.push({ start: top.start, end: i + 1, expression: text.slice(top.start + 2, i) });
          i++;
          continue;
        }
        top.braces--;
      }
    }
    pushToken(ch, false);
    expectExpression = ch !== ')' && ch !== ']' && ch !== '}';
    i++;
  }
  return found.sort((a, b) => a.start - b.start);

  function templateOrigin(): FoundTemplate['origin'] | undefined {
    if (lastComment && /^\s*graphql\s*$/i.test(lastComment.text) && !text.slice(lastComment.end, i).trim()) return 'comment';
    if (previousIsWord && graphqlTags.has(previous)) return 'tag';
    if (previous === '(' && graphqlTags.has(beforePrevious)) return 'call';
    return undefined;
  }
}

function skipString(text: string, at: number, quote: string): number {
  let i = at + 1;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\\') { i += 2; continue; }
    if (ch === quote) return i + 1;
    if (ch === '\n') return i;
    i++;
  }
  return i;
}

function skipRegex(text: string, at: number): number {
  let i = at + 1;
  let inClass = false;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\\') { i += 2; continue; }
    if (ch === '\n') return i;
    if (ch === '[') inClass = true;
    else if (ch === ']') inClass = false;
    else if (ch === '/' && !inClass) {
      i++;
      while (i < text.length && /[a-z]/i.test(text[i])) i++;
      return i;
    }
    i++;
  }
  return i;
}

function isIdentifierStart(ch: string): boolean {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch === '_' || ch === '$' || ch > '\x7f';
}

function isIdentifierPart(ch: string): boolean {
  return isIdentifierStart(ch) || (ch >= '0' && ch <= '9');
}

/** Offset → 0-based line/character over one text. */
class LineIndex {
  private readonly starts: number[] = [0];
  constructor(text: string) {
    for (let i = 0; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      if (ch === 13 && text.charCodeAt(i + 1) === 10) continue;
      if (ch === 10 || ch === 13) this.starts.push(i + 1);
    }
  }

  position(offset: number): Position {
    let lo = 0, hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= offset) lo = mid; else hi = mid - 1;
    }
    return { line: lo, character: offset - this.starts[lo] };
  }

  range(start: number, end: number): Range {
    return { start: this.position(start), end: this.position(end) };
  }
}
