// Numbers keep their BSON type end to end over real HTTP on 127.0.0.1: a function writes BSON.Double(4.0)
// and an int32, a client reads them back as canonical EJSON ({"$numberDouble": "4.0"}, {"$numberInt": "4"}),
// also after the runtime restarts on the same data folder; a GraphQL Float input is stored as a double while
// GraphQL output stays as graphql-js serializes a Float.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { REPO_ROOT } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The example app with a `double` field on Task and functions that write and read typed numbers. */
function prepareApp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bson-types-'));
  fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), dir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  const schemaFile = path.join(dir, 'data_sources/mongodb-atlas/tracker/Task/schema.json');
  const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8'));
  schema.properties.estimate = { bsonType: 'double' };
  fs.writeFileSync(schemaFile, JSON.stringify(schema, null, 2));
  fs.writeFileSync(path.join(dir, 'functions/writeTyped.js'), `exports = async function () {
  const numbers = context.services.get("mongodb-atlas").db("tracker").collection("Numbers");
  await numbers.insertOne({ _id: "n1", d: BSON.Double(4.0), i: 4, f: 4.5, l: BSON.Long.fromNumber(4) });
  return numbers.findOne({ _id: "n1" });
};
`);
  fs.writeFileSync(path.join(dir, 'functions/readTyped.js'), `exports = async function (collection, id) {
  return context.services.get("mongodb-atlas").db("tracker").collection(collection).findOne({ _id: id });
};
`);
  fs.writeFileSync(path.join(dir, 'functions/echoTyped.js'), 'exports = (value) => ({ value, type: value && value._bsontype || typeof value });\n');
  const manifestFile = path.join(dir, 'functions/config.json');
  const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as unknown[];
  manifest.push(
    { name: 'writeTyped', private: false, run_as_system: true },
    { name: 'readTyped', private: false, run_as_system: true },
    { name: 'echoTyped', private: false },
  );
  fs.writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
  return dir;
}

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

describe('BSON types over HTTP', () => {
  let appDir: string;
  let dataDir: string;
  let runtime: RunningRuntime;
  let token: string;
  let userId: string;
  const client = () => `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
  const call = (name: string, args: string) => post(`${client()}/functions/call`, `{"name": ${JSON.stringify(name)}, "arguments": ${args}}`, { authorization: `Bearer ${token}` });

  async function start(): Promise<void> {
    runtime = await startRuntime({ appDir, dataDir, port: 0, log: quiet, functionTimeoutMs: 5000, watch: false });
  }

  async function login(): Promise<void> {
    const res = await post(`${client()}/auth/providers/local-userpass/login`, JSON.stringify({ username: 'ada@example.com', password: 'correct horse' }));
    assert.equal(res.status, 200, res.text);
    token = res.body.access_token;
    userId = res.body.user_id;
  }

  before(async () => {
    appDir = prepareApp();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bson-types-data-'));
    await start();
    const register = await post(`${client()}/auth/providers/local-userpass/register`, JSON.stringify({ email: 'ada@example.com', password: 'correct horse' }));
    assert.ok(register.status >= 200 && register.status < 300, register.text);
    await login();
  });
  after(async () => {
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const written = { _id: 'n1', d: { $numberDouble: '4.0' }, i: { $numberInt: '4' }, f: { $numberDouble: '4.5' }, l: { $numberLong: '4' } };

  test('a function writes BSON.Double(4.0); the client reads canonical EJSON $numberDouble "4.0", the int32 as $numberInt', async () => {
    const wrote = await call('writeTyped', '[]');
    assert.equal(wrote.status, 200, wrote.text);
    assert.deepEqual(wrote.body, written);
    const read = await call('readTyped', '["Numbers", "n1"]');
    assert.deepEqual(read.body, written);
  });

  test('{"$numberDouble": "4.0"} sent by a client reaches the function as a Double and comes back as one', async () => {
    const double = await call('echoTyped', '[{"$numberDouble": "4.0"}]');
    assert.deepEqual(double.body, { value: { $numberDouble: '4.0' }, type: 'Double' });
    const int = await call('echoTyped', '[{"$numberInt": "4"}]');
    assert.deepEqual(int.body, { value: { $numberInt: '4' }, type: 'number' });
  });

  test('a GraphQL Float input is stored as a double; GraphQL still serializes the Float as before', async () => {
    const gql = await post(`${client()}/graphql`, JSON.stringify({
      query: 'mutation($t: TaskInsertInput!) { insertOneTask(data: $t) { _id estimate } }',
      variables: { t: { _id: '65a000000000000000000042', _partition: userId, name: 'Estimate', status: 'open', isComplete: false, estimate: 4 } },
    }), { authorization: `Bearer ${token}` });
    assert.equal(gql.status, 200, gql.text);
    assert.equal(gql.body.errors, undefined, gql.text);
    assert.equal(gql.text, '{"data":{"insertOneTask":{"_id":"65a000000000000000000042","estimate":4}}}');
    const stored = await call('readTyped', '["Task", {"$oid": "65a000000000000000000042"}]');
    assert.deepEqual(stored.body.estimate, { $numberDouble: '4.0' });
  });

  test('after a restart on the same data folder, the numbers come back with their types', async () => {
    await runtime.close();
    await start();
    await login();
    const read = await call('readTyped', '["Numbers", "n1"]');
    assert.equal(read.status, 200, read.text);
    assert.deepEqual(read.body, written);
    const task = await call('readTyped', '["Task", {"$oid": "65a000000000000000000042"}]');
    assert.deepEqual(task.body.estimate, { $numberDouble: '4.0' });
  });
});
