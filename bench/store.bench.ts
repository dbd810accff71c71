// Embedded store vs @seald-io/nedb: 100k sequential inserts + 1k keyed lookups, both persistent,
// in fresh directories on the same disk, measured in the same run.
// Durability is matched honestly: nedb appends to its file without fsync (a killed process loses
// nothing, a power cut may), which is the embedded store's `os` mode, so that is the compared pair.
// The embedded store's default `fsync` mode (fdatasync before every acknowledgement, group commit)
// is measured too and reported separately, sequentially and with concurrent writers sharing syncs.
// Run: node --import tsx bench/store.bench.ts [--inserts N] [--lookups N] [--skip-fsync]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Datastore from '@seald-io/nedb';
import { openEmbeddedStore, type Durability } from '../runtime/store/embedded';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

const INSERTS = option('inserts', 100_000);
const LOOKUPS = option('lookups', 1_000);
const SKIP_FSYNC = process.argv.includes('--skip-fsync');
const GOAL = 20;
/** Concurrent writers for the group-commit measurement (fsync mode only; not part of the ratio). */
const CONCURRENT_WRITERS = 64;

function makeDoc(i: number): Record<string, unknown> {
  return { _id: `item-${i}`, name: `Item number ${i}`, n: i, done: i % 2 === 0, tags: ['alpha', 'beta'], owner: `user-${i % 97}` };
}

/** Deterministic lookup keys, the same for every contender. */
function lookupKeys(): string[] {
  let seed = 12345;
  return Array.from({ length: LOOKUPS }, () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return `item-${seed % INSERTS}`;
  });
}

interface Timing { insertMs: number; lookupMs: number }

async function timeContender(
  insert: (doc: Record<string, unknown>) => Promise<unknown>,
  lookup: (id: string) => Promise<unknown>,
  writers = 1,
): Promise<Timing> {
  const start = performance.now();
  let next = 0;
  const writer = async (): Promise<void> => {
    while (next < INSERTS) await insert(makeDoc(next++));
  };
  await Promise.all(Array.from({ length: writers }, writer));
  const inserted = performance.now();
  for (const id of lookupKeys()) {
    if (!(await lookup(id))) throw new Error(`lookup of ${id} found nothing`);
  }
  return { insertMs: inserted - start, lookupMs: performance.now() - inserted };
}

async function benchNedb(dir: string): Promise<Timing> {
  const db = new Datastore({ filename: path.join(dir, 'items.db') });
  await db.loadDatabaseAsync();
  return timeContender((doc) => db.insertAsync(doc), (id) => db.findOneAsync({ _id: id }));
}

async function benchEmbedded(dir: string, durability: Durability, writers = 1): Promise<Timing> {
  const store = await openEmbeddedStore({ dir, durability });
  const items = store.collection('bench', 'items');
  try {
    const timing = await timeContender((doc) => items.insertOne(doc), (id) => items.findOne({ _id: id }), writers);
    if ((await items.countDocuments()) !== INSERTS) throw new Error('embedded store lost documents');
    return timing;
  } finally {
    await store.close();
  }
}

function total(t: Timing): number {
  return t.insertMs + t.lookupMs;
}

function describeTiming(label: string, t: Timing): string {
  const perInsertUs = (t.insertMs * 1000) / INSERTS;
  const perLookupUs = (t.lookupMs * 1000) / LOOKUPS;
  return `${label.padEnd(34)} inserts ${t.insertMs.toFixed(0).padStart(7)} ms (${perInsertUs.toFixed(1)} µs each)  lookups ${t.lookupMs.toFixed(1).padStart(7)} ms (${perLookupUs.toFixed(1)} µs each)  total ${total(t).toFixed(0)} ms`;
}

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'store-bench-'));
  try {
    const dirFor = (name: string): string => fs.mkdtempSync(path.join(root, `${name}-`));
    console.log(`store bench: ${INSERTS} sequential inserts + ${LOOKUPS} keyed lookups, data under ${root}`);
    const nedb = await benchNedb(dirFor('nedb'));
    console.log(describeTiming('@seald-io/nedb (append, no fsync)', nedb));
    const embeddedOs = await benchEmbedded(dirFor('embedded-os'), 'os');
    console.log(describeTiming('embedded, durability os', embeddedOs));
    if (!SKIP_FSYNC) {
      const embeddedFsync = await benchEmbedded(dirFor('embedded-fsync'), 'fsync');
      console.log(describeTiming('embedded, durability fsync', embeddedFsync));
      const grouped = await benchEmbedded(dirFor('embedded-fsync-concurrent'), 'fsync', CONCURRENT_WRITERS);
      console.log(describeTiming(`embedded, fsync, ${CONCURRENT_WRITERS} writers`, grouped));
    }
    const ratio = total(nedb) / total(embeddedOs);
    console.log(`ratio (nedb time / embedded time, same durability): ${ratio.toFixed(2)}x — goal >= ${GOAL}x: ${ratio >= GOAL ? 'met' : 'NOT met'}`);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
