// The sync state machine end to end: the runtime over real HTTP and WebSocket, transitions through the
// Admin API's sync functions and through edits of sync/config.json, reaching connected feeds as the
// spec's errors; development mode; `sync/data`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { getServiceSyncConfig, patchServiceSyncConfig, syncData, SyncAdminError } from '../../runtime/sync';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';
import { FeedClient } from '../helpers/feed';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

function syncApp(): Record<string, unknown> {
  const files = baseApp();
  files['data_sources/mongodb-atlas/todo/Task/schema.json'] = {
    title: 'Task', bsonType: 'object', required: ['_id', 'name'],
    properties: { _id: { bsonType: 'objectId' }, name: { bsonType: 'string' }, team: { bsonType: 'string' }, owner: { bsonType: 'objectId' } },
  };
  files['data_sources/mongodb-atlas/todo/User/schema.json'] = {
    title: 'User', bsonType: 'object', properties: { _id: { bsonType: 'objectId' }, name: { bsonType: 'string' }, team: { bsonType: 'string' }, owner: { bsonType: 'objectId' } },
  };
  delete files['data_sources/mongodb-atlas/todo/Task/relationships.json'];
  files['sync/config.json'] = {
    type: 'partition', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'todo',
    partition: { key: 'team', type: 'string', required: true, permissions: { read: true, write: true } },
    client_max_offline_days: 30, is_recovery_mode_disabled: false,
  };
  return files;
}

describe('sync state machine over HTTP and WebSocket', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let feedUrl: string;
  let token: string;
  let userId: string;
  const clients: FeedClient[] = [];
  const connect = async () => {
    const c = await FeedClient.connect(feedUrl, token);
    clients.push(c);
    return c;
  };
  const readFile = () => JSON.parse(fs.readFileSync(path.join(appDir, 'sync/config.json'), 'utf8'));
  const patch = (sync: Record<string, unknown>) => patchServiceSyncConfig(runtime.sync.admin, 'mongodb-atlas', { sync });

  before(async () => {
    appDir = writeApp(syncApp());
    runtime = await startRuntime({ appDir, port: 0, log: quiet });
    const app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    feedUrl = `${app.replace('http://', 'ws://')}/sync/feed`;
    const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.ok((await post(`${app}/auth/providers/local-userpass/register`, { email: 'ada@example.com', password: 'correct horse' })).ok);
    const login = await (await post(`${app}/auth/providers/local-userpass/login`, { username: 'ada@example.com', password: 'correct horse' })).json() as { access_token: string; user_id: string };
    token = login.access_token;
    userId = login.user_id;
    const tasks = runtime.sync.service.store.collection('todo', 'Task');
    await tasks.insertOne({ _id: new ObjectId(), name: 'blue task', team: 'blue', owner: new ObjectId(userId) });
    await tasks.insertOne({ _id: new ObjectId(), name: 'no team' });
  });
  after(async () => {
    for (const c of clients) c.close();
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('GET shape of the sync object and sync/data', () => {
    const config = getServiceSyncConfig(runtime.sync.admin, 'mongodb-atlas');
    assert.equal(config?.state, 'enabled');
    assert.equal('service_name' in (config ?? {}), false);
    assert.deepEqual(syncData(runtime.sync.admin, 'svc1', 'mongodb-atlas'), {
      service_id: 'svc1', partition_fields: [{ key: 'name', type: 'string' }, { key: 'owner', type: 'objectId' }, { key: 'team', type: 'string' }],
    });
  });

  test('while enabled, a PATCH or a file edit changing the key or rules is refused and the running config stays', async () => {
    const current = getServiceSyncConfig(runtime.sync.admin, 'mongodb-atlas')!;
    await assert.rejects(patch({ ...current, partition: { ...(current.partition as object), key: 'owner', type: 'objectId' } }),
      (e: unknown) => e instanceof SyncAdminError && e.status === 400 && /terminate sync first/.test(e.message));
    const file = path.join(appDir, 'sync/config.json');
    const original = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, original.replace('"write": true', '"write": false'));
    const reloaded = await runtime.reload();
    assert.equal(reloaded.applied, false);
    assert.ok(reloaded.diagnostics.some((d) => d.code === 'sync/frozen-while-enabled' && /permissions\.write/.test(d.message)));
    fs.writeFileSync(file, original);
    assert.equal((await runtime.reload()).applied, true);
    assert.equal(runtime.sync.service.status().running?.permissions.write, true);
  });

  let clientFile: { epoch: number; ident: string };

  test('pause ends connected sessions with 213 and refuses opens; resume lets the same client file in without a reset', async () => {
    const feed = await connect();
    await feed.open(1, '"blue"');
    clientFile = feed.received.find((m) => m.type === 'opened')!.clientFile as { epoch: number; ident: string };
    const ended = feed.upcoming((m) => m.type === 'error' && m.session === 1, 'pause error');
    await patch({ ...getServiceSyncConfig(runtime.sync.admin, 'mongodb-atlas')!, state: 'disabled' });
    const error = await ended;
    assert.deepEqual([error.code, error.tryAgain, error.shouldClientReset], [213, true, false]);
    assert.equal(readFile().state, 'disabled');
    assert.equal(typeof readFile().last_disabled, 'number');
    const refused = await feed.open(2, '"blue"');
    assert.equal(refused.code, 213);
    await patch({ ...getServiceSyncConfig(runtime.sync.admin, 'mongodb-atlas')!, state: 'enabled' });
    const back = await feed.open(3, '"blue"', { clientFile });
    assert.equal(back.type, 'snapshot', JSON.stringify(back));
    assert.equal((back.collections as { Task: unknown[] }).Task.length, 1);
  });

  test('terminate: connected feeds get the client-reset error; re-enable with a new key; old client files must reset', async () => {
    const feed = await connect();
    await feed.open(1, '"blue"');
    const reset = feed.upcoming((m) => m.type === 'error' && m.session === 1, 'terminate error');
    const result = await patch({ ...getServiceSyncConfig(runtime.sync.admin, 'mongodb-atlas')!, state: '' });
    assert.equal(result.transition, 'terminated');
    const error = await reset;
    assert.deepEqual([error.code, error.shouldClientReset, error.isRecoveryModeEnabled, error.action], [208, true, true, 'client-reset']);
    assert.equal(runtime.sync.service.status().status, 'terminated');
    assert.equal((await feed.open(2, '"blue"')).code, 213);

    const reEnabled = await patch({
      ...getServiceSyncConfig(runtime.sync.admin, 'mongodb-atlas')!, state: 'enabled',
      partition: { key: 'owner', type: 'objectId', required: false, permissions: { read: { '%%partition': { '%stringToOid': '%%user.id' } }, write: { '%%partition': { '%stringToOid': '%%user.id' } } } },
    });
    assert.equal(reEnabled.transition, 're-enabled');
    assert.equal(runtime.sync.service.status().epoch, 2);
    const stale = await feed.open(3, `{"$oid":"${userId}"}`, { clientFile });
    assert.deepEqual([stale.code, stale.shouldClientReset], [208, true]);
    const fresh = await feed.open(4, `{"$oid":"${userId}"}`);
    assert.equal(fresh.type, 'snapshot', JSON.stringify(fresh));
    assert.deepEqual((fresh.collections as { Task: { name: string }[] }).Task.map((t) => t.name), ['blue task']);
    const wrongType = await feed.open(5, '"blue"');
    assert.equal(wrongType.message, 'attempted to bind on illegal realm partition: expected partition to have type objectId but found string');
    // The optional key: documents without it are the null partition, which this rule does not grant.
    const nullPartition = await feed.open(6, 'null');
    assert.equal(nullPartition.code, 206);
  });

  test('development mode mirrors a client\'s object types as schemas in database_name', async () => {
    const current = getServiceSyncConfig(runtime.sync.admin, 'mongodb-atlas')!;
    await patch({ ...current, development_mode_enabled: true });
    const feed = await connect();
    feed.send({ type: 'schema', id: 1, types: [{ name: 'Note', properties: { text: 'string', pinned: { bsonType: 'bool' } }, required: ['text'] }, { name: 'Task', properties: { done: 'bool' } }] });
    const applied = await feed.next((m) => m.id === 1 && (m.type === 'schema-applied' || m.type === 'rejected'), 'schema answer');
    assert.equal(applied.type, 'schema-applied', JSON.stringify(applied));
    assert.deepEqual(applied.written, ['data_sources/mongodb-atlas/todo/Note/schema.json', 'data_sources/mongodb-atlas/todo/Task/schema.json']);
    const note = JSON.parse(fs.readFileSync(path.join(appDir, 'data_sources/mongodb-atlas/todo/Note/schema.json'), 'utf8'));
    assert.deepEqual(note.properties, { _id: { bsonType: 'objectId' }, text: { bsonType: 'string' }, pinned: { bsonType: 'bool' }, owner: { bsonType: 'objectId' } });
    const task = JSON.parse(fs.readFileSync(path.join(appDir, 'data_sources/mongodb-atlas/todo/Task/schema.json'), 'utf8'));
    assert.deepEqual(task.properties.done, { bsonType: 'bool' });
    assert.deepEqual(task.properties.name, { bsonType: 'string' }, 'existing properties are kept');
    assert.ok(runtime.sync.service.collectionOfType('Note'), 'the new type syncs after the reload');
    feed.send({ type: 'schema', id: 2, types: [{ name: '../evil', properties: {} }] });
    assert.equal((await feed.next((m) => m.id === 2, 'bad type name')).type, 'rejected');
  });
});

describe('the state machine through the Admin API over HTTP', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let admin: string;
  let appPath: string;

  before(async () => {
    appDir = writeApp(syncApp());
    runtime = await startRuntime({ appDir, port: 0, log: quiet });
    admin = (await runtime.mintAdminSession()).access_token;
    appPath = `${runtime.adminUrl}/groups/${runtime.groupId}/apps/${runtime.apps[0].id}`;
  });
  after(async () => {
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  const call = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(url, { method, headers: { authorization: `Bearer ${admin}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  test('GET the service config with sync, a refused PATCH (400), a pause that reaches a live feed (213), resume', async () => {
    const services = await call('GET', `${appPath}/services`);
    const atlas = (services.body as { _id: string; name: string }[]).find((s) => s.name === 'mongodb-atlas')!;
    const config = await call('GET', `${appPath}/services/${atlas._id}/config`);
    const sync = config.body.sync as Record<string, unknown>;
    assert.equal(sync.state, 'enabled');
    const refused = await call('PATCH', `${appPath}/services/${atlas._id}/config`, { sync: { ...sync, partition: { ...(sync.partition as object), key: 'owner', type: 'objectId' } } });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error_code, 'InvalidSyncConfig');
    assert.match(refused.body.error, /terminate sync first/);

    const app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await post(`${app}/auth/providers/local-userpass/register`, { email: 'bo@example.com', password: 'correct horse' });
    const token = ((await (await post(`${app}/auth/providers/local-userpass/login`, { username: 'bo@example.com', password: 'correct horse' })).json()) as { access_token: string }).access_token;
    const feed = await FeedClient.connect(`${app.replace('http://', 'ws://')}/sync/feed`, token);
    try {
      assert.equal((await feed.open(1, '"blue"')).type, 'snapshot');
      const ended = feed.upcoming((m) => m.type === 'error' && m.session === 1, 'pause error');
      assert.equal((await call('PATCH', `${appPath}/services/${atlas._id}/config`, { sync: { ...sync, state: 'disabled' } })).status, 204);
      assert.equal((await ended).code, 213);
      assert.equal((await call('GET', `${appPath}/services/${atlas._id}/config`)).body.sync.state, 'disabled');
      assert.equal((await call('PATCH', `${appPath}/services/${atlas._id}/config`, { sync: { ...sync, state: 'enabled' } })).status, 204);
      assert.equal((await feed.open(2, '"blue"')).type, 'snapshot');
    } finally {
      feed.close();
    }
  });
});
