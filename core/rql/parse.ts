// Parser of Realm Query Language (RQL) as Realm SDKs write it: the canonical form a client sends in a
// flexible sync subscription (`owner_id == "abc" and done == false`) and the forms people type in
// `.filtered("…")`. The token rules follow realm-core's grammar (keywords, `[c]`, typed literals,
// `T<s>:<ns>` timestamps, `B64"…"` strings, `$n` arguments, SORT/DISTINCT/LIMIT tails).
//
// Hostile text gets an RqlSyntaxError with a position, never another exception: the input length, the
// nesting depth and the list sizes are bounded, and the parser never backtracks.
import type { CompareOp, Descriptor, Expr, Literal, PathSegment, Predicate, Quantifier, RqlQuery, Span } from './ast';

/** The platform's limit on one subscription query (256 kB). */
export const MAX_QUERY_LENGTH = 256 * 1024;
/** Nesting of parentheses, NOT, SUBQUERY and arithmetic beyond this is refused, so recursion stays shallow. */
export const MAX_QUERY_DEPTH = 100;

export class RqlSyntaxError extends Error {
  override readonly name = 'RqlSyntaxError';
  /** 1-based line and column of `offset`. */
  readonly line: number;
  readonly column: number;
  constructor(
    /** What is wrong, without the position. */
    readonly reason: string,
    /** Character offset in the query text where the problem starts. */
    readonly offset: number,
    /** How many characters the problem spans (at least 1 when the text has any). */
    readonly length: number,
    text: string,
  ) {
    const { line, column } = lineAndColumn(text, offset);
    super(`${reason} (line ${line}, column ${column})`);
    this.line = line;
    this.column = column;
  }
}

export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

type TokenKind =
  | 'ident' | 'keyword' | 'string' | 'base64' | 'number' | 'timestamp' | 'oid' | 'uuid' | 'arg' | 'link'
  | 'at' | 'case' | 'op' | 'punct' | 'eof';

interface Token {
  kind: TokenKind;
  /** The source text; for keywords the upper-case keyword, for `at` the `@name`. */
  text: string;
  start: number;
  end: number;
}

/** Keywords matched in any letter case (realm-core's `(?i:…)` rules). */
const CASELESS_KEYWORDS = new Set([
  'AND', 'OR', 'BEGINSWITH', 'ENDSWITH', 'CONTAINS', 'TEXT', 'LIKE', 'BETWEEN', 'GEOWITHIN', 'TRUEPREDICATE',
  'FALSEPREDICATE', 'SORT', 'DISTINCT', 'LIMIT', 'OBJ', 'ASC', 'ASCENDING', 'DESC', 'DESCENDING', 'SUBQUERY',
  'GEOBOX', 'GEOPOLYGON', 'GEOCIRCLE', 'NULL', 'NIL', 'INF', 'INFINITY', 'NAN',
]);
/** Keywords matched only in these exact spellings. */
const CASED_KEYWORDS: Record<string, string> = {
  in: 'IN', IN: 'IN', not: 'NOT', NOT: 'NOT', any: 'ANY', ANY: 'ANY', some: 'ANY', SOME: 'ANY',
  all: 'ALL', ALL: 'ALL', none: 'NONE', NONE: 'NONE', true: 'TRUE', TRUE: 'TRUE', false: 'FALSE', FALSE: 'FALSE',
};
/** Keywords that may still name a property (realm-core's `id` rule). */
const KEYWORDS_AS_NAMES = new Set(['BEGINSWITH', 'ENDSWITH', 'CONTAINS', 'LIKE', 'BETWEEN', 'SORT', 'DISTINCT', 'LIMIT', 'ASC', 'ASCENDING', 'DESC', 'DESCENDING', 'TEXT']);
const AT_WORDS = new Set(['@size', '@count', '@max', '@min', '@sum', '@avg', '@type', '@links', '@keys', '@values']);

/** Sticky token rules other than names; the longest match wins, ties go to the earlier rule (as in flex). */
const RULES: Array<[TokenKind, RegExp]> = [
  ['op', /==|=<|=>|=|!=|<>|<=|>=|<|>|&&|\|\||!|\+|-|\*|\//y],
  ['punct', /[[\],(){}.]/y],
  ['at', /@[a-z]+/y],
  ['case', /\[[cdCD]+\]/y],
  ['uuid', /uuid\([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\)/y],
  ['oid', /oid\([0-9a-fA-F]{24}\)/y],
  ['timestamp', /T[+-]?\d+:[+-]?\d+|\d+-\d+-\d+[@T]\d+:\d+:\d+(?::\d+)?/y],
  ['link', /O\d+|L\d+:\d+/y],
  ['arg', /\$\d+/y],
  ['number', /0[xX][0-9a-fA-F]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?f?/y],
  ['base64', /B64"[a-zA-Z0-9/+=]*"/y],
  ['string', /"(?:[^"\\]|\\["'/bfnrt0\\]|\\u[0-9a-fA-F]{4})*"|'(?:[^'\\]|\\["'/bfnrt0\\]|\\u[0-9a-fA-F]{4})*'/y],
  ['ident', /(?:[a-zA-Z_$]|[^\x00-\x7f])(?:[a-zA-Z_\-$0-9]|[^\x00-\x7f]|\\[ nrt])*/y],
];
const SIGNED_NUMBER = /[+-](?:0[xX][0-9a-fA-F]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?f?|(?:inf(?:inity)?|nan)(?![a-zA-Z_\-$0-9]))/iy;
/** Token kinds after which `+`/`-` is an operator rather than a sign. */
const OPERAND_ENDS = new Set<TokenKind>(['ident', 'keyword', 'string', 'base64', 'number', 'timestamp', 'oid', 'uuid', 'arg', 'link', 'at']);

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < text.length) {
    const c = text.charCodeAt(pos);
    if (c === 32 || c === 9 || c === 10 || c === 13) {
      pos++;
      continue;
    }
    const previous = tokens[tokens.length - 1];
    const afterOperand = previous !== undefined && (OPERAND_ENDS.has(previous.kind) || previous.text === ')' || previous.text === '}' || previous.text === ']');
    if ((c === 43 || c === 45) && !afterOperand) {
      SIGNED_NUMBER.lastIndex = pos;
      const m = SIGNED_NUMBER.exec(text);
      if (m) {
        const body = m[0].slice(1);
        const isWord = /^[a-z]/i.test(body);
        tokens.push({ kind: isWord ? 'keyword' : 'number', text: isWord ? m[0][0] + body.toUpperCase() : m[0], start: pos, end: pos + m[0].length });
        pos += m[0].length;
        continue;
      }
    }
    let best: { kind: TokenKind; length: number } | undefined;
    for (const [kind, re] of RULES) {
      re.lastIndex = pos;
      const m = re.exec(text);
      if (m && m[0].length > (best?.length ?? 0)) best = { kind, length: m[0].length };
    }
    if (!best && (c === 34 || c === 39)) {
      throw new RqlSyntaxError('the string starting here is not closed, or has an escape other than \\" \\\' \\/ \\b \\f \\n \\r \\t \\0 \\\\ \\uXXXX', pos, text.length - pos, text);
    }
    if (!best) {
      const ch = String.fromCodePoint(text.codePointAt(pos)!);
      throw new RqlSyntaxError(`invalid character ${JSON.stringify(ch)}`, pos, ch.length, text);
    }
    const raw = text.slice(pos, pos + best.length);
    let token: Token = { kind: best.kind, text: raw, start: pos, end: pos + best.length };
    if (best.kind === 'ident') {
      const upper = raw.toUpperCase();
      if (Object.hasOwn(CASED_KEYWORDS, raw)) token = { ...token, kind: 'keyword', text: CASED_KEYWORDS[raw]! };
      else if (CASELESS_KEYWORDS.has(upper)) token = { ...token, kind: 'keyword', text: upper };
    } else if (best.kind === 'at' && !AT_WORDS.has(raw)) {
      throw new RqlSyntaxError(`unknown operator ${raw}; expected @size, @count, @max, @min, @sum, @avg, @type, @keys or @values`, pos, raw.length, text);
    } else if (best.kind === 'case' && raw !== '[c]') {
      throw new RqlSyntaxError(`${raw} is not a comparison option; only [c] (case-insensitive) exists in Realm Query Language`, pos, raw.length, text);
    }
    tokens.push(token);
    pos += best.length;
  }
  tokens.push({ kind: 'eof', text: '', start: text.length, end: text.length });
  return tokens;
}

const EQUALITY_OPS: Record<string, CompareOp> = { '==': '==', '=': '==', '!=': '!=', '<>': '!=' };
const RELATIONAL_OPS: Record<string, CompareOp> = { '<': '<', '<=': '<=', '=<': '<=', '>': '>', '>=': '>=', '=>': '>=' };
const KEYWORD_OPS: Record<string, CompareOp> = { IN: 'IN', BEGINSWITH: 'BEGINSWITH', ENDSWITH: 'ENDSWITH', CONTAINS: 'CONTAINS', LIKE: 'LIKE' };

type Node = Predicate | Expr;

const PREDICATE_KINDS = new Set(['true', 'false', 'and', 'or', 'not', 'compare', 'between']);
function isPredicate(node: Node): node is Predicate {
  return PREDICATE_KINDS.has(node.kind);
}

class Parser {
  private pos = 0;
  private depth = 0;
  private maxArgument = -1;
  private readonly tokens: Token[];

  constructor(private readonly text: string) {
    this.tokens = tokenize(text);
  }

  parseQuery(): RqlQuery {
    const node = this.parseOr();
    const predicate = this.requirePredicate(node);
    const descriptors: Descriptor[] = [];
    while (this.peek().kind === 'keyword' && ['SORT', 'DISTINCT', 'LIMIT'].includes(this.peek().text)) descriptors.push(this.parseDescriptor());
    const rest = this.peek();
    if (rest.kind !== 'eof') {
      const hint = isPredicate(node) ? 'expected AND, OR, SORT, DISTINCT, LIMIT or the end of the query' : 'expected a comparison operator';
      this.fail(`unexpected ${this.describe(rest)}; ${hint}`, rest);
    }
    return { predicate, descriptors, argumentCount: this.maxArgument + 1 };
  }

  private peek(ahead = 0): Token {
    return this.tokens[Math.min(this.pos + ahead, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'eof') this.pos++;
    return t;
  }

  private isPunct(text: string): boolean {
    const t = this.peek();
    return t.kind === 'punct' && t.text === text;
  }

  private isKeyword(...words: string[]): boolean {
    const t = this.peek();
    return t.kind === 'keyword' && words.includes(t.text);
  }

  private expectPunct(text: string, what: string): Token {
    if (!this.isPunct(text)) this.fail(`expected '${text}' ${what}, found ${this.describe(this.peek())}`, this.peek());
    return this.next();
  }

  private describe(t: Token): string {
    if (t.kind === 'eof') return 'the end of the query';
    const shown = t.end - t.start > 40 ? `${this.text.slice(t.start, t.start + 40)}…` : this.text.slice(t.start, t.end);
    return `'${shown}'`;
  }

  private fail(reason: string, at: Token | Span): never {
    throw new RqlSyntaxError(reason, at.start, Math.max(1, at.end - at.start), this.text);
  }

  private enter(at: Token): void {
    if (++this.depth > MAX_QUERY_DEPTH) this.fail(`the query nests deeper than ${MAX_QUERY_DEPTH} levels`, at);
  }

  private requirePredicate(node: Node): Predicate {
    if (isPredicate(node)) return node;
    const after = this.peek();
    this.fail(`expected a comparison (==, !=, <, <=, >, >=, IN, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, BETWEEN) after '${this.text.slice(node.span.start, Math.min(node.span.end, node.span.start + 40))}', found ${this.describe(after)}`, after.kind === 'eof' ? node.span : after);
  }

  private parseOr(): Node {
    const first = this.parseAnd();
    if (!this.isKeyword('OR') && !this.isOp('||')) return first;
    const operands = [this.requirePredicate(first)];
    while (this.isKeyword('OR') || this.isOp('||')) {
      this.next();
      operands.push(this.requirePredicate(this.parseAnd()));
    }
    return { kind: 'or', operands, span: { start: first.span.start, end: operands[operands.length - 1]!.span.end } };
  }

  private parseAnd(): Node {
    const first = this.parseNot();
    if (!this.isKeyword('AND') && !this.isOp('&&')) return first;
    const operands = [this.requirePredicate(first)];
    while (this.isKeyword('AND') || this.isOp('&&')) {
      this.next();
      operands.push(this.requirePredicate(this.parseNot()));
    }
    return { kind: 'and', operands, span: { start: first.span.start, end: operands[operands.length - 1]!.span.end } };
  }

  private isOp(text: string): boolean {
    const t = this.peek();
    return t.kind === 'op' && t.text === text;
  }

  private parseNot(): Node {
    if (this.isKeyword('NOT') || this.isOp('!')) {
      const not = this.next();
      this.enter(not);
      const operand = this.requirePredicate(this.parseNot());
      this.depth--;
      return { kind: 'not', operand, span: { start: not.start, end: operand.span.end } };
    }
    return this.parseAtom();
  }

  private parseAtom(): Node {
    const t = this.peek();
    if (t.kind === 'keyword' && (t.text === 'TRUEPREDICATE' || t.text === 'FALSEPREDICATE')) {
      this.next();
      return { kind: t.text === 'TRUEPREDICATE' ? 'true' : 'false', span: { start: t.start, end: t.end } };
    }
    let left: Expr;
    if (this.isPunct('(')) {
      const open = this.next();
      this.enter(open);
      const inner = this.parseOr();
      const close = this.expectPunct(')', `to close the '(' at column ${lineAndColumn(this.text, open.start).column}`);
      this.depth--;
      if (isPredicate(inner)) return { ...inner, span: { start: open.start, end: close.end } };
      left = this.parseArithmetic({ ...inner, span: { start: open.start, end: close.end } });
    } else {
      left = this.parseArithmetic();
    }
    return this.parseComparison(left) ?? left;
  }

  /** The comparison whose left side is `left`, or undefined when no comparison operator follows. */
  private parseComparison(left: Expr): Predicate | undefined {
    const t = this.peek();
    let op: CompareOp | undefined;
    if (t.kind === 'op') op = EQUALITY_OPS[t.text] ?? RELATIONAL_OPS[t.text];
    else if (t.kind === 'keyword') op = KEYWORD_OPS[t.text];
    if (t.kind === 'keyword' && t.text === 'BETWEEN') {
      this.next();
      const list = this.parseArithmetic();
      if (list.kind !== 'list' || list.quantifier || list.items.length !== 2) this.fail('BETWEEN takes a list of two values: BETWEEN {low, high}', list.span);
      return { kind: 'between', value: left, low: list.items[0]!, high: list.items[1]!, span: { start: left.span.start, end: list.span.end } };
    }
    if (t.kind === 'keyword' && (t.text === 'TEXT' || t.text === 'GEOWITHIN')) {
      this.fail(`${t.text === 'TEXT' ? 'TEXT (full-text search)' : 'GEOWITHIN (geospatial queries)'} is not supported by this server`, t);
    }
    if (!op) return undefined;
    this.next();
    let caseInsensitive = false;
    if (this.peek().kind === 'case') {
      const c = this.next();
      if (op !== '==' && op !== '!=' && op !== 'IN' && op !== 'BEGINSWITH' && op !== 'ENDSWITH' && op !== 'CONTAINS' && op !== 'LIKE') {
        this.fail(`[c] applies to ==, !=, IN, BEGINSWITH, ENDSWITH, CONTAINS and LIKE, not to ${op}`, c);
      }
      caseInsensitive = true;
    }
    const right = this.parseArithmetic();
    return { kind: 'compare', op, left, right, caseInsensitive, span: { start: left.span.start, end: right.span.end } };
  }

  private parseArithmetic(first?: Expr): Expr {
    let left = this.parseTerm(first);
    while (this.isOp('+') || this.isOp('-')) {
      const op = this.next().text as '+' | '-';
      const right = this.parseTerm();
      left = { kind: 'arithmetic', op, left, right, span: { start: left.span.start, end: right.span.end } };
    }
    return left;
  }

  private parseTerm(first?: Expr): Expr {
    let left = first ?? this.parsePrimary();
    while (this.isOp('*') || this.isOp('/')) {
      const op = this.next().text as '*' | '/';
      const right = this.parsePrimary();
      left = { kind: 'arithmetic', op, left, right, span: { start: left.span.start, end: right.span.end } };
    }
    return left;
  }

  private parsePrimary(): Expr {
    const t = this.peek();
    if (t.kind === 'keyword' && (t.text === 'ANY' || t.text === 'ALL' || t.text === 'NONE')) {
      this.next();
      const quantifier = t.text.toLowerCase() as Quantifier;
      const target = this.peek();
      if (target.kind === 'arg') {
        const arg = this.parsePrimary();
        return { ...arg, quantifier, span: { start: t.start, end: arg.span.end } } as Expr;
      }
      if (this.isPunct('{')) {
        const list = this.parseList();
        return { ...list, quantifier, span: { start: t.start, end: list.span.end } };
      }
      if (target.kind !== 'ident' && !(target.kind === 'keyword' && KEYWORDS_AS_NAMES.has(target.text))) {
        this.fail(`expected a property, a list or an argument after ${t.text}, found ${this.describe(target)}`, target);
      }
      const path = this.parsePath();
      if (path.kind !== 'path') this.fail(`${t.text} applies to a list property, not to an aggregate`, path.span);
      return { ...path, quantifier, span: { start: t.start, end: path.span.end } };
    }
    if (this.isPunct('(')) {
      const open = this.next();
      this.enter(open);
      const inner = this.parseArithmetic();
      const close = this.expectPunct(')', 'to close the expression');
      this.depth--;
      return { ...inner, span: { start: open.start, end: close.end } };
    }
    if (this.isPunct('{')) return this.parseList();
    if (t.kind === 'keyword' && t.text === 'SUBQUERY') return this.parseSubquery();
    if ((t.kind === 'keyword' && t.text === 'OBJ') || t.kind === 'link') this.fail('links to objects (obj(…), O<n>, L<n>:<n>) are not supported in queries here', t);
    if (t.kind === 'ident' || (t.kind === 'keyword' && KEYWORDS_AS_NAMES.has(t.text)) || (t.kind === 'at' && t.text === '@links')) return this.parsePath();
    if (t.kind === 'arg') {
      this.next();
      const index = Number(t.text.slice(1));
      if (!Number.isSafeInteger(index) || index > 10_000) this.fail(`argument ${t.text} is out of range`, t);
      this.maxArgument = Math.max(this.maxArgument, index);
      return { kind: 'argument', index, span: { start: t.start, end: t.end } };
    }
    const literal = this.parseLiteral(t);
    if (literal) {
      this.next();
      return { kind: 'constant', literal, span: { start: t.start, end: t.end } };
    }
    this.fail(`expected a property, a value or an argument, found ${this.describe(t)}`, t);
  }

  private parseList(): Expr & { kind: 'list' } {
    const open = this.expectPunct('{', 'to start a list');
    const items: Expr[] = [];
    if (!this.isPunct('}')) {
      for (;;) {
        const t = this.peek();
        if (t.kind === 'arg') items.push(this.parsePrimary());
        else {
          const literal = this.parseLiteral(t);
          if (!literal) this.fail(`a list holds values and arguments; found ${this.describe(t)}`, t);
          this.next();
          items.push({ kind: 'constant', literal, span: { start: t.start, end: t.end } });
        }
        if (!this.isPunct(',')) break;
        this.next();
      }
    }
    const close = this.expectPunct('}', 'to close the list');
    return { kind: 'list', items, span: { start: open.start, end: close.end } };
  }

  private parseSubquery(): Expr {
    const start = this.next();
    this.enter(start);
    this.expectPunct('(', 'after SUBQUERY');
    const path = this.parsePathSegments();
    this.expectPunct(',', 'after the SUBQUERY list');
    const variable = this.next();
    if (variable.kind !== 'ident' || !variable.text.startsWith('$')) this.fail(`expected a variable such as $x after the SUBQUERY list, found ${this.describe(variable)}`, variable);
    this.expectPunct(',', 'after the SUBQUERY variable');
    const predicate = this.requirePredicate(this.parseOr());
    this.expectPunct(')', 'to close SUBQUERY');
    this.expectPunct('.', 'after SUBQUERY(…): SUBQUERY(…).@count');
    const size = this.next();
    if (size.kind !== 'at' || (size.text !== '@size' && size.text !== '@count')) this.fail(`SUBQUERY(…) is followed by .@count or .@size, found ${this.describe(size)}`, size);
    this.depth--;
    return { kind: 'subquery', segments: path, variable: variable.text, predicate, span: { start: start.start, end: size.end } };
  }

  private parsePathSegments(): PathSegment[] {
    const segments: PathSegment[] = [this.parseSegment()];
    while (this.isPunct('.') && (this.peek(1).kind === 'ident' || (this.peek(1).kind === 'keyword' && KEYWORDS_AS_NAMES.has(this.peek(1).text)) || ['@links', '@keys', '@values'].includes(this.peek(1).text))) {
      this.next();
      segments.push(this.parseSegment());
    }
    return segments;
  }

  private parseSegment(): PathSegment {
    const t = this.next();
    if (t.kind === 'at' && t.text === '@links') this.fail('@links (backlinks) is not supported in queries here', t);
    if (t.kind !== 'ident' && t.kind !== 'keyword' && t.kind !== 'at') this.fail(`expected a property name, found ${this.describe(t)}`, t);
    const name = t.kind === 'ident' ? t.text.replace(/\\([ nrt])/g, (_m, c: string) => (c === ' ' ? ' ' : c === 'n' ? '\n' : c === 'r' ? '\r' : '\t')) : this.text.slice(t.start, t.end);
    const segment: PathSegment = { name, span: { start: t.start, end: t.end } };
    if (this.isPunct('[') && this.peek().start === t.end) {
      this.next();
      const index = this.next();
      if (index.kind === 'number' && /^\d+$/.test(index.text)) segment.index = { kind: 'number', value: Number(index.text) };
      else if (index.kind === 'string') segment.index = { kind: 'key', value: unquote(index.text) };
      else if (index.kind === 'arg') {
        const n = Number(index.text.slice(1));
        this.maxArgument = Math.max(this.maxArgument, n);
        segment.index = { kind: 'argument', index: n };
      } else this.fail(`expected a list index, a dictionary key or an argument inside [ ], found ${this.describe(index)}`, index);
      const close = this.expectPunct(']', 'after the index');
      segment.span = { start: t.start, end: close.end };
    }
    return segment;
  }

  private parsePath(): Expr {
    const segments = this.parsePathSegments();
    const start = segments[0]!.span.start;
    let end = segments[segments.length - 1]!.span.end;
    if (this.isPunct('.') && this.peek(1).kind === 'at') {
      this.next();
      const at = this.next();
      end = at.end;
      switch (at.text) {
        case '@size':
        case '@count':
          return { kind: 'path', segments, postOp: 'size', span: { start, end } };
        case '@type':
          return { kind: 'path', segments, postOp: 'type', span: { start, end } };
        case '@max': case '@min': case '@sum': case '@avg': {
          const op = at.text.slice(1) as 'max' | 'min' | 'sum' | 'avg';
          if (this.isPunct('.') && (this.peek(1).kind === 'ident' || this.peek(1).kind === 'keyword')) {
            this.next();
            const field = this.next();
            return { kind: 'aggregate', segments, op, field: field.text, span: { start, end: field.end } };
          }
          return { kind: 'aggregate', segments, op, span: { start, end } };
        }
        default:
          this.fail(`${at.text} cannot follow a property here`, at);
      }
    }
    return { kind: 'path', segments, span: { start, end } };
  }

  private parseLiteral(t: Token): Literal | undefined {
    switch (t.kind) {
      case 'string': return { type: 'string', value: unquote(t.text) };
      case 'base64': return { type: 'base64', bytes: new Uint8Array(Buffer.from(t.text.slice(4, -1), 'base64')) };
      case 'number': return numberLiteral(t.text);
      case 'timestamp': return this.timestampLiteral(t);
      case 'oid': return { type: 'objectId', hex: t.text.slice(4, -1).toLowerCase() };
      case 'uuid': return { type: 'uuid', hex: t.text.slice(5, -1).replace(/-/g, '').toLowerCase() };
      case 'keyword':
        switch (t.text) {
          case 'TRUE': return { type: 'boolean', value: true };
          case 'FALSE': return { type: 'boolean', value: false };
          case 'NULL': case 'NIL': return { type: 'null' };
          case 'INF': case 'INFINITY': case '+INF': case '+INFINITY': return { type: 'number', text: 'inf', value: Infinity };
          case '-INF': case '-INFINITY': return { type: 'number', text: '-inf', value: -Infinity };
          case 'NAN': case '+NAN': case '-NAN': return { type: 'number', text: 'nan', value: NaN };
          default: return undefined;
        }
      default: return undefined;
    }
  }

  private timestampLiteral(t: Token): Literal {
    if (t.text.startsWith('T')) {
      const [seconds, nanos] = t.text.slice(1).split(':') as [string, string];
      const nanoseconds = Number(nanos);
      if (Math.abs(nanoseconds) >= 1e9) this.fail('the nanoseconds of a timestamp are below 1000000000', t);
      const s = BigInt(seconds);
      if (s > 10n ** 15n || s < -(10n ** 15n)) this.fail('the timestamp is out of range', t);
      return { type: 'timestamp', seconds: s, nanoseconds };
    }
    const m = /^(\d+)-(\d+)-(\d+)[@T](\d+):(\d+):(\d+)(?::(\d+))?$/.exec(t.text)!;
    const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
    const nanoseconds = m[7] ? Number(m[7]) : 0;
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 || nanoseconds >= 1e9 || year > 275_000) {
      this.fail(`'${t.text}' is not a valid date (YYYY-MM-DD@HH:MM:SS[:nanoseconds], UTC)`, t);
    }
    const date = new Date(0);
    date.setUTCFullYear(year, month - 1, day);
    date.setUTCHours(hour, minute, second, 0);
    if (Number.isNaN(date.getTime())) this.fail(`'${t.text}' is out of the range of dates`, t);
    if (date.getUTCDate() !== day) this.fail(`'${t.text}' is not a valid date: ${year}-${month} has no day ${day}`, t);
    return { type: 'timestamp', seconds: BigInt(date.getTime() / 1000), nanoseconds };
  }

  private parseDescriptor(): Descriptor {
    const keyword = this.next();
    this.expectPunct('(', `after ${keyword.text}`);
    if (keyword.text === 'LIMIT') {
      const n = this.next();
      if (n.kind !== 'number' || !/^\d+$/.test(n.text)) this.fail(`LIMIT takes a whole number, found ${this.describe(n)}`, n);
      const close = this.expectPunct(')', 'to close LIMIT');
      return { kind: 'limit', count: Math.min(Number(n.text), Number.MAX_SAFE_INTEGER), span: { start: keyword.start, end: close.end } };
    }
    if (keyword.text === 'SORT') {
      const keys: Array<{ path: string[]; ascending: boolean }> = [];
      do {
        if (keys.length) this.next();
        const path = this.parsePathSegments().map((s) => s.name);
        const direction = this.next();
        if (direction.kind !== 'keyword' || !['ASC', 'ASCENDING', 'DESC', 'DESCENDING'].includes(direction.text)) {
          this.fail(`expected ASC or DESC after the SORT property, found ${this.describe(direction)}`, direction);
        }
        keys.push({ path, ascending: direction.text.startsWith('ASC') });
      } while (this.isPunct(','));
      const close = this.expectPunct(')', 'to close SORT');
      return { kind: 'sort', keys, span: { start: keyword.start, end: close.end } };
    }
    const paths: string[][] = [];
    do {
      if (paths.length) this.next();
      paths.push(this.parsePathSegments().map((s) => s.name));
    } while (this.isPunct(','));
    const close = this.expectPunct(')', 'to close DISTINCT');
    return { kind: 'distinct', paths, span: { start: keyword.start, end: close.end } };
  }
}

/**
 * A string literal's value is its text between the quotes, escapes included as written: realm-core's
 * lexer uses them only to find the closing quote (`"q\"x"` is the four characters q \ " x). Clients
 * send strings holding quotes or backslashes as `B64"…"` instead.
 */
function unquote(quoted: string): string {
  return quoted.slice(1, -1);
}

function numberLiteral(text: string): Literal {
  if (/^[+-]?0[xX]/.test(text)) {
    const negative = text.startsWith('-');
    const magnitude = BigInt(text.replace(/^[+-]/, ''));
    const integer = negative ? -magnitude : magnitude;
    return { type: 'number', text, value: Number(integer), integer };
  }
  const body = text.endsWith('f') ? text.slice(0, -1) : text;
  const value = Number(body);
  if (/^[+-]?\d+$/.test(body)) return { type: 'number', text: body, value, integer: BigInt(body) };
  return { type: 'number', text: body, value };
}

/** Parses one RQL query; throws RqlSyntaxError (only) when the text is not a query. */
export function parseRql(text: string): RqlQuery {
  if (typeof text !== 'string') throw new RqlSyntaxError('the query must be a string', 0, 0, '');
  if (text.length > MAX_QUERY_LENGTH) throw new RqlSyntaxError(`the query is ${text.length} characters long; the limit is ${MAX_QUERY_LENGTH}`, MAX_QUERY_LENGTH, text.length - MAX_QUERY_LENGTH, text);
  if (text.trim() === '') throw new RqlSyntaxError('the query is empty; use TRUEPREDICATE to match every object', 0, 0, text);
  return new Parser(text).parseQuery();
}

/** The query, or the syntax error: for callers that report rather than throw (the editor, QUERY_ERROR). */
export function tryParseRql(text: string): { ok: true; query: RqlQuery } | { ok: false; error: RqlSyntaxError } {
  try {
    return { ok: true, query: parseRql(text) };
  } catch (error) {
    if (error instanceof RqlSyntaxError) return { ok: false, error };
    throw error;
  }
}
