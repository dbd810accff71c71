// Bounds on what one request may make the runtime keep or compute (red-team findings): the compiled
// query cache and the GraphQL document cache are bounded by size, an aggregation's expressions by what
// they generate and how long they run; and `/logs` keeps the runtime's own CORS however its path is spelt.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Binary, Decimal128, Long, ObjectId } from 'bson';
import { generateSchema } from '../../core/graphql';
import { loadApp } from '../../core/load';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { createGraphqlEndpoint } from '../../runtime/graphql';
import { MAX_CACHED_QUERY_CHARS, MAX_CACHED_QUERY_TEXT_CHARS } from '../../runtime/graphql/endpoint';
import { openEmbeddedStore } from '../../runtime/store';
import { MAX_ARRAY_ELEMENTS, MAX_EVALUATION_MS } from '../../runtime/store/evaluation-limits';
import { compiledQuery, MAX_CACHED_CHARS, MAX_CACHED_FILTER_CHARS } from '../../runtime/store/query-cache';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';
import { REPO_ROOT } from '../helpers/disk';
import { taskCollectionFiles } from './fixtures/graphql-apps';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** A filter whose key text is about `chars` long, distinct per `tag`. */
const filterOfSize = (tag: string, chars: number) => ({ name: { $nin: [tag, 'x'.repeat(chars)] } });

describe('the compiled query cache is bounded by size', () => {
  test('a filter larger than the per-entry limit is compiled for each call, never kept', () => {
    const small = { owner: 'size-test-small' };
    assert.equal(compiledQuery(small), compiledQuery(small), 'small filters are cached');
    const large = filterOfSize('large', MAX_CACHED_FILTER_CHARS + 1);
    assert.notEqual(compiledQuery(large), compiledQuery(large));
  });

  test('distinct filters under the per-entry limit evict the oldest once their text exceeds the total', () => {
    const first = { owner: 'size-test-first' };
    const kept = compiledQuery(first);
    const size = MAX_CACHED_FILTER_CHARS - 100;
    // Far fewer entries than the count bound (2,000): only their size can evict the first.
    const needed = Math.ceil(MAX_CACHED_CHARS / size) + 1;
    assert.ok(needed < 200);
    let last = filterOfSize('', 0);
    for (let i = 0; i < needed; i++) last = filterOfSize(`distinct-${i}`, size);
    for (let i = 0; i < needed; i++) compiledQuery(filterOfSize(`distinct-${i}`, size));
    assert.notEqual(compiledQuery(first), kept, 'the oldest entry left');
    const recent = compiledQuery(last);
    assert.equal(compiledQuery(last), recent, 'the newest entries stay');
  });
});

describe('an aggregation or a read whose filter outruns the serving thread\'s budget finishes on the evaluation worker', () => {
  /** Runs `work` while timing the event loop: the result and the longest the loop went without a turn. */
  async function withLoopWatch<T>(work: () => Promise<T>): Promise<{ result: T; longestStallMs: number }> {
    let last = performance.now();
    let longestStallMs = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      longestStallMs = Math.max(longestStallMs, now - last);
      last = now;
    }, 5);
    try {
      const result = await work();
      return { result, longestStallMs: Math.max(longestStallMs, performance.now() - last) };
    } finally {
      clearInterval(ticker);
    }
  }
  /** An expression worth ~10^5 additions (well past the budget, well within the limit) whose value is 0. */
  const slowZero = { $subtract: [{ $reduce: { input: { $range: [0, 150_000] }, initialValue: 0, in: { $add: ['$$value', 1] } } }, 150_000] };

  test('a selecting pipeline hands back the stored documents with their types; a computing one its values, other collections included', async () => {
    const store = await openEmbeddedStore();
    const items = store.collection('db', 'items');
    const owners = store.collection('db', 'owners');
    await owners.insertMany([{ _id: 'ada', name: 'Ada' }, { _id: 'bob', name: 'Bob' }]);
    await items.insertMany([
      { _id: new ObjectId('65f000000000000000000001'), owner: 'ada', n: Long.fromString('9007199254740993'), price: Decimal128.fromString('1.10'), blob: new Binary(Buffer.from('hi')), at: new Date(5) },
      { _id: new ObjectId('65f000000000000000000002'), owner: 'bob', n: Long.fromNumber(2), price: Decimal128.fromString('2.20'), blob: new Binary(Buffer.from('yo')), at: new Date(6) },
      { _id: new ObjectId('65f000000000000000000003'), owner: 'ada', n: Long.fromNumber(3), price: Decimal128.fromString('3.30'), blob: new Binary(Buffer.from('ok')), at: new Date(7) },
    ]);
    const selected = await withLoopWatch(() => items.aggregate([{ $match: { owner: 'ada', $expr: { $eq: [slowZero, 0] } } }, { $sort: { _id: -1 } }]));
    assert.ok(selected.longestStallMs < 250, `the event loop stalled ${Math.round(selected.longestStallMs)} ms`);
    assert.deepEqual(selected.result.map((d) => (d._id as ObjectId).toHexString()), ['65f000000000000000000003', '65f000000000000000000001']);
    const first = selected.result[1]!;
    assert.ok(first.n instanceof Long && first.n.toString() === '9007199254740993', 'a Long stays a Long, exactly');
    assert.ok(first.price instanceof Decimal128 && first.price.toString() === '1.10');
    assert.ok(first.blob instanceof Binary && Buffer.from(first.blob.buffer).toString() === 'hi');
    assert.deepEqual(first.at, new Date(5));

    const computed = await withLoopWatch(() => items.aggregate([
      { $lookup: { from: 'owners', localField: 'owner', foreignField: '_id', as: 'who' } },
      { $group: { _id: { $arrayElemAt: ['$who.name', 0] }, count: { $sum: 1 }, zero: { $max: slowZero } } },
      { $sort: { _id: 1 } },
    ]));
    assert.ok(computed.longestStallMs < 250, `the event loop stalled ${Math.round(computed.longestStallMs)} ms`);
    assert.deepEqual(computed.result, [{ _id: 'Ada', count: 2, zero: 0 }, { _id: 'Bob', count: 1, zero: 0 }]);

    await assert.rejects(items.aggregate([{ $project: { x: { $add: [slowZero, { $literal: 'not a number' }] } } }]), /\$add/);
  });

  test('one runs on the worker and at most 32 wait; more are refused at once, and the worker keeps serving', { timeout: 120_000 }, async () => {
    const store = await openEmbeddedStore();
    const items = store.collection('db', 'queue');
    await items.insertOne({ _id: 1 });
    const slow = () => items.aggregate([{ $project: { zero: slowZero } }]);
    const settled = await Promise.allSettled(Array.from({ length: 40 }, slow));
    const refused = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(settled.length - refused.length, 33, 'one running and 32 waiting');
    assert.ok(refused.every((r) => /32 long evaluations are already waiting/.test(String(r.reason?.message))), String(refused[0]?.reason));
    assert.deepEqual(await slow(), [{ _id: 1, zero: 0 }]);
  });

  test('so does a find, findOne or count whose filter outruns it: the same documents, sorted, skipped and limited', async () => {
    const store = await openEmbeddedStore();
    const items = store.collection('db', 'items');
    await items.insertMany(Array.from({ length: 6 }, (_, i) => ({ _id: i, n: Long.fromNumber(i), even: i % 2 === 0 })));
    const slowFilter = { even: true, $expr: { $eq: [slowZero, 0] } };
    const found = await withLoopWatch(() => items.find(slowFilter, { sort: { _id: -1 }, skip: 1, limit: 1 }));
    assert.ok(found.longestStallMs < 250, `the event loop stalled ${Math.round(found.longestStallMs)} ms`);
    assert.deepEqual(found.result, [{ _id: 2, n: Long.fromNumber(2), even: true }]);
    assert.ok(found.result[0]!.n instanceof Long);
    const unsorted = await withLoopWatch(() => items.find(slowFilter, { skip: 1 }));
    assert.deepEqual(unsorted.result.map((d) => d._id), [2, 4]);
    assert.deepEqual((await items.findOne(slowFilter, { sort: { _id: -1 } }))?._id, 4);
    const counted = await withLoopWatch(() => items.countDocuments(slowFilter));
    assert.equal(counted.result, 3);
    assert.ok(counted.longestStallMs < 250, `the event loop stalled ${Math.round(counted.longestStallMs)} ms`);
  });
});

describe('the GraphQL document cache is bounded by size', () => {
  async function endpoint() {
    const files = baseApp();
    delete files['graphql/custom_resolvers/mutation_renameTask.json'];
    const app = await loadApp(appFs({ ...files, ...taskCollectionFiles() }), APP_ROOT);
    const store = await openEmbeddedStore();
    return createGraphqlEndpoint<{ id: string }>({
      generated: generateSchema(app),
      collectionFor: (_user, _source, database, name) => store.collection(database, name),
      runFunction: async () => { throw new Error('no functions'); },
      limits: { maxQueryDepth: 10, maxBodyBytes: 8 * 1024 * 1024 },
    });
  }
  /** A valid query text of about `chars` characters (a comment pads it; comments are no tokens). */
  const queryOfSize = (tag: string, chars: number) => `# ${tag} ${'x'.repeat(chars)}\n{ __typename }`;
  const user = { id: 'u' };

  test('a query text longer than the per-entry limit is parsed for each request', async () => {
    const graphql = await endpoint();
    const query = queryOfSize('large', MAX_CACHED_QUERY_CHARS);
    assert.deepEqual((await graphql.execute({ query }, user)).body, { data: { __typename: 'Query' } });
    await graphql.execute({ query }, user);
    assert.equal(graphql.stats.parsed, 2);
    assert.equal(graphql.stats.cacheHits, 0);
  });

  test('distinct query texts evict the oldest once their text exceeds the total, well before the count bound', async () => {
    const graphql = await endpoint();
    const first = '{ __typename }';
    await graphql.execute({ query: first }, user);
    const size = MAX_CACHED_QUERY_CHARS - 100;
    const needed = Math.ceil(MAX_CACHED_QUERY_TEXT_CHARS / size) + 1;
    assert.ok(needed < 500);
    for (let i = 0; i < needed; i++) await graphql.execute({ query: queryOfSize(`distinct-${i}`, size) }, user);
    const parsed = graphql.stats.parsed;
    await graphql.execute({ query: first }, user);
    assert.equal(graphql.stats.parsed, parsed + 1, 'the first text was evicted and parsed again');
  });
});

describe('an aggregation cannot hold the runtime; /logs keeps its CORS', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let app: string;
  let token: string;

  const post = async (url: string, body: unknown) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, text };
  };
  const aggregate = (pipeline: unknown[]) => post(`${app}/functions/call`, {
    service: 'mongodb-atlas', name: 'aggregate', arguments: [{ database: 'tracker', collection: 'Task', pipeline }],
  });

  before(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-data-limits-'));
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    runtime = await startRuntime({ appDir, port: 0, log: quiet, functionTimeoutMs: 5000 });
    app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    const email = 'limits@example.com';
    await fetch(`${app}/auth/providers/local-userpass/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'correct horse' }) });
    const login = await fetch(`${app}/auth/providers/local-userpass/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: email, password: 'correct horse' }) });
    const session = await login.json() as { access_token: string; user_id: string };
    token = session.access_token;
    const inserted = await post(`${app}/functions/call`, {
      service: 'mongodb-atlas', name: 'insertOne', arguments: [{ database: 'tracker', collection: 'Task', document: { _partition: session.user_id, name: 'a', status: 'open', isComplete: false } }],
    });
    assert.equal(inserted.status, 200, inserted.text);
  });
  after(async () => {
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('$range beyond the element limit is refused before it is built, naming the limit', async () => {
    const res = await aggregate([{ $project: { x: { $reduce: { input: { $range: [0, MAX_ARRAY_ELEMENTS + 1] }, initialValue: 0, in: { $add: ['$$value', 1] } } } } }]);
    assert.equal(res.status, 400, res.text);
    assert.match(res.text, new RegExp(`\\$range would produce an array of ${MAX_ARRAY_ELEMENTS + 1} elements; the limit is ${MAX_ARRAY_ELEMENTS}`));
    const fine = await aggregate([{ $project: { _id: 0, x: { $size: { $range: [0, 1000] } } } }]);
    assert.equal(fine.status, 200, fine.text);
    assert.match(fine.text, /"x":\{"\$numberInt":"1000"\}/);
  });

  test('arrays concatenated beyond the limit are refused before they are built', async () => {
    const half = { $range: [0, MAX_ARRAY_ELEMENTS / 2 + 1] };
    const res = await aggregate([{ $project: { x: { $size: { $concatArrays: [half, half] } } } }]);
    assert.equal(res.status, 400, res.text);
    assert.match(res.text, /\$concatArrays would produce an array of/);
  });

  test('an aggregation that would run for minutes stops at the time limit, and other requests are answered', async () => {
    // 10^9 additions over two small arrays: every array far under the limits, the whole beyond any time budget.
    const started = performance.now();
    const attack = aggregate([{ $project: { x: { $let: { vars: { inner: { $range: [0, 1000] } }, in: { $reduce: {
      input: { $range: [0, 1_000_000] }, initialValue: 0,
      in: { $add: ['$$value', { $reduce: { input: '$$inner', initialValue: 0, in: { $add: ['$$value', '$$this'] } } }] },
    } } } } } }]);
    const other = fetch(`${app}/location`).then((res) => ({ status: res.status, ms: performance.now() - started }));
    const res = await attack;
    const took = performance.now() - started;
    assert.equal(res.status, 400, res.text);
    assert.match(res.text, new RegExp(`ran for more than ${MAX_EVALUATION_MS} ms`));
    assert.ok(took < MAX_EVALUATION_MS + 4000, `stopped after ${Math.round(took)} ms`);
    const answered = await other;
    assert.equal(answered.status, 200);
    // The aggregation finishes on the evaluation worker, not on the thread that answers this.
    assert.ok(answered.ms < 1000, `another request waited ${Math.round(answered.ms)} ms`);
  });

  test('documents a pipeline multiplies without computing anything stop at the time limit too', async () => {
    // Two $unwinds of 10^5 elements each: 10^10 documents, made by stages alone.
    const res = await aggregate([
      { $project: { a: { $range: [0, 100_000] }, b: { $range: [0, 100_000] } } }, { $unwind: '$a' }, { $unwind: '$b' }, { $count: 'n' },
    ]);
    assert.equal(res.status, 400, res.text);
    assert.match(res.text, new RegExp(`ran for more than ${MAX_EVALUATION_MS} ms`));
  });

  test('the same bound holds for an $expr filter of find', async () => {
    const res = await post(`${app}/functions/call`, {
      service: 'mongodb-atlas', name: 'find', arguments: [{ database: 'tracker', collection: 'Task', query: { $expr: { $gt: [{ $size: { $range: [0, MAX_ARRAY_ELEMENTS * 2] } }, 0] } } }],
    });
    assert.equal(res.status, 400, res.text);
    assert.match(res.text, /the limit is/);
  });

  test('a preflight on /logs however spelt gets no CORS for an origin the apps allow', async () => {
    const preflight = (pathname: string) => new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1', port: new URL(runtime.url).port, method: 'OPTIONS', path: pathname,
        headers: { Origin: 'http://localhost:5173', 'Access-Control-Request-Method': 'GET' },
      }, (res) => { res.resume(); resolve(res); });
      req.on('error', reject);
      req.end();
    });
    // The example app allows localhost origins on its own paths.
    assert.equal((await preflight(`/api/client/v2.0/app/${runtime.appId}/location`)).headers['access-control-allow-origin'], 'http://localhost:5173');
    // `//logs` parses as the path `/` (the home page), the runtime's own page as much as `/logs`.
    for (const pathname of ['/logs', '/logs/', '//logs', '/%6Cogs', '/logs//', '/']) {
      assert.equal((await preflight(pathname)).headers['access-control-allow-origin'], undefined, pathname);
    }
  });
});
