// Compiling a mingo Query copies its operator tables (tens of microseconds), and the same filters come
// back on every request (`{owner: <user id>}`, a role's document filter). Compiled queries are kept in a
// bounded LRU keyed by the filter's exact shape; a Query's `test` holds no state between calls.
import { Query, withLinearRegexes } from './regex';
import type { Document } from './types';

const MAX_ENTRIES = 2000;
const cache = new Map<string, Query>();

/** The compiled query for a filter in the store's comparable form, its regexes linear. Throws what mingo throws for a bad filter. */
export function compiledQuery(filter: Document): Query {
  const key = queryKey(filter);
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const query = new Query(withLinearRegexes(filter), { scriptEnabled: false });
  cache.set(key, query);
  if (cache.size > MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  return query;
}

/**
 * A serialisation that keeps types apart: every string is prefixed, and values JSON would flatten into
 * strings or `{}` (dates, regular expressions, BSON values) are tagged, so a filter on an ObjectId never
 * shares an entry with a filter on its hex string.
 */
function queryKey(filter: Document): string {
  return JSON.stringify(filter, function tag(this: Record<string, unknown>, key: string, value: unknown) {
    const raw = this[key];
    if (typeof raw === 'string') return `s${raw}`;
    if (raw instanceof Date) return `d${raw.getTime()}`;
    if (raw instanceof RegExp) return `r${raw.source}/${raw.flags}`;
    if (typeof raw === 'bigint') return `n${raw}`;
    if (raw !== null && typeof raw === 'object' && typeof (raw as { _bsontype?: unknown })._bsontype === 'string') {
      const bson = raw as { _bsontype: string; toHexString?: () => string; toString(): string };
      return `b${bson._bsontype}:${bson.toHexString ? bson.toHexString() : bson.toString()}`;
    }
    if (typeof raw === 'number' && !Number.isFinite(raw)) return `f${raw}`;
    if (raw === undefined && key !== '') return 'u';
    return value;
  });
}
