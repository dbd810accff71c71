// The same cases run against every DocumentStore backend: the embedded store in memory, the embedded
// store on disk, and a MongoDB deployment when MONGODB_URI is set.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Binary, Decimal128, Int32, Long, ObjectId, UUID } from 'bson';
import { openEmbeddedStore } from '../../runtime/store/embedded';
import { openMongoStore } from '../../runtime/store/mongodb';
import { StoreError, type DocumentStore, type StoreCollection } from '../../runtime/store/types';

interface Backend {
  store: DocumentStore;
  /** Removes whatever the run created. */
  cleanup(databases: string[]): Promise<void>;
}

function storeContract(name: string, open: () => Promise<Backend>, skip?: string): void {
  describe(`DocumentStore contract: ${name}`, { skip }, () => {
    let backend: Backend | undefined;
    const databases: string[] = [];
    let counter = 0;

    async function fresh(): Promise<StoreCollection> {
      backend ??= await open();
      const database = `contract_${process.pid}_${Date.now().toString(36)}_${counter++}`;
      databases.push(database);
      return backend.store.collection(database, 'items');
    }

    after(async () => {
      if (backend) await backend.cleanup(databases);
    });

    test('insertOne assigns an ObjectId _id and findOne returns the document', async () => {
      const items = await fresh();
      const { insertedId } = await items.insertOne({ name: 'a', n: 1 });
      assert.ok(insertedId instanceof ObjectId);
      const found = await items.findOne({ _id: insertedId });
      assert.deepEqual(found, { _id: insertedId, name: 'a', n: 1 });
    });

    test('_id is stored first, and a null _id gets an ObjectId as the driver does', async () => {
      const items = await fresh();
      await items.insertOne({ a: 1, _id: 5 });
      assert.deepEqual(Object.keys((await items.findOne({ _id: 5 }))!), ['_id', 'a']);
      const { insertedId } = await items.insertOne({ _id: null, b: 1 });
      assert.ok(insertedId instanceof ObjectId);
      assert.deepEqual(await items.findOne({ b: 1 }), { _id: insertedId, b: 1 });
    });

    test('insert does not modify the caller\'s document', async () => {
      const items = await fresh();
      const doc = { name: 'x' };
      await items.insertOne(doc);
      assert.deepEqual(doc, { name: 'x' });
    });

    test('duplicate _id fails with code 11000 and leaves the first document', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 'k', v: 1 });
      await assert.rejects(items.insertOne({ _id: 'k', v: 2 }), (e: unknown) => e instanceof StoreError && e.code === 11000);
      assert.deepEqual(await items.find({}), [{ _id: 'k', v: 1 }]);
    });

    test('insertMany is ordered: documents before a duplicate stay inserted', async () => {
      const items = await fresh();
      const { insertedIds } = await items.insertMany([{ _id: 1 }, { _id: 2 }]);
      assert.deepEqual(insertedIds, [1, 2]);
      await assert.rejects(items.insertMany([{ _id: 3 }, { _id: 1 }, { _id: 4 }]), (e: unknown) => (e as StoreError).code === 11000);
      assert.deepEqual((await items.find({}, { sort: { _id: 1 } })).map((d) => d._id), [1, 2, 3]);
    });

    test('numeric types compare by value: number, Int32, Long and Decimal128', async () => {
      const items = await fresh();
      await items.insertMany([
        { _id: 'long', v: Long.fromNumber(5) },
        { _id: 'int', v: new Int32(7) },
        { _id: 'dec', v: Decimal128.fromString('6.5') },
        { _id: 'num', v: 10 },
        { _id: 'big', v: Long.fromString('100') },
      ]);
      assert.deepEqual((await items.find({ v: 5 })).map((d) => d._id), ['long']);
      assert.deepEqual((await items.find({ v: Long.fromNumber(7) })).map((d) => d._id), ['int']);
      assert.deepEqual((await items.find({ v: { $gt: 6, $lt: 50 } }, { sort: { v: 1 } })).map((d) => d._id), ['dec', 'int', 'num']);
      assert.deepEqual((await items.find({}, { sort: { v: -1 } })).map((d) => d._id), ['big', 'num', 'int', 'dec', 'long']);
      assert.deepEqual((await items.find({ v: { $in: [Decimal128.fromString('6.5'), 100] } }, { sort: { _id: 1 } })).map((d) => d._id), ['big', 'dec']);
    });

    test('Long and Decimal128 keep their types through a round trip', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 1, l: Long.fromString('9007199254740993'), d: Decimal128.fromString('12.30') });
      const doc = await items.findOne({ _id: 1 });
      assert.ok(doc?.l instanceof Long);
      assert.equal((doc.l as Long).toString(), '9007199254740993');
      assert.ok(doc.d instanceof Decimal128);
      assert.equal((doc.d as Decimal128).toString(), '12.30');
    });

    test('ObjectId equality, $in and ordering follow the ObjectId bytes', async () => {
      const items = await fresh();
      const ids = ['000000000000000000000002', '000000000000000000000010', '00000000000000000000000a'].map((h) => new ObjectId(h));
      await items.insertMany(ids.map((_id, i) => ({ _id, i })));
      assert.deepEqual((await items.find({ _id: new ObjectId('00000000000000000000000a') })).map((d) => d.i), [2]);
      assert.deepEqual((await items.find({}, { sort: { _id: 1 } })).map((d) => d.i), [0, 2, 1]);
      assert.deepEqual((await items.find({ _id: { $gt: ids[0] } }, { sort: { _id: -1 } })).map((d) => d.i), [1, 2]);
      assert.equal(await items.countDocuments({ _id: { $in: [ids[1], new ObjectId()] } }), 1);
    });

    test('UUID values match by bytes and Dates by instant', async () => {
      const items = await fresh();
      const uuid = new UUID('3a1d2b4c-0000-4000-8000-000000000001');
      await items.insertMany([
        { _id: 1, u: uuid, at: new Date('2024-01-01T00:00:00Z') },
        { _id: 2, u: new UUID('3a1d2b4c-0000-4000-8000-000000000002'), at: new Date('2024-06-01T00:00:00Z') },
      ]);
      assert.deepEqual((await items.find({ u: new UUID(uuid.toHexString()) })).map((d) => d._id), [1]);
      assert.deepEqual((await items.find({ at: { $gte: new Date('2024-03-01T00:00:00Z') } })).map((d) => d._id), [2]);
      const doc = await items.findOne({ _id: 1 });
      assert.ok(doc?.u instanceof Binary);
      assert.equal((doc.u as Binary).sub_type, 4);
    });

    test('find applies projection, sort, skip and limit', async () => {
      const items = await fresh();
      await items.insertMany([5, 3, 9, 1, 7].map((n) => ({ _id: n, n, tag: n % 2 ? 'odd' : 'even', extra: 'x' })));
      const page = await items.find({ tag: 'odd' }, { sort: { n: -1 }, skip: 1, limit: 2, projection: { n: 1 } });
      assert.deepEqual(page, [{ _id: 7, n: 7 }, { _id: 5, n: 5 }]);
      const excluded = await items.findOne({ _id: 3 }, { projection: { extra: 0, tag: 0 } });
      assert.deepEqual(excluded, { _id: 3, n: 3 });
    });

    test('updateOne applies operators to the first match and reports counts', async () => {
      const items = await fresh();
      await items.insertMany([{ _id: 1, n: 1, tags: ['a'] }, { _id: 2, n: 1, tags: [] }]);
      const result = await items.updateOne({ n: 1 }, { $inc: { n: 2 }, $push: { tags: 'b' }, $set: { 'sub.x': true } });
      assert.deepEqual(result, { matchedCount: 1, modifiedCount: 1 });
      assert.deepEqual(await items.findOne({ _id: 1 }), { _id: 1, n: 3, tags: ['a', 'b'], sub: { x: true } });
      const noChange = await items.updateOne({ _id: 2 }, { $set: { n: 1 } });
      assert.deepEqual(noChange, { matchedCount: 1, modifiedCount: 0 });
    });

    test('updateMany, $unset, $addToSet and $pull', async () => {
      const items = await fresh();
      await items.insertMany([{ _id: 1, g: 'x', t: ['a', 'b'], old: 1 }, { _id: 2, g: 'x', t: ['b'], old: 1 }, { _id: 3, g: 'y', t: [] }]);
      const result = await items.updateMany({ g: 'x' }, { $unset: { old: '' }, $addToSet: { t: 'a' } });
      assert.deepEqual(result, { matchedCount: 2, modifiedCount: 2 });
      assert.deepEqual(await items.find({ g: 'x' }, { sort: { _id: 1 } }), [{ _id: 1, g: 'x', t: ['a', 'b'] }, { _id: 2, g: 'x', t: ['b', 'a'] }]);
      await items.updateMany({}, { $pull: { t: 'b' } });
      assert.deepEqual((await items.find({}, { sort: { _id: 1 } })).map((d) => d.t), [['a'], ['a'], []]);
    });

    test('$inc keeps Long and Decimal128 types', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 1, l: Long.fromNumber(40), d: Decimal128.fromString('0.10') });
      await items.updateOne({ _id: 1 }, { $inc: { l: 2, d: Decimal128.fromString('0.20') } });
      const doc = await items.findOne({ _id: 1 });
      assert.ok(doc?.l instanceof Long);
      assert.equal((doc.l as Long).toNumber(), 42);
      assert.ok(doc.d instanceof Decimal128);
      assert.equal(Number((doc.d as Decimal128).toString()), 0.3);
    });

    test('an upserting findOneAndUpdate/findOneAndReplace returns the new document with its _id', async () => {
      const items = await fresh();
      const updated = await items.findOneAndUpdate({ name: 'a' }, { $set: { n: 1 } }, { upsert: true, returnNewDocument: true });
      assert.ok(updated && updated._id instanceof ObjectId, JSON.stringify(updated));
      assert.deepEqual(await items.findOne({ _id: updated._id }), updated);
      const replaced = await items.findOneAndReplace({ name: 'b' }, { name: 'b', n: 2 }, { upsert: true, returnNewDocument: true });
      assert.ok(replaced && replaced._id instanceof ObjectId, JSON.stringify(replaced));
      assert.deepEqual(await items.findOne({ _id: replaced._id }), replaced);
    });

    test('upsert inserts from the filter equalities and the update', async () => {
      const items = await fresh();
      const result = await items.updateOne({ owner: 'u1', kind: { $eq: 'k' } }, { $set: { n: 1 }, $setOnInsert: { created: true } }, { upsert: true });
      assert.equal(result.matchedCount, 0);
      assert.ok(result.upsertedId instanceof ObjectId);
      assert.deepEqual(await items.findOne({ _id: result.upsertedId }, { projection: { _id: 0 } }), { owner: 'u1', kind: 'k', n: 1, created: true });
      const again = await items.updateOne({ owner: 'u1' }, { $set: { n: 2 }, $setOnInsert: { created: false } }, { upsert: true });
      assert.deepEqual(again, { matchedCount: 1, modifiedCount: 1 });
      assert.deepEqual(await items.findOne({ owner: 'u1' }, { projection: { _id: 0 } }), { owner: 'u1', kind: 'k', n: 2, created: true });
    });

    test('replaceOne keeps _id; upsert takes _id from the filter', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 1, a: 1, b: 2 });
      assert.deepEqual(await items.replaceOne({ a: 1 }, { c: 3 }), { matchedCount: 1, modifiedCount: 1 });
      assert.deepEqual(await items.findOne({ _id: 1 }), { _id: 1, c: 3 });
      const upserted = await items.replaceOne({ _id: 9 }, { c: 9 }, { upsert: true });
      assert.equal(upserted.upsertedId, 9);
      assert.deepEqual(await items.findOne({ _id: 9 }), { _id: 9, c: 9 });
    });

    test('updates may not change _id', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 1, a: 1 });
      await assert.rejects(items.updateOne({ _id: 1 }, { $set: { _id: 2 } }), StoreError);
      assert.deepEqual(await items.findOne({ _id: 1 }), { _id: 1, a: 1 });
    });

    test('deleteOne and deleteMany report counts', async () => {
      const items = await fresh();
      await items.insertMany([{ g: 1 }, { g: 1 }, { g: 2 }]);
      assert.deepEqual(await items.deleteOne({ g: 1 }), { deletedCount: 1 });
      assert.deepEqual(await items.deleteMany({ g: { $gte: 1 } }), { deletedCount: 2 });
      assert.equal(await items.countDocuments(), 0);
    });

    test('findOneAndUpdate returns the document before or after, honouring sort and projection', async () => {
      const items = await fresh();
      await items.insertMany([{ _id: 1, q: 'a', n: 1 }, { _id: 2, q: 'a', n: 5 }]);
      const before = await items.findOneAndUpdate({ q: 'a' }, { $inc: { n: 1 } }, { sort: { n: -1 } });
      assert.deepEqual(before, { _id: 2, q: 'a', n: 5 });
      const after = await items.findOneAndUpdate({ q: 'a' }, { $inc: { n: 1 } }, { sort: { n: -1 }, returnNewDocument: true, projection: { n: 1, _id: 0 } });
      assert.deepEqual(after, { n: 7 });
      assert.equal(await items.findOneAndUpdate({ q: 'none' }, { $set: { n: 0 } }), null);
      const upserted = await items.findOneAndUpdate({ q: 'new' }, { $set: { n: 0 } }, { upsert: true, returnNewDocument: true });
      assert.equal(upserted?.q, 'new');
    });

    test('concurrent findOneAndUpdate $inc calls each return their own new value (a counter hands out distinct numbers)', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 'counter', next: 0 });
      const taken = await Promise.all(Array.from({ length: 8 }, () => items.findOneAndUpdate({ _id: 'counter' }, { $inc: { next: 1 } }, { returnNewDocument: true })));
      assert.deepEqual(taken.map((d) => d!.next).sort(), [1, 2, 3, 4, 5, 6, 7, 8]);
    });

    test('findOneAndReplace and findOneAndDelete', async () => {
      const items = await fresh();
      await items.insertMany([{ _id: 1, v: 'a' }, { _id: 2, v: 'b' }]);
      assert.deepEqual(await items.findOneAndReplace({ _id: 1 }, { v: 'z' }, { returnNewDocument: true }), { _id: 1, v: 'z' });
      assert.deepEqual(await items.findOneAndDelete({}, { sort: { _id: -1 } }), { _id: 2, v: 'b' });
      assert.deepEqual(await items.find({}), [{ _id: 1, v: 'z' }]);
    });

    test('aggregate runs $match, $group, $sort and $lookup', async () => {
      const items = await fresh();
      await items.insertMany([{ _id: 1, g: 'a', n: 1 }, { _id: 2, g: 'b', n: 2 }, { _id: 3, g: 'a', n: 3 }]);
      await backend!.store.collection(items.database, 'labels').insertMany([{ _id: 'a', label: 'Alpha' }, { _id: 'b', label: 'Beta' }]);
      const groups = await items.aggregate([
        { $match: { n: { $gte: 1 } } },
        { $group: { _id: '$g', total: { $sum: '$n' }, count: { $sum: 1 } } },
        { $sort: { _id: 1 } },
        { $lookup: { from: 'labels', localField: '_id', foreignField: '_id', as: 'labels' } },
        { $project: { total: 1, count: 1, label: { $first: '$labels.label' } } },
      ]);
      assert.deepEqual(groups, [{ _id: 'a', total: 4, count: 2, label: 'Alpha' }, { _id: 'b', total: 2, count: 1, label: 'Beta' }]);
    });

    test('countDocuments honours limit', async () => {
      const items = await fresh();
      await items.insertMany([{ a: 1 }, { a: 1 }, { a: 1 }, { a: 2 }]);
      assert.equal(await items.countDocuments({ a: 1 }), 3);
      assert.equal(await items.countDocuments({ a: 1 }, { limit: 2 }), 2);
    });

    test('createIndex does not change results', async () => {
      const items = await fresh();
      await items.insertMany([{ p: 'x', tags: ['a', 'b'] }, { p: 'y', tags: ['b'] }, { p: 'x' }, { p: null }]);
      const before = await Promise.all([items.find({ p: 'x' }), items.find({ tags: 'a' }), items.find({ p: null })]);
      assert.equal(await items.createIndex('p'), 'p_1');
      await items.createIndex('tags');
      const afterIndex = await Promise.all([items.find({ p: 'x' }), items.find({ tags: 'a' }), items.find({ p: null })]);
      assert.deepEqual(afterIndex, before);
      assert.equal(afterIndex[0].length, 2);
      assert.equal(afterIndex[2].length, 1);
    });

    test('listCollections includes collections that have documents', async () => {
      const items = await fresh();
      await items.insertOne({ a: 1 });
      const listed = await backend!.store.listCollections();
      assert.ok(listed.some((c) => c.database === items.database && c.name === 'items'));
    });

    test('malformed input rejects with a StoreError instead of crashing', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 1, a: 1 });
      const bad: [string, () => Promise<unknown>][] = [
        ['unknown query operator', () => items.find({ a: { $nope: 1 } })],
        ['$in without an array', () => items.find({ a: { $in: 5 } })],
        ['unknown update operator', () => items.updateOne({ _id: 1 }, { $frobnicate: { a: 1 } })],
        ['update without operators', () => items.updateOne({ _id: 1 }, { a: 2 })],
        ['$inc with a string', () => items.updateOne({ _id: 1 }, { $inc: { a: 'x' } })],
        ['replacement with operators', () => items.replaceOne({ _id: 1 }, { $set: { a: 1 } })],
        ['unknown pipeline stage', () => items.aggregate([{ $nope: {} }])],
        ['non-document filter', () => items.find('a' as never)],
      ];
      for (const [label, run] of bad) {
        await assert.rejects(run(), (e: unknown) => {
          assert.ok(e instanceof StoreError, `${label}: ${String(e)}`);
          assert.ok(e.message.length > 0);
          return true;
        }, label);
      }
      assert.deepEqual(await items.findOne({ _id: 1 }), { _id: 1, a: 1 });
    });
  });
}

storeContract('embedded, in memory', async () => {
  const store = await openEmbeddedStore();
  return { store, cleanup: () => store.close() };
});

storeContract('embedded, on disk', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'store-contract-'));
  const store = await openEmbeddedStore({ dir });
  return {
    store,
    async cleanup() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

const mongodbUri = process.env.MONGODB_URI;
storeContract('MongoDB', async () => {
  const store = await openMongoStore({ uri: mongodbUri! });
  return {
    store,
    async cleanup(databases) {
      for (const database of databases) await store.dropDatabase(database);
      await store.close();
    },
  };
}, mongodbUri ? undefined : 'MONGODB_URI not set');
