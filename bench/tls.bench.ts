// What TLS costs (`asl serve --tls-cert --tls-key`), each figure against the same runtime without TLS in
// the same run, on copies of the same data, a self-signed certificate made with openssl for the run:
//   1. GraphQL throughput (the graphql benchmark's query, 64 keep-alive connections) over HTTPS ÷ over HTTP,
//      median of per-round ratios, rounds alternating which goes first                         goal ≥ 0.8×
//   2. a write uploaded by sync client A → its DOWNLOAD at client B (raw protocol clients in this process,
//      fixtures/realm-sync-peers.ts), p95 over WSS ÷ over WS, the two runtimes' writes alternating  goal ≤ 1.2×
// Run: node --import tsx bench/tls.bench.ts [--seconds 5] [--rounds 3] [--writes 200]
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ObjectId } from 'bson';
import type { Instruction } from '../runtime/sync/wire/instructions';
import { createWorkspace, GENERATED_QUERY, ownerEmail, PASSWORD, PER_OWNER } from './fixtures/app';
import {
  describeLoad, describeRounds, goalLine, measureInterleaved, option, post, registerAndLogin, startServer, throughputRatio,
  type ServerProcess,
} from './fixtures/load';
import { RawSyncClient } from './fixtures/realm-sync-peers';

const REPO_ROOT = path.resolve(__dirname, '..');
const SECONDS = option('seconds', 5);
const ROUNDS = option('rounds', 3);
const WARMUP_SECONDS = option('warmup', 2);
const CONNECTIONS = option('connections', 64);
const WRITES = option('writes', 200);
const WARMUP_WRITES = 5;
const WRITE_GAP_MS = 10;

/** A self-signed P-256 certificate for 127.0.0.1 and localhost, made with the openssl CLI (30 days: no expiry warning in the log). */
function makeCertificate(dir: string): { certFile: string; keyFile: string; pem: string } {
  const certFile = path.join(dir, 'bench.crt');
  const keyFile = path.join(dir, 'bench.key');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '30',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', keyFile, '-out', certFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  return { certFile, keyFile, pem: fs.readFileSync(certFile, 'utf8') };
}

/** A JSON POST over HTTPS trusting only `ca` (fetch cannot be given a CA). */
function postTls(url: string, body: unknown, ca: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: 'POST', ca, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function logIn(appUrl: string, email: string, password: string, ca?: string): Promise<{ access_token: string; user_id: string }> {
  if (!ca) return registerAndLogin(appUrl, email, password);
  const registered = await postTls(`${appUrl}/auth/providers/local-userpass/register`, { email, password }, ca);
  if (registered.status !== 201) throw new Error(`register failed: ${registered.status} ${registered.text}`);
  const login = await postTls(`${appUrl}/auth/providers/local-userpass/login`, { username: email, password }, ca);
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  return JSON.parse(login.text) as { access_token: string; user_id: string };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function renameTask(id: ObjectId, name: string): Instruction[] {
  return [{ type: 'Update', table: 'Task', object: { type: 'objectId', value: id }, field: 'name', path: [], value: { type: 'string', value: name }, isDefault: false, priorSize: 0 }];
}

async function graphqlThroughput(tlsArgs: string[], ca: string): Promise<void> {
  const workspace = await createWorkspace();
  const servers: ServerProcess[] = [];
  try {
    const plain = await startServer({ kind: 'runtime', appDir: workspace.appDir, dataDir: workspace.copyData('http') });
    servers.push(plain);
    const secure = await startServer({ kind: 'runtime', appDir: workspace.appDir, dataDir: workspace.copyData('https'), args: tlsArgs });
    servers.push(secure);
    assert.match(secure.graphqlUrl, /^https:/);
    const owner = ownerEmail(7);
    const plainToken = (await logIn(plain.appUrl!, owner, PASSWORD)).access_token;
    const secureToken = (await logIn(secure.appUrl!, owner, PASSWORD, ca)).access_token;
    const query = { query: GENERATED_QUERY, variables: { owner } };
    const plainAnswer = await post(plain.graphqlUrl, query, { authorization: `Bearer ${plainToken}` });
    const secureAnswer = await postTls(secure.graphqlUrl, query, ca, { authorization: `Bearer ${secureToken}` });
    assert.equal((JSON.parse(plainAnswer.text) as { data: { items: unknown[] } }).data.items.length, PER_OWNER);
    assert.equal(secureAnswer.text, plainAnswer.text, 'both runtimes answer the same');
    const body = JSON.stringify(query);
    console.log(`tls bench 1: GraphQL, ${CONNECTIONS} keep-alive connections, ${ROUNDS} rounds × ${SECONDS} s after ${WARMUP_SECONDS} s warm-up; autocannon in this process`);
    const results = await measureInterleaved([
      { name: 'http', load: { url: plain.graphqlUrl, connections: CONNECTIONS, headers: { authorization: `Bearer ${plainToken}` }, body, expectBody: plainAnswer.text } },
      { name: 'https', load: { url: secure.graphqlUrl, connections: CONNECTIONS, headers: { authorization: `Bearer ${secureToken}` }, body, expectBody: secureAnswer.text } },
    ], { warmupSeconds: WARMUP_SECONDS, seconds: SECONDS, rounds: ROUNDS });
    console.log(describeLoad('GraphQL over HTTP', results.get('http')!.total));
    console.log(describeLoad('GraphQL over HTTPS', results.get('https')!.total));
    const ratio = throughputRatio(results.get('https')!, results.get('http')!);
    console.log(describeRounds('  per-round ratios', ratio.rounds));
    console.log(goalLine('GraphQL throughput over HTTPS ÷ over HTTP', ratio.ratio, '>=', 0.8));
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    workspace.remove();
  }
}

interface SyncSide { name: 'ws' | 'wss'; writer: RawSyncClient; watcher: RawSyncClient; latencies: number[] }

async function syncLatency(tlsArgs: string[], ca: string): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-tls-sync-'));
  const servers: ServerProcess[] = [];
  const clients: RawSyncClient[] = [];
  try {
    const appDir = path.join(root, 'app');
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    const task = new ObjectId();
    const sides: SyncSide[] = [];
    for (const name of ['ws', 'wss'] as const) {
      const secure = name === 'wss';
      const server = await startServer({ kind: 'runtime', appDir, dataDir: path.join(root, `data-${name}`), args: secure ? tlsArgs : [] });
      servers.push(server);
      const appUrl = server.appUrl!;
      const bob = await logIn(appUrl, 'bob@example.com', 'bob-Passw0rd', secure ? ca : undefined);
      const insert = { query: 'mutation($id: ObjectId!, $p: String!) { insertOneTask(data: {_id: $id, _partition: $p, name: "renamed by the benchmark", status: "open", isComplete: false}) { _id } }', variables: { id: task.toHexString(), p: bob.user_id } };
      const inserted = secure ? await postTls(`${appUrl}/graphql`, insert, ca, { authorization: `Bearer ${bob.access_token}` }) : await post(`${appUrl}/graphql`, insert, { authorization: `Bearer ${bob.access_token}` });
      assert.equal(inserted.status, 200, inserted.text);
      const syncUrl = `${appUrl.replace(/^http/, 'ws')}/realm-sync?baas_at=${bob.access_token}`;
      // One after the other: clients that BIND at the same moment may share a client file ident (see realm-sync.bench.ts).
      const writer = await RawSyncClient.connect(syncUrl, { ca });
      clients.push(writer);
      await writer.bindAndCatchUp(bob.user_id);
      const watcher = await RawSyncClient.connect(syncUrl, { ca });
      clients.push(watcher);
      await watcher.bindAndCatchUp(bob.user_id);
      sides.push({ name, writer, watcher, latencies: [] });
    }
    console.log(`tls bench 2: sync write A → DOWNLOAD at B, ${WRITES} writes per runtime, alternating write by write`);
    for (let i = 0; i < WRITES + WARMUP_WRITES; i++) {
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        const arrival = side.watcher.waitFor((a) => a.head[0] === 'download' && a.hasBody, 10_000);
        const { sentAt, acknowledged } = side.writer.upload(renameTask(task, `write ${i}`));
        const [received] = await Promise.all([arrival, acknowledged]);
        if (i >= WARMUP_WRITES) side.latencies.push(received.at - sentAt);
        await sleep(WRITE_GAP_MS);
      }
    }
    for (const side of sides) {
      console.log(`A → B over ${side.name.toUpperCase().padEnd(3)}  p50 ${percentile(side.latencies, 50).toFixed(2)} ms  p95 ${percentile(side.latencies, 95).toFixed(2)} ms  max ${Math.max(...side.latencies).toFixed(2)} ms  (${side.latencies.length} writes)`);
    }
    const [ws, wss] = sides;
    console.log(goalLine('sync write A → DOWNLOAD at B, p95 over WSS ÷ over WS', percentile(wss!.latencies, 95) / percentile(ws!.latencies, 95), '<=', 1.2));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(servers.map((s) => s.stop()));
    fs.rmSync(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-tls-'));
  try {
    let cert: ReturnType<typeof makeCertificate>;
    try { cert = makeCertificate(certDir); } catch {
      console.log('skipped: the openssl command is not installed; no TLS figures measured');
      return;
    }
    const tlsArgs = ['--tls-cert', cert.certFile, '--tls-key', cert.keyFile];
    await graphqlThroughput(tlsArgs, cert.pem);
    await syncLatency(tlsArgs, cert.pem);
  } finally {
    fs.rmSync(certDir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
