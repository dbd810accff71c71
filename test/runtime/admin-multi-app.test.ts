// Several apps in one runtime: each under its own client app id on one address, client routes without an
// app id routed by the token's app, a group id kept across restarts, apps created through the Admin API
// served at once, and single-app runtimes refusing to create apps.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

async function post(url: string, body: unknown, token?: string) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

function appNamed(name: string, appId: string): Record<string, unknown> {
  return { ...baseApp(), 'realm_config.json': { config_version: 20210101, app_id: appId, name, location: 'US-VA', deployment_model: 'GLOBAL' } };
}

describe('several apps per runtime', () => {
  let root: string;
  let runtime: RunningRuntime;

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-multi-'));
    writeApp(appNamed('alpha', 'alpha-aaaaa'), path.join(root, 'alpha'));
    writeApp(appNamed('beta', 'beta-bbbbb'), path.join(root, 'nested', 'beta'));
    runtime = await startRuntime({ rootDir: root, port: 0, log: quiet });
  });
  after(async () => { await runtime.close(); fs.rmSync(root, { recursive: true, force: true }); });

  test('each app is served under its own client app id, with its own users and data folder', async () => {
    assert.deepEqual(runtime.apps.map((a) => a.clientAppId).sort(), ['alpha-aaaaa', 'beta-bbbbb']);
    assert.deepEqual(runtime.apps.map((a) => path.relative(root, a.dataDir)).sort(), ['alpha/.asl', 'nested/beta/.asl']);
    const client = (id: string) => `${runtime.url}/api/client/v2.0/app/${id}`;
    assert.equal((await post(`${client('alpha-aaaaa')}/auth/providers/local-userpass/register`, { email: 'a@example.com', password: 'password1' })).status, 201);
    const alpha = await post(`${client('alpha-aaaaa')}/auth/providers/local-userpass/login`, { username: 'a@example.com', password: 'password1' });
    assert.equal(alpha.status, 200);
    const notInBeta = await post(`${client('beta-bbbbb')}/auth/providers/local-userpass/login`, { username: 'a@example.com', password: 'password1' });
    assert.equal(notInBeta.status, 401);
    assert.equal((await post(`${client('beta-bbbbb')}/auth/providers/local-userpass/register`, { email: 'b@example.com', password: 'password2' })).status, 201);
    const beta = await post(`${client('beta-bbbbb')}/auth/providers/local-userpass/login`, { username: 'b@example.com', password: 'password2' });

    // No app id in these paths: the token says which app answers.
    for (const [login, email] of [[alpha, 'a@example.com'], [beta, 'b@example.com']] as const) {
      const profile = await fetch(`${runtime.url}/api/client/v2.0/auth/profile`, { headers: { authorization: `Bearer ${login.body.access_token}` } });
      assert.equal(profile.status, 200);
      assert.equal(((await profile.json()) as any).data.email, email);
      const refreshed = await fetch(`${runtime.url}/api/client/v2.0/auth/session`, { method: 'POST', headers: { authorization: `Bearer ${login.body.refresh_token}` } });
      assert.equal(refreshed.status, 201);
    }
    const otherApp = await post(`${client('beta-bbbbb')}/graphql`, { query: '{ __typename }' }, alpha.body.access_token);
    assert.equal(otherApp.status, 401, "one app's token is not valid in another");
  });

  test('an app created through the Admin API is a folder under the root, served at once; the group id survives a restart', async () => {
    const session = await runtime.mintAdminSession();
    const created = await post(`${runtime.adminUrl}/groups/${runtime.groupId}/apps`, { name: 'gamma' }, session.access_token);
    assert.equal(created.status, 201);
    assert.ok(fs.existsSync(path.join(root, 'gamma', 'data_sources', 'cluster-source', 'config.json')), 'a blank app gets the product\'s default data source');
    assert.equal((await fetch(`${runtime.url}/api/client/v2.0/app/${created.body.client_app_id}/location`)).status, 200);
    // Names may repeat, as the SDKs' test harnesses need; each app keeps its own client app id and folder.
    const again = await post(`${runtime.adminUrl}/groups/${runtime.groupId}/apps`, { name: 'gamma' }, session.access_token);
    assert.equal(again.status, 201);
    assert.notEqual(again.body.client_app_id, created.body.client_app_id);
    assert.equal((await fetch(`${runtime.url}/api/client/v2.0/app/${again.body.client_app_id}/location`)).status, 200);

    const groupId = runtime.groupId;
    const ids = runtime.apps.map((a) => a.id).sort();
    await runtime.close();
    runtime = await startRuntime({ rootDir: root, port: 0, log: quiet });
    assert.equal(runtime.groupId, groupId);
    assert.deepEqual(runtime.apps.map((a) => a.id).sort(), ids, 'internal app ids are stable');
    const got = await fetch(`${runtime.adminUrl}/groups/${groupId}/apps/${created.body._id}`, { headers: { authorization: `Bearer ${session.access_token}` } });
    assert.equal(got.status, 200, 'the admin session survives too');
  });

  test('a runtime serving one app folder refuses to create apps, with a reason', async () => {
    const single = await startRuntime({ appDir: path.join(root, 'alpha'), dataDir: path.join(root, 'single-data'), port: 0, log: quiet });
    try {
      const session = await single.mintAdminSession();
      const res = await post(`${single.adminUrl}/groups/${single.groupId}/apps`, { name: 'delta' }, session.access_token);
      assert.equal(res.status, 400);
      assert.match(res.body.error, /serves one app folder/);
    } finally {
      await single.close();
    }
  });
});
