// Rule expressions compiled to closures, for expressions evaluated very often (sync permissions at every
// open). It is the evaluator of `evaluate.ts` with the tree walk done once: the same expansion lookup,
// BSON comparisons and conversions, and a test checks both agree on every shape. Expressions that call
// functions (`%function`) or nest deeper than the evaluator allows are run by the evaluator itself.
import { bsonCompare, bsonEquals, CONVERSIONS, isPlainObject } from './bsonValues';
import { isExpansion, parseExpansion } from './expansion';
import {
  evaluateExpression, isOperatorKey, LOGICAL, MAX_EVALUATION_DEPTH, NEGATION, resolveExpansion, resolveField,
  type EvaluationEnv,
} from './evaluate';

export type CompiledExpression = (env: EvaluationEnv) => boolean | Promise<boolean>;

type Test = (env: EvaluationEnv) => boolean;
type Match = (subject: unknown, env: EvaluationEnv) => boolean;
type Value = (env: EvaluationEnv) => unknown;

/** Needs the asynchronous evaluator: a function call, or nesting past the compiled depth. */
class NeedsEvaluator extends Error {}

export function compileExpression(expr: unknown): CompiledExpression {
  let test: Test;
  try {
    test = expression(expr, 0);
  } catch (e) {
    if (!(e instanceof NeedsEvaluator)) throw e;
    return (env) => evaluateExpression(expr, env);
  }
  return (env) => {
    try {
      return test(env);
    } catch (cause) {
      env.onError?.({ reason: 'internal', message: `Rule evaluation failed: ${cause instanceof Error ? cause.message : String(cause)}`, cause });
      return false;
    }
  };
}

function guard(depth: number): void {
  if (depth > MAX_EVALUATION_DEPTH) throw new NeedsEvaluator();
}

function expression(expr: unknown, depth: number): Test {
  guard(depth);
  if (typeof expr === 'boolean') return () => expr;
  if (!isPlainObject(expr)) return () => false;
  const parts = Object.entries(expr).map(([key, value]) => condition(key, value, depth + 1));
  if (parts.length === 1) return parts[0];
  return (env) => {
    for (const part of parts) if (!part(env)) return false;
    return true;
  };
}

function condition(key: string, value: unknown, depth: number): Test {
  guard(depth);
  const logical = LOGICAL.get(key);
  if (logical) {
    if (!Array.isArray(value)) return () => false;
    return combine(logical, value.map((element) => expression(element, depth + 2)));
  }
  if (NEGATION.has(key)) {
    const inner = expression(value, depth + 1);
    return (env) => !inner(env);
  }
  if (isExpansion(key)) {
    const subject = expansion(key);
    const holds = match(value, depth + 1);
    return (env) => holds(subject(env), env);
  }
  if (key.startsWith('$') || key.startsWith('%')) return () => false;
  const path = key.split('.');
  const holds = match(value, depth + 1);
  return (env) => holds(resolveField(env, path), env);
}

function combine<T extends unknown[]>(mode: 'and' | 'or' | 'nor', parts: ((...args: T) => boolean)[]): (...args: T) => boolean {
  return (...args) => {
    for (const part of parts) {
      const holds = part(...args);
      if (mode === 'and' && !holds) return false;
      if (mode === 'or' && holds) return true;
      if (mode === 'nor' && holds) return false;
    }
    return mode !== 'or';
  };
}

function match(value: unknown, depth: number): Match {
  guard(depth);
  if (isExpansion(value)) {
    const operand = expansion(value);
    return (subject, env) => bsonEquals(subject, operand(env));
  }
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    if (keys.some(isExpansion)) {
      const inner = expression(value, depth + 1);
      return (subject, env) => bsonEquals(subject, inner(env));
    }
    if (keys.some(isOperatorKey)) {
      const ops = Object.entries(value).map(([op, operand]) => operator(op, operand, depth + 1));
      if (ops.length === 1) return ops[0];
      return (subject, env) => {
        for (const op of ops) if (!op(subject, env)) return false;
        return true;
      };
    }
  }
  const operand = resolved(value, depth + 1);
  return (subject, env) => bsonEquals(subject, operand(env));
}

function operator(op: string, operand: unknown, depth: number): Match {
  const logical = LOGICAL.get(op);
  if (logical) {
    if (!Array.isArray(operand)) return () => false;
    return combine(logical, operand.map((element) => match(element, depth + 2)));
  }
  if (NEGATION.has(op)) {
    const inner = match(operand, depth + 1);
    return (subject, env) => !inner(subject, env);
  }
  if (op === '%function') throw new NeedsEvaluator();
  const conversion = CONVERSIONS.get(op);
  const value = resolved(operand, depth + 1);
  if (conversion) return (subject, env) => bsonEquals(subject, conversion(value(env)));
  const ordered = (holds: (comparison: number) => boolean): Match => {
    const test = (subject: unknown, operandValue: unknown): boolean => {
      if (Array.isArray(subject)) return subject.some((element) => test(element, operandValue));
      const comparison = bsonCompare(subject, operandValue);
      return comparison !== undefined && holds(comparison);
    };
    return (subject, env) => test(subject, value(env));
  };
  switch (op) {
    case '$eq': return (subject, env) => bsonEquals(subject, value(env));
    case '$ne': return (subject, env) => !bsonEquals(subject, value(env));
    case '$gt': return ordered((c) => c > 0);
    case '$gte': return ordered((c) => c >= 0);
    case '$lt': return ordered((c) => c < 0);
    case '$lte': return ordered((c) => c <= 0);
    case '$in': case '%in': case '$nin': case '%nin': {
      const negate = op.endsWith('nin');
      return (subject, env) => {
        const list = value(env);
        if (!Array.isArray(list)) return false;
        const found = list.some((element) => bsonEquals(subject, element));
        return negate ? !found : found;
      };
    }
    case '$exists': return (subject, env) => (subject !== undefined) === Boolean(value(env));
    default: return () => false;
  }
}

function expansion(text: string): Value {
  const { name, path } = parseExpansion(text);
  return (env) => resolveExpansion(env, name, path);
}

/** A literal with its expansions and conversions replaced by their values; constant when it holds none. */
function resolved(value: unknown, depth: number): Value {
  guard(depth);
  if (isExpansion(value)) return expansion(value);
  if (Array.isArray(value)) {
    const elements = value.map((element) => resolved(element, depth + 1));
    return (env) => elements.map((element) => element(env));
  }
  if (!isPlainObject(value)) return () => value;
  const keys = Object.keys(value);
  const [op] = keys;
  if (keys.length === 1 && op === '%function') throw new NeedsEvaluator();
  const conversion = CONVERSIONS.get(op);
  if (keys.length === 1 && conversion) {
    const inner = resolved(value[op], depth + 1);
    return (env) => conversion(inner(env));
  }
  const fields = keys.map((key) => [key, resolved(value[key], depth + 1)] as const);
  return (env) => {
    const result: Record<string, unknown> = {};
    for (const [key, field] of fields) result[key] = field(env);
    return result;
  };
}
