// Regular expressions from clients run in linear time. A pattern such as `^(a+)+$` makes a backtracking
// engine (V8's) take minutes on a short input, on the thread that serves every client; RE2JS (a pure
// JavaScript port of RE2) never backtracks. Filters and pipelines are rewritten before mingo sees them:
// every `$regex`, regular expression value and regular expression inside `$in`/`$nin`/`$all` becomes the
// `$linearRegex` query operator, and the `$regexMatch`/`$regexFind`/`$regexFindAll` expressions are
// replaced by linear ones. Patterns RE2 cannot run in linear time (backreferences, lookaround) are
// refused with a clear error instead. The same operator tables bound what one evaluation may compute
// (evaluation-limits.ts).
import { RE2JS } from 're2js';
import { Aggregator as AggregatorBase } from 'mingo/aggregator';
import { Context, evalExpr } from 'mingo/core';
import * as accumulatorOperators from 'mingo/operators/accumulator';
import * as expressionOperators from 'mingo/operators/expression';
import * as pipelineOperators from 'mingo/operators/pipeline';
import * as projectionOperators from 'mingo/operators/projection';
import * as queryOperators from 'mingo/operators/query';
import * as windowOperators from 'mingo/operators/window';
import { Query as QueryBase } from 'mingo/query';
import type { Options } from 'mingo/types';
import { bsonType } from './bson-values';
import { boundedExpressionOperators, boundedPipelineOperators } from './evaluation-limits';
import { StoreError, type Document } from './types';

/** A compiled pattern in the shape mingo's `$regex` predicate calls (`exec` on each string). */
interface LinearPattern { exec(input: string): true | null; re2: RE2JS }

/** The form a regular expression takes in a rewritten filter: plain data, so mingo's deep copies keep it. */
interface PatternSpec { pattern: string; options: string }

const MAX_PATTERN_LENGTH = 32 * 1024;
const PATTERNS_KEPT = 1000;
const compiled = new Map<string, RE2JS>();

/** Applies MongoDB's `x` option: whitespace and `#` comments outside character classes are dropped. */
function withoutExtendedSyntax(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      out += c + (pattern[i + 1] ?? '');
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
      out += c;
    } else if (c === '[') {
      inClass = true;
      out += c;
    } else if (c === '#') {
      while (i < pattern.length && pattern[i] !== '\n') i++;
    } else if (!/\s/.test(c)) {
      out += c;
    }
  }
  return out;
}

/** The RE2 program of a pattern with MongoDB's options (i, m, s, x, u); a StoreError naming the pattern when refused. */
export function linearRegex(pattern: string, options = ''): RE2JS {
  const key = `${options}/${pattern}`;
  const hit = compiled.get(key);
  if (hit) return hit;
  if (typeof pattern !== 'string') throw StoreError.badValue('$regex has to be a string');
  if (pattern.length > MAX_PATTERN_LENGTH) throw StoreError.badValue(`regular expression is too long (${pattern.length} characters; the limit is ${MAX_PATTERN_LENGTH})`);
  let flags = 0;
  let source = pattern;
  for (const option of options) {
    if (option === 'i') flags |= RE2JS.CASE_INSENSITIVE;
    else if (option === 'm') flags |= RE2JS.MULTILINE;
    else if (option === 's') flags |= RE2JS.DOTALL;
    else if (option === 'x') source = withoutExtendedSyntax(pattern);
    else if (option !== 'u') throw StoreError.badValue(`invalid flag in regex options: ${option}`);
  }
  let re2: RE2JS;
  try {
    re2 = RE2JS.compile(source, flags);
  } catch (error) {
    const reason = (error as Error).message.replace(/^error parsing regexp: /, '');
    throw StoreError.badValue(`regular expression /${pattern}/${options} is refused: ${reason} (patterns run in linear time, so backreferences and lookaround are not supported)`);
  }
  compiled.set(key, re2);
  if (compiled.size > PATTERNS_KEPT) compiled.delete(compiled.keys().next().value!);
  return re2;
}

function patternOf(spec: unknown): LinearPattern {
  const { pattern, options } = spec as PatternSpec;
  const re2 = linearRegex(pattern, options);
  return { re2, exec: (input) => (re2.test(input) ? true : null) };
}

/** A regular expression value in any of the forms a filter carries it, as plain data; undefined for other values. */
function regexSpec(value: unknown): PatternSpec | undefined {
  if (value instanceof RegExp) return { pattern: value.source, options: value.flags.replace(/[gyd]/g, '') };
  if (value !== null && typeof value === 'object' && bsonType(value) === 'BSONRegExp') {
    const { pattern, options } = value as unknown as PatternSpec;
    return { pattern, options };
  }
  return undefined;
}

function checkedSpec(pattern: unknown, options: unknown): PatternSpec {
  const fromValue = regexSpec(pattern);
  if (options !== undefined && typeof options !== 'string') throw StoreError.badValue('$options has to be a string');
  const spec = fromValue
    ? { pattern: fromValue.pattern, options: `${fromValue.options}${options ?? ''}` }
    : typeof pattern === 'string' ? { pattern, options: (options as string | undefined) ?? '' } : undefined;
  if (!spec) throw StoreError.badValue('$regex has to be a string');
  linearRegex(spec.pattern, spec.options);
  return spec;
}

const isPlainObject = (value: unknown): value is Document =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null);

const isOperatorObject = (value: unknown): value is Document =>
  isPlainObject(value) && Object.keys(value).some((key) => key.startsWith('$'));

/** A filter with every regular expression in the `$linearRegex` form; the filter itself when it has none. */
export function withLinearRegexes(filter: Document): Document {
  let out: Document | undefined;
  const extra: Document[] = [];
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    let mapped: unknown = value;
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (Array.isArray(value)) {
        const items = value.map((item) => (isPlainObject(item) ? withLinearRegexes(item) : item));
        if (items.some((item, i) => item !== value[i])) mapped = items;
      }
    } else if (!key.startsWith('$')) {
      mapped = conditionWithLinearRegexes(key, value, extra);
    }
    if (mapped !== value) {
      out ??= { ...filter };
      if (mapped === undefined) delete out[key];
      else out[key] = mapped;
    }
  }
  if (extra.length === 0) return out ?? filter;
  out ??= { ...filter };
  out.$and = [...(Array.isArray(out.$and) ? out.$and : []), ...extra];
  return out;
}

/** One field's condition; clauses that must sit beside it (regexes of `$in`, `$nin`, `$all`) go to `extra`. */
function conditionWithLinearRegexes(field: string, value: unknown, extra: Document[], negated = false): unknown {
  const spec = regexSpec(value);
  if (spec) return { $linearRegex: checkedSpec(value, undefined) };
  if (!isOperatorObject(value)) return value;
  let out: Document | undefined;
  const copy = () => (out ??= { ...value });
  if (Object.hasOwn(value, '$regex')) {
    copy().$linearRegex = checkedSpec(value.$regex, value.$options);
    delete out!.$regex;
    delete out!.$options;
  } else if (Object.hasOwn(value, '$options')) {
    throw StoreError.badValue('$options needs a $regex');
  }
  if (Object.hasOwn(value, '$not')) {
    const inner = value.$not;
    const mapped = regexSpec(inner) ? { $linearRegex: checkedSpec(inner, undefined) } : isOperatorObject(inner) ? conditionWithLinearRegexes(field, inner, extra, true) : inner;
    if (mapped !== inner) copy().$not = mapped;
  }
  if (Object.hasOwn(value, '$elemMatch') && isPlainObject(value.$elemMatch)) {
    const inner = value.$elemMatch;
    const mapped = isOperatorObject(inner) && !Object.keys(inner).some((k) => k === '$and' || k === '$or' || k === '$nor')
      ? conditionWithLinearRegexes(field, inner, extra, true)
      : withLinearRegexes(inner);
    if (mapped !== inner) copy().$elemMatch = mapped;
  }
  for (const operator of ['$in', '$nin', '$all'] as const) {
    const list = value[operator];
    if (!Array.isArray(list) || !list.some((item) => regexSpec(item))) continue;
    if (negated) throw StoreError.badValue(`regular expressions in ${operator} are not supported inside $not or $elemMatch`);
    const others = list.filter((item) => !regexSpec(item));
    const regexes = list.filter((item) => regexSpec(item)).map((item) => ({ [field]: { $linearRegex: checkedSpec(item, undefined) } }));
    delete copy()[operator];
    if (operator === '$all') {
      if (others.length > 0) out![operator] = others;
      extra.push(...regexes);
    } else {
      const alternatives = [...(others.length > 0 ? [{ [field]: { $in: others } }] : []), ...regexes];
      extra.push(operator === '$in' ? { $or: alternatives } : { $nor: alternatives });
    }
  }
  if (out && Object.keys(out).length === 0) return undefined;
  return out ?? value;
}

/** A pipeline whose `$match` stages (also in `$lookup`, `$facet`, `$unionWith`) carry their regexes as `$linearRegex`. */
export function pipelineWithLinearRegexes(stages: Document[]): Document[] {
  return stages.map((stage) => {
    if (!isPlainObject(stage)) return stage;
    const [name] = Object.keys(stage);
    const body = name === undefined ? undefined : stage[name];
    if (name === '$match' && isPlainObject(body)) return { $match: withLinearRegexes(body) };
    if ((name === '$lookup' || name === '$unionWith') && isPlainObject(body) && Array.isArray(body.pipeline)) {
      return { [name]: { ...body, pipeline: pipelineWithLinearRegexes(body.pipeline as Document[]) } };
    }
    if (name === '$facet' && isPlainObject(body)) {
      return { $facet: Object.fromEntries(Object.entries(body).map(([k, v]) => [k, Array.isArray(v) ? pipelineWithLinearRegexes(v as Document[]) : v])) };
    }
    return stage;
  });
}

const $linearRegex = (selector: string, value: unknown, options: Options) => queryOperators.$regex(selector, patternOf(value), options);

interface RegexSearchArgs { input?: unknown; regex?: unknown; options?: unknown }
interface RegexMatchResult { match: string; idx: number; captures: (string | null)[] }

/** `$regexFind`/`$regexFindAll`/`$regexMatch` with RE2: the same results mingo's own give, in linear time. */
function regexSearch(obj: unknown, expr: unknown, options: Options, global: boolean): RegexMatchResult[] {
  const args = evalExpr(obj, expr, options) as RegexSearchArgs;
  if (typeof args?.input !== 'string') return [];
  const spec = regexSpec(args.regex);
  if (args.options !== undefined && args.options !== null && typeof args.options !== 'string') throw StoreError.badValue('regex options must be a string');
  const re2 = linearRegex(spec ? spec.pattern : String(args.regex), `${spec?.options ?? ''}${(args.options as string | null | undefined) ?? ''}`);
  const matcher = re2.matcher(args.input);
  const results: RegexMatchResult[] = [];
  let from = 0;
  while (from <= args.input.length && matcher.find(from)) {
    const captures: (string | null)[] = [];
    for (let i = 1; i <= matcher.groupCount(); i++) captures.push(matcher.group(i) ?? null);
    results.push({ match: matcher.group() ?? '', idx: matcher.start(), captures });
    if (!global) break;
    from = matcher.end() > matcher.start() ? matcher.end() : matcher.end() + 1;
  }
  return results;
}

const LINEAR_CONTEXT = Context.init({
  accumulator: accumulatorOperators,
  expression: boundedExpressionOperators({
    ...expressionOperators,
    $regexMatch: (obj: unknown, expr: unknown, options: Options) => regexSearch(obj, expr, options, false).length > 0,
    $regexFind: (obj: unknown, expr: unknown, options: Options) => regexSearch(obj, expr, options, false)[0] ?? null,
    $regexFindAll: (obj: unknown, expr: unknown, options: Options) => regexSearch(obj, expr, options, true),
  } as never),
  pipeline: boundedPipelineOperators(pipelineOperators as never),
  projection: projectionOperators,
  query: { ...queryOperators, $linearRegex },
  window: windowOperators,
} as never);

/** mingo's Query with the linear regular expressions; the filter must have been through `withLinearRegexes`. */
export class Query extends QueryBase {
  constructor(condition: Document, options: Partial<Options> = {}) {
    super(condition, { ...options, context: LINEAR_CONTEXT });
  }
}

/** mingo's Aggregator with the linear regular expressions; `$match` stages are rewritten here. */
export class Aggregator extends AggregatorBase {
  constructor(pipeline: Document[], options: Partial<Options> = {}) {
    super(pipelineWithLinearRegexes(pipeline), { ...options, context: LINEAR_CONTEXT });
  }
}
