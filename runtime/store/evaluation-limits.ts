// Aggregations and `$expr` filters run through mingo synchronously, on the thread that serves every
// client and app, and mingo bounds neither time nor memory: `{$reduce: {input: {$range: [0, 2e6]}, …}}`
// on one small document held every other request for seconds. Every expression operator and every
// pipeline stage is wrapped here, so one synchronous stretch of evaluation (everything mingo computes
// before control returns to the event loop: one request's aggregation or filter) is bounded:
// - no array an expression computes holds more than MAX_ARRAY_ELEMENTS (`$range` and `$concatArrays`
//   are refused before they allocate), no string more than MAX_STRING_CHARS;
// - the arrays computed add up to at most MAX_ELEMENTS_PER_EVALUATION elements;
// - evaluation stops once it has run for MAX_EVALUATION_MS, checked as operators run and as documents
//   leave each stage.
import { evalExpr } from 'mingo/core';
import type { Iterator } from 'mingo/lazy';
import type { Options } from 'mingo/types';
import { StoreError } from './types';

/** MongoDB's own BSON document limit is 16 MB: a real app's arrays stay far below. */
export const MAX_ARRAY_ELEMENTS = 1_000_000;
export const MAX_STRING_CHARS = 16 * 1024 * 1024;
export const MAX_ELEMENTS_PER_EVALUATION = 20_000_000;
export const MAX_EVALUATION_MS = 3_000;
/** Operator calls and documents between clock reads: reading it on every call would cost more than the call. */
const STEPS_BETWEEN_CLOCK_READS = 256;

type ExpressionOperator = (obj: unknown, expr: unknown, options: Options) => unknown;
type PipelineOperator = (collection: Iterator, expr: unknown, options: Options) => Iterator;

interface Stretch { startedAt: number; steps: number; elements: number; limitMs: number; brief: boolean }
let stretch: Stretch | undefined;

/** The budget of the synchronous stretch now running: a microtask ends it as soon as control returns to the event loop. */
function current(): Stretch {
  if (!stretch) {
    stretch = { startedAt: performance.now(), steps: 0, elements: 0, limitMs: MAX_EVALUATION_MS, brief: false };
    queueMicrotask(() => { stretch = undefined; });
  }
  return stretch;
}

/** Thrown out of `evaluateBriefly` when the evaluation outran its brief budget: it is to be run elsewhere. */
export class EvaluationTooLong extends Error {
  constructor() {
    super('the evaluation outran the serving thread\'s budget');
  }
}

/**
 * Runs `evaluate` (synchronous) with a budget of `limitMs` instead of the full limit; past it,
 * `EvaluationTooLong` is thrown instead of the limit's error. The array bounds stay as they are.
 */
export function evaluateBriefly<T>(limitMs: number, evaluate: () => T): T {
  const outer = stretch;
  stretch = { startedAt: performance.now(), steps: 0, elements: 0, limitMs, brief: true };
  try {
    return evaluate();
  } finally {
    stretch = outer;
  }
}

function step(): void {
  const now = current();
  if (++now.steps % STEPS_BETWEEN_CLOCK_READS === 0 && performance.now() - now.startedAt > now.limitMs) {
    if (now.brief) throw new EvaluationTooLong();
    throw StoreError.badValue(`the aggregation or query expression ran for more than ${MAX_EVALUATION_MS} ms and was stopped (the local runtime's limit); narrow its input with $match first`);
  }
}

function refuseArray(operator: string, elements: number): void {
  if (elements > MAX_ARRAY_ELEMENTS) {
    throw StoreError.badValue(`${operator} would produce an array of ${elements} elements; the limit is ${MAX_ARRAY_ELEMENTS}`);
  }
  const now = current();
  now.elements += elements;
  if (now.elements > MAX_ELEMENTS_PER_EVALUATION) {
    throw StoreError.badValue(`the expressions of one request computed more than ${MAX_ELEMENTS_PER_EVALUATION} array elements (the local runtime's limit); ${operator} was refused`);
  }
}

/** How many elements `$range` would produce for its evaluated arguments; undefined when they are not numbers (mingo reports that). */
function rangeLength(args: unknown): number | undefined {
  if (!Array.isArray(args)) return undefined;
  const [start, end, by = 1] = args as unknown[];
  if (typeof start !== 'number' || typeof end !== 'number' || typeof by !== 'number' || by === 0) return undefined;
  const span = (end - start) / by;
  return span > 0 ? Math.ceil(span) : 0;
}

/** The operator's arguments, evaluated once, handed on as literals. */
const literals = (values: unknown[]): unknown[] => values.map((value) => ({ $literal: value }));

function bounded(name: string, operator: ExpressionOperator): ExpressionOperator {
  return (obj, expr, options) => {
    step();
    if (name === '$range' || name === '$concatArrays') {
      const args = evalExpr(obj, expr, options);
      const length = name === '$range'
        ? rangeLength(args)
        : Array.isArray(args) && args.every(Array.isArray) ? (args as unknown[][]).reduce((sum, part) => sum + part.length, 0) : undefined;
      if (length !== undefined) refuseArray(name, length);
      return operator(obj, Array.isArray(args) ? literals(args) : expr, options);
    }
    const result = operator(obj, expr, options);
    if (Array.isArray(result)) refuseArray(name, result.length);
    else if (typeof result === 'string' && result.length > MAX_STRING_CHARS) {
      throw StoreError.badValue(`${name} would produce a string of ${result.length} characters; the limit is ${MAX_STRING_CHARS}`);
    }
    return result;
  };
}

/** Expression operators that count toward the stretch's budget and refuse oversized results. */
export function boundedExpressionOperators(operators: Record<string, ExpressionOperator>): Record<string, ExpressionOperator> {
  return Object.fromEntries(Object.entries(operators).map(([name, operator]) => [name, bounded(name, operator)]));
}

/** Pipeline stages whose every output document counts as a step (`$unwind` of `$unwind` yields without calling any expression). */
export function boundedPipelineOperators(operators: Record<string, PipelineOperator>): Record<string, PipelineOperator> {
  return Object.fromEntries(Object.entries(operators).map(([name, operator]) => [name, (collection: Iterator, expr: unknown, options: Options) => {
    step();
    return operator(collection, expr, options).map((doc: unknown) => {
      step();
      return doc;
    });
  }]));
}
