// Flexible sync on the wire (issue 22), two runtimes (`node dist/cli.js serve`) on the same app and the same
// seeded data, one with partition sync and one with flexible sync, measured in the same run:
//   1. a new realm-core client (the probe) downloading 10,000 objects: flexible (a subscription selecting them,
//      ws_connect → the subscription set Complete) ÷ partition (the partition holding them, ws_connect →
//      download complete), median of per-round ratios, rounds alternating which goes first         goal ≤ 1.1×
//   2. a write uploaded by client A → the DOWNLOAD carrying it at the last of 100 clients subscribed with the
//      same query, p95 (the same with 100 clients of one partition printed beside, writes alternating)  goal ≤ 20 ms
//   3. a role change through the Admin API (`PUT …/rules/{id}`, a read filter hiding half the watched items, then
//      showing them again) → the DOWNLOAD with the objects leaving or arriving at the last of the same 100 clients,
//      p95 over the changes                                                                             goal ≤ 1 s
// Clients of 2 and 3 are raw protocol clients in this process (fixtures/realm-sync-peers.ts), so one clock times
// both ends. Everything is on 127.0.0.1 and bounded in time.
// Run: node --import tsx bench/realm-sync-flexible.bench.ts [--objects 10000] [--rounds 5] [--watchers 100] [--fan-out-writes 100] [--role-changes 20]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ObjectId } from 'bson';
import { openEmbeddedStore } from '../runtime/store/embedded';
import type { Instruction } from '../runtime/sync/wire/instructions';
import { goalLine, median, option, registerAndLogin } from './fixtures/load';
import { RawSyncClient, realmSyncToolsMissing, runProbe, startInspectableRuntime, type InspectableRuntime, type ProbeLine } from './fixtures/realm-sync-peers';

const REPO_ROOT = path.resolve(__dirname, '..');
const OBJECTS = option('objects', 10_000);
const ROUNDS = option('rounds', 5);
const WATCHERS = option('watchers', 100);
const FAN_OUT_WRITES = option('fan-out-writes', 100);
const ROLE_CHANGES = option('role-changes', 20);
/** Role changes not counted at the start (the first reloads warm the code up). */
const WARMUP_ROLE_CHANGES = 2;
const ADMIN = { username: 'bench-admin@example.com', password: 'bench-admin-Passw0rd' };
/** Writes not counted at the start of the series (connections and code warming up). */
const WARMUP_WRITES = 5;
/** Pause between two writes, so each one meets an idle server as a user's write would. */
const WRITE_GAP_MS = 10;
const DEADLINE_MS = 5 * 60 * 1000;
const DATABASE = 'benchdb';
/** The partition (and the subscription) of the OBJECTS objects; the watchers' few objects are in another. */
const BULK = 'bulk';
const WATCHED = 'watched';
const WATCHED_OBJECTS = 10;

const ITEM_SCHEMA = [{
  name: 'Item', primaryKey: '_id',
  properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool', priority: 'int?', tags: 'string[]' },
}];

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function oid(n: number): ObjectId {
  return ObjectId.createFromHexString(`65d0${n.toString(16).padStart(20, '0')}`);
}

/**
 * The example app with one more collection, `benchdb.Item` (everyone reads and writes every item), synced
 * with partition sync (key `_partition`, everyone reads and writes every partition) or flexible sync
 * (`_partition` and `isComplete` queryable: the role change's read filter reads `isComplete`, and a role whose filter reads a field that is not queryable is one flexible sync cannot use, so every item would leave).
 */
function writeApp(dir: string, mode: 'partition' | 'flexible'): void {
  fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), dir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), JSON.stringify(value, null, 2));
  };
  write('sync/config.json', mode === 'partition'
    ? { type: 'partition', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: DATABASE, partition: { key: '_partition', type: 'string', required: false, permissions: { read: true, write: true } }, is_recovery_mode_disabled: false }
    : { type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: DATABASE, is_recovery_mode_disabled: false, queryable_fields_names: ['_partition', 'isComplete'] });
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

/** A runtime data dir (`<dir>/data` is the store) holding the items, written through the embedded store. */
async function seedDataDir(dir: string): Promise<void> {
  const store = await openEmbeddedStore({ dir: path.join(dir, 'data'), durability: 'os' });
  try {
    const item = (n: number, partition: string) => ({
      _id: oid(n), _partition: partition, name: `item ${n}`, status: n % 3 === 0 ? 'done' : 'open', isComplete: n % 2 === 0, priority: n % 5, tags: ['bench', `t${n % 7}`],
    });
    const items = store.collection(DATABASE, 'Item');
    await items.insertMany(Array.from({ length: OBJECTS }, (_, n) => item(n, BULK)));
    await items.insertMany(Array.from({ length: WATCHED_OBJECTS }, (_, n) => item(OBJECTS + n, WATCHED)));
    if (await items.countDocuments() !== OBJECTS + WATCHED_OBJECTS) throw new Error('seeding stored the wrong number of items');
  } finally {
    await store.close();
  }
}

/** `benchdb.Item`'s rule: everyone reads and writes every item, or (`hideCompleted`) only the items not complete. */
function itemRule(hideCompleted: boolean): Record<string, unknown> {
  const filter = hideCompleted ? { isComplete: false } : true;
  return { roles: [{ name: 'everyone', apply_when: {}, document_filters: { read: filter, write: filter }, read: true, write: true, insert: true, delete: true, search: true }], filters: [] };
}

/** The Admin API's address of `benchdb.Item`'s rule on a runtime started with ADMIN's credentials. */
async function itemRuleUrl(origin: string, appId: string): Promise<{ url: string; token: string }> {
  const call = async <T>(url: string, init: RequestInit = {}, token?: string): Promise<T> => {
    const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } });
    if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<T>;
  };
  const admin = `${origin}/api/admin/v3.0`;
  const { access_token: token } = await call<{ access_token: string }>(`${admin}/auth/providers/local-userpass/login`, { method: 'POST', body: JSON.stringify(ADMIN) });
  const profile = await call<{ roles: { group_id: string }[] }>(`${admin}/auth/profile`, {}, token);
  const group = profile.roles[0]!.group_id;
  const apps = await call<{ _id: string; client_app_id: string }[]>(`${admin}/groups/${group}/apps`, {}, token);
  const app = apps.find((a) => a.client_app_id === appId);
  if (!app) throw new Error(`the Admin API lists no app ${appId}`);
  const base = `${admin}/groups/${group}/apps/${app._id}`;
  const services = await call<{ _id: string; name: string }[]>(`${base}/services`, {}, token);
  const service = services.find((s) => s.name === 'mongodb-atlas')!;
  const rules = await call<{ _id: string; database: string; collection: string }[]>(`${base}/services/${service._id}/rules`, {}, token);
  const rule = rules.find((r) => r.database === DATABASE && r.collection === 'Item');
  if (!rule) throw new Error('the Admin API lists no rule of benchdb.Item');
  return { url: `${base}/services/${service._id}/rules/${rule._id}`, token };
}

function rename(id: ObjectId, name: string): Instruction[] {
  return [{ type: 'Update', table: 'Item', object: { type: 'objectId', value: id }, field: 'name', path: [], value: { type: 'string', value: name }, isDefault: false, priorSize: 0 }];
}

function lineAt(lines: ProbeLine[], match: (line: ProbeLine) => boolean, what: string): number {
  const line = lines.find(match);
  if (!line) throw new Error(`the probe printed no ${what} line`);
  return line.t;
}

async function probeOk(run: ReturnType<typeof runProbe>, what: string): Promise<ProbeLine[]> {
  const { lines, result, stderr } = await run;
  if (result.exitCode !== 0) {
    const errors = lines.filter((l) => /error|failed|timeout|subscription_state|expect/.test(l.event)).map((l) => JSON.stringify(l)).join('\n');
    throw new Error(`${what}: the probe ended with ${JSON.stringify(result)}\n${errors}\n${stderr.slice(-2000)}`);
  }
  return lines;
}

async function main(): Promise<void> {
  if (realmSyncToolsMissing) {
    console.log(`skipped: ${realmSyncToolsMissing}; no flexible sync figures measured`);
    return;
  }
  const benchStart = performance.now();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-flexible-'));
  const runtimes: InspectableRuntime[] = [];
  const open: RawSyncClient[] = [];
  const watchdog = setTimeout(() => {
    console.error(`the flexible sync benchmark ran over ${DEADLINE_MS / 60000} minutes`);
    process.exit(1);
  }, DEADLINE_MS);
  process.on('exit', () => {
    for (const runtime of runtimes) try { process.kill(runtime.pid, 'SIGKILL'); } catch { /* already gone */ }
  });
  try {
    const seedDir = path.join(root, 'seed');
    await seedDataDir(seedDir);
    const servers = {} as Record<'partition' | 'flexible', { runtime: InspectableRuntime; baseUrl: string; appId: string }>;
    for (const mode of ['partition', 'flexible'] as const) {
      const appDir = path.join(root, `app-${mode}`);
      const dataDir = path.join(root, `data-${mode}`);
      writeApp(appDir, mode);
      fs.cpSync(seedDir, dataDir, { recursive: true });
      const runtime = await startInspectableRuntime(appDir, dataDir, ['--admin-user', ADMIN.username, '--admin-password', ADMIN.password]);
      runtimes.push(runtime);
      servers[mode] = { runtime, baseUrl: new URL(runtime.appUrl).origin, appId: runtime.appUrl.slice(runtime.appUrl.lastIndexOf('/') + 1) };
    }
    const credentials = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
    const ada = {} as Record<'partition' | 'flexible', { access_token: string }>;
    for (const mode of ['partition', 'flexible'] as const) ada[mode] = await registerAndLogin(servers[mode].runtime.appUrl, credentials.email, credentials.password);
    console.log(`two runtimes on the same ${OBJECTS + WATCHED_OBJECTS} seeded items (${((performance.now() - benchStart) / 1000).toFixed(0)} s to start)`);

    // 1. A new client downloads the OBJECTS objects of partition BULK / of the subscription selecting them.
    const scripts = {
      partition: { partition: BULK, steps: [{ waitDownload: true }, { expect: { type: 'Item', count: OBJECTS } }] },
      flexible: { flexible: true, subscriptions: [`Item=_partition == "${BULK}"`], steps: [{ expect: { type: 'Item', count: OBJECTS } }] },
    };
    const done = {
      partition: (l: ProbeLine) => l.event === 'download_complete',
      flexible: (l: ProbeLine) => l.event === 'subscription_state' && l.state === 'Complete',
    };
    const downloadMs: Record<'partition' | 'flexible', number[]> = { partition: [], flexible: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['partition', 'flexible'] as const) : (['flexible', 'partition'] as const);
      for (const mode of order) {
        const server = servers[mode];
        const lines = await probeOk(runProbe({ baseUrl: server.baseUrl, appId: server.appId, credentials, schema: ITEM_SCHEMA, timeoutMs: 90_000, dump: false, ...scripts[mode] }), `${mode} download`);
        downloadMs[mode].push(lineAt(lines, done[mode], mode === 'flexible' ? 'subscription Complete' : 'download_complete') - lineAt(lines, (l) => l.event === 'ws_connect', 'ws_connect'));
      }
    }
    const ratios = downloadMs.flexible.map((ms, i) => ms / downloadMs.partition[i]!);
    console.log(`initial download of ${OBJECTS} objects (ms): flexible ${downloadMs.flexible.map((v) => v.toFixed(0)).join(', ')}; partition ${downloadMs.partition.map((v) => v.toFixed(0)).join(', ')}`);
    console.log(`  per-round ratios: ${ratios.map((r) => r.toFixed(2)).join(', ')} (median taken)`);
    console.log(goalLine(`bootstrap of a ${OBJECTS}-object subscription ÷ partition bootstrap of the same objects`, median(ratios), '<=', 1.1));

    // 2. WATCHERS clients subscribed to the WATCHED items; a writer renames one of them, one write at a time.
    // Beside it, the same on the partition runtime (WATCHERS clients of partition WATCHED), the two runtimes'
    // writes alternating (A B B A …) so that a slow spell of the machine falls on both.
    const audiences: { mode: 'partition' | 'flexible'; writer: RawSyncClient; watchers: RawSyncClient[] }[] = [];
    for (const mode of ['flexible', 'partition'] as const) {
      const server = servers[mode];
      const syncUrl = `${server.baseUrl.replace('http', 'ws')}/api/client/v2.0/app/${server.appId}/realm-sync?baas_at=${ada[mode].access_token}`;
      // One after another: clients that BIND at the same moment can be given the same client file ident today.
      const connectStart = performance.now();
      const clients: RawSyncClient[] = [];
      for (let i = 0; i < WATCHERS + 1; i++) {
        const client = await RawSyncClient.connect(syncUrl, { flexible: mode === 'flexible' });
        clients.push(client);
        open.push(client);
        if (mode === 'flexible') await client.bindFlexibleAndCatchUp({ Item: `_partition == "${WATCHED}"` });
        else await client.bindAndCatchUp(WATCHED);
      }
      const [writer, ...watchers] = clients;
      audiences.push({ mode, writer: writer!, watchers });
      console.log(`${mode}: ${WATCHERS} watchers and a writer connected and caught up in ${((performance.now() - connectStart) / 1000).toFixed(1)} s`);
    }
    const target = oid(OBJECTS);
    const latencies: Record<'partition' | 'flexible', number[]> = { partition: [], flexible: [] };
    for (let i = 0; i < FAN_OUT_WRITES + WARMUP_WRITES; i++) {
      for (const { mode, writer, watchers } of i % 2 === 0 ? audiences : [...audiences].reverse()) {
        const arrivals = watchers.map((w) => w.waitFor((a) => a.head[0] === 'download' && a.hasBody, 10_000));
        const { sentAt, acknowledged } = writer.upload(rename(target, `${mode} ${i}`));
        const [received] = await Promise.all([Promise.all(arrivals), acknowledged]).catch((error: Error) => {
          throw new Error(`${mode}, fan-out write ${i}: ${error.message}`);
        });
        if (i >= WARMUP_WRITES) latencies[mode].push(Math.max(...received.map((a) => a.at)) - sentAt);
        await sleep(WRITE_GAP_MS);
      }
    }
    for (const mode of ['flexible', 'partition'] as const) {
      const values = latencies[mode];
      console.log(`write → last of ${WATCHERS}, ${mode.padEnd(9)}  p50 ${percentile(values, 50).toFixed(2).padStart(6)} ms  p95 ${percentile(values, 95).toFixed(2).padStart(6)} ms  max ${Math.max(...values).toFixed(2).padStart(6)} ms  (${values.length} writes)`);
    }
    console.log(goalLine(`write by client A → the last of ${WATCHERS} subscribed clients' DOWNLOAD (same query), p95`, percentile(latencies.flexible, 95), '<=', 20, ' ms'));

    // 3. The rule of the watched items changes through the Admin API: half of them leave every watcher's view,
    // then come back. Timed from the request to the last watcher's DOWNLOAD carrying the change.
    const flexible = audiences.find((a) => a.mode === 'flexible')!;
    const rule = await itemRuleUrl(servers.flexible.baseUrl, servers.flexible.appId);
    const roleChangeMs: number[] = [];
    for (let i = 0; i < ROLE_CHANGES + WARMUP_ROLE_CHANGES; i++) {
      const arrivals = flexible.watchers.map((w) => w.waitFor((a) => a.head[0] === 'download' && a.hasBody, 20_000));
      const sentAt = performance.now();
      const res = await fetch(rule.url, { method: 'PUT', headers: { 'content-type': 'application/json', authorization: `Bearer ${rule.token}` }, body: JSON.stringify(itemRule(i % 2 === 0)) });
      if (!res.ok) throw new Error(`role change ${i}: PUT ${res.status} ${await res.text()}`);
      const received = await Promise.all(arrivals).catch((error: Error) => { throw new Error(`role change ${i}: ${error.message}`); });
      if (i >= WARMUP_ROLE_CHANGES) roleChangeMs.push(Math.max(...received.map((a) => a.at)) - sentAt);
    }
    // What the changes did: with the completed items hidden, a new client gets the other half.
    const hide = await fetch(rule.url, { method: 'PUT', headers: { 'content-type': 'application/json', authorization: `Bearer ${rule.token}` }, body: JSON.stringify(itemRule(true)) });
    if (!hide.ok) throw new Error(`hiding the completed items: PUT ${hide.status}`);
    const visible = Array.from({ length: WATCHED_OBJECTS }, (_, n) => OBJECTS + n).filter((n) => n % 2 !== 0).length;
    await probeOk(runProbe({ baseUrl: servers.flexible.baseUrl, appId: servers.flexible.appId, credentials, schema: ITEM_SCHEMA, timeoutMs: 30_000, dump: false, flexible: true, subscriptions: [`Item=_partition == "${WATCHED}"`], steps: [{ expect: { type: 'Item', count: visible } }] }), 'a new client under the role hiding completed items');
    console.log(`role change → last of ${WATCHERS}  p50 ${percentile(roleChangeMs, 50).toFixed(0)} ms  p95 ${percentile(roleChangeMs, 95).toFixed(0)} ms  max ${Math.max(...roleChangeMs).toFixed(0)} ms  (${roleChangeMs.length} changes)`);
    console.log(goalLine(`a role change (Admin API) → the last of ${WATCHERS} connected flexible clients' DOWNLOAD, p95`, percentile(roleChangeMs, 95) / 1000, '<=', 1, ' s'));
    console.log(`(${((performance.now() - benchStart) / 1000).toFixed(0)} s; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
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
