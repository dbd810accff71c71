// Compiling a mingo Query copies its operator tables (tens of microseconds), and the same filters come
// back on every request (`{owner: <user id>}`, a role's document filter). Compiled queries are kept in a
// bounded LRU keyed by the filter's exact shape; a Query's `test` holds no state between calls. The bound
// is by size as well as count: each entry keeps its key text and a compiled copy of the filter, and
// clients send filters of up to 16 MB, so a count alone let distinct large filters fill the heap.
import { Query, withLinearRegexes } from './regex';
import type { Document } from './types';

const MAX_ENTRIES = 2000;
/** Filters whose key text is longer are compiled for each call, never kept: real filters are far smaller. */
export const MAX_CACHED_FILTER_CHARS = 64 * 1024;
/** Key text all entries together may keep (each entry's compiled filter is about as large again). */
export const MAX_CACHED_CHARS = 4 * 1024 * 1024;
const cache = new Map<string, Query>();
let cachedChars = 0;

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
  if (key.length > MAX_CACHED_FILTER_CHARS) return query;
  cache.set(key, query);
  cachedChars += key.length;
  while (cache.size > MAX_ENTRIES || cachedChars > MAX_CACHED_CHARS) {
    const oldest = cache.keys().next().value!;
    cache.delete(oldest);
    cachedChars -= oldest.length;
  }
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
