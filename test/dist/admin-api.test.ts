// The Admin API of `dist/cli.js serve <folder of apps>`, driven the way the platform CLI drives it
// (admin-api-wire.md §4: headers, bodyless POSTs, exact statuses, body shapes), and the `asl` admin
// commands end to end in a temporary home folder.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { unzipSync } from 'fflate';
import { filesToAppJson, isTransferredPath } from '../../core/transfer/appJson';
import { CLI, EXAMPLE_DIR, registerAndLogIn, graphql, serveDist, type ServedDist } from './fixtures/serve';

const ADMIN = '/api/admin/v3.0';

interface Reply { status: number; body: any; headers: Headers; bytes: Uint8Array }

/** A request as realm-cli sends it: X-BAAS-Request-Origin, a bearer token, JSON only when there is a body. */
async function cli(base: string, method: string, pathname: string, options: { token?: string; body?: unknown } = {}): Promise<Reply> {
  const headers: Record<string, string> = { 'X-BAAS-Request-Origin': 'mongodb-baas-cli' };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${base}${pathname.startsWith('/api/') ? '' : ADMIN}${pathname}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const text = Buffer.from(bytes).toString('utf8');
  const json = res.headers.get('content-type') === 'application/json';
  return { status: res.status, body: json ? JSON.parse(text) : undefined, headers: res.headers, bytes };
}

/** Waits (with a deadline) until `asl serve` has printed its admin lines, which follow the address. */
async function adminLines(served: ServedDist): Promise<void> {
  const deadline = Date.now() + 20000;
  while (!/admin public key: \S+ \(|--url \S+\n/.test(served.stdout())) {
    if (Date.now() > deadline) throw new Error(`no admin lines on stdout: ${served.stdout()}`);
    await new Promise<void>((resolve) => served.child.stdout!.once('data', () => resolve()));
  }
}

function keysOf(served: ServedDist): { publicKey: string; privateKey: string } {
  const out = served.stdout();
  return { publicKey: /admin public key: (\S+)/.exec(out)![1]!, privateKey: /admin private key: (\S+)/.exec(out)![1]! };
}

/** The zip's entries with the Unix mode of each, read from the central directory. */
function zipModes(bytes: Uint8Array): Map<string, number> {
  const buf = Buffer.from(bytes);
  const modes = new Map<string, number>();
  for (let i = buf.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06])), at = buf.readUInt32LE(i + 16); buf.readUInt32LE(at) === 0x02014b50;) {
    const madeBy = buf.readUInt8(at + 5);
    const nameLength = buf.readUInt16LE(at + 28);
    const extra = buf.readUInt16LE(at + 30);
    const comment = buf.readUInt16LE(at + 32);
    const name = buf.toString('utf8', at + 46, at + 46 + nameLength);
    modes.set(name, madeBy === 3 ? (buf.readUInt32LE(at + 38) >>> 16) & 0o777 : -1);
    at += 46 + nameLength + extra + comment;
  }
  return modes;
}

function filesOfZip(bytes: Uint8Array): Map<string, string> {
  return new Map(Object.entries(unzipSync(bytes)).map(([name, data]) => [name, Buffer.from(data).toString('utf8')]));
}

function transferred(files: Map<string, string>): Map<string, string> {
  return new Map([...files].filter(([p]) => isTransferredPath(p)));
}

describe('Admin API over dist/cli.js serve, as the platform CLI calls it', () => {
  let root: string;
  let served: ServedDist;
  let base: string;
  let access: string;
  let refresh: string;
  let groupId: string;
  let app: any;

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-admin-root-'));
    fs.cpSync(EXAMPLE_DIR, path.join(root, 'todo-tracker'), { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    served = await serveDist({ appDir: root, args: ['--no-watch'] });
    await adminLines(served);
    base = served.url;
  });
  after(async () => { await served.close(); fs.rmSync(root, { recursive: true, force: true }); });

  test('login: 200 with tokens; a wrong key: 401 with {error, error_code}; the first start printed the pair and how to log in', async () => {
    assert.match(served.stdout(), /admin api: http:\/\/127\.0\.0\.1:\d+\/api\/admin\/v3\.0\n/);
    assert.match(served.stdout(), /asl login --api-key \S+ --private-api-key <private key> --url http/);
    const { publicKey, privateKey } = keysOf(served);
    const wrong = await cli(base, 'POST', '/auth/providers/mongodb-cloud/login', { body: { username: publicKey, apiKey: 'wrong' } });
    assert.equal(wrong.status, 401);
    assert.equal(typeof wrong.body.error, 'string');
    assert.equal(typeof wrong.body.error_code, 'string');
    const login = await cli(base, 'POST', '/auth/providers/mongodb-cloud/login', { body: { username: publicKey, apiKey: privateKey } });
    assert.equal(login.status, 200);
    for (const k of ['access_token', 'refresh_token', 'user_id', 'device_id']) assert.equal(typeof login.body[k], 'string');
    ({ access_token: access, refresh_token: refresh } = login.body);
  });

  test('apps list: profile roles, then the four product lists without duplicates', async () => {
    const profile = await cli(base, 'GET', '/auth/profile', { token: access });
    assert.equal(profile.status, 200);
    assert.equal(profile.body.roles.length, 1);
    assert.equal(typeof profile.body.roles[0].role_name, 'string');
    groupId = profile.body.roles[0].group_id;
    const lists = await Promise.all(['', '?product=atlas', '?product=data-api', '?product=device-sync'].map((q) => cli(base, 'GET', `/groups/${groupId}/apps${q}`, { token: access })));
    for (const l of lists) assert.equal(l.status, 200);
    assert.deepEqual(lists.map((l) => l.body.length), [1, 0, 0, 0]);
    app = lists[0]!.body[0];
    assert.equal(app.client_app_id, 'todo-tracker-abcde');
    assert.match(app._id, /^[0-9a-f]{24}$/);
    for (const k of ['name', 'location', 'deployment_model', 'group_id', 'product']) assert.equal(typeof app[k], 'string', k);
    for (const k of ['last_used', 'last_modified']) assert.equal(typeof app[k], 'number', k);
    const unknown = await cli(base, 'GET', `/groups/${groupId}/apps/000000000000000000000000`, { token: access });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error_code, 'AppNotFound');
    assert.equal((await cli(base, 'GET', `/groups/000000000000000000000000/apps`, { token: access })).status, 404);
  });

  test('pull: app, export zip (filename, realm_config.json at the root, mode 0644); a push of the same files shows no difference', async () => {
    const got = await cli(base, 'GET', `/groups/${groupId}/apps/${app._id}`, { token: access });
    assert.equal(got.status, 200);
    const exported = await cli(base, 'GET', `/groups/${groupId}/apps/${app._id}/export?source_control=true&version=20210101`, { token: access });
    assert.equal(exported.status, 200);
    assert.match(exported.headers.get('content-disposition')!, /^attachment; filename=todo-tracker_\d{14}\.zip$/);
    const files = filesOfZip(exported.bytes);
    assert.equal(JSON.parse(files.get('realm_config.json')!).config_version, 20210101);
    assert.ok(![...files.keys()].some((p) => p.startsWith('.asl/') || p === 'secrets.json'), 'runtime data and local secret values stay out');
    for (const [name, mode] of zipModes(exported.bytes)) assert.equal(mode, 0o644, name);
    const diff = await cli(base, 'POST', `/groups/${groupId}/apps/${app._id}/import?diff=true&strategy=replace-by-name`, { token: access, body: filesToAppJson(transferred(files)) });
    assert.equal(diff.status, 200);
    assert.deepEqual(diff.body, []);
  });

  test('push: diff, draft, import 204, deployment 201, poll: the runtime serves the change', async () => {
    const files = transferred(filesOfZip((await cli(base, 'GET', `/groups/${groupId}/apps/${app._id}/export`, { token: access })).bytes));
    files.set('functions/sum.js', 'exports = function (a, b) {\n  return a + b + 1000;\n};\n');
    const body = filesToAppJson(files);
    const appPath = `/groups/${groupId}/apps/${app._id}`;
    const diff = await cli(base, 'POST', `${appPath}/import?diff=true&strategy=replace-by-name`, { token: access, body });
    assert.equal(diff.status, 200);
    assert.equal(diff.body.length, 1);
    assert.match(diff.body[0], /^--- functions\/sum\.js\n\+\+\+ functions\/sum\.js\n@@ [^\n]+ @@\n[\s\S]*-  return a \+ b;\n\+  return a \+ b \+ 1000;/);

    const draft = await cli(base, 'POST', `${appPath}/drafts`, { token: access });
    assert.equal(draft.status, 201);
    assert.equal(typeof draft.body._id, 'string');
    const again = await cli(base, 'POST', `${appPath}/drafts`, { token: access });
    assert.equal(again.body.error_code, 'DraftAlreadyExists');
    const drafts = await cli(base, 'GET', `${appPath}/drafts`, { token: access });
    assert.equal(drafts.status, 200);
    assert.deepEqual(drafts.body.map((d: any) => d._id), [draft.body._id]);

    const imported = await cli(base, 'POST', `${appPath}/import?strategy=replace-by-name`, { token: access, body });
    assert.equal(imported.status, 204);
    const draftDiff = await cli(base, 'GET', `${appPath}/drafts/${draft.body._id}/diff`, { token: access });
    assert.equal(draftDiff.status, 200);
    assert.equal(draftDiff.body.diffs.length, 1);
    assert.ok(!fs.readFileSync(path.join(root, 'todo-tracker/functions/sum.js'), 'utf8').includes('1000'), 'an import into a draft waits for the deployment');

    const deployment = await cli(base, 'POST', `${appPath}/drafts/${draft.body._id}/deployment`, { token: access });
    assert.equal(deployment.status, 201);
    let status = deployment.body;
    while (status.status === 'created' || status.status === 'pending') status = (await cli(base, 'GET', `${appPath}/deployments/${deployment.body._id}`, { token: access })).body;
    const polled = await cli(base, 'GET', `${appPath}/deployments/${deployment.body._id}`, { token: access });
    assert.equal(polled.status, 200);
    assert.equal(polled.body.status, 'successful');
    assert.equal(typeof polled.body.deployed_at, 'number');
    assert.match(fs.readFileSync(path.join(root, 'todo-tracker/functions/sum.js'), 'utf8'), /1000/);

    const user = await registerAndLogIn(served.app, 'ada@example.com', 'correct horse');
    const call = await fetch(`${served.app}/functions/call`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${user.access_token}` }, body: JSON.stringify({ name: 'sum', arguments: [1, 2] }),
    });
    assert.equal(call.status, 200);
    assert.deepEqual(await call.json(), { $numberInt: '1003' });

    const userOnAdmin = await cli(base, 'GET', `/groups/${groupId}/apps`, { token: user.access_token });
    assert.equal(userOnAdmin.status, 401);
    assert.equal(userOnAdmin.body.error_code, 'InvalidSession');
  });

  test('a broken push deploys as failed with the checker\'s message naming the file; nothing is written', async () => {
    const appPath = `/groups/${groupId}/apps/${app._id}`;
    const files = transferred(filesOfZip((await cli(base, 'GET', `${appPath}/export`, { token: access })).bytes));
    files.set('graphql/custom_resolvers/query_broken.json', JSON.stringify({ on_type: 'Query', field_name: 'broken', function_name: 'noSuchFunction', input_type_format: '', payload_type_format: 'scalar', payload_type: { bsonType: 'string' } }));
    const draft = await cli(base, 'POST', `${appPath}/drafts`, { token: access });
    assert.equal((await cli(base, 'POST', `${appPath}/import?strategy=replace-by-name`, { token: access, body: filesToAppJson(files) })).status, 204);
    const deployment = await cli(base, 'POST', `${appPath}/drafts/${draft.body._id}/deployment`, { token: access });
    const final = (await cli(base, 'GET', `${appPath}/deployments/${deployment.body._id}`, { token: access })).body;
    assert.equal(final.status, 'failed');
    assert.match(final.status_error_message, /graphql\/custom_resolvers\/query_broken\.json:\d+:\d+: [^;]*noSuchFunction/);
    assert.ok(!fs.existsSync(path.join(root, 'todo-tracker/graphql/custom_resolvers/query_broken.json')));
    assert.deepEqual((await cli(base, 'GET', `${appPath}/drafts`, { token: access })).body, []);
  });

  test('an invalid access token is refused with InvalidSession; refresh (bodyless, 201) and the replay succeed', async () => {
    const refused = await cli(base, 'GET', '/auth/profile', { token: `${access.slice(0, -4)}AAAA` });
    assert.equal(refused.status, 401);
    assert.deepEqual([refused.body.error_code, refused.body.error], ['InvalidSession', 'invalid session: access token expired']);
    const refreshed = await cli(base, 'POST', '/auth/session', { token: refresh });
    assert.equal(refreshed.status, 201);
    const replay = await cli(base, 'GET', '/auth/profile', { token: refreshed.body.access_token });
    assert.equal(replay.status, 200);
    assert.equal(replay.body.roles[0].group_id, groupId);
  });

  test('apps create with a template: templates, Atlas groups and clusters, create 201, export into backend/, client zip; 204 without a client', async () => {
    const templates = await cli(base, 'GET', '/templates', { token: access });
    assert.equal(templates.status, 200);
    assert.equal(templates.body.length, 13);
    const groups = await cli(base, 'GET', '/api/public/v1.0/groups');
    assert.equal(groups.status, 200);
    assert.deepEqual(groups.body.results.map((g: any) => g.id), [groupId]);
    const clusters = await cli(base, 'GET', `/api/atlas/v1.0/groups/${groupId}/clusters`);
    assert.equal(clusters.status, 200);
    const cluster = clusters.body.results[0].name;
    assert.equal(typeof cluster, 'string');

    const bad = await cli(base, 'POST', `/groups/${groupId}/apps`, { token: access, body: { name: '1bad' } });
    assert.equal(bad.status, 400);
    assert.equal(typeof bad.body.error, 'string');
    const unknownTemplate = await cli(base, 'POST', `/groups/${groupId}/apps`, { token: access, body: { name: 'x', template_id: 'nope' } });
    assert.deepEqual([unknownTemplate.status, unknownTemplate.body.error], [400, "template 'nope' not found"]);

    const created = await cli(base, 'POST', `/groups/${groupId}/apps`, {
      token: access,
      body: { name: 'Mobile', location: 'US-VA', deployment_model: 'GLOBAL', template_id: 'react-native.todo.flex',
        data_source: { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: cluster, readPreference: 'primary', wireProtocolEnabled: false }, version: 1 } },
    });
    assert.equal(created.status, 201);
    assert.match(created.body.client_app_id, /^mobile-[a-z]{5}$/);
    assert.deepEqual([created.body.name, created.body.location, created.body.deployment_model, created.body.template_id], ['Mobile', 'US-VA', 'GLOBAL', 'react-native.todo.flex']);
    assert.ok(fs.existsSync(path.join(root, 'Mobile', 'realm_config.json')), 'the app is a folder under the served folder');
    const appPath = `/groups/${groupId}/apps/${created.body._id}`;
    assert.equal((await cli(base, 'GET', appPath, { token: access })).body.template_id, 'react-native.todo.flex');
    const backend = filesOfZip((await cli(base, 'GET', `${appPath}/export?source_control=true&version=20210101`, { token: access })).bytes);
    assert.equal(JSON.parse(backend.get('realm_config.json')!).app_id, created.body.client_app_id);
    const compatible = await cli(base, 'GET', `${appPath}/templates`, { token: access });
    assert.ok(compatible.body.some((t: any) => t.id === 'react-native.todo.flex'));
    const client = await cli(base, 'GET', `${appPath}/templates/react-native.todo.flex/client`, { token: access });
    assert.equal(client.status, 200);
    const clientFiles = filesOfZip(client.bytes);
    assert.ok(clientFiles.has('README.md'));
    assert.equal(JSON.parse(clientFiles.get('atlasConfig.json')!).appId, created.body.client_app_id);
    assert.equal((await cli(base, 'GET', `/groups/${groupId}/apps/${app._id}/templates`, { token: access })).status, 400, 'an app not made from a template has no compatible client');

    const download = await cli(base, 'GET', '/templates/react-native.todo.flex/client', { token: access });
    assert.equal(download.status, 200, 'the app-less download form');
    assert.equal(JSON.parse(filesOfZip(download.bytes).get('atlasConfig.json')!).appId, '', 'a downloaded client has the app id blank');
    const cpp = await cli(base, 'GET', '/templates/cpp.todo.flex/client', { token: access });
    assert.equal(cpp.status, 400);
    assert.equal(cpp.body.error_code, 'NotDownloadable');
    assert.equal((await cli(base, 'GET', '/templates/no.such.template/client', { token: access })).status, 404);
    assert.equal((await cli(base, 'GET', '/templates/sync.todo/client', { token: access })).status, 204, 'a backend-only template has no client');
    assert.equal((await cli(base, 'GET', '/templates/react-native.todo.flex/client')).status, 401, 'admin routes need the admin token');

    const backendOnly = await cli(base, 'POST', `/groups/${groupId}/apps`, { token: access, body: { name: 'SyncOnly', template_id: 'sync.todo' } });
    assert.equal(backendOnly.status, 201);
    assert.equal((await cli(base, 'GET', `/groups/${groupId}/apps/${backendOnly.body._id}/templates/sync.todo/client`, { token: access })).status, 204);
    const listed = (await cli(base, 'GET', `/groups/${groupId}/apps`, { token: access })).body.map((a: any) => a.client_app_id);
    assert.equal(listed.length, 3);
    assert.equal((await cli(base, 'DELETE', `/groups/${groupId}/apps/${backendOnly.body._id}`, { token: access })).status, 204);
    assert.ok(!fs.existsSync(path.join(root, 'SyncOnly')));

    // A new app of a deleted one's name starts empty: none of its users (nor documents, nor sync history).
    const first = await cli(base, 'POST', `/groups/${groupId}/apps`, { token: access, body: { name: 'Reused' } });
    assert.equal(first.status, 201);
    const provider = await cli(base, 'POST', `/groups/${groupId}/apps/${first.body._id}/auth_providers`, {
      token: access, body: { type: 'local-userpass', config: { autoConfirm: true, resetPasswordUrl: 'http://localhost/reset', emailConfirmationUrl: 'http://localhost/confirm' } },
    });
    assert.equal(provider.status, 201, JSON.stringify(provider.body));
    const firstUser = await cli(base, 'POST', `/groups/${groupId}/apps/${first.body._id}/users`, { token: access, body: { email: 'old@example.com', password: 'password1' } });
    assert.equal(firstUser.status, 201, JSON.stringify(firstUser.body));
    assert.equal((await cli(base, 'DELETE', `/groups/${groupId}/apps/${first.body._id}`, { token: access })).status, 204);
    const second = await cli(base, 'POST', `/groups/${groupId}/apps`, { token: access, body: { name: 'Reused' } });
    assert.equal(second.status, 201);
    assert.deepEqual((await cli(base, 'GET', `/groups/${groupId}/apps/${second.body._id}/users`, { token: access })).body, []);
    assert.equal((await cli(base, 'DELETE', `/groups/${groupId}/apps/${second.body._id}`, { token: access })).status, 204);
  });

  test('auth providers, services with their sync config, sync/data, users', async () => {
    const appPath = `/groups/${groupId}/apps/${app._id}`;
    const providers = (await cli(base, 'GET', `${appPath}/auth_providers`, { token: access })).body;
    assert.ok(providers.every((p: any) => typeof p._id === 'string' && typeof p.name === 'string' && typeof p.type === 'string' && !('config' in p)));
    const second = await cli(base, 'POST', `${appPath}/auth_providers`, { token: access, body: { name: 'okta', type: 'custom-token', disabled: false, config: { audience: [], jwkURI: 'https://idp.example.com/oauth2/default/v1/keys', useJWKURI: true }, secret_config: { signingKeys: [] }, metadata_fields: [] } });
    assert.equal(second.status, 400, 'the example app already has a custom JWT provider');
    assert.match(second.body.error, /custom JWT provider/);
    const anon = providers.find((p: any) => p.type === 'anon-user');
    assert.equal((await cli(base, 'PUT', `${appPath}/auth_providers/${anon._id}/enable`, { token: access })).status, 204);
    assert.equal(JSON.parse(fs.readFileSync(path.join(root, 'todo-tracker/auth/providers.json'), 'utf8'))['anon-user'].disabled, false);
    const anonLogin = await fetch(`${served.app}/auth/providers/anon-user/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    assert.equal(anonLogin.status, 200, 'the runtime took the change up');

    const services = (await cli(base, 'GET', `${appPath}/services`, { token: access })).body;
    const atlas = services.find((s: any) => s.name === 'mongodb-atlas');
    assert.deepEqual(Object.keys(atlas).sort(), ['_id', 'last_modified', 'name', 'type', 'version']);
    const config = await cli(base, 'GET', `${appPath}/services/${atlas._id}/config`, { token: access });
    assert.equal(config.status, 200);
    assert.equal(config.body.clusterName, 'Cluster0');
    assert.equal(config.body.sync.type, 'partition');
    assert.equal(config.body.sync.service_name, undefined);
    const data = await cli(base, 'GET', `${appPath}/sync/data?service_id=${atlas._id}`, { token: access });
    assert.equal(data.status, 200);
    assert.equal(data.body.service_id, atlas._id);
    // Fields every schema has with one key type: the custom user data (User) is not synced, so it has no _partition.
    assert.deepEqual(data.body.partition_fields, [{ key: 'name', type: 'string' }]);
    assert.equal((await cli(base, 'GET', `${appPath}/sync/data`, { token: access })).status, 400);

    const created = await cli(base, 'POST', `${appPath}/users`, { token: access, body: { email: 'grace@example.com', password: 'hopper1906' } });
    assert.equal(created.status, 201);
    const listed = (await cli(base, 'GET', `${appPath}/users`, { token: access })).body;
    assert.ok(listed.some((u: any) => u._id === created.body._id && u.data.email === 'grace@example.com'));
    const session = await fetch(`${served.app}/auth/providers/local-userpass/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username: 'grace@example.com', password: 'hopper1906' }) });
    const tokens = await session.json() as { refresh_token: string };
    assert.equal((await cli(base, 'PUT', `${appPath}/users/${created.body._id}/logout`, { token: access })).status, 204);
    const refreshAfterRevoke = await fetch(`${served.url}/api/client/v2.0/auth/session`, { method: 'POST', headers: { Authorization: `Bearer ${tokens.refresh_token}` } });
    assert.equal(refreshAfterRevoke.status, 401);
    assert.equal((await cli(base, 'DELETE', `${appPath}/users/${created.body._id}`, { token: access })).status, 204);
    assert.equal((await cli(base, 'DELETE', `${appPath}/users/${created.body._id}`, { token: access })).status, 404);
  });

  test('the private key is in no log and in no file of the data folder', () => {
    const { privateKey } = keysOf(served);
    assert.ok(!served.stderr().includes(privateKey));
    const dataDir = /--data (\S+)/.exec(served.child.spawnargs.join(' '))![1]!;
    for (const entry of fs.readdirSync(dataDir, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) assert.ok(!fs.readFileSync(path.join(entry.parentPath, entry.name), 'latin1').includes(privateKey), entry.name);
    }
  });
});

/** Runs `node dist/cli.js …args` in `cwd` with HOME set to a temp folder; resolves with exit code and output. */
function asl(home: string, cwd: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, HOME: home, XDG_CONFIG_HOME: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

function treeOf(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const rel = path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/');
    if (isTransferredPath(rel)) out.set(rel, fs.readFileSync(path.join(dir, rel), 'utf8'));
  }
  return out;
}

describe('asl login / apps / pull / push against dist/cli.js serve, in a temporary home', () => {
  let root: string;
  let home: string;
  let work: string;
  let served: ServedDist;

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-cli-root-'));
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-cli-home-'));
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-cli-work-'));
    served = await serveDist({ appDir: root, args: ['--allow-no-apps', '--no-watch'] });
    await adminLines(served);
  });
  after(async () => {
    await served.close();
    for (const d of [root, home, work]) fs.rmSync(d, { recursive: true, force: true });
  });

  test('login, create from a template, pull, change a resolver, push --yes, served at once, pull equals what was pushed', async () => {
    const { publicKey, privateKey } = keysOf(served);
    assert.equal((await asl(home, work, ['whoami'])).code, 1);
    const usage = await asl(home, work, ['login', '--api-key', publicKey]);
    assert.equal(usage.code, 2);
    const wrong = await asl(home, work, ['login', '--api-key', publicKey, '--private-api-key', 'nope', '--url', served.url]);
    assert.equal(wrong.code, 1);
    const login = await asl(home, work, ['login', '--api-key', publicKey, '--private-api-key', privateKey, '--url', served.url]);
    assert.equal(login.code, 0, login.stderr);
    assert.equal(login.stdout, 'Successfully logged in\n');
    const profile = path.join(home, '.config', 'asl', 'default.json');
    assert.equal(fs.statSync(profile).mode & 0o777, 0o600);
    assert.ok(!fs.readFileSync(profile, 'utf8').includes(privateKey), 'the private key is not stored');
    const whoami = await asl(home, work, ['whoami', '--json']);
    assert.equal(JSON.parse(whoami.stdout).logged_in, true);

    const created = await asl(home, work, ['apps', 'create', '-n', 'todo', '--template', 'sync.todo', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const result = JSON.parse(created.stdout);
    assert.match(result.client_app_id, /^todo-[a-z]{5}$/);
    assert.equal(result.backend, path.join(work, 'todo', 'backend'));
    assert.ok(fs.existsSync(path.join(work, 'todo', 'backend', 'realm_config.json')));
    const list = await asl(home, work, ['apps', 'list']);
    assert.equal(list.stdout, `Found 1 apps\n  ${result.client_app_id} (${JSON.parse(whoami.stdout).group_ids[0]})\n`);

    const pulled = await asl(home, work, ['pull', '--remote', result.client_app_id, '--local', 'copy']);
    assert.equal(pulled.code, 0, pulled.stderr);
    const copy = path.join(work, 'copy');
    const unchanged = await asl(home, copy, ['push']);
    assert.equal(unchanged.stdout, 'Deployed app is identical to proposed version, nothing to do\n');

    fs.writeFileSync(path.join(copy, 'functions', 'hello.js'), 'exports = (input) => `hello ${input.name}`;\n');
    const fnConfig = JSON.parse(fs.readFileSync(path.join(copy, 'functions', 'config.json'), 'utf8'));
    fs.writeFileSync(path.join(copy, 'functions', 'config.json'), JSON.stringify([...fnConfig, { name: 'hello', private: false }], null, 2) + '\n');
    fs.mkdirSync(path.join(copy, 'graphql', 'custom_resolvers'), { recursive: true });
    fs.writeFileSync(path.join(copy, 'graphql', 'custom_resolvers', 'query_hello.json'), JSON.stringify({
      on_type: 'Query', field_name: 'hello', function_name: 'hello', input_type_format: 'custom',
      input_type: { title: 'HelloInput', bsonType: 'object', required: ['name'], properties: { name: { bsonType: 'string' } } },
      payload_type_format: 'scalar', payload_type: 'string',
    }, null, 2) + '\n');
    const refused = await asl(home, copy, ['push']);
    assert.equal(refused.code, 2, 'not on a terminal: --yes is needed');
    assert.match(refused.stderr, /--yes/);
    const dry = await asl(home, copy, ['push', '--dry-run']);
    assert.equal(dry.code, 0);
    assert.match(dry.stdout, /--- graphql\/custom_resolvers\/query_hello\.json/);
    const pushed = await asl(home, copy, ['push', '--yes']);
    assert.equal(pushed.code, 0, pushed.stderr);
    assert.match(pushed.stdout, new RegExp(`Successfully pushed app up: ${result.client_app_id}\\n$`));

    const user = await registerAndLogIn(`${served.url}/api/client/v2.0/app/${result.client_app_id}`, 'ada@example.com', 'correct horse');
    const answer = await graphql(`${served.url}/api/client/v2.0/app/${result.client_app_id}/graphql`, user.access_token, '{ hello(input: {name: "Ada"}) }');
    assert.deepEqual(answer.body, { data: { hello: 'hello Ada' } });

    const again = await asl(home, work, ['pull', '--remote', result.client_app_id.slice(0, 6), '--local', 'again']);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(treeOf(path.join(work, 'again')), treeOf(copy));

    const fresh = path.join(work, 'again');
    const config = JSON.parse(fs.readFileSync(path.join(fresh, 'realm_config.json'), 'utf8'));
    fs.writeFileSync(path.join(fresh, 'realm_config.json'), JSON.stringify({ ...config, app_id: 'brandnew-zzzzz', name: 'brandnew' }, null, 2) + '\n');
    const createdByPush = await asl(home, fresh, ['push', '--yes']);
    assert.equal(createdByPush.code, 0, createdByPush.stderr);
    const newId = JSON.parse(fs.readFileSync(path.join(fresh, 'realm_config.json'), 'utf8')).app_id;
    assert.match(newId, /^brandnew-[a-z]{5}$/, 'the push rewrote app_id from the created app');
    assert.match(createdByPush.stdout, new RegExp(`Successfully pushed app up: ${newId}\\n$`));
    assert.ok(fs.existsSync(path.join(root, 'brandnew', 'graphql', 'custom_resolvers', 'query_hello.json')));

    fs.writeFileSync(path.join(copy, 'graphql', 'custom_resolvers', 'query_hello.json'), '{"on_type": "Query", "field_name": "hello", "function_name": "missing"}\n');
    const broken = await asl(home, copy, ['push', '--yes']);
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, /^asl push: failed to deploy app: .*graphql\/custom_resolvers\/query_hello\.json:\d+:\d+: /m);

    const logout = await asl(home, work, ['logout']);
    assert.equal(logout.code, 0);
    assert.equal((await asl(home, work, ['apps', 'list'])).code, 1);
  });

  test('--help on each command; unknown flags are usage errors', async () => {
    for (const args of [['login', '--help'], ['logout', '--help'], ['whoami', '--help'], ['apps', '--help'], ['pull', '--help'], ['push', '--help'], ['admin-keys', '--help']]) {
      const r = await asl(home, work, args);
      assert.equal(r.code, 0, args.join(' '));
      assert.match(r.stdout, /^Usage: asl /);
    }
    const appsHelp = (await asl(home, work, ['apps', 'create', '--help'])).stdout;
    for (const id of ['web.mql.todo', 'web.data-api.todo', 'cpp.todo.flex', 'flex-sync-guides.tiered', 'triggers']) assert.match(appsHelp, new RegExp(`^  ${id.replace(/\./g, '\\.')} `, 'm'), `apps create --help lists ${id}`);
    assert.equal((await asl(home, work, ['push', '--bogus'])).code, 2);
  });
});
