// `asl serve --tls-cert --tls-key`: HTTPS and WSS on one port with a self-signed certificate the test
// makes. A client that trusts it gets the API and Realm sync (over WSS with our own protocol client: the
// realm-sync-probe speaks plain HTTP only); one that does not is refused at the handshake; a renewed pair
// is served without a restart, a broken renewal keeps the old one, and a bad pair at start is a clear error.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectRawSync } from '../helpers/realm-raw-client';
import { httpsRequest, makeCertificate, opensslAvailable, type MadeCertificate } from '../helpers/tls';
import { CLI, copyApp, serveDist, type ServedDist } from './fixtures/serve';

const skip = opensslAvailable ? false : 'the openssl command (Debian package openssl) is not installed; the test makes its certificates with it';

/** Registers and logs in over HTTPS, trusting `ca`. */
async function logIn(app: string, ca: string, email: string): Promise<{ access_token: string; user_id: string }> {
  const body = JSON.stringify({ email, password: 'Passw0rd-tls' });
  const registered = await httpsRequest(`${app}/auth/providers/local-userpass/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, ca });
  assert.equal(registered.status, 201, registered.text);
  const login = await httpsRequest(`${app}/auth/providers/local-userpass/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: email, password: 'Passw0rd-tls' }), ca,
  });
  assert.equal(login.status, 200, login.text);
  return JSON.parse(login.text) as { access_token: string; user_id: string };
}

/** `asl serve` that is expected to refuse to start: its exit code and stderr. */
function serveFails(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const appDir = copyApp();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-tls-data-'));
  const child = spawn(process.execPath, [CLI, 'serve', appDir, '--port', '0', '--data', dataDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) => child.on('exit', (code) => {
    clearTimeout(killer);
    fs.rmSync(appDir, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
    resolve({ code, stderr });
  }));
}

describe('asl serve over TLS', { skip, timeout: 180_000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-tls-'));
  let first: MadeCertificate;
  let served: ServedDist;
  const certFile = path.join(dir, 'served.crt');
  const keyFile = path.join(dir, 'served.key');

  before(async () => {
    first = makeCertificate(dir, 'first', ['localhost', '127.0.0.1']);
    fs.copyFileSync(first.certFile, certFile);
    fs.copyFileSync(first.keyFile, keyFile);
    served = await serveDist({ args: ['--tls-cert', certFile, '--tls-key', keyFile] });
    // Every line it prints once ready (the admin key pair comes last).
    while (!/admin private key: /.test(served.stdout())) await new Promise((resolve) => setTimeout(resolve, 50));
  });
  after(async () => {
    await served?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('it prints https:// addresses, and the location answer names https and wss', async () => {
    assert.match(served.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.match(served.stdout(), /^admin api: https:\/\/127\.0\.0\.1:\d+\/api\/admin\/v3\.0$/m);
    // The test's certificate is valid for two days: the operator is warned at start.
    await served.waitForLog(/the TLS certificate expires on /);
    const location = await httpsRequest(`${served.app}/location`, { ca: first.pem });
    assert.equal(location.status, 200);
    assert.equal(location.fingerprint, first.fingerprint);
    const body = JSON.parse(location.text) as { hostname: string; ws_hostname: string };
    assert.equal(body.hostname, served.url);
    assert.equal(body.ws_hostname, served.url.replace('https://', 'wss://'));
  });

  test('a client that does not trust the certificate is refused at the handshake, over HTTPS and WSS', async () => {
    await assert.rejects(httpsRequest(`${served.app}/location`), (e: NodeJS.ErrnoException) => /SELF_SIGNED|UNABLE_TO_VERIFY|CERT/.test(String(e.code)));
    await assert.rejects(connectRawSync(`${served.url.replace('https', 'wss')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=x`, ['com.mongodb.realm-sync#14'], false), (e: NodeJS.ErrnoException) => /SELF_SIGNED|UNABLE_TO_VERIFY|CERT/.test(String(e.code)));
  });

  test('a trusting client logs in, queries GraphQL and syncs over WSS on the same port', async () => {
    const ada = await logIn(served.app, first.pem, 'ada-tls@example.com');
    const inserted = await httpsRequest(`${served.app}/graphql`, {
      method: 'POST', ca: first.pem, headers: { 'content-type': 'application/json', authorization: `Bearer ${ada.access_token}` },
      body: JSON.stringify({ query: 'mutation($p: String!) { insertOneTask(data: {_partition: $p, name: "over tls", status: "open", isComplete: false}) { name } }', variables: { p: ada.user_id } }),
    });
    assert.equal(inserted.status, 200, inserted.text);
    assert.deepEqual(JSON.parse(inserted.text), { data: { insertOneTask: { name: 'over tls' } } });
    const client = await connectRawSync(`${served.url.replace('https', 'wss')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${ada.access_token}`, ['com.mongodb.realm-sync#14'], false, { ca: first.pem });
    try {
      client.send({ type: 'bind', session: 1, serverPath: JSON.stringify(ada.user_id), signedUserToken: '', needClientFileIdent: true, isSubserver: false });
      const ident = await client.next((m) => m.type === 'ident' || m.type === 'error' || m.type === 'json_error');
      assert.equal(ident.type, 'ident');
      if (ident.type !== 'ident') return;
      client.send({ type: 'ident', session: 1, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n });
      const download = await client.next((m) => m.type === 'download');
      assert.ok(download.type === 'download' && download.changesets.length > 0, 'the partition\'s task arrives in the download');
    } finally {
      client.close();
    }
  });

  test('the Host check still holds over TLS', async () => {
    const answer = await httpsRequest(`${served.app}/location`, { ca: first.pem, servername: 'localhost', headers: { host: 'attacker.example' } });
    assert.equal(answer.status, 421);
    assert.equal(JSON.parse(answer.text).error_code, 'MisdirectedRequest');
  });

  test('plain HTTP on the TLS port is told to use https, gets no API answer, and the runtime keeps serving', async () => {
    const port = Number(new URL(served.url).port);
    const reply = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET /api/client/v2.0/app/${served.appId}/location HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
      let text = '';
      socket.on('data', (d) => { text += d.toString('latin1'); });
      socket.on('close', () => resolve(text));
      socket.on('error', () => resolve(text));
      socket.setTimeout(10_000, () => socket.destroy());
    });
    assert.doesNotMatch(reply, /"hostname"/);
    assert.match(reply, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(reply, /"error":"this port serves HTTPS only: use https:\/\/localhost:\d+"/);
    assert.equal((await httpsRequest(`${served.app}/location`, { ca: first.pem })).status, 200);
  });

  test('a renewed pair is served without a restart; a renewal whose key does not match keeps the pair being served', async () => {
    const renewed = makeCertificate(dir, 'renewed', ['localhost', '127.0.0.1']);
    // As certbot does: new files moved over the old names.
    fs.copyFileSync(renewed.keyFile, `${keyFile}.new`);
    fs.copyFileSync(renewed.certFile, `${certFile}.new`);
    fs.renameSync(`${keyFile}.new`, keyFile);
    fs.renameSync(`${certFile}.new`, certFile);
    await served.waitForLog(/TLS certificate reloaded/);
    const answer = await httpsRequest(`${served.app}/location`, { ca: renewed.pem });
    assert.equal(answer.fingerprint, renewed.fingerprint);
    await assert.rejects(httpsRequest(`${served.app}/location`, { ca: first.pem }), 'the old certificate is no longer served');

    const other = makeCertificate(dir, 'other', ['localhost']);
    fs.copyFileSync(other.keyFile, keyFile);
    await served.waitForLog(/TLS certificate not reloaded, the previous one is still served: the key in .* does not belong to the certificate/);
    assert.equal((await httpsRequest(`${served.app}/location`, { ca: renewed.pem })).fingerprint, renewed.fingerprint);
    fs.copyFileSync(renewed.keyFile, keyFile);
    await served.waitForLog(/TLS certificate reloaded/, { count: 2 });
  });

  test('local tools ask the TLS runtime, accepting only the certificate its record names', async () => {
    const status = (): Promise<{ code: number | null; stdout: string; stderr: string }> => new Promise((resolve) => {
      const child = spawn(process.execPath, [CLI, 'sync', 'status', served.appDir, '--data', served.dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => { stdout += d; });
      child.stderr.on('data', (d) => { stderr += d; });
      child.on('exit', (code) => resolve({ code, stdout, stderr }));
    });
    const asked = await status();
    assert.equal(asked.code, 0, asked.stderr);
    assert.match(asked.stdout, /\(asked the running runtime\)/);
    const recordFile = path.join(served.dataDir, 'runtime.json');
    const record = JSON.parse(fs.readFileSync(recordFile, 'utf8')) as { tlsCertificateSha256: string };
    assert.match(record.tlsCertificateSha256, /^[0-9A-F]{2}(?::[0-9A-F]{2}){31}$/);
    // A record naming another certificate (someone else answering on the port): the session is not sent.
    fs.writeFileSync(recordFile, JSON.stringify({ ...record, tlsCertificateSha256: first.fingerprint.replace(/^../, '00') }));
    const refused = await status();
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /presented a certificate .* other than the one its record names; not sending its session/);
    fs.writeFileSync(recordFile, JSON.stringify(record));
  });

  test('a bad pair at start is a clear error naming the file, and the runtime does not start', async () => {
    const other = makeCertificate(dir, 'mismatch', ['localhost']);
    const mismatched = await serveFails(['--tls-cert', first.certFile, '--tls-key', other.keyFile]);
    assert.equal(mismatched.code, 1);
    assert.match(mismatched.stderr, new RegExp(`asl serve: the key in ${other.keyFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} does not belong to the certificate in`));

    const garbage = path.join(dir, 'garbage.crt');
    fs.writeFileSync(garbage, 'not a certificate\n');
    const notPem = await serveFails(['--tls-cert', garbage, '--tls-key', first.keyFile]);
    assert.equal(notPem.code, 1);
    assert.match(notPem.stderr, /garbage\.crt holds no PEM certificate/);

    const missing = await serveFails(['--tls-cert', first.certFile, '--tls-key', path.join(dir, 'absent.key')]);
    assert.match(missing.stderr, /cannot read the TLS private key .*absent\.key: no such file/);

    const alone = await serveFails(['--tls-cert', first.certFile]);
    assert.equal(alone.code, 2);
    assert.match(alone.stderr, /--tls-cert and --tls-key go together/);
    for (const s of [mismatched.stderr, notPem.stderr]) assert.doesNotMatch(s, /MII[A-Za-z0-9+/]{20}/, 'no key material in the error');
  });
});
