// Translation of an RQL query to a MongoDB query filter, for the operators where the filter selects
// exactly the documents `matches` selects, so the store can find a subscription's documents by index.
// Anything else is reported untranslatable (with the span at fault) and the caller filters with
// `matches` instead. The filters run on the runtime's store (mingo with RE2 regular expressions) and
// on MongoDB (PCRE), so patterns end with `\z`, which both read as "end of text".
import { Decimal128, Long } from 'bson';
import type { CompareOp, Descriptor, Expr, PathSegment, Predicate, RqlQuery, Span } from './ast';
import { RqlArgumentError, type RqlArguments } from './evaluate';
import { Base64Value, TimestampValue, bsonTag, isPlainObject, literalValue, typeClass } from './values';

export type Filter = Record<string, unknown>;

export type MongoTranslation =
  | { ok: true; filter: Filter; sort?: Record<string, 1 | -1>; limit?: number }
  | { ok: false; reason: string; span: Span };

/** Longest CONTAINS / LIKE value turned into a `$regex`. */
const MAX_SEARCHED_LITERAL = 256;

class Untranslatable extends Error {
  constructor(readonly reason: string, readonly span: Span) {
    super(reason);
  }
}

const FLIPPED: Partial<Record<CompareOp, CompareOp>> = { '==': '==', '!=': '!=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };
const RELATIONAL: Partial<Record<CompareOp, string>> = { '<': '$lt', '<=': '$lte', '>': '$gt', '>=': '$gte' };

/** A single value or a list (`{…}`, or an array argument) on the constant side of a comparison. */
type Operand = { list: false; value: unknown } | { list: true; values: unknown[] };

function escapeRegex(s: string): string {
  return s.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}

function likeToRegex(pattern: string): string {
  let out = '^';
  for (const ch of pattern) out += ch === '*' ? '.*' : ch === '?' ? '.' : escapeRegex(ch);
  return `${out}\\z`;
}

class Translator {
  constructor(private readonly args: RqlArguments) {}

  predicate(p: Predicate): Filter {
    switch (p.kind) {
      case 'true': return {};
      case 'false': return { $nor: [{}] };
      case 'and': return { $and: p.operands.map((o) => this.predicate(o)) };
      case 'or': return { $or: p.operands.map((o) => this.predicate(o)) };
      case 'not': return { $nor: [this.predicate(p.operand)] };
      case 'between': return this.between(p);
      case 'compare': return this.compare(p);
    }
  }

  /** The dotted field name of a plain path, refusing what has no MongoDB equivalent. */
  private fieldName(expr: Expr & { kind: 'path' }): string {
    if (expr.postOp) throw new Untranslatable(`@${expr.postOp === 'size' ? 'size/@count' : 'type'} has no exact MongoDB filter`, expr.span);
    const bad = expr.segments.find((s: PathSegment) => s.index || s.name.startsWith('@') || s.name.startsWith('$') || s.name.includes('.') || s.name === '' || s.name.includes('\0'));
    if (bad) throw new Untranslatable(`the property "${bad.name}" has no MongoDB field path`, bad.span);
    return expr.segments.map((s) => s.name).join('.');
  }

  private constantValue(value: unknown, span: Span): unknown {
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
    if (typeof value === 'number') {
      if (Number.isNaN(value)) throw new Untranslatable('NaN orders differently in MongoDB', span);
      return value;
    }
    if (typeof value === 'bigint') return Long.fromBigInt(value);
    if (value instanceof TimestampValue) {
      if (!value.wholeMilliseconds) throw new Untranslatable('a timestamp with sub-millisecond precision has no exact MongoDB date', span);
      return value.toDate();
    }
    if (value instanceof Base64Value) throw new Untranslatable('a B64"…" value compares as a string or as binary data, which one filter cannot say', span);
    if (value instanceof Date) return value;
    const tag = typeof value === 'object' ? bsonTag(value) : undefined;
    if (tag === 'ObjectId' || tag === 'Binary' || tag === 'Long' || tag === 'Int32' || tag === 'Double' || tag === 'Decimal128') return value;
    throw new Untranslatable(`a ${typeClass(value)} value has no exact MongoDB filter`, span);
  }

  private operand(expr: Expr): Operand {
    switch (expr.kind) {
      case 'constant': return { list: false, value: this.constantValue(literalValue(expr.literal), expr.span) };
      case 'argument': {
        if (expr.quantifier && expr.quantifier !== 'any') throw new Untranslatable(`${expr.quantifier.toUpperCase()} on an argument has no exact MongoDB filter`, expr.span);
        if (expr.index >= this.args.length) throw new RqlArgumentError(`the query reads $${expr.index} but only ${this.args.length} arguments were given`);
        const value = this.args[expr.index];
        if (Array.isArray(value)) return { list: true, values: value.map((v) => this.constantValue(v ?? null, expr.span)) };
        if (isPlainObject(value)) throw new Untranslatable('an object argument has no exact MongoDB filter', expr.span);
        return { list: false, value: this.constantValue(value ?? null, expr.span) };
      }
      case 'list': {
        if (expr.quantifier && expr.quantifier !== 'any') throw new Untranslatable(`${expr.quantifier.toUpperCase()} on a list has no exact MongoDB filter`, expr.span);
        const values: unknown[] = [];
        for (const item of expr.items) {
          const inner = this.operand(item);
          if (inner.list) values.push(...inner.values);
          else values.push(inner.value);
        }
        return { list: true, values };
      }
      default:
        throw new Untranslatable(`${expr.kind === 'path' ? 'comparing two properties' : expr.kind === 'aggregate' ? 'an aggregate' : expr.kind === 'subquery' ? 'SUBQUERY' : 'arithmetic'} has no exact MongoDB filter`, expr.span);
    }
  }

  /** Non-integer doubles also match the decimal of the same text, as `matches` does. */
  private equalValues(value: unknown): unknown[] {
    if (typeof value === 'number' && Number.isFinite(value) && !Number.isInteger(value)) return [value, Decimal128.fromString(String(value))];
    return [value];
  }

  private compare(p: Predicate & { kind: 'compare' }): Filter {
    let { left, right, op } = p;
    if (left.kind !== 'path' && right.kind === 'path') {
      if (op === 'IN') op = '==';
      else if (FLIPPED[op]) op = FLIPPED[op]!;
      else throw new Untranslatable(`${op} with the property on the right has no exact MongoDB filter`, p.span);
      [left, right] = [right, left];
    }
    if (left.kind !== 'path') {
      this.operand(left);
      throw new Untranslatable('a comparison without a property has no MongoDB filter', p.span);
    }
    if (left.quantifier === 'all') throw new Untranslatable('ALL has no exact MongoDB filter', left.span);
    const name = this.fieldName(left);
    const dotted = left.segments.length > 1;
    const operand = this.operand(right);
    if (left.quantifier) {
      // Under ANY/NONE a missing field is an empty list, where MongoDB sees null.
      if (op === '!=') throw new Untranslatable(`${left.quantifier.toUpperCase()} with != has no exact MongoDB filter`, p.span);
      if (operand.list ? operand.values.includes(null) : operand.value === null) throw new Untranslatable(`${left.quantifier.toUpperCase()} against null has no exact MongoDB filter`, p.span);
    }
    const filter = this.condition(name, dotted, op, p.caseInsensitive, operand, p.span, !left.quantifier && (right.kind === 'list' || right.kind === 'argument'));
    return left.quantifier === 'none' ? { $nor: [filter] } : filter;
  }

  /** `wholeList`: an unquantified property against an unquantified list, which compares a list property as a whole collection. */
  private condition(name: string, dotted: boolean, op: CompareOp, caseInsensitive: boolean, operand: Operand, span: Span, wholeList = false): Filter {
    if (operand.list) {
      if ((op !== '==' && op !== 'IN') || caseInsensitive) throw new Untranslatable(`${op}${caseInsensitive ? '[c]' : ''} against a list has no exact MongoDB filter`, span);
      if (dotted && operand.values.includes(null)) throw new Untranslatable('null through an embedded path has no exact MongoDB filter', span);
      const members = { $in: operand.values.flatMap((v) => this.equalValues(v)) };
      if (!wholeList) return { [name]: members };
      if (dotted) throw new Untranslatable('a list against a path through embedded objects has no exact MongoDB filter', span);
      // A scalar is one of the values; a list property equals the list as a whole.
      return { $or: [{ [name]: { $not: { $type: 'array' }, ...members } }, { [name]: { $eq: operand.values } }] };
    }
    const value = operand.value;
    if (dotted && value === null) throw new Untranslatable('null through an embedded path has no exact MongoDB filter', span);
    switch (op) {
      case '==': case 'IN': {
        if (caseInsensitive) {
          if (typeof value !== 'string') return { [name]: { $in: this.equalValues(value) } };
          return { [name]: { $regex: `^${escapeRegex(value)}\\z`, $options: 'is' } };
        }
        const values = this.equalValues(value);
        return { [name]: values.length === 1 ? value : { $in: values } };
      }
      case '!=': {
        if (dotted) throw new Untranslatable('!= through an embedded path has no exact MongoDB filter', span);
        if (caseInsensitive && typeof value === 'string') throw new Untranslatable('!=[c] has no exact MongoDB filter', span);
        const values = this.equalValues(value);
        return { $or: [{ [name]: { $not: { $type: 'array' }, $nin: values } }, { [name]: { $elemMatch: { $nin: values } } }] };
      }
      case '<': case '<=': case '>': case '>=': {
        if (value === null) throw new Untranslatable(`${op} null has no exact MongoDB filter`, span);
        return { [name]: { [RELATIONAL[op]!]: value } };
      }
      default: {
        if (typeof value !== 'string') throw new Untranslatable(`${op} with a value that is not a string has no MongoDB filter`, span);
        // A regular expression engine searches a long literal in text × literal steps (RE2JS through
        // String.indexOf: 28,000 characters in 90,000 took 0.25 s); `evaluate.ts`'s matcher is linear.
        if ((op === 'CONTAINS' || op === 'LIKE') && value.length > MAX_SEARCHED_LITERAL) throw new Untranslatable(`${op} with a value over ${MAX_SEARCHED_LITERAL} characters is matched in memory`, span);
        const pattern = op === 'BEGINSWITH' ? `^${escapeRegex(value)}` : op === 'ENDSWITH' ? `${escapeRegex(value)}\\z` : op === 'CONTAINS' ? escapeRegex(value) : likeToRegex(value);
        return { [name]: { $regex: pattern, $options: caseInsensitive ? 'is' : 's' } };
      }
    }
  }

  private between(p: Predicate & { kind: 'between' }): Filter {
    const value = p.value;
    if (value.kind !== 'path' || value.quantifier === 'all') throw new Untranslatable('BETWEEN needs a property (without ALL) to have a MongoDB filter', p.value.span);
    const name = this.fieldName(value);
    if (value.segments.length > 1) throw new Untranslatable('BETWEEN through an embedded path has no exact MongoDB filter', p.span);
    const low = this.operand(p.low), high = this.operand(p.high);
    if (low.list || high.list || low.value === null || high.value === null) throw new Untranslatable('BETWEEN takes two single values', p.span);
    const range = { $gte: low.value, $lte: high.value };
    const filter = { $or: [{ [name]: { $not: { $type: 'array' }, ...range } }, { [name]: { $elemMatch: range } }] };
    return value.quantifier === 'none' ? { $nor: [filter] } : filter;
  }

  descriptors(descriptors: readonly Descriptor[]): { sort?: Record<string, 1 | -1>; limit?: number } {
    let sort: Record<string, 1 | -1> | undefined;
    let limit: number | undefined;
    for (const d of descriptors) {
      if (d.kind === 'distinct') throw new Untranslatable('DISTINCT has no MongoDB filter', d.span);
      if (d.kind === 'sort') {
        if (sort || limit !== undefined) throw new Untranslatable('only one SORT, before LIMIT, has a MongoDB equivalent', d.span);
        sort = {};
        for (const key of d.keys) sort[key.path.join('.')] = key.ascending ? 1 : -1;
      } else {
        limit = limit === undefined ? d.count : Math.min(limit, d.count);
      }
    }
    return { ...(sort ? { sort } : {}), ...(limit !== undefined ? { limit } : {}) };
  }
}

/**
 * The MongoDB filter selecting exactly the documents `matches(query, doc, args)` selects, with SORT and
 * LIMIT as `sort`/`limit`; or why there is none (then filter with `matches`). Throws RqlArgumentError
 * when the query reads an argument that `args` lacks.
 */
export function toMongoFilter(query: RqlQuery | Predicate, args: RqlArguments = []): MongoTranslation {
  const translator = new Translator(args);
  try {
    if ('predicate' in query) return { ok: true, filter: translator.predicate(query.predicate), ...translator.descriptors(query.descriptors) };
    return { ok: true, filter: translator.predicate(query) };
  } catch (error) {
    if (error instanceof Untranslatable) return { ok: false, reason: error.reason, span: error.span };
    throw error;
  }
}
