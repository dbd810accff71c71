// The assembled runtime over real HTTP on 127.0.0.1, serving a copy of the example app.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { DIST, REPO_ROOT } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

function copyExample(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-runtime-'));
  // A local .asl data folder (left by npm start) is not part of the app.
  fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), dir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  return dir;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

describe('runtime serving the example app', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let client: string;
  let token: string;
  let userId: string;
  const gql = (query: string, variables?: unknown, headers: Record<string, string> = { authorization: `Bearer ${token}` }) =>
    post(`${client}/app/${runtime.appId}/graphql`, { query, variables }, headers);

  before(async () => {
    appDir = copyExample();
    runtime = await startRuntime({ appDir, port: 0, log: quiet, functionTimeoutMs: 2000 });
    client = `${runtime.url}/api/client/v2.0`;
    const register = await post(`${client}/app/${runtime.appId}/auth/providers/local-userpass/register`, { email: 'ada@example.com', password: 'correct horse' });
    assert.ok(register.status >= 200 && register.status < 300, JSON.stringify(register));
    const login = await post(`${client}/app/${runtime.appId}/auth/providers/local-userpass/login`, { username: 'ada@example.com', password: 'correct horse' });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    token = login.body.access_token;
    userId = login.body.user_id;
  });
  after(async () => { await runtime.close(); fs.rmSync(appDir, { recursive: true, force: true }); });

  test('serves under the app id of the export and answers location', async () => {
    assert.equal(runtime.appId, 'todo-tracker-abcde');
    const res = await fetch(`${client}/app/${runtime.appId}/location`);
    const body = await res.json() as Record<string, string>;
    assert.equal(body.hostname, runtime.url, 'the address the client called');
    assert.match(body.ws_hostname, /^ws:\/\//);
  });

  test('generated CRUD with the bearer token, under the collection rules', async () => {
    const insert = await gql(`mutation($t: TaskInsertInput!) { insertOneTask(data: $t) { _id name status priority } }`,
      { t: { _id: '65a000000000000000000001', _partition: userId, name: 'Write the docs', status: 'open', isComplete: false } });
    assert.equal(insert.status, 200);
    assert.equal(insert.body.errors, undefined, JSON.stringify(insert.body));
    assert.equal(insert.body.data.insertOneTask.name, 'Write the docs');
    const list = await gql(`{ tasks(query: {status: "open"}) { _id name } }`);
    assert.deepEqual(list.body.data.tasks, [{ _id: '65a000000000000000000001', name: 'Write the docs' }]);
  });

  test('the partition key can be set on insert but not changed afterwards', async () => {
    const moved = await gql(`mutation { updateOneTask(query: {_id: "65a000000000000000000001"}, set: {_partition: "someone-else"}) { _id } }`);
    assert.equal(moved.body.data, null);
    assert.match(moved.body.errors[0].message, /code="PermissionDenied"/);
    const renamed = await gql(`mutation { updateOneTask(query: {_id: "65a000000000000000000001"}, set: {status: "open"}) { status } }`);
    assert.deepEqual(renamed.body, { data: { updateOneTask: { status: 'open' } } });
  });

  test('custom resolvers of all three kinds run their functions as the user', async () => {
    const summary = await gql(`query { taskSummary(input: {owner: "${userId}", status: "open"}) { owner status count } }`);
    assert.deepEqual(summary.body, { data: { taskSummary: { owner: userId, status: 'open', count: 1 } } });
    const renamed = await gql(`mutation { renameTask(input: {taskId: "65a000000000000000000001", name: "  Ship it  "}) { _id name } }`);
    assert.equal(renamed.body.errors, undefined, JSON.stringify(renamed.body));
    assert.equal(renamed.body.data.renameTask.name, 'Ship it');
    const computed = await gql(`{ task(query: {_id: "65a000000000000000000001"}) { name history { at note } } }`);
    assert.equal(computed.body.errors, undefined, JSON.stringify(computed.body));
    assert.ok(Array.isArray(computed.body.data.task.history) && computed.body.data.task.history.length > 0);
    const archived = await gql(`mutation { archiveCompletedTasks { status } }`);
    assert.deepEqual(archived.body, { data: { archiveCompletedTasks: { status: 'complete' } } });
  });

  test('credential headers authenticate without a token; a bad bearer token is a 401 InvalidSession', async () => {
    const viaHeaders = await gql('{ tasks { name } }', undefined, { email: 'ada@example.com', password: 'correct horse' });
    assert.equal(viaHeaders.status, 200);
    assert.deepEqual(viaHeaders.body.data.tasks, [{ name: 'Ship it' }]);
    const bad = await gql('{ tasks { name } }', undefined, { authorization: 'Bearer not.a.token' });
    assert.equal(bad.status, 401);
    assert.equal(bad.body.error_code, 'InvalidSession');
    const wrongPassword = await gql('{ tasks { name } }', undefined, { email: 'ada@example.com', password: 'nope' });
    assert.equal(wrongPassword.status, 401);
  });

  test('functions/call runs public functions and refuses private ones', async () => {
    const sum = await post(`${client}/app/${runtime.appId}/functions/call`, { name: 'sum', arguments: [{ $numberInt: '2' }, { $numberInt: '3' }] }, { authorization: `Bearer ${token}` });
    assert.equal(sum.status, 200);
    assert.deepEqual(sum.body, { $numberInt: '5' });
    const hidden = await post(`${client}/app/${runtime.appId}/functions/call`, { name: 'resetFunc', arguments: [] }, { authorization: `Bearer ${token}` });
    assert.equal(hidden.status, 404);
    assert.equal(hidden.body.error_code, 'FunctionNotFound');
  });

  test("a function's can_evaluate decides whether a user may call it", async () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(appDir, 'functions/config.json'), 'utf8')) as Array<Record<string, unknown>>;
    fs.writeFileSync(path.join(appDir, 'functions/adminOnly.js'), 'exports = () => "secret stuff";\n');
    fs.writeFileSync(path.join(appDir, 'functions/config.json'), JSON.stringify([...manifest,
      { name: 'adminOnly', private: false, can_evaluate: { '%%user.custom_data.isAdmin': true } }], null, 2));
    assert.equal((await runtime.reload()).applied, true);
    const refused = await post(`${client}/app/${runtime.appId}/functions/call`, { name: 'adminOnly', arguments: [] }, { authorization: `Bearer ${token}` });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error_code, 'FunctionExecutionError');
    assert.match(refused.body.error, /rule not matched/);
    const sum = await post(`${client}/app/${runtime.appId}/functions/call`, { name: 'sum', arguments: [1, 2] }, { authorization: `Bearer ${token}` });
    assert.equal(sum.status, 200, 'functions without can_evaluate stay callable');
  });

  test('a malformed GraphQL body is a JSON error, not a crash', async () => {
    const res = await fetch(`${client}/app/${runtime.appId}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"query": ' });
    assert.ok(res.status >= 400 && res.status < 500);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const again = await gql('{ tasks { name } }');
    assert.equal(again.status, 200);
  });

  test('reload picks up a new resolver; a broken file keeps the last good version', async () => {
    const file = path.join(appDir, 'graphql/custom_resolvers/query_hello.json');
    fs.writeFileSync(path.join(appDir, 'functions/hello.js'), 'exports = () => "hello";\n');
    fs.writeFileSync(file, JSON.stringify({ on_type: 'Query', field_name: 'hello', function_name: 'hello', input_type_format: '', payload_type_format: 'scalar', payload_type: 'string' }));
    const applied = await runtime.reload();
    assert.equal(applied.applied, true, JSON.stringify(applied.diagnostics.filter((d) => d.severity === 'error')));
    assert.deepEqual((await gql('{ hello }')).body, { data: { hello: 'hello' } });
    fs.writeFileSync(file, '{ "on_type": "Query", ');
    const refused = await runtime.reload();
    assert.equal(refused.applied, false);
    assert.deepEqual((await gql('{ hello }')).body, { data: { hello: 'hello' } }, 'the last good version keeps serving');
  });
});

describe('asl serve', () => {
  function serve(appDir: string, extra: string[] = []) {
    const child = spawn(process.execPath, [path.join(DIST, 'cli.js'), 'serve', appDir, '--port', '0', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const ready = new Promise<{ url: string; appId: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`asl serve did not start: ${err}`)), 20000);
      child.stdout.on('data', () => {
        const m = /listening on (\S+)\napp id: (\S+)/.exec(out);
        if (m) { clearTimeout(timer); resolve({ url: m[1], appId: m[2] }); }
      });
      child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`asl serve exited with ${code}: ${err}`)); });
    });
    return { child, ready, stderr: () => err };
  }

  test('prints the URL and app id, and stops cleanly on SIGTERM', async () => {
    const appDir = copyExample();
    const { child, ready } = serve(appDir);
    const { url, appId } = await ready;
    assert.match(url, /^http:\/\/(localhost|127\.0\.0\.1):\d+$/);
    assert.equal(appId, 'todo-tracker-abcde');
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });

  test('every acknowledged write survives SIGKILL of the runtime', async () => {
    const appDir = copyExample();
    const first = serve(appDir);
    const { url, appId } = await first.ready;
    const base = `${url}/api/client/v2.0/app/${appId}`;
    await post(`${base}/auth/providers/local-userpass/register`, { email: 'crash@example.com', password: 'long enough' });
    const login = await post(`${base}/auth/providers/local-userpass/login`, { username: 'crash@example.com', password: 'long enough' });
    const headers = { authorization: `Bearer ${login.body.access_token}` };
    const acknowledged: string[] = [];
    let stop = false;
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const id = (w * 1_000_000 + i + 1).toString(16).padStart(24, '0');
        try {
          const r = await post(`${base}/graphql`, { query: `mutation { insertOneTask(data: {_id: "${id}", _partition: "${login.body.user_id}", name: "t${i}", status: "open", isComplete: false}) { _id } }` }, headers);
          if (r.body?.data?.insertOneTask?._id === id) acknowledged.push(id);
        } catch { return; }
      }
    });
    while (acknowledged.length < 60) await new Promise((r) => setTimeout(r, 20));
    first.child.kill('SIGKILL');
    stop = true;
    await Promise.all(writers);
    const second = serve(appDir);
    const again = await second.ready;
    const relogin = await post(`${again.url}/api/client/v2.0/app/${appId}/auth/providers/local-userpass/login`, { username: 'crash@example.com', password: 'long enough' });
    const found = await post(`${again.url}/api/client/v2.0/app/${appId}/graphql`, { query: '{ tasks(limit: 100000) { _id } }' }, { authorization: `Bearer ${relogin.body.access_token}` });
    const ids = new Set((found.body.data.tasks as Array<{ _id: string }>).map((t) => t._id));
    const lost = acknowledged.filter((id) => !ids.has(id));
    assert.deepEqual(lost, [], `${lost.length} of ${acknowledged.length} acknowledged writes were lost`);
    second.child.kill('SIGTERM');
  });

  test('a port in use is reported clearly', async () => {
    const appDir = copyExample();
    const first = serve(appDir);
    const { url } = await first.ready;
    const port = new URL(url).port;
    const second = spawn(process.execPath, [path.join(DIST, 'cli.js'), 'serve', copyExample(), '--port', port], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    second.stderr.on('data', (d) => { err += d; });
    const code = await new Promise<number | null>((resolve) => second.on('exit', resolve));
    assert.equal(code, 1);
    assert.match(err, new RegExp(`port ${port} .*already in use`));
    first.child.kill('SIGTERM');
  });
});

describe('declared indexes', () => {
  test('the partition key, relationship foreign keys and the custom user data id field are indexed', async () => {
    const { createDeclaredIndexes } = await import('../../runtime/runtime');
    const { openEmbeddedStore } = await import('../../runtime/store');
    const { loadApp } = await import('../../core/load');
    const { nodeFileSystem } = await import('../../core/fs');
    const { EmbeddedCollection } = await import('../../runtime/store/memory-store');
    const store = await openEmbeddedStore({});
    const app = await loadApp(nodeFileSystem, path.join(REPO_ROOT, 'examples/todo-tracker'));
    await createDeclaredIndexes(store, app);
    const plan = (collection: string, filter: Record<string, unknown>) => (store.collection('tracker', collection) as InstanceType<typeof EmbeddedCollection>).explain(filter);
    await store.collection('tracker', 'Task').insertOne({ _partition: 'p1', name: 'x' });
    await store.collection('tracker', 'User').insertOne({ _partition: 'p1', userId: 'u1' });
    assert.deepEqual(plan('Task', { _partition: 'p1' }), { kind: 'index', field: '_partition' });
    assert.deepEqual(plan('User', { userId: 'u1' }), { kind: 'index', field: 'userId' });
    assert.deepEqual(plan('Task', { name: 'x' }), { kind: 'scan' });
    await store.close();
  });
});
