// Realm sync on the wire (issue 24), the runtime (`node dist/cli.js serve`) against realm-core's reference
// sync server measured in the same run:
//   1. initial download of a 10,000-object partition to a new realm-core client (the probe), ours ÷ the
//      reference server's, median of per-round ratios, rounds alternating which server goes first     goal ≤ 1.0×
//   2. a write uploaded by client A → its DOWNLOAD at client B, p95 ours ÷ the reference server's, the two
//      servers' writes alternating one by one                                                          goal ≤ 1.0×
//   3. the same with 100 watching clients: write → the last of the 100 DOWNLOADs, p95                   goal ≤ 20 ms
//   4. a GraphQL mutation → the watching client's DOWNLOAD, p95                                          goal ≤ 20 ms
//   5. memory per idle connected client (bound and identified): the runtime's RSS with 200 clients − without,
//      each read after a forced garbage collection                                                    goal ≤ 32 KB
// Clients of 2–5 are raw protocol clients in this process (fixtures/realm-sync-peers.ts), so one clock times
// both ends. Everything is on 127.0.0.1 and bounded in time.
// Run: node --import tsx bench/realm-sync.bench.ts [--objects 10000] [--rounds 5] [--writes 200] [--fan-out-writes 100]
//      [--graphql-writes 100] [--watchers 100] [--idle-clients 200]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ObjectId } from 'bson';
import type { Instruction } from '../runtime/sync/wire/instructions';
import { goalLine, median, option, registerAndLogin } from './fixtures/load';
import { RawSyncClient, realmSyncToolsMissing, residentBytes, runProbe, startInspectableRuntime, startReferenceServer, type InspectableRuntime, type ProbeLine, type ReferenceServer } from './fixtures/realm-sync-peers';

const REPO_ROOT = path.resolve(__dirname, '..');
const OBJECTS = option('objects', 10_000);
const ROUNDS = option('rounds', 5);
const WRITES = option('writes', 200);
const FAN_OUT_WRITES = option('fan-out-writes', 100);
const GRAPHQL_WRITES = option('graphql-writes', 100);
const WATCHERS = option('watchers', 100);
const IDLE_CLIENTS = option('idle-clients', 200);
/** Writes not counted at the start of each series (connections and code warming up). */
const WARMUP_WRITES = 5;
/** Pause between two writes, so each one meets an idle server as a user's write would. */
const WRITE_GAP_MS = 10;
/** The whole benchmark stops (and fails) past this. */
const DEADLINE_MS = 5 * 60 * 1000;

const TASK_SCHEMA = [{
  name: 'Task', primaryKey: '_id',
  properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool', priority: 'int?', tags: 'string[]' },
}];

interface Server {
  name: 'runtime' | 'reference';
  /** The sync WebSocket URL for a user's access token. */
  syncUrl(token: string): string;
  /** Probe flags that send its sync connection there (login always goes to the runtime). */
  probeFlags: string[];
  pid: number;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function describeLatencies(label: string, values: number[]): string {
  return `${label.padEnd(34)} p50 ${percentile(values, 50).toFixed(2).padStart(6)} ms  p95 ${percentile(values, 95).toFixed(2).padStart(6)} ms  max ${Math.max(...values).toFixed(2).padStart(6)} ms  (${values.length} writes)`;
}

function oid(n: number): { $oid: string } {
  return { $oid: `65a0${n.toString(16).padStart(20, '0')}` };
}

function renameTask(id: { $oid: string }, name: string): Instruction[] {
  return [{ type: 'Update', table: 'Task', object: { type: 'objectId', value: new ObjectId(id.$oid) }, field: 'name', path: [], value: { type: 'string', value: name }, isDefault: false, priorSize: 0 }];
}

function lineAt(lines: ProbeLine[], event: string): number {
  const line = lines.find((l) => l.event === event);
  if (!line) throw new Error(`the probe printed no ${event} line`);
  return line.t;
}

async function probeOk(run: Promise<{ lines: ProbeLine[]; result: ProbeLine; stderr: string }>, what: string): Promise<ProbeLine[]> {
  const { lines, result, stderr } = await run;
  if (result.exitCode !== 0) {
    const errors = lines.filter((l) => /error|failed|timeout/.test(l.event)).map((l) => JSON.stringify(l)).join('\n');
    throw new Error(`${what}: the probe ended with ${JSON.stringify(result)}\n${errors}\n${stderr.slice(-2000)}`);
  }
  return lines;
}

/**
 * Connects `count` clients to a partition, one after another, each bound, identified and caught up. One at
 * a time: clients that BIND at the same moment can be given the same client file ident by the runtime
 * today (the embedded store's findOneAndUpdate returns the counter as it is after a later $inc), and a
 * client sharing the writer's ident is sent an empty DOWNLOAD instead of the change.
 */
async function connectClients(server: Server, token: string, partition: string, count: number): Promise<RawSyncClient[]> {
  const clients: RawSyncClient[] = [];
  for (let i = 0; i < count; i++) {
    const client = await RawSyncClient.connect(server.syncUrl(token));
    clients.push(client);
    await client.bindAndCatchUp(partition);
  }
  return clients;
}

interface Audience { server: Server; writer: RawSyncClient; watchers: RawSyncClient[] }

/**
 * Renames of one task uploaded by each audience's writer, one write at a time, alternating between the
 * audiences write by write (A B B A …) so that a slow spell of the machine falls on both. For each write,
 * the milliseconds from sending the UPLOAD to the last watcher's DOWNLOAD carrying it; the writer's
 * acknowledgement is awaited too before the next write. The first WARMUP_WRITES of each are not counted.
 */
async function alternateWrites(audiences: Audience[], task: { $oid: string }, writes: number, tag: string): Promise<Map<Server, number[]>> {
  const latencies = new Map(audiences.map((a) => [a.server, [] as number[]]));
  for (let i = 0; i < writes + WARMUP_WRITES; i++) {
    for (const { server, writer, watchers } of i % 2 === 0 ? audiences : [...audiences].reverse()) {
      const arrivals = watchers.map((w) => w.waitFor((a) => a.head[0] === 'download' && a.hasBody, 10_000));
      const { sentAt, acknowledged } = writer.upload(renameTask(task, `${tag} ${i}`));
      const [received] = await Promise.all([Promise.all(arrivals), acknowledged]).catch((error: Error) => {
        throw new Error(`${server.name}, ${tag}, write ${i}: ${error.message}`);
      });
      if (i >= WARMUP_WRITES) latencies.get(server)!.push(Math.max(...received.map((a) => a.at)) - sentAt);
      await sleep(WRITE_GAP_MS);
    }
  }
  return latencies;
}

/** The p95 ratio within each quarter of two series written alternately: how much the figure moves. */
function quarterRatios(numerator: number[], denominator: number[]): string {
  const quarter = Math.floor(numerator.length / 4);
  return [0, 1, 2, 3].map((q) => (percentile(numerator.slice(q * quarter, (q + 1) * quarter), 95) / percentile(denominator.slice(q * quarter, (q + 1) * quarter), 95)).toFixed(2)).join(', ');
}

/** Median of five RSS readings 200 ms apart. */
async function steadyResidentBytes(pid: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(residentBytes(pid));
    await sleep(200);
  }
  return median(samples);
}

/**
 * This disk's fdatasync latency (200-byte appends, as a journal record), in a file beside the runtime's data
 * folder: every acknowledged write of the runtime's embedded store waits for one (durability `fsync`), so it
 * bounds the write latencies below.
 */
function fdatasyncLatency(dataDir: string): { p50: number; p95: number } {
  const file = `${dataDir}-fdatasync-probe`;
  const fd = fs.openSync(file, 'w');
  const record = Buffer.alloc(200, 1);
  const times: number[] = [];
  try {
    for (let i = 0; i < 100; i++) {
      fs.writeSync(fd, record);
      const start = performance.now();
      fs.fdatasyncSync(fd);
      times.push(performance.now() - start);
    }
  } finally {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
  }
  return { p50: percentile(times, 50), p95: percentile(times, 95) };
}

async function main(): Promise<void> {
  if (realmSyncToolsMissing) {
    console.log(`skipped: ${realmSyncToolsMissing}; no Realm sync figures measured`);
    return;
  }
  const benchStart = performance.now();
  const phases: string[] = [];
  let phaseStart = benchStart;
  const phaseDone = (name: string) => {
    const now = performance.now();
    phases.push(`${name} ${((now - phaseStart) / 1000).toFixed(0)} s`);
    phaseStart = now;
  };
  const appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-realm-app-'));
  fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-realm-data-'));
  let runtime: InspectableRuntime | undefined;
  let reference: ReferenceServer | undefined;
  const open: RawSyncClient[] = [];
  const closeAll = async (clients: RawSyncClient[]) => { await Promise.all(clients.map((c) => c.close())); };
  const watchdog = setTimeout(() => {
    console.error(`the Realm sync benchmark ran over ${DEADLINE_MS / 60000} minutes`);
    process.exit(1);
  }, DEADLINE_MS);
  process.on('exit', () => {
    for (const pid of [runtime?.pid, reference?.pid]) if (pid) try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
  });
  try {
    runtime = await startInspectableRuntime(appDir, dataDir);
    reference = await startReferenceServer();
    const appUrl = runtime.appUrl;
    const baseUrl = new URL(appUrl).origin;
    const appId = appUrl.slice(appUrl.lastIndexOf('/') + 1);
    const ours: Server = { name: 'runtime', syncUrl: (token) => `${baseUrl.replace('http', 'ws')}/api/client/v2.0/app/${appId}/realm-sync?baas_at=${token}`, probeFlags: [], pid: runtime.pid };
    const refUrl = reference.url;
    const theirs: Server = { name: 'reference', syncUrl: () => refUrl, probeFlags: ['--sync-route', refUrl], pid: reference.pid };
    const servers = [ours, theirs];

    // Ada's partition holds the 10,000 objects; Bob's one task is what the writes rename. The runtime's
    // rules let a user read and write the partition named by her user id; the reference server has no rules.
    const adaCredentials = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
    const bobCredentials = { type: 'emailPassword', email: 'bob@example.com', password: 'bob-Passw0rd' };
    const ada = await registerAndLogin(appUrl, adaCredentials.email, adaCredentials.password);
    const bob = await registerAndLogin(appUrl, bobCredentials.email, bobCredentials.password);
    const script = (extra: Record<string, unknown>) => ({ baseUrl, appId, schema: TASK_SCHEMA, timeoutMs: 90_000, dump: false, ...extra });
    const objects = Array.from({ length: OBJECTS }, (_, i) => ({
      op: 'create', type: 'Task',
      value: { _id: oid(i), _partition: ada.user_id, name: `task ${i}`, status: i % 3 === 0 ? 'done' : 'open', isComplete: i % 2 === 0, priority: i % 5, tags: ['bench', `t${i % 7}`] },
    }));
    const bobTask = oid(OBJECTS + 1);
    for (const server of servers) {
      await probeOk(runProbe(script({ credentials: bobCredentials, partition: bob.user_id, writes: [
        { op: 'create', type: 'Task', value: { _id: bobTask, _partition: bob.user_id, name: 'renamed by the benchmark', status: 'open', isComplete: false, tags: [] } },
      ] }), server.probeFlags), `seeding Bob's task into ${server.name}`);
    }
    phaseDone('start');

    // 5. Idle clients: the runtime's memory with IDLE_CLIENTS bound and identified clients − without, each
    // read after a full garbage collection (through the inspector); the reference server's RSS beside.
    // Measured first, before seeding the 10,000 objects leaves freed pages that new clients would reuse
    // unseen, and after a few clients came and went, so that code and per-partition state exist already.
    await closeAll(await connectClients(ours, bob.access_token, bob.user_id, 10));
    await sleep(500);
    type MemoryUsage = { rss: number; heapUsed: number; external: number; arrayBuffers: number };
    const without = await runtime.evaluateAfterGc<MemoryUsage>('process.memoryUsage()');
    open.push(...await connectClients(ours, bob.access_token, bob.user_id, IDLE_CLIENTS));
    await sleep(1000);
    const withClients = await runtime.evaluateAfterGc<MemoryUsage>('process.memoryUsage()');
    const kbPerClient = (key: keyof MemoryUsage) => (withClients[key] - without[key]) / IDLE_CLIENTS / 1024;
    await closeAll(open.splice(0));
    const referenceWithout = await steadyResidentBytes(reference.pid);
    open.push(...await connectClients(theirs, bob.access_token, bob.user_id, IDLE_CLIENTS));
    await sleep(1000);
    const referenceKb = (await steadyResidentBytes(reference.pid) - referenceWithout) / IDLE_CLIENTS / 1024;
    await closeAll(open.splice(0));
    console.log(`idle clients (${IDLE_CLIENTS}, bound and identified), per client: runtime RSS ${kbPerClient('rss').toFixed(1)} KB (JS heap ${kbPerClient('heapUsed').toFixed(1)} KB, external ${kbPerClient('external').toFixed(1)} KB, of which array buffers ${kbPerClient('arrayBuffers').toFixed(1)} KB); reference server RSS ${referenceKb.toFixed(1)} KB`);
    console.log(goalLine(`memory per idle connected client (runtime RSS with ${IDLE_CLIENTS} bound clients − without, after GC)`, kbPerClient('rss'), '<=', 32, ' KB'));
    phaseDone('idle clients');

    for (const server of servers) {
      const lines = await probeOk(runProbe(script({ credentials: adaCredentials, partition: ada.user_id, writes: objects }), server.probeFlags), `seeding ${server.name}`);
      const written = [...lines].reverse().find((l) => l.event === 'write')!.t;
      console.log(`seeded ${OBJECTS} objects into ${server.name} with one upload: last write → upload acknowledged ${((lineAt(lines, 'upload_complete') - written) / 1000).toFixed(2)} s`);
    }
    phaseDone('seeding');
    // 1. A new client downloads the 10,000 objects: from opening its sync WebSocket to download complete.
    const downloadMs: Record<Server['name'], number[]> = { runtime: [], reference: [] };
    const breakdown: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
        const lines = await probeOk(runProbe(script({ credentials: adaCredentials, partition: ada.user_id, steps: [{ waitDownload: true }, { expect: { type: 'Task', count: OBJECTS } }] }), server.probeFlags), `download from ${server.name}`);
        const connect = lineAt(lines, 'ws_connect');
        downloadMs[server.name].push(lineAt(lines, 'download_complete') - connect);
        if (round === 0) {
          const received = lines.filter((l) => l.event === 'ws_recv').map((l) => `${String(l.type)} +${(l.t - connect).toFixed(0)}`).join(', ');
          breakdown.push(`  ${server.name} messages (ms after ws_connect): ${received}; download complete +${(lineAt(lines, 'download_complete') - connect).toFixed(0)}`);
        }
      }
    }
    const downloadRatios = downloadMs.runtime.map((ms, i) => ms / downloadMs.reference[i]!);
    console.log(`initial download of ${OBJECTS} objects, ws_connect → download_complete (ms): runtime ${downloadMs.runtime.map((v) => v.toFixed(0)).join(', ')}; reference ${downloadMs.reference.map((v) => v.toFixed(0)).join(', ')}`);
    for (const line of breakdown) console.log(line);
    console.log(`  per-round ratios: ${downloadRatios.map((r) => r.toFixed(2)).join(', ')} (median taken)`);
    console.log(goalLine(`initial download of a ${OBJECTS}-object partition, runtime ÷ reference server`, median(downloadRatios), '<=', 1));

    phaseDone('downloads');
    const sync = fdatasyncLatency(dataDir);
    console.log(`this disk's fdatasync (what each acknowledged store write waits for): p50 ${sync.p50.toFixed(2)} ms, p95 ${sync.p95.toFixed(2)} ms`);
    // 2. A → B, one watcher, writes alternating between the servers.
    const pairs = new Map<Server, { writer: RawSyncClient; watcher: RawSyncClient }>();
    for (const server of servers) {
      const [writer, watcher] = await connectClients(server, bob.access_token, bob.user_id, 2);
      open.push(writer!, watcher!);
      pairs.set(server, { writer: writer!, watcher: watcher! });
    }
    const oneWatcher = await alternateWrites(servers.map((server) => ({ server, writer: pairs.get(server)!.writer, watchers: [pairs.get(server)!.watcher] })), bobTask, WRITES, 'A → B');
    for (const server of servers) console.log(describeLatencies(`A → B, ${server.name}`, oneWatcher.get(server)!));
    console.log(`  p95 ratio within each quarter of the series: ${quarterRatios(oneWatcher.get(ours)!, oneWatcher.get(theirs)!)}`);
    console.log(goalLine('write by client A → DOWNLOAD at client B, p95 runtime ÷ reference server', percentile(oneWatcher.get(ours)!, 95) / percentile(oneWatcher.get(theirs)!, 95), '<=', 1));

    phaseDone('A → B');
    // 3. The same writers with WATCHERS clients watching each server's partition (B and WATCHERS − 1 more).
    const watchersOf = new Map<Server, RawSyncClient[]>();
    for (const server of servers) {
      const more = await connectClients(server, bob.access_token, bob.user_id, WATCHERS - 1);
      open.push(...more);
      watchersOf.set(server, [pairs.get(server)!.watcher, ...more]);
    }
    const fanOut = await alternateWrites(servers.map((server) => ({ server, writer: pairs.get(server)!.writer, watchers: watchersOf.get(server)! })), bobTask, FAN_OUT_WRITES, 'fan-out');
    for (const server of servers) console.log(describeLatencies(`write → last of ${WATCHERS}, ${server.name}`, fanOut.get(server)!));
    console.log(goalLine(`write by client A → the last of ${WATCHERS} watching clients' DOWNLOAD, runtime p95`, percentile(fanOut.get(ours)!, 95), '<=', 20, ' ms'));
    for (const server of servers) await closeAll(watchersOf.get(server)!.slice(1));

    phaseDone('fan-out');
    // 4. A GraphQL mutation (Bob's bearer token) → Bob's watching client.
    const { watcher } = pairs.get(ours)!;
    const graphqlMs: number[] = [];
    const responseMs: number[] = [];
    for (let i = 0; i < GRAPHQL_WRITES + WARMUP_WRITES; i++) {
      const arrival = watcher.waitFor((a) => a.head[0] === 'download' && a.hasBody, 5000);
      const sentAt = performance.now();
      const res = await fetch(runtime.graphqlUrl, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${bob.access_token}` },
        body: JSON.stringify({ query: 'mutation($id: ObjectId!, $name: String!) { updateOneTask(query: {_id: $id}, set: {name: $name}) { _id } }', variables: { id: bobTask.$oid, name: `graphql ${i}` } }),
      });
      const body = await res.json() as { errors?: unknown };
      if (res.status !== 200 || body.errors) throw new Error(`the GraphQL mutation failed: ${res.status} ${JSON.stringify(body)}`);
      const answeredAt = performance.now();
      const { at } = await arrival;
      if (i >= WARMUP_WRITES) {
        graphqlMs.push(at - sentAt);
        responseMs.push(answeredAt - sentAt);
      }
      await sleep(WRITE_GAP_MS);
    }
    console.log(describeLatencies('GraphQL response, runtime', responseMs));
    console.log(describeLatencies('GraphQL mutation → DOWNLOAD, runtime', graphqlMs));
    console.log(goalLine('GraphQL mutation → the watching client\'s DOWNLOAD, runtime p95', percentile(graphqlMs, 95), '<=', 20, ' ms'));
    await closeAll(open.splice(0));

    phaseDone('GraphQL');
    console.log(`(${((performance.now() - benchStart) / 1000).toFixed(0)} s: ${phases.join(', ')})`);
  } finally {
    clearTimeout(watchdog);
    await closeAll(open);
    await runtime?.stop();
    await reference?.stop();
    fs.rmSync(appDir, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
