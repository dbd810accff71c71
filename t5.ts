import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { BSON, Double, ObjectId } from 'bson';
import { EmbeddedStore } from './runtime/store/embedded';
import { readDump } from './runtime/data-io/layout';
import { importCollections } from './runtime/data-io/import';
import { deserializeStored } from './core/bsonDecode';
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'prof-'));
const docs = Array.from({ length: 100000 }, (_, i) => ({ _id: new ObjectId(), name: `Item number ${i}`, n: i, price: new Double(i % 7 === 0 ? 4 : 4.25), done: i % 2 === 0, tags: ['alpha', 'beta'], owner: `user-${i % 97}`, created: new Date(1_700_000_000_000 + i), dims: { w: i % 13, h: 1.5 } }));
fs.mkdirSync(path.join(root, 'dump/b'), { recursive: true });
fs.writeFileSync(path.join(root, 'dump/b/items.bson'), Buffer.concat(docs.map((d) => BSON.serialize(d))));
(async () => {
  for (let r = 0; r < 3; r++) {
    let t = performance.now();
    const dump = await readDump(path.join(root, 'dump'));
    const read = performance.now() - t;
    const s1 = await EmbeddedStore.open(path.join(root, 's' + r), {});
    t = performance.now();
    await importCollections(s1, dump.collections.map((c) => ({ ...c, source: c.file })));
    const imp = performance.now() - t;
    await s1.close();
    const copies = docs.map((d) => deserializeStored(BSON.serialize(d)));
    const s2 = await EmbeddedStore.open(path.join(root, 'i' + r), {});
    t = performance.now();
    await s2.collection('b', 'items').insertMany(copies);
    const ins = performance.now() - t;
    await s2.close();
    console.log({ read, imp, ins });
  }
  fs.rmSync(root, { recursive: true, force: true });
})();
