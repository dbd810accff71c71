// SIGTERM drains `dist/cli.js serve` as an operator's orchestrator expects: the port is released (new
// connections refused), a live Realm sync session gets the protocol's try-again error and its connection
// closes, a request in flight (a function waiting on the test) still gets its answer, then the process exits 0.
// The function waits on an HTTP server of the test, so the order of events is the test's, not the clock's.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import os from 'node:os';
import { probeAvailable, registerUser, startProbe } from '../helpers/realm-probe';
import { connectRawSync, type RawSyncClient } from '../helpers/realm-raw-client';
import { copyApp, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

const PROTOCOL = 'com.mongodb.realm-sync#14';

/** A function that answers what the test's server answers, once the test lets it. */
const WAIT_FOR = `exports = async (url) => {
  console.log('waiting');
  const response = await context.http.get({ url });
  return response.body.text();
};`;

function appWithWaitingFunction(): string {
  const appDir = copyApp();
  const configFile = path.join(appDir, 'functions', 'config.json');
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as unknown[];
  fs.writeFileSync(configFile, JSON.stringify([...config, { name: 'waitFor', private: false }], null, 2));
  fs.writeFileSync(path.join(appDir, 'functions', 'waitFor.js'), WAIT_FOR);
  return appDir;
}

/** A port free a moment ago, to restart the runtime on the same address. */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Whether a new TCP connection to the port is refused (the listening socket is closed). */
function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(false); });
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

describe('SIGTERM drains the runtime', { timeout: 120_000 }, () => {
  let served: ServedDist;
  let appDir: string;
  /** The test's server: holds each request until `release` answers it. */
  let gate: http.Server;
  let release: (() => void) | undefined;
  let arrivedAtGate!: () => void;
  const arrived = new Promise<void>((resolve) => { arrivedAtGate = resolve; });

  before(async () => {
    gate = http.createServer((_req, res) => {
      release = () => res.end('finished after the signal');
      arrivedAtGate();
    });
    await new Promise<void>((resolve) => gate.listen(0, '127.0.0.1', resolve));
    appDir = appWithWaitingFunction();
    served = await serveDist({ appDir, args: ['--no-watch', '--drain-timeout', '60'] });
  });

  after(async () => {
    await served?.close();
    gate?.close();
    if (appDir) fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('in-flight request finished, sync told to try again, new connections refused, exit 0', async () => {
    const ada = await registerAndLogIn(served.app, 'ada@example.com', 'ada-Passw0rd');
    const port = Number(new URL(served.url).port);
    const sync: RawSyncClient = await connectRawSync(`${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${ada.access_token}`, [PROTOCOL], false);
    sync.send({ type: 'bind', session: 1, serverPath: JSON.stringify(ada.user_id), signedUserToken: '', needClientFileIdent: true, isSubserver: false });
    const ident = await sync.next((m) => m.type === 'ident' || m.type === 'json_error');
    assert.equal(ident.type, 'ident');
    if (ident.type !== 'ident') return;
    sync.send({ type: 'ident', session: 1, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n });
    await sync.next((m) => m.type === 'download');

    const gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}/`;
    const inFlight = fetch(`${served.app}/functions/call`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${ada.access_token}` },
      body: JSON.stringify({ name: 'waitFor', arguments: [gateUrl] }),
    });
    await arrived;
    const exited = new Promise<number | null>((resolve) => served.child.once('exit', (code) => resolve(code)));
    served.child.kill('SIGTERM');

    // The session ends with a try-again error (201, Transient), then the connection closes as going away.
    const error = await sync.next((m) => m.type === 'json_error' || m.type === 'error', 20_000);
    assert.equal(error.type, 'json_error');
    if (error.type !== 'json_error') return;
    assert.equal(error.session, 1);
    assert.equal(error.errorCode, 201);
    const body = error.body as { tryAgain: boolean; action: string; shouldClientReset: boolean; message: string };
    assert.equal(body.tryAgain, true);
    assert.equal(body.action, 'Transient');
    assert.equal(body.shouldClientReset, false);
    assert.match(body.message, /shutting down; try again later/);
    assert.equal(await sync.closed, 1001);

    // New connections are refused while the function still waits (the process is still running).
    assert.equal(await connectionRefused(port), true);
    assert.equal(served.child.exitCode, null, 'the runtime waits for the request in flight');

    release!();
    const answer = await inFlight;
    assert.equal(answer.status, 200);
    assert.equal(await answer.text(), '"finished after the signal"');
    assert.equal(answer.headers.get('connection'), 'close');

    const code = await Promise.race([exited, new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 30_000).unref())]);
    assert.equal(code, 0);
    assert.match(served.stderr(), /stopped \(1 sync connection told to try again\)/);
  });
});

describe('realm-core\'s client across a graceful stop', { skip: probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine', timeout: 180_000 }, () => {
  test('the try-again error is not fatal: the client keeps its realm, reconnects to the restarted runtime and uploads, with no reset', async () => {
    const appDir = copyApp();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-drain-data-'));
    const port = await freePort();
    const serve = () => serveDist({ appDir, dataDir, args: ['--no-watch', '--port', String(port)] });
    let served = await serve();
    try {
      const adaId = await registerUser(served.app, 'ada@example.com', 'ada-Passw0rd');
      const task = { _id: { $oid: '65a000000000000000000001' }, _partition: adaId, name: 'written across the restart', status: 'open', isComplete: false, tags: [] };
      const probe = startProbe({
        baseUrl: served.url, appId: served.appId, credentials: { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' }, partition: adaId,
        schema: [{ name: 'Task', primaryKey: '_id', properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool', priority: 'int?', tags: 'string[]' } }],
        steps: [{ waitDownload: true }, { sleepMs: 1000 }, { write: { op: 'create', type: 'Task', value: task } }, { waitUpload: true, timeoutMs: 90_000 }],
      });
      await probe.waitFor((l) => l.event === 'download_complete', 60_000);
      assert.equal(await served.close(), 0);
      const error = await probe.waitFor((l) => l.event === 'protocol_error');
      assert.equal(error.rawErrorCode, 201);
      assert.equal(error.action, 'Transient');
      assert.equal(error.isFatal, false);
      served = await serve();
      const run = await probe.done;
      assert.ok(run.events('upload_complete').length === 1, JSON.stringify(run.result));
      // The only failure the probe reports is that it was sent an error message; its error handler never ran.
      assert.equal(run.result.syncErrors, 0);
      assert.equal(run.result.clientReset, false);
      assert.equal(run.result.unsyncedChangesets, 0);
      const login = await (await fetch(`${served.app}/auth/providers/local-userpass/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ada@example.com', password: 'ada-Passw0rd' }) })).json() as { access_token: string };
      const found = await fetch(`${served.app}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${login.access_token}` }, body: JSON.stringify({ query: '{ task(query: {_id: "65a000000000000000000001"}) { name } }' }) });
      assert.deepEqual(await found.json(), { data: { task: { name: 'written across the restart' } } });
    } finally {
      await served.close();
      fs.rmSync(appDir, { recursive: true, force: true });
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
