// Sync under network faults (issue: faults on the wire, item 2): ten devices running realm-core's client on
// one partition, or on one flexible subscription, write offline and online through the fault proxy for a
// bounded time (latency and jitter, a bandwidth cap, cuts after a few hundred bytes to a few KB, stalled
// half-open connections, refused reconnects); then the faults stop and every device syncs until all of
// them, the documents and GraphQL hold the same objects. Logins pass the proxy unfaulted; only the sync
// WebSockets (requests for `/realm-sync`) get faults.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { registerAndLogin } from '../../bench/fixtures/load';
import { residentBytes } from '../../bench/fixtures/realm-sync-peers';
import { FaultProxy, type ConnectionFaults } from '../helpers/fault-proxy';
import { ProbeDevice } from './sync-probe-device';
import { documentIds, graphqlIds, readHistory, repeated, RestartableRuntime, writeApp, type ModeSpec } from './sync-fault-world';

export interface NetworkFaultFigures {
  mode: string;
  devices: number;
  faultSeconds: number;
  runs: number;
  failedRuns: number;
  written: number;
  acknowledged: number;
  /** Of those, acknowledged while the faults lasted (the rest in the syncs after). */
  acknowledgedDuringFaults: number;
  lost: number;
  duplicated: number;
  resets: number;
  /** Objects that some device, the documents, GraphQL or the history hold and another does not, after convergence. */
  disagreeing: number;
  convergedMs: number | null;
  connections: number;
  cut: number;
  stalled: number;
  refusals: number;
  heapBeforeMiB: number;
  heapAfterMiB: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rand = (lo: number, hi: number) => lo + Math.random() * (hi - lo);
const MiB = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

/** The faults of one sync connection: a mix of slow, cut and stalled ones; none are clean. */
function syncConnectionFaults(): ConnectionFaults {
  const slow = { latencyMs: Math.round(rand(20, 250)), jitterMs: Math.round(rand(0, 150)), bytesPerSecond: Math.random() < 0.5 ? Math.round(rand(8_000, 64_000)) : undefined };
  const pick = Math.random();
  if (pick < 0.4) return { ...slow, cutAfterBytes: Math.round(rand(200, 2700)), reset: Math.random() < 0.5 };
  if (pick < 0.6) return { ...slow, stallAfterBytes: Math.random() < 0.3 ? 0 : Math.round(rand(100, 2500)), holdMs: Math.round(rand(2000, 5000)) };
  return slow;
}

export async function networkFaults(spec: ModeSpec, options: { devices: number; faultMs: number; convergeDeadlineMs: number }): Promise<NetworkFaultFigures> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `asl-net-faults-${spec.mode}-`));
  const appDir = path.join(root, 'app');
  writeApp(appDir, spec);
  const runtime = new RestartableRuntime(appDir, path.join(root, 'data'));
  let proxy: FaultProxy | undefined;
  const devices: ProbeDevice[] = [];
  try {
    const rt = await runtime.start();
    proxy = await FaultProxy.start(runtime.portNumber);
    const baseUrl = `http://127.0.0.1:${proxy.port}`;
    const appId = rt.appUrl.slice(rt.appUrl.lastIndexOf('/') + 1);
    const account = { email: `net-${spec.mode}@example.com`, password: 'faults-Passw0rd' };
    const login = await registerAndLogin(rt.appUrl, account.email, account.password);
    const modeHex = spec.mode === 'partition' ? 'c1' : 'd1';
    for (let i = 0; i < options.devices; i++) {
      devices.push(new ProbeDevice(path.join(root, 'devices', String(i)), spec, { ...account, userId: login.user_id }, `${modeHex}${i.toString(16).padStart(2, '0')}`));
    }
    // Each device once on a clean network: its user, client file and first object.
    await Promise.all(devices.map((d) => d.run({ baseUrl, appId, writes: 1, timeoutMs: 20_000 })));
    await sleep(1000);
    const heapBefore = await rt.evaluateAfterGc<number>('process.memoryUsage().heapUsed');
    const rssBefore = residentBytes(rt.pid);

    // The faults.
    const faultEnd = Date.now() + options.faultMs;
    proxy.choose = (first) => (/realm-sync/.test(first.subarray(0, 300).toString('latin1')) ? syncConnectionFaults() : {});
    const refusals = setInterval(() => proxy!.refuseFor(Math.round(rand(500, 1500))), 4000);
    const loops = devices.map(async (device) => {
      while (Date.now() < faultEnd) {
        const offline = Math.random() < 0.35;
        await device.run({ baseUrl, appId, writes: 1 + Math.floor(Math.random() * 3), offline, timeoutMs: 3000, killAfterMs: 12_000 });
      }
    });
    await sleep(options.faultMs);
    clearInterval(refusals);
    proxy.choose = () => ({});
    // The end of the faults: what is in flight is ended (an app killed on a phone), stalled links are dropped.
    const endedAt = Date.now();
    const acknowledgedDuringFaults = devices.reduce((n, d) => n + d.acknowledgedCount, 0);
    for (const device of devices) device.kill();
    proxy.dropAll();
    await Promise.all(loops);

    // Converging: every device syncs, until all hold what the server holds, or the deadline.
    let convergedMs: number | null = null;
    let storeIds: string[] = [];
    let dumps: string[][] = [];
    while (Date.now() - endedAt < options.convergeDeadlineMs) {
      const outcomes = await Promise.all(devices.map((d) => d.run({ baseUrl, appId, writes: 0, timeoutMs: 8000, dump: true })));
      storeIds = await documentIds(rt.appUrl, login.access_token, spec, login.user_id);
      dumps = outcomes.map((o) => o.objects);
      const want = [...new Set(storeIds)].sort().join(',');
      const allWritten = devices.every((d) => d.written.every((id) => storeIds.includes(id)));
      if (outcomes.every((o) => o.exitCode === 0 && o.uploaded && [...o.objects].sort().join(',') === want) && allWritten) {
        convergedMs = Date.now() - endedAt;
        break;
      }
    }
    const gqlIds = await graphqlIds(rt.appUrl, login.access_token, spec, login.user_id);
    await sleep(1500);
    const heapAfter = await rt.evaluateAfterGc<number>('process.memoryUsage().heapUsed');
    const rssAfter = residentBytes(rt.pid);
    const traffic = { ...proxy.stats };
    await proxy.close();
    proxy = undefined;
    await runtime.stop();
    const history = await readHistory(runtime.dataDir, spec.collection);

    const store = new Set(storeIds);
    const acknowledged = devices.flatMap((d) => d.acknowledged);
    const lost = acknowledged.filter((id) => !store.has(id)).length;
    const doubledCreates = [...history.creates.values()].filter((n) => n > 1).length;
    const duplicated = repeated(storeIds) + repeated(gqlIds) + doubledCreates + history.doubledChangesets;
    const everyone = new Set([...store, ...gqlIds, ...dumps.flat(), ...history.creates.keys()]);
    const holders = [store, new Set(gqlIds), ...dumps.map((d) => new Set(d)), new Set(history.creates.keys())];
    const disagreeing = [...everyone].filter((id) => holders.some((h) => !h.has(id))).length;
    return {
      mode: spec.mode, devices: devices.length, faultSeconds: options.faultMs / 1000,
      runs: devices.reduce((n, d) => n + d.runs, 0), failedRuns: devices.reduce((n, d) => n + d.failedRuns, 0),
      written: devices.reduce((n, d) => n + d.written.length, 0), acknowledged: acknowledged.length, acknowledgedDuringFaults, lost, duplicated,
      resets: devices.reduce((n, d) => n + d.resets, 0), disagreeing, convergedMs,
      connections: traffic.connections, cut: traffic.cut, stalled: traffic.stalled, refusals: traffic.refusals,
      heapBeforeMiB: MiB(heapBefore), heapAfterMiB: MiB(heapAfter), rssBeforeMiB: MiB(rssBefore), rssAfterMiB: MiB(rssAfter),
    };
  } finally {
    for (const device of devices) device.kill();
    await proxy?.close();
    await runtime.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
