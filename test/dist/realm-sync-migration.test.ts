// Partition-based → flexible sync migration and its rollback, end to end: realm-core 14.14's own client
// (`realm-sync-probe`, which handles the migrate/revert error actions itself) against `node dist/cli.js
// serve` on the todo-tracker example (partition key `_partition`), whose Task rules are made Sync compatible
// (each user reads and writes the tasks of her own partition: what flexible sync runs on); its Project rules
// are not (a field-level write expression), which the migration reports. The Admin API's `PUT …/sync/migration`
// drives the steps and `GET …/sync/migration` reports them, as realm-core's test harness calls them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeAvailable, registerUser, runProbe, startProbe, type ProbeRun } from '../helpers/realm-probe';
import { connectRawSync } from '../helpers/realm-raw-client';
import { adminToken, CLI, copyApp, serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

const TASK = {
  name: 'Task', primaryKey: '_id',
  properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool', priority: 'int?', tags: 'string[]' },
};

const NOTE = { name: 'Note', primaryKey: '_id', properties: { _id: 'objectId', _partition: 'string?', text: 'string' } };

/** A copy of the example whose Task rules are Sync compatible (each user owns the tasks of her partition). */
function migratableApp(): string {
  const appDir = copyApp();
  fs.writeFileSync(path.join(appDir, 'data_sources/mongodb-atlas/tracker/Task/rules.json'), JSON.stringify({
    collection: 'Task', database: 'tracker',
    roles: [{
      name: 'owner', apply_when: {}, document_filters: { read: { _partition: '%%user.id' }, write: { _partition: '%%user.id' } },
      read: true, write: true, insert: true, delete: true, search: true,
    }],
  }, null, 2));
  return appDir;
}

/** The app's `…/sync/migration` Admin API URL and its cluster's service id. */
async function migrationEndpoint(served: ServedDist, admin: Record<string, string>): Promise<{ url: string; serviceId: string }> {
  const profile = await (await fetch(`${served.url}/api/admin/v3.0/auth/profile`, { headers: admin })).json() as { roles: { group_id: string }[] };
  const groupApps = `${served.url}/api/admin/v3.0/groups/${profile.roles[0]!.group_id}/apps`;
  const apps = await (await fetch(groupApps, { headers: admin })).json() as { _id: string; client_app_id: string }[];
  const app = apps.find((a) => a.client_app_id === served.appId)!;
  const services = await (await fetch(`${groupApps}/${app._id}/services`, { headers: admin })).json() as { _id: string; name: string }[];
  return { url: `${groupApps}/${app._id}/sync/migration`, serviceId: services.find((s) => s.name === 'mongodb-atlas')!._id };
}

function asl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }));
  });
}

function oid(n: number): { $oid: string } {
  return { $oid: `65c0000000000000000${String(n).padStart(5, '0')}` };
}

function task(n: number, partition: string, name: string): Record<string, unknown> {
  return { _id: oid(n), _partition: partition, name, status: 'open', isComplete: false, tags: [] };
}

function failure(run: ProbeRun, what: string): string {
  return `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|reset|protocol|subscription|ws_recv|ws_send|log/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`;
}

function pretty(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

interface MigrationStatus {
  statusMessage: string; isMigrated: boolean; isCancelable: boolean; isRevertible: boolean; errorMessage: string;
  phase?: string; unmigratableRules: { file: string; line: number; code: string; message: string }[];
}

describe('partition-based → flexible sync migration against dist/cli.js serve', { skip, timeout: 300_000 }, () => {
  let served: ServedDist;
  let adaId: string;
  let eveId: string;
  let migrationUrl: string;
  let serviceId: string;
  let admin: Record<string, string>;
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  const eve = { type: 'emailPassword', email: 'eve@example.com', password: 'eve-Passw0rd' };
  const devices: string[] = [];
  const device = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-migration-device-'));
    devices.push(dir);
    return dir;
  };
  const partitionScript = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, schema: [TASK], timeoutMs: 15000, clientReset: 'recover', ...extra });
  const flexibleScript = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, schema: [TASK], timeoutMs: 15000, flexible: true, ...extra });

  async function status(): Promise<MigrationStatus> {
    const res = await fetch(migrationUrl, { headers: admin });
    assert.equal(res.status, 200);
    return await res.json() as MigrationStatus;
  }
  async function put(action: string, id = serviceId): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(migrationUrl, { method: 'PUT', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ serviceId: id, action }) });
    return { status: res.status, body: await res.json() as Record<string, unknown> };
  }
  async function storedTasks(email: string, password: string): Promise<string[]> {
    const login = await (await fetch(`${served.app}/auth/providers/local-userpass/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: email, password }),
    })).json() as { access_token: string };
    const res = await fetch(`${served.app}/graphql`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${login.access_token}` },
      body: JSON.stringify({ query: 'query { tasks(sortBy: NAME_ASC) { name } }' }),
    });
    const body = await res.json() as { data: { tasks: { name: string }[] } };
    return body.data.tasks.map((t) => t.name);
  }
  async function accessToken(email: string, password: string): Promise<string> {
    const login = await (await fetch(`${served.app}/auth/providers/local-userpass/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: email, password }),
    })).json() as { access_token: string };
    return login.access_token;
  }

  before(async () => {
    const appDir = migratableApp();
    served = await serveDist({ appDir });
    devices.push(appDir);
    adaId = await registerUser(served.app, ada.email, ada.password);
    eveId = await registerUser(served.app, eve.email, eve.password);
    admin = { authorization: `Bearer ${await adminToken(served)}` };
    ({ url: migrationUrl, serviceId } = await migrationEndpoint(served, admin));
    // Custom user data, which the Task rules read (a user's projects).
    for (const [id, name] of [[adaId, 'Ada'], [eveId, 'Eve']] as const) {
      const res = await fetch(`${served.url}/api/admin/v3.0/local/app/${served.appId}/graphql`, {
        method: 'POST', headers: { ...admin, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'mutation($u: String!, $n: String!) { insertOneUser(data: {userId: $u, name: $n, projectIds: []}) { _id } }', variables: { u: id, n: name } }),
      });
      const body = await res.json() as { errors?: unknown };
      assert.equal(body.errors, undefined, JSON.stringify(body));
    }
  });
  after(async () => {
    await served?.close();
    for (const dir of devices) fs.rmSync(dir, { recursive: true, force: true });
  });

  let adaDevice: string;
  let eveDevice: string;

  test('before: not migrated, and the partition permissions with no flexible equivalent are reported', async () => {
    const before = await status();
    assert.equal(before.statusMessage, '');
    assert.equal(before.isMigrated, false);
    const inConfig = before.unmigratableRules.filter((r) => r.file === path.join('sync', 'config.json') && r.code === 'rule/migration-blocker' && r.line > 0);
    assert.ok(inConfig.some((r) => /%function/.test(r.message)), pretty(before));
    assert.ok(inConfig.some((r) => /%%partition/.test(r.message)), pretty(before));
    const roles = before.unmigratableRules.filter((r) => r.code === 'sync/role-not-sync-compatible');
    assert.ok(roles.some((r) => r.file === path.join('data_sources', 'mongodb-atlas', 'tracker', 'Project', 'rules.json') && /Role "admin" is not Sync compatible/.test(r.message)), pretty(before));
    assert.ok(!roles.some((r) => /Task/.test(r.file)), 'the Task rules are Sync compatible');
    const rollback = await put('rollback');
    assert.equal(rollback.status, 400, pretty(rollback));
    const wrong = await put('start', 'not-a-service');
    assert.equal(wrong.status, 404, pretty(wrong));
    const bad = await fetch(migrationUrl, { method: 'PUT', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ serviceId, action: 'sideways' }) });
    assert.equal(bad.status, 400);
  });

  test('a partition client with unsynced changes is migrated: a client reset into flexible sync with subscriptions on its partition value, its changes recovered', async () => {
    adaDevice = device();
    const online = await runProbe(partitionScript({ credentials: ada, partition: adaId, dataDir: adaDevice, writes: [{ op: 'create', type: 'Task', value: task(1, adaId, 'synced before') }] }));
    assert.equal(online.result.exitCode, 0, failure(online, 'partition upload'));
    const offline = await runProbe(partitionScript({ credentials: ada, partition: adaId, dataDir: adaDevice, offline: true, reuseUser: true, writes: [{ op: 'create', type: 'Task', value: task(2, adaId, 'written offline') }] }));
    assert.equal(offline.result.exitCode, 0, failure(offline, 'offline write'));

    // Eve is connected and watching her partition when the migration starts: she is told at once.
    eveDevice = device();
    const eveWatching = startProbe(partitionScript({ credentials: eve, partition: eveId, dataDir: eveDevice, steps: [{ waitDownload: true }, { watchMs: 6000 }, { dump: true }] }));
    await eveWatching.waitFor((l) => l.event === 'watch' && l.phase === 'begin');

    const original = fs.readFileSync(path.join(served.appDir, 'sync', 'config.json'), 'utf8');
    const started = await put('start');
    assert.equal(started.status, 200, pretty(started));
    assert.equal(started.body.statusMessage, '');
    assert.equal(started.body.isMigrated, true);
    const after = await status();
    assert.deepEqual({ isMigrated: after.isMigrated, isRevertible: after.isRevertible, phase: after.phase, statusMessage: after.statusMessage, errorMessage: after.errorMessage }, { isMigrated: true, isRevertible: true, phase: 'migrated', statusMessage: '', errorMessage: '' });
    assert.ok(after.unmigratableRules.length >= 2, 'what could not migrate stays reported after the permissions left sync/config.json');
    // The app's files show what runs: flexible sync with the partition key queryable; the partition form is kept in the data folder.
    const config = JSON.parse(fs.readFileSync(path.join(served.appDir, 'sync', 'config.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(config.type, 'flexible');
    assert.deepEqual(config.queryable_fields_names, ['_partition']);
    assert.equal(config.partition, undefined);
    const record = JSON.parse(fs.readFileSync(path.join(served.dataDir, 'sync', 'migration.json'), 'utf8')) as { phase: string; partitionFile: string };
    assert.equal(record.phase, 'migrated');
    assert.equal(record.partitionFile, original);
    const again = await put('start');
    assert.equal(again.status, 400, pretty(again));

    const migrated = await runProbe(partitionScript({ credentials: ada, partition: adaId, dataDir: adaDevice, reuseUser: true, steps: [{ waitUpload: true }, { waitDownload: true }, { dump: true }] }));
    assert.equal(migrated.result.exitCode, 0, failure(migrated, 'migrated client'));
    const told = migrated.events('protocol_error').find((l) => l.rawErrorCode === 232);
    assert.ok(told, failure(migrated, 'no 232'));
    assert.equal(told.action, 'MigrateToFLX');
    const resets = migrated.events('client_reset');
    assert.ok(resets.some((r) => r.phase === 'after' && r.didRecover === true), failure(migrated, 'no recovering reset'));
    assert.deepEqual(migrated.objects('Task').map((t) => t.name).sort(), ['synced before', 'written offline']);
    // The reset went to flexible sync: the client offered realm-query-sync and sent its derived subscription.
    const sent = migrated.events('ws_send').map((l) => String(l.head ?? l.message ?? ''));
    assert.ok(sent.some((h) => /^query /.test(h)), failure(migrated, 'no QUERY sent'));
    assert.match(served.stderr(), new RegExp(`partitionQuery _partition == "${adaId}"`));
    assert.match(served.stderr(), /bound \(flexible sync/);
    assert.deepEqual(await storedTasks(ada.email, ada.password), ['synced before', 'written offline']);

    const eveRun = await eveWatching.done;
    assert.equal(eveRun.result.exitCode, 0, failure(eveRun, 'eve, connected during the migration'));
    assert.ok(eveRun.events('protocol_error').some((l) => l.rawErrorCode === 232 && l.action === 'MigrateToFLX'), failure(eveRun, 'eve was not told'));
    assert.ok(eveRun.events('client_reset').some((r) => r.phase === 'after'), failure(eveRun, 'eve did not reset'));
  });

  test('a new flexible client sees what the migrated client wrote', async () => {
    const fresh = await runProbe(flexibleScript({ credentials: ada, subscriptions: [`Task=_partition == "${adaId}"`], steps: [{ waitDownload: true }, { dump: true }] }));
    assert.equal(fresh.result.exitCode, 0, failure(fresh, 'native flexible client'));
    assert.deepEqual(fresh.objects('Task').map((t) => t.name).sort(), ['synced before', 'written offline']);
  });

  test('a table added after the migration syncs, to the migrated client too (its derived subscription covers the new table)', async () => {
    const dir = path.join(served.appDir, 'data_sources/mongodb-atlas/tracker/Note');
    const reloads = served.countLog(/ reloaded /);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'rules.json'), JSON.stringify({
      collection: 'Note', database: 'tracker',
      roles: [{ name: 'owner', apply_when: {}, document_filters: { read: { _partition: '%%user.id' }, write: { _partition: '%%user.id' } }, read: true, write: true, insert: true, delete: true, search: true }],
    }));
    fs.writeFileSync(path.join(dir, 'schema.json'), JSON.stringify({
      title: 'Note', bsonType: 'object', required: ['_id', 'text'],
      properties: { _id: { bsonType: 'objectId' }, _partition: { bsonType: 'string' }, text: { bsonType: 'string' } },
    }));
    await served.waitForLog(/ reloaded /, { count: reloads + 1 });
    const withNote = [TASK, NOTE];
    const writer = await runProbe(flexibleScript({
      credentials: ada, schema: withNote, subscriptions: [`Note=_partition == "${adaId}"`],
      steps: [{ write: { op: 'create', type: 'Note', value: { _id: oid(50), _partition: adaId, text: 'a new table' } } }, { waitUpload: true }],
    }));
    assert.equal(writer.result.exitCode, 0, failure(writer, 'native flexible writer of the new table'));
    const migrated = await runProbe(partitionScript({ credentials: ada, partition: adaId, dataDir: adaDevice, reuseUser: true, schema: withNote, steps: [{ waitDownload: true }, { expect: { type: 'Note', count: 1, withinMs: 10000 } }, { dump: true }] }));
    assert.equal(migrated.result.exitCode, 0, failure(migrated, 'migrated client with the new table'));
    assert.deepEqual(migrated.objects('Note').map((n) => n.text), ['a new table']);
    assert.equal(migrated.events('client_reset').length, 0, 'no second reset');
  });

  test('hostile: migratedPartition of the wrong type is refused for that session only; a forged partition client reads nothing', async () => {
    const token = await accessToken(eve.email, eve.password);
    const url = `${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${token}`;
    const flx = await connectRawSync(url, ['com.mongodb.realm-query-sync#14'], true);
    try {
      flx.send({ type: 'bind', session: 1, serverPath: JSON.stringify({ migratedPartition: 42, schemaVersion: 0 }), bindJson: { migratedPartition: 42, schemaVersion: 0 }, signedUserToken: '', needClientFileIdent: true, isSubserver: false });
      const refused = await flx.next((m) => m.type === 'json_error' || m.type === 'ident');
      assert.equal(refused.type, 'json_error', pretty(refused));
      if (refused.type !== 'json_error') throw new Error('unreachable');
      assert.equal(refused.errorCode, 204);
      assert.equal(refused.session, 1);
      // The connection stays: another session on it binds.
      flx.send({ type: 'bind', session: 2, serverPath: JSON.stringify({ migratedPartition: JSON.stringify(adaId), schemaVersion: 0 }), bindJson: { migratedPartition: JSON.stringify(adaId), schemaVersion: 0 }, signedUserToken: '', needClientFileIdent: true, isSubserver: false });
      const ident = await flx.next((m) => m.type === 'ident' || m.type === 'json_error');
      assert.equal(ident.type, 'ident', pretty(ident));
    } finally {
      flx.close();
    }
    // A partition-based client forging ada's partition is only told to migrate: no IDENT, no download.
    const pbs = await connectRawSync(url, ['com.mongodb.realm-sync#14'], false);
    try {
      pbs.send({ type: 'bind', session: 1, serverPath: JSON.stringify(adaId), signedUserToken: '', needClientFileIdent: true, isSubserver: false });
      const told = await pbs.next(() => true);
      assert.equal(told.type, 'json_error', pretty(told));
      if (told.type !== 'json_error') throw new Error('unreachable');
      assert.equal(told.errorCode, 232);
      const body = told.body as Record<string, unknown>;
      assert.equal(body.action, 'MigrateToFLX');
      assert.equal(body.partitionQuery, `_partition == "${adaId}"`);
      pbs.send({ type: 'ident', session: 1, clientFileIdent: 1n, clientFileIdentSalt: 1n, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n });
      pbs.send({ type: 'bind', session: 2, serverPath: '{"bad":', signedUserToken: '', needClientFileIdent: true, isSubserver: false });
      const second = await pbs.next(() => true);
      assert.equal(second.type, 'json_error', pretty(second));
      if (second.type === 'json_error') assert.equal(second.errorCode, 204);
    } finally {
      pbs.close();
    }
    // Eve, migrated with ada's partition, subscribes to it through the real client: the rules give her none of ada's tasks.
    const forged = await runProbe(flexibleScript({ credentials: eve, subscriptions: [`Task=_partition == "${adaId}"`], steps: [{ waitDownload: true }, { dump: true }] }));
    assert.equal(forged.result.exitCode, 0, failure(forged, 'eve'));
    assert.deepEqual(forged.objects('Task'), []);
    assert.ok(eveId);
  });

  test('rollback: the migrated client is told to revert and resets back into its partition, keeping its unsynced change', async () => {
    const offline = await runProbe(partitionScript({ credentials: ada, partition: adaId, dataDir: adaDevice, offline: true, reuseUser: true, writes: [{ op: 'create', type: 'Task', value: task(3, adaId, 'written while migrated') }] }));
    assert.equal(offline.result.exitCode, 0, failure(offline, 'offline write while migrated'));
    // Eve, migrated in the first test, is connected when the rollback happens: she is told to revert at once.
    const eveWatching = startProbe(partitionScript({ credentials: eve, partition: eveId, dataDir: eveDevice, reuseUser: true, steps: [{ waitDownload: true }, { watchMs: 6000 }] }));
    await eveWatching.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    const rolled = await put('rollback');
    assert.equal(rolled.status, 200, pretty(rolled));
    assert.equal(rolled.body.isMigrated, false);
    assert.equal(rolled.body.phase, 'rolled-back');
    assert.equal(rolled.body.statusMessage, '');
    const record = JSON.parse(fs.readFileSync(path.join(served.dataDir, 'sync', 'migration.json'), 'utf8')) as { partitionFile: string };
    assert.equal(fs.readFileSync(path.join(served.appDir, 'sync', 'config.json'), 'utf8'), record.partitionFile, 'sync/config.json is the partition-based one again, as written');

    const reverted = await runProbe(partitionScript({ credentials: ada, partition: adaId, dataDir: adaDevice, reuseUser: true, steps: [{ waitUpload: true }, { waitDownload: true }, { dump: true }] }));
    assert.equal(reverted.result.exitCode, 0, failure(reverted, 'reverted client'));
    const told = reverted.events('protocol_error').find((l) => l.rawErrorCode === 234);
    assert.ok(told, failure(reverted, 'no 234'));
    assert.equal(told.action, 'RevertToPBS');
    assert.ok(reverted.events('client_reset').some((r) => r.phase === 'after' && r.didRecover === true), failure(reverted, 'no recovering reset'));
    assert.deepEqual(reverted.objects('Task').map((t) => t.name).sort(), ['synced before', 'written offline', 'written while migrated']);
    assert.deepEqual(await storedTasks(ada.email, ada.password), ['synced before', 'written offline', 'written while migrated']);
    // The same realm then syncs as a partition client again, with no more resets.
    const after = await runProbe(partitionScript({ credentials: ada, partition: adaId, dataDir: adaDevice, reuseUser: true, writes: [{ op: 'create', type: 'Task', value: task(4, adaId, 'partition again') }] }));
    assert.equal(after.result.exitCode, 0, failure(after, 'partition again'));
    assert.equal(after.events('client_reset').length, 0);
    assert.ok((await storedTasks(ada.email, ada.password)).includes('partition again'));

    const eveRun = await eveWatching.done;
    assert.equal(eveRun.result.exitCode, 0, failure(eveRun, 'eve, connected during the rollback'));
    assert.ok(eveRun.events('protocol_error').some((l) => l.rawErrorCode === 234 && l.action === 'RevertToPBS'), failure(eveRun, 'eve was not told to revert'));
    assert.ok(eveRun.events('client_reset').some((r) => r.phase === 'after'), failure(eveRun, 'eve did not reset'));
  });
});

describe('a migration step the runtime did not finish is finished at its next start; asl sync migrate', { skip, timeout: 240_000 }, () => {
  test('an interrupted migration and an interrupted rollback each end done after a restart; the CLI drives the running runtime', async () => {
    const appDir = migratableApp();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-migration-data-'));
    const device = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-migration-device-'));
    let served = await serveDist({ appDir, dataDir });
    try {
      const admin = { authorization: `Bearer ${await adminToken(served)}` };
      const endpoint = await migrationEndpoint(served, admin);
      const serviceId = endpoint.serviceId;
      // Each start listens on a port of its own: the route's path stays.
      const route = endpoint.url.slice(served.url.length);
      const put = (action: string) => fetch(`${served.url}${route}`, { method: 'PUT', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ serviceId, action }) });
      const status = async () => await (await fetch(`${served.url}${route}`, { headers: admin })).json() as MigrationStatus;
      const recordFile = path.join(dataDir, 'sync', 'migration.json');
      const configFile = path.join(appDir, 'sync', 'config.json');
      assert.equal((await put('start')).status, 200);
      await served.close();
      // As if the runtime had stopped after recording the step and changing what runs, before rewriting sync/config.json.
      const record = JSON.parse(fs.readFileSync(recordFile, 'utf8')) as Record<string, unknown>;
      fs.writeFileSync(recordFile, JSON.stringify({ ...record, phase: 'migrating', completedAt: undefined }));
      const flexibleText = fs.readFileSync(configFile, 'utf8');
      fs.writeFileSync(configFile, record.partitionFile as string);
      served = await serveDist({ appDir, dataDir });
      await served.waitForLog(/finishing the migration to flexible sync/);
      const resumed = await status();
      assert.deepEqual({ phase: resumed.phase, isMigrated: resumed.isMigrated, statusMessage: resumed.statusMessage }, { phase: 'migrated', isMigrated: true, statusMessage: '' });
      assert.equal(fs.readFileSync(configFile, 'utf8'), flexibleText);
      // A partition client opening now is migrated.
      const userId = await registerUser(served.app, 'ida@example.com', 'ida-Passw0rd');
      const run = await runProbe({ baseUrl: served.url, appId: served.appId, schema: [TASK], timeoutMs: 15000, clientReset: 'recover', dataDir: device, credentials: { type: 'emailPassword', email: 'ida@example.com', password: 'ida-Passw0rd' }, partition: userId, writes: [{ op: 'create', type: 'Task', value: task(70, userId, 'after the restart') }] });
      assert.equal(run.result.exitCode, 0, failure(run, 'partition client after the restart'));
      assert.ok(run.events('protocol_error').some((l) => l.rawErrorCode === 232), failure(run, 'no 232'));

      // asl sync migrate over the running runtime: status, then the rollback.
      const shown = await asl(['sync', 'migrate', appDir, '--data', dataDir]);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /^migration: migrated, partition key "_partition"/);
      assert.match(shown.stdout, /sync\/config\.json:\d+ {2}rule\/migration-blocker {2}.*%function/);
      const syncStatus = await asl(['sync', 'status', appDir, '--data', dataDir]);
      assert.equal(syncStatus.code, 0, syncStatus.stderr);
      assert.match(syncStatus.stdout, /partition → flexible migration: migrated/);
      const refused = await asl(['sync', 'migrate', appDir, '--data', dataDir, '--to', 'flexible']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /already migrated/);
      const back = await asl(['sync', 'migrate', appDir, '--data', dataDir, '--to', 'partition', '--json']);
      assert.equal(back.code, 0, back.stderr);
      assert.equal((JSON.parse(back.stdout) as MigrationStatus).phase, 'rolled-back');
      assert.equal(fs.readFileSync(configFile, 'utf8'), record.partitionFile);
      await served.close();
      // The rollback interrupted the same way: the record says rolling back, the files still say flexible.
      const rolled = JSON.parse(fs.readFileSync(recordFile, 'utf8')) as Record<string, unknown>;
      fs.writeFileSync(recordFile, JSON.stringify({ ...rolled, phase: 'rolling-back', completedAt: undefined }));
      fs.writeFileSync(configFile, flexibleText);
      served = await serveDist({ appDir, dataDir });
      await served.waitForLog(/finishing the rollback to partition-based sync/);
      assert.equal((await status()).phase, 'rolled-back');
      assert.equal(fs.readFileSync(configFile, 'utf8'), record.partitionFile);
      const reverted = await runProbe({ baseUrl: served.url, appId: served.appId, schema: [TASK], timeoutMs: 15000, clientReset: 'recover', dataDir: device, reuseUser: true, credentials: { type: 'emailPassword', email: 'ida@example.com', password: 'ida-Passw0rd' }, partition: userId, steps: [{ waitDownload: true }, { dump: true }] });
      assert.equal(reverted.result.exitCode, 0, failure(reverted, 'reverted after the restart'));
      assert.ok(reverted.events('protocol_error').some((l) => l.rawErrorCode === 234), failure(reverted, 'no 234'));
      assert.deepEqual(reverted.objects('Task').map((t) => t.name), ['after the restart']);
    } finally {
      await served.close();
      for (const dir of [appDir, dataDir, device]) fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a native flexible app', { timeout: 60_000 }, () => {
  test('a flexible client sending a migration-era partition value is refused for that session only (204)', async () => {
    const appDir = copyApp();
    const config = JSON.parse(fs.readFileSync(path.join(appDir, 'sync', 'config.json'), 'utf8')) as Record<string, unknown>;
    const { partition: _partition, ...shared } = config;
    fs.writeFileSync(path.join(appDir, 'sync', 'config.json'), JSON.stringify({ ...shared, type: 'flexible', queryable_fields_names: ['_partition'] }));
    const served = await serveDist({ appDir });
    try {
      const userId = await registerUser(served.app, 'mia@example.com', 'mia-Passw0rd');
      const login = await (await fetch(`${served.app}/auth/providers/local-userpass/login`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'mia@example.com', password: 'mia-Passw0rd' }),
      })).json() as { access_token: string };
      const client = await connectRawSync(`${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${login.access_token}`, ['com.mongodb.realm-query-sync#14'], true);
      try {
        const bindJson = { migratedPartition: JSON.stringify(userId), schemaVersion: 0 };
        client.send({ type: 'bind', session: 1, serverPath: JSON.stringify(bindJson), bindJson, signedUserToken: '', needClientFileIdent: true, isSubserver: false });
        const refused = await client.next((m) => m.type === 'json_error' || m.type === 'ident');
        assert.equal(refused.type, 'json_error', pretty(refused));
        if (refused.type !== 'json_error') throw new Error('unreachable');
        assert.deepEqual([refused.errorCode, refused.session], [204, 1]);
        assert.match(String((refused.body as Record<string, unknown>).message), /not migrated from partition-based sync/);
        const plain = { schemaVersion: 0 };
        client.send({ type: 'bind', session: 2, serverPath: JSON.stringify(plain), bindJson: plain, signedUserToken: '', needClientFileIdent: true, isSubserver: false });
        const ident = await client.next((m) => m.type === 'ident' || m.type === 'json_error');
        assert.equal(ident.type, 'ident', pretty(ident));
      } finally {
        client.close();
      }
    } finally {
      await served.close();
      fs.rmSync(appDir, { recursive: true, force: true });
    }
  });
});
