// Admin authentication over real HTTP: the key pair of the data folder, admin sessions (login, refresh,
// logout, expiry), the profile's group, the separation of admin and client tokens, and what is on disk.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

async function call(method: string, url: string, options: { body?: unknown; token?: string } = {}) {
  const headers: Record<string, string> = { 'x-baas-request-origin': 'mongodb-baas-cli' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, contentType: res.headers.get('content-type') };
}

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

describe('admin authentication', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let now = Date.now();
  const clock = { now: () => now };
  let admin: string;

  before(async () => {
    appDir = writeApp(baseApp(), fs.mkdtempSync(path.join(os.tmpdir(), 'asl-admin-auth-')));
    runtime = await startRuntime({ appDir, port: 0, log: quiet, clock });
    admin = runtime.adminUrl;
  });
  after(async () => { await runtime.close(); fs.rmSync(appDir, { recursive: true, force: true }); });

  test('the first start makes a key pair; only a hash of the private key is kept, in a 0600 file', () => {
    const key = runtime.createdAdminKey;
    assert.ok(key, 'a new data folder gets a key pair');
    assert.match(key.publicKey, /^[a-z]{8}$/);
    const file = path.join(runtime.dataDir, 'admin', 'api-key.json');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    for (const f of filesUnder(runtime.dataDir)) {
      assert.ok(!fs.readFileSync(f, 'latin1').includes(key.privateKey), `${f} holds the private key in clear`);
    }
  });

  test('login with the pair: 200 with both tokens; a wrong key: 401 with an error body', async () => {
    const key = runtime.createdAdminKey!;
    const ok = await call('POST', `${admin}/auth/providers/mongodb-cloud/login`, { body: { username: key.publicKey, apiKey: key.privateKey } });
    assert.equal(ok.status, 200);
    assert.equal(ok.contentType, 'application/json');
    for (const k of ['access_token', 'refresh_token', 'user_id', 'device_id']) assert.equal(typeof ok.body[k], 'string', k);
    const wrong = await call('POST', `${admin}/auth/providers/mongodb-cloud/login`, { body: { username: key.publicKey, apiKey: 'not-the-key' } });
    assert.equal(wrong.status, 401);
    assert.equal(typeof wrong.body.error, 'string');
    assert.equal(typeof wrong.body.error_code, 'string');
    const local = await call('POST', `${admin}/auth/providers/local-userpass/login`, { body: { username: key.publicKey, password: key.privateKey } });
    assert.equal(local.status, 200);
    const malformed = await call('POST', `${admin}/auth/providers/mongodb-cloud/login`, { body: ['x'] });
    assert.equal(malformed.status, 400);
  });

  test('profile carries the runtime group in roles; no token or a client user token: 401 InvalidSession', async () => {
    const session = await runtime.mintAdminSession();
    const profile = await call('GET', `${admin}/auth/profile`, { token: session.access_token });
    assert.equal(profile.status, 200);
    assert.deepEqual(profile.body.roles, [{ role_name: 'GROUP_OWNER', group_id: runtime.groupId }]);
    assert.match(runtime.groupId, /^[0-9a-f]{24}$/);

    const none = await call('GET', `${admin}/auth/profile`);
    assert.equal(none.status, 401);
    assert.deepEqual([none.body.error_code, none.body.error], ['InvalidSession', 'invalid session: access token expired']);

    const client = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    assert.equal((await call('POST', `${client}/auth/providers/local-userpass/register`, { body: { email: 'ada@example.com', password: 'correct horse' } })).status, 201);
    const user = await call('POST', `${client}/auth/providers/local-userpass/login`, { body: { username: 'ada@example.com', password: 'correct horse' } });
    assert.equal(user.status, 200);
    const refused = await call('GET', `${admin}/auth/profile`, { token: user.body.access_token });
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error_code, 'InvalidSession');

    const adminOnClient = await call('GET', `${runtime.url}/api/client/v2.0/auth/profile`, { token: session.access_token });
    assert.equal(adminOnClient.status, 401);
    const adminOnGraphql = await call('POST', `${client}/graphql`, { token: session.access_token, body: { query: '{ __typename }' } });
    assert.equal(adminOnGraphql.status, 401);
  });

  test('an expired access token is refused with InvalidSession; refresh gives 201 and a working one; logout ends the session', async () => {
    const session = await runtime.mintAdminSession();
    now += 31 * 60 * 1000;
    const expired = await call('GET', `${admin}/auth/profile`, { token: session.access_token });
    assert.equal(expired.status, 401);
    assert.equal(expired.body.error_code, 'InvalidSession');
    assert.equal(expired.body.error, 'invalid session: access token expired');

    const refreshed = await call('POST', `${admin}/auth/session`, { token: session.refresh_token });
    assert.equal(refreshed.status, 201);
    assert.deepEqual(Object.keys(refreshed.body), ['access_token']);
    assert.equal((await call('GET', `${admin}/auth/profile`, { token: refreshed.body.access_token })).status, 200);

    const accessAsRefresh = await call('POST', `${admin}/auth/session`, { token: refreshed.body.access_token });
    assert.equal(accessAsRefresh.status, 401);
    assert.equal(accessAsRefresh.body.error, 'invalid refresh token: incorrect token type');

    assert.equal((await call('DELETE', `${admin}/auth/session`, { token: session.refresh_token })).status, 204);
    const gone = await call('POST', `${admin}/auth/session`, { token: session.refresh_token });
    assert.equal(gone.status, 401);
    assert.deepEqual([gone.body.error_code, gone.body.error], ['InvalidSession', 'invalid session: failed to find refresh token']);
    assert.equal((await call('GET', `${admin}/auth/profile`, { token: refreshed.body.access_token })).status, 401);
  });

  test('refresh tokens last 60 days', async () => {
    const session = await runtime.mintAdminSession();
    now += 59 * 24 * 3600 * 1000;
    assert.equal((await call('POST', `${admin}/auth/session`, { token: session.refresh_token })).status, 201);
    now += 2 * 24 * 3600 * 1000;
    assert.equal((await call('POST', `${admin}/auth/session`, { token: session.refresh_token })).status, 401);
  });

  test('a restart keeps the pair, the group and open sessions, and shows no private key', async () => {
    const session = await runtime.mintAdminSession();
    const { groupId, adminPublicKey } = runtime;
    await runtime.close();
    runtime = await startRuntime({ appDir, port: 0, log: quiet, clock });
    admin = runtime.adminUrl;
    assert.equal(runtime.createdAdminKey, undefined);
    assert.equal(runtime.groupId, groupId);
    assert.equal(runtime.adminPublicKey, adminPublicKey);
    assert.equal((await call('GET', `${admin}/auth/profile`, { token: session.access_token })).status, 200);
  });
});

describe('admin routes from another machine', () => {
  const external = Object.values(os.networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal);
  test('are refused unless the runtime allows them', { skip: external ? false : 'this machine has no non-loopback IPv4 address' }, async () => {
    const appDir = writeApp(baseApp(), fs.mkdtempSync(path.join(os.tmpdir(), 'asl-admin-remote-')));
    for (const adminRemote of [false, true]) {
      const runtime = await startRuntime({ appDir, host: '0.0.0.0', port: 0, log: quiet, adminRemote });
      try {
        const res = await call('POST', `http://${external!.address}:${runtime.port}/api/admin/v3.0/auth/providers/mongodb-cloud/login`, { body: { username: 'x', apiKey: 'y' } });
        assert.equal(res.status, adminRemote ? 401 : 403);
        const local = await call('POST', `http://127.0.0.1:${runtime.port}/api/admin/v3.0/auth/providers/mongodb-cloud/login`, { body: { username: 'x', apiKey: 'y' } });
        assert.equal(local.status, 401);
      } finally {
        await runtime.close();
      }
    }
    fs.rmSync(appDir, { recursive: true, force: true });
  });
});
