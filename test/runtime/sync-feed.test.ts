// Partition-based sync on the example app, over real HTTP and WebSocket: opening partitions as users
// (permissions with `%function` in real workers and custom user data read at open time), the snapshot,
// changes and moves seen by two live feeds, writes checked like uploads, and ErrorIllegalDatabasePath.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { REPO_ROOT } from '../helpers/disk';
import { FeedClient, type FeedMessage } from '../helpers/feed';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

interface Trace { expression: string; result: boolean; subject?: unknown; operand?: unknown; note?: string; children: Trace[] }

/** The first part of a trace, depth first, written as `expression`. */
function part(trace: Trace, expression: string): Trace {
  const walk = (node: Trace): Trace | undefined => (node.expression === expression ? node : node.children.map(walk).find(Boolean));
  const found = walk(trace);
  assert.ok(found, `no part ${expression} in ${JSON.stringify(trace)}`);
  return found;
}

async function post(url: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('live partition feed on the example app', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let feedUrl: string;
  const users: Record<string, { id: string; token: string }> = {};
  const clients: FeedClient[] = [];
  let developerTool: Record<string, string>;
  // As the editor connects: with its admin session, so that opens asking for traces get them.
  const connect = async (who: string) => {
    const client = await FeedClient.connect(feedUrl, users[who].token, developerTool);
    clients.push(client);
    return client;
  };
  const tasks = () => runtime.sync.service.store.collection('tracker', 'Task');
  const userDocs = () => runtime.sync.service.store.collection('tracker', 'User');

  before(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-sync-'));
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    runtime = await startRuntime({ appDir, port: 0, log: quiet, functionTimeoutMs: 5000 });
    const app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    feedUrl = `${app.replace('http://', 'ws://')}/sync/feed`;
    developerTool = { 'X-Admin-Authorization': `Bearer ${(await runtime.mintAdminSession()).access_token}` };
    for (const name of ['ada', 'bob']) {
      const email = `${name}@example.com`;
      const register = await post(`${app}/auth/providers/local-userpass/register`, { email, password: 'correct horse' });
      assert.ok(register.status < 300, JSON.stringify(register));
      const login = await post(`${app}/auth/providers/local-userpass/login`, { username: email, password: 'correct horse' });
      assert.equal(login.status, 200);
      users[name] = { id: login.body.user_id, token: login.body.access_token };
    }
  });
  after(async () => {
    for (const c of clients) c.close();
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('the example app starts with sync enabled from its sync/config.json, and persists the state', () => {
    const status = runtime.sync.service.status();
    assert.equal(status.status, 'enabled');
    assert.equal(status.running?.key, '_partition');
    const persisted = JSON.parse(fs.readFileSync(path.join(appDir, '.asl/sync/state.json'), 'utf8'));
    assert.equal(persisted.status, 'enabled');
  });

  test('a user opens their own partition: verdicts with traces, the snapshot, then their writes and the changes', async () => {
    const ada = await connect('ada');
    await ada.next((m) => m.type === 'authenticated', 'authenticated');
    const result = await ada.open(1, JSON.stringify(users.ada.id), { trace: true });
    assert.equal(result.type, 'snapshot', JSON.stringify(result));
    const opened = ada.received.find((m) => m.type === 'opened' && m.session === 1) as FeedMessage & { permissions: { read: boolean; write: boolean; writeTrace: Trace } };
    assert.equal(opened.permissions.write, true);
    assert.equal(opened.permissions.read, true);
    assert.equal(opened.permissions.writeTrace.result, true);
    const ownPartition = part(opened.permissions.writeTrace, `"%%user.id": "%%partition"`);
    assert.deepEqual([ownPartition.subject, ownPartition.operand, ownPartition.result], [users.ada.id, users.ada.id, true]);
    // The custom user data (User) is not synced: sync writes bypass rules, so its owner could rewrite isAdmin.
    assert.deepEqual(Object.keys(result.collections as object).sort(), ['Project', 'Task']);

    const id = new ObjectId();
    const changed = ada.upcoming((m) => m.type === 'change' && m.op === 'insert', 'the insert change');
    ada.send({ type: 'write', session: 1, id: 1, changes: [{ op: 'create', collection: 'Task', document: { _id: id, _partition: users.ada.id, name: 'Write docs', status: 'open', isComplete: false } }] });
    const ack = await ada.next((m) => m.type === 'ack' && m.id === 1, 'the ack');
    assert.equal(typeof ack.version, 'number');
    const change = await changed;
    assert.equal((change.document as { name: string }).name, 'Write docs');
    assert.ok(await tasks().findOne({ _id: id }));

    ada.send({ type: 'write', session: 1, id: 2, changes: [{ op: 'create', collection: 'Task', document: { _id: new ObjectId(), _partition: users.ada.id, name: 'no status' } }] });
    const rejected = await ada.next((m) => m.type === 'rejected' && m.id === 2, 'schema rejection');
    assert.match(String(rejected.message), /missing required field "(status|isComplete)"/);
  });

  test('a write into another partition, or changing the key, is the spec\'s bad changeset and ends the session', async () => {
    const ada = await connect('ada');
    await ada.open(1, JSON.stringify(users.ada.id));
    ada.send({ type: 'write', session: 1, id: 1, changes: [{ op: 'create', collection: 'Task', document: { _id: new ObjectId(), _partition: users.bob.id, name: 'sneaky', status: 'open', isComplete: false } }] });
    const error = await ada.next((m) => m.type === 'error' && m.session === 1, 'bad changeset');
    assert.equal(error.code, 212);
    assert.equal(error.message, `failed to validate upload changesets: SET instruction had incorrect partition value for key "_partition" { expectedPartition: ${JSON.stringify(users.ada.id)}, foundPartition: ${JSON.stringify(users.bob.id)} }`);
    const own = new ObjectId();
    await tasks().insertOne({ _id: own, _partition: users.ada.id, name: 'mine', status: 'open', isComplete: false });
    await ada.open(2, JSON.stringify(users.ada.id));
    ada.send({ type: 'write', session: 2, id: 1, changes: [{ op: 'modify', collection: 'Task', _id: own, set: { _partition: 'elsewhere' } }] });
    const moved = await ada.next((m) => m.type === 'error' && m.session === 2, 'bad changeset on key change');
    assert.equal(moved.code, 212);
  });

  test('a write whose relationship points into another partition is refused (212), as an upload over the Realm protocol is', async () => {
    const ada = await connect('ada');
    await ada.open(1, JSON.stringify(users.ada.id));
    const elsewhere = new ObjectId();
    await runtime.sync.service.store.collection('tracker', 'Project').insertOne({ _id: elsewhere, _partition: 'project-x', name: 'X' });
    const taskId = new ObjectId();
    ada.send({ type: 'write', session: 1, id: 5, changes: [{ op: 'create', collection: 'Task', document: { _id: taskId, _partition: users.ada.id, name: 'linked', status: 'open', isComplete: false, project: elsewhere } }] });
    const error = await ada.next((m) => m.type === 'error' && m.session === 1, 'bad changeset');
    assert.equal(error.code, 212);
    assert.match(error.message as string, /relationship "project" of Task .* points to Project .*, which is not in partition .*: relationships cannot cross partitions/);
    assert.equal(await runtime.sync.service.store.collection('tracker', 'Task').findOne({ _id: taskId }), null, 'nothing of the refused write is stored');
  });

  test('ErrorIllegalDatabasePath: a partition value of another type, or unparsable text', async () => {
    const ada = await connect('ada');
    const wrongType = await ada.open(1, '42');
    assert.equal(wrongType.type, 'error');
    assert.equal(wrongType.code, 204);
    assert.equal(wrongType.name, 'ErrorIllegalDatabasePath');
    assert.equal(wrongType.message, 'attempted to bind on illegal realm partition: expected partition to have type string but found long');
    const oid = await ada.open(2, '{"$oid":"65a000000000000000000001"}');
    assert.equal(oid.message, 'attempted to bind on illegal realm partition: expected partition to have type string but found objectId');
    const broken = await ada.open(3, '{"unterminated');
    assert.equal(broken.code, 204);
    assert.equal(broken.message, `Illegal Realm path (BIND): serialized partition '{"unterminated' is invalid`);
  });

  test('permission denied, %function through real workers, and custom user data read at each open', async () => {
    const bob = await connect('bob');
    const denied = await bob.open(1, '"project-1"', { trace: true });
    assert.equal(denied.code, 206);
    const verdict = bob.received.find((m) => m.type === 'verdict' && m.session === 1) as FeedMessage & { permissions: { readTrace: Trace } };
    const fnPart = part(verdict.permissions.readTrace, '"%function": {"name":"canReadPartition","arguments":["%%partition"]}');
    assert.deepEqual([fnPart.subject, fnPart.operand, fnPart.result], [true, false, false]);
    const customData = part(verdict.permissions.readTrace, '"%%user.custom_data.projectIds": "%%partition"');
    assert.deepEqual([customData.subject, customData.operand], [[], 'project-1']);

    // The function grants read once bob is a member of the project; write still needs custom data.
    const bobDoc = await userDocs().findOne({ userId: users.bob.id });
    assert.ok(bobDoc);
    await runtime.sync.service.store.collection('tracker', 'Project').insertOne({ _id: new ObjectId(), _partition: 'project-1', name: 'P1', memberIds: [bobDoc._id] });
    const readOnly = await bob.open(2, '"project-1"', { trace: true });
    assert.equal(readOnly.type, 'snapshot', JSON.stringify(readOnly));
    const opened = bob.received.find((m) => m.type === 'opened' && m.session === 2) as FeedMessage & { permissions: { read: boolean; write: boolean; readTrace: Trace } };
    assert.deepEqual([opened.permissions.read, opened.permissions.write], [true, false]);
    const fnCall = part(opened.permissions.readTrace, '"%function": {"name":"canReadPartition","arguments":["%%partition"]}');
    assert.equal(fnCall.operand, true, 'the %function answered true through a worker');
    bob.send({ type: 'write', session: 2, id: 9, changes: [{ op: 'create', collection: 'Task', document: { _id: new ObjectId(), _partition: 'project-1', name: 'x', status: 'open', isComplete: false } }] });
    const uploadDenied = await bob.next((m) => m.type === 'error' && m.session === 2, 'upload denied');
    assert.equal(uploadDenied.code, 206);

    // Custom user data changes between opens: the open session is told, the next open sees it.
    const notice = bob.upcoming((m) => m.type === 'reevaluate', 'reevaluate notice');
    await bob.open(3, '"project-1"');
    await userDocs().updateOne({ userId: users.bob.id }, { $set: { projectIds: ['project-1'] } });
    await notice;
    await bob.open(4, '"project-1"');
    const reopened = bob.received.find((m) => m.type === 'opened' && m.session === 4) as FeedMessage & { permissions: { write: boolean } };
    assert.equal(reopened.permissions.write, true);
  });

  test('a key changed in the database moves the document: a delete in one feed, an insert in the other', async () => {
    const ada = await connect('ada');
    const bob = await connect('bob');
    await ada.open(1, JSON.stringify(users.ada.id));
    await bob.open(1, JSON.stringify(users.bob.id));
    const id = new ObjectId();
    const inserted = ada.upcoming((m) => m.type === 'change' && m.op === 'insert', 'insert in ada');
    await tasks().insertOne({ _id: id, _partition: users.ada.id, name: 'hand over', status: 'open', isComplete: false });
    await inserted;
    const gone = ada.upcoming((m) => m.type === 'change' && m.op === 'delete', 'delete in ada');
    const arrived = bob.upcoming((m) => m.type === 'change' && m.op === 'insert', 'insert in bob');
    await tasks().updateOne({ _id: id }, { $set: { _partition: users.bob.id } });
    const [deleted, insert] = await Promise.all([gone, arrived]);
    assert.deepEqual(deleted.moved, { to: users.bob.id });
    assert.deepEqual(insert.moved, { from: users.ada.id });
    assert.equal(deleted.version, insert.version);
    assert.ok(id.equals((deleted.documentKey as { _id: ObjectId })._id));
    const update = bob.upcoming((m) => m.type === 'change' && m.op === 'update', 'update in bob');
    await tasks().updateOne({ _id: id }, { $set: { status: 'done' } });
    assert.equal(((await update).document as { status: string }).status, 'done');
  });

  test('the feed refuses a missing or bad token and an unknown app id', async () => {
    const anonymous = await FeedClient.connect(feedUrl);
    clients.push(anonymous);
    anonymous.send({ type: 'open', session: 1, partition: '"x"' });
    const error = await anonymous.next((m) => m.type === 'error', 'auth error');
    assert.equal(error.code, 203);
    const bad = await FeedClient.connect(feedUrl, 'not-a-token');
    clients.push(bad);
    assert.equal((await bad.next((m) => m.type === 'error', 'bad token')).code, 203);
    await assert.rejects(FeedClient.connect(feedUrl.replace(runtime.appId, 'other-app')), /404/);
  });

  test('the simulator reports verdicts, visible documents, ignored documents and the client error', async () => {
    await tasks().insertOne({ _id: new ObjectId(), _partition: 7, name: 'numbered', status: 'open', isComplete: false });
    const report = await runtime.sync.simulate('ada@example.com', JSON.stringify(users.ada.id));
    assert.equal(report.user?.id, users.ada.id);
    assert.equal(report.error, undefined);
    assert.equal(report.permissions?.write, true);
    const task = report.collections.find((c) => c.type === 'Task');
    assert.ok(task && task.count >= 1);
    const ignored = report.ignored.find((c) => c.type === 'Task');
    assert.deepEqual(ignored?.reasons, { 'the partition key "_partition" is long, not string': 1 });
    const wrong = await runtime.sync.simulate(users.bob.id, '{"$oid":"65a000000000000000000001"}');
    assert.equal(wrong.error?.code, 204);
    const nobody = await runtime.sync.simulate('nobody@example.com', '"x"');
    assert.equal(nobody.error?.code, 203);
  });
});
