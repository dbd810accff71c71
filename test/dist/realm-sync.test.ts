// Realm sync on the wire, end to end: realm-core 14.14's own sync client (`realm-sync-probe`) against
// `node dist/cli.js serve` on a copy of the example app, whose partition rules let a user read and write
// the partition named by her user id. What a client syncs must reach the documents (GraphQL sees it),
// what GraphQL writes must reach the clients, and clients that edited offline must end equal to each
// other, to the store, and to what realm-core's reference server gives for the same steps.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeAvailable, registerUser, runProbe, startProbe, startReferenceServer, type ProbeRun } from '../helpers/realm-probe';
import { serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

const TASK_SCHEMA = [{
  name: 'Task', primaryKey: '_id',
  properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool', priority: 'int?', tags: 'string[]' },
}];

function oid(n: number): { $oid: string } {
  return { $oid: `65a0000000000000000${String(n).padStart(5, '0')}` };
}

async function graphql(served: ServedDist, email: string, password: string, query: string, variables: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const login = await fetch(`${served.app}/auth/providers/local-userpass/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: email, password }),
  });
  const { access_token: token } = await login.json() as { access_token: string };
  const res = await fetch(`${served.app}/graphql`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables }),
  });
  const body = await res.json() as { data?: Record<string, unknown>; errors?: unknown[] };
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data!;
}

function assertOk(run: ProbeRun, what: string): void {
  assert.equal(run.result.exitCode, 0, `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);
}

describe('Realm sync protocol against dist/cli.js serve', { skip, timeout: 240_000 }, () => {
  let served: ServedDist;
  let adaId: string;
  let bobId: string;
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-realm-sync-'));
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  const bob = { type: 'emailPassword', email: 'bob@example.com', password: 'bob-Passw0rd' };
  const script = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, schema: TASK_SCHEMA, timeoutMs: 10000, ...extra });

  before(async () => {
    served = await serveDist();
    adaId = await registerUser(served.app, ada.email, ada.password);
    bobId = await registerUser(served.app, bob.email, bob.password);
  });
  after(async () => {
    await served?.close();
    fs.rmSync(state, { recursive: true, force: true });
  });

  test('a client write reaches the documents (GraphQL) and a second client; the log names the session', async () => {
    const created = await runProbe(script({
      credentials: ada, partition: adaId,
      writes: [{ op: 'create', type: 'Task', value: { _id: oid(1), _partition: adaId, name: 'from realm', status: 'open', isComplete: false, priority: 3, tags: ['a', 'b'] } }],
    }));
    assertOk(created, 'upload');
    const data = await graphql(served, ada.email, ada.password, 'query($id: ObjectId!) { task(query: {_id: $id}) { name status priority tags _partition } }', { id: oid(1).$oid });
    assert.deepEqual(data.task, { name: 'from realm', status: 'open', priority: 3, tags: ['a', 'b'], _partition: adaId });
    const second = await runProbe(script({ credentials: ada, partition: adaId }));
    assertOk(second, 'download');
    assert.deepEqual(second.objects('Task').map((t) => t.name), ['from realm']);
    assert.match(served.stderr(), new RegExp(`user ${adaId} session 1 partition "${adaId}": bound \\(protocol 14, read and write\\)`));
  });

  test('a GraphQL mutation reaches a watching client as a download', async () => {
    const watcher = startProbe(script({ credentials: ada, partition: adaId, steps: [{ waitDownload: true }, { watchMs: 4000 }] }));
    await watcher.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    await graphql(served, ada.email, ada.password, 'mutation($p: String!) { insertOneTask(data: {_id: "65a000000000000000000077", _partition: $p, name: "from graphql", status: "open", isComplete: true}) { _id } }', { p: adaId });
    const change = await watcher.waitFor((l) => l.event === 'change' && (l.value as { name?: string } | undefined)?.name === 'from graphql', 5000);
    assert.equal(change.kind, 'insert');
    assert.deepEqual((change.value as Record<string, unknown>).isComplete, true);
    assertOk(await watcher.done, 'watch');
  });

  test('the runtime lists live sessions (user, partition, protocol version) on its local admin route', async () => {
    const watcher = startProbe(script({ credentials: ada, partition: adaId, steps: [{ waitDownload: true }, { watchMs: 3000 }] }));
    await watcher.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    const out = served.stdout();
    const login = await fetch(`${served.url}/api/admin/v3.0/auth/providers/mongodb-cloud/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: /admin public key: (\S+)/.exec(out)![1], apiKey: /admin private key: (\S+)/.exec(out)![1] }),
    });
    const { access_token: adminToken } = await login.json() as { access_token: string };
    const status = await fetch(`${served.url}/api/admin/v3.0/local/app/${served.appId}/sync/status`, { headers: { authorization: `Bearer ${adminToken}` } });
    const body = await status.json() as { status: string; liveSessions: Record<string, unknown>[] };
    assert.equal(body.status, 'enabled');
    const live = body.liveSessions.find((s) => s.userId === adaId);
    assert.ok(live, JSON.stringify(body));
    assert.equal(live.partition, JSON.stringify(adaId));
    assert.equal(live.protocolVersion, 14);
    assert.equal(live.state, 'identified');
    const asUser = await fetch(`${served.url}/api/admin/v3.0/local/app/${served.appId}/sync/sessions`, { headers: { authorization: `Bearer ${(await (await fetch(`${served.app}/auth/providers/local-userpass/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: ada.email, password: ada.password }) })).json() as { access_token: string }).access_token}` } });
    assert.equal(asUser.status, 401, 'a user token does not open the sessions list');
    const traffic = await fetch(`${served.url}/api/admin/v3.0/local/app/${served.appId}/sync/sessions/${live.connection}/${live.session}/traffic`, { headers: { authorization: `Bearer ${adminToken}` } });
    const { traffic: entries } = await traffic.json() as { traffic: { type: string; direction: string; fields: Record<string, unknown>; detail?: string; changesets?: { instructions: string[] }[] }[] };
    assert.deepEqual(entries.slice(0, 2).map((e) => `${e.direction} ${e.type}`), ['in bind', 'in permissions']);
    assert.equal(entries[1]!.fields.write, true);
    assert.match(entries[1]!.detail!, /%%user\.id/, 'the verdict carries its trace');
    // The bootstrap and the history after it (a partition's bootstrap is reused while that stays short).
    const downloads = entries.filter((e) => e.type === 'download' && e.changesets?.length);
    assert.ok(downloads.length > 0, JSON.stringify(entries.map((e) => e.type)));
    const lines = downloads.flatMap((d) => d.changesets!.flatMap((c) => c.instructions));
    assert.ok(lines.includes('CreateObject Task oid(65a000000000000000000001)'), lines.join('\n'));
    assert.ok(lines.includes('Update Task oid(65a000000000000000000001) .name = "from realm"'), lines.join('\n'));
    assertOk(await watcher.done, 'watch');
  });

  test('a partition key changed in the database moves the object: deleted from one partition, inserted in the other; a link into another partition is refused', async () => {
    const out = served.stdout();
    const login = await fetch(`${served.url}/api/admin/v3.0/auth/providers/mongodb-cloud/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: /admin public key: (\S+)/.exec(out)![1], apiKey: /admin private key: (\S+)/.exec(out)![1] }),
    });
    const { access_token: adminToken } = await login.json() as { access_token: string };
    const asSystem = async (query: string, variables: Record<string, unknown>) => {
      const res = await fetch(`${served.url}/api/admin/v3.0/local/app/${served.appId}/graphql`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` }, body: JSON.stringify({ query, variables }),
      });
      const body = await res.json() as { errors?: unknown; data: Record<string, unknown> };
      assert.equal(body.errors, undefined, JSON.stringify(body));
      return body.data;
    };
    await asSystem('mutation($p: String!) { insertOneTask(data: {_id: "65a0000000000000000000a1", _partition: $p, name: "moving in", status: "open", isComplete: false}) { _id } }', { p: bobId });
    await asSystem('mutation($p: String!) { insertOneProject(data: {_id: "65a0000000000000000000b1", _partition: $p, name: "bob\'s project"}) { _id } }', { p: bobId });
    const watcher = startProbe(script({ credentials: ada, partition: adaId, steps: [{ waitDownload: true }, { watchMs: 4000 }] }));
    await watcher.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    await asSystem('mutation($p: String!) { updateOneTask(query: {_id: "65a0000000000000000000a1"}, set: {_partition: $p}) { _id } }', { p: adaId });
    const inserted = await watcher.waitFor((l) => l.event === 'change' && l.kind === 'insert' && (l.value as { name?: string }).name === 'moving in', 5000);
    assert.ok(inserted);
    await asSystem('mutation($p: String!) { updateOneTask(query: {_id: "65a0000000000000000000a1"}, set: {_partition: $p}) { _id } }', { p: bobId });
    await watcher.waitFor((l) => l.event === 'change' && l.kind === 'delete' && JSON.stringify(l.id) === JSON.stringify({ $oid: '65a0000000000000000000a1' }), 5000);
    assertOk(await watcher.done, 'watch');
    const linking = await runProbe(script({
      credentials: ada, partition: adaId,
      schema: [{ ...TASK_SCHEMA[0], properties: { ...TASK_SCHEMA[0]!.properties, project: 'Project' } }, { name: 'Project', primaryKey: '_id', properties: { _id: 'objectId', _partition: 'string?', name: 'string' } }],
      writes: [{ op: 'create', type: 'Task', value: { _id: oid(40), _partition: adaId, name: 'linked', status: 'open', isComplete: false, tags: [], project: { _id: { $oid: '65a0000000000000000000b1' }, _partition: adaId, name: 'taken over' } } }],
    }), ['--cancel-waits-on-error', '--reconnect', 'testing']);
    assert.equal(linking.events('protocol_error')[0]?.rawErrorCode, 212, JSON.stringify(linking.events('protocol_error')));
    const data = await asSystem('{ project(query: {_id: "65a0000000000000000000b1"}) { name _partition } }', {});
    assert.deepEqual(data.project, { name: "bob's project", _partition: bobId });
  });

  test('a partition of the wrong type is ErrorIllegalDatabasePath; another user\'s partition is permission denied', async () => {
    const wrongType = await runProbe(script({ credentials: ada, partition: { $oid: '65a000000000000000000099' } }), ['--cancel-waits-on-error', '--reconnect', 'testing']);
    const illegal = wrongType.events('protocol_error')[0];
    assert.equal(illegal?.rawErrorCode, 204, JSON.stringify(wrongType.lines.filter((l) => l.event === 'protocol_error')));
    assert.match(String(illegal!.message), /expected partition to have type string but found objectId/);
    const denied = await runProbe(script({ credentials: bob, partition: adaId }), ['--cancel-waits-on-error', '--reconnect', 'testing']);
    assert.equal(denied.events('protocol_error')[0]?.rawErrorCode, 206);
    assert.notEqual(denied.result.exitCode, 0);
  });

  test('offline edits on two devices converge as on realm-core\'s reference server', async () => {
    const reference = await startReferenceServer();
    try {
      const outcome = async (route: string | undefined, tag: string) => {
        const partition = route ? `ref-${tag}` : bobId;
        const common = { credentials: bob, partition, ...(route ? { syncRoute: route } : {}) };
        const dirA = path.join(state, `${tag}-a`);
        const dirB = path.join(state, `${tag}-b`);
        const seed = await runProbe(script({ ...common, dataDir: dirA, writes: [
          { op: 'create', type: 'Task', value: { _id: oid(10), _partition: partition, name: 'seed', status: 'open', isComplete: false, tags: ['x'] } },
          { op: 'create', type: 'Task', value: { _id: oid(11), _partition: partition, name: 'doomed', status: 'open', isComplete: false, tags: [] } },
        ] }));
        assertOk(seed, `${tag} seed`);
        assertOk(await runProbe(script({ ...common, dataDir: dirB })), `${tag} B first sync`);
        // Offline on both: the same field, different fields, a delete against an update.
        assertOk(await runProbe(script({ ...common, dataDir: dirA, offline: true, steps: [
          { write: { op: 'update', type: 'Task', id: oid(10), value: { name: 'by A', priority: 1 } } },
          { write: { op: 'update', type: 'Task', id: oid(11), value: { status: 'kept by A' } } },
        ] })), `${tag} A offline`);
        assertOk(await runProbe(script({ ...common, dataDir: dirB, offline: true, steps: [
          { sleepMs: 20 },
          { write: { op: 'update', type: 'Task', id: oid(10), value: { name: 'by B', status: 'done' } } },
          { write: { op: 'delete', type: 'Task', id: oid(11) } },
        ] })), `${tag} B offline`);
        assertOk(await runProbe(script({ ...common, dataDir: dirA })), `${tag} A sync`);
        assertOk(await runProbe(script({ ...common, dataDir: dirB })), `${tag} B sync`);
        const a = await runProbe(script({ ...common, dataDir: dirA }));
        const b = await runProbe(script({ ...common, dataDir: dirB }));
        // Realm lists a table's objects in its own key order; compare them by primary key.
        const strip = (objects: Record<string, unknown>[]) => objects.map(({ _partition: _, ...rest }) => rest)
          .filter((t) => (t._id as { $oid: string }).$oid.startsWith('65a00000000000000000001'))
          .sort((x, y) => (x._id as { $oid: string }).$oid.localeCompare((y._id as { $oid: string }).$oid));
        assert.deepEqual(strip(a.objects('Task')), strip(b.objects('Task')), `${tag}: the two devices differ`);
        return strip(a.objects('Task'));
      };
      const ours = await outcome(undefined, 'ours');
      const theirs = await outcome(reference.url, 'ref');
      assert.deepEqual(ours, theirs);
      // B wrote the name later (last writer wins per field), A's priority stays, and the delete won over A's update.
      assert.deepEqual(ours.map((t) => [t.name, t.status, t.priority]), [['by B', 'done', 1]]);
      const data = await graphql(served, bob.email, bob.password, 'query($p: String!) { tasks(query: {_partition: $p}) { _id name status priority } }', { p: bobId });
      const stored = (data.tasks as Record<string, unknown>[]).filter((t) => String(t._id).startsWith('65a00000000000000000001')).map((t) => ({ _id: t._id, name: t.name, status: t.status, priority: t.priority }));
      assert.deepEqual(stored, ours.map((t) => ({ _id: (t._id as { $oid: string }).$oid, name: t.name, status: t.status, priority: t.priority })));
    } finally {
      await reference.close();
    }
  });
});
