// Flexible sync beyond subscriptions, end to end against `node dist/cli.js serve`: asymmetric (data
// ingest) object types, development mode turning a client's schema and queries into collection schemas and
// queryable fields, and bad subscription input. realm-core 14.14's own client (`realm-sync-probe
// --flexible`) plays the apps' clients; what it refuses to send (a subscription to an asymmetric type, broken
// QUERY bodies, a query version going backwards) comes from a raw WebSocket client speaking the protocol
// with our codec, while the probe keeps syncing beside it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { encodeChangeset } from '../../runtime/sync/wire/changeset';
import type { Instruction, Payload } from '../../runtime/sync/wire/instructions';
import type { ServerMessage } from '../../runtime/sync/wire/messages';
import { probeAvailable, registerUser, runProbe, startProbe, type ProbeRun } from '../helpers/realm-probe';
import { connectRawSync, type RawSyncClient } from '../helpers/realm-raw-client';
import { copyApp, graphql, serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';
const FLEXIBLE_PROTOCOL = 'com.mongodb.realm-query-sync#14';

const NOTE = { name: 'Note', primaryKey: '_id', properties: { _id: 'objectId', owner_id: 'string', text: 'string' } };
const READING = { name: 'Reading', asymmetric: true, primaryKey: '_id', properties: { _id: 'objectId', owner_id: 'string', sensor: 'string', value: 'double' } };

function oid(n: number): { $oid: string } {
  return { $oid: `65d0000000000000000${String(n).padStart(5, '0')}` };
}

/** The session a server message is for (0 for connection-level ones). */
const sessionOf = (m: ServerMessage) => ('session' in m ? m.session : 0);
const json = (value: unknown) => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

function writeFiles(appDir: string, files: Record<string, unknown>): void {
  for (const [file, value] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(appDir, file)), { recursive: true });
    fs.writeFileSync(path.join(appDir, file), JSON.stringify(value, null, 2));
  }
}

/** Each user reads and writes the documents whose `owner_id` is theirs. */
const ownerRules = (collection: string) => ({
  collection, database: 'ingestdb',
  roles: [{
    name: 'owner', apply_when: {},
    document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } },
    read: true, write: true, insert: true, delete: true, search: true,
  }],
});

/** A flexible app with a `Note` collection clients subscribe to and a `Reading` collection they only insert into (listed in `asymmetric_tables`). */
function ingestApp(): string {
  const appDir = copyApp();
  writeFiles(appDir, {
    'sync/config.json': {
      type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'ingestdb',
      is_recovery_mode_disabled: false, queryable_fields_names: ['owner_id'], asymmetric_tables: ['Reading'],
    },
    'data_sources/mongodb-atlas/ingestdb/Note/schema.json': {
      title: 'Note', bsonType: 'object', required: ['_id', 'owner_id', 'text'],
      properties: { _id: { bsonType: 'objectId' }, owner_id: { bsonType: 'string' }, text: { bsonType: 'string' } },
    },
    'data_sources/mongodb-atlas/ingestdb/Note/rules.json': ownerRules('Note'),
    'data_sources/mongodb-atlas/ingestdb/Reading/schema.json': {
      title: 'Reading', bsonType: 'object', required: ['_id', 'owner_id', 'sensor', 'value'],
      properties: { _id: { bsonType: 'objectId' }, owner_id: { bsonType: 'string' }, sensor: { bsonType: 'string' }, value: { bsonType: 'double' } },
    },
    'data_sources/mongodb-atlas/ingestdb/Reading/rules.json': ownerRules('Reading'),
  });
  return appDir;
}

/** A flexible app in development mode with an empty development database and a default rule letting every user read and write. */
function developmentApp(): string {
  const appDir = copyApp();
  writeFiles(appDir, {
    'sync/config.json': {
      type: 'flexible', state: 'enabled', development_mode_enabled: true, service_name: 'mongodb-atlas', database_name: 'devdb',
      is_recovery_mode_disabled: false, queryable_fields_names: [],
    },
    'data_sources/mongodb-atlas/default_rule.json': {
      roles: [{ name: 'everyone', apply_when: {}, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true }],
    },
  });
  return appDir;
}

function assertOk(run: ProbeRun, what: string): void {
  assert.equal(run.result.exitCode, 0, `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed|subscription_state|protocol/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);
}

async function login(served: ServedDist, email: string, password: string): Promise<{ token: string; userId: string }> {
  const res = await fetch(`${served.app}/auth/providers/local-userpass/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: email, password }),
  });
  assert.equal(res.status, 200);
  const body = await res.json() as { access_token: string; user_id: string };
  return { token: body.access_token, userId: body.user_id };
}

async function graphqlData(served: ServedDist, token: string, query: string, variables: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const { status, body } = await graphql(`${served.app}/graphql`, token, query, variables);
  assert.equal(status, 200, json(body));
  assert.equal(body.errors, undefined, json(body.errors));
  return body.data as Record<string, unknown>;
}

/** A flexible sync connection speaking the protocol with our codec. */
function connect(served: ServedDist, token: string): Promise<RawSyncClient> {
  return connectRawSync(`${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${token}`, [FLEXIBLE_PROTOCOL], true);
}

/** BIND with a new client file, then IDENT with an empty subscription set (`query` to send one instead). */
async function identify(client: RawSyncClient, session: number, query = { version: 0n, body: '{}' }): Promise<void> {
  client.send({ type: 'bind', session, serverPath: '{"schemaVersion":0,"sessionReason":0}', signedUserToken: '', needClientFileIdent: true, isSubserver: false });
  const ident = await client.next((m) => m.type === 'error' || (sessionOf(m) === session && (m.type === 'ident' || m.type === 'json_error')));
  assert.equal(ident.type, 'ident', json(ident));
  if (ident.type !== 'ident') return;
  client.send({
    type: 'ident', session, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt,
    downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n, query,
  });
}

/** Sends QUERY and waits for its answer: the QUERY_ERROR's message, or undefined once its bootstrap's last DOWNLOAD came. */
async function subscribe(client: RawSyncClient, session: number, version: number, body: string): Promise<string | undefined> {
  client.send({ type: 'query', session, queryVersion: BigInt(version), body });
  const answer = await client.next((m) => m.type === 'error' || (sessionOf(m) === session && (
    (m.type === 'query_error' && m.queryVersion === BigInt(version))
    || (m.type === 'download' && m.flexible?.queryVersion === BigInt(version) && m.flexible.batchState === 'lastInBatch')
    || m.type === 'json_error')));
  if (answer.type === 'query_error') return answer.message;
  assert.equal(answer.type, 'download', json(answer));
  return undefined;
}

describe('flexible sync: asymmetric (data ingest) objects and bad subscription input', { skip, timeout: 240_000 }, () => {
  let served: ServedDist;
  let adaId: string;
  let bobId: string;
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  const bob = { type: 'emailPassword', email: 'bob@example.com', password: 'bob-Passw0rd' };
  const script = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, flexible: true, schema: [NOTE, READING], timeoutMs: 10000, ...extra });

  before(async () => {
    served = await serveDist({ appDir: ingestApp() });
    adaId = await registerUser(served.app, ada.email, ada.password);
    bobId = await registerUser(served.app, bob.email, bob.password);
  });
  after(async () => {
    await served?.close();
  });

  test('asymmetric objects are inserted through the rules, a refused one is a compensating write, and none is ever downloaded', async () => {
    const watcher = startProbe(script({ credentials: bob, subscriptions: [`Note=owner_id == "${bobId}"`], steps: [{ waitDownload: true }, { watchMs: 6000 }] }));
    await watcher.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    const ingest = await runProbe(script({
      credentials: ada, subscriptions: [`Note=owner_id == "${adaId}"`], cancelWaitsOnError: true,
      steps: [
        { write: [
          { op: 'create', type: 'Reading', value: { _id: oid(1), owner_id: adaId, sensor: 'kitchen', value: 21.5 } },
          { op: 'create', type: 'Reading', value: { _id: oid(2), owner_id: adaId, sensor: 'cellar', value: 12.25 } },
          { op: 'create', type: 'Reading', value: { _id: oid(3), owner_id: bobId, sensor: 'forged', value: 99 } },
          { op: 'create', type: 'Note', value: { _id: oid(10), owner_id: adaId, text: 'readings sent' } },
        ] },
        { waitUpload: true },
        // The client reports the compensating write once it has integrated the server version that carries it.
        { sleepMs: 1500 },
        { dump: true },
      ],
    }));
    const errors = ingest.events('sync_error');
    assert.equal(errors.length, 1, json(ingest.lines.filter((l) => /error|protocol/.test(l.event))));
    const writes = errors[0]!.compensatingWrites as { objectName: string; primaryKey: unknown; reason: string }[];
    assert.deepEqual(writes.map((w) => [w.objectName, w.primaryKey]), [['Reading', oid(3)]]);
    assert.match(writes[0]!.reason, /^write to .* in table "[^"]+" not allowed$/);
    assert.deepEqual(ingest.objects('Reading'), [], 'the client keeps no asymmetric object once uploaded');
    assert.deepEqual(ingest.objects('Note').map((n) => n.text), ['readings sent']);

    const adaToken = (await login(served, ada.email, ada.password)).token;
    const bobToken = (await login(served, bob.email, bob.password)).token;
    const readings = await graphqlData(served, adaToken, 'query { readings(sortBy: SENSOR_ASC) { sensor value owner_id } }');
    assert.deepEqual(readings.readings, [{ sensor: 'cellar', value: 12.25, owner_id: adaId }, { sensor: 'kitchen', value: 21.5, owner_id: adaId }]);
    assert.deepEqual((await graphqlData(served, bobToken, 'query { readings { sensor } }')).readings, [], 'the refused reading is not in the store');

    // A reading written by GraphQL does not reach sync clients either; a note of bob's does.
    await graphqlData(served, bobToken, 'mutation($o: String!) { insertOneReading(data: {_id: "65d000000000000000000020", owner_id: $o, sensor: "porch", value: 3.5}) { _id } }', { o: bobId });
    await graphqlData(served, bobToken, 'mutation($o: String!) { insertOneNote(data: {_id: "65d000000000000000000021", owner_id: $o, text: "from graphql"}) { _id } }', { o: bobId });
    const note = await watcher.waitFor((l) => l.event === 'change' && l.type === 'Note', 8000);
    assert.equal((note.value as { text: string }).text, 'from graphql');
    const run = await watcher.done;
    assertOk(run, 'watcher');
    assert.deepEqual(run.events('change').filter((l) => l.type === 'Reading'), [], 'no asymmetric object is downloaded');
    assert.deepEqual(run.objects('Reading'), []);
    assert.match(served.stderr(), /compensating write: write to ObjectID\("[0-9a-f]+"\) in table "Reading" not allowed/);
  });

  test('an asymmetric object whose _id is already in the collection is dropped, as the platform drops it: no error, the stored one stays', async () => {
    const again = await runProbe(script({
      credentials: ada, cancelWaitsOnError: true,
      steps: [
        // A key stored before, and one stored before with a document the rules refuse: both dropped, nothing said.
        { write: [{ op: 'create', type: 'Reading', value: { _id: oid(1), owner_id: adaId, sensor: 'kitchen', value: -40 } }] },
        { write: [{ op: 'create', type: 'Reading', value: { _id: oid(2), owner_id: bobId, sensor: 'cellar', value: 0 } }] },
        { write: [{ op: 'create', type: 'Reading', value: { _id: oid(4), owner_id: adaId, sensor: 'attic', value: 30 } }] },
        { waitUpload: true },
        { sleepMs: 1000 },
      ],
    }));
    assertOk(again, 'ingest again');
    assert.deepEqual(again.events('sync_error'), [], json(again.lines.filter((l) => /error|protocol/.test(l.event))));
    const { token } = await login(served, ada.email, ada.password);
    const readings = await graphqlData(served, token, 'query { readings(sortBy: SENSOR_ASC) { sensor value } }');
    assert.deepEqual(readings.readings, [{ sensor: 'attic', value: 30 }, { sensor: 'cellar', value: 12.25 }, { sensor: 'kitchen', value: 21.5 }]);
  });

  test('a subscription to an asymmetric type is a QUERY_ERROR (realm-core\'s client refuses to send one); the session goes on', async () => {
    const { token } = await login(served, ada.email, ada.password);
    const client = await connect(served, token);
    await identify(client, 1);
    assert.match(String(await subscribe(client, 1, 1, '{"Reading":"TRUEPREDICATE"}')), /table "Reading" is an asymmetric \(data ingest\) object type/);
    assert.equal(await subscribe(client, 1, 2, `{"Note":"owner_id == \\"${adaId}\\""}`), undefined, 'the next version is bootstrapped');
    client.close();
  });

  test('a changeset that changes or erases an asymmetric object instead of creating it is a bad changeset (212); the object is unchanged', async () => {
    const { token } = await login(served, ada.email, ada.password);
    const reading = { type: 'objectId' as const, value: new ObjectId(oid(1).$oid) };
    const attempts: Instruction[][] = [
      [{ type: 'Update', table: 'Reading', object: reading, field: 'value', path: [], value: { type: 'double', value: -1 }, isDefault: false, priorSize: 0 }],
      [{ type: 'EraseObject', table: 'Reading', object: reading }],
    ];
    for (const instructions of attempts) {
      const client = await connect(served, token);
      await identify(client, 1);
      const first = await client.next((m) => m.type === 'download');
      const latest = first.type === 'download' ? first.downloadServerVersion : 0n;
      client.send({ type: 'upload', session: 1, progressClientVersion: 2n, progressServerVersion: latest, lockedServerVersion: latest, changesets: [
        { version: 2n, lastIntegratedRemoteVersion: latest, originTimestamp: 1000n, originFileIdent: 0n, instructions: [], bytes: encodeChangeset(instructions) },
      ] });
      const refused = await client.next((m) => m.type === 'json_error' || m.type === 'error');
      assert.equal(refused.type === 'json_error' && refused.errorCode, 212, json(refused));
      assert.match(refused.type === 'json_error' ? String(refused.body.message) : '', /(Update|EraseObject) on Reading .*, an asymmetric \(data ingest\) object: a changeset may only create it/);
      client.close();
    }
    const data = await graphqlData(served, token, 'query { reading(query: {sensor: "kitchen"}) { value } }');
    assert.deepEqual(data.reading, { value: 21.5 });
  });

  test('a changeset that sets an object\'s primary key is a bad changeset (212); the other user\'s note keeps its owner and text', async () => {
    const adaLogin = await login(served, ada.email, ada.password);
    const bobLogin = await login(served, bob.email, bob.password);
    const victimNote = oid(30).$oid;
    await graphqlData(served, adaLogin.token, 'mutation($data: NoteInsertInput!) { insertOneNote(data: $data) { _id } }', { data: { _id: victimNote, owner_id: adaId, text: 'ada\'s own' } });
    const attackerNote = { type: 'objectId' as const, value: new ObjectId(oid(31).$oid) };
    const set = (field: string, value: Payload): Instruction =>
      ({ type: 'Update', table: 'Note', object: attackerNote, field, path: [], value, isDefault: false, priorSize: 0 });
    const client = await connect(served, bobLogin.token);
    await identify(client, 1);
    assert.equal(await subscribe(client, 1, 1, `{"Note":"owner_id == \\"${bobId}\\""}`), undefined);
    const upload = async (version: bigint, instructions: Instruction[]) => {
      client.send({ type: 'upload', session: 1, progressClientVersion: version, progressServerVersion: 0n, lockedServerVersion: 0n, changesets: [
        { version, lastIntegratedRemoteVersion: 0n, originTimestamp: 1000n, originFileIdent: 0n, instructions: [], bytes: encodeChangeset(instructions) },
      ] });
      return client.next((m) => m.type === 'error' || m.type === 'json_error' || (m.type === 'download' && m.uploadClientVersion >= version));
    };
    const created = await upload(2n, [
      { type: 'CreateObject', table: 'Note', object: attackerNote },
      set('owner_id', { type: 'string', value: bobId }), set('text', { type: 'string', value: 'bob\'s note' }),
    ]);
    assert.equal(created.type, 'download', json(created));
    const refused = await upload(3n, [set('_id', { type: 'objectId', value: new ObjectId(victimNote) }), set('text', { type: 'string', value: 'overwritten' })]);
    assert.equal(refused.type === 'json_error' && refused.errorCode, 212, json(refused));
    client.close();
    const note = (token: string, id: string) => graphqlData(served, token, 'query($id: ObjectId!) { note(query: { _id: $id }) { owner_id text } }', { id });
    assert.deepEqual((await note(adaLogin.token, victimNote)).note, { owner_id: adaId, text: 'ada\'s own' });
    assert.deepEqual((await note(bobLogin.token, attackerNote.value.toHexString())).note, { owner_id: bobId, text: 'bob\'s note' });
    // Later tests count ada's notes.
    for (const [token, id] of [[adaLogin.token, victimNote], [bobLogin.token, attackerNote.value.toHexString()]] as const) {
      await graphqlData(served, token, 'mutation($id: ObjectId!) { deleteOneNote(query: { _id: $id }) { _id } }', { id });
    }
  });

  test('a write out of view the rules allow is refused as out of view; one they refuse says only "not allowed" (as the platform\'s reasons do)', async () => {
    const { token } = await login(served, ada.email, ada.password);
    const client = await connect(served, token);
    await identify(client, 1);
    assert.equal(await subscribe(client, 1, 1, '{"Note":"owner_id == \\"nobody\\""}'), undefined);
    const own = { type: 'objectId' as const, value: new ObjectId(oid(40).$oid) };
    const forged = { type: 'objectId' as const, value: new ObjectId(oid(41).$oid) };
    const create = (object: typeof own, owner: string): Instruction[] => [
      { type: 'CreateObject', table: 'Note', object },
      { type: 'Update', table: 'Note', object, field: 'owner_id', path: [], value: { type: 'string', value: owner }, isDefault: false, priorSize: 0 },
      { type: 'Update', table: 'Note', object, field: 'text', path: [], value: { type: 'string', value: 'out of view' }, isDefault: false, priorSize: 0 },
    ];
    client.send({ type: 'upload', session: 1, progressClientVersion: 2n, progressServerVersion: 0n, lockedServerVersion: 0n, changesets: [
      { version: 2n, lastIntegratedRemoteVersion: 0n, originTimestamp: 1000n, originFileIdent: 0n, instructions: [], bytes: encodeChangeset([...create(own, adaId), ...create(forged, bobId)]) },
    ] });
    const answer = await client.next((m) => m.type === 'error' || m.type === 'json_error');
    assert.equal(answer.type === 'json_error' && answer.errorCode, 231, json(answer));
    const updates = (answer.type === 'json_error' ? answer.body.rejectedUpdates : []) as { table: string; reason: string }[];
    assert.deepEqual(updates.map((u) => u.reason), [
      `write to ObjectID("${own.value.toHexString()}") in table "Note" not allowed; object is outside of the current query view`,
      `write to ObjectID("${forged.value.toHexString()}") in table "Note" not allowed`,
    ]);
    client.close();
    const notes = await graphqlData(served, token, 'query { notes(query: { text: "out of view" }) { text } }');
    assert.deepEqual(notes.notes, [], 'neither note was written');
  });

  test('a bootstrap kept for sharing never reaches a user whose rules select otherwise, even a client old enough to take it', async () => {
    const adas = await login(served, ada.email, ada.password);
    const bobs = await login(served, bob.email, bob.password);
    const noteId = new ObjectId(oid(50).$oid);
    await graphqlData(served, adas.token, 'mutation($id: ObjectId!, $o: String!) { insertOneNote(data: {_id: $id, owner_id: $o, text: "ada alone"}) { _id } }', { id: noteId.toHexString(), o: adaId });
    // Bob's client is identified before ada's bootstrap and its router paused: a bootstrap kept since would
    // be recent enough for it, so only the rules' outcome keeps ada's from serving him.
    const bobClient = await connect(served, bobs.token);
    await identify(bobClient, 1);
    await bobClient.next((m) => sessionOf(m) === 1 && m.type === 'download');
    bobClient.send({ type: 'test_command', session: 1, requestIdent: 1n, body: '{"command":"PAUSE_ROUTER_SESSION"}' });
    await bobClient.next((m) => sessionOf(m) === 1 && m.type === 'test_command');
    const body = '{"Note":"TRUEPREDICATE"}';
    const bootstrapOf = async (client: RawSyncClient) => {
      client.send({ type: 'query', session: 1, queryVersion: 1n, body });
      const objects: string[] = [];
      for (;;) {
        const m = await client.next((x) => x.type === 'error' || (sessionOf(x) === 1 && (x.type === 'download' || x.type === 'json_error' || x.type === 'query_error')));
        assert.equal(m.type, 'download', json(m));
        if (m.type !== 'download') return objects;
        for (const c of m.changesets) for (const i of c.instructions) if (i.type === 'CreateObject' && i.object.type === 'objectId') objects.push(i.object.value.toHexString());
        if (m.flexible?.queryVersion === 1n && m.flexible.batchState === 'lastInBatch') return objects;
      }
    };
    const adaClient = await connect(served, adas.token);
    await identify(adaClient, 1);
    assert.ok((await bootstrapOf(adaClient)).includes(noteId.toHexString()), 'ada\'s bootstrap holds her note');
    assert.ok(!(await bootstrapOf(bobClient)).includes(noteId.toHexString()), 'bob\'s, with the same query, does not');
    adaClient.close();
    bobClient.close();
    await graphqlData(served, adas.token, 'mutation($id: ObjectId!) { deleteOneNote(query: {_id: $id}) { _id } }', { id: noteId.toHexString() });
  });

  test('an update of an object that does not exist is refused as one the rules refuse: the answers do not tell which _id exists', async () => {
    const adas = await login(served, ada.email, ada.password);
    const bobs = await login(served, bob.email, bob.password);
    const existing = new ObjectId(oid(60).$oid);
    const missing = new ObjectId(oid(61).$oid);
    await graphqlData(served, bobs.token, 'mutation($id: ObjectId!, $o: String!) { insertOneNote(data: {_id: $id, owner_id: $o, text: "bob private"}) { _id } }', { id: existing.toHexString(), o: bobId });
    const client = await connect(served, adas.token);
    await identify(client, 1);
    assert.equal(await subscribe(client, 1, 1, `{"Note":"owner_id == \\"${adaId}\\""}`), undefined);
    const update = (id: ObjectId): Instruction => ({ type: 'Update', table: 'Note', object: { type: 'objectId', value: id }, field: 'text', path: [], value: { type: 'string', value: 'probe' }, isDefault: false, priorSize: 0 });
    client.send({ type: 'upload', session: 1, progressClientVersion: 2n, progressServerVersion: 0n, lockedServerVersion: 0n, changesets: [
      // Later than the insert (in sync time), so the merge keeps the update of the existing note.
      { version: 2n, lastIntegratedRemoteVersion: 0n, originTimestamp: BigInt(Date.now()), originFileIdent: 0n, instructions: [], bytes: encodeChangeset([update(existing), update(missing)]) },
    ] });
    const answer = await client.next((m) => m.type === 'error' || m.type === 'json_error');
    assert.equal(answer.type === 'json_error' && answer.errorCode, 231, json(answer));
    const updates = (answer.type === 'json_error' ? answer.body.rejectedUpdates : []) as { reason: string }[];
    assert.deepEqual(updates.map((u) => u.reason), [existing, missing].map((id) => `write to ObjectID("${id.toHexString()}") in table "Note" not allowed`));
    client.close();
    const notes = await graphqlData(served, bobs.token, 'query($id: ObjectId!) { note(query: {_id: $id}) { text } }', { id: existing.toHexString() });
    assert.deepEqual(notes.note, { text: 'bob private' });
    await graphqlData(served, bobs.token, 'mutation($id: ObjectId!) { deleteOneNote(query: {_id: $id}) { _id } }', { id: existing.toHexString() });
  });

  test('an asymmetric write the rules refuse is write_not_allowed (230): a client reset, the refused objects listed, no server version; the session ends', async () => {
    const { token } = await login(served, ada.email, ada.password);
    const client = await connect(served, token);
    await identify(client, 1);
    await client.next((m) => m.type === 'download');
    const reading = { type: 'objectId' as const, value: new ObjectId(oid(50).$oid) };
    const set = (field: string, value: Payload): Instruction => ({ type: 'Update', table: 'Reading', object: reading, field, path: [], value, isDefault: false, priorSize: 0 });
    client.send({ type: 'upload', session: 1, progressClientVersion: 2n, progressServerVersion: 0n, lockedServerVersion: 0n, changesets: [
      { version: 2n, lastIntegratedRemoteVersion: 0n, originTimestamp: 1000n, originFileIdent: 0n, instructions: [], bytes: encodeChangeset([
        { type: 'CreateObject', table: 'Reading', object: reading },
        set('owner_id', { type: 'string', value: bobId }), set('sensor', { type: 'string', value: 'forged' }), set('value', { type: 'double', value: 1 }),
      ]) },
    ] });
    const answer = await client.next((m) => m.type === 'error' || m.type === 'json_error');
    assert.equal(answer.type === 'json_error' && answer.errorCode, 230, json(answer));
    const body = answer.type === 'json_error' ? answer.body : {};
    assert.equal(body.action, 'ClientReset');
    assert.equal(body.compensatingWriteServerVersion, undefined);
    assert.equal(body.rejectedClientVersion, 2);
    assert.deepEqual((body.rejectedUpdates as { table: string }[]).map((u) => u.table), ['Reading']);
    client.close();
    const { token: bobToken } = await login(served, bob.email, bob.password);
    assert.deepEqual((await graphqlData(served, bobToken, 'query { readings(query: { sensor: "forged" }) { sensor } }')).readings, []);
  });

  test('a client that reports an error integrating what it was sent (JSON_ERROR) is told to reset (217); other sessions go on', async () => {
    const { token } = await login(served, ada.email, ada.password);
    const client = await connect(served, token);
    await identify(client, 1);
    await client.next((m) => m.type === 'download' && m.session === 1);
    await identify(client, 2);
    client.send({ type: 'json_error', session: 1, errorCode: 212, body: JSON.stringify({ message: 'Failed to apply received changeset' }) });
    const answer = await client.next((m) => m.type === 'error' || (m.type === 'json_error' && m.session === 1));
    assert.equal(answer.type === 'json_error' && answer.errorCode, 217, json(answer));
    assert.equal(answer.type === 'json_error' && answer.body.action, 'ClientReset');
    assert.equal(await subscribe(client, 2, 1, `{"Note":"owner_id == \\"${adaId}\\""}`), undefined, 'the other session still answers');
    client.close();
  });

  test('outside development mode a client cannot change which types are asymmetric (225); others keep subscribing to Note and Task', async () => {
    const { token } = await login(served, bob.email, bob.password);
    const declarations: [string, Instruction][] = [
      // Task: synced (the example app's collection) and declared by no client yet.
      ['Task', { type: 'AddTable', table: 'Task', spec: { kind: 'topLevel', pkField: '_id', pkType: 'objectId', pkNullable: false, asymmetric: true } }],
      ['Note', { type: 'AddTable', table: 'Note', spec: { kind: 'topLevel', pkField: '_id', pkType: 'objectId', pkNullable: false, asymmetric: true } }],
      ['Reading', { type: 'AddTable', table: 'Reading', spec: { kind: 'topLevel', pkField: '_id', pkType: 'objectId', pkNullable: false, asymmetric: false } }],
    ];
    for (const [table, declaration] of declarations) {
      const client = await connect(served, token);
      await identify(client, 1);
      // Based on the latest server version, so the server's own schema check answers (not the merge).
      const first = await client.next((m) => m.type === 'download');
      const latest = first.type === 'download' ? first.downloadServerVersion : 0n;
      client.send({ type: 'upload', session: 1, progressClientVersion: 1n, progressServerVersion: latest, lockedServerVersion: latest, changesets: [
        { version: 1n, lastIntegratedRemoteVersion: latest, originTimestamp: 1000n, originFileIdent: 0n, instructions: [], bytes: encodeChangeset([declaration]) },
      ] });
      const refused = await client.next((m) => m.type === 'error' || m.type === 'json_error');
      assert.equal(refused.type === 'json_error' && refused.errorCode, 225, json(refused));
      assert.match(refused.type === 'json_error' ? String(refused.body.message) : '', new RegExp(`table "${table}" declared as .*"asymmetric_tables" of sync/config.json`));
      client.close();
    }
    const { token: adaToken } = await login(served, ada.email, ada.password);
    const reader = await connect(served, adaToken);
    await identify(reader, 1);
    assert.equal(await subscribe(reader, 1, 1, `{"Note":"owner_id == \\"${adaId}\\"","Task":"TRUEPREDICATE"}`), undefined, 'Note and Task are still tables clients subscribe to');
    assert.match(String(await subscribe(reader, 1, 2, '{"Reading":"TRUEPREDICATE"}')), /asymmetric/, 'Reading is still asymmetric');
    reader.close();
  });

  test('bad subscription input is a QUERY_ERROR for that version; the session keeps its set and others keep syncing', async () => {
    const { token } = await login(served, ada.email, ada.password);
    const client = await connect(served, token);
    await identify(client, 1);
    const bigOr = Array.from({ length: 40_000 }, (_, i) => `owner_id == "user-${i}"`).join(' OR ');
    const cases: [string, string, RegExp][] = [
      ['not JSON', '{"Note": TRUEPREDICATE', /invalid query body: not JSON/],
      ['not an object', '["Note"]', /expected an object of object types to queries/],
      ['an unknown table', '{"Nope":"TRUEPREDICATE"}', /table "Nope" is not a synced object type/],
      ['a field that is not queryable', '{"Note":"text == \\"x\\""}', /unsupported query for table "Note": key "text" is not a queryable field/],
      ['RQL that does not parse', '{"Note":"owner_id == "}', /invalid query for table "Note"/],
      ['one query over 256 kB', JSON.stringify({ Note: bigOr.slice(0, 300_000) }), /the limit is 262144/],
      ['a set over 1 MiB', JSON.stringify({ Note: bigOr, Reading: bigOr }), /subscription set too large: its queries are \d+ bytes; the limit is 1048576/],
      ['a set over 1000 object types', JSON.stringify(Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`T${i}`, 'TRUEPREDICATE']))), /subscription set too large: it queries 1001 object types; the limit is 1000/],
    ];
    let version = 0;
    for (const [what, body, expected] of cases) {
      const message = await subscribe(client, 1, ++version, body);
      assert.match(String(message), expected, what);
    }
    assert.match(served.stderr(), /query version \d+ refused: subscription set too large/);
    // Each refusal left the session as it was: the next version is accepted and bootstrapped.
    assert.equal(await subscribe(client, 1, ++version, `{"Note":"owner_id == \\"${adaId}\\""}`), undefined);

    const beside = await runProbe(script({ credentials: ada, subscriptions: [`Note=owner_id == "${adaId}"`], steps: [{ waitDownload: true }, { dump: true }] }));
    assertOk(beside, 'a client beside the bad one');
    assert.deepEqual(beside.objects('Note').map((n) => n.text), ['readings sent']);
    client.close();
  });

  test('an IDENT whose subscription set is bad gets the QUERY_ERROR of that version and an empty view', async () => {
    const { token } = await login(served, ada.email, ada.password);
    const client = await connect(served, token);
    await identify(client, 1, { version: 1n, body: 'Note=TRUEPREDICATE' });
    const error = await client.next((m) => m.type === 'query_error' || m.type === 'json_error' || m.type === 'error');
    assert.equal(error.type, 'query_error', json(error));
    assert.equal(error.type === 'query_error' && error.queryVersion, 1n);
    assert.match(error.type === 'query_error' ? error.message : '', /invalid query body: not JSON/);
    assert.equal(await subscribe(client, 1, 2, `{"Note":"owner_id == \\"${adaId}\\""}`), undefined);
    client.close();
  });

  test('a query version going backwards ends that session with error 226; the connection binds a new one', async () => {
    const { token } = await login(served, ada.email, ada.password);
    const client = await connect(served, token);
    await identify(client, 1);
    assert.equal(await subscribe(client, 1, 3, '{"Note":"TRUEPREDICATE"}'), undefined);
    client.send({ type: 'query', session: 1, queryVersion: 2n, body: '{"Note":"TRUEPREDICATE"}' });
    const error = await client.next((m) => m.type === 'json_error' || m.type === 'error');
    assert.equal(error.type, 'json_error', json(error));
    if (error.type !== 'json_error') return;
    assert.equal(error.errorCode, 226);
    assert.equal(error.session, 1);
    assert.match(String(error.body.message), /query version 2 is not after the active version 3/);
    client.send({ type: 'unbind', session: 1 });
    await identify(client, 2);
    assert.equal(await subscribe(client, 2, 1, `{"Note":"owner_id == \\"${adaId}\\""}`), undefined);
    client.close();
  });
});

describe('flexible sync in development mode', { skip, timeout: 240_000 }, () => {
  let served: ServedDist;
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  const bob = { type: 'emailPassword', email: 'bob@example.com', password: 'bob-Passw0rd' };
  const POSTCARD = { name: 'Postcard', primaryKey: '_id', properties: { _id: 'objectId', owner: 'string', city: 'string', stamps: 'int', tags: 'string[]' } };
  const script = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, flexible: true, schema: [POSTCARD], timeoutMs: 15000, ...extra });

  before(async () => {
    served = await serveDist({ appDir: developmentApp() });
    await registerUser(served.app, ada.email, ada.password);
    await registerUser(served.app, bob.email, bob.password);
  });
  after(async () => {
    await served?.close();
  });

  test('a client\'s schema becomes a collection schema and the fields it subscribes on become queryable; a second client subscribes on another field', async () => {
    const first = await runProbe(script({
      credentials: ada, subscriptions: ['Postcard=owner == "ada"'],
      steps: [
        { write: [
          { op: 'create', type: 'Postcard', value: { _id: oid(1), owner: 'ada', city: 'Lisbon', stamps: 2, tags: ['sea'] } },
          { op: 'create', type: 'Postcard', value: { _id: oid(2), owner: 'ada', city: 'Porto', stamps: 1, tags: [] } },
        ] },
        { waitUpload: true },
      ],
    }));
    assertOk(first, 'the first client');
    assert.ok(first.events('subscription_state').some((l) => l.state === 'Complete'), 'its subscription completes');

    const schemaFile = path.join(served.appDir, 'data_sources/mongodb-atlas/devdb/Postcard/schema.json');
    const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as { title: string; properties: Record<string, unknown> };
    assert.equal(schema.title, 'Postcard');
    assert.deepEqual(Object.keys(schema.properties).sort(), ['_id', 'city', 'owner', 'stamps', 'tags']);
    assert.deepEqual(schema.properties.tags, { bsonType: 'array', items: { bsonType: 'string' } });
    const config = () => JSON.parse(fs.readFileSync(path.join(served.appDir, 'sync/config.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(config().collection_queryable_fields_names, { Postcard: ['owner'] });
    assert.match(served.stderr(), /development mode: "owner" is now a queryable field of collection Postcard/);

    const { token } = await login(served, ada.email, ada.password);
    const data = await graphqlData(served, token, 'query { postcards(sortBy: CITY_ASC) { city owner stamps } }');
    assert.deepEqual(data.postcards, [{ city: 'Lisbon', owner: 'ada', stamps: 2 }, { city: 'Porto', owner: 'ada', stamps: 1 }]);

    const second = await runProbe(script({ credentials: bob, subscriptions: ['Postcard=stamps >= 2 OR "sea" IN tags'], steps: [{ waitDownload: true }, { dump: true }] }));
    assertOk(second, 'the second client');
    assert.deepEqual(second.objects('Postcard').map((p) => p.city), ['Lisbon']);
    assert.deepEqual(config().collection_queryable_fields_names, { Postcard: ['owner', 'stamps', 'tags'] });
  });

  test('a type a client declares asymmetric joins asymmetric_tables; its objects are stored and never downloaded', async () => {
    const ping = { name: 'Ping', asymmetric: true, primaryKey: '_id', properties: { _id: 'objectId', source: 'string' } };
    const sender = await runProbe(script({
      credentials: ada, schema: [POSTCARD, ping], subscriptions: ['Postcard=owner == "ada"'],
      steps: [{ write: [{ op: 'create', type: 'Ping', value: { _id: oid(7), source: 'ada' } }] }, { waitUpload: true }],
    }));
    assertOk(sender, 'the sending client');
    const config = JSON.parse(fs.readFileSync(path.join(served.appDir, 'sync/config.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(config.asymmetric_tables, ['Ping']);
    assert.ok(fs.existsSync(path.join(served.appDir, 'data_sources/mongodb-atlas/devdb/Ping/schema.json')));
    const { token } = await login(served, ada.email, ada.password);
    assert.deepEqual((await graphqlData(served, token, 'query { pings { source } }')).pings, [{ source: 'ada' }]);
    // Another client's declaration of Ping as a plain table is refused now.
    const other = await runProbe(script({ credentials: bob, schema: [POSTCARD, { ...ping, asymmetric: false }], subscriptions: ['Postcard=owner == "bob"'], steps: [{ waitDownload: true }], cancelWaitsOnError: true }));
    assert.ok(other.lines.some((l) => /Ping/.test(JSON.stringify(l)) && /asymmetric/.test(JSON.stringify(l))), json(other.lines.filter((l) => /error/.test(l.event))));
  });
});
