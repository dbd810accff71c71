// Sync sessions and the account (issue 21 part 2), over real HTTP and WebSocket on the example app: the
// admin's disable and revoke end a user's live sessions and reconnecting fails; permission traces go to
// developer tools only, with secret-backed values redacted (through the feed and the simulator route);
// the same account events reach any subscriber (the hook the Realm protocol sessions use).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import type { AccountChange } from '../../runtime/auth/account-events';
import type { OpenedApp } from '../../runtime/admin/apps';
import { REPO_ROOT } from '../helpers/disk';
import { FeedClient } from '../helpers/feed';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const SECRET = 'local-example-secret-stats-key';

async function json(url: string, init: { method?: string; body?: unknown; token?: string } = {}) {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

describe('sync sessions obey the account; traces are for developer tools', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let app: string;
  let feedUrl: string;
  let admin: string;
  let adminApp: string;
  const changes: AccountChange[] = [];

  const newUser = async (name: string) => {
    const email = `${name}@example.com`;
    await json(`${app}/auth/providers/local-userpass/register`, { body: { email, password: 'correct horse' } });
    const login = await json(`${app}/auth/providers/local-userpass/login`, { body: { username: email, password: 'correct horse' } });
    assert.equal(login.status, 200);
    return { id: login.body.user_id as string, token: login.body.access_token as string, refresh: login.body.refresh_token as string };
  };
  const liveSession = async (user: { id: string; token: string }) => {
    const client = await FeedClient.connect(feedUrl, user.token);
    await client.open(1, JSON.stringify(user.id));
    return client;
  };

  before(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-sync-sec-'));
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    // A read permission that compares a secret-backed value: its trace would show the secret.
    const configFile = path.join(appDir, 'sync/config.json');
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8'));
    config.partition.permissions.read.$or.push({ '%%values.statsKey': '%%partition' });
    fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
    runtime = await startRuntime({ appDir, port: 0, log: quiet, functionTimeoutMs: 5000 });
    app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    feedUrl = `${app.replace('http://', 'ws://')}/sync/feed`;
    admin = (await runtime.mintAdminSession()).access_token;
    adminApp = `${runtime.adminUrl}/groups/${runtime.groupId}/apps/${runtime.apps[0]!.id}`;
    (runtime.apps[0] as OpenedApp).accountEvents.subscribe((change) => changes.push(change));
  });
  after(async () => {
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('the admin disabling a user ends her live session with 203; reconnecting fails', async () => {
    const user = await newUser('disabled');
    const client = await liveSession(user);
    const ended = client.upcoming((m) => m.type === 'error' && m.session === 1, 'the session error');
    assert.equal((await json(`${adminApp}/users/${user.id}/disable`, { method: 'PUT', token: admin })).status, 204);
    const error = await ended;
    assert.equal(error.code, 203);
    assert.match(String(error.message), /user disabled/);
    await client.next((m) => m.type === 'error' && m.session === undefined, 'the connection error');
    const again = await FeedClient.connect(feedUrl, user.token);
    const refused = await again.next((m) => m.type === 'error', 'the refusal');
    assert.equal(refused.code, 203);
    again.close();
    assert.ok(changes.some((c) => c.kind === 'user-disabled' && c.userId === user.id), 'subscribers heard it');
  });

  test('the admin revoking a user\'s sessions ends them; another user\'s session stays', async () => {
    const user = await newUser('revoked');
    const bystander = await newUser('bystander');
    const client = await liveSession(user);
    const other = await liveSession(bystander);
    const ended = client.upcoming((m) => m.type === 'error' && m.session === 1, 'the session error');
    assert.equal((await json(`${adminApp}/users/${user.id}/logout`, { method: 'PUT', token: admin })).status, 204);
    assert.equal((await ended).code, 203);
    other.send({ type: 'ping', id: 7 });
    await other.next((m) => m.type === 'pong' && m.id === 7, 'the bystander still served');
    assert.ok(!other.received.some((m) => m.type === 'error'));
    client.close();
    other.close();
    assert.ok(changes.some((c) => c.kind === 'session-revoked' && c.userId === user.id));
  });

  test('traces: an ordinary client gets none; the editor (admin session) gets them with the secret redacted', async () => {
    const user = await newUser('tracer');
    const plain = await FeedClient.connect(feedUrl, user.token);
    await plain.open(1, JSON.stringify('not-mine'), { trace: true }).catch(() => undefined);
    const plainVerdict = await plain.next((m) => (m.type === 'verdict' || m.type === 'opened') && m.session === 1, 'a verdict');
    const plainPermissions = plainVerdict.permissions as Record<string, unknown>;
    assert.equal(plainPermissions.readTrace, undefined);
    assert.equal(plainPermissions.writeTrace, undefined);
    plain.close();

    const tool = await FeedClient.connect(feedUrl, user.token, { 'X-Admin-Authorization': `Bearer ${admin}` });
    await tool.open(1, JSON.stringify('not-mine'), { trace: true }).catch(() => undefined);
    const toolVerdict = await tool.next((m) => (m.type === 'verdict' || m.type === 'opened') && m.session === 1, 'a verdict');
    const text = JSON.stringify(toolVerdict);
    assert.ok((toolVerdict.permissions as Record<string, unknown>).readTrace, 'the developer tool gets the trace');
    assert.ok(text.includes('[redacted secret]') && !text.includes(SECRET), text.slice(0, 400));
    tool.close();

    const simulated = await json(`${runtime.adminUrl}/local/app/${runtime.appId}/sync/simulate?user=${user.id}&partition=${encodeURIComponent('"not-mine"')}`, { token: admin });
    assert.equal(simulated.status, 200, simulated.text);
    assert.ok(simulated.text.includes('[redacted secret]') && !simulated.text.includes(SECRET), simulated.text.slice(0, 400));
  });
});
