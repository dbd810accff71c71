// `asl serve --trust-proxy ADDRESS` behind a reverse proxy: X-Forwarded-Proto, -Host and -For are believed
// only from the proxy's address, the forwarded host still passes the Host check, and a request a proxy
// forwards for another machine never counts as local for the Admin API. Then the README's recipe for
// real: Debian's nginx terminating TLS with the test's self-signed certificate in front of the runtime.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type WebSocket from 'ws';
import { connectRawSync } from '../helpers/realm-raw-client';
import { nginxUnavailable, proxyServerBlock, startNginx, type RunningNginx } from '../helpers/nginx';
import { httpsRequest, makeCertificate, opensslAvailable, toLoopback, type MadeCertificate } from '../helpers/tls';
import { CLI, copyApp, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

const NAME = 'sync.test';
const json = { 'content-type': 'application/json' };
const adminLogin = '/api/admin/v3.0/auth/providers/mongodb-cloud/login';

async function adminKeys(served: ServedDist): Promise<string> {
  const deadline = Date.now() + 20_000;
  while (!/admin private key: \S+/.test(served.stdout())) {
    if (Date.now() > deadline) throw new Error(`no admin key pair on stdout: ${served.stdout()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const out = served.stdout();
  return JSON.stringify({ username: /admin public key: (\S+)/.exec(out)![1], apiKey: /admin private key: (\S+)/.exec(out)![1] });
}

async function location(served: ServedDist, headers: Record<string, string>): Promise<{ status: number; body: Record<string, string> }> {
  const res = await fetch(`${served.app}/location`, { headers });
  return { status: res.status, body: await res.json() as Record<string, string> };
}

async function adminStatus(served: ServedDist, headers: Record<string, string>): Promise<number> {
  const res = await fetch(`${served.url}${adminLogin}`, { method: 'POST', headers: { ...json, ...headers }, body: await adminKeys(served) });
  await res.arrayBuffer();
  return res.status;
}

function serveUsage(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const appDir = copyApp();
  const child = spawn(process.execPath, [CLI, 'serve', appDir, '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve) => child.on('exit', (code) => { fs.rmSync(appDir, { recursive: true, force: true }); resolve({ code, stderr }); }));
}

describe('forwarded headers without --trust-proxy', { timeout: 120_000 }, () => {
  let served: ServedDist;
  before(async () => { served = await serveDist(); await adminKeys(served); });
  after(() => served?.close());

  test('are ignored for the base URL: anyone could send them', async () => {
    const answer = await location(served, { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'attacker.example' });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.hostname, served.url);
  });

  test('make a loopback request a proxied one, which the Admin API refuses (a local proxy must not open it to the world)', async () => {
    assert.equal(await adminStatus(served, {}), 200);
    for (const header of [{ 'x-forwarded-for': '203.0.113.9' }, { forwarded: 'for=203.0.113.9' }, { 'x-real-ip': '203.0.113.9' }, { 'x-forwarded-for': '127.0.0.1' }] as Record<string, string>[]) {
      assert.equal(await adminStatus(served, header), 403, JSON.stringify(header));
    }
  });
});

describe('--trust-proxy 127.0.0.1', { timeout: 120_000 }, () => {
  let served: ServedDist;
  before(async () => { served = await serveDist({ args: ['--trust-proxy', '127.0.0.1', '--public-url', `https://${NAME}`] }); await adminKeys(served); });
  after(() => served?.close());

  test('the forwarded scheme and host form the base URL; without them the public URL', async () => {
    const forwarded = await location(served, { 'x-forwarded-proto': 'https', 'x-forwarded-host': `${NAME}:8443` });
    assert.deepEqual([forwarded.body.hostname, forwarded.body.ws_hostname], [`https://${NAME}:8443`, `wss://${NAME}:8443`]);
    const direct = await location(served, {});
    assert.equal(direct.body.hostname, `https://${NAME}`);
  });

  test('a forwarded host that is not the runtime\'s own is refused like a Host (421), for requests and upgrades', async () => {
    const answer = await location(served, { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'attacker.example' });
    assert.equal(answer.status, 421);
    assert.equal(answer.body.error_code, 'MisdirectedRequest');
    await assert.rejects(
      connectRawSync(`${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=x`, ['com.mongodb.realm-sync#14'], false, { headers: { 'x-forwarded-host': 'attacker.example' } }),
      (e: Error & { status?: number }) => e.status === 421,
    );
  });

  test('the Admin API sees the forwarded client: only a loopback one gets through', async () => {
    assert.equal(await adminStatus(served, {}), 200, 'the proxy\'s own request');
    assert.equal(await adminStatus(served, { 'x-forwarded-for': '127.0.0.1' }), 200);
    assert.equal(await adminStatus(served, { 'x-forwarded-for': '203.0.113.9' }), 403);
    // The proxy appends the address it saw: the last entry is the one to believe, earlier ones are the client's say.
    assert.equal(await adminStatus(served, { 'x-forwarded-for': '127.0.0.1, 203.0.113.9' }), 403);
    assert.equal(await adminStatus(served, { 'x-forwarded-for': 'not-an-address' }), 403);
  });
});

describe('--trust-proxy naming another address', { timeout: 120_000 }, () => {
  let served: ServedDist;
  before(async () => { served = await serveDist({ args: ['--trust-proxy', '192.0.2.1'] }); await adminKeys(served); });
  after(() => served?.close());

  test('headers from any other peer are not believed', async () => {
    const answer = await location(served, { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'attacker.example' });
    assert.equal(answer.body.hostname, served.url);
    assert.equal(await adminStatus(served, { 'x-forwarded-for': '127.0.0.1' }), 403);
  });
});

describe('usage errors of the network flags', { timeout: 60_000 }, () => {
  test('each names the flag and what it expects', async () => {
    const cases: [string[], RegExp][] = [
      [['--trust-proxy', 'proxy.example'], /--trust-proxy expects the proxy's IP address/],
      [['--public-url', 'sync.example.com'], /--public-url must be an absolute URL/],
      [['--public-url', 'ftp://sync.example.com'], /--public-url must be http:\/\/ or https:\/\//],
      [['--public-url', 'https://sync.example.com/app'], /no path, query or fragment/],
      [['--public-url', 'https://user:secret@sync.example.com'], /must not carry a user name or password/],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await serveUsage(args);
      assert.equal(code, 2, args.join(' '));
      assert.match(stderr, message);
      assert.doesNotMatch(stderr, /secret/, 'a password in a URL is not echoed');
    }
  });
});

const proxySkip = nginxUnavailable() ?? (opensslAvailable ? false : 'the openssl command is not installed');

describe('behind nginx terminating TLS (the README recipe)', { skip: proxySkip, timeout: 180_000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-proxy-'));
  let cert: MadeCertificate;
  let served: ServedDist;
  let nginx: RunningNginx;
  let front: string;
  before(async () => {
    cert = makeCertificate(dir, 'proxy', [NAME]);
    served = await serveDist({ args: ['--trust-proxy', '127.0.0.1', '--public-url', `https://${NAME}`] });
    nginx = await startNginx((port) => proxyServerBlock({ port, name: NAME, certFile: cert.certFile, keyFile: cert.keyFile, upstream: served.url }));
    front = `https://${NAME}:${nginx.port}`;
  });
  after(async () => {
    await nginx?.close();
    await served?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a client that trusts the certificate gets https and wss in the location answer', async () => {
    const answer = await httpsRequest(`${front}/api/client/v2.0/app/${served.appId}/location`, { ca: cert.pem, lookup: toLoopback });
    assert.equal(answer.status, 200, `${answer.text}\n${nginx.errors()}`);
    const body = JSON.parse(answer.text) as Record<string, string>;
    assert.deepEqual([body.hostname, body.ws_hostname], [front, `wss://${NAME}:${nginx.port}`]);
  });

  test('a client that does not trust it is refused', async () => {
    await assert.rejects(httpsRequest(`${front}/api/client/v2.0/app/${served.appId}/location`, { lookup: toLoopback }), (e: NodeJS.ErrnoException) => /SELF_SIGNED|UNABLE_TO_VERIFY|CERT/.test(String(e.code)));
  });

  test('login, GraphQL and a sync session over WSS pass through the proxy', async () => {
    const ada = await registerAndLogIn(served.app, 'ada-proxy@example.com', 'Passw0rd-proxy');
    const app = `${front}/api/client/v2.0/app/${served.appId}`;
    const login = await httpsRequest(`${app}/auth/providers/local-userpass/login`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'ada-proxy@example.com', password: 'Passw0rd-proxy' }), ca: cert.pem, lookup: toLoopback });
    assert.equal(login.status, 200, login.text);
    const token = (JSON.parse(login.text) as { access_token: string }).access_token;
    const inserted = await httpsRequest(`${app}/graphql`, {
      method: 'POST', ca: cert.pem, lookup: toLoopback, headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: 'mutation($p: String!) { insertOneTask(data: {_partition: $p, name: "through nginx", status: "open", isComplete: false}) { name } }', variables: { p: ada.user_id } }),
    });
    assert.deepEqual(JSON.parse(inserted.text), { data: { insertOneTask: { name: 'through nginx' } } });
    const client = await connectRawSync(`wss://${NAME}:${nginx.port}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${token}`, ['com.mongodb.realm-sync#14'], false, { ca: cert.pem, lookup: toLoopback } as WebSocket.ClientOptions);
    try {
      client.send({ type: 'bind', session: 1, serverPath: JSON.stringify(ada.user_id), signedUserToken: '', needClientFileIdent: true, isSubserver: false });
      const ident = await client.next((m) => m.type === 'ident' || m.type === 'error' || m.type === 'json_error');
      assert.equal(ident.type, 'ident');
      if (ident.type !== 'ident') return;
      client.send({ type: 'ident', session: 1, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n });
      const download = await client.next((m) => m.type === 'download');
      assert.ok(download.type === 'download' && download.changesets.length > 0);
    } finally {
      client.close();
    }
  });

  test('a Host the runtime does not own is refused through the proxy too', async () => {
    const answer = await httpsRequest(`${front}/api/client/v2.0/app/${served.appId}/location`, { ca: cert.pem, lookup: toLoopback, servername: NAME, headers: { host: 'attacker.example' } });
    assert.equal(answer.status, 421);
  });
});
