// Slow and stalled clients cost bounded memory (issue: faults on the wire, item 5): on one partition with a
// large bootstrap, many client files connect, bind and identify, then stop reading their sockets (before
// the bootstrap arrives), while a writer's changesets fan out to all of them. The runtime's RSS is sampled
// throughout; an innocent watcher's write → DOWNLOAD latency is measured before (quiet) and beside the
// stalled clients; past the runtime's stall limit the stalled clients read again and show what the runtime
// did with them (an ERROR queued behind what they never read, a closed connection).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ObjectId } from 'bson';
import WebSocket from 'ws';
import { registerAndLogin } from '../../bench/fixtures/load';
import { RawSyncClient, residentBytes } from '../../bench/fixtures/realm-sync-peers';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { encodeClientMessage } from '../../runtime/sync/wire/messages';
import { RestartableRuntime, writeApp, PARTITION } from './sync-fault-world';

export interface StallFigures {
  stalled: number;
  bootstrapMiB: number;
  fanOutMiB: number;
  rssBeforeMiB: number;
  rssPeakMiB: number;
  /** RSS once the fan-out was sent, the stalled clients still connected. */
  rssStalledMiB: number;
  heapBeforeMiB: number;
  externalBeforeMiB: number;
  /** The machine's TCP buffers at their peak (all sockets: what the kernel holds for the stalled readers). */
  tcpPeakMiB: number;
  /** The runtime's heap and external memory after a full GC, past the stall limit. */
  heapAfterMiB: number;
  externalAfterMiB: number;
  quietP95Ms: number;
  stalledP95Ms: number;
  /** Stalled clients that, reading again, found an ERROR message from the runtime (queued behind what they had not read), and saw their connection closed. */
  /** When the last stalled client was disconnected (ms after the stall began), and how many were still connected at the deadline. */
  closedAfterMs: number;
  stillOpen: number;
  /** What a stalled client received on average once it read again. */
  receivedMiB: number;
  toldError: number;
  closed: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MiB = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;
const PROTOCOL = 'com.mongodb.realm-sync#14';

/** Text that does not compress (the protocol deflates bodies over 1 KiB). */
const noise = (length: number) => randomBytes(Math.ceil(length * 0.75)).toString('base64').slice(0, length);

/** Memory of all TCP sockets on the machine (/proc/net/sockstat counts pages). */
function tcpMemoryBytes(): number {
  const pages = /TCP: .* mem (\d+)/.exec(fs.readFileSync('/proc/net/sockstat', 'utf8'))?.[1];
  return Number(pages ?? 0) * 4096;
}

/** Established TCP connections whose local port is `port` (the runtime's side of its clients' connections). */
function establishedOn(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').filter((line) => {
    const fields = line.trim().split(/\s+/);
    return fields[1]?.endsWith(`:${hex}`) && fields[3] === '01';
  }).length;
}

function p95(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(0.95 * sorted.length) - 1)] ?? 0;
}

const rename = (id: ObjectId, name: string): Instruction[] => [{ type: 'Update', table: 'Task', object: { type: 'objectId', value: id }, field: 'name', path: [], value: { type: 'string', value: name }, isDefault: false, priorSize: 0 }];

/** A client file that binds, identifies, then reads nothing more; `wake` reads again and reports what arrived. */
async function stalledClient(url: string, partition: string): Promise<{ wake(): Promise<{ error: boolean; closed: boolean; received: number }> }> {
  const ws = new WebSocket(url, [PROTOCOL], { perMessageDeflate: false });
  let error = false;
  let closed = false;
  let received = 0;
  ws.on('error', () => undefined);
  ws.on('close', () => { closed = true; });
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });
  const send = (m: Parameters<typeof encodeClientMessage>[0]) => ws.send(encodeClientMessage(m, 14));
  const ident = new Promise<string[]>((resolve) => ws.on('message', (data: Buffer) => {
    const head = data.subarray(0, Math.max(0, data.indexOf(10)) || data.length).toString('latin1').split(' ');
    received += data.length;
    if (head[0] === 'ident') resolve(head);
    if (head[0] === 'error' || head[0] === 'json_error') error = true;
  }));
  send({ type: 'bind', session: 1, serverPath: partition, signedUserToken: '', needClientFileIdent: true, isSubserver: false });
  const head = await ident;
  // Stops reading now: the IDENT below asks for the bootstrap, which the client never takes in.
  ws.pause();
  send({ type: 'ident', session: 1, clientFileIdent: BigInt(head[2]!), clientFileIdentSalt: BigInt(head[3]!), downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n });
  return {
    async wake() {
      ws.resume();
      const deadline = Date.now() + 10_000;
      while (!closed && Date.now() < deadline) await sleep(100);
      ws.terminate();
      return { error, closed, received };
    },
  };
}

export async function stalledClients(options: { stalled: number; bootstrapObjects: number; fanOutWrites: number; probeWrites: number; deadlineMs: number }): Promise<StallFigures> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-stall-'));
  const appDir = path.join(root, 'app');
  writeApp(appDir, PARTITION);
  const runtime = new RestartableRuntime(appDir, path.join(root, 'data'));
  const open: RawSyncClient[] = [];
  try {
    const rt = await runtime.start();
    const login = await registerAndLogin(rt.appUrl, 'stall@example.com', 'stall-Passw0rd');
    const origin = new URL(rt.appUrl).origin;
    const url = `${origin.replace('http', 'ws')}/api/client/v2.0/app/${rt.appUrl.slice(rt.appUrl.lastIndexOf('/') + 1)}/realm-sync?baas_at=${login.access_token}`;
    const partition = JSON.stringify(login.user_id);
    const writer = await RawSyncClient.connect(url);
    open.push(writer);
    await writer.bindAndCatchUp(login.user_id);
    // The large bootstrap: objects with 10 KB names, in changesets of 20.
    const ids = Array.from({ length: options.bootstrapObjects }, () => new ObjectId());
    for (let i = 0; i < ids.length; i += 20) {
      const instructions = ids.slice(i, i + 20).flatMap((id) => PARTITION.instructions(id.toHexString(), login.user_id, noise(10_000)));
      await writer.upload(instructions).acknowledged;
    }
    const watcher = await RawSyncClient.connect(url);
    open.push(watcher);
    await watcher.bindAndCatchUp(login.user_id);
    const seen: { at: number; version: bigint }[] = [];
    watcher.onArrival = (a) => { if (a.head[0] === 'download') seen.push({ at: a.at, version: BigInt(a.head[2]!) }); };
    const prober = await RawSyncClient.connect(url);
    open.push(prober);
    await prober.bindAndCatchUp(login.user_id);
    // One rename by the prober, until the watcher has its server version (learnt from the prober's acknowledgement).
    const latency = async (writes: number): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < writes; i++) {
        const { sentAt, acknowledged } = prober.upload(rename(ids[i % ids.length]!, `probe ${i}`));
        const version = BigInt((await acknowledged).head[2]!);
        const deadline = Date.now() + 30_000;
        let arrival;
        while (!(arrival = seen.find((s) => s.version >= version)) && Date.now() < deadline) await sleep(2);
        out.push(arrival ? arrival.at - sentAt : 30_000);
        await sleep(20);
      }
      return out;
    };
    const quiet = await latency(options.probeWrites);
    const heldBefore = await rt.evaluateAfterGc<{ heapUsed: number; external: number }>('(({ heapUsed, external }) => ({ heapUsed, external }))(process.memoryUsage())');
    const rssBefore = residentBytes(rt.pid);
    let rssPeak = rssBefore;
    let tcpPeak = 0;
    const sampler = setInterval(() => {
      try { rssPeak = Math.max(rssPeak, residentBytes(rt.pid)); } catch { /* exited */ }
      tcpPeak = Math.max(tcpPeak, tcpMemoryBytes());
    }, 100);

    const stalled = [];
    for (let i = 0; i < options.stalled; i += 50) {
      stalled.push(...await Promise.all(Array.from({ length: Math.min(50, options.stalled - i) }, () => stalledClient(url, partition))));
    }
    const stallStart = Date.now();
    // The fan-out: 16 KB changesets to every stalled client, twenty at a time.
    for (let i = 0; i < options.fanOutWrites; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, options.fanOutWrites - i) }, (_, k) => writer.upload(rename(ids[(i + k) % ids.length]!, noise(16_000))).acknowledged));
    }
    // The innocent watcher beside the stalled clients (the fan-out's own work done), before the runtime gives up on them.
    await sleep(1000);
    const during = await latency(options.probeWrites);
    const heldWhileStalled = residentBytes(rt.pid);
    // The runtime gives up on each stalled client once it took in nothing for its limit (15 s): until only
    // the writer, the watcher and the prober are connected, or the deadline.
    const port = runtime.portNumber;
    while (establishedOn(port) > 3 && Date.now() - stallStart < options.deadlineMs) await sleep(250);
    const closedAfterMs = Date.now() - stallStart;
    const stillOpen = Math.max(0, establishedOn(port) - 3);
    clearInterval(sampler);
    const heldAfter = await rt.evaluateAfterGc<{ heapUsed: number; external: number }>('(({ heapUsed, external }) => ({ heapUsed, external }))(process.memoryUsage())');
    const woken = await Promise.all(stalled.map((s) => s.wake()));
    return {
      stalled: stalled.length, bootstrapMiB: MiB(options.bootstrapObjects * 10_000), fanOutMiB: MiB(options.fanOutWrites * 16_000),
      rssBeforeMiB: MiB(rssBefore), rssPeakMiB: MiB(rssPeak), quietP95Ms: Math.round(p95(quiet) * 10) / 10, stalledP95Ms: Math.round(p95(during) * 10) / 10,
      rssStalledMiB: MiB(heldWhileStalled), heapBeforeMiB: MiB(heldBefore.heapUsed), externalBeforeMiB: MiB(heldBefore.external), tcpPeakMiB: MiB(tcpPeak), heapAfterMiB: MiB(heldAfter.heapUsed), externalAfterMiB: MiB(heldAfter.external),
      closedAfterMs, stillOpen,
      receivedMiB: MiB(woken.reduce((n, w) => n + w.received, 0) / Math.max(1, woken.length)),
      toldError: woken.filter((w) => w.error).length, closed: woken.filter((w) => w.closed).length,
    };
  } finally {
    await Promise.all(open.map((c) => c.close()));
    await runtime.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
