// Every number keeps the BSON type it was written with: int32, double (4.0 included), long, decimal. Runs
// on the embedded store in memory and on disk, and on MongoDB when MONGODB_URI is set; restart through the
// journal and the snapshot are the embedded store's own.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BSON, Decimal128, Double, EJSON, Int32, Long } from 'bson';
import { EmbeddedStore, openEmbeddedStore } from '../../runtime/store/embedded';
import { openMongoStore } from '../../runtime/store/mongodb';
import { deserializeStored, hasWholeDouble } from '../../core/bsonDecode';
import type { Document, DocumentStore, StoreCollection } from '../../runtime/store/types';

/** Canonical EJSON of a value: shows each number's BSON type ({"$numberDouble": "4.0"}, {"$numberInt": "4"}). */
function canonical(value: unknown): unknown {
  return JSON.parse(EJSON.stringify(value as Document, { relaxed: false }));
}

/** The same document after a BSON round trip that keeps every wrapper: what the bytes on the wire hold. */
function wireTypes(doc: Document): unknown {
  return canonical(BSON.deserialize(BSON.serialize(doc), { promoteValues: false, promoteLongs: false }));
}

const mixed = {
  _id: 1,
  int: 4,
  wrappedInt: new Int32(7),
  wholeDouble: new Double(4),
  fraction: 4.5,
  negativeZero: -0,
  bigDouble: 5e9,
  long: Long.fromNumber(4),
  decimal: Decimal128.fromString('4.0'),
  nested: { d: new Double(-2), list: [new Double(1), 1, 1.5] },
};

const mixedCanonical = {
  _id: { $numberInt: '1' },
  int: { $numberInt: '4' },
  wrappedInt: { $numberInt: '7' },
  wholeDouble: { $numberDouble: '4.0' },
  fraction: { $numberDouble: '4.5' },
  negativeZero: { $numberDouble: '-0.0' },
  bigDouble: { $numberDouble: '5000000000.0' },
  long: { $numberLong: '4' },
  decimal: { $numberDecimal: '4.0' },
  nested: { d: { $numberDouble: '-2.0' }, list: [{ $numberDouble: '1.0' }, { $numberInt: '1' }, { $numberDouble: '1.5' }] },
};

interface Backend { store: DocumentStore; cleanup(): Promise<void> }

function typedNumbers(name: string, open: () => Promise<Backend>, skip?: string): void {
  describe(`BSON types kept as written: ${name}`, { skip }, () => {
    let backend: Backend | undefined;
    let counter = 0;
    const databases: string[] = [];
    async function fresh(): Promise<StoreCollection> {
      backend ??= await open();
      const database = `types_${process.pid}_${counter++}`;
      databases.push(database);
      return backend.store.collection(database, 'items');
    }
    after(async () => {
      if (!backend) return;
      const mongo = backend.store as { dropDatabase?: (db: string) => Promise<void> };
      if (mongo.dropDatabase) for (const database of databases) await mongo.dropDatabase(database);
      await backend.cleanup();
    });

    test('insert then find returns every number with its type', async () => {
      const items = await fresh();
      await items.insertOne(mixed);
      const found = (await items.findOne({ _id: 1 }))!;
      assert.deepEqual(canonical(found), mixedCanonical);
      assert.deepEqual(wireTypes(found), mixedCanonical);
      assert.ok(found.wholeDouble instanceof Double);
      assert.equal(typeof found.int, 'number');
      assert.equal(typeof found.wrappedInt, 'number', 'an Int32 is stored as the JS number BSON writes as int32');
      assert.deepEqual(canonical(await items.find({})), [mixedCanonical]);
    });

    test('4, Double(4), Long(4) and Decimal128(4) are equal in queries, as in MongoDB', async () => {
      const items = await fresh();
      await items.insertMany([
        { _id: 'int', v: 4 }, { _id: 'double', v: new Double(4) }, { _id: 'long', v: Long.fromNumber(4) },
        { _id: 'decimal', v: Decimal128.fromString('4') }, { _id: 'other', v: 5 },
      ]);
      const ids = async (filter: Document) => (await items.find(filter)).map((d) => d._id).sort();
      const equalToFour = ['decimal', 'double', 'int', 'long'];
      assert.deepEqual(await ids({ v: 4 }), equalToFour);
      assert.deepEqual(await ids({ v: new Double(4) }), equalToFour);
      assert.deepEqual(await ids({ v: Long.fromNumber(4) }), equalToFour);
      assert.deepEqual(await ids({ v: { $in: [new Double(4)] } }), equalToFour);
      assert.deepEqual(await ids({ v: { $gt: new Double(4) } }), ['other']);
      await items.createIndex('v');
      assert.deepEqual(await ids({ v: new Double(4) }), equalToFour, 'through an index as well');
      assert.equal(await items.countDocuments({ v: 4 }), 4);
    });

    test('sorting orders numbers by value across types and returns each with its type', async () => {
      const items = await fresh();
      await items.insertMany([
        { _id: 1, v: Long.fromNumber(5) }, { _id: 2, v: new Double(3) }, { _id: 3, v: 4.5 }, { _id: 4, v: 2 }, { _id: 5, v: new Double(-1) },
      ]);
      const sorted = await items.find({}, { sort: { v: 1 } });
      assert.deepEqual(canonical(sorted.map((d) => d.v)), [
        { $numberDouble: '-1.0' }, { $numberInt: '2' }, { $numberDouble: '3.0' }, { $numberDouble: '4.5' }, { $numberLong: '5' },
      ]);
    });

    test('$set, $inc, $mul, $min, $max follow MongoDB numeric typing', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 1, d: new Double(4), i: 2, l: Long.fromNumber(3), top: 2147483647, m: 3, n: 10 });
      const v = async () => canonical(await items.findOne({ _id: 1 }));
      await items.updateOne({ _id: 1 }, { $inc: { d: 1, i: 1, l: 1 } });
      assert.deepEqual(await v(), {
        _id: { $numberInt: '1' }, d: { $numberDouble: '5.0' }, i: { $numberInt: '3' }, l: { $numberLong: '4' },
        top: { $numberInt: '2147483647' }, m: { $numberInt: '3' }, n: { $numberInt: '10' },
      });
      await items.updateOne({ _id: 1 }, { $inc: { i: new Double(1), top: 1 }, $mul: { d: 2, m: new Double(2) } });
      const after = (await v()) as Record<string, unknown>;
      assert.deepEqual(after.i, { $numberDouble: '4.0' }, 'int32 + double is a double');
      assert.deepEqual(after.top, { $numberLong: '2147483648' }, 'int32 overflow becomes a long');
      assert.deepEqual(after.d, { $numberDouble: '10.0' });
      assert.deepEqual(after.m, { $numberDouble: '6.0' });
      await items.updateOne({ _id: 1 }, { $inc: { fresh: new Double(2) }, $mul: { zero: new Double(3) }, $max: { n: new Double(11) }, $min: { l: new Double(0) } });
      const more = (await v()) as Record<string, unknown>;
      assert.deepEqual(more.fresh, { $numberDouble: '2.0' });
      assert.deepEqual(more.zero, { $numberDouble: '0.0' });
      assert.deepEqual(more.n, { $numberDouble: '11.0' });
      assert.deepEqual(more.l, { $numberDouble: '0.0' });
      await items.updateOne({ _id: 1 }, { $inc: { d: 0.5 } });
      assert.deepEqual(((await v()) as Record<string, unknown>).d, { $numberDouble: '10.5' });
    });

    test('a write that changes only the type of a number modifies the document', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 1, x: 4, y: 1 });
      const set = await items.updateOne({ _id: 1 }, { $set: { x: new Double(4) } });
      assert.equal(set.modifiedCount, 1);
      assert.deepEqual(canonical((await items.findOne({ _id: 1 }))!.x), { $numberDouble: '4.0' });
      const same = await items.updateOne({ _id: 1 }, { $set: { x: new Double(4) } });
      assert.equal(same.modifiedCount, 0);
      const replaced = await items.replaceOne({ _id: 1 }, { x: new Double(4), y: new Double(1) });
      assert.equal(replaced.modifiedCount, 1);
      assert.deepEqual(canonical(await items.findOne({ _id: 1 })), { _id: { $numberInt: '1' }, x: { $numberDouble: '4.0' }, y: { $numberDouble: '1.0' } });
      const back = await items.findOneAndUpdate({ _id: 1 }, { $set: { y: 1 } }, { returnNewDocument: true });
      assert.deepEqual(canonical(back), { _id: { $numberInt: '1' }, x: { $numberDouble: '4.0' }, y: { $numberInt: '1' } });
      const upserted = await items.findOneAndUpdate({ _id: 2, z: new Double(7) }, { $set: { w: new Double(8) } }, { upsert: true, returnNewDocument: true });
      assert.deepEqual(canonical(upserted), { _id: { $numberInt: '2' }, z: { $numberDouble: '7.0' }, w: { $numberDouble: '8.0' } });
    });

    test('a pipeline that selects and orders documents returns them with their types', async () => {
      const items = await fresh();
      await items.insertMany([{ _id: 1, d: new Double(4), l: Long.fromNumber(1) }, { _id: 2, d: 2.5 }, { _id: 3, d: new Double(1) }]);
      const out = await items.aggregate([{ $match: { d: { $gte: 1 } } }, { $sort: { d: -1 } }, { $skip: 0 }, { $limit: 2 }]);
      assert.deepEqual(canonical(out), [
        { _id: { $numberInt: '1' }, d: { $numberDouble: '4.0' }, l: { $numberLong: '1' } },
        { _id: { $numberInt: '2' }, d: { $numberDouble: '2.5' } },
      ]);
      out[0]!.d = 'changed by the caller';
      assert.deepEqual(canonical((await items.findOne({ _id: 1 }))!.d), { $numberDouble: '4.0' }, 'results are copies');
      const counted = await items.aggregate([{ $match: { d: 4 } }, { $count: 'n' }]);
      assert.deepEqual(counted, [{ n: 1 }]);
    });

    test('projections keep the types of the fields they return', async () => {
      const items = await fresh();
      await items.insertOne({ _id: 1, d: new Double(4), sub: { e: new Double(2), f: 3 } });
      assert.deepEqual(canonical(await items.findOne({ _id: 1 }, { projection: { d: 1, 'sub.e': 1 } })), {
        _id: { $numberInt: '1' }, d: { $numberDouble: '4.0' }, sub: { e: { $numberDouble: '2.0' } },
      });
    });
  });
}

typedNumbers('embedded, in memory', async () => {
  const store = await openEmbeddedStore();
  return { store, cleanup: () => store.close() };
});

typedNumbers('embedded, on disk', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'store-types-'));
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
typedNumbers('MongoDB', async () => {
  const store = await openMongoStore({ uri: mongodbUri! });
  return { store, cleanup: () => store.close() };
}, mongodbUri ? undefined : 'MONGODB_URI not set');

describe('BSON types kept across a restart of the embedded store', () => {
  async function withDir(run: (dir: string) => Promise<void>): Promise<void> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'store-types-restart-'));
    try {
      await run(dir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  test('replaying the journal gives back doubles, int32 and longs as written', () => withDir(async (dir) => {
    const store = await openEmbeddedStore({ dir });
    const items = store.collection('db', 'items');
    await items.insertOne(mixed);
    await items.insertOne({ _id: 2, plain: 1, text: 'no whole double here' });
    await items.updateOne({ _id: 1 }, { $inc: { wholeDouble: 1 } });
    await items.createIndex('wholeDouble');
    await store.close();

    const reopened = (await openEmbeddedStore({ dir })) as EmbeddedStore;
    assert.ok(reopened.recovery.replayedRecords >= 4);
    const again = reopened.collection('db', 'items');
    assert.deepEqual(canonical(await again.findOne({ _id: 1 })), { ...mixedCanonical, wholeDouble: { $numberDouble: '5.0' } });
    assert.deepEqual(canonical(await again.findOne({ _id: 2 })), { _id: { $numberInt: '2' }, plain: { $numberInt: '1' }, text: 'no whole double here' });
    assert.deepEqual((await again.find({ wholeDouble: 5 })).map((d) => d._id), [1], 'the index rebuilt from the journal finds it');
    await reopened.close();
  }));

  test('a compacted snapshot gives them back too', () => withDir(async (dir) => {
    const store = (await openEmbeddedStore({ dir })) as EmbeddedStore;
    const items = store.collection('db', 'items');
    await items.insertOne(mixed);
    await store.compact();
    await store.close();
    const reopened = (await openEmbeddedStore({ dir })) as EmbeddedStore;
    assert.equal(reopened.recovery.replayedRecords, 0, 'read from the snapshot, not a journal');
    assert.deepEqual(canonical(await reopened.collection('db', 'items').findOne({ _id: 1 })), mixedCanonical);
    await reopened.close();
  }));
});

describe('reading BSON into the stored form', () => {
  test('decoding keeps 4.0 a Double and gives the same as the promoting decode otherwise', () => {
    const plain = { a: 1, b: 'x', c: 2.5, d: [1, { e: 0.25, f: Infinity, nan: NaN }], g: Long.fromNumber(9), h: new Date(0), i: null, j: true };
    const bytes = BSON.serialize(plain);
    assert.equal(hasWholeDouble(bytes), false);
    assert.deepEqual(deserializeStored(bytes), BSON.deserialize(bytes, { promoteLongs: false }));
    const withDouble = BSON.serialize({ ...plain, k: { deep: [new Double(8)] } });
    assert.equal(hasWholeDouble(withDouble), true);
    const decoded = deserializeStored(withDouble);
    assert.ok(((decoded.k as Document).deep as unknown[])[0] instanceof Double);
    assert.deepEqual(canonical(decoded), canonical({ ...plain, k: { deep: [new Double(8)] } }));
  });

  test('bytes the walk cannot follow send the decode down the full path instead of looping or throwing', () => {
    const text = Buffer.from(BSON.serialize({ s: 'abc' }));
    const negative = Buffer.from(text);
    negative.writeInt32LE(-20, 7);
    assert.equal(hasWholeDouble(negative), true);
    assert.throws(() => deserializeStored(negative));
    const codeWithScope = Buffer.from([13, 0, 0, 0, 0x0f, 0x63, 0, 0, 0, 0, 0, 0, 0]);
    assert.equal(hasWholeDouble(codeWithScope), true);
    assert.equal(hasWholeDouble(text.subarray(0, 9)), true, 'a string running past the end');
    assert.equal(hasWholeDouble(Buffer.from([8, 0, 0, 0, 0x42, 0x61, 0, 0])), true, 'an unknown element type');
  });

  test('a "__proto__" field stays an own field when numbers are unwrapped', () => {
    const bytes = BSON.serialize(JSON.parse('{"__proto__": {"n": 1}, "d": {"$numberDouble": "2.0"}}', (k, v) => (k === 'd' ? new Double(2) : v)));
    const decoded = deserializeStored(bytes);
    assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
    assert.deepEqual(Object.keys(decoded), ['__proto__', 'd']);
    assert.deepEqual(canonical(decoded.d), { $numberDouble: '2.0' });
  });
});
