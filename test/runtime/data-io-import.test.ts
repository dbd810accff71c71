// importCollections on a real embedded store (a temporary data folder): what the store would refuse is found
// before anything is written (nesting past its limit, as its own insert counts it), and a batch that still
// fails (a document with the same _id written by someone else while the import runs) takes back the batches
// before it, with --drop putting the replaced documents back.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BSON } from 'bson';
import { EmbeddedStore } from '../../runtime/store/embedded';
import { importCollections, ImportRefused, type ImportCollection } from '../../runtime/data-io/import';

function collection(docs: Record<string, unknown>[], name = 'items'): ImportCollection {
  return { database: 'shop', collection: name, indexes: ['n'], docs, sizes: docs.map((d) => BSON.calculateObjectSize(d)), source: `dump/shop/${name}.bson` };
}

const rows = (count: number, tag: string) => Array.from({ length: count }, (_, i) => ({ _id: i, n: i, tag }));

function nested(levels: number): unknown {
  return levels === 0 ? 1 : { a: nested(levels - 1) };
}

describe('importCollections into the embedded store', () => {
  let dir: string;
  let store: EmbeddedStore;
  let n = 0;
  before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-import-')); });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // The default durability (fsync): batches wait on the disk, so a failed one lies in flight beside others.
  const open = async () => (store = await EmbeddedStore.open(path.join(dir, `store-${++n}`), {}));

  test('nesting the store refuses is found before the first write, at the store\'s own limit', async () => {
    await open();
    try {
      await store.collection('probe', 'limit').insertOne({ _id: 1, a: nested(99) });
      await assert.rejects(store.collection('probe', 'limit').insertOne({ _id: 2, a: nested(100) }), /deeper than 100 levels/);
      await assert.rejects(
        importCollections(store, [collection([...rows(2500, 'x'), { _id: 'deep', a: nested(100) }])]),
        (e: Error) => e instanceof ImportRefused && e.message === 'dump/shop/items.bson: document 2501 nests deeper than 100 levels, which the store refuses',
      );
      assert.equal(await store.collection('shop', 'items').countDocuments({}), 0);
      const fits = await importCollections(store, [collection([{ _id: 'deep', a: nested(99) }])]);
      assert.deepEqual(fits.collections, [{ database: 'shop', collection: 'items', documents: 1 }]);
    } finally {
      await store.close();
    }
  });

  test('a batch failing on a document written meanwhile takes back the batches before it; the other writer\'s document stays', async () => {
    await open();
    try {
      let raced = false;
      const outcome = importCollections(store, [collection(rows(5000, 'imported'))], {
        onProgress: (written) => {
          // Someone else writes _id 4999 once the first batch is durable, after the import's checks.
          if (!raced && written >= 1000) { raced = true; void store.collection('shop', 'items').insertOne({ _id: 4999, tag: 'other writer' }); }
        },
      });
      await assert.rejects(outcome, (e: Error) => e instanceof ImportRefused && /E11000 duplicate key .* nothing was imported \(the \d+ document\(s\) written before the failure were taken back\)/.test(e.message));
      assert.deepEqual(await store.collection('shop', 'items').find({}), [{ _id: 4999, tag: 'other writer' }]);
    } finally {
      await store.close();
    }
  });

  test('with drop, a failed import puts the replaced documents back', async () => {
    await open();
    try {
      await store.collection('shop', 'items').insertMany(rows(1500, 'original'));
      let raced = false;
      const outcome = importCollections(store, [collection(rows(5000, 'imported'))], {
        drop: true,
        onProgress: (written) => {
          if (!raced && written >= 1000) { raced = true; void store.collection('shop', 'items').insertOne({ _id: 4999, tag: 'other writer' }); }
        },
      });
      await assert.rejects(outcome, (e: Error) => e instanceof ImportRefused && /and the 1500 replaced put back/.test(e.message));
      const after = await store.collection('shop', 'items').find({}, { sort: { _id: 1 } });
      assert.equal(after.length, 1501);
      assert.equal(after.filter((d) => d.tag === 'original').length, 1500);
      assert.deepEqual(after.at(-1), { _id: 4999, tag: 'other writer' });
      assert.deepEqual(store.collection('shop', 'items').explain({ n: 3 }), { kind: 'index', field: 'n' }, 'the dump\'s index stays declared');
    } finally {
      await store.close();
    }
  });
});
