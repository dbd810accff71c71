// The change-event decorator on its own: which events each write reports, that callers get exactly what
// the undecorated store would answer, and that concurrent writes report consistent before/after pairs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ObjectId, Timestamp } from 'bson';
import { describeUpdate, updateBetween, withChangeEvents, type ChangeEvent, type ChangeEventOptions } from '../../runtime/store/changes';
import { openEmbeddedStore } from '../../runtime/store/embedded';
import type { Document, DocumentStore, StoreCollection } from '../../runtime/store/types';

async function observed(options: ChangeEventOptions = {}) {
  const raw = await openEmbeddedStore({});
  const events: ChangeEvent[] = [];
  const store = withChangeEvents(raw, (change) => events.push(change), options);
  return { raw, store, events, items: store.collection('shop', 'items') };
}

/** A store that counts the reads made through it, to see what the decorator costs. */
function countingReads(inner: DocumentStore): { store: DocumentStore; reads: () => number } {
  let reads = 0;
  return {
    reads: () => reads,
    store: {
      collection(database, name) {
        const c = inner.collection(database, name);
        return new Proxy(c, {
          get(target, key) {
            const value = Reflect.get(target, key) as unknown;
            if (typeof value !== 'function') return value;
            return (...args: unknown[]) => {
              if (key === 'find' || key === 'findOne') reads++;
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        }) as StoreCollection;
      },
      listCollections: () => inner.listCollections(),
      close: () => inner.close(),
    },
  };
}

const summary = (e: ChangeEvent) => ({ op: e.operationType, id: e.documentKey._id, after: e.fullDocument, before: e.fullDocumentBeforeChange });

describe('withChangeEvents', () => {
  test('insertOne and insertMany report insert events with the stored documents', async () => {
    const { items, events } = await observed();
    const { insertedId } = await items.insertOne({ name: 'pen', price: 2 });
    const { insertedIds } = await items.insertMany([{ _id: 7, name: 'ink' }, { name: 'pad' }]);
    assert.deepEqual(events.map(summary), [
      { op: 'insert', id: insertedId, after: { _id: insertedId, name: 'pen', price: 2 }, before: undefined },
      { op: 'insert', id: 7, after: { _id: 7, name: 'ink' }, before: undefined },
      { op: 'insert', id: insertedIds[1], after: { _id: insertedIds[1], name: 'pad' }, before: undefined },
    ]);
    const first = events[0];
    assert.deepEqual(first.ns, { db: 'shop', coll: 'items' });
    assert.ok(first.clusterTime instanceof Timestamp);
    assert.ok(first.wallTime instanceof Date);
    assert.equal(typeof first._id._data, 'string');
    assert.equal(new Set(events.map((e) => e._id._data)).size, 3, 'every event has its own resume token');
    assert.ok(events.every((e, i) => i === 0 || e.clusterTime.greaterThan(events[i - 1].clusterTime)), 'cluster times increase');
  });

  test('updates report the documents before and after and what changed', async () => {
    const { items, events } = await observed();
    await items.insertMany([
      { _id: 1, status: 'open', meta: { n: 1, tag: 'x' }, tmp: true },
      { _id: 2, status: 'open', meta: { n: 5, tag: 'y' } },
      { _id: 3, status: 'done', meta: { n: 9, tag: 'z' } },
    ]);
    events.length = 0;
    await items.updateOne({ _id: 1 }, { $set: { status: 'done', 'meta.n': 2 }, $unset: { tmp: '' } });
    assert.equal(events.length, 1);
    assert.equal(events[0].operationType, 'update');
    assert.deepEqual(events[0].fullDocumentBeforeChange, { _id: 1, status: 'open', meta: { n: 1, tag: 'x' }, tmp: true });
    assert.deepEqual(events[0].fullDocument, { _id: 1, status: 'done', meta: { n: 2, tag: 'x' } });
    assert.deepEqual(events[0].updateDescription, { updatedFields: { status: 'done', 'meta.n': 2 }, removedFields: ['tmp'], truncatedArrays: [] });

    events.length = 0;
    const result = await items.updateMany({ status: 'done' }, { $inc: { 'meta.n': 10 } });
    assert.deepEqual(result, { matchedCount: 2, modifiedCount: 2 });
    assert.deepEqual(events.map((e) => [e.documentKey._id, e.updateDescription?.updatedFields]), [[1, { 'meta.n': 12 }], [3, { 'meta.n': 19 }]]);

    events.length = 0;
    await items.updateOne({ _id: 2 }, { $set: { status: 'open' } });
    assert.deepEqual(events, [], 'an update that changes nothing reports nothing');
  });

  test('an upsert reports an insert; replace and delete report the old document', async () => {
    const { items, events } = await observed();
    const upserted = await items.updateOne({ sku: 'A1' }, { $set: { qty: 3 } }, { upsert: true });
    assert.deepEqual(events.map(summary), [{ op: 'insert', id: upserted.upsertedId, after: { _id: upserted.upsertedId, sku: 'A1', qty: 3 }, before: undefined }]);
    events.length = 0;
    await items.replaceOne({ sku: 'A1' }, { sku: 'A1', qty: 4, note: 'recount' });
    await items.deleteOne({ sku: 'A1' });
    assert.deepEqual(events.map(summary), [
      { op: 'replace', id: upserted.upsertedId, after: { _id: upserted.upsertedId, sku: 'A1', qty: 4, note: 'recount' }, before: { _id: upserted.upsertedId, sku: 'A1', qty: 3 } },
      { op: 'delete', id: upserted.upsertedId, after: undefined, before: { _id: upserted.upsertedId, sku: 'A1', qty: 4, note: 'recount' } },
    ]);
    assert.equal(events[0].updateDescription, undefined);
  });

  test('deleteMany reports one delete per removed document', async () => {
    const { items, events } = await observed();
    await items.insertMany([{ _id: 1, k: 'a' }, { _id: 2, k: 'b' }, { _id: 3, k: 'a' }]);
    events.length = 0;
    assert.deepEqual(await items.deleteMany({ k: 'a' }), { deletedCount: 2 });
    assert.deepEqual(events.map((e) => [e.operationType, e.documentKey._id]), [['delete', 1], ['delete', 3]]);
  });

  test('findOneAnd* answer as the store does and report their change', async () => {
    const { items, events } = await observed();
    await items.insertMany([{ _id: 1, rank: 2, name: 'b' }, { _id: 2, rank: 1, name: 'a' }]);
    events.length = 0;
    assert.deepEqual(await items.findOneAndUpdate({}, { $set: { name: 'A' } }, { sort: { rank: 1 }, projection: { name: 1, _id: 0 } }), { name: 'a' });
    assert.deepEqual(await items.findOneAndReplace({ _id: 1 }, { rank: 3 }, { returnNewDocument: true }), { _id: 1, rank: 3 });
    assert.equal(await items.findOneAndUpdate({ _id: 9 }, { $set: { rank: 9 } }, { upsert: true }), null);
    assert.deepEqual(await items.findOneAndUpdate({ _id: 10 }, { $set: { rank: 10, name: 'j' } }, { upsert: true, returnNewDocument: true, projection: { name: 1 } }), { _id: 10, name: 'j' });
    assert.deepEqual(await items.findOneAndDelete({ rank: { $gte: 3 } }, { sort: { rank: 1 }, projection: { rank: 1 } }), { _id: 1, rank: 3 });
    assert.equal(await items.findOneAndDelete({ _id: 'missing' }), null);
    assert.deepEqual(events.map((e) => [e.operationType, e.documentKey._id]), [['update', 2], ['replace', 1], ['insert', 9], ['insert', 10], ['delete', 1]]);
    assert.deepEqual(events[0].updateDescription?.updatedFields, { name: 'A' });
    assert.deepEqual(events[2].fullDocument, { _id: 9, rank: 9 });
    assert.deepEqual(await items.find({}, { sort: { _id: 1 } }), [{ _id: 2, rank: 1, name: 'A' }, { _id: 9, rank: 9 }, { _id: 10, rank: 10, name: 'j' }]);
  });

  test('a partly failed insertMany reports the documents it did insert', async () => {
    const { items, events } = await observed();
    await items.insertOne({ _id: 'taken' });
    events.length = 0;
    await assert.rejects(items.insertMany([{ _id: 'a' }, { v: 1 }, { _id: 'taken', v: 2 }, { _id: 'c' }]), { code: 11000 });
    assert.deepEqual(events.map((e) => e.documentKey._id).slice(0, 1), ['a']);
    assert.equal(events.length, 2);
    assert.ok(events[1].documentKey._id instanceof ObjectId);
    assert.deepEqual(events[1].fullDocument, { _id: events[1].documentKey._id, v: 1 });
    assert.equal(await items.countDocuments({ _id: 'c' }), 0);
  });

  test('failed writes report nothing', async () => {
    const { items, events } = await observed();
    await items.insertOne({ _id: 1, n: 1 });
    events.length = 0;
    await assert.rejects(items.insertOne({ _id: 1 }), { code: 11000 });
    await assert.rejects(items.updateOne({ _id: 1 }, { $inc: { n: 'x' } }));
    await assert.rejects(items.replaceOne({ _id: 1 }, { _id: 2, n: 3 }), { code: 66 });
    assert.deepEqual(events, []);
  });

  test('namespaces and operations nobody wants cost no extra reads and report nothing', async () => {
    const raw = await openEmbeddedStore({});
    const counted = countingReads(raw);
    const events: ChangeEvent[] = [];
    const store = withChangeEvents(counted.store, (e) => events.push(e), { wants: (_db, coll, op) => coll === 'watched' && op === 'delete' });
    const quiet = store.collection('shop', 'quiet');
    await quiet.insertOne({ _id: 1 });
    await quiet.updateOne({ _id: 1 }, { $set: { a: 1 } });
    await quiet.deleteOne({ _id: 1 });
    const watched = store.collection('shop', 'watched');
    await watched.insertOne({ _id: 1 });
    await watched.updateOne({ _id: 1 }, { $set: { a: 1 } });
    assert.equal(counted.reads(), 0);
    assert.equal(events.length, 0);
    await watched.deleteOne({ _id: 1 });
    assert.equal(counted.reads(), 1, 'a wanted delete reads only the documents it removes');
    assert.deepEqual(events.map((e) => e.operationType), ['delete']);
  });

  test('concurrent writes to one document report consecutive before/after pairs in order', async () => {
    const { items, events } = await observed();
    await items.insertOne({ _id: 'counter', n: 0 });
    events.length = 0;
    const writers = 40;
    await Promise.all(Array.from({ length: writers }, (_, i) => (i % 2
      ? items.updateOne({ _id: 'counter' }, { $inc: { n: 1 } })
      : items.findOneAndUpdate({ _id: 'counter' }, { $inc: { n: 1 } }))));
    assert.equal(events.length, writers);
    events.forEach((e, i) => {
      assert.equal(e.fullDocumentBeforeChange?.n, i);
      assert.equal(e.fullDocument?.n, i + 1);
    });
  });

  test('callers get exactly what the undecorated store answers (random operation sequences)', async () => {
    const value = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom('a', 'b', null));
    const filter = fc.oneof(fc.constant({}), fc.record({ k: value }), fc.record({ n: fc.record({ $gte: fc.integer({ min: 0, max: 3 }) }) }));
    const doc = fc.record({ k: value, n: fc.integer({ min: 0, max: 3 }) }, { requiredKeys: [] });
    const op = fc.oneof(
      fc.record({ kind: fc.constant('insertOne'), doc: fc.record({ _id: fc.integer({ min: 0, max: 5 }), k: value }) }),
      fc.record({ kind: fc.constant('updateOne'), filter, n: fc.integer({ min: -1, max: 1 }), upsert: fc.boolean() }),
      fc.record({ kind: fc.constant('updateMany'), filter, n: fc.integer({ min: -1, max: 1 }), upsert: fc.boolean() }),
      fc.record({ kind: fc.constant('replaceOne'), filter, doc, upsert: fc.boolean() }),
      fc.record({ kind: fc.constant('deleteOne'), filter }),
      fc.record({ kind: fc.constant('deleteMany'), filter }),
      fc.record({ kind: fc.constant('findOneAndUpdate'), filter, n: fc.integer({ min: -1, max: 1 }), upsert: fc.boolean(), returnNewDocument: fc.boolean(), projected: fc.boolean() }),
      fc.record({ kind: fc.constant('findOneAndReplace'), filter, doc, upsert: fc.boolean(), returnNewDocument: fc.boolean(), projected: fc.boolean() }),
      fc.record({ kind: fc.constant('findOneAndDelete'), filter, projected: fc.boolean() }),
    );
    type Op = { kind: string; filter?: Document; doc?: Document; n?: number; upsert?: boolean; returnNewDocument?: boolean; projected?: boolean };
    const apply = async (c: StoreCollection, o: Op): Promise<unknown> => {
      const sort = { n: -1 as const, _id: 1 as const };
      const projection = o.projected ? { k: 1 } : undefined;
      try {
        switch (o.kind) {
          case 'insertOne': return await c.insertOne({ ...o.doc! });
          case 'updateOne': return await c.updateOne(o.filter!, { $inc: { n: o.n! } }, { upsert: o.upsert });
          case 'updateMany': return await c.updateMany(o.filter!, { $inc: { n: o.n! } }, { upsert: o.upsert });
          case 'replaceOne': return await c.replaceOne(o.filter!, { ...o.doc! }, { upsert: o.upsert });
          case 'deleteOne': return await c.deleteOne(o.filter!);
          case 'deleteMany': return await c.deleteMany(o.filter!);
          case 'findOneAndUpdate': return await c.findOneAndUpdate(o.filter!, { $inc: { n: o.n! } }, { sort, upsert: o.upsert, returnNewDocument: o.returnNewDocument, projection });
          case 'findOneAndReplace': return await c.findOneAndReplace(o.filter!, { ...o.doc! }, { sort, upsert: o.upsert, returnNewDocument: o.returnNewDocument, projection });
          default: return await c.findOneAndDelete(o.filter!, { sort, projection });
        }
      } catch (error) {
        return { failed: (error as { code?: number }).code };
      }
    };
    // Generated ObjectIds differ between the two stores; everything else must be equal.
    const stripGeneratedIds = (v: unknown): unknown => {
      if (v instanceof ObjectId) return 'generated id';
      if (Array.isArray(v)) return v.map(stripGeneratedIds);
      if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, stripGeneratedIds(x)]));
      return v;
    };
    await fc.assert(fc.asyncProperty(fc.array(op as fc.Arbitrary<Op>, { maxLength: 25 }), async (ops) => {
      const plain = (await openEmbeddedStore({})).collection('db', 'c');
      const events: ChangeEvent[] = [];
      const decorated = withChangeEvents(await openEmbeddedStore({}), (e) => events.push(e)).collection('db', 'c');
      for (const o of ops) {
        const expected = stripGeneratedIds(await apply(plain, o));
        const actual = stripGeneratedIds(await apply(decorated, o));
        assert.deepEqual(actual, expected, `results differ for ${JSON.stringify(o)}`);
      }
      const stored = await decorated.find({}, { sort: { _id: 1 } });
      assert.deepEqual(stripGeneratedIds(stored), stripGeneratedIds(await plain.find({}, { sort: { _id: 1 } })));
      // Replaying the events rebuilds the collection: every change was reported, each with its true result.
      const replayed = new Map<string, Document>();
      for (const e of events) {
        const key = JSON.stringify(e.documentKey._id);
        if (e.operationType === 'delete') {
          assert.ok(replayed.has(key), 'a delete follows the document\'s insert');
          replayed.delete(key);
        } else {
          if (e.operationType !== 'insert') assert.deepEqual(e.fullDocumentBeforeChange, replayed.get(key));
          replayed.set(key, e.fullDocument!);
        }
      }
      assert.deepEqual([...replayed.values()].sort((a, b) => JSON.stringify(a._id).localeCompare(JSON.stringify(b._id))),
        [...stored].sort((a, b) => JSON.stringify(a._id).localeCompare(JSON.stringify(b._id))));
    }), { numRuns: 60 });
  });
});

describe('describeUpdate and updateBetween', () => {
  test('describeUpdate reports sub-document fields by path and arrays whole', () => {
    const before = { _id: 1, a: { b: 1, c: { d: 2 } }, list: [1, 2], gone: 1, same: 'x', order: { x: 1, y: 2 } };
    const after = { _id: 1, a: { b: 1, c: { d: 3, e: 4 } }, list: [1, 2, 3], same: 'x', added: true, order: { y: 2, x: 1 } };
    assert.deepEqual(describeUpdate(before, after), {
      updatedFields: { 'a.c.d': 3, 'a.c.e': 4, list: [1, 2, 3], order: { y: 2, x: 1 }, added: true },
      removedFields: ['gone'],
      truncatedArrays: [],
    });
  });

  test('updateBetween turns a computed document into an update that produces it', async () => {
    const items = (await openEmbeddedStore({})).collection('db', 'c');
    const before = { _id: 1, a: 1, b: { c: 2 }, drop: 'me', keep: [1] };
    const after = { _id: 1, a: 2, b: { c: 2, d: 3 }, keep: [1], extra: 'new' };
    await items.insertOne(before);
    const update = updateBetween(before, after);
    assert.deepEqual(update, { $set: { a: 2, b: { c: 2, d: 3 }, extra: 'new' }, $unset: { drop: '' } });
    await items.updateOne({ _id: 1 }, update);
    const stored = await items.findOne({ _id: 1 });
    assert.deepEqual(stored, after);
    assert.deepEqual(Object.keys(stored!), Object.keys(after));
    assert.deepEqual(updateBetween(after, after), {});
  });
});
