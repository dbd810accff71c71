// Realm Query Language evaluation speed (issue 22): documents per second that one compiled subscription
// query tests, for the simple predicates subscriptions use. Goal ≥ 1M documents/s for the slowest of them.
// Beside it, the store's evaluation of the translated filter (mingo) on the same documents, for scale.
// Run: node --import tsx bench/rql.bench.ts
import { ObjectId } from 'bson';
import { compileRql, parseRql, toMongoFilter } from '../core/rql';
import { compiledQuery } from '../runtime/store/query-cache';
import { toComparable } from '../runtime/store/bson-values';
import { goalLine } from './fixtures/load';

const DOCUMENTS = 100_000;
const ROUNDS = 5;

const docs = Array.from({ length: DOCUMENTS }, (_, i) => ({
  _id: new ObjectId(),
  owner_id: `user-${i % 100}`,
  summary: `Task number ${i}`,
  isComplete: i % 3 === 0,
  priority: i % 5,
  tags: i % 2 === 0 ? ['work', 'home'] : ['play'],
}));

const QUERIES = [
  'owner_id == "user-42"',
  'owner_id == "user-42" AND isComplete == false',
  'priority >= 3 OR isComplete == true',
  'owner_id IN {"user-1", "user-2", "user-3"}',
  'tags == "home"',
  'summary BEGINSWITH[c] "task number 9"',
];

function rate(test: (doc: unknown) => boolean, input: readonly unknown[]): number {
  let best = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let hits = 0;
    const start = process.hrtime.bigint();
    for (const doc of input) if (test(doc)) hits++;
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (hits < 0) console.log(hits);
    best = Math.max(best, input.length / seconds);
  }
  return best;
}

let slowest = Infinity;
const views = docs.map((d) => toComparable(d) as Record<string, unknown>);
for (const text of QUERIES) {
  const query = parseRql(text);
  const ours = rate(compileRql(query), docs);
  const translation = toMongoFilter(query);
  const storeQuery = translation.ok ? compiledQuery(toComparable(translation.filter) as Record<string, unknown>) : undefined;
  const store = storeQuery ? rate((doc) => storeQuery.test(doc as Record<string, unknown>), views) : NaN;
  slowest = Math.min(slowest, ours);
  console.log(`${text.padEnd(50)} ${(ours / 1e6).toFixed(2)} M documents/s (store filter: ${(store / 1e6).toFixed(2)} M/s)`);
}
console.log(goalLine('slowest simple RQL predicate, compiled, million documents per second', slowest / 1e6, '>=', 1, ' M/s'));
