// One call for the sync server: a subscription's query text for one table, parsed, checked against the
// flexible sync settings and compiled, or the message its QUERY_ERROR carries.
import type { RqlQuery } from './ast';
import { compileRql, type DocumentMatcher } from './evaluate';
import { checkSubscriptionQuery, type QueryProblem, type QueryableFieldSettings } from './fields';
import { toMongoFilter, type Filter } from './mongo';
import { tryParseRql } from './parse';

export interface CompiledSubscription {
  table: string;
  text: string;
  query: RqlQuery;
  /** Whether one document of the table is in the subscription's view. */
  matches: DocumentMatcher;
  /** The store filter selecting exactly the matching documents, when the query translates; else filter with `matches`. */
  filter?: Filter;
}

export type SubscriptionResult =
  | { ok: true; subscription: CompiledSubscription }
  | { ok: false; message: string; problems: QueryProblem[] };

/**
 * Parses and checks `text` as a subscription on `table` (`collection` when the settings name the collection
 * differently). A refusal's message names the table and every field or construct at fault.
 */
export function compileSubscription(table: string, text: string, settings: QueryableFieldSettings, collection = table): SubscriptionResult {
  const parsed = tryParseRql(text);
  if (!parsed.ok) {
    const { error } = parsed;
    return { ok: false, message: `invalid query for table "${table}": ${error.message}`, problems: [] };
  }
  const problems = checkSubscriptionQuery(parsed.query, table, settings, collection);
  if (problems.length > 0) return { ok: false, message: problems.map((p) => p.message).join('; '), problems };
  if (parsed.query.argumentCount > 0) return { ok: false, message: `invalid query for table "${table}": a subscription query cannot read arguments ($0…); the client sends them bound`, problems: [] };
  const translation = toMongoFilter(parsed.query);
  return {
    ok: true,
    subscription: { table, text, query: parsed.query, matches: compileRql(parsed.query), ...(translation.ok ? { filter: translation.filter } : {}) },
  };
}
