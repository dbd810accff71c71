// Cost as the work grows, Realm sync on the wire (curves `download` and `fan-out`), the runtime serving the
// todo-tracker example with a partition-synced `benchdb.Item` (everyone reads and writes every partition):
//   download: a new client's initial download of a partition of 1,000 / 10,000 / 100,000 objects that no client
//             downloaded before (its bootstrap built), from opening its WebSocket to the MARK answered after
//             IDENT (everything downloaded); time per object. Printed beside: a second client of the same
//             partition (the bootstrap kept), and a 1,000-object partition in the largest runtime's collection
//   fan-out:  a write (one field of one object) uploaded by one client → the DOWNLOAD carrying it at the last
//             of 10 / 100 / 1,000 clients watching the partition; time per watching client
// Goal for each: the cost per unit grows ≤ 2× from the smallest size to the largest. The clients are raw
// protocol clients in this process (fixtures/realm-sync-peers.ts, our codec), so the server's work is what
// is timed, not a client's integration; at 1,000 watchers this process's own reading of 1,000 messages is
// part of each figure. Download: one runtime per size, on data dirs seeded through the embedded store, rounds
// alternating the sizes, a new partition each round; fan-out: on the 1,000-object runtime, watchers added
// between the sizes.
// Tables printed, charts in bench/out/, all curves in bench/out/index.html (fixtures/curves.ts).
// Run: node --import tsx bench/curves-sync.bench.ts [--rounds 3] [--writes 20]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ObjectId } from 'bson';
import { openEmbeddedStore } from '../runtime/store/embedded';
import type { Instruction } from '../runtime/sync/wire/instructions';
import { median, reportCurve } from './fixtures/curves';
import { option, registerAndLogin } from './fixtures/load';
import { RawSyncClient, startInspectableRuntime, type InspectableRuntime } from './fixtures/realm-sync-peers';

const REPO_ROOT = path.resolve(__dirname, '..');
const DOWNLOAD_SIZES = [1_000, 10_000, 100_000];
const FAN_OUT_SIZES = [10, 100, 1_000];
const ROUNDS = option('rounds', 3);
const WRITES = option('writes', 20);
/** Writes not counted at each fan-out size (connections and code warming up). */
const WARMUP_WRITES = 3;
/** Pause between two writes, so each one meets an idle server as a user's write would. */
const WRITE_GAP_MS = 10;
/** Download rounds stop early (at least one per size) when the next would end past this (run.mjs's limit is 6 minutes). */
const DOWNLOAD_BUDGET_MS = 3 * 60 * 1000;
const DEADLINE_MS = 5 * 60 * 1000 + 30_000;
const DATABASE = 'benchdb';
const BULK = 'bulk';
const WATCHED = 'watched';
const WATCHED_OBJECTS = 10;

function oid(n: number): ObjectId {
  return ObjectId.createFromHexString(`65e0${n.toString(16).padStart(20, '0')}`);
}

/** The example app with `benchdb.Item` synced by partition (key `_partition`), readable and writable by everyone. */
function writeApp(dir: string): void {
  fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), dir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), JSON.stringify(value, null, 2));
  };
  write('sync/config.json', { type: 'partition', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: DATABASE, partition: { key: '_partition', type: 'string', required: false, permissions: { read: true, write: true } }, is_recovery_mode_disabled: false });
  write(`data_sources/mongodb-atlas/${DATABASE}/Item/schema.json`, {
    title: 'Item', bsonType: 'object', required: ['_id', 'name', 'status', 'isComplete'],
    properties: {
      _id: { bsonType: 'objectId' }, _partition: { bsonType: 'string' }, name: { bsonType: 'string' }, status: { bsonType: 'string' },
      isComplete: { bsonType: 'bool' }, priority: { bsonType: 'long' }, tags: { bsonType: 'array', items: { bsonType: 'string' } },
    },
  });
  write(`data_sources/mongodb-atlas/${DATABASE}/Item/rules.json`, {
    collection: 'Item', database: DATABASE,
    roles: [{ name: 'everyone', apply_when: {}, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true }],
  });
}

/** A runtime data dir holding, for each of `partitions`, `objects` items, and WATCHED_OBJECTS items in WATCHED. */
async function seedDataDir(dir: string, partitions: { name: string; objects: number }[]): Promise<void> {
  const store = await openEmbeddedStore({ dir: path.join(dir, 'data'), durability: 'os' });
  let next = 0;
  try {
    const item = (n: number, partition: string) => ({
      _id: oid(n), _partition: partition, name: `item ${n}`, status: n % 3 === 0 ? 'done' : 'open', isComplete: n % 2 === 0, priority: n % 5, tags: ['bench', `t${n % 7}`],
    });
    const items = store.collection(DATABASE, 'Item');
    for (const { name, objects } of [...partitions, { name: WATCHED, objects: WATCHED_OBJECTS }]) {
      for (let from = 0; from < objects; from += 50_000) {
        const count = Math.min(50_000, objects - from);
        await items.insertMany(Array.from({ length: count }, (_, k) => item(next + k, name)));
        next += count;
      }
    }
    if (await items.countDocuments() !== next) throw new Error('seeding stored the wrong number of items');
  } finally {
    await store.close();
  }
}

function rename(id: ObjectId, name: string): Instruction[] {
  return [{ type: 'Update', table: 'Item', object: { type: 'objectId', value: id }, field: 'name', path: [], value: { type: 'string', value: name }, isDefault: false, priorSize: 0 }];
}

interface SyncServer { objects: number; runtime: InspectableRuntime; url: string; watchedId: ObjectId }

/** A new client's initial download of a partition: WebSocket opened → MARK answered; the bytes it received. */
async function downloadOnce(server: SyncServer, partition: string): Promise<{ ms: number; bytes: number }> {
  const start = performance.now();
  const client = await RawSyncClient.connect(server.url);
  let bytes = 0;
  client.onArrival = (arrival) => { bytes += arrival.bytes ?? 0; };
  try {
    await client.bindAndCatchUp(partition);
    return { ms: performance.now() - start, bytes };
  } finally {
    await client.close();
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-curves-sync-'));
  const runtimes: InspectableRuntime[] = [];
  const open: RawSyncClient[] = [];
  const watchdog = setTimeout(() => {
    console.error(`the sync curves benchmark ran over ${DEADLINE_MS / 1000} s`);
    process.exit(1);
  }, DEADLINE_MS);
  process.on('exit', () => {
    for (const runtime of runtimes) try { process.kill(runtime.pid, 'SIGKILL'); } catch { /* already gone */ }
  });
  try {
    const appDir = path.join(root, 'app');
    writeApp(appDir);
    const credentials = { email: 'ada@example.com', password: 'ada-Passw0rd' };
    const servers: SyncServer[] = [];
    // Each round downloads a partition no client has downloaded before: the runtime keeps a partition's
    // bootstrap for later clients, so a second client of a partition measures that cache (printed beside).
    // The largest runtime also holds 1,000-object partitions, to show what the collection's size adds.
    const largest = DOWNLOAD_SIZES[DOWNLOAD_SIZES.length - 1]!;
    for (const objects of DOWNLOAD_SIZES) {
      const dataDir = path.join(root, `data-${objects}`);
      const partitions = Array.from({ length: ROUNDS }, (_, r) => ({ name: `${BULK}-${r}`, objects }));
      if (objects === largest) partitions.push(...Array.from({ length: ROUNDS }, (_, r) => ({ name: `small-${r}`, objects: DOWNLOAD_SIZES[0]! })));
      await seedDataDir(dataDir, partitions);
      const runtime = await startInspectableRuntime(appDir, dataDir);
      runtimes.push(runtime);
      const { access_token: token } = await registerAndLogin(runtime.appUrl, credentials.email, credentials.password);
      const origin = new URL(runtime.appUrl).origin.replace('http', 'ws');
      const appId = runtime.appUrl.slice(runtime.appUrl.lastIndexOf('/') + 1);
      servers.push({ objects, runtime, url: `${origin}/api/client/v2.0/app/${appId}/realm-sync?baas_at=${token}`, watchedId: oid(partitions.reduce((sum, p) => sum + p.objects, 0)) });
    }
    console.log(`three runtimes of ${DOWNLOAD_SIZES.join(' / ')} objects ready (${((performance.now() - started) / 1000).toFixed(0)} s)`);

    // Download: one warm-up download per size (the small WATCHED partition: code warmed, no bootstrap kept
    // that is measured), then rounds alternating the sizes' order, each on a new partition.
    const downloads = servers.map(() => [] as { ms: number; bytes: number }[]);
    const cached = servers.map(() => [] as number[]);
    const smallInLargest: number[] = [];
    for (const server of servers) await downloadOnce(server, WATCHED);
    let rounds = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const roundStart = performance.now();
      const order = round % 2 === 0 ? servers.map((_, i) => i) : servers.map((_, i) => servers.length - 1 - i);
      for (const i of order) {
        downloads[i]!.push(await downloadOnce(servers[i]!, `${BULK}-${round}`));
        cached[i]!.push((await downloadOnce(servers[i]!, `${BULK}-${round}`)).ms);
      }
      smallInLargest.push((await downloadOnce(servers[servers.length - 1]!, `small-${round}`)).ms);
      rounds++;
      const now = performance.now();
      if (round + 1 < ROUNDS && now + (now - roundStart) - started > DOWNLOAD_BUDGET_MS) {
        console.log(`download rounds cut to ${rounds} of ${ROUNDS}: another (${((now - roundStart) / 1000).toFixed(0)} s) would end past ${DOWNLOAD_BUDGET_MS / 60000} minutes, leaving the fan-out too little of bench/run.mjs's 6 minutes (machine load ${os.loadavg()[0].toFixed(1)})`);
        break;
      }
    }
    reportCurve({
      name: 'download', title: 'Realm sync initial download of a partition (its bootstrap built)', workLabel: 'objects', costUnit: 'ms', perUnitLabel: 'µs per object',
      points: servers.map((server, i) => {
        const ms = downloads[i]!.map((d) => d.ms);
        return { work: server.objects, cost: median(ms), perUnit: (median(ms) * 1000) / server.objects, rounds: ms, note: `${(downloads[i]![0]!.bytes / server.objects).toFixed(0)} bytes per object received (compressed); a second client (bootstrap kept): ${median(cached[i]!).toFixed(1)} ms` };
      }),
      note: `A new raw protocol client (this process) downloads a partition no client downloaded before (the runtime builds its bootstrap: the partition's documents read, turned into instructions, encoded), from opening the WebSocket to the MARK answered after BIND and IDENT, so every changeset of the download has arrived. One runtime per size, its collection holding ${ROUNDS} such partitions (one per round), seeded through the embedded store; one warm-up download each, then ${rounds} rounds alternating the sizes' order; medians. A second new client of the same partition gets the bootstrap the runtime kept: printed beside.`,
    });
    const smallRatio = median(smallInLargest) / median(downloads[0]!.map((d) => d.ms));
    console.log(`a ${DOWNLOAD_SIZES[0]}-object partition in the ${largest}-object runtime's collection (${(ROUNDS * (largest + DOWNLOAD_SIZES[0]!)).toLocaleString('en-US')} documents): ${median(smallInLargest).toFixed(1)} ms, ${smallRatio.toFixed(2)}× the same download in the ${DOWNLOAD_SIZES[0]}-object runtime's (${(ROUNDS * DOWNLOAD_SIZES[0]!).toLocaleString('en-US')} documents): rounds ${smallInLargest.map((v) => v.toFixed(1)).join(', ')}`);
    for (const runtime of runtimes.splice(1)) await runtime.stop();

    // Fan-out on the smallest runtime: one writer and the watchers of partition WATCHED, added size by size.
    const server = servers[0]!;
    const writer = await RawSyncClient.connect(server.url);
    open.push(writer);
    await writer.bindAndCatchUp(WATCHED);
    const watchers: RawSyncClient[] = [];
    const latencies = FAN_OUT_SIZES.map(() => [] as number[]);
    const connectMs: number[] = [];
    for (const [level, size] of FAN_OUT_SIZES.entries()) {
      // One after another: clients binding at the same moment can be given the same client file ident (see realm-sync.bench.ts).
      const connectStart = performance.now();
      while (watchers.length < size) {
        const client = await RawSyncClient.connect(server.url);
        open.push(client);
        watchers.push(client);
        await client.bindAndCatchUp(WATCHED);
      }
      connectMs.push(performance.now() - connectStart);
      await sleep(200);
      for (let i = 0; i < WRITES + WARMUP_WRITES; i++) {
        const arrivals = watchers.map((w) => w.waitFor((a) => a.head[0] === 'download' && a.hasBody, 30_000));
        const { sentAt, acknowledged } = writer.upload(rename(server.watchedId, `fan-out ${size} ${i}`));
        const [received] = await Promise.all([Promise.all(arrivals), acknowledged]);
        if (i >= WARMUP_WRITES) latencies[level]!.push(Math.max(...received.map((a) => a.at)) - sentAt);
        await sleep(WRITE_GAP_MS);
      }
    }
    reportCurve({
      name: 'fan-out', title: 'Realm sync fan-out: a write → the last watching client\'s DOWNLOAD', workLabel: 'watching clients', costUnit: 'ms, median write → last DOWNLOAD', perUnitLabel: 'µs per watching client',
      points: FAN_OUT_SIZES.map((size, level) => {
        const ms = latencies[level]!;
        const p95 = [...ms].sort((a, b) => a - b)[Math.ceil(0.95 * ms.length) - 1]!;
        return { work: size, cost: median(ms), perUnit: (median(ms) * 1000) / size, rounds: [median(ms.slice(0, ms.length / 2)), median(ms.slice(ms.length / 2))], note: `p95 ${p95.toFixed(1)} ms over ${ms.length} writes; connecting the clients added took ${(connectMs[level]! / 1000).toFixed(1)} s` };
      }),
      note: `One raw protocol client renames one object of partition "${WATCHED}" (${WATCHED_OBJECTS} objects) ${WRITES} times (after ${WARMUP_WRITES} not counted), ${WRITE_GAP_MS} ms apart, each timed from sending the UPLOAD to the last watcher's DOWNLOAD carrying it (the writer's acknowledgement awaited too); the watchers are raw clients in this process, bound one after another, 10, then 90 more, then 900 more. "Rounds" are the medians of the first and second half of the writes. At 10 watchers the figure is mostly the write's own cost (store commit, history), which the per-client figure spreads over few clients.`,
    });
    console.log(`(${((performance.now() - started) / 1000).toFixed(0)} s in all)`);
  } finally {
    clearTimeout(watchdog);
    await Promise.all(open.map((c) => c.close()));
    for (const runtime of runtimes) await runtime.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
