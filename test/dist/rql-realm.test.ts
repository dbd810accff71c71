// RQL semantics against realm-core 14.14's own query engine: the realm-sync-probe (offline, after logging in
// to `dist/cli.js serve`) stores objects in a local realm and counts the objects each query matches;
// `matches` must count the same on the same objects as BSON documents. The probe's `subscriptions` line
// shows the canonical text the SDK sends for each query (`and`, `B64"…"`, `T<s>:<ns>`, …): it must parse
// and, counted by realm-core in a second run, match the same objects again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EJSON } from 'bson';
import { matches, parseRql } from '../../core/rql';
import { writeApp } from '../helpers/disk';
import { probeAvailable, runProbe, type ProbeRun } from '../helpers/realm-probe';
import { serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

const APP = {
  'realm_config.json': { config_version: 20210101, app_id: 'rql-abcde', name: 'rql', location: 'US-VA', deployment_model: 'GLOBAL' },
  'auth/providers.json': { 'anon-user': { name: 'anon-user', type: 'anon-user', disabled: false } },
  'data_sources/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } },
  'sync/config.json': { type: 'flexible', state: 'enabled', development_mode_enabled: true, service_name: 'mongodb-atlas', database_name: 'rql', queryable_fields_names: ['owner_id'] },
};

const SCHEMA = [
  {
    name: 'Task', primaryKey: '_id',
    properties: {
      _id: 'objectId', owner_id: 'string', n: 'int?', d: 'double?', s: 'string?', tags: 'string[]', counts: 'int[]', dec: 'decimal128?',
      when: 'date?', u: 'uuid?', done: 'bool?', address: 'Address', items: 'Item[]',
    },
  },
  { name: 'Address', embedded: true, properties: { city: 'string', zip: 'string?' } },
  { name: 'Item', embedded: true, properties: { name: 'string', qty: 'int' } },
];

const OBJECTS = [
  {
    _id: { $oid: '65c000000000000000000001' }, owner_id: 'abc', n: 2, d: 1.5, s: 'Xyz', tags: ['a', 'q"uote'], counts: [1, 5, 9], dec: { $numberDecimal: '1.10' },
    when: { $date: '2024-01-02T03:04:05.000Z' }, done: false, address: { city: 'Oslo', zip: '0150' }, items: [{ name: 'a', qty: 1 }, { name: 'b', qty: 7 }],
  },
  { _id: { $oid: '65c000000000000000000002' }, owner_id: 'abd', n: null, d: null, s: 'hello world', tags: [], counts: [], dec: null, when: null, done: true, address: null, items: [] },
  {
    _id: { $oid: '65c000000000000000000003' }, owner_id: 'ABC', n: -1, d: 2, s: 'a\\b', tags: ['b', 'B', 'a'], counts: [3], dec: { $numberDecimal: '2' },
    when: { $date: '2024-01-02T03:04:05.500Z' }, address: { city: 'Bergen' }, items: [{ name: 'c', qty: 3 }],
  },
  {
    _id: { $oid: '65c000000000000000000004' }, owner_id: 'xyz', n: 7, d: -0.5, s: '', tags: ['ab', 'ba'], counts: [0, 0], dec: { $numberDecimal: '-3.25' },
    u: { $uuid: '0f8fad5b-d9cb-469f-a165-70867728950e' }, done: false, items: [{ name: 'a', qty: 10 }],
  },
  { _id: { $oid: '65c000000000000000000005' }, owner_id: 'über', n: 3, d: 3, s: 'Ünïcode ß', tags: ['über'], counts: [2, 4], dec: { $numberDecimal: '1.1' } },
];

const QUERIES = [
  'TRUEPREDICATE', 'FALSEPREDICATE', 'owner_id == "abc"', 'owner_id = \'abc\' AND n > 1', 'owner_id != "abc" && done == false', 'NOT done == true', '!(n > 1 || s == "")',
  'tags == "q\\"uote"', 'tags == \'q"uote\'', 's == "a\\\\b"', 's == \'a\\b\'',
  'owner_id ==[c] "abc"', 'owner_id !=[c] "ABC"', 'owner_id BEGINSWITH[c] "Ü"', 's LIKE[c] "ü*SS"', 's LIKE "*o*o*"', 's LIKE "?yz"', 's LIKE[c] "x*"',
  's CONTAINS ""', 's BEGINSWITH ""', 's ENDSWITH "world"', 's CONTAINS[c] "WORLD"', 's BEGINSWITH[c] \'ün\'', 'owner_id IN {"abc", "xyz"}', 'owner_id IN[c] {"ABD"}',
  'n > 1', 'n >= 2', 'n < 3', 'n <= -1', 'n == null', 'n != 2', 'n == 2.0', 'n > 1.5', 'd >= 1.5', 'd == 2', 'd BETWEEN {-1, 1.5}', 'n BETWEEN {2, 7}',
  'dec == 1.1', 'dec > 1', 'dec < -3.2', 'dec == 2', 'dec != nil',
  'ALL tags == "a"', 'NONE tags == "a"', 'ANY tags ==[c] "b"', 'SOME tags BEGINSWITH "b"', '"a" IN tags', 'tags IN {"b", "ab"}', 'ALL tags IN {"a", "b", "B"}',
  'tags LIKE "?b"', 'tags IN {"b", "ab"}', 'tags == {"ab", "ba"}', 'tags IN {"ab", "ba"}', 'tags != {"ab", "ba"}', 'tags == {}', 'ANY tags IN {"b", "ab"}',
  'tags == ANY {"b", "ab"}', 'n == {2, 3}', 'n != {2, 3}', 'owner_id IN[c] {"ABD"}', 'owner_id IN[c] {"abd"}', 'NONE tags IN {"a"}', 'ANY tags != "a"', 'counts > 4', 'ALL counts < 5', 'NONE counts == 0', 'ALL counts BETWEEN {0, 6}',
  'tags.@count == 0', 'tags.@size > 1', 's.@size == 0', 's.@size == 11', 'counts.@max == 9', 'counts.@min == 0', 'counts.@sum == 15', 'counts.@avg > 2', 'counts.@avg == nil',
  'when > 2024-01-02@03:04:05', 'when == T1704164645:500000000', 'when == nil', 'when < 2024-01-02T03:04:05:1',
  'u == uuid(0f8fad5b-d9cb-469f-a165-70867728950e)', 'u != nil', '_id == oid(65c000000000000000000003)', '_id > oid(65c000000000000000000003)',
  'owner_id > "abd"', 'owner_id < "ABD"', 'n + 1 > 3', 'n * d > 2', '(n - 1) * 2 == 2', 'd / 2 < 0',
  'address.city == "Oslo"', 'address.zip == nil', 'address.city BEGINSWITH "B"', 'items.qty > 5', 'ALL items.qty > 2', 'items.name == "a" AND items.qty == 1',
  'items.@count == 1', 'items.@sum.qty == 8', 'SUBQUERY(items, $x, $x.qty > 2 AND $x.name == "a").@count > 0',
  's.@size == 12', 's.@size > 5', 'n == d', 'n > d', 'n IN {2, 3.0}', 'dec IN {1.1, 2}', 'dec == d', 'd == 1.5f', 's > "a"', 's < "Ü"', 's >= "hello"',
  's LIKE "?nïcode*"', 's CONTAINS[c] "SS"', 's CONTAINS[c] "Ï"', 's ==[c] "ünïcode SS"', 'owner_id ==[c] "ÜBER"', 'when > T0:0', 'when < T1704164645:500000001', 'when >= 2024-01-02@03:04:05:500000000',
  'n == 0x2', 'd > -inf', 'd < inf', 'n BETWEEN {-1, -1}', 'counts.@sum > n', 'counts.@count == n',
];

/** realm-core's count for each query (the `actual` of its expect line), in order. */
function realmCounts(run: ProbeRun): Array<{ query: string; actual: number }> {
  return run.events('expect').map((l) => ({ query: l.query as string, actual: l.actual as number }));
}

describe('RQL against realm-core\'s query engine', { skip, timeout: 120_000 }, () => {
  let served: ServedDist;
  const documents = EJSON.parse(JSON.stringify(OBJECTS), { relaxed: false }) as unknown[];
  const script = (queries: string[], subscribe: boolean) => ({
    baseUrl: served.url, appId: 'rql-abcde', credentials: { type: 'anonymous' }, flexible: true, offline: true, timeoutMs: 5000, schema: SCHEMA,
    // Writing needs a subscription on the type; the first run also learns each query's canonical text.
    subscriptions: subscribe ? queries.map((q) => `Task=${q}`) : ['Task=TRUEPREDICATE'],
    steps: [{ write: OBJECTS.map((value) => ({ op: 'create', type: 'Task', value })) }, ...queries.map((query) => ({ expect: { type: 'Task', count: -1, query } }))],
  });

  before(async () => {
    served = await serveDist({ appDir: writeApp(APP) });
  });
  after(async () => { await served?.close(); });

  test('every query, and the canonical text the SDK sends for it, counts what realm-core counts', async () => {
    const run = await runProbe(script(QUERIES, true));
    const counts = realmCounts(run);
    assert.equal(counts.length, QUERIES.length, `the probe counted ${counts.length} of ${QUERIES.length} queries: ${JSON.stringify(run.result)} ${run.stderr}`);
    const differences = counts
      .map(({ query, actual }) => ({ query, realm: actual, ours: documents.filter((doc) => matches(parseRql(query), doc)).length }))
      .filter((c) => c.realm !== c.ours);
    assert.deepEqual(differences, []);

    const canonical = (run.events('subscriptions')[0]?.subscriptions as Array<{ query: string }>).map((s) => s.query);
    assert.ok(canonical.some((q) => q.includes('B64"')) && canonical.some((q) => /T\d+:\d+/.test(q)) && canonical.some((q) => q.includes(' and ')), canonical.join('\n'));
    const secondRun = await runProbe(script(canonical, false));
    const second = realmCounts(secondRun);
    assert.equal(second.length, canonical.length, `the probe counted ${second.length} of ${canonical.length} canonical queries: ${JSON.stringify(secondRun.result)}`);
    const canonicalDifferences = second
      .map(({ query, actual }) => ({ query, realm: actual, ours: documents.filter((doc) => matches(parseRql(query), doc)).length }))
      .filter((c) => c.realm !== c.ours);
    assert.deepEqual(canonicalDifferences, []);
  });
});
