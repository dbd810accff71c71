// `asl data import` and `export` on a data folder no runtime holds, in process, as the CLI runs them:
// 1. import: read a mongodump-layout dump of 100,000 documents (every file checked and decoded) and write it
//    into a fresh embedded store (batches through its commits) ÷ inserting the same documents, already in
//    memory, into a fresh store with its own `insertMany`;
// 2. export: one snapshot of the store written as the dump's `.bson` and `.metadata.json` ÷ reading the
//    same documents with the store's `find({})`.
// Both stores in the default `fsync` durability, on the same disk, rounds alternating which side goes first.
// Run: node --import tsx bench/data-io.bench.ts [--documents N] [--rounds N]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { BSON, Double, ObjectId } from 'bson';
import { deserializeStored } from '../core/bsonDecode';
import { EmbeddedStore } from '../runtime/store/embedded';
import { readDump } from '../runtime/data-io/layout';
import { importCollections } from '../runtime/data-io/import';
import { exportSnapshot, writeDumpFolder } from '../runtime/data-io/export';
import { describeRounds, goalLine, pairedRatio } from './fixtures/load';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

const DOCUMENTS = option('documents', 100_000);
const ROUNDS = option('rounds', 5);
const GOAL = 1.5;

function makeDoc(i: number): Record<string, unknown> {
  return {
    _id: new ObjectId(), name: `Item number ${i}`, n: i, price: new Double(i % 7 === 0 ? 4 : 4.25), done: i % 2 === 0,
    tags: ['alpha', 'beta'], owner: `user-${i % 97}`, created: new Date(1_700_000_000_000 + i), dims: { w: i % 13, h: 1.5 },
  };
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-data-io-'));
const dumpDir = path.join(root, 'dump');
const docs = Array.from({ length: DOCUMENTS }, (_, i) => makeDoc(i));
const bson = Buffer.concat(docs.map((d) => BSON.serialize(d)));
fs.mkdirSync(path.join(dumpDir, 'bench'), { recursive: true });
fs.writeFileSync(path.join(dumpDir, 'bench', 'items.bson'), bson);
fs.writeFileSync(path.join(dumpDir, 'bench', 'items.metadata.json'), '{"indexes":[{"v":{"$numberInt":"2"},"key":{"_id":{"$numberInt":"1"}},"name":"_id_"},{"v":{"$numberInt":"2"},"key":{"owner":{"$numberInt":"1"}},"name":"owner_1"}],"uuid":"00112233445566778899aabbccddeeff","collectionName":"items","type":"collection"}');
console.log(`dump: ${DOCUMENTS} documents, ${(bson.length / 1024 / 1024).toFixed(1)} MiB of BSON`);

let runs = 0;
const freshDir = () => path.join(root, `store-${++runs}`);

/** The store's own API: the same documents (copies made beforehand), one insertMany, the owner index declared. */
async function insertThroughApi(): Promise<number> {
  const copies = docs.map((d) => deserializeStored(BSON.serialize(d)));
  const store = await EmbeddedStore.open(freshDir(), {});
  const start = performance.now();
  const items = store.collection('bench', 'items');
  await items.createIndex('owner');
  await items.insertMany(copies);
  const ms = performance.now() - start;
  await store.close();
  return ms;
}

async function importDump(): Promise<number> {
  const store = await EmbeddedStore.open(freshDir(), {});
  const start = performance.now();
  const dump = await readDump(dumpDir);
  const outcome = await importCollections(store, dump.collections.map((c) => ({ ...c, source: c.file })));
  const ms = performance.now() - start;
  if (outcome.collections[0]?.documents !== DOCUMENTS) throw new Error('the import wrote the wrong number of documents');
  await store.close();
  return ms;
}

async function withStore<T>(work: (store: EmbeddedStore) => Promise<T>): Promise<T> {
  const dir = freshDir();
  const seed = await EmbeddedStore.open(dir, { durability: 'os' });
  await seed.collection('bench', 'items').insertMany(docs.map((d) => ({ ...d })));
  await seed.close();
  const store = await EmbeddedStore.open(dir, {});
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

async function readThroughApi(store: EmbeddedStore): Promise<number> {
  const start = performance.now();
  const found = await store.collection('bench', 'items').find({});
  const ms = performance.now() - start;
  if (found.length !== DOCUMENTS) throw new Error('find returned the wrong number of documents');
  return ms;
}

async function exportStore(store: EmbeddedStore): Promise<number> {
  const out = path.join(root, `export-${++runs}`);
  const start = performance.now();
  const outcome = writeDumpFolder(out, exportSnapshot(store), false);
  const ms = performance.now() - start;
  if (outcome.collections[0]?.documents !== DOCUMENTS) throw new Error('the export wrote the wrong number of documents');
  if (fs.statSync(path.join(out, 'bench', 'items.bson')).size !== bson.length) throw new Error('the export is not the dump');
  fs.rmSync(out, { recursive: true, force: true });
  return ms;
}

async function main(): Promise<void> {
  const imports: number[] = [];
  const inserts: number[] = [];
  const exports: number[] = [];
  const reads: number[] = [];
  // A first round to warm the code paths up, not counted.
  await importDump();
  await insertThroughApi();
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) { imports.push(await importDump()); inserts.push(await insertThroughApi()); } else { inserts.push(await insertThroughApi()); imports.push(await importDump()); }
    await withStore(async (store) => {
      if (round % 2 === 0) { exports.push(await exportStore(store)); reads.push(await readThroughApi(store)); } else { reads.push(await readThroughApi(store)); exports.push(await exportStore(store)); }
    });
  }
  console.log(`import (read + check + write): ${imports.map((ms) => ms.toFixed(0)).join(', ')} ms; insertMany of the same documents: ${inserts.map((ms) => ms.toFixed(0)).join(', ')} ms`);
  console.log(`export (snapshot + write the dump): ${exports.map((ms) => ms.toFixed(0)).join(', ')} ms; find({}) of the same documents: ${reads.map((ms) => ms.toFixed(0)).join(', ')} ms`);
  const importRatio = pairedRatio(imports, inserts);
  const exportRatio = pairedRatio(exports, reads);
  console.log(describeRounds('import ÷ insert per round', importRatio.rounds));
  console.log(describeRounds('export ÷ read per round', exportRatio.rounds));
  console.log(goalLine(`import of ${DOCUMENTS} documents ÷ inserting them through the store's API`, importRatio.ratio, '<=', GOAL));
  console.log(goalLine(`export of ${DOCUMENTS} documents ÷ reading them through the store's API`, exportRatio.ratio, '<=', GOAL));
}

main().finally(() => fs.rmSync(root, { recursive: true, force: true })).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
