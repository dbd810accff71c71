// Turns a `document_filters` / filter `query` object into a plain MongoDB query for the query engine:
// expansion values become their runtime values, conversions and `%function` calls their results,
// `%`-spelled operators their `$` form; MongoDB operators are left as written.
import { isPlainObject } from './bsonValues';
import { isExpansion } from './expansion';
import { Evaluator, type EvaluationEnv } from './evaluate';

/** A query no document matches: `{}` matches all, so none escapes its negation. */
export function matchNothingQuery(): Record<string, unknown> {
  return { $nor: [{}] };
}

const COMBINATORS: ReadonlyMap<string, '$and' | '$or' | '$nor'> = new Map([
  ['%and', '$and'], ['$and', '$and'], ['%or', '$or'], ['$or', '$or'], ['%nor', '$nor'], ['$nor', '$nor'],
]);

interface Expanded {
  query: Record<string, unknown>;
  /**
   * An expansion or conversion in it yielded nothing, so the query was replaced by one matching nothing.
   * Under `$nor` that would turn into "match everything"; the flag lets the negation deny instead.
   */
  unresolved: boolean;
}

/**
 * The query with every expansion replaced by its value. `true` becomes `{}` and `false` a query
 * matching nothing. A condition that names a missing value (an unknown expansion, a user without
 * custom data, a failing function) matches nothing rather than documents lacking the field, so a
 * broken filter denies instead of granting. Keys that are expansions (`{"%%user.custom_data.admin": true}`)
 * are rule conditions: evaluated now, they keep (`true`) or empty (`false`) their query object.
 */
export async function expandExpressionToQuery(expr: unknown, env: EvaluationEnv): Promise<Record<string, unknown>> {
  const evaluator = new Evaluator(env);
  try {
    if (typeof expr === 'boolean') return expr ? {} : matchNothingQuery();
    if (!isPlainObject(expr)) {
      evaluator.fail({ reason: 'invalid-query', message: 'A document filter must be true, false or a query object.' });
      return matchNothingQuery();
    }
    return (await expandObject(evaluator, expr, 0)).query;
  } catch (cause) {
    evaluator.fail({ reason: 'internal', message: `Expanding a document filter failed: ${cause instanceof Error ? cause.message : String(cause)}`, cause });
    return matchNothingQuery();
  }
}

const MAX_DEPTH = 64;

async function expandObject(evaluator: Evaluator, object: Record<string, unknown>, depth: number): Promise<Expanded> {
  const denied = (unresolved: boolean): Expanded => ({ query: matchNothingQuery(), unresolved });
  if (depth > MAX_DEPTH) return denied(true);
  const query: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    const combinator = COMBINATORS.get(key);
    if (combinator) {
      if (!Array.isArray(value)) return denied(true);
      const parts: Record<string, unknown>[] = [];
      for (const element of value) {
        if (!isPlainObject(element)) return denied(true);
        const part = await expandObject(evaluator, element, depth + 1);
        if (part.unresolved && combinator === '$nor') return denied(true);
        parts.push(part.query);
      }
      query[combinator] = parts;
    } else if (isExpansion(key)) {
      const before = evaluator.unresolved;
      const holds = await evaluator.expression({ [key]: value }, depth + 1);
      if (!holds) return denied(evaluator.unresolved !== before);
    } else {
      const before = evaluator.unresolved;
      const expanded = await evaluator.resolveValue(value, depth + 1, true);
      if (evaluator.unresolved !== before) return denied(true);
      query[key.startsWith('%') ? `$${key.slice(1)}` : key] = expanded;
    }
  }
  return { query, unresolved: false };
}
