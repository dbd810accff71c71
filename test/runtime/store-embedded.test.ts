// Behaviour specific to the embedded store: persistence across reopen, compaction, indexes and query
// plans, the directory lock, the injected clock, group commit and snapshot integrity.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { Binary, BSON, Decimal128, Long, ObjectId } from 'bson';
import { EmbeddedStore, openEmbeddedStore } from '../../runtime/store/embedded';
import { MemoryStore } from '../../runtime/store/memory-store';
import { openMongoStore } from '../../runtime/store/mongodb';
import { withChangeEvents, type ChangeEvent } from '../../runtime/store/changes';
import { StoreError, type Document } from '../../runtime/store/types';

async function withDir<T>(run: (dir: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'store-embedded-'));
  try {
    return await run(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function openDisk(dir: string, options: { compactAfterBytes?: number; clock?: () => Date } = {}): Promise<EmbeddedStore> {
  return (await openEmbeddedStore({ dir, ...options })) as EmbeddedStore;
}

describe('embedded store persistence', () => {
  test('inserts, updates, deletes and indexes survive a reopen', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    const tasks = store.collection('todo', 'Task');
    const id = new ObjectId();
    await tasks.insertMany([{ _id: id, name: 'a', owner: 'u1', n: Long.fromNumber(1) }, { _id: 2, name: 'b', owner: 'u2' }, { _id: 3, name: 'c', owner: 'u1' }]);
    await tasks.updateOne({ _id: id }, { $inc: { n: 1 }, $set: { done: true } });
    await tasks.deleteOne({ _id: 3 });
    await tasks.createIndex('owner');
    await store.collection('other', 'Empty').createIndex('x');
    await store.close();

    const reopened = await openDisk(dir);
    const again = reopened.collection('todo', 'Task');
    assert.deepEqual(await again.find({}, { sort: { name: 1 } }), [
      { _id: id, name: 'a', owner: 'u1', n: Long.fromNumber(2), done: true },
      { _id: 2, name: 'b', owner: 'u2' },
    ]);
    assert.deepEqual(again.explain({ owner: 'u1' }), { kind: 'index', field: 'owner' });
    assert.deepEqual(
      (await reopened.listCollections()).sort((a, b) => a.database.localeCompare(b.database)),
      [{ database: 'other', name: 'Empty' }, { database: 'todo', name: 'Task' }],
    );
    await reopened.close();
  }));

  test('compaction writes a snapshot, removes old journals and keeps the data', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    const items = store.collection('db', 'items');
    for (let i = 0; i < 100; i++) await items.insertOne({ _id: i, v: i });
    await items.deleteMany({ v: { $gte: 50 } });
    await store.compact();
    await items.insertOne({ _id: 'later' });
    await store.close();
    const files = fs.readdirSync(dir).sort();
    assert.deepEqual(files, ['journal-00000001.log', 'snapshot.bson']);

    const reopened = await openDisk(dir);
    assert.equal(reopened.recovery.replayedRecords, 1);
    assert.equal(await reopened.collection('db', 'items').countDocuments(), 51);
    await reopened.close();
  }));

  test('the journal compacts by itself once it passes the size threshold', () => withDir(async (dir) => {
    const store = await openDisk(dir, { compactAfterBytes: 16 * 1024 });
    const items = store.collection('db', 'items');
    for (let i = 0; i < 300; i++) await items.insertOne({ _id: i, pad: 'y'.repeat(100) });
    await store.close();
    assert.equal(store.lastCompactionError, undefined);
    assert.ok(fs.existsSync(path.join(dir, 'snapshot.bson')));
    const reopened = await openDisk(dir);
    assert.equal(await reopened.collection('db', 'items').countDocuments(), 300);
    await reopened.close();
  }));

  test('a damaged snapshot refuses to open instead of losing data silently', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    await store.collection('db', 'items').insertOne({ a: 1 });
    await store.compact();
    await store.close();
    const snapshot = path.join(dir, 'snapshot.bson');
    const bytes = fs.readFileSync(snapshot);
    bytes[bytes.length - 3] ^= 0xff;
    fs.writeFileSync(snapshot, bytes);
    await assert.rejects(openDisk(dir), /snapshot\.bson is corrupt/);
  }));

  test('a directory can be open by one store at a time', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    await assert.rejects(openDisk(dir), (e: unknown) => e instanceof StoreError && /already open/.test(e.message));
    await store.close();
    const second = await openDisk(dir);
    await second.close();
  }));

  test('a lock left by a dead process is taken over', () => withDir(async (dir) => {
    fs.writeFileSync(path.join(dir, 'LOCK'), '2147483646');
    const store = await openDisk(dir);
    await store.close();
  }));

  test('operations on a closed store reject', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    const items = store.collection('db', 'items');
    await store.close();
    await assert.rejects(items.find({}), /closed/);
  }));

  test('concurrent writes share journal syncs (group commit)', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    const items = store.collection('db', 'items');
    await Promise.all(Array.from({ length: 200 }, (_, i) => items.insertOne({ _id: i })));
    const { records, syncs } = store.journalStats;
    assert.equal(records, 200);
    assert.ok(syncs < records, `expected fewer syncs than records, got ${syncs} for ${records}`);
    await store.close();
  }));

  test('os durability persists too', () => withDir(async (dir) => {
    const store = await openEmbeddedStore({ dir, durability: 'os' });
    await store.collection('db', 'items').insertOne({ _id: 1 });
    await store.close();
    const reopened = await openDisk(dir);
    assert.equal(await reopened.collection('db', 'items').countDocuments({ _id: 1 }), 1);
    await reopened.close();
  }));
});

describe('embedded store commits', () => {
  test('a commit writes several collections as one journal record and one sync, and survives a reopen', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    await store.collection('todo', 'Task').insertMany([{ _id: 1, name: 'old' }, { _id: 2, name: 'gone' }]);
    const before = store.journalStats;
    await store.commit([
      { database: 'todo', collection: 'Task', replace: { _id: 1, name: 'new' } },
      { database: 'todo', collection: 'Task', delete: 2 },
      { database: 'todo', collection: 'Task', insert: { _id: 3, name: 'made' } },
      { database: 'meta', collection: 'history', insert: { _id: 'p|2', v: Long.fromNumber(2) } },
      { database: 'todo', collection: 'Task', delete: 99 },
    ]);
    assert.deepEqual(store.journalStats, { records: before.records + 1, syncs: before.syncs + 1 });
    await store.close();
    const reopened = await openDisk(dir);
    assert.deepEqual(await reopened.collection('todo', 'Task').find({}, { sort: { _id: 1 } }), [{ _id: 1, name: 'new' }, { _id: 3, name: 'made' }]);
    assert.deepEqual(await reopened.collection('meta', 'history').find({}), [{ _id: 'p|2', v: Long.fromNumber(2) }]);
    await reopened.close();
  }));

  test('a commit with one bad write applies none of them', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    const tasks = store.collection('todo', 'Task');
    await tasks.insertOne({ _id: 1, name: 'old' });
    await assert.rejects(store.commit([
      { database: 'todo', collection: 'Task', replace: { _id: 1, name: 'new' } },
      { database: 'meta', collection: 'history', insert: { _id: 'entry' } },
      { database: 'todo', collection: 'Task', insert: { _id: 1, name: 'again' } },
    ]), (error: StoreError) => error.code === 11000);
    await assert.rejects(store.commit([{ database: 'todo', collection: 'Task', replace: { name: 'no id' } }]), StoreError);
    await assert.rejects(store.commit([{ database: 'bad.name', collection: 'Task', delete: 1 }]), StoreError);
    assert.deepEqual(await tasks.find({}), [{ _id: 1, name: 'old' }]);
    assert.equal(await store.collection('meta', 'history').countDocuments(), 0);
    await store.close();
  }));

  test('a commit too large for one record is refused whole, memory included', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    const tasks = store.collection('todo', 'Task');
    await tasks.insertOne({ _id: 1, name: 'old' });
    const big = new Binary(Buffer.alloc(9 * 1024 * 1024));
    await assert.rejects(store.commit([
      { database: 'todo', collection: 'Task', replace: { _id: 1, name: 'new', blob: big } },
      { database: 'todo', collection: 'Task', insert: { _id: 2, blob: big } },
    ]));
    assert.deepEqual(await tasks.find({}), [{ _id: 1, name: 'old' }]);
    await store.close();
    const reopened = await openDisk(dir);
    assert.deepEqual(await reopened.collection('todo', 'Task').find({}), [{ _id: 1, name: 'old' }]);
    await reopened.close();
  }));

  test('a commit cut short by a crash is recovered as none of its writes', () => withDir(async (dir) => {
    const store = await openDisk(dir);
    await store.collection('todo', 'Task').insertOne({ _id: 1, name: 'kept' });
    await store.commit([
      { database: 'todo', collection: 'Task', replace: { _id: 1, name: 'lost' } },
      { database: 'meta', collection: 'history', insert: { _id: 'entry' } },
    ]);
    await store.close();
    const journal = fs.readdirSync(dir).find((name) => name.startsWith('journal-'))!;
    const file = path.join(dir, journal);
    fs.truncateSync(file, fs.statSync(file).size - 3);
    const reopened = await openDisk(dir);
    assert.deepEqual(await reopened.collection('todo', 'Task').find({}), [{ _id: 1, name: 'kept' }]);
    assert.equal(await reopened.collection('meta', 'history').countDocuments(), 0);
    assert.equal(reopened.recovery.truncatedBytes > 0, true);
    await reopened.close();
  }));

  test('with change events, a commit reports each watched write as a single write would', async () => {
    const events: ChangeEvent[] = [];
    const store = withChangeEvents(await openEmbeddedStore(), (event) => events.push(event), { wants: (db) => db === 'todo' });
    await store.collection('todo', 'Task').insertMany([{ _id: 1, name: 'old' }, { _id: 2, name: 'gone' }]);
    await store.collection('todo', 'Task').replaceOne({ _id: 1 }, { name: 'older' });
    events.length = 0;
    await store.commit!([
      { database: 'todo', collection: 'Task', replace: { _id: 1, name: 'new' } },
      { database: 'todo', collection: 'Task', delete: 2 },
      { database: 'todo', collection: 'Task', insert: { _id: 3, name: 'made' } },
      { database: 'meta', collection: 'history', insert: { _id: 'unwatched' } },
    ]);
    assert.deepEqual(events.map((e) => [e.operationType, e.ns.coll, e.documentKey._id, e.fullDocumentBeforeChange?.name, e.fullDocument?.name]), [
      ['replace', 'Task', 1, 'older', 'new'],
      ['delete', 'Task', 2, 'gone', undefined],
      ['insert', 'Task', 3, undefined, 'made'],
    ]);
    await store.close();
  });
});

describe('embedded store with change events: writes pipelined, acknowledged once durable', () => {
  /** A journal whose records become durable (or fail) when the test says. */
  const heldJournal = () => {
    const waiting: { resolve: () => void; reject: (error: Error) => void }[] = [];
    const record = () => new Promise<void>((resolve, reject) => { waiting.push({ resolve, reject }); });
    return { waiting, journal: { put: record, remove: record, commit: record, declareIndex: async () => undefined } };
  };
  const settledYet = (promise: Promise<unknown>) => Promise.race([promise.then(() => true, () => true), new Promise((resolve) => setTimeout(() => resolve(false), 20))]);

  test('the next watched writes are applied while the first is not yet durable; each is reported, then resolves, once its record is', async () => {
    const { waiting, journal } = heldJournal();
    const events: ChangeEvent[] = [];
    const store = withChangeEvents(new MemoryStore({ journal }), (event) => events.push(event));
    const tasks = store.collection('todo', 'Task');
    const first = tasks.insertOne({ _id: 1 });
    const second = tasks.updateOne({ _id: 1 }, { $set: { done: true } });
    const third = tasks.deleteOne({ _id: 1 });
    for (let turn = 0; turn < 100 && waiting.length < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(waiting.length, 3, 'three records made before any is durable');
    assert.equal(events.length, 0, 'no event before its write is durable');
    assert.equal(await settledYet(first), false, 'an insert is not acknowledged before its record is durable');
    waiting[0]!.resolve();
    await first;
    assert.deepEqual(events.map((e) => e.operationType), ['insert'], 'reported before the write resolves');
    waiting[1]!.resolve();
    await second;
    assert.deepEqual(events.map((e) => e.operationType), ['insert', 'update']);
    assert.deepEqual(events[1]!.fullDocument, { _id: 1, done: true }, 'each read around its own write');
    assert.equal(await settledYet(third), false);
    waiting[2]!.reject(new Error('disk full'));
    await assert.rejects(third, /disk full/, 'a write whose record fails is not acknowledged');
    assert.deepEqual(events.map((e) => e.operationType), ['insert', 'update'], 'nor reported');
  });
});

describe('embedded store semantics', () => {
  test('$currentDate uses the injected clock', async () => {
    const now = new Date('2030-05-06T07:08:09Z');
    const store = await openEmbeddedStore({ clock: () => now });
    const items = store.collection('db', 'items');
    await items.insertOne({ _id: 1 });
    await items.updateOne({ _id: 1 }, { $currentDate: { touched: true } });
    assert.deepEqual(await items.findOne({ _id: 1 }), { _id: 1, touched: now });
  });

  test('query plans use _id and declared indexes', async () => {
    const store = await openEmbeddedStore();
    const items = store.collection('db', 'items');
    await items.insertMany([{ _id: 1, p: 'a', q: 1 }, { _id: 2, p: 'b', q: 2 }]);
    await items.createIndex('p');
    assert.deepEqual(items.explain({ _id: 1, p: 'a' }), { kind: 'id' });
    assert.deepEqual(items.explain({ p: { $in: ['a', 'b'] } }), { kind: 'index', field: 'p' });
    assert.deepEqual(items.explain({ $and: [{ q: 1 }, { p: 'a' }] }), { kind: 'index', field: 'p' });
    assert.deepEqual(items.explain({ p: /a/ }), { kind: 'scan' });
    assert.deepEqual(items.explain({ q: 1 }), { kind: 'scan' });
  });

  // A bulk write's documents are read back with {_id: {$in: ids}} (store/changes.ts): answered from the _id
  // map alone, it must select what MongoDB's equality selects, across numeric types and BSON values.
  test('{_id: {$in}} answered from the _id map matches what the filter tested document by document matches', async () => {
    const ids = [1, 2.5, 'a', 'B', new Long(7), new Decimal128('3'), new ObjectId('65a0000000000000000000aa'), new Date(0), true];
    const asked = [fc.constant(1), fc.constant(new Long(1)), fc.constant(new Decimal128('2.5')), fc.constant(7), fc.constant(new Decimal128('7.0')),
      fc.constant(3), fc.constant('a'), fc.constant('b'), fc.constant(new ObjectId('65a0000000000000000000aa')), fc.constant(new Date(0)),
      fc.constant(null), fc.constant(false), fc.constant(true), fc.integer({ min: -2, max: 9 })];
    const store = await openEmbeddedStore();
    const items = store.collection('db', 'items');
    await items.insertMany(ids.map((_id, n) => ({ _id, n })));
    await fc.assert(fc.asyncProperty(fc.array(fc.oneof(...asked), { maxLength: 8 }), async (values) => {
      assert.deepEqual(items.explain({ _id: { $in: values } }), { kind: 'id' });
      const fromMap = await items.find({ _id: { $in: values } });
      const scanned = { $or: [{ _id: { $in: values } }] };
      assert.deepEqual(items.explain(scanned), { kind: 'scan' });
      const tested = await items.find(scanned);
      assert.deepEqual(fromMap, tested);
    }), { numRuns: 300 });
  });

  // The function runner keeps the BSON of the documents a find copies by their identity (see
  // DocumentStore.storedOriginals): a write that changed one of those objects in place would make it hand
  // functions stale data.
  test('a find names the stored documents its results copy, and no write changes those afterwards', async () => {
    const write = fc.oneof(
      fc.record({ op: fc.constant('insert' as const), id: fc.integer({ min: 0, max: 5 }), n: fc.integer() }),
      fc.record({ op: fc.constant('update' as const), id: fc.integer({ min: 0, max: 5 }), n: fc.integer() }),
      fc.record({ op: fc.constant('push' as const), id: fc.integer({ min: 0, max: 5 }), n: fc.integer() }),
      fc.record({ op: fc.constant('replace' as const), id: fc.integer({ min: 0, max: 5 }), n: fc.integer() }),
      fc.record({ op: fc.constant('findAndUpdate' as const), id: fc.integer({ min: 0, max: 5 }), n: fc.integer() }),
      fc.record({ op: fc.constant('delete' as const), id: fc.integer({ min: 0, max: 5 }), n: fc.integer() }),
      fc.record({ op: fc.constant('find' as const), id: fc.integer({ min: 0, max: 5 }), n: fc.integer() }),
    );
    await fc.assert(fc.asyncProperty(fc.array(write, { maxLength: 30 }), async (writes) => {
      const store = await openEmbeddedStore();
      const items = store.collection('db', 'items');
      const seen: { original: Document; bson: string }[] = [];
      const lookAt = async (filter: Document) => {
        const found = await items.find(filter);
        const originals = store.storedOriginals(found);
        assert.ok(originals, 'a find without a projection names its originals');
        assert.equal(originals.length, found.length);
        found.forEach((copy, i) => {
          assert.notEqual(copy, originals[i]);
          assert.deepEqual(copy, originals[i]);
          seen.push({ original: originals[i], bson: BSON.serialize(originals[i]).toString() });
        });
      };
      for (const { op, id, n } of writes) {
        if (op === 'insert') await items.insertOne({ _id: id, n, nested: { list: [n] } }).catch(() => undefined);
        else if (op === 'update') await items.updateOne({ _id: id }, { $set: { n, 'nested.at': n }, $inc: { count: 1 } });
        else if (op === 'push') await items.updateMany({ _id: { $gte: id } }, { $push: { 'nested.list': n } });
        else if (op === 'replace') await items.replaceOne({ _id: id }, { n, replaced: true }, { upsert: true });
        else if (op === 'findAndUpdate') await items.findOneAndUpdate({ _id: id }, { $unset: { n: '' } });
        else if (op === 'delete') await items.deleteOne({ _id: id });
        else await lookAt(id % 2 === 0 ? {} : { _id: id });
        for (const { original, bson } of seen) assert.equal(BSON.serialize(original).toString(), bson, `${op} changed a stored document in place`);
      }
      assert.equal(store.storedOriginals(await items.find({}, { projection: { n: 1 } })), undefined, 'a projected result copies no stored document whole');
      assert.equal(store.storedOriginals([...(await items.find({}))]), undefined, 'only the array find returned is known');
    }), { numRuns: 150 });
  });

  test('returned documents are copies the caller may change', async () => {
    const store = await openEmbeddedStore();
    const items = store.collection('db', 'items');
    await items.insertOne({ _id: 1, tags: ['a'] });
    const doc = (await items.findOne({ _id: 1 }))!;
    (doc.tags as string[]).push('mutated');
    assert.deepEqual(await items.findOne({ _id: 1 }), { _id: 1, tags: ['a'] });
  });

  test('an indexed equality query returns what a scan returns', async () => {
    const scalar = fc.oneof(
      fc.integer({ min: -3, max: 3 }),
      fc.integer({ min: -3, max: 3 }).map((n) => Long.fromNumber(n)),
      fc.constantFrom('a', 'b', null, true),
    );
    const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.record({ k: scalar }), fc.array(fc.record({ k: scalar }), { maxLength: 2 }));
    // `g` as an array makes `g.k` cross an array: such documents are not keyed by the index.
    const doc = fc.record({ f: value, g: fc.oneof(fc.record({ k: value }), fc.array(fc.record({ k: value }), { maxLength: 2 })) }, { requiredKeys: [] });
    await fc.assert(fc.asyncProperty(fc.array(doc, { maxLength: 15 }), scalar, async (docs, probe) => {
      const store = await openEmbeddedStore();
      const indexed = store.collection('db', 'indexed');
      const plain = store.collection('db', 'plain');
      const withIds = docs.map((d, i) => ({ _id: i, ...d }) as Document);
      await indexed.insertMany(withIds);
      await plain.insertMany(withIds);
      await indexed.createIndex('f');
      await indexed.createIndex('g.k');
      // A sole equality (also repeated through $and, as a rule's filter repeats the query's) is answered
      // from the index without a per-document test; a conflicting repetition must still match nothing.
      const filters: Document[] = [
        { f: probe }, { 'g.k': probe }, { f: { $in: [probe, 'a'] } }, { 'g.k': { $eq: probe } },
        { $and: [{ f: probe }, { f: { $eq: probe } }] }, { $and: [{ f: probe }, { f: 'b' }] },
      ];
      for (const filter of filters) {
        assert.deepEqual(await indexed.find(filter), await plain.find(filter), JSON.stringify(filter));
      }
    }), { numRuns: 150 });
  });

  test('numeric order is the same across number, Long and Decimal128', async () => {
    const asType = (n: number, kind: number): unknown => (kind === 0 ? n : kind === 1 ? Long.fromNumber(n) : Decimal128.fromString(String(n)));
    await fc.assert(fc.asyncProperty(
      fc.array(fc.tuple(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 0, max: 2 })), { minLength: 1, maxLength: 12 }),
      fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 0, max: 2 }),
      async (values, pivot, pivotKind) => {
        const store = await openEmbeddedStore();
        const items = store.collection('db', 'items');
        await items.insertMany(values.map(([n, kind], i) => ({ _id: i, v: asType(n, kind) })));
        const below = await items.find({ v: { $lt: asType(pivot, pivotKind) } });
        assert.deepEqual(below.map((d) => d._id), values.flatMap(([n], i) => (n < pivot ? [i] : [])));
        const equal = await items.countDocuments({ v: asType(pivot, pivotKind) });
        assert.equal(equal, values.filter(([n]) => n === pivot).length);
        const sorted = (await items.find({}, { sort: { v: 1, _id: 1 } })).map((d) => d._id);
        const expected = values.map(([n], i) => ({ n, i })).sort((a, b) => a.n - b.n || a.i - b.i).map((x) => x.i);
        assert.deepEqual(sorted, expected);
      },
    ), { numRuns: 100 });
  });
});

describe('MongoDB backend without a server', () => {
  test('connecting to an address with no server rejects with a StoreError', async () => {
    await assert.rejects(
      openMongoStore({ uri: 'mongodb://127.0.0.1:1/?directConnection=true', serverSelectionTimeoutMS: 300 }),
      (e: unknown) => e instanceof StoreError && e.code !== 2,
    );
  });

  test('a malformed connection string rejects with a BadValue StoreError', async () => {
    await assert.rejects(openMongoStore({ uri: 'not-a-mongodb-uri' }), (e: unknown) => e instanceof StoreError && e.code === 2);
  });
});

describe('compiled query cache', () => {
  test('filters that print alike but differ in type do not share a compiled query', async () => {
    const { openEmbeddedStore } = await import('../../runtime/store/embedded');
    const { ObjectId } = await import('bson');
    const store = await openEmbeddedStore({});
    const items = store.collection('cache', 'items');
    const id = new ObjectId();
    const when = new Date('2024-05-01T00:00:00.000Z');
    await items.insertMany([{ ref: id, at: when, n: 1 }, { ref: id.toHexString(), at: when.toISOString(), n: 2 }]);
    for (let round = 0; round < 2; round++) {
      assert.deepEqual((await items.find({ ref: id })).map((d) => d.n), [1]);
      assert.deepEqual((await items.find({ ref: id.toHexString() })).map((d) => d.n), [2]);
      assert.deepEqual((await items.find({ at: when })).map((d) => d.n), [1]);
      assert.deepEqual((await items.find({ at: when.toISOString() })).map((d) => d.n), [2]);
      assert.deepEqual((await items.find({ ref: { $regex: /^[0-9a-f]+$/ } })).map((d) => d.n), [2]);
      assert.deepEqual((await items.find({ ref: { $regex: /^nothing$/ } })).map((d) => d.n), []);
    }
    await store.close();
  });
});
