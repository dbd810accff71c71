// Evaluation of a parsed RQL query on BSON documents with Realm's semantics: a comparison on a list
// (or through a list of embedded objects) holds when it holds for ANY element unless ALL/NONE says
// otherwise; a missing field is null; values of different types never compare equal; `[c]` folds case;
// LIKE takes `*` (any run) and `?` (one character). The query compiles once into closures, so a
// subscription can test every changed document cheaply.
import type { CompareOp, Descriptor, Expr, PathSegment, Predicate, Quantifier, RqlQuery } from './ast';
import { bsonTag, compareNumbers, compareValues, foldCase, literalValue, stringOf, typeName, typeClass } from './values';

export type RqlArguments = readonly unknown[];
export type DocumentMatcher = (document: unknown) => boolean;

/** A query reads `$n` but the caller passed fewer arguments. */
export class RqlArgumentError extends Error {
  override readonly name = 'RqlArgumentError';
}

/** Several values of one operand (a list, or a path through lists) and how a comparison combines them. */
class Many {
  constructor(
    readonly values: unknown[],
    readonly quantifier: Quantifier = 'any',
    /**
     * A whole collection with no quantifier written: a list property's own array, or a list literal.
     * Two of them compare as collections (`tags == {"a", "b"}`: same elements in order), as realm-core does.
     */
    readonly collection = false,
  ) {}
}

type Vars = unknown[];
type Compiled = (doc: unknown, vars: Vars) => unknown;
type CompiledPredicate = (doc: unknown, vars: Vars) => boolean;
type Test = (left: unknown, right: unknown) => boolean;

interface Scope {
  args: RqlArguments;
  /** Subquery variables in the order they are bound; a variable's slot is its index here. */
  variables: string[];
}

function isDocument(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date) && bsonTag(value) === undefined;
}

function field(value: unknown, name: string): unknown {
  return isDocument(value) && Object.hasOwn(value, name) ? value[name] : undefined;
}

function argument(scope: Scope, index: number): unknown {
  if (index >= scope.args.length) throw new RqlArgumentError(`the query reads $${index} but ${scope.args.length === 0 ? 'no arguments were' : `only ${scope.args.length} argument${scope.args.length === 1 ? ' was' : 's were'}`} given`);
  return scope.args[index];
}

/** One path step from one value; arrays found on the way are returned whole for the caller to spread. */
function step(value: unknown, segment: PathSegment, key: string | number | undefined): unknown {
  if (segment.name === '@keys') return isDocument(value) ? Object.keys(value) : undefined;
  if (segment.name === '@values') return isDocument(value) ? Object.values(value) : undefined;
  let next = field(value, segment.name);
  if (key === undefined) return next;
  if (typeof key === 'number') next = Array.isArray(next) ? next[key] : undefined;
  else next = field(next, key);
  return next;
}

/**
 * The values a path reaches: one value (null when missing), or Many when it went through a list.
 * `spreadLeaf` false keeps a list at the end of the path whole (for @size and @type).
 */
function compilePath(segments: PathSegment[], scope: Scope, spreadLeaf: boolean): Compiled {
  const slot = scope.variables.lastIndexOf(segments[0]!.name);
  const steps = slot >= 0 ? segments.slice(1) : segments;
  const keys = steps.map((s) => (s.index === undefined ? undefined : s.index.kind === 'argument' ? indexArgument(scope, s.index.index) : s.index.value));
  if (steps.length === 1 && keys[0] === undefined && slot < 0 && steps[0]!.name[0] !== '@') {
    const name = steps[0]!.name;
    return (doc) => {
      const value = isDocument(doc) && Object.hasOwn(doc, name) ? doc[name] : undefined;
      if (Array.isArray(value) && spreadLeaf) return new Many(value.map(nullIfMissing), 'any', true);
      return value ?? null;
    };
  }
  return (doc, vars) => {
    let value: unknown = slot >= 0 ? vars[slot] : doc;
    let many: unknown[] | undefined;
    let leafCollection = false;
    for (let i = 0; i < steps.length; i++) {
      const last = i === steps.length - 1;
      if (many) {
        const next: unknown[] = [];
        for (const v of many) {
          const x = step(v, steps[i]!, keys[i]);
          if (Array.isArray(x) && (!last || spreadLeaf)) next.push(...x);
          else next.push(x);
        }
        many = next;
      } else {
        const x = step(value, steps[i]!, keys[i]);
        if (Array.isArray(x) && (!last || spreadLeaf)) {
          many = x.slice();
          leafCollection = last;
        } else value = x;
      }
    }
    return many ? new Many(many.map(nullIfMissing), 'any', leafCollection) : value ?? null;
  };
}

function nullIfMissing(value: unknown): unknown {
  return value === undefined ? null : value;
}

function indexArgument(scope: Scope, index: number): string | number {
  const value = argument(scope, index);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
  throw new RqlArgumentError(`$${index} is used as a list index or dictionary key, so it must be a whole number or a string`);
}

function sizeOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.length;
  if (typeof value === 'string') return new TextEncoder().encode(value).length;
  if (isDocument(value)) return Object.keys(value).length;
  if (typeClass(value) === 'binary') return (value as { position: number }).position;
  return null;
}

function withQuantifier(value: unknown, quantifier: Quantifier | undefined): unknown {
  if (!quantifier) return value;
  if (value instanceof Many) return new Many(value.values, quantifier);
  // A missing or null list under ANY/ALL/NONE is an empty list, as a Realm list property is never null.
  return new Many(value === null ? [] : [value], quantifier);
}

function compileExpr(expr: Expr, scope: Scope): Compiled {
  switch (expr.kind) {
    case 'constant': {
      const value = literalValue(expr.literal);
      return () => value;
    }
    case 'argument': {
      const raw = argument(scope, expr.index);
      const value = Array.isArray(raw) ? new Many(raw.map(nullIfMissing), expr.quantifier, !expr.quantifier) : withQuantifier(raw ?? null, expr.quantifier);
      return () => value;
    }
    case 'list': {
      // Items are constants and arguments, so the list is built once.
      const items = expr.items.map((item) => compileExpr(item, scope)(undefined, []));
      const value = new Many(items.flatMap((item) => (item instanceof Many ? item.values : [item])), expr.quantifier, !expr.quantifier);
      return () => value;
    }
    case 'path': {
      if (expr.postOp) {
        const target = compilePath(expr.segments, scope, false);
        const apply = expr.postOp === 'size' ? sizeOf : typeName;
        return (doc, vars) => {
          const value = target(doc, vars);
          return value instanceof Many ? new Many(value.values.map(apply)) : apply(value);
        };
      }
      const path = compilePath(expr.segments, scope, true);
      if (!expr.quantifier) return path;
      const quantifier = expr.quantifier;
      return (doc, vars) => withQuantifier(path(doc, vars), quantifier);
    }
    case 'aggregate': {
      const path = compilePath(expr.segments, scope, true);
      const { op, field: name } = expr;
      return (doc, vars) => {
        const value = path(doc, vars);
        let values = value instanceof Many ? value.values : value === null ? [] : [value];
        if (name !== undefined) values = values.map((v) => field(v, name) ?? null);
        return aggregate(op, values.filter((v) => v !== null));
      };
    }
    case 'subquery': {
      const list = compilePath(expr.segments, scope, true);
      const inner = compilePredicate(expr.predicate, { args: scope.args, variables: [...scope.variables, expr.variable] });
      return (doc, vars) => {
        const value = list(doc, vars);
        const elements = value instanceof Many ? value.values : value === null ? [] : [value];
        let count = 0;
        for (const element of elements) if (inner(doc, [...vars, element])) count++;
        return count;
      };
    }
    case 'arithmetic': {
      const left = compileExpr(expr.left, scope), right = compileExpr(expr.right, scope);
      const op = expr.op;
      return (doc, vars) => arithmetic(op, left(doc, vars), right(doc, vars));
    }
  }
}

function asNumber(value: unknown): number | bigint | undefined {
  if (typeof value === 'number' || typeof value === 'bigint') return value;
  if (typeClass(value) !== 'number') return undefined;
  const tag = bsonTag(value as object);
  if (tag === 'Long') return BigInt((value as { toString(): string }).toString());
  return Number((value as { toString(): string }).toString());
}

function arithmetic(op: '+' | '-' | '*' | '/', l: unknown, r: unknown): unknown {
  const a = asNumber(l), b = asNumber(r);
  if (a === undefined || b === undefined) return null;
  const integral = (x: number | bigint) => typeof x === 'bigint' || Number.isSafeInteger(x);
  if (op !== '/' && integral(a) && integral(b)) {
    const x = BigInt(a), y = BigInt(b);
    const result = op === '+' ? x + y : op === '-' ? x - y : x * y;
    return result >= BigInt(Number.MIN_SAFE_INTEGER) && result <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(result) : result;
  }
  const x = Number(a), y = Number(b);
  return op === '+' ? x + y : op === '-' ? x - y : op === '*' ? x * y : x / y;
}

function aggregate(op: 'max' | 'min' | 'sum' | 'avg', values: unknown[]): unknown {
  if (op === 'max' || op === 'min') {
    let best: unknown = null;
    for (const v of values) {
      const c = typeClass(v);
      if (c !== 'number' && c !== 'date') continue;
      if (best === null) best = v;
      else {
        const order = compareValues(v, best);
        if (op === 'max' ? order > 0 : order < 0) best = v;
      }
    }
    return best;
  }
  const numbers = values.map(asNumber).filter((v): v is number | bigint => v !== undefined);
  if (op === 'avg') return numbers.length === 0 ? null : numbers.reduce<number>((s, v) => s + Number(v), 0) / numbers.length;
  if (numbers.every((v) => typeof v === 'bigint' || Number.isSafeInteger(v))) {
    const total = numbers.reduce<bigint>((s, v) => s + BigInt(v), 0n);
    return total >= BigInt(Number.MIN_SAFE_INTEGER) && total <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(total) : total;
  }
  return numbers.reduce<number>((s, v) => s + Number(v), 0);
}

/**
 * `*` matches any run of characters, `?` one character (code point). Linear in the text for a given
 * pattern, whatever both hold: the parts between `*`s are matched in order, each at its leftmost place
 * (which is where a match leaves the most text for the rest), the first at the start and the last at the
 * end; a part holding `?` is searched with a bit-parallel automaton (shift-and), so a text of n characters
 * costs n × ⌈part length / 32⌉ word operations at most, never n × the pattern's length in backtracking
 * (issue 33: a 20,000-character pattern against a 40,000-character value took 1.7 s before).
 */
export function likeMatches(text: string, pattern: string): boolean {
  if (!pattern.includes('?')) return likeWithoutSingles(text, pattern);
  const t = codePoints(text);
  const texts = pattern.split('*');
  const parts = texts.map((part) => memo(partCodes, part, () => codePoints(part)));
  const QUESTION = 0x3f;
  const first = parts[0]!, last = parts[parts.length - 1]!;
  const fits = (part: number[], at: number): boolean => {
    for (let i = 0; i < part.length; i++) if (part[i] !== QUESTION && part[i] !== t[at + i]) return false;
    return true;
  };
  if (parts.length === 1) return t.length === first.length && fits(first, 0);
  const end = t.length - last.length;
  if (end < first.length || !fits(first, 0) || !fits(last, end)) return false;
  let position = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    if (part.length === 0) continue;
    const at = leftmostWithSingles(t, texts[i]!, part, position, end);
    if (at < 0) return false;
    position = at + part.length;
  }
  return true;
}

/** Tables built from a pattern are kept for its next evaluations (a query's constants): the newest MEMO_LIMIT of each kind. */
const MEMO_LIMIT = 32;
const partCodes = new Map<string, number[]>();
const singlesTables = new Map<string, SinglesTables>();
const borders = new Map<string, Int32Array>();

function memo<V>(cache: Map<string, V>, key: string, build: () => V): V {
  let value = cache.get(key);
  if (value === undefined) {
    value = build();
    if (cache.size >= MEMO_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(key, value);
  }
  return value;
}

function codePoints(s: string): number[] {
  const out: number[] = [];
  for (const ch of s) out.push(ch.codePointAt(0)!);
  return out;
}

interface SinglesTables { m: number; words: number; wild: Int32Array; dense: Map<number, Int32Array>; sparse: Map<number, number[]> }

/** The shift-and masks of a part holding `?` (see leftmostWithSingles). */
function buildSinglesTables(part: readonly number[]): SinglesTables {
  const m = part.length;
  const words = (m + 31) >>> 5;
  const wild = new Int32Array(words);
  const positions = new Map<number, number[]>();
  for (let i = 0; i < m; i++) {
    const c = part[i]!;
    if (c === 0x3f) wild[i >>> 5]! |= 1 << (i & 31);
    else {
      let list = positions.get(c);
      if (!list) positions.set(c, (list = []));
      list.push(i);
    }
  }
  const denseThreshold = Math.max(1, words);
  const dense = new Map<number, Int32Array>();
  const sparse = new Map<number, number[]>();
  for (const [c, list] of positions) {
    if (list.length > denseThreshold) {
      const mask = Int32Array.from(wild);
      for (const i of list) mask[i >>> 5]! |= 1 << (i & 31);
      dense.set(c, mask);
    } else sparse.set(c, list);
  }
  return { m, words, wild, dense, sparse };
}

/**
 * Where `part` (code points, `?` any one) first occurs in `t` within [from, until), or -1: shift-and over
 * 32-bit words. A character's mask is the positions of `?` and of that character in the part; characters
 * frequent in the part keep a dense mask, the others a list of their positions (at most one word's worth
 * each), so memory stays proportional to the part and each text character costs O(part length / 32).
 */
function leftmostWithSingles(t: readonly number[], key: string, part: readonly number[], from: number, until: number): number {
  const { m, words, wild, dense, sparse } = memo(singlesTables, key, () => buildSinglesTables(part));
  const lastWord = words - 1, lastBit = 1 << ((m - 1) & 31);
  let state = new Int32Array(words), next = new Int32Array(words);
  // Words above `high` (of `state`) and `nextHigh` (of `next`, two characters old) are all zero: a match's
  // bits climb one position per character, so only the words up to one above `high` can change.
  let high = 0, nextHigh = 0;
  // A match ending at j starts at j - m + 1 >= from and ends before `until`.
  for (let j = from; j < until; j++) {
    const c = t[j]!;
    const mask = dense.get(c) ?? wild;
    const top = Math.min(lastWord, high + 1);
    let carry = 1;
    for (let w = 0; w <= top; w++) {
      const v = state[w]!;
      next[w] = ((v << 1) | carry) & mask[w]!;
      carry = v >>> 31;
    }
    let newHigh = top;
    while (newHigh > 0 && next[newHigh] === 0) newHigh--;
    for (let w = top + 1; w <= nextHigh; w++) next[w] = 0;
    const list = mask === wild ? sparse.get(c) : undefined;
    if (list) {
      for (const i of list) {
        const w = i >>> 5;
        if (w > top) break;
        const before = i === 0 ? 1 : (state[(i - 1) >>> 5]! >>> ((i - 1) & 31)) & 1;
        if (before) {
          next[w] = next[w]! | (1 << (i & 31));
          if (w > newHigh) newHigh = w;
        }
      }
    }
    [state, next] = [next, state];
    nextHigh = Math.max(high, top);
    high = newHigh;
    if ((state[lastWord]! & lastBit) !== 0) return j - m + 1;
  }
  return -1;
}

/** Needles up to this long are searched with `indexOf`: its worst case (text × needle) stays small. */
const NATIVE_SEARCH_MAX = 32;

/**
 * `text.indexOf(needle, from)` in time linear in both (Knuth-Morris-Pratt for long needles): V8's search
 * is text × needle at worst, and a 30,001-character needle of a's around one b took 0.5 s in 90,000 a's.
 */
export function indexOfLinear(text: string, needle: string, from: number): number {
  const m = needle.length;
  if (m <= NATIVE_SEARCH_MAX) return text.indexOf(needle, from);
  const border = memo(borders, needle, () => {
    const table = new Int32Array(m);
    for (let i = 1, k = 0; i < m; i++) {
      while (k > 0 && needle.charCodeAt(i) !== needle.charCodeAt(k)) k = table[k - 1]!;
      if (needle.charCodeAt(i) === needle.charCodeAt(k)) k++;
      table[i] = k;
    }
    return table;
  });
  for (let j = Math.max(0, from), k = 0; j < text.length; j++) {
    const c = text.charCodeAt(j);
    while (k > 0 && c !== needle.charCodeAt(k)) k = border[k - 1]!;
    if (c === needle.charCodeAt(k)) k++;
    if (k === m) return j - m + 1;
  }
  return -1;
}

/** Only `*`: the literal parts in order, each at its leftmost place, the first at the start, the last at the end. */
function likeWithoutSingles(text: string, pattern: string): boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return text === pattern;
  const first = parts[0]!, last = parts[parts.length - 1]!;
  const end = text.length - last.length;
  if (end < first.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let position = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    if (part === '') continue;
    const at = indexOfLinear(text, part, position);
    if (at < 0 || at + part.length > end) return false;
    position = at + part.length;
  }
  return true;
}

function stringTest(op: CompareOp, caseInsensitive: boolean): Test {
  const fold = caseInsensitive ? foldCase : (s: string) => s;
  const check: (s: string, p: string) => boolean =
    op === 'BEGINSWITH' ? (s, p) => s.startsWith(p)
      : op === 'ENDSWITH' ? (s, p) => s.endsWith(p)
        : op === 'CONTAINS' ? (s, p) => indexOfLinear(s, p, 0) >= 0
          : likeMatches;
  // The pattern is nearly always one constant: it is folded once, not per document.
  let lastPattern: string | undefined;
  let lastFolded = '';
  return (l, r) => {
    const s = stringOf(l), p = stringOf(r);
    if (s === undefined || p === undefined) return false;
    if (p !== lastPattern) {
      lastPattern = p;
      lastFolded = fold(p);
    }
    return check(fold(s), lastFolded);
  };
}

function relational(op: '<' | '<=' | '>' | '>='): Test {
  return (l, r) => {
    if (l === null || r === null) return false;
    const order = typeof l === 'number' && typeof r === 'number' ? (l < r ? -1 : l > r ? 1 : l === r ? 0 : NaN) : compareValues(l, r);
    switch (op) {
      case '<': return order < 0;
      case '<=': return order <= 0;
      case '>': return order > 0;
      case '>=': return order >= 0;
    }
  };
}

function testFor(op: CompareOp, caseInsensitive: boolean): Test {
  switch (op) {
    case '==': case 'IN':
      return caseInsensitive ? (l, r) => compareValues(l, r, true) === 0 : equals;
    case '!=':
      return caseInsensitive ? (l, r) => compareValues(l, r, true) !== 0 : (l, r) => !equals(l, r);
    case '<': case '<=': case '>': case '>=':
      return relational(op);
    default:
      return stringTest(op, caseInsensitive);
  }
}

/** Equality without the general comparison for the common cases: two strings, two doubles. */
function equals(l: unknown, r: unknown): boolean {
  if (l === r) return true;
  const tl = typeof l, tr = typeof r;
  if (tl === 'string' && tr === 'string') return false;
  // NaN equals NaN.
  if (tl === 'number' && tr === 'number') return l !== l && r !== r;
  return compareValues(l, r) === 0;
}

function quantify(values: unknown[], quantifier: Quantifier, holds: (v: unknown) => boolean): boolean {
  switch (quantifier) {
    case 'any':
      for (const v of values) if (holds(v)) return true;
      return false;
    case 'all':
      for (const v of values) if (!holds(v)) return false;
      return true;
    case 'none':
      for (const v of values) if (holds(v)) return false;
      return true;
  }
}

/** Two collections compared whole: the same length and equal elements in order. */
function sameCollection(l: Many, r: Many): boolean {
  return l.values.length === r.values.length && l.values.every((v, i) => equals(v, r.values[i]));
}

function combine(l: unknown, r: unknown, test: Test, op?: CompareOp): boolean {
  if (l instanceof Many && r instanceof Many && l.collection && r.collection && op) {
    if (op === '==' || op === 'IN') return sameCollection(l, r);
    if (op === '!=') return !sameCollection(l, r);
    return false;
  }
  if (l instanceof Many) return quantify(l.values, l.quantifier, (v) => (r instanceof Many ? quantify(r.values, r.quantifier, (w) => test(v, w)) : test(v, r)));
  if (r instanceof Many) return quantify(r.values, r.quantifier, (w) => test(l, w));
  return test(l, r);
}

function compilePredicate(predicate: Predicate, scope: Scope): CompiledPredicate {
  switch (predicate.kind) {
    case 'true': return () => true;
    case 'false': return () => false;
    case 'not': {
      const inner = compilePredicate(predicate.operand, scope);
      return (doc, vars) => !inner(doc, vars);
    }
    case 'and': {
      const parts = predicate.operands.map((p) => compilePredicate(p, scope));
      if (parts.length === 2) {
        const [a, b] = parts as [CompiledPredicate, CompiledPredicate];
        return (doc, vars) => a(doc, vars) && b(doc, vars);
      }
      return (doc, vars) => parts.every((p) => p(doc, vars));
    }
    case 'or': {
      const parts = predicate.operands.map((p) => compilePredicate(p, scope));
      return (doc, vars) => parts.some((p) => p(doc, vars));
    }
    case 'between': {
      const value = compileExpr(predicate.value, scope), low = compileExpr(predicate.low, scope), high = compileExpr(predicate.high, scope);
      const atLeast = relational('>='), atMost = relational('<=');
      return (doc, vars) => {
        const lo = low(doc, vars), hi = high(doc, vars);
        return combine(value(doc, vars), null, (v) => atLeast(v, lo) && atMost(v, hi));
      };
    }
    case 'compare': {
      // realm-core drops [c] against a list literal (`x IN[c] {"A"}` is case-sensitive); so does this.
      const caseInsensitive = predicate.caseInsensitive && !isListOperand(predicate.right, scope) && !isListOperand(predicate.left, scope);
      const test = testFor(predicate.op, caseInsensitive);
      const fast = simpleComparison(predicate, scope, test);
      if (fast) return fast;
      const left = compileExpr(predicate.left, scope), right = compileExpr(predicate.right, scope);
      const op = predicate.op;
      return (doc, vars) => combine(left(doc, vars), right(doc, vars), test, op);
    }
  }
}

function isListOperand(expr: Expr, scope: Scope): boolean {
  return expr.kind === 'list' || (expr.kind === 'argument' && Array.isArray(argument(scope, expr.index)));
}

/** `name <op> constant` on a top-level field, the shape nearly every subscription has, without allocations. */
function simpleComparison(predicate: Predicate & { kind: 'compare' }, scope: Scope, test: Test): CompiledPredicate | undefined {
  const { left, right } = predicate;
  if (left.kind !== 'path' || left.quantifier || left.postOp || left.segments.length !== 1) return undefined;
  const segment = left.segments[0]!;
  if (segment.index || segment.name[0] === '@' || scope.variables.includes(segment.name)) return undefined;
  const name = segment.name;
  const members = (predicate.op === 'IN' || predicate.op === '==') ? stringSet(right, scope) : undefined;
  if (members) {
    return (doc) => {
      const value = isDocument(doc) && Object.hasOwn(doc, name) ? doc[name] : undefined;
      if (typeof value === 'string') return members.has(value);
      // A list property against the list: compared as collections.
      if (Array.isArray(value)) return value.length === members.ordered.length && value.every((v, i) => v === members.ordered[i]);
      return false;
    };
  }
  if (right.kind !== 'constant' && !(right.kind === 'argument' && !right.quantifier && !Array.isArray(argument(scope, right.index)))) return undefined;
  const constant = right.kind === 'constant' ? literalValue(right.literal) : argument(scope, right.index) ?? null;
  return (doc) => {
    const value = isDocument(doc) && Object.hasOwn(doc, name) ? doc[name] : undefined;
    if (Array.isArray(value)) {
      for (const element of value) if (test(element ?? null, constant)) return true;
      return false;
    }
    return test(value ?? null, constant);
  };
}

/** The strings of a list (literal or argument) holding only strings, the form of `owner_id IN {…}`. */
function stringSet(expr: Expr, scope: Scope): (Set<string> & { ordered: string[] }) | undefined {
  let values: unknown[];
  if (expr.kind === 'list' && !expr.quantifier) {
    values = expr.items.map((item) => (item.kind === 'constant' ? literalValue(item.literal) : item.kind === 'argument' && !item.quantifier ? argument(scope, item.index) : undefined));
  } else if (expr.kind === 'argument' && !expr.quantifier && Array.isArray(argument(scope, expr.index))) {
    values = argument(scope, expr.index) as unknown[];
  } else return undefined;
  if (!values.every((v): v is string => typeof v === 'string')) return undefined;
  return Object.assign(new Set(values), { ordered: values });
}

const compiledWithoutArguments = new WeakMap<object, DocumentMatcher>();

/**
 * The query as a function of one document. Throws RqlArgumentError when the query reads an argument
 * that `args` lacks. SORT/DISTINCT/LIMIT are not part of it (see applyDescriptors).
 */
export function compileRql(query: RqlQuery | Predicate, args: RqlArguments = []): DocumentMatcher {
  const predicate = 'predicate' in query ? query.predicate : query;
  const compiled = compilePredicate(predicate, { args, variables: [] });
  const none: Vars = [];
  return (doc) => compiled(doc, none);
}

/** Whether one document matches; the compiled form is kept per query when there are no arguments. */
export function matches(query: RqlQuery | Predicate, document: unknown, args?: RqlArguments): boolean {
  if (args && args.length > 0) return compileRql(query, args)(document);
  let matcher = compiledWithoutArguments.get(query);
  if (!matcher) {
    matcher = compileRql(query);
    compiledWithoutArguments.set(query, matcher);
  }
  return matcher(document);
}

function valueAt(doc: unknown, path: string[]): unknown {
  let value = doc;
  for (const name of path) value = field(value, name);
  return value ?? null;
}

const CLASS_RANK: Record<string, number> = { null: 0, number: 1, string: 2, object: 3, array: 4, binary: 5, objectId: 6, boolean: 7, date: 8, other: 9 };

/** Sort order across types (MongoDB's bracket order, nulls first), within a type by compareValues. */
function sortOrder(a: unknown, b: unknown): number {
  const ca = typeClass(a), cb = typeClass(b);
  if (ca !== cb) return CLASS_RANK[ca]! - CLASS_RANK[cb]!;
  const order = ca === 'number' ? compareNumbers(a, b) : compareValues(a, b);
  return Number.isNaN(order) ? 0 : order;
}

function distinctKey(value: unknown): string {
  const c = typeClass(value);
  if (c === 'number') return `n:${Number((value as { toString(): string }).toString())}`;
  if (c === 'date') return `d:${(value as Date).getTime()}`;
  if (c === 'objectId') return `o:${(value as { toHexString(): string }).toHexString()}`;
  if (c === 'string' || c === 'boolean' || c === 'null') return `${c}:${String(value)}`;
  return `${c}:${JSON.stringify(value)}`;
}

/** SORT, DISTINCT and LIMIT applied in the order the query writes them; returns a new array. */
export function applyDescriptors<T>(documents: readonly T[], descriptors: readonly Descriptor[]): T[] {
  let result = documents.slice();
  for (const d of descriptors) {
    if (d.kind === 'sort') {
      result.sort((x, y) => {
        for (const key of d.keys) {
          const order = sortOrder(valueAt(x, key.path), valueAt(y, key.path));
          if (order !== 0) return key.ascending ? order : -order;
        }
        return 0;
      });
    } else if (d.kind === 'distinct') {
      const seen = new Set<string>();
      result = result.filter((doc) => {
        const key = d.paths.map((p) => distinctKey(valueAt(doc, p))).join('\u0000');
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
    } else {
      result = result.slice(0, d.count);
    }
  }
  return result;
}
