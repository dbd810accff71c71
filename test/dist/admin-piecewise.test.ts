// The Admin API's piecewise ("from scratch") form over `dist/cli.js serve <empty folder> --allow-no-apps
// --admin-user … --admin-password …`, as the SDKs' test harnesses drive it (realm-core's
// test/object-store/util/sync/baas_admin_api.cpp): admin users' email/password logins (throttled, never kept
// or printed in clear), the harness's create_app sequence with the files it leaves and `asl check` on them,
// and attacks on the same routes (no or foreign tokens, other groups, ill-typed, deep, huge and traversing
// bodies, functions made through the API trying to leave their sandbox, secret values leaking into answers).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { unzipSync } from 'fflate';
import { CLI, adminToken, serveDist, type ServedDist } from './fixtures/serve';

const ADMIN = '/api/admin/v3.0';
const HARNESS_EMAIL = 'unique_user@domain.com';
/** The custom-token signing key the harness stores as a secret: it must never come back in any answer. */
const SECRET_VALUE = 'My_very_confidential_secretttttt';
/** A variable of the runtime's environment that function code must not be able to read. */
const ENV_CANARY = 'asl-env-canary-5b1f07d2';
/** Bounds every request, so a hanging route fails the test instead of stalling it. */
const REQUEST_TIMEOUT_MS = 15_000;

interface Reply { status: number; body: any; text: string; bytes: Uint8Array }

/** Every answer body of this file, searched at the end for the secret value. */
const answers: string[] = [];

/** A request as the harness sends it: JSON with `application/json;charset=utf-8`, a bearer token when given. */
async function call(base: string, method: string, pathname: string, options: { token?: string; body?: unknown; raw?: string; timeoutMs?: number } = {}): Promise<Reply> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (options.token !== undefined) headers.Authorization = `Bearer ${options.token}`;
  const payload = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (payload !== undefined) headers['Content-Type'] = 'application/json;charset=utf-8';
  const url = `${base}${pathname.startsWith('/api/') ? '' : ADMIN}${pathname}`;
  const res = await fetch(url, { method, headers, body: payload, signal: AbortSignal.timeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS) });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const text = Buffer.from(bytes).toString('utf8');
  answers.push(text);
  let body: unknown;
  try { body = text === '' ? undefined : JSON.parse(text); } catch { body = undefined; }
  return { status: res.status, body, text, bytes };
}

/** A refusal as the admin clients read it: the status, and `{error, error_code}`; `mentions` must be in the message. */
function assertRefused(reply: Reply, status: number | 'any4xx', what: string, mentions?: string): void {
  if (status === 'any4xx') assert.ok(reply.status >= 400 && reply.status < 500, `${what}: expected a 4xx, got ${reply.status} ${reply.text}`);
  else assert.equal(reply.status, status, `${what}: ${reply.text}`);
  assert.equal(typeof reply.body?.error, 'string', `${what}: no error message in ${reply.text}`);
  assert.equal(typeof reply.body?.error_code, 'string', `${what}: no error_code in ${reply.text}`);
  if (mentions !== undefined) assert.ok(reply.body.error.includes(mentions), `${what}: the error should name ${mentions}: ${reply.body.error}`);
}

async function passwordLogin(base: string, username: string, password: string): Promise<Reply> {
  return call(base, 'POST', '/auth/providers/local-userpass/login', { body: { provider: 'userpass', username, password } });
}

/** Every file below `dir`, by path relative to it. */
function listFiles(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

/** Paths and contents of every file below `dir`, to tell whether anything there changed. */
function snapshot(dir: string): Map<string, string> {
  return new Map(listFiles(dir).map((rel) => [rel, fs.readFileSync(path.join(dir, rel), 'utf8')]));
}

/** Files below `dir` whose bytes hold `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  return listFiles(dir).filter((rel) => fs.readFileSync(path.join(dir, rel)).includes(needle));
}

describe('admin users: email and password logins', () => {
  // A distinctive password, so finding it anywhere can only mean it was kept or printed in clear.
  const firstPassword = 'Pw-first-7c41e9ab-distinctive';
  const secondPassword = 'Pw-second-0d93f6e2-distinctive';
  let root: string;
  let dataDir: string;
  let served: ServedDist;

  const serve = (password: string) => serveDist({
    appDir: root, dataDir, args: ['--allow-no-apps', '--no-watch', '--admin-user', HARNESS_EMAIL, '--admin-password', password],
  });

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-admin-users-'));
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-admin-users-data-'));
    served = await serve(firstPassword);
  });
  after(async () => {
    await served.close();
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('login: 200 with the four tokens; the profile names the group the harness reads', async () => {
    const login = await passwordLogin(served.url, HARNESS_EMAIL, firstPassword);
    assert.equal(login.status, 200, login.text);
    for (const key of ['access_token', 'refresh_token', 'user_id', 'device_id']) assert.equal(typeof login.body[key], 'string', key);
    const profile = await call(served.url, 'GET', '/auth/profile', { token: login.body.access_token });
    assert.equal(profile.status, 200);
    assert.match(profile.body.roles[0].group_id, /^[0-9a-f]{24}$/);
    assert.equal(profile.body.data.email, HARNESS_EMAIL);
  });

  test('a wrong password and an unknown email get the same 401', async () => {
    const wrong = await passwordLogin(served.url, HARNESS_EMAIL, 'not-the-password');
    const unknown = await passwordLogin(served.url, 'nobody@domain.com', firstPassword);
    assertRefused(wrong, 401, 'wrong password');
    assertRefused(unknown, 401, 'unknown email');
    // Only the `link` (each request's own log entry) may differ.
    const answer = ({ error, error_code }: any) => ({ error, error_code });
    assert.deepEqual(answer(unknown.body), answer(wrong.body), 'the answer must not tell whether the email exists');
    // A success forgets those failures, so the next test measures its own.
    assert.equal((await passwordLogin(served.url, HARNESS_EMAIL, firstPassword)).status, 200);
  });

  test('repeated failures are slowed down, also when sent at once; a success afterwards still logs in', async () => {
    const timed = async (password: string) => {
      const started = performance.now();
      assertRefused(await passwordLogin(served.url, HARNESS_EMAIL, password), 401, password);
      return performance.now() - started;
    };
    const first = await timed('wrong-1');
    await timed('wrong-2');
    await timed('wrong-3');
    // Failures 4 to 6 at once: checked one after another, they wait 250, 500 and 1000 ms in turn.
    const atOnce = await Promise.all(['wrong-4', 'wrong-5', 'wrong-6'].map(timed));
    const slowest = Math.max(...atOnce);
    assert.ok(slowest > 1500 && slowest > first + 1000, `the 6th failure (${Math.round(slowest)} ms, of ${atOnce.map(Math.round).join(', ')}) should wait well beyond the 1st (${Math.round(first)} ms)`);
    assert.equal((await passwordLogin(served.url, HARNESS_EMAIL, firstPassword)).status, 200);
  });

  test('the API-key login (mongodb-cloud) still works next to admin users', async () => {
    const token = await adminToken(served);
    assert.equal((await call(served.url, 'GET', '/auth/profile', { token })).status, 200);
  });

  test('the password is in no output of the runtime and in no file of its data or app folder', () => {
    for (const [stream, text] of [['stdout', served.stdout()], ['stderr', served.stderr()]] as const) {
      assert.ok(!text.includes(firstPassword), `the password appears on ${stream}`);
    }
    assert.deepEqual(filesHolding(dataDir, firstPassword), [], 'data folder');
    assert.deepEqual(filesHolding(root, firstPassword), [], 'app folder');
    assert.ok(fs.existsSync(path.join(dataDir, 'admin', 'users.json')), 'the admin user is kept (as a hash)');
    assert.equal(fs.statSync(path.join(dataDir, 'admin', 'users.json')).mode & 0o777, 0o600);
  });

  test('a flood of attempts at once: past the throttle\'s line 429 at once; abandoned attempts hold nothing up', async () => {
    const flood = await Promise.all(Array.from({ length: 40 }, (_, i) => call(served.url, 'POST', '/auth/providers/local-userpass/login', {
      body: { username: 'flood@domain.com', password: `guess-${i}` }, timeoutMs: 1000,
    }).catch(() => undefined)));
    const crowded = flood.filter((r) => r?.status === 429);
    assert.ok(crowded.length >= 40 - 32, `${crowded.length} of 40 refused with 429`);
    for (const r of crowded) assertRefused(r!, 429, 'a login past the line');
    assert.ok(flood.every((r) => r === undefined || r.status === 401 || r.status === 429));
    // The attempts whose clients left are dropped, so the runtime stops at once rather than checking them all.
    const started = performance.now();
    assert.equal(await served.close(), 0);
    assert.ok(performance.now() - started < 5000, `closing took ${Math.round(performance.now() - started)} ms`);
  });

  test('a restart with a new --admin-password for the same email replaces the password', async () => {
    served = await serve(secondPassword);
    assertRefused(await passwordLogin(served.url, HARNESS_EMAIL, firstPassword), 401, 'the old password');
    assert.equal((await passwordLogin(served.url, HARNESS_EMAIL, secondPassword)).status, 200);
    assert.ok(!served.stdout().includes(secondPassword) && !served.stderr().includes(secondPassword));
    assert.deepEqual(filesHolding(dataDir, secondPassword), []);
  });
});

describe('the harness\'s create_app sequence, then attacks on the same routes', () => {
  // The sandbox holds the folder of apps, so a write that escapes an app folder lands where the test looks.
  let sandbox: string;
  let root: string;
  let served: ServedDist;
  let base: string;
  let token: string;
  let groupId: string;
  let app: { _id: string; client_app_id: string };
  let appPath: string;
  let appDir: string;
  const databaseName = `test_data_${'0123456789abcdef01234567'}`;
  const functionIds = new Map<string, string>();
  const ids: Record<'service' | 'gcm' | 'person' | 'dog' | 'rule' | 'secret' | 'value', string> = {} as never;

  /** The folder the runtime created for an app: the one whose realm_config.json names its client app id. */
  const folderOf = (clientAppId: string): string => {
    const found = fs.readdirSync(root).map((name) => path.join(root, name))
      .find((dir) => { try { return JSON.parse(fs.readFileSync(path.join(dir, 'realm_config.json'), 'utf8')).app_id === clientAppId; } catch { return false; } });
    assert.ok(found, `no folder for ${clientAppId} in ${root}`);
    return found;
  };
  const admin = (method: string, pathname: string, body?: unknown) => call(base, method, `${appPath}${pathname}`, { token, body });
  const readAppJson = (rel: string) => JSON.parse(fs.readFileSync(path.join(appDir, rel), 'utf8'));

  before(async () => {
    sandbox = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-piecewise-'));
    root = path.join(sandbox, 'apps');
    fs.mkdirSync(root);
    // Inherited by the runtime, and so present in its process: functions must not see it.
    process.env.ASL_TEST_ENV_CANARY = ENV_CANARY;
    served = await serveDist({ appDir: root, args: ['--allow-no-apps', '--no-watch', '--admin-user', HARNESS_EMAIL, '--admin-password', 'password'] });
    base = served.url;
  });
  after(async () => {
    await served.close();
    fs.rmSync(sandbox, { recursive: true, force: true });
  });

  test('login and profile, as AdminAPISession::login', async () => {
    const login = await passwordLogin(base, HARNESS_EMAIL, 'password');
    assert.equal(login.status, 200, login.text);
    token = login.body.access_token;
    groupId = (await call(base, 'GET', '/auth/profile', { token })).body.roles[0].group_id;
  });

  test('POST apps {name}: 201 with _id and client_app_id; names may repeat', async () => {
    const created = await call(base, 'POST', `/groups/${groupId}/apps`, { token, body: { name: 'test' } });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body._id, /^[0-9a-f]{24}$/);
    assert.match(created.body.client_app_id, /^test-[a-z]{5}$/);
    app = created.body;
    appPath = `/groups/${groupId}/apps/${app._id}`;
    appDir = folderOf(app.client_app_id);
  });

  test('functions: POST each (201 with _id), GET list and one, PUT, DELETE', async () => {
    const sources: Record<string, { source: string; private?: boolean }> = {
      updateUserData: { source: `exports = async function(data) {\n  const user = context.user;\n  const mongodb = context.services.get("BackingDB");\n  await mongodb.db("${databaseName}").collection("UserData").updateOne({ user_id: user.id }, { $set: data }, { upsert: true });\n  return true;\n};\n` },
      sumFunc: { source: 'exports = function(...args) {\n  return args.reduce((a, b) => a + b, 0);\n};\n' },
      confirmFunc: { source: 'exports = ({ token, tokenId, username }) => {\n  return username.includes("realm_tests_do_autoverify") ? { status: "success" } : { status: "fail" };\n};\n' },
      authFunc: { source: 'exports = (loginPayload) => {\n  return loginPayload["realmCustomAuthFuncUserId"];\n};\n' },
      resetFunc: { source: 'exports = ({ token, tokenId, username, password }) => {\n  return password.includes("realm_tests_do_reset") ? { status: "success" } : { status: "fail" };\n};\n' },
      privateSum: { source: 'exports = function(a, b) {\n  return a + b;\n};\n', private: true },
      scratch: { source: 'exports = function() {\n  return 1;\n};\n' },
    };
    for (const [name, { source, private: isPrivate = false }] of Object.entries(sources)) {
      const created = await admin('POST', '/functions', { name, private: isPrivate, can_evaluate: {}, source });
      assert.equal(created.status, 201, `${name}: ${created.text}`);
      assert.match(created.body._id, /^[0-9a-f]{24}$/);
      functionIds.set(name, created.body._id);
    }
    const listed = await admin('GET', '/functions');
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.map((f: any) => f.name).sort(), Object.keys(sources).sort());
    const one = await admin('GET', `/functions/${functionIds.get('sumFunc')}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.source, sources.sumFunc!.source);
    assert.equal(one.body.private, false);

    const scratchId = functionIds.get('scratch')!;
    const replaced = await admin('PUT', `/functions/${scratchId}`, { name: 'scratch', private: false, can_evaluate: {}, source: 'exports = function() {\n  return 2;\n};\n' });
    assert.equal(replaced.status, 204, replaced.text);
    assert.match((await admin('GET', `/functions/${scratchId}`)).body.source, /return 2/);
    assert.equal((await admin('DELETE', `/functions/${scratchId}`)).status, 204);
    assertRefused(await admin('GET', `/functions/${scratchId}`), 404, 'a deleted function');
    functionIds.delete('scratch');
  });

  test('auth providers: anon-user, local-userpass with its functions, custom-function; api-key found by GET and enabled', async () => {
    assert.equal((await admin('POST', '/auth_providers', { type: 'anon-user' })).status, 201);
    const userpass = await admin('POST', '/auth_providers', {
      type: 'local-userpass',
      config: {
        autoConfirm: false, confirmEmailSubject: '', emailConfirmationUrl: 'http://localhost/confirmEmail',
        resetPasswordSubject: '', resetPasswordUrl: 'http://localhost/resetPassword',
        confirmationFunctionName: 'confirmFunc', confirmationFunctionId: functionIds.get('confirmFunc'), runConfirmationFunction: true,
        resetFunctionName: 'resetFunc', resetFunctionId: functionIds.get('resetFunc'), runResetFunction: true,
      },
    });
    assert.equal(userpass.status, 201, userpass.text);
    const custom = await admin('POST', '/auth_providers', { type: 'custom-function', config: { authFunctionName: 'authFunc', authFunctionId: functionIds.get('authFunc') } });
    assert.equal(custom.status, 201, custom.text);
    const providers = await admin('GET', '/auth_providers');
    const apiKey = providers.body.find((p: any) => p.type === 'api-key');
    assert.ok(apiKey, 'a new app has an api-key provider for the harness to enable');
    const enabled = await call(base, 'PUT', `${appPath}/auth_providers/${apiKey._id}/enable`, { token, raw: '' });
    assert.ok(enabled.status >= 200 && enabled.status < 300, enabled.text);
  });

  test('secrets: three POSTs; GET lists names and ids only; PUT and DELETE', async () => {
    for (const [name, value] of [['BackingDB_uri', 'mongodb://localhost:26000'], ['gcm', 'gcm'], ['customTokenKey', SECRET_VALUE]]) {
      const created = await admin('POST', '/secrets', { name, value });
      assert.equal(created.status, 201, created.text);
      assert.deepEqual(Object.keys(created.body).sort(), ['_id', 'name']);
    }
    const listed = await admin('GET', '/secrets');
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.map((s: any) => s.name).sort(), ['BackingDB_uri', 'customTokenKey', 'gcm']);
    for (const s of listed.body) assert.deepEqual(Object.keys(s).sort(), ['_id', 'name'], 'a listed secret carries no value');

    const scratch = await admin('POST', '/secrets', { name: 'scratch', value: 'first' });
    ids.secret = scratch.body._id;
    assert.equal((await admin('PUT', `/secrets/${ids.secret}`, { name: 'scratch', value: 'second' })).status, 204);
    assert.equal(JSON.parse(fs.readFileSync(path.join(appDir, 'secrets.json'), 'utf8')).scratch, 'second');
    assert.equal((await admin('DELETE', `/secrets/${ids.secret}`)).status, 204);
    assert.ok(!('scratch' in JSON.parse(fs.readFileSync(path.join(appDir, 'secrets.json'), 'utf8'))));
  });

  test('custom-token provider with secret_config.signingKeys and metadata_fields', async () => {
    const created = await admin('POST', '/auth_providers', {
      type: 'custom-token',
      config: { audience: [], signingAlgorithm: 'HS256', useJWKURI: false },
      secret_config: { signingKeys: ['customTokenKey'] },
      disabled: false,
      metadata_fields: [
        { required: false, name: 'user_data.name', field_name: 'name' },
        { required: true, name: 'user_data.occupation', field_name: 'occupation' },
        { required: true, name: 'my_metadata.name', field_name: 'anotherName' },
      ],
    });
    assert.equal(created.status, 201, created.text);
  });

  test('services: mongodb BackingDB with config.uri and config.sync (201 with _id)', async () => {
    const created = await admin('POST', '/services', {
      name: 'BackingDB', type: 'mongodb',
      config: {
        uri: 'mongodb://localhost:26000',
        sync: { database_name: databaseName, partition: { key: 'realm_id', type: 'string', required: false, permissions: { read: true, write: true } } },
      },
    });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body._id, /^[0-9a-f]{24}$/);
    ids.service = created.body._id;
  });

  test('default_rule: POST 201, GET, PUT with its _id', async () => {
    const role = { name: 'default', apply_when: {}, document_filters: { read: true, write: true }, insert: true, delete: true, read: true, write: true };
    const created = await admin('POST', `/services/${ids.service}/default_rule`, { roles: [role] });
    assert.equal(created.status, 201, created.text);
    const got = await admin('GET', `/services/${ids.service}/default_rule`);
    assert.equal(got.status, 200);
    assert.equal(typeof got.body._id, 'string');
    assert.deepEqual(got.body.roles, [role]);
    const updated = await admin('PUT', `/services/${ids.service}/default_rule`, { ...got.body, roles: [{ ...role, insert: false }] });
    assert.equal(updated.status, 204, updated.text);
    assert.equal((await admin('GET', `/services/${ids.service}/default_rule`)).body.roles[0].insert, false);
  });

  test('schemas: POST with the primary and partition keys only, then PUT in full with relationships; GET lists them', async () => {
    const metadata = (collection: string) => ({ database: databaseName, collection, data_source: 'BackingDB' });
    const keysOnly = (title: string) => ({
      schema: { properties: { _id: { bsonType: 'objectId' }, realm_id: { bsonType: 'string' } }, required: ['_id'], title },
      metadata: metadata(title), relationships: {},
    });
    const person = await admin('POST', '/schemas', keysOnly('Person'));
    assert.equal(person.status, 201, person.text);
    const dog = await admin('POST', '/schemas', keysOnly('Dog'));
    assert.equal(dog.status, 201, dog.text);
    ids.person = person.body._id;
    ids.dog = dog.body._id;

    const fullPerson = {
      _id: ids.person,
      schema: {
        properties: {
          _id: { bsonType: 'objectId' }, realm_id: { bsonType: 'string' }, name: { bsonType: 'string' },
          dogs: { bsonType: 'array', items: { bsonType: 'objectId' } },
          address: { bsonType: 'object', properties: { street: { bsonType: 'string' } }, required: ['street'], title: 'Address' },
        },
        required: ['_id', 'name'], title: 'Person',
      },
      metadata: metadata('Person'),
      relationships: { dogs: { ref: `#/relationship/BackingDB/${databaseName}/Dog`, foreign_key: '_id', is_list: true } },
    };
    const put = await admin('PUT', `/schemas/${ids.person}`, fullPerson);
    assert.equal(put.status, 204, put.text);
    const fullDog = { _id: ids.dog, ...keysOnly('Dog'), schema: { ...keysOnly('Dog').schema, properties: { ...keysOnly('Dog').schema.properties, name: { bsonType: 'string' } } } };
    assert.equal((await admin('PUT', `/schemas/${ids.dog}`, fullDog)).status, 204);

    const listed = await admin('GET', '/schemas');
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.map((s: any) => s.metadata.collection).sort(), ['Dog', 'Person']);
    assert.ok(listed.body.every((s: any) => typeof s._id === 'string' && s.metadata.data_source === 'BackingDB'));
    const one = await admin('GET', `/schemas/${ids.person}`);
    assert.deepEqual(Object.keys(one.body.schema.properties).sort(), ['_id', 'address', 'dogs', 'name', 'realm_id']);
    assert.equal(one.body.relationships.dogs.foreign_key, '_id');
  });

  test('PATCH services/:id/config enables sync; GET config shows it; PUT sync/config sets development mode', async () => {
    const partition = { key: 'realm_id', type: 'string', required: false, permissions: { read: true, write: true } };
    const patched = await admin('PATCH', `/services/${ids.service}/config`, { sync: { database_name: databaseName, partition, state: 'enabled', is_recovery_mode_disabled: false } });
    assert.equal(patched.status, 204, patched.text);
    const config = await admin('GET', `/services/${ids.service}/config`);
    assert.equal(config.status, 200);
    assert.equal(config.body.sync.state, 'enabled');
    assert.equal(config.body.sync.database_name, databaseName);
    assert.equal(config.body.sync.partition.key, 'realm_id');
    assert.equal(config.body.flexible_sync, undefined);
    assert.equal((await call(base, 'PUT', `${appPath}/sync/config`, { token, body: { development_mode_enabled: true } })).status, 204);
    assert.deepEqual((await admin('GET', '/sync/config')).body, { development_mode_enabled: true });
  });

  test('rules for UserData, custom user data, a gcm service', async () => {
    const rule = await admin('POST', `/services/${ids.service}/rules`, {
      database: databaseName, collection: 'UserData',
      roles: [{ name: 'default', apply_when: {}, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true }],
    });
    assert.equal(rule.status, 201, rule.text);
    ids.rule = rule.body._id;
    const userData = await admin('PATCH', '/custom_user_data', { mongo_service_id: ids.service, enabled: true, database_name: databaseName, collection_name: 'UserData', user_id_field: 'user_id' });
    assert.equal(userData.status, 204, userData.text);
    const readBack = await admin('GET', '/custom_user_data');
    assert.equal(readBack.body.mongo_service_id, ids.service);
    assert.equal(readBack.body.enabled, true);
    const gcm = await admin('POST', '/services', { name: 'gcm', type: 'gcm', config: { senderId: 'gcm' }, secret_config: { apiKey: 'gcm' }, version: 1 });
    assert.equal(gcm.status, 201, gcm.text);
    ids.gcm = gcm.body._id;
  });

  test('sync/progress shows the initial sync complete, as is_initial_sync_complete reads it', async () => {
    const progress = await admin('GET', '/sync/progress');
    assert.equal(progress.status, 200);
    const entries = Object.values(progress.body.progress) as Array<{ complete: boolean }>;
    assert.ok(entries.length > 0 && entries.every((e) => e.complete === true), progress.text);
    assert.equal((await admin('GET', '/sync/state')).body.state, 'enabled');
  });

  test('the files the sequence wrote into the app folder', () => {
    const manifest = readAppJson('functions/config.json');
    assert.deepEqual(manifest.map((f: any) => f.name).sort(), [...functionIds.keys()].sort());
    assert.equal(manifest.find((f: any) => f.name === 'privateSum').private, true);
    assert.match(fs.readFileSync(path.join(appDir, 'functions', 'sumFunc.js'), 'utf8'), /args\.reduce/);
    assert.ok(!fs.existsSync(path.join(appDir, 'functions', 'scratch.js')), 'a deleted function leaves no source');

    const providers = readAppJson('auth/providers.json');
    assert.equal(providers['anon-user'].disabled, false);
    assert.equal(providers['api-key'].disabled, false);
    assert.equal(providers['local-userpass'].config.confirmationFunctionName, 'confirmFunc');
    assert.equal(providers['custom-function'].config.authFunctionName, 'authFunc');
    assert.deepEqual(providers['custom-token'].secret_config, { signingKeys: ['customTokenKey'] });
    assert.equal(providers['custom-token'].metadata_fields.length, 3);

    const service = readAppJson('data_sources/BackingDB/config.json');
    assert.equal(service.type, 'mongodb');
    assert.equal(service.config.uri, 'mongodb://localhost:26000');
    assert.equal(service.config.sync, undefined, 'sync settings live in sync/config.json');
    assert.equal(readAppJson('data_sources/BackingDB/default_rule.json').roles[0].name, 'default');
    const personDir = `data_sources/BackingDB/${databaseName}/Person`;
    assert.equal(readAppJson(`${personDir}/schema.json`).title, 'Person');
    assert.equal(readAppJson(`${personDir}/relationships.json`).dogs.ref, `#/relationship/BackingDB/${databaseName}/Dog`);
    assert.equal(readAppJson(`data_sources/BackingDB/${databaseName}/UserData/rules.json`).collection, 'UserData');
    assert.equal(readAppJson('auth/custom_user_data.json').mongo_service_name, 'BackingDB');
    assert.equal(readAppJson('services/gcm/config.json').type, 'gcm');

    const sync = readAppJson('sync/config.json');
    assert.equal(sync.type, 'partition');
    assert.equal(sync.state, 'enabled');
    assert.equal(sync.development_mode_enabled, true);
    assert.equal(sync.service_name, 'BackingDB');
    assert.equal(sync.database_name, databaseName);
    assert.equal(sync.partition.key, 'realm_id');

    const secrets = path.join(appDir, 'secrets.json');
    assert.equal(fs.statSync(secrets).mode & 0o777, 0o600);
    assert.equal(JSON.parse(fs.readFileSync(secrets, 'utf8')).customTokenKey, SECRET_VALUE);
  });

  test('asl check finds no error in the app the sequence built', () => {
    const checked = spawnSync(process.execPath, [CLI, 'check', appDir], { encoding: 'utf8' });
    assert.equal(checked.status, 0, `asl check: ${checked.stdout}${checked.stderr}`);
    assert.match(checked.stdout + checked.stderr, / 0 error\(s\)/);
    // Warnings are allowed; shown so a run's log tells what the checker thinks of the harness's app.
    const others = checked.stdout.split('\n').filter((l) => /\s(warning|information)\s/.test(l));
    if (others.length > 0) console.log(`asl check on the harness's app:\n${others.join('\n')}`);
  });

  test('the export holds no secrets.json and no secret value', async () => {
    const exported = await admin('GET', '/export');
    assert.equal(exported.status, 200);
    const files = unzipSync(exported.bytes);
    assert.ok(!Object.keys(files).some((p) => p === 'secrets.json' || p.endsWith('/secrets.json')), Object.keys(files).join(', '));
    for (const [name, bytes] of Object.entries(files)) {
      const text = Buffer.from(bytes).toString('utf8');
      answers.push(text);
      assert.ok(!text.includes(SECRET_VALUE), `${name} holds the secret value`);
    }
    assert.ok('functions/sumFunc.js' in files && 'sync/config.json' in files);
  });

  test('flexible sync variant: a service with config.flexible_sync makes a flexible sync/config.json', async () => {
    const created = await call(base, 'POST', `/groups/${groupId}/apps`, { token, body: { name: 'test' } });
    assert.equal(created.status, 201, created.text);
    assert.notEqual(created.body._id, app._id);
    const flexPath = `/groups/${groupId}/apps/${created.body._id}`;
    const flexDir = folderOf(created.body.client_app_id);
    const flexible = { database_name: 'flx_data', queryable_fields_names: ['name', 'owner_id'], asymmetric_tables: ['Measurement'] };
    const service = await call(base, 'POST', `${flexPath}/services`, { token, body: { name: 'BackingDB', type: 'mongodb', config: { uri: 'mongodb://localhost:26000', flexible_sync: flexible } } });
    assert.equal(service.status, 201, service.text);
    const schema = await call(base, 'POST', `${flexPath}/schemas`, { token, body: {
      schema: { properties: { _id: { bsonType: 'objectId' }, value: { bsonType: 'double' } }, required: ['_id'], title: 'Measurement' },
      metadata: { database: 'flx_data', collection: 'Measurement', data_source: 'BackingDB' }, relationships: {},
    } });
    assert.equal(schema.status, 201, schema.text);
    const enabled = await call(base, 'PATCH', `${flexPath}/services/${service.body._id}/config`, { token, body: { flexible_sync: { ...flexible, state: 'enabled', is_recovery_mode_disabled: false } } });
    assert.equal(enabled.status, 204, enabled.text);

    const sync = JSON.parse(fs.readFileSync(path.join(flexDir, 'sync', 'config.json'), 'utf8'));
    assert.equal(sync.type, 'flexible');
    assert.equal(sync.database_name, 'flx_data');
    assert.deepEqual(sync.queryable_fields_names, ['name', 'owner_id']);
    assert.deepEqual(sync.asymmetric_tables, ['Measurement']);
    const config = await call(base, 'GET', `${flexPath}/services/${service.body._id}/config`, { token });
    assert.equal(config.body.flexible_sync.state, 'enabled');
    assert.equal(config.body.sync, undefined);
    assert.deepEqual((await call(base, 'GET', `${flexPath}/sync/progress`, { token })).body, { accepting_clients: true });
  });

  // ---- attacks ----

  /** Every route of the piecewise form, with ids of things the sequence made (so only the caller is wrong). */
  const newRoutes = (): Array<[string, string, unknown?]> => [
    ['GET', '/functions'], ['POST', '/functions', { name: 'f', source: 'exports = () => 1;' }],
    ['GET', `/functions/${functionIds.get('sumFunc')}`], ['PUT', `/functions/${functionIds.get('sumFunc')}`, { name: 'sumFunc', source: 'exports = () => 1;' }],
    ['DELETE', `/functions/${functionIds.get('sumFunc')}`],
    ['GET', '/secrets'], ['POST', '/secrets', { name: 's', value: 'v' }], ['PUT', `/secrets/${ids.secret}`, { value: 'v' }], ['DELETE', `/secrets/${ids.secret}`],
    ['GET', '/values'], ['POST', '/values', { name: 'v', value: 1 }], ['GET', `/values/${ids.value}`], ['PUT', `/values/${ids.value}`, { name: 'v', value: 2 }],
    ['DELETE', `/values/${ids.value}`],
    ['POST', '/services', { name: 'other', type: 'gcm' }], ['DELETE', `/services/${ids.gcm}`],
    ['GET', `/services/${ids.service}/default_rule`], ['POST', `/services/${ids.service}/default_rule`, { roles: [] }],
    ['PUT', `/services/${ids.service}/default_rule`, { roles: [] }], ['DELETE', `/services/${ids.service}/default_rule`],
    ['GET', `/services/${ids.service}/rules`], ['POST', `/services/${ids.service}/rules`, { database: 'd', collection: 'c', roles: [] }],
    ['GET', `/services/${ids.service}/rules/${ids.rule}`], ['PUT', `/services/${ids.service}/rules/${ids.rule}`, { roles: [] }],
    ['DELETE', `/services/${ids.service}/rules/${ids.rule}`],
    ['GET', '/schemas'], ['POST', '/schemas', { schema: {}, metadata: { database: 'd', collection: 'c', data_source: 'BackingDB' } }],
    ['GET', `/schemas/${ids.person}`], ['PUT', `/schemas/${ids.person}`, {}], ['DELETE', `/schemas/${ids.person}`],
    ['GET', '/custom_user_data'], ['PATCH', '/custom_user_data', { enabled: false }],
    ['PATCH', `/services/${ids.service}/config`, { sync: { state: '' } }], ['GET', `/services/${ids.service}/config`],
    ['GET', '/sync/config'], ['PUT', '/sync/config', { development_mode_enabled: false }], ['GET', '/sync/progress'], ['GET', '/sync/state'],
    ['PUT', '/sync/force_reset', { file_ident: 1 }], ['GET', '/logs'], ['POST', '/users/verify_token', { token: 'x' }],
    ['GET', '/settings'], ['PATCH', '/settings', { sync: {} }], ['GET', '/features'], ['POST', '/features', { action: 'enable', feature_flags: ['f'] }],
  ];
  /** The private API family's routes sit under another prefix. */
  const routePath = (group: string, route: string) => (['/settings', '/features'].includes(route)
    ? `/api/private/v1.0/groups/${group}/apps/${app._id}${route}`
    : `/groups/${group}/apps/${app._id}${route}`);

  test('every new route refuses no token, a client user\'s token and a malformed token with 401', async () => {
    const value = await admin('POST', '/values', { name: 'greeting', value: 'hello' });
    assert.equal(value.status, 201, value.text);
    ids.value = value.body._id;
    ids.secret = (await admin('GET', '/secrets')).body.find((s: any) => s.name === 'gcm')._id;
    const userLogin = await call(base, 'POST', `/api/client/v2.0/app/${app.client_app_id}/auth/providers/anon-user/login`, { body: {} });
    assert.equal(userLogin.status, 200, userLogin.text);
    const before = snapshot(appDir);
    for (const [method, route, body] of newRoutes()) {
      for (const [who, bearer] of [['no token', undefined], ['a client user\'s token', userLogin.body.access_token], ['a malformed token', 'not.a.jwt']] as const) {
        const reply = await call(base, method, routePath(groupId, route), { token: bearer, body });
        assertRefused(reply, 401, `${method} ${route} with ${who}`);
      }
    }
    assert.deepEqual(snapshot(appDir), before, 'a refused request wrote nothing');
  });

  test('every new route answers 404 for another group id, as the existing routes do', async () => {
    const before = snapshot(appDir);
    for (const [method, route, body] of newRoutes()) {
      assertRefused(await call(base, method, routePath('000000000000000000000000', route), { token, body }), 404, `${method} ${route} in another group`);
    }
    assert.deepEqual(snapshot(appDir), before);
  });

  test('ill-typed fields get 400 naming the field', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/functions', { name: 5, source: 'exports = () => 1;' }, 'name'],
      ['POST', '/functions', { name: 'f', source: { code: 1 } }, 'source'],
      ['POST', '/functions', { name: 'f', source: 'exports = () => 1;', private: 'yes' }, 'private'],
      ['POST', '/functions', { name: 'f', source: 'exports = () => 1;', can_evaluate: 'true' }, 'can_evaluate'],
      ['POST', '/functions', { name: 'f', source: 'exports = () => 1;', run_as_system: 1 }, 'run_as_system'],
      ['PUT', `/functions/${functionIds.get('sumFunc')}`, { name: ['sumFunc'], source: 'x' }, 'name'],
      ['POST', '/secrets', { name: 7, value: 'v' }, 'name'],
      ['POST', '/secrets', { name: 's', value: { v: 1 } }, 'value'],
      ['PUT', `/secrets/${ids.secret}`, { value: 12 }, 'value'],
      ['POST', '/values', { name: {}, value: 1 }, 'name'],
      ['POST', '/values', { name: 'v', value: 1, from_secret: 'yes' }, 'from_secret'],
      ['POST', '/services', { name: 9, type: 'mongodb' }, 'name'],
      ['POST', '/services', { name: 'svc', type: 4 }, 'type'],
      ['POST', '/services', { name: 'svc', type: 'mongodb', config: [] }, 'config'],
      ['POST', '/services', { name: 'svc', type: 'mongodb', config: { uri: 5 } }, 'config.uri'],
      ['POST', '/services', { name: 'svc', type: 'gcm', secret_config: 'apiKey' }, 'secret_config'],
      ['PUT', `/services/${ids.service}/default_rule`, { roles: 'default' }, 'roles'],
      ['PUT', `/services/${ids.service}/default_rule`, { roles: [{ name: 5 }] }, 'roles[0].name'],
      ['PUT', `/services/${ids.service}/default_rule`, { roles: [], filters: 'none' }, 'filters'],
      ['POST', `/services/${ids.service}/rules`, { database: 5, collection: 'c', roles: [] }, 'database'],
      ['POST', `/services/${ids.service}/rules`, { database: 'd', collection: { c: 1 }, roles: [] }, 'collection'],
      ['POST', `/services/${ids.service}/rules`, { database: 'd', collection: 'c', roles: 'all' }, 'roles'],
      ['POST', '/schemas', { schema: [], metadata: { database: 'd', collection: 'c', data_source: 'BackingDB' } }, 'schema'],
      ['POST', '/schemas', { schema: {}, metadata: 'BackingDB' }, 'metadata'],
      ['POST', '/schemas', { schema: {}, metadata: { database: 1, collection: 'c', data_source: 'BackingDB' } }, 'metadata.database'],
      ['POST', '/schemas', { schema: {}, metadata: { database: 'd', collection: 'c', data_source: 7 } }, 'metadata.data_source'],
      ['POST', '/schemas', { schema: {}, metadata: { database: 'd', collection: 'c', data_source: 'BackingDB' }, relationships: [] }, 'relationships'],
      ['PATCH', '/custom_user_data', { enabled: 'yes' }, 'enabled'],
      ['PATCH', '/custom_user_data', { database_name: 5 }, 'database_name'],
      ['PATCH', '/custom_user_data', { mongo_service_id: 5 }, 'mongo_service_id'],
      ['PATCH', `/services/${ids.service}/config`, { sync: 'enabled' }, 'sync'],
      ['PUT', '/sync/config', { development_mode_enabled: 'yes' }, 'development_mode_enabled'],
      ['PUT', '/sync/force_reset', { file_ident: '1' }, 'file_ident'],
      ['POST', '/users/verify_token', { token: 5 }, 'token'],
      ['POST', '/features', { action: 5, feature_flags: [] }, 'action'],
      ['PATCH', '/settings', ['sync'], 'settings'],
    ];
    const before = snapshot(appDir);
    for (const [method, route, body, field] of cases) {
      assertRefused(await call(base, method, routePath(groupId, route), { token, body }), 400, `${method} ${route} ${JSON.stringify(body)}`, field);
    }
    assert.deepEqual(snapshot(appDir), before);
  });

  test('a refused create leaves nothing behind, and creates sent at once make one thing', async () => {
    const refused = await admin('POST', '/services', { name: 'halfMade', type: 'mongodb', config: { uri: 'mongodb://localhost:26000', sync: 'enabled' } });
    assertRefused(refused, 400, 'a service with sync settings that are not an object', 'sync');
    assert.ok(!fs.existsSync(path.join(appDir, 'data_sources', 'halfMade')), 'the refused service left its folder');
    assert.ok(!(await admin('GET', '/services')).body.some((s: any) => s.name === 'halfMade'), 'the refused service is listed');

    const services = await Promise.all(Array.from({ length: 5 }, () => admin('POST', '/services', { name: 'twice', type: 'mongodb', config: {} })));
    assert.deepEqual(services.map((r) => r.status).sort(), [201, 409, 409, 409, 409]);
    const gcm = await Promise.all(Array.from({ length: 3 }, () => admin('POST', '/services', { name: 'twiceGcm', type: 'gcm', config: {} })));
    assert.deepEqual(gcm.map((r) => r.status).sort(), [201, 409, 409]);
    const functions = await Promise.all(Array.from({ length: 5 }, () => admin('POST', '/functions', { name: 'twice', source: 'exports = () => 1;' })));
    assert.deepEqual(functions.map((r) => r.status).sort(), [201, 409, 409, 409, 409]);
    for (const id of [services, gcm].map((replies) => replies.find((r) => r.status === 201)!.body._id)) {
      assert.equal((await admin('DELETE', `/services/${id}`)).status, 204);
    }
    assert.ok(!fs.existsSync(path.join(appDir, 'services', 'twiceGcm')), 'a deleted gcm service leaves no folder');
    assert.equal((await admin('DELETE', `/functions/${functions.find((r) => r.status === 201)!.body._id}`)).status, 204);

    // auth/providers.json is keyed by name; this one would vanish into the object's prototype.
    assertRefused(await admin('POST', '/auth_providers', { type: 'custom-function', name: '__proto__', config: { authFunctionName: 'authFunc' } }), 400, 'a provider named __proto__', 'name');
  });

  test('a body nested 100 levels deep gets 400, a 17 MB body 413', async () => {
    const deep = `{"name":"f","source":"x","can_evaluate":${'['.repeat(100)}${']'.repeat(100)}}`;
    for (const route of ['/functions', '/services', '/schemas', '/values', `/services/${ids.service}/default_rule`, `/services/${ids.service}/config`]) {
      const method = route.endsWith('/config') ? 'PATCH' : route.endsWith('default_rule') ? 'PUT' : 'POST';
      assertRefused(await call(base, method, routePath(groupId, route), { token, raw: deep }), 400, `${method} ${route} nested 100 deep`);
    }
    const huge = JSON.stringify({ name: 'huge', private: false, can_evaluate: {}, source: `exports = () => "${'x'.repeat(17 * 1024 * 1024)}";` });
    assertRefused(await call(base, 'POST', `${appPath}/functions`, { token, raw: huge }), 413, 'a 17 MB function');
    assertRefused(await call(base, 'POST', `${appPath}/secrets`, { token, raw: JSON.stringify({ name: 'huge', value: 'x'.repeat(17 * 1024 * 1024) }) }), 413, 'a 17 MB secret');
  });

  test('names that try to leave the app folder get 400, and nothing is written outside it', async () => {
    const escapes = ['../../aslescape1', 'a/../../aslescape2', '/tmp/aslescape3', `${path.join(sandbox, 'aslescape4')}`, 'aslescape5\u0000x', '..', 'a\\..\\..\\aslescape6', './aslescape7'];
    const before = snapshot(sandbox);
    for (const name of escapes) {
      const attempts: Array<[string, string, unknown]> = [
        ['POST', '/functions', { name, private: false, can_evaluate: {}, source: 'exports = () => 1;' }],
        ['PUT', `/functions/${functionIds.get('sumFunc')}`, { name, source: 'exports = () => 1;' }],
        ['POST', '/services', { name, type: 'mongodb', config: {} }],
        ['POST', '/services', { name, type: 'gcm', config: {} }],
        ['POST', '/values', { name, value: 1 }],
        ['PUT', `/values/${ids.value}`, { name, value: 1 }],
        ['POST', '/secrets', { name, value: 'v' }],
        ['PUT', `/secrets/${ids.secret}`, { name, value: 'v' }],
        ['POST', '/schemas', { schema: {}, metadata: { database: name, collection: 'c', data_source: 'BackingDB' } }],
        ['POST', '/schemas', { schema: {}, metadata: { database: 'd', collection: name, data_source: 'BackingDB' } }],
        ['PUT', `/schemas/${ids.dog}`, { schema: {}, metadata: { database: databaseName, collection: name, data_source: 'BackingDB' } }],
        ['POST', `/services/${ids.service}/rules`, { database: name, collection: 'c', roles: [] }],
        ['POST', `/services/${ids.service}/rules`, { database: 'd', collection: name, roles: [] }],
      ];
      for (const [method, route, body] of attempts) {
        assertRefused(await call(base, method, routePath(groupId, route), { token, body }), 400, `${method} ${route} named ${JSON.stringify(name)}`);
      }
    }
    assert.deepEqual(snapshot(sandbox), before, 'nothing changed in the folder of apps');
    for (const dir of [os.tmpdir(), '/', path.dirname(sandbox)]) {
      for (const n of [1, 2, 3, 4, 5, 6, 7]) assert.ok(!fs.existsSync(path.join(dir, `aslescape${n}`)), `${dir}/aslescape${n}`);
    }
  });

  test('functions made through the API run sandboxed: no fs, no environment, no secrets.json; the runtime stays up', async () => {
    const attempts: Record<string, string> = {
      requireFs: `exports = function() {\n  return require("fs").readFileSync(${JSON.stringify(path.join(appDir, 'secrets.json'))}, "utf8");\n};\n`,
      readEnv: 'exports = function() {\n  return JSON.stringify(process.env);\n};\n',
      escapeContext: `exports = function() {\n  const outer = this.constructor.constructor("return process")();\n  return outer.mainModule.require("fs").readFileSync(${JSON.stringify(path.join(appDir, 'secrets.json'))}, "utf8");\n};\n`,
      dynamicImport: `exports = async function() {\n  const fs = await import("node:fs");\n  return fs.readFileSync(${JSON.stringify(path.join(appDir, 'secrets.json'))}, "utf8");\n};\n`,
    };
    for (const [name, source] of Object.entries(attempts)) {
      assert.equal((await admin('POST', '/functions', { name, private: false, can_evaluate: {}, source })).status, 201, name);
    }
    const user = await call(base, 'POST', `/api/client/v2.0/app/${app.client_app_id}/auth/providers/anon-user/login`, { body: {} });
    const callFunction = (name: string, args: unknown[] = []) => call(base, 'POST', `/api/client/v2.0/app/${app.client_app_id}/functions/call`, { token: user.body.access_token, body: { name, arguments: args } });
    for (const name of Object.keys(attempts)) {
      const reply = await callFunction(name);
      assert.ok(!reply.text.includes(SECRET_VALUE), `${name} read the secret: ${reply.text}`);
      assert.ok(!reply.text.includes(ENV_CANARY), `${name} read the runtime's environment: ${reply.text}`);
      if (name !== 'readEnv') assertRefused(reply, 'any4xx', name);
    }
    const sum = await callFunction('sumFunc', [1, 2, 3]);
    assert.equal(sum.status, 200, sum.text);
    assert.deepEqual(sum.body, { $numberInt: '6' });
    assert.equal(served.child.exitCode, null, 'the runtime still runs');
  });

  test('a private function is not callable by a client user', async () => {
    const user = await call(base, 'POST', `/api/client/v2.0/app/${app.client_app_id}/auth/providers/anon-user/login`, { body: {} });
    const reply = await call(base, 'POST', `/api/client/v2.0/app/${app.client_app_id}/functions/call`, { token: user.body.access_token, body: { name: 'privateSum', arguments: [1, 2] } });
    assertRefused(reply, 'any4xx', 'a private function');
    assert.notEqual(reply.text, '3');
  });

  test('the secret value is in no answer: secrets, app, service configs, logs, export, nor any other of this file', async () => {
    // The JSON parser's message quotes the text around an error: a malformed secret must not come back.
    assertRefused(await call(base, 'POST', `${appPath}/secrets`, { token, raw: `{"name":"leak","value":${SECRET_VALUE}}` }), 400, 'a malformed secret');
    await admin('GET', '/secrets');
    await admin('GET', '');
    await admin('GET', '/services');
    await admin('GET', `/services/${ids.service}/config`);
    await admin('GET', `/services/${ids.gcm}`);
    await admin('GET', `/services/${ids.gcm}/config`);
    await admin('GET', '/auth_providers');
    for (const p of (await admin('GET', '/auth_providers')).body) await admin('GET', `/auth_providers/${p._id}`);
    await admin('GET', '/logs');
    await admin('GET', '/logs?errors_only=true');
    for (const [i, text] of answers.entries()) assert.ok(!text.includes(SECRET_VALUE), `answer ${i} holds the secret value: ${text.slice(0, 300)}`);
    assert.ok(!served.stdout().includes(SECRET_VALUE) && !served.stderr().includes(SECRET_VALUE), 'the runtime printed the secret value');
    assert.equal((await call(base, 'GET', '/auth/profile', { token })).status, 200, 'the runtime still answers');
  });
});
