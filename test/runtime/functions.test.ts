import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Decimal128, Double, EJSON, Long, ObjectId } from 'bson';
import {
  createFunctionRunner, ExecutionTimeLimitExceeded, FunctionExecutionError, FunctionNotFound, FunctionSyntaxError,
  type FunctionCallContext, type FunctionHost, type FunctionRunner, type FunctionRunnerOptions, type LogLevel,
} from '../../runtime/functions';
import { runServiceAction } from '../../runtime/service-actions';
import { openEmbeddedStore } from '../../runtime/store';

interface ServiceCall { service: string; action: string; args: Record<string, unknown>; ctx: FunctionCallContext }

/** A host that records service calls and answers them from a fixed table, as the runtime's store would. */
function fakeHost(answers: Record<string, unknown> = {}) {
  const serviceCalls: ServiceCall[] = [];
  const executed: { name: string; args: unknown[]; ctx: FunctionCallContext }[] = [];
  let runner: FunctionRunner | undefined;
  const host: FunctionHost = {
    serviceAction(service, action, args, ctx) {
      serviceCalls.push({ service, action, args, ctx });
      if (action === 'deleteMany') throw new Error('no rule allows deleting from Task');
      return answers[action];
    },
    values: { get: (name) => ({ apiBase: 'https://example.test', retries: 3 } as Record<string, unknown>)[name] },
    environment: { tag: 'development', values: { featureFlag: true } },
    async executeFunction(name, args, ctx) {
      executed.push({ name, args, ctx });
      return runner!.run(name, args, ctx);
    },
  };
  return { host, serviceCalls, executed, attach: (r: FunctionRunner) => { runner = r; } };
}

function startRunner(sources: Map<string, string>, options: Partial<FunctionRunnerOptions> & { host: FunctionHost }) {
  const logs: { name: string; level: LogLevel; text: string }[] = [];
  const runner = createFunctionRunner({
    loadSource: (name) => {
      const source = sources.get(name);
      return source === undefined ? undefined : { source, path: `/app/functions/${name}.js` };
    },
    log: (name, level, text) => logs.push({ name, level, text }),
    ...options,
  });
  return { runner, logs };
}

const user = { id: 'u1', type: 'normal', data: { email: 'a@b.c' }, custom_data: { team: 'blue' }, identities: [] };

describe('function runner', () => {
  const sources = new Map<string, string>([
    ['sum', 'exports = function (a, b) { return a + b; };'],
    ['double', 'module.exports = async (x) => { await new Promise((r) => setTimeout(r, 1)); return x * 2; };'],
    ['echoTypes', `exports = async function (id, count, price, when, nested) {
      return {
        sameId: id.equals(new BSON.ObjectId(id.toHexString())),
        idType: id._bsontype, countPlusOne: count.add(1), price, when, later: new Date(when.getTime() + 1000),
        nested, made: new BSON.ObjectId('65f0c0ffee00000000000001'), plain: 7, fraction: 2.5, nothing: null,
        isArray: Array.isArray(nested.list),
      };
    };`],
    ['nothing', 'exports = () => undefined;'],
    ['priority', 'exports = () => require("os").getPriority();'],
    ['boom', 'exports = function () { throw new Error("boom: " + context.user.id); };'],
    ['throwString', 'exports = () => { throw "plain failure"; };'],
    ['notAFunction', 'exports = 42;'],
    ['broken', 'const a = 1;\n\nexports = function () {\n  return a +;\n};\n'],
    ['probe', `exports = () => ({
      process: typeof process, requireType: typeof require, globalProcess: typeof globalThis.process,
      hash: require('crypto').createHash('sha256').update('x').digest('hex').slice(0, 8),
    });`],
    ['readFile', 'exports = () => require("fs").readFileSync("/etc/hostname", "utf8");'],
    ['spawn', 'exports = () => require("node:child_process");'],
    ['context', `exports = function () {
      return {
        user: context.user, remote: context.request.remoteIPAddress, system: context.runningAsSystem(),
        apiBase: context.values.get('apiBase'), retries: context.values.get('retries'), missingIsUndefined: context.values.get('nope') === undefined,
        tag: context.environment.tag, flag: context.environment.values.featureFlag,
      };
    };`],
    ['data', `exports = async function () {
      const tasks = context.services.get('mongodb-atlas').db('todo').collection('Task');
      const found = await tasks.find({ isComplete: false }, { name: 1 }).sort({ dueDate: 1 }).limit(10).toArray();
      const first = await tasks.findOne({ name: 'a' });
      const inserted = await tasks.insertOne({ name: 'new', owner: BSON.ObjectId.createFromHexString('65f0c0ffee00000000000002') });
      await tasks.insertMany([{ name: 'x' }, { name: 'y' }]);
      await tasks.updateOne({ name: 'a' }, { $set: { isComplete: true } }, { upsert: true });
      await tasks.updateMany({}, { $set: { seen: true } });
      await tasks.deleteOne({ name: 'x' });
      await tasks.findOneAndUpdate({ name: 'a' }, { $inc: { n: 1 } }, { returnNewDocument: true, projection: { n: 1 } });
      await tasks.findOneAndReplace({ name: 'b' }, { name: 'c' }, { upsert: true });
      await tasks.findOneAndDelete({ name: 'c' }, { sort: { n: -1 } });
      const grouped = await tasks.aggregate([{ $match: {} }]).toArray();
      const total = await tasks.count({ isComplete: false });
      const counted = await tasks.countDocuments({}, { limit: 5 });
      let refused;
      try { await tasks.deleteMany({}); } catch (e) { refused = e instanceof Error ? e.message : 'not an Error: ' + e; }
      return { found, firstId: first._id, insertedId: inserted.insertedId, grouped, total, counted, refused };
    };`],
    ['outer', `exports = async (x) => {
      const inner = await context.functions.execute('double', x);
      return { inner, sum: await context.functions.execute('sum', inner, 1) };
    };`],
    ['stray', 'exports = () => { Promise.reject(new Error("stray")); return "still fine"; };'],
    // The host realm's Function constructor is out of reach (runtime/functions/lockdown.ts), so is the worker's process.
    ['exitWorker', 'exports = () => console.log.constructor("return process")().exit(3);'],
    ['chatty', 'exports = (who) => { console.log("hello", who, { n: 1 }); console.warn("careful"); console.error(new Error("bad").message); return who; };'],
  ]);
  const fake = fakeHost({
    find: [{ _id: new ObjectId('65f0c0ffee00000000000003'), name: 'a' }],
    findOne: { _id: new ObjectId('65f0c0ffee00000000000004'), name: 'a' },
    insertOne: { insertedId: new ObjectId('65f0c0ffee00000000000005') },
    aggregate: [{ _id: null, n: Long.fromNumber(2) }],
    count: Long.fromNumber(19),
  });
  const { runner, logs } = startRunner(sources, { host: fake.host, poolSize: 1 });
  fake.attach(runner);
  after(() => runner.close());

  test('runs a function and returns its value', async () => {
    assert.equal(await runner.run('sum', [1, 2]), 3);
    assert.equal(await runner.run('sum', ['a', 'b']), 'ab');
  });

  test('awaits async functions assigned to module.exports', async () => {
    assert.equal(await runner.run('double', [21]), 42);
  });

  test('BSON arguments and results keep their types', async () => {
    const id = new ObjectId();
    const when = new Date('2024-03-01T10:00:00Z');
    const result = (await runner.run('echoTypes', [
      id, Long.fromString('9007199254740993'), Decimal128.fromString('19.99'), when, { list: [1, 'two'], deep: { n: 5 } },
    ])) as Record<string, unknown>;
    assert.equal(result.sameId, true);
    assert.equal(result.idType, 'ObjectId');
    assert.ok(result.countPlusOne instanceof Long);
    assert.equal(String(result.countPlusOne), '9007199254740994');
    assert.ok(result.price instanceof Decimal128);
    assert.equal(String(result.price), '19.99');
    assert.deepEqual(result.when, when);
    assert.deepEqual(result.later, new Date(when.getTime() + 1000));
    assert.deepEqual(result.nested, { list: [1, 'two'], deep: { n: 5 } });
    assert.ok(result.made instanceof ObjectId);
    assert.equal(String(result.made), '65f0c0ffee00000000000001');
    assert.equal(result.plain, 7);
    assert.equal(result.fraction, 2.5);
    assert.equal(result.nothing, null);
    assert.equal(result.isArray, true);
    assert.equal(await runner.run('nothing', []), undefined);
  });

  test('a thrown error becomes FunctionExecutionError with its message', async () => {
    await assert.rejects(runner.run('boom', [], { user }), (error: unknown) => {
      assert.ok(error instanceof FunctionExecutionError);
      assert.equal(error.message, 'boom: u1');
      assert.equal(error.errorCode, 'FunctionExecutionError');
      return true;
    });
    await assert.rejects(runner.run('throwString', []), { name: 'FunctionExecutionError', message: 'plain failure' });
    await assert.rejects(runner.run('notAFunction', []), /does not assign a function to exports/);
  });

  test('an unknown name is FunctionNotFound', async () => {
    await assert.rejects(runner.run('missing', []), (error: unknown) => {
      assert.ok(error instanceof FunctionNotFound);
      assert.equal(error.errorCode, 'FunctionNotFound');
      assert.match(error.message, /missing/);
      return true;
    });
  });

  test('a syntax error is FunctionSyntaxError at the offending position', async () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      await assert.rejects(runner.run('broken', []), (error: unknown) => {
        assert.ok(error instanceof FunctionSyntaxError);
        assert.equal(error.errorCode, 'FunctionSyntaxError');
        assert.deepEqual(error.position, { line: 3, character: 12 });
        assert.equal(error.path, '/app/functions/broken.js');
        assert.match(error.reason, /Unexpected token/);
        return true;
      });
    }
  });

  test('functions see neither process nor the file system', async () => {
    const probe = (await runner.run('probe', [])) as Record<string, unknown>;
    assert.deepEqual(probe, { process: 'undefined', requireType: 'function', globalProcess: 'undefined', hash: '2d711642' });
    await assert.rejects(runner.run('readFile', []), { name: 'FunctionExecutionError', message: "module 'fs' is not available to functions" });
    await assert.rejects(runner.run('spawn', []), /module 'node:child_process' is not available to functions/);
  });

  test('context carries the user, request, values and environment', async () => {
    const result = await runner.run('context', [], { user, request: { remoteIPAddress: '127.0.0.1' } });
    assert.deepEqual(result, {
      user, remote: '127.0.0.1', system: false, apiBase: 'https://example.test', retries: 3, missingIsUndefined: true,
      tag: 'development', flag: true,
    });
    const system = (await runner.run('context', [], { runAsSystem: true })) as { user: { type: string }; system: boolean };
    assert.equal(system.user.type, 'system');
    assert.equal(system.system, true);
  });

  test('context.services calls reach the host with the data action shapes', async () => {
    fake.serviceCalls.length = 0;
    const ctx = { user, requestId: 'r-7' };
    const result = (await runner.run('data', [], ctx)) as Record<string, unknown>;
    const owner = new ObjectId('65f0c0ffee00000000000002');
    const base = { database: 'todo', collection: 'Task' };
    assert.deepEqual(fake.serviceCalls.map(({ service, action, args }) => ({ service, action, args })), [
      { service: 'mongodb-atlas', action: 'find', args: { ...base, query: { isComplete: false }, project: { name: 1 }, sort: { dueDate: 1 }, limit: 10 } },
      { service: 'mongodb-atlas', action: 'findOne', args: { ...base, query: { name: 'a' } } },
      { service: 'mongodb-atlas', action: 'insertOne', args: { ...base, document: { name: 'new', owner } } },
      { service: 'mongodb-atlas', action: 'insertMany', args: { ...base, documents: [{ name: 'x' }, { name: 'y' }] } },
      { service: 'mongodb-atlas', action: 'updateOne', args: { ...base, query: { name: 'a' }, update: { $set: { isComplete: true } }, upsert: true } },
      { service: 'mongodb-atlas', action: 'updateMany', args: { ...base, query: {}, update: { $set: { seen: true } } } },
      { service: 'mongodb-atlas', action: 'deleteOne', args: { ...base, query: { name: 'x' } } },
      { service: 'mongodb-atlas', action: 'findOneAndUpdate', args: { ...base, filter: { name: 'a' }, update: { $inc: { n: 1 } }, returnNewDocument: true, projection: { n: 1 } } },
      { service: 'mongodb-atlas', action: 'findOneAndReplace', args: { ...base, filter: { name: 'b' }, update: { name: 'c' }, upsert: true } },
      { service: 'mongodb-atlas', action: 'findOneAndDelete', args: { ...base, filter: { name: 'c' }, sort: { n: -1 } } },
      { service: 'mongodb-atlas', action: 'aggregate', args: { ...base, pipeline: [{ $match: {} }] } },
      { service: 'mongodb-atlas', action: 'count', args: { ...base, query: { isComplete: false } } },
      { service: 'mongodb-atlas', action: 'count', args: { ...base, query: {}, limit: 5 } },
      { service: 'mongodb-atlas', action: 'deleteMany', args: { ...base, query: {} } },
    ]);
    for (const call of fake.serviceCalls) assert.equal(call.ctx, ctx);
    assert.ok((fake.serviceCalls[2].args.document as { owner: unknown }).owner instanceof ObjectId);
    assert.deepEqual(result, {
      found: [{ _id: new ObjectId('65f0c0ffee00000000000003'), name: 'a' }],
      firstId: new ObjectId('65f0c0ffee00000000000004'),
      insertedId: new ObjectId('65f0c0ffee00000000000005'),
      grouped: [{ _id: null, n: Long.fromNumber(2) }],
      total: 19,
      counted: 19,
      refused: 'no rule allows deleting from Task',
    });
  });

  test('context.functions.execute runs other functions through the host, even with a pool of one', async () => {
    fake.executed.length = 0;
    const ctx = { user };
    assert.deepEqual(await runner.run('outer', [5], ctx), { inner: 10, sum: 11 });
    assert.deepEqual(fake.executed.map((e) => [e.name, e.args]), [['double', [5]], ['sum', [10, 1]]]);
    for (const e of fake.executed) {
      assert.equal(e.ctx.user, user);
      assert.equal(e.ctx.caller?.functionName, 'outer');
    }
  });

  test('function code runs ten nice steps below the runtime, which keeps its own priority (Linux)', { skip: process.platform !== 'linux' && 'thread priorities are per thread only on Linux' }, async () => {
    const runtimePriority = os.getPriority();
    assert.equal(await runner.run('priority', []), Math.min(19, runtimePriority + 10));
    assert.equal(os.getPriority(), runtimePriority);
  });

  test('console output reaches the log with the function name', async () => {
    logs.length = 0;
    assert.equal(await runner.run('chatty', ['ada']), 'ada');
    assert.deepEqual(logs, [
      { name: 'chatty', level: 'log', text: 'hello ada { n: 1 }' },
      { name: 'chatty', level: 'warn', text: 'careful' },
      { name: 'chatty', level: 'error', text: 'bad' },
    ]);
  });

  test('a stray rejection is logged and the call still succeeds', async () => {
    logs.length = 0;
    assert.equal(await runner.run('stray', []), 'still fine');
    const deadline = Date.now() + 10_000;
    while (logs.length === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    assert.deepEqual(logs, [{ name: 'stray', level: 'error', text: 'unhandled promise rejection: stray' }]);
  });

  test('a function cannot reach its worker\'s process to stop it, and the runner keeps serving', async () => {
    await assert.rejects(runner.run('exitWorker', []), {
      name: 'FunctionExecutionError', message: 'compiling code in the host realm is not available to functions',
    });
    assert.equal(await runner.run('sum', [2, 2]), 4);
  });

  test('reload picks up changed sources', async () => {
    sources.set('version', 'exports = () => 1;');
    assert.equal(await runner.run('version', []), 1);
    sources.set('version', 'exports = () => 2;');
    assert.equal(await runner.run('version', []), 1);
    runner.reload();
    assert.equal(await runner.run('version', []), 2);
    sources.set('version', 'exports = () => {');
    runner.reload();
    await assert.rejects(runner.run('version', []), FunctionSyntaxError);
    sources.set('version', 'exports = () => 3;');
    runner.reload();
    assert.equal(await runner.run('version', []), 3);
  });
});

describe('function time limit', () => {
  const timeoutMs = 400;
  const sources = new Map<string, string>([
    ['spin', 'exports = function () { while (true) {} };'],
    ['spinLater', 'exports = async function () { await new Promise((r) => setTimeout(r, 5)); for (;;) {} };'],
    ['spinNested', 'exports = async () => context.functions.execute("spin");'],
    ['ok', 'exports = (x) => x + 1;'],
  ]);

  test('a synchronous loop ends with ExecutionTimeLimitExceeded and the runner keeps serving', { timeout: 60_000 }, async () => {
    const fake = fakeHost();
    const { runner } = startRunner(sources, { host: fake.host, poolSize: 1, timeoutMs });
    fake.attach(runner);
    try {
      const started = Date.now();
      const spinning = runner.run('spin', []);
      // With a pool of one, this call waits for the worker that the loop occupies and runs on its replacement.
      const queued = runner.run('ok', [1]);
      await assert.rejects(spinning, (error: unknown) => {
        assert.ok(error instanceof ExecutionTimeLimitExceeded);
        assert.equal(error.message, 'execution time limit exceeded');
        assert.equal(error.errorCode, 'ExecutionTimeLimitExceeded');
        return true;
      });
      assert.ok(Date.now() - started >= timeoutMs, 'the limit is not cut short');
      assert.equal(await queued, 2);
      assert.equal(await runner.run('ok', [41]), 42);
    } finally {
      await runner.close();
    }
  });

  test('a loop after an await ends the same way without blocking other calls', { timeout: 60_000 }, async () => {
    const fake = fakeHost();
    const { runner } = startRunner(sources, { host: fake.host, poolSize: 2, timeoutMs });
    fake.attach(runner);
    try {
      // Two concurrent calls start both workers, so the order below does not depend on how fast one boots.
      assert.deepEqual(await Promise.all([runner.run('ok', [0]), runner.run('ok', [10])]), [1, 11]);
      const order: string[] = [];
      const spinning = runner.run('spinLater', []).then(
        () => order.push('spin resolved'),
        (error: unknown) => order.push(error instanceof ExecutionTimeLimitExceeded ? 'spin timed out' : `spin failed: ${String(error)}`),
      );
      // The loop occupies one worker; the second worker still answers while it spins.
      const other = runner.run('ok', [1]).then((value) => order.push(`ok ${String(value)}`));
      await Promise.all([spinning, other]);
      assert.deepEqual(order, ['ok 2', 'spin timed out']);
      await assert.rejects(runner.run('spinNested', []), ExecutionTimeLimitExceeded);
      assert.equal(await runner.run('ok', [2]), 3);
    } finally {
      await runner.close();
    }
  });
});

describe('documents lent to functions', () => {
  const sources = new Map<string, string>([
    ['passThrough', 'exports = async () => context.services.get("mongodb-atlas").db("d").collection("c").find({}).toArray();'],
    ['touchSecond', 'exports = async () => { const docs = await context.services.get("mongodb-atlas").db("d").collection("c").find({}).toArray(); docs[1].seen = true; return docs; };'],
    ['one', 'exports = async () => context.services.get("mongodb-atlas").db("d").collection("c").findOne({});'],
    ['viaChild', 'exports = async () => { const docs = await context.functions.execute("passThrough"); return [docs[0], "and more"]; };'],
  ]);

  test('documents a function returns unchanged come back as the very objects the host gave', async () => {
    const stored = [{ _id: new ObjectId(), n: 1, when: new Date(0) }, { _id: new ObjectId(), n: Long.fromNumber(2), tags: ['a'] }];
    const fake = fakeHost({ find: stored, findOne: stored[0] });
    const { runner } = startRunner(sources, { host: fake.host });
    fake.attach(runner);
    try {
      const same = (await runner.run('passThrough', [])) as unknown[];
      assert.equal(same.length, 2);
      assert.ok(same[0] === stored[0] && same[1] === stored[1]);
      const touched = (await runner.run('touchSecond', [])) as Record<string, unknown>[];
      assert.equal(touched[0], stored[0]);
      assert.notEqual(touched[1], stored[1]);
      assert.deepEqual(touched[1], { ...stored[1], seen: true });
      assert.equal((stored[1] as Record<string, unknown>).seen, undefined, 'the host\'s object is never changed');
      assert.equal(await runner.run('one', []), stored[0]);
      const nested = (await runner.run('viaChild', [])) as unknown[];
      assert.deepEqual(nested, [stored[0], 'and more']);
    } finally {
      await runner.close();
    }
  });
});

describe('documents read from the store', () => {
  const sources = new Map<string, string>([
    ['readAll', 'exports = async () => context.services.get("mongodb-atlas").db("d").collection("c").find({}).toArray();'],
    ['readAndMark', 'exports = async () => { const docs = await context.services.get("mongodb-atlas").db("d").collection("c").find({}).toArray(); docs[0].marked = true; return docs; };'],
  ]);

  // The runner keeps the BSON of the store's own documents by identity (DocumentStore.storedOriginals):
  // after a write, a function must read the new document, never the encoding kept for the old one.
  test('a function reading documents again after writes sees the writes', async () => {
    const store = await openEmbeddedStore();
    const items = store.collection('d', 'c');
    await items.insertMany([{ _id: 1, n: 1, tags: ['a'] }, { _id: 2, n: 2 }]);
    const host: FunctionHost = {
      serviceAction: (service, action, args) => runServiceAction((_s, db, coll) => store.collection(db, coll), service, action, args),
      storedOriginals: (found) => store.storedOriginals?.(found),
      values: { get: () => undefined },
      environment: { tag: '', values: {} },
      executeFunction: () => Promise.reject(new Error('not used')),
    };
    const { runner } = startRunner(sources, { host, poolSize: 1 });
    try {
      assert.deepEqual(await runner.run('readAll', []), [{ _id: 1, n: 1, tags: ['a'] }, { _id: 2, n: 2 }]);
      await items.updateOne({ _id: 2 }, { $set: { n: 20 } });
      await items.updateOne({ _id: 1 }, { $push: { tags: 'b' } });
      await items.insertOne({ _id: 3, n: 3 });
      assert.deepEqual(await runner.run('readAll', []), [{ _id: 1, n: 1, tags: ['a', 'b'] }, { _id: 2, n: 20 }, { _id: 3, n: 3 }]);
      assert.deepEqual(await runner.run('readAndMark', []), [{ _id: 1, n: 1, tags: ['a', 'b'], marked: true }, { _id: 2, n: 20 }, { _id: 3, n: 3 }]);
      await items.deleteOne({ _id: 1 });
      await items.replaceOne({ _id: 3 }, { replaced: true });
      assert.deepEqual(await runner.run('readAll', []), [{ _id: 2, n: 20 }, { _id: 3, replaced: true }]);
      assert.deepEqual(await items.find({}), [{ _id: 2, n: 20 }, { _id: 3, replaced: true }], 'what functions did to their copies never reached the store');
    } finally {
      await runner.close();
    }
  });
});

describe('numbers keep their BSON type between functions and the store', () => {
  const sources = new Map<string, string>([
    ['writeTyped', `exports = async () => {
      const c = context.services.get("mongodb-atlas").db("d").collection("typed");
      await c.insertOne({ _id: 1, d: BSON.Double(4.0), i: 4, i32: BSON.Int32(5), f: 4.5, l: BSON.Long.fromNumber(6), big: 5e9 });
      const back = await c.findOne({ _id: 1 });
      return {
        back,
        seen: { d: back.d._bsontype, i: typeof back.i, i32: typeof back.i32, f: typeof back.f, l: back.l._bsontype, big: back.big._bsontype },
        arithmetic: back.d + 1,
      };
    };`],
    ['incDouble', `exports = async () => {
      const c = context.services.get("mongodb-atlas").db("d").collection("typed");
      await c.updateOne({ _id: 1 }, { $inc: { d: 1, i: 1 } });
      return c.find({}).toArray();
    };`],
    ['echo', 'exports = (value) => value;'],
  ]);

  test('a function writing BSON.Double(4.0) reads back a Double, an int32 stays an int32', async () => {
    const store = await openEmbeddedStore();
    const host: FunctionHost = {
      serviceAction: (service, action, args) => runServiceAction((_s, db, coll) => store.collection(db, coll), service, action, args),
      storedOriginals: (found) => store.storedOriginals?.(found),
      values: { get: () => undefined },
      environment: { tag: '', values: {} },
      executeFunction: () => Promise.reject(new Error('not used')),
    };
    const { runner } = startRunner(sources, { host, poolSize: 1 });
    try {
      const result = (await runner.run('writeTyped', [])) as Record<string, unknown>;
      assert.deepEqual(result.seen, { d: 'Double', i: 'number', i32: 'number', f: 'number', l: 'Long', big: 'Double' });
      assert.equal(result.arithmetic, 5);
      const expected = {
        _id: { $numberInt: '1' }, d: { $numberDouble: '4.0' }, i: { $numberInt: '4' }, i32: { $numberInt: '5' },
        f: { $numberDouble: '4.5' }, l: { $numberLong: '6' }, big: { $numberDouble: '5000000000.0' },
      };
      assert.deepEqual(JSON.parse(EJSON.stringify(result.back as never, { relaxed: false })), expected);
      assert.deepEqual(JSON.parse(EJSON.stringify((await store.collection('d', 'typed').findOne({ _id: 1 }))!, { relaxed: false })), expected);
      const incremented = (await runner.run('incDouble', [])) as Record<string, unknown>[];
      assert.deepEqual(JSON.parse(EJSON.stringify(incremented as never, { relaxed: false })), [{ ...expected, d: { $numberDouble: '5.0' }, i: { $numberInt: '5' } }]);
      // Read a second time: the worker copies the document from what it decoded before, types included.
      assert.ok(((await runner.run('incDouble', [])) as Record<string, unknown>[])[0]!.d instanceof Double);
      const echoed = (await runner.run('echo', [{ d: new Double(4), i: 4, list: [new Double(-0), 2.5] }])) as Record<string, unknown>;
      assert.deepEqual(JSON.parse(EJSON.stringify(echoed as never, { relaxed: false })), {
        d: { $numberDouble: '4.0' }, i: { $numberInt: '4' }, list: [{ $numberDouble: '-0.0' }, { $numberDouble: '2.5' }],
      });
    } finally {
      await runner.close();
      await store.close();
    }
  });
});

describe('functions sharing a worker', () => {
  const timeoutMs = 400;
  const sources = new Map<string, string>([
    ['hang', 'exports = () => new Promise(() => {});'],
    ['ok', 'exports = (x) => x + 1;'],
    ['readThenSpin', 'exports = async () => { await context.services.get("mongodb-atlas").db("d").collection("c").find({}).toArray(); for (;;) {} };'],
    ['readThenWait', 'exports = async () => { await context.services.get("mongodb-atlas").db("d").collection("c").find({}).toArray(); await new Promise((r) => setTimeout(r, 3000)); return "late"; };'],
    ['waitThenAnswer', 'exports = async () => { await new Promise((r) => setTimeout(r, 300)); return "answered"; };'],
  ]);

  test('a call that only waits runs out of time alone; the others on its worker go on', { timeout: 60_000 }, async () => {
    const fake = fakeHost();
    const { runner } = startRunner(sources, { host: fake.host, poolSize: 1, timeoutMs });
    fake.attach(runner);
    try {
      const order: string[] = [];
      const hanging = runner.run('hang', []).then(() => order.push('hang resolved'), (error: unknown) =>
        order.push(error instanceof ExecutionTimeLimitExceeded ? 'hang timed out' : `hang failed: ${String(error)}`));
      // With a pool of one these share the worker, and they finish while the other call waits.
      const others = Promise.all([runner.run('ok', [1]), runner.run('waitThenAnswer', [])]).then((values) => order.push(`others ${values.join(' ')}`));
      await Promise.all([hanging, others]);
      assert.deepEqual(order, ['others 2 answered', 'hang timed out']);
      assert.equal(await runner.run('ok', [41]), 42);
    } finally {
      await runner.close();
    }
  });

  test('a worker whose calls wait for a long time still takes new calls at once', { timeout: 60_000 }, async () => {
    const fake = fakeHost();
    const { runner } = startRunner(new Map([...sources, ['slow', 'exports = () => new Promise((r) => setTimeout(() => r("slow"), 2500));']]), { host: fake.host, poolSize: 1 });
    fake.attach(runner);
    try {
      assert.equal(await runner.run('ok', [0]), 1, 'the worker is up');
      const order: string[] = [];
      const slow = runner.run('slow', []).then((value) => order.push(String(value)));
      // Longer than a stuck worker is given before new calls go elsewhere; this one only waits.
      await new Promise((r) => setTimeout(r, 1500));
      const quick = runner.run('ok', [1]).then((value) => order.push(`ok ${String(value)}`));
      await Promise.all([slow, quick]);
      assert.deepEqual(order, ['ok 2', 'slow']);
    } finally {
      await runner.close();
    }
  });

  test('a stuck worker is stopped: calls that asked for nothing are retried, the others fail saying why', { timeout: 60_000 }, async () => {
    const fake = fakeHost({ find: [] });
    const { runner } = startRunner(sources, { host: fake.host, poolSize: 1, timeoutMs });
    fake.attach(runner);
    try {
      const waiting = runner.run('readThenWait', []);
      // Let it reach the host before the loop starts, so it has been seen doing something.
      while (fake.serviceCalls.length === 0) await new Promise((r) => setTimeout(r, 5));
      const spinning = runner.run('readThenSpin', []);
      const queuedBehindLoop = runner.run('ok', [1]);
      await assert.rejects(spinning, ExecutionTimeLimitExceeded);
      await assert.rejects(waiting, (error: unknown) => {
        assert.ok(error instanceof FunctionExecutionError);
        assert.match(error.message, /function 'readThenSpin', running on the same worker, exceeded the execution time limit/);
        return true;
      });
      assert.equal(await queuedBehindLoop, 2);
    } finally {
      await runner.close();
    }
  });
});

describe('code of a call that ran out of time', () => {
  test('retrying the runtime in a loop parks it: the next call on its worker is answered at once, and the worker is kept', { timeout: 60_000 }, async () => {
    const timeoutMs = 1000;
    const sources = new Map<string, string>([
      ['retryForever', 'exports = async () => { const c = context.services.get("mongodb-atlas").db("d").collection("c"); for (;;) { try { await c.find({}).toArray(); } catch (e) { /* again */ } } };'],
      ['ok', 'exports = (x) => x + 1;'],
    ]);
    const fake = fakeHost();
    // The runtime takes longer to answer than the call's time limit: the call is stopped while it waits.
    const host: FunctionHost = { ...fake.host, serviceAction: () => new Promise((resolve) => setTimeout(() => resolve([]), 3 * timeoutMs)) };
    const { runner, logs } = startRunner(sources, { host, poolSize: 1, timeoutMs });
    try {
      await assert.rejects(runner.run('retryForever', []), ExecutionTimeLimitExceeded);
      const started = performance.now();
      assert.equal(await runner.run('ok', [1]), 2);
      const answeredAfter = performance.now() - started;
      assert.ok(answeredAfter < timeoutMs / 2, `answered after ${Math.round(answeredAfter)} ms`);
      await new Promise((r) => setTimeout(r, timeoutMs));
      assert.deepEqual(logs.filter((l) => /busy past the time limit|stopped/.test(l.text)).map((l) => l.text), [], 'no worker was stopped');
      assert.equal(await runner.run('ok', [41]), 42);
    } finally {
      await runner.close();
    }
  });
});

describe('outcomes a loop would hold back', () => {
  const sources = new Map<string, string>([
    ['readThenAnswer', 'exports = async () => { await context.services.get("mongodb-atlas").db("d").collection("first").findOne({}); return "answered"; };'],
    ['readThenSpin', 'exports = async () => { await context.services.get("mongodb-atlas").db("d").collection("second").findOne({}); for (;;) {} };'],
  ]);

  test('a call that finished just before another call on its worker loops is answered at once, not at the time limit', { timeout: 60_000 }, async () => {
    const pending = new Map<string, (value: unknown) => void>();
    const host: FunctionHost = {
      serviceAction: (_service, _action, args) => new Promise((resolve) => pending.set(String(args.collection), resolve)),
      values: { get: () => undefined },
      environment: { tag: '', values: {} },
      executeFunction: async () => undefined,
    };
    const timeoutMs = 4000;
    const { runner } = startRunner(sources, { host, poolSize: 1, timeoutMs });
    try {
      const answering = runner.run('readThenAnswer', []);
      const spinning = runner.run('readThenSpin', []);
      while (pending.size < 2) await new Promise((r) => setTimeout(r, 5));
      // Both answers leave in one batch, the first call's first: the worker finishes that call, then loops.
      const started = performance.now();
      pending.get('first')!(null);
      pending.get('second')!(null);
      assert.equal(await answering, 'answered');
      const answeredAfter = performance.now() - started;
      assert.ok(answeredAfter < timeoutMs / 2, `answered after ${Math.round(answeredAfter)} ms, with the loop's time limit at ${timeoutMs} ms`);
      await assert.rejects(spinning, ExecutionTimeLimitExceeded);
    } finally {
      await runner.close();
    }
  });
});

describe('function packages', () => {
  let appDir: string;
  before(() => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-functions-'));
    const pkg = path.join(appDir, 'functions', 'node_modules', 'greeter');
    fs.mkdirSync(pkg, { recursive: true });
    fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'greeter', main: 'index.js' }));
    fs.writeFileSync(path.join(pkg, 'index.js'), 'exports.greet = (name) => `hello, ${name}`;\n');
    // Sloppy-mode code, a relative file, JSON and what a package's code finds around it.
    const probe = path.join(appDir, 'functions', 'node_modules', 'probe');
    fs.mkdirSync(path.join(probe, 'lib'), { recursive: true });
    fs.writeFileSync(path.join(probe, 'package.json'), JSON.stringify({ name: 'probe', main: 'lib/main.js', version: '1.2.3' }));
    fs.writeFileSync(path.join(probe, 'lib', 'main.js'), [
      '#!/usr/bin/env node',
      'var pkg = require("../package.json");',
      'function receiver() { return this; }',
      'module.exports = { version: pkg.version, greeting: require("greeter").greet("pkg"), receiver: receiver,',
      '  processPid: typeof process.pid, env: JSON.stringify(process.env), file: __filename.endsWith("main.js"),',
      '  fs: typeof require("fs").readFileSync, sameBuffer: typeof Buffer.from,',
      '  refused: ["worker_threads", "child_process", "vm", "module", "v8"].map(function (m) { try { require(m); return m; } catch (e) { return e.code; } }),',
      '  outside: (function () { try { require("../../../../outside.js"); return "loaded"; } catch (e) { return e.code; } })() };',
    ].join('\n'));
    fs.writeFileSync(path.join(appDir, 'outside.js'), 'module.exports = 1;');
  });
  after(() => fs.rmSync(appDir, { recursive: true, force: true }));

  test('functions require packages from the app’s functions/node_modules only', { timeout: 60_000 }, async () => {
    const sources = new Map<string, string>([
      ['greet', 'exports = (name) => require("greeter").greet(name);'],
      ['outside', 'exports = () => require("bson");'],
      ['probe', `exports = () => {
        const p = require("probe");
        const seen = (0, p.receiver)();
        return { ...p, receiver: undefined, sloppyThis: seen === globalThis, processThere: typeof seen.process, same: require("probe") === p };
      };`],
    ]);
    const fake = fakeHost();
    const { runner } = startRunner(sources, { host: fake.host, poolSize: 1, packagesDir: path.join(appDir, 'functions', 'node_modules') });
    try {
      assert.equal(await runner.run('greet', ['ada']), 'hello, ada');
      await assert.rejects(runner.run('outside', []), { name: 'FunctionExecutionError', message: "Cannot find module 'bson'" });
      // The package runs in the function's realm: its sloppy `this` is the function's global object, its
      // `process` a stand-in; it may read files but start nothing, and loads nothing outside node_modules.
      assert.deepEqual(await runner.run('probe', []), {
        version: '1.2.3', greeting: 'hello, pkg', processPid: 'undefined', env: '{}', file: true, fs: 'function', sameBuffer: 'function',
        refused: ['ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED'],
        outside: 'MODULE_NOT_FOUND', sloppyThis: true, processThere: 'undefined', same: true,
      });
    } finally {
      await runner.close();
    }
  });
});

describe('network from functions', () => {
  test('fetch and the http module reach a server over the network from the function process', { timeout: 60_000 }, async () => {
    const server = http.createServer((req, res) => res.end(`hello ${req.url}`));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const sources = new Map<string, string>([
      ['viaFetch', 'exports = async (url) => (await fetch(url)).text();'],
      ['viaHttp', `exports = (url) => new Promise((resolve, reject) => {
        require('http').get(url, (res) => { let body = ''; res.on('data', (c) => { body += c; }); res.on('end', () => resolve(body)); }).on('error', reject);
      });`],
    ]);
    const { runner } = startRunner(sources, { host: fakeHost().host, poolSize: 1 });
    try {
      assert.equal(await runner.run('viaFetch', [`http://127.0.0.1:${port}/a`]), 'hello /a');
      assert.equal(await runner.run('viaHttp', [`http://127.0.0.1:${port}/b`]), 'hello /b');
    } finally {
      await runner.close();
      server.close();
    }
  });
});
