// Sync schema versions (flx_schema_migration.cpp's behaviour), end to end: realm-core 14.14's own client
// (`realm-sync-probe --flexible --schema-version N`) against `node dist/cli.js serve`. A breaking change of
// the synced schema made through the Admin API (with `bypass_service_change=SyncSchemaVersionIncrease`, as
// realm-core's harness sends it) adds version 1; an additive one does not. Clients built for either version
// then sync side by side, each in its version's schema; a client file opened with another version is told to
// migrate (236, MigrateSchema) and keeps syncing at its old version meanwhile; an unknown version is refused
// (235); a client uploading a field its version does not have gets an error for its session only.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { ObjectId } from 'bson';
import { encodeChangeset, parseChangeset } from '../../runtime/sync/wire/changeset';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import type { ServerMessage } from '../../runtime/sync/wire/messages';
import { connectRawSync, messageText, type RawSyncClient } from '../helpers/realm-raw-client';
import { probeAvailable, registerUser, runProbe, startProbe, type ProbeRun } from '../helpers/realm-probe';
import { adminToken, CLI, copyApp, serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

/** Version 0: `legacy` (optional, queryable) is removed in version 1. */
const SCHEMA_V0 = [{ name: 'Thing', primaryKey: '_id', properties: { _id: 'objectId', name: 'string', count: 'int', legacy: 'string?' } }];
const SCHEMA_V1 = [{ name: 'Thing', primaryKey: '_id', properties: { _id: 'objectId', name: 'string', count: 'int' } }];

const oid = (n: number) => ({ $oid: `65c0000000000000000${String(n).padStart(5, '0')}` });

const jsonSchema = (withLegacy: boolean, extra = false) => ({
  title: 'Thing', bsonType: 'object', required: ['_id', 'name', 'count'],
  properties: {
    _id: { bsonType: 'objectId' }, name: { bsonType: 'string' }, count: { bsonType: 'long' },
    ...(withLegacy ? { legacy: { bsonType: 'string' } } : {}),
    ...(extra ? { extra: { bsonType: 'string' } } : {}),
  },
});

function flexibleApp(): string {
  const appDir = copyApp();
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(appDir, file)), { recursive: true });
    fs.writeFileSync(path.join(appDir, file), JSON.stringify(value, null, 2));
  };
  write('sync/config.json', {
    type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'versioned',
    is_recovery_mode_disabled: false, queryable_fields_names: ['name', 'count', 'legacy'],
  });
  write('data_sources/mongodb-atlas/versioned/Thing/schema.json', jsonSchema(true));
  write('data_sources/mongodb-atlas/versioned/Thing/rules.json', {
    collection: 'Thing', database: 'versioned',
    roles: [{ name: 'all', apply_when: {}, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true }],
  });
  return appDir;
}

function assertOk(run: ProbeRun, what: string): void {
  assert.equal(run.result.exitCode, 0, `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed|subscription_state|protocol|reset/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);
}

const protocolErrors = (run: ProbeRun) => run.events('protocol_error');
const sessionOf = (m: ServerMessage) => ('session' in m ? m.session : 0);

/** What a flexible session's bootstrap brought (`query version` complete): its DOWNLOADs' instructions and the last one. */
async function bootstrapOf(client: RawSyncClient, session: number, queryVersion: bigint): Promise<{ instructions: Instruction[]; last: Extract<ServerMessage, { type: 'download' }> }> {
  const instructions: Instruction[] = [];
  for (;;) {
    const m = await client.next((x) => x.type === 'error' || (sessionOf(x) === session && (x.type === 'download' || x.type === 'json_error' || x.type === 'query_error')));
    assert.equal(m.type, 'download', messageText(m));
    if (m.type !== 'download') throw new Error('unreachable');
    for (const c of m.changesets) instructions.push(...(c.bytes ? parseChangeset(c.bytes) : c.instructions));
    if (m.flexible?.queryVersion === queryVersion && m.flexible.batchState === 'lastInBatch') return { instructions, last: m };
  }
}

describe('sync schema versions against dist/cli.js serve', { skip, timeout: 300_000 }, () => {
  let served: ServedDist;
  let admin: Record<string, string>;
  let appUrl: string;
  const devices: string[] = [];
  const device = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-schema-version-'));
    devices.push(dir);
    return dir;
  };
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  const script = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, credentials: ada, flexible: true, timeoutMs: 10000, ...extra });
  const v0 = (extra: Record<string, unknown>) => script({ schema: SCHEMA_V0, schemaVersion: 0, subscriptions: ['Thing=count >= 0'], ...extra });
  const v1 = (extra: Record<string, unknown>) => script({ schema: SCHEMA_V1, schemaVersion: 1, subscriptions: ['Thing=count >= 0'], ...extra });

  const versions = async () => (await (await fetch(`${appUrl}/sync/schemas/versions`, { headers: admin })).json() as { versions: { version_major: number }[] }).versions.map((v) => v.version_major);

  /** The Admin API's schema PUT, as realm-core's harness makes it. */
  async function putSchema(schema: unknown): Promise<void> {
    const list = await (await fetch(`${appUrl}/schemas`, { headers: admin })).json() as { _id: string; metadata: { collection: string } }[];
    const thing = list.find((s) => s.metadata.collection === 'Thing')!;
    const res = await fetch(`${appUrl}/schemas/${thing._id}?bypass_service_change=SyncSchemaVersionIncrease`, {
      method: 'PUT', headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ _id: thing._id, schema, metadata: { data_source: 'mongodb-atlas', database: 'versioned', collection: 'Thing' }, relationships: {} }),
    });
    assert.ok(res.ok, `PUT schema: ${res.status} ${await res.text()}`);
  }

  before(async () => {
    served = await serveDist({ appDir: flexibleApp() });
    await registerUser(served.app, ada.email, ada.password);
    admin = { authorization: `Bearer ${await adminToken(served)}` };
    const profile = await (await fetch(`${served.url}/api/admin/v3.0/auth/profile`, { headers: admin })).json() as { roles: { group_id: string }[] };
    const groupApps = `${served.url}/api/admin/v3.0/groups/${profile.roles[0]!.group_id}/apps`;
    const apps = await (await fetch(groupApps, { headers: admin })).json() as { _id: string; client_app_id: string }[];
    appUrl = `${groupApps}/${apps.find((a) => a.client_app_id === served.appId)!._id}`;
  });
  after(async () => {
    await served?.close();
    for (const dir of devices) fs.rmSync(dir, { recursive: true, force: true });
  });

  const thing = (run: ProbeRun, n: number) => run.objects('Thing').find((o) => (o._id as { $oid: string }).$oid === oid(n).$oid);
  const dump = [{ waitDownload: true }, { dump: true }];
  const v0Device = () => v0Dir;
  let v0Dir = '';

  test('an additive change adds no version; a breaking one made through the Admin API adds version 1', async () => {
    v0Dir = device();
    const first = await runProbe(v0({ dataDir: v0Device(), steps: [{ write: [{ op: 'create', type: 'Thing', value: { _id: oid(1), name: 'one', count: 1, legacy: 'old' } }] }, { waitUpload: true }] }));
    assertOk(first, 'a version 0 client');
    assert.deepEqual(await versions(), [0]);
    await putSchema(jsonSchema(true, true));
    assert.deepEqual(await versions(), [0], 'adding a field is additive');
    await putSchema(jsonSchema(false, true));
    assert.deepEqual(await versions(), [0, 1], 'removing a field is breaking: version 1');
    assert.match(served.stderr(), /sync schema version 1: field "legacy" of table "Thing" removed/);
  });

  test('clients of versions 0 and 1 sync side by side, each in its version\'s schema', async () => {
    const fresh1 = device();
    const newer = await runProbe(v1({ dataDir: fresh1, steps: [{ write: [{ op: 'create', type: 'Thing', value: { _id: oid(2), name: 'two', count: 2 } }] }, { waitUpload: true }, ...dump] }));
    assertOk(newer, 'a version 1 client');
    assert.deepEqual(thing(newer, 1), { _id: oid(1), name: 'one', count: 1 });
    // The version 0 client (its file last synced at 0) gets the version 1 client's object, with its own schema's
    // `legacy` unset; what it writes to `legacy`, which the server's newest schema no longer has, is left out.
    const older = await runProbe(v0({ dataDir: v0Device(), steps: [
      { waitDownload: true },
      { write: { op: 'update', type: 'Thing', id: oid(1), value: { name: 'uno', legacy: 'changed' } } },
      { waitUpload: true }, ...dump,
    ] }));
    assertOk(older, 'the version 0 client again');
    assert.deepEqual(thing(older, 2), { _id: oid(2), name: 'two', count: 2, legacy: null });
    assert.equal(protocolErrors(older).length, 0);
    const reader0 = await runProbe(v0({ dataDir: device(), steps: dump }));
    assertOk(reader0, 'a fresh version 0 client');
    assert.deepEqual(thing(reader0, 1), { _id: oid(1), name: 'uno', count: 1, legacy: 'old' }, 'the name change synced, the legacy field was not written');
    const reader1 = await runProbe(v1({ dataDir: fresh1, steps: dump }));
    assertOk(reader1, 'the version 1 client again');
    assert.deepEqual(thing(reader1, 1), { _id: oid(1), name: 'uno', count: 1 });
    // A subscription on a field the newest version removed selects nothing (the documents still hold it).
    const onLegacy = await runProbe(v0({ dataDir: device(), subscriptions: ['Thing=legacy == "old"'], steps: dump }));
    assertOk(onLegacy, 'a version 0 client subscribed on the removed field');
    assert.equal(onLegacy.objects('Thing').length, 0);
  });

  test('a client file opened with the new version is told to migrate (236, MigrateSchema) and uploads its unsynced change at its old version first', async () => {
    const offline = await runProbe(v0({ dataDir: v0Device(), offline: true, subscriptions: [], steps: [{ write: [{ op: 'create', type: 'Thing', value: { _id: oid(3), name: 'three', count: 3, legacy: 'x' } }] }] }));
    assertOk(offline, 'an offline write at version 0');
    // The probe opens its realm synchronously: realm-core then records the pending migration and keeps syncing
    // at the old version (flx_schema_migration.cpp "Sync schema migrations don't work with sync open"); the
    // wipe and the new file are async open's part. A fresh realm at version 1 is what that migration ends with.
    const migrating = await runProbe(v1({ dataDir: v0Device(), steps: [{ waitUpload: true }, { waitDownload: true }] }));
    const [error] = protocolErrors(migrating);
    assert.equal(error?.rawErrorCode, 236, JSON.stringify(protocolErrors(migrating)));
    assert.equal(error?.action, 'MigrateSchema');
    const body = migrating.lines.find((l) => l.event === 'ws_recv' && /^json_error 236/.test(String(l.head)));
    assert.match(String(body?.body), /"previousSchemaVersion":0/);
    assert.equal(migrating.result.unsyncedChangesets, 0, 'the unsynced change was uploaded at version 0');
    assert.equal(migrating.events('client_reset').length, 0);
    const migrated = await runProbe(v1({ dataDir: device(), steps: dump }));
    assertOk(migrated, 'a fresh realm at version 1');
    assert.deepEqual(thing(migrated, 3), { _id: oid(3), name: 'three', count: 3 });
    // Interrupted (the realm closed before the migration ran): the next session is told again, with the same previous version.
    const again = await runProbe(v1({ dataDir: v0Device(), steps: [{ waitDownload: true }] }));
    assert.equal(protocolErrors(again)[0]?.rawErrorCode, 236);
  });

  // What realm-core's async open does with a 236 (the probe opens synchronously, so it never gets there),
  // played on the wire with our codec: the session goes on at the old version and takes its upload in that
  // version's schema; the client then binds a new file at the new version, whose bootstrap has the new
  // version's schema and the object it uploaded.
  test('on the wire: migrating keeps the unsynced change (uploaded at the old version), and the new file bootstraps in the new version\'s schema', async () => {
    const login = await (await fetch(`${served.app}/auth/providers/local-userpass/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: ada.email, password: ada.password }) })).json() as { access_token: string };
    const client = await connectRawSync(`${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${login.access_token}`, ['com.mongodb.realm-query-sync#14'], true);
    const query = { version: 1n, body: '{"Thing":"count >= 0"}' };
    const bind = (session: number, version: number, needClientFileIdent: boolean) => client.send({ type: 'bind', session, serverPath: JSON.stringify({ schemaVersion: version, sessionReason: 0 }), signedUserToken: '', needClientFileIdent, isSubserver: false });
    const columnsOf = (instructions: Instruction[]) => instructions.flatMap((i) => (i.type === 'AddColumn' && i.table === 'Thing' ? [i.field] : [])).sort();
    try {
      bind(1, 0, true);
      const ident = await client.next((m) => m.type === 'error' || (sessionOf(m) === 1 && (m.type === 'ident' || m.type === 'json_error')));
      assert.equal(ident.type, 'ident', messageText(ident));
      if (ident.type !== 'ident') return;
      client.send({ type: 'ident', session: 1, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n, query });
      const atZero = await bootstrapOf(client, 1, 1n);
      assert.ok(columnsOf(atZero.instructions).includes('legacy'), `version 0's schema has legacy: ${columnsOf(atZero.instructions).join(', ')}`);
      client.send({ type: 'unbind', session: 1 });
      await client.next((m) => m.type === 'unbound' && m.session === 1);
      // The same file opened with version 1: told to migrate from 0, the session goes on at version 0.
      bind(2, 1, false);
      client.send({
        type: 'ident', session: 2, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt,
        downloadServerVersion: atZero.last.downloadServerVersion, downloadClientVersion: atZero.last.downloadClientVersion,
        latestServerVersion: atZero.last.latestServerVersion, latestServerVersionSalt: atZero.last.latestServerVersionSalt, query,
      });
      const migrate = await client.next((m) => m.type === 'error' || (sessionOf(m) === 2 && m.type === 'json_error'));
      assert.equal(migrate.type === 'json_error' && migrate.errorCode, 236, messageText(migrate));
      assert.equal(migrate.type === 'json_error' && migrate.body.action, 'MigrateSchema');
      assert.equal(migrate.type === 'json_error' && migrate.body.previousSchemaVersion, 0);
      const object = { type: 'objectId' as const, value: new ObjectId(oid(7).$oid) };
      const set = (field: string, value: Extract<Instruction, { type: 'Update' }>['value']): Instruction => ({ type: 'Update', table: 'Thing', object, field, path: [], value, isDefault: false, priorSize: 0 });
      const offline: Instruction[] = [
        { type: 'CreateObject', table: 'Thing', object },
        set('name', { type: 'string', value: 'seven' }), set('count', { type: 'int', value: 7n }), set('legacy', { type: 'string', value: 'offline' }),
      ];
      const base = atZero.last.downloadServerVersion;
      client.send({ type: 'upload', session: 2, progressClientVersion: 3n, progressServerVersion: base, lockedServerVersion: base, changesets: [
        { version: 3n, lastIntegratedRemoteVersion: base, originTimestamp: 1000n, originFileIdent: 0n, instructions: [], bytes: encodeChangeset(offline) },
      ] });
      const acknowledged = await client.next((m) => m.type === 'error' || (sessionOf(m) === 2 && (m.type === 'json_error' || (m.type === 'download' && m.uploadClientVersion >= 3n))));
      assert.equal(acknowledged.type, 'download', messageText(acknowledged));
      client.send({ type: 'unbind', session: 2 });
      await client.next((m) => m.type === 'unbound' && m.session === 2);
      // The migrated realm: a new file at version 1.
      bind(3, 1, true);
      const fresh = await client.next((m) => m.type === 'error' || (sessionOf(m) === 3 && (m.type === 'ident' || m.type === 'json_error')));
      assert.equal(fresh.type, 'ident', messageText(fresh));
      if (fresh.type !== 'ident') return;
      client.send({ type: 'ident', session: 3, clientFileIdent: fresh.clientFileIdent, clientFileIdentSalt: fresh.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n, query });
      const atOne = await bootstrapOf(client, 3, 1n);
      assert.ok(!columnsOf(atOne.instructions).includes('legacy'), `version 1's schema has no legacy: ${columnsOf(atOne.instructions).join(', ')}`);
      const seven = atOne.instructions.filter((i) => 'object' in i && i.object.type === 'objectId' && i.object.value.toHexString() === oid(7).$oid);
      assert.deepEqual(seven.map((i) => `${i.type}${'field' in i ? ` ${i.field}` : ''}`).sort(), ['CreateObject', 'Update count', 'Update name']);
    } finally {
      client.close();
    }
  });

  test('downgrade: a version 1 file opened at version 0 migrates back; a fresh version 0 realm syncs version 1\'s writes', async () => {
    const file1 = device();
    assertOk(await runProbe(v1({ dataDir: file1, steps: [{ write: [{ op: 'create', type: 'Thing', value: { _id: oid(4), name: 'four', count: 4 } }] }, { waitUpload: true }] })), 'a version 1 client');
    // While it has not migrated, its session syncs at version 1: `asl sync sessions` says so.
    const watching = startProbe(v0({ dataDir: file1, steps: [{ waitDownload: true }, { watchMs: 3000 }] }));
    await watching.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    const listed = spawnSync(process.execPath, [CLI, 'sync', 'sessions', served.appDir, '--data', served.dataDir, '--json'], { encoding: 'utf8', timeout: 20000 });
    const sessions = listed.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { schemaVersion?: unknown });
    assert.deepEqual(sessions.map((x) => x.schemaVersion), [{ bound: 0, serving: 1 }], listed.stdout + listed.stderr);
    const text = spawnSync(process.execPath, [CLI, 'sync', 'sessions', served.appDir, '--data', served.dataDir], { encoding: 'utf8', timeout: 20000 });
    assert.match(text.stdout, /schema version 1 \(migrating to 0\)/);
    const down = await watching.done;
    assert.equal(protocolErrors(down)[0]?.rawErrorCode, 236);
    assert.match(String(down.lines.find((l) => l.event === 'ws_recv' && /^json_error 236/.test(String(l.head)))?.body), /"previousSchemaVersion":1/);
    const fresh0 = await runProbe(v0({ dataDir: device(), steps: dump }));
    assertOk(fresh0, 'a fresh version 0 realm');
    assert.deepEqual(thing(fresh0, 4), { _id: oid(4), name: 'four', count: 4, legacy: null });
  });

  test('an unknown version is refused for that session (235); a field its version does not have is refused for its session (225)', async () => {
    const unknown = await runProbe(v1({ dataDir: device(), schemaVersion: 42, timeoutMs: 5000 }), ['--reconnect', 'testing']);
    assert.equal(protocolErrors(unknown)[0]?.rawErrorCode, 235);
    assert.match(String(protocolErrors(unknown)[0]?.message), /invalid schema version: 42; the app's sync schema versions are 0, 1/);
    // A version 1 client built with the field version 1 removed.
    const forged = await runProbe(v1({ dataDir: device(), schema: SCHEMA_V0, timeoutMs: 5000, steps: [{ write: { op: 'create', type: 'Thing', value: { _id: oid(5), name: 'five', count: 5, legacy: 'forged' } } }, { waitUpload: true }] }), ['--reconnect', 'testing']);
    const refusal = protocolErrors(forged)[0];
    assert.equal(refusal?.rawErrorCode, 225, JSON.stringify(protocolErrors(forged)));
    assert.match(String(refusal?.message), /column at field "legacy" in schema "Thing"/);
    // An additive change updates the newest version only: a version 0 client declaring the new field is refused.
    await putSchema({ ...jsonSchema(false, true), properties: { ...jsonSchema(false, true).properties, added: { bsonType: 'string' } } });
    assert.deepEqual(await versions(), [0, 1]);
    const withAdded = [{ ...SCHEMA_V0[0]!, properties: { ...SCHEMA_V0[0]!.properties, added: 'string?' } }];
    const forged0 = await runProbe(v0({ dataDir: device(), schema: withAdded, timeoutMs: 5000, steps: [{ write: { op: 'create', type: 'Thing', value: { _id: oid(6), name: 'six', count: 6, added: 'forged' } } }, { waitUpload: true }] }), ['--reconnect', 'testing']);
    assert.equal(protocolErrors(forged0)[0]?.rawErrorCode, 225, JSON.stringify(protocolErrors(forged0)));
    assert.match(String(protocolErrors(forged0)[0]?.message), /field "added" of table "Thing" is not in sync schema version 0/);
    const others = await runProbe(v1({ dataDir: device(), steps: dump }));
    assertOk(others, 'another version 1 client');
    assert.equal(thing(others, 5), undefined);
    assert.equal(thing(others, 6), undefined);
    assert.ok(thing(others, 4));
  });

  test('a draft\'s breaking changes, deployed, are one version; asl sync schema-versions lists them', async () => {
    const draft = await (await fetch(`${appUrl}/drafts`, { method: 'POST', headers: admin })).json() as { _id: string };
    const base = jsonSchema(false, true);
    await putSchema({ ...base, properties: { ...base.properties, added: { bsonType: 'string' } }, required: ['_id', 'name'] });
    await putSchema({ ...base, required: ['_id', 'name'] });
    assert.deepEqual(await versions(), [0, 1], 'nothing while the draft is open');
    const deployed = await fetch(`${appUrl}/drafts/${draft._id}/deployment`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(deployed.status, 201);
    assert.deepEqual(await versions(), [0, 1, 2]);
    const listed = spawnSync(process.execPath, [CLI, 'sync', 'schema-versions', served.appDir, '--data', served.dataDir], { encoding: 'utf8', timeout: 20000 });
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /3 sync schema version\(s\)/);
    assert.match(listed.stdout, /version 1 .*field "legacy" of table "Thing" removed/);
    assert.match(listed.stdout, /version 2 \[newest\].*field "count" of table "Thing" changed from int \(required\) to int \(optional\); field "added" of table "Thing" removed/);
    const json = spawnSync(process.execPath, [CLI, 'sync', 'schema-versions', served.appDir, '--data', served.dataDir, '--json'], { encoding: 'utf8', timeout: 20000 });
    assert.deepEqual(json.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { version: number }).version), [0, 1, 2]);
  });
});
