// `asl serve --host ADDRESS --public-url URL` reached as a phone reaches it: the runtime in one network
// namespace, the clients (realm-core's own sync client, and plain HTTP requests) in another, over a veth
// pair with the test's own addresses; nothing but those addresses and each namespace's loopback. The
// location answer and links name the public URL the device called; other Host names and origins are
// refused; the Admin API answers the device only with --admin-remote.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { makeVethLink, netnsUnavailable, type VethLink } from '../helpers/netns';
import { probeAvailable, runProbe, type ProbeRun } from '../helpers/realm-probe';
import { serveDist, type ServedDist } from './fixtures/serve';

const skip = netnsUnavailable() ?? (probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine');

const TASK_SCHEMA = [{
  name: 'Task', primaryKey: '_id',
  properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool', priority: 'int?', tags: 'string[]' },
}];
const NAME = 'asl-sync.test';
const PORT = 8080;
const json = { 'content-type': 'application/json' };

/** The admin key pair a first start prints (the lines may come a moment after the address). */
async function adminKeysOf(served: ServedDist): Promise<string> {
  const deadline = Date.now() + 20_000;
  while (!/admin private key: \S+/.test(served.stdout())) {
    if (Date.now() > deadline) throw new Error(`no admin key pair on stdout: ${served.stdout()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const out = served.stdout();
  return JSON.stringify({ username: /admin public key: (\S+)/.exec(out)![1], apiKey: /admin private key: (\S+)/.exec(out)![1] });
}

function assertOk(run: ProbeRun, what: string): void {
  assert.equal(run.result.exitCode, 0, `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);
}

describe('asl serve for devices on a network (network namespaces over a veth pair)', { skip, timeout: 240_000 }, () => {
  let link: VethLink;
  let served: ServedDist;
  let base: string;
  let app: string;
  const fromDevice = (url: string, init?: Parameters<VethLink['request']>[2]) => link.request(link.deviceNs, url, init);

  before(async () => {
    link = makeVethLink();
    base = `http://${link.runtimeAddress}:${PORT}`;
    served = await serveDist({
      prefix: link.prefix(link.runtimeNs), port: PORT,
      args: ['--host', link.runtimeAddress, '--public-url', base, '--public-url', `http://${NAME}:${PORT}/`],
    });
    app = `${base}/api/client/v2.0/app/${served.appId}`;
    await adminKeysOf(served);
  });
  after(async () => {
    await served?.close();
    link?.close();
  });

  test('it prints the public URLs; the location answer names the public URL the device called', async () => {
    assert.match(served.stdout(), new RegExp(`^public url: ${base}\\npublic url: http://${NAME}:${PORT}\\nadmin api: ${base}/api/admin/v3\\.0$`, 'm'));
    const byAddress = await fromDevice(`${app}/location`);
    assert.equal(byAddress.status, 200, byAddress.text);
    assert.deepEqual(JSON.parse(byAddress.text), { deployment_model: 'GLOBAL', location: 'US-VA', hostname: base, ws_hostname: `ws://${link.runtimeAddress}:${PORT}` });
    const byName = await fromDevice(`${app}/location`, { headers: { host: `${NAME}:${PORT}` } });
    assert.equal(byName.status, 200, byName.text);
    assert.equal(JSON.parse(byName.text).hostname, `http://${NAME}:${PORT}`);
    assert.equal(JSON.parse(byName.text).ws_hostname, `ws://${NAME}:${PORT}`);
    const home = await fromDevice(`${base}/`);
    assert.ok(home.text.includes(`${app}`), 'the home page links the public URL');
  });

  test('realm-core\'s client on the device registers, logs in and syncs through the public URL', async () => {
    const credentials = { type: 'emailPassword', email: 'phone@example.com', password: 'phone-Passw0rd', register: true };
    const login = await fromDevice(`${app}/auth/providers/local-userpass/register`, { method: 'POST', headers: json, body: JSON.stringify({ email: credentials.email, password: credentials.password }) });
    assert.equal(login.status, 201, login.text);
    const session = await fromDevice(`${app}/auth/providers/local-userpass/login`, { method: 'POST', headers: json, body: JSON.stringify({ username: credentials.email, password: credentials.password }) });
    const userId = (JSON.parse(session.text) as { user_id: string }).user_id;
    const script = { baseUrl: base, appId: served.appId, schema: TASK_SCHEMA, timeoutMs: 15000, credentials: { ...credentials, register: false }, partition: userId };
    const wrote = await runProbe({ ...script, writes: [{ op: 'create', type: 'Task', value: { _id: { $oid: '65a000000000000000000901' }, _partition: userId, name: 'from the phone', status: 'open', isComplete: false, tags: [] } }] }, [], link.prefix(link.deviceNs));
    assertOk(wrote, 'upload from the device');
    const connects = wrote.events('ws_connect');
    assert.ok(connects.length > 0 && connects.every((l) => l.scheme === 'ws' && l.address === link.runtimeAddress && l.port === PORT && String(l.path).startsWith(`/api/client/v2.0/app/${served.appId}/realm-sync?`)), JSON.stringify(connects));
    const read = await runProbe(script, [], link.prefix(link.deviceNs));
    assertOk(read, 'download on the device');
    assert.deepEqual(read.objects('Task').map((t) => t.name), ['from the phone']);
  });

  test('every other name is refused (DNS rebinding), for requests and WebSocket upgrades', async () => {
    for (const host of ['attacker.example', `attacker.example:${PORT}`, `${link.deviceAddress}:${PORT}`, `${NAME}.attacker.example`]) {
      const answer = await fromDevice(`${app}/location`, { headers: { host } });
      assert.equal(answer.status, 421, host);
      assert.equal(JSON.parse(answer.text).error_code, 'MisdirectedRequest');
    }
    const upgrade = await fromDevice(`${app}/realm-sync?baas_at=x`, {
      headers: { host: 'attacker.example', connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' },
    });
    assert.equal(upgrade.status, 421);
  });

  test('origins: the public origin is the runtime\'s own, any other is refused', async () => {
    const preflight = (origin: string) => fromDevice(`${base}/api/admin/v3.0/auth/providers/local-userpass/login`, {
      method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    assert.equal((await preflight(base)).headers['access-control-allow-origin'], base);
    assert.equal((await preflight('http://attacker.example')).headers['access-control-allow-origin'], undefined);
    const body = JSON.stringify({ username: 'phone@example.com', password: 'phone-Passw0rd' });
    const forged = await fromDevice(`${app}/auth/providers/local-userpass/login`, { method: 'POST', headers: { ...json, origin: 'http://attacker.example' }, body });
    assert.equal(forged.status, 403);
    const own = await fromDevice(`${app}/auth/providers/local-userpass/login`, { method: 'POST', headers: { ...json, origin: base }, body });
    assert.equal(own.status, 200, own.text);
  });

  test('the Admin API answers the device only with --admin-remote', async () => {
    const keys = await adminKeysOf(served);
    const loginPath = '/api/admin/v3.0/auth/providers/mongodb-cloud/login';
    for (const headers of [json, { ...json, 'x-forwarded-for': '127.0.0.1' }, { ...json, host: `127.0.0.1:${PORT}` }]) {
      const refused = await fromDevice(`${base}${loginPath}`, { method: 'POST', headers, body: keys });
      assert.equal(refused.status, 403, JSON.stringify(headers));
      assert.match(JSON.parse(refused.text).error, /--admin-remote/);
    }
    await served.close();
    served = await serveDist({
      prefix: link.prefix(link.runtimeNs), port: PORT,
      args: ['--host', link.runtimeAddress, '--public-url', `http://${NAME}:${PORT}`, '--admin-remote'],
    });
    const remoteKeys = await adminKeysOf(served);
    assert.match(served.stdout(), new RegExp(`^admin api: http://${NAME}:${PORT}/api/admin/v3\\.0$`, 'm'));
    const admitted = await fromDevice(`${base}${loginPath}`, { method: 'POST', headers: { ...json, host: `${NAME}:${PORT}` }, body: remoteKeys });
    assert.equal(admitted.status, 200, admitted.text);
    assert.ok(JSON.parse(admitted.text).access_token);
  });
});
