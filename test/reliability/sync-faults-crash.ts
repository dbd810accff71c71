// A crash under load (issue: faults on the wire, item 3): 100 raw protocol clients (10 users × 10 client
// files, one partition or one flexible subscription per user) upload one new object per changeset, without
// pause, online or not, while the runtime is killed with kill -9 and restarted on the same data folder,
// round after round; a few devices running realm-core's own client sync beside them. Afterwards every
// client has uploaded everything and is acknowledged; each acknowledged object is in the documents exactly
// once, each changeset in the history at most once, and the history creates the same objects the
// documents hold.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { registerAndLogin } from '../../bench/fixtures/load';
import { ProbeDevice } from './sync-probe-device';
import { ResumingClient } from './sync-resuming-client';
import { documentIds, graphqlIds as readGraphqlIds, readHistory, repeated, RestartableRuntime, writeApp, type ModeSpec } from './sync-fault-world';

export interface CrashFigures {
  mode: string;
  clients: number;
  probeDevices: number;
  rounds: number;
  changesets: number;
  /** Changesets acknowledged before the last crash (the ones a crash could lose). */
  acknowledgedBeforeACrash: number;
  acknowledged: number;
  unacknowledgedAtEnd: number;
  lost: number;
  duplicated: number;
  /** ERROR messages to raw clients and client resets of the devices. */
  resets: number;
  errorSamples: string[];
  /** Objects the documents hold and the history does not create, or the other way round. */
  historyDisagrees: number;
  restartMs: number[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rand = (lo: number, hi: number) => lo + Math.random() * (hi - lo);

export async function crashUnderLoad(spec: ModeSpec, options: { users: number; clientsPerUser: number; probeDevices: number; rounds: number; writeGapMs: number }): Promise<CrashFigures> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `asl-crash-${spec.mode}-`));
  const appDir = path.join(root, 'app');
  writeApp(appDir, spec);
  const runtime = new RestartableRuntime(appDir, path.join(root, 'data'));
  const clients: { client: ResumingClient; ids: Map<bigint, string>; userId: string }[] = [];
  const devices: ProbeDevice[] = [];
  let writing = true;
  try {
    const rt = await runtime.start();
    const origin = new URL(rt.appUrl).origin;
    const appId = rt.appUrl.slice(rt.appUrl.lastIndexOf('/') + 1);
    const users = [];
    for (let u = 0; u < options.users; u++) {
      const account = { email: `crash-${spec.mode}-${u}@example.com`, password: 'crash-Passw0rd' };
      users.push({ ...account, login: await registerAndLogin(rt.appUrl, account.email, account.password) });
    }
    const modeHex = spec.mode === 'partition' ? 'a1' : 'b1';
    for (const [u, user] of users.entries()) {
      const url = `${origin.replace('http', 'ws')}/api/client/v2.0/app/${appId}/realm-sync?baas_at=${user.login.access_token}`;
      for (let c = 0; c < options.clientsPerUser; c++) {
        const client = new ResumingClient(spec.mode === 'partition' ? { url, partition: JSON.stringify(user.login.user_id) } : { url, queries: { [spec.collection]: `owner_id == "${user.login.user_id}"` } });
        clients.push({ client, ids: new Map(), userId: user.login.user_id });
      }
      if (u < options.probeDevices) devices.push(new ProbeDevice(path.join(root, 'devices', String(u)), spec, { ...user, userId: user.login.user_id }, `${modeHex}ff${u.toString(16).padStart(2, '0')}`));
    }
    for (const entry of clients) entry.client.start();
    // Every client writes on its own clock, whether the runtime is up or not.
    const writers = clients.map(async (entry, index) => {
      let seq = 0;
      await sleep(rand(0, options.writeGapMs));
      while (writing) {
        const id = `${modeHex}${index.toString(16).padStart(4, '0')}${(++seq).toString(16).padStart(18, '0')}`;
        entry.ids.set(entry.client.write(spec.instructions(id, entry.userId, `client ${index} #${seq}`)), id);
        await sleep(rand(options.writeGapMs / 2, options.writeGapMs * 1.5));
      }
    });
    const baseUrl = () => new URL(runtime.current?.appUrl ?? rt.appUrl).origin;
    const deviceLoops = devices.map(async (device) => {
      while (writing) {
        await device.run({ baseUrl: baseUrl(), appId, writes: 2, timeoutMs: 4000, killAfterMs: 15_000 });
        await sleep(200);
      }
    });

    let acknowledgedBeforeACrash = 0;
    const restartMs: number[] = [];
    for (let round = 0; round < options.rounds; round++) {
      await sleep(rand(1500, 3000));
      acknowledgedBeforeACrash = clients.reduce((n, e) => n + Number(e.client.acknowledged > 1n ? e.client.acknowledged - 1n : 0n), 0);
      await runtime.kill();
      await sleep(rand(100, 600));
      const begin = Date.now();
      await runtime.start();
      restartMs.push(Date.now() - begin);
    }
    await sleep(1500);
    writing = false;
    await Promise.all([...writers, ...deviceLoops]);
    // Everything uploads once the crashes are over; the devices sync once more.
    const settled = await Promise.all(clients.map((e) => e.client.settled(120_000)));
    await Promise.all(devices.map((d) => d.run({ baseUrl: baseUrl(), appId, writes: 0, timeoutMs: 20_000 })));
    await Promise.all(clients.map((e) => e.client.stop()));

    const now = runtime.current!;
    const stored: string[] = [];
    const graphql: string[] = [];
    for (const user of users) {
      stored.push(...await documentIds(now.appUrl, user.login.access_token, spec, user.login.user_id));
      graphql.push(...await readGraphqlIds(now.appUrl, user.login.access_token, spec, user.login.user_id));
    }
    await runtime.stop();
    const history = await readHistory(runtime.dataDir, spec.collection);

    const store = new Set(stored);
    const acknowledgedIds: string[] = [];
    for (const entry of clients) for (const [version, id] of entry.ids) if (version <= entry.client.acknowledged) acknowledgedIds.push(id);
    acknowledgedIds.push(...devices.flatMap((d) => d.acknowledged));
    const lost = acknowledgedIds.filter((id) => !store.has(id)).length;
    const duplicated = repeated(stored) + repeated(graphql) + [...history.creates.values()].filter((n) => n > 1).length + history.doubledChangesets;
    const createdInHistory = new Set(history.creates.keys());
    const graphqlIds = new Set(graphql);
    const historyDisagrees = [...store].filter((id) => !createdInHistory.has(id)).length + [...createdInHistory].filter((id) => !store.has(id)).length
      + [...store].filter((id) => !graphqlIds.has(id)).length;
    const errors = clients.flatMap((e) => e.client.errors);
    return {
      mode: spec.mode, clients: clients.length, probeDevices: devices.length, rounds: options.rounds,
      changesets: clients.reduce((n, e) => n + e.ids.size, 0), acknowledgedBeforeACrash, acknowledged: acknowledgedIds.length,
      unacknowledgedAtEnd: settled.filter((s) => !s).length + clients.reduce((n, e) => n + e.client.unacknowledged, 0),
      lost, duplicated, resets: errors.length + devices.reduce((n, d) => n + d.resets, 0), errorSamples: errors.slice(0, 3), historyDisagrees, restartMs,
    };
  } finally {
    writing = false;
    for (const device of devices) device.kill();
    await Promise.all(clients.map((e) => e.client.stop()));
    await runtime.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
