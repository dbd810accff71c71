// Custom HTTPS endpoints and the Data API over real HTTP on 127.0.0.1, with the real function runner,
// rule-checked data access over an in-memory store and the real authentication service.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EJSON, ObjectId } from 'bson';
import { loadApp } from '../../core/load';
import type { AppModel } from '../../core/model';
import { openAuth, type OpenedAuth } from '../../runtime/auth';
import { createDataAccess, type DataAccess } from '../../runtime/data';
import { registerEndpointRoutes, withEndpointSources } from '../../runtime/endpoints';
import { createFunctionRunner, type FunctionRunner } from '../../runtime/functions';
import { Router } from '../../runtime/http/router';
import { createHttpServer, type Logger, type RunningHttpServer } from '../../runtime/http/server';
import { loadSecrets } from '../../runtime/secrets';
import { runServiceAction } from '../../runtime/service-actions';
import { openEmbeddedStore, type DocumentStore } from '../../runtime/store';
import { APP_ROOT, appFs } from '../helpers/app';

const APP_ID = 'endpoints-abcde';
const HOOK_SECRET = 'hook-secret-value-5f2c9a';
const PASSWORD = 'correct horse battery';

const FUNCTIONS: Record<string, { config?: Record<string, unknown>; source: string }> = {
  echo: {
    source: `exports = function ({ query, headers, body }, response) {
  return {
    query,
    contentType: headers['Content-Type'] ?? null,
    custom: headers['X-Custom'] ?? null,
    body: body === undefined ? null : body.text(),
    user: context.user.id,
    userType: context.user.type,
    plan: context.user.custom_data.plan ?? null,
    method: context.request.httpMethod,
  };
};`,
  },
  echoSystem: { config: { run_as_system: true }, source: 'exports = ({ query, body }) => ({ query, body: body === undefined ? null : body.text(), userType: context.user.type });' },
  respond: {
    config: { run_as_system: true },
    source: `exports = function ({ body }, response) {
  const data = JSON.parse(body.text());
  response.setStatusCode(201);
  response.setHeader('Content-Type', 'text/plain');
  response.addHeader('X-Multi', 'a');
  response.addHeader('X-Multi', 'b');
  response.setBody('hello ' + data.name);
  return 'not sent';
};`,
  },
  multi: { config: { run_as_system: true }, source: 'exports = (request, response) => ({ method: context.request.httpMethod });' },
  scripted: {
    config: { run_as_user_id_script_source: 'exports = (request) => request.query.as;' },
    source: 'exports = () => ({ user: context.user.id, email: context.user.data.email });',
  },
  guarded: {
    config: { can_evaluate: { '%%user.data.email': 'ann@example.com' } },
    source: 'exports = () => "welcome " + context.user.data.email;',
  },
  boom: { config: { run_as_system: true }, source: 'exports = () => { throw new Error("kaput"); };' },
  typed: { config: { run_as_system: true }, source: 'exports = () => ({ n: new BSON.Long(5), id: new BSON.ObjectId("65f000000000000000000001") });' },
  binary: {
    config: { run_as_system: true },
    source: `module.exports = function (request, response) {
  response.setHeader('Content-Type', 'application/octet-stream');
  response.setBody(Buffer.from([0, 255, 1, 128]));
};`,
  },
  badStatus: { config: { run_as_system: true }, source: 'exports = (request, response) => { response.setStatusCode(42); };' },
  writeAsUser: {
    source: `exports = async () => context.services.get('mongodb-atlas').db('todo').collection('Item')
  .insertOne({ owner_id: 'somebody else', summary: 'sneaky' });`,
  },
};

function endpoint(route: string, method: string, fn: string, extra: Record<string, unknown> = {}) {
  return {
    route, http_method: method, function_name: fn, validation_method: 'NO_VALIDATION',
    respond_result: true, fetch_custom_user_data: false, create_user_on_auth: false, disabled: false, ...extra,
  };
}

const ENDPOINTS = [
  endpoint('/echo', 'GET', 'echoSystem'),
  endpoint('/echo', 'POST', 'echoSystem'),
  endpoint('/app-auth', 'POST', 'echo'),
  endpoint('/app-auth-data', 'POST', 'echo', { fetch_custom_user_data: true }),
  endpoint('/respond', 'POST', 'respond'),
  endpoint('/silent', 'POST', 'echoSystem', { respond_result: false }),
  endpoint('/secret', 'GET', 'echoSystem', { validation_method: 'SECRET_AS_QUERY_PARAM', secret_name: 'hook_secret' }),
  endpoint('/signed', 'POST', 'echoSystem', { validation_method: 'VERIFY_PAYLOAD', secret_name: 'hook_secret' }),
  endpoint('/any/nested', '*', 'multi'),
  endpoint('/off', 'GET', 'echoSystem', { disabled: true }),
  endpoint('/whoami', 'GET', 'scripted'),
  endpoint('/guarded', 'GET', 'guarded'),
  endpoint('/boom', 'GET', 'boom'),
  endpoint('/typed', 'GET', 'typed', { return_type: 'EJSON' }),
  endpoint('/write-as-user', 'POST', 'writeAsUser'),
  endpoint('/binary', 'GET', 'binary'),
  endpoint('/bad-status', 'GET', 'badStatus'),
];

const OWNER_ONLY_RULES = {
  database: 'todo', collection: 'Item',
  roles: [{
    name: 'owner', apply_when: {},
    document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } },
    read: true, write: true, insert: true, delete: true, search: true,
  }],
  filters: [],
};

function appFiles(dataApi: Record<string, unknown> | undefined, endpoints: unknown[] = ENDPOINTS): Record<string, unknown> {
  const files: Record<string, unknown> = {
    'realm_config.json': { config_version: 20210101, app_id: APP_ID, name: 'endpoints', location: 'US-VA', deployment_model: 'GLOBAL' },
    'auth/providers.json': {
      'local-userpass': { name: 'local-userpass', type: 'local-userpass', disabled: false, config: { autoConfirm: true, resetFunctionName: 'boom', runResetFunction: true } },
      'api-key': { name: 'api-key', type: 'api-key', disabled: false },
    },
    'auth/custom_user_data.json': { enabled: false },
    'functions/config.json': Object.entries(FUNCTIONS).map(([name, f]) => ({ name, private: false, ...f.config })),
    'data_sources/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } },
    'data_sources/mongodb-atlas/todo/Item/rules.json': OWNER_ONLY_RULES,
    'environments/no-environment.json': { values: {} },
    'http_endpoints/config.json': endpoints,
  };
  for (const [name, f] of Object.entries(FUNCTIONS)) files[`functions/${name}.js`] = f.source;
  if (dataApi) files['http_endpoints/data_api_config.json'] = dataApi;
  return files;
}

const DATA_API_JSON = {
  disabled: false, versions: ['v1'], return_type: 'JSON', create_user_on_auth: false, run_as_system: false,
  validation_method: 'NO_VALIDATION', fetch_custom_user_data: false, log_function_arguments: false,
};

interface Response { status: number; headers: Headers; text: string; json: any }

interface Served {
  url: string;
  request(method: string, route: string, o?: { headers?: Record<string, string>; body?: string; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

let dataDir: string;
let store: DocumentStore;
let auth: OpenedAuth;
let runner: FunctionRunner;
let functionsApp: AppModel;
const logs: string[] = [];
const log: Logger = { info: (m) => logs.push(`info ${m}`), warn: (m) => logs.push(`warn ${m}`), error: (m) => logs.push(`error ${m}`) };
const { store: secrets } = loadSecrets({ flags: [`hook_secret=${HOOK_SECRET}`] });
const servers: Served[] = [];
let dataFor: DataAccess;

async function serve(files: Record<string, unknown>): Promise<Served> {
  const app = await loadApp(appFs(files), APP_ROOT);
  const data = createDataAccess({ app, store, values: {}, environment: { tag: '', values: {} } });
  const router = new Router();
  registerEndpointRoutes(router, {
    app, appId: APP_ID, secrets, log, values: {}, environment: { tag: '', values: {} },
    authenticate: (headers) => auth.service.authenticateRequest(headers),
    findUser: async (id) => {
      const user = auth.service.user(id);
      return user ? { user, customData: { plan: 'gold' } } : undefined;
    },
    runFunction: (name, args, ctx) => runner.run(name, args, ctx),
    collectionFor: (principal, ds, db, coll) => data.forUser(principal).collection(ds, db, coll),
  });
  const server: RunningHttpServer = await createHttpServer({ router, log });
  const served: Served = {
    url: server.url,
    async request(method, route, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      let body = o.body;
      if (o.json !== undefined) {
        body = JSON.stringify(o.json);
        headers['Content-Type'] ??= 'application/json';
      }
      const res = await fetch(server.url + route, { method, headers, ...(body !== undefined ? { body } : {}) });
      const text = await res.text();
      let json: unknown;
      try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
      return { status: res.status, headers: res.headers, text, json };
    },
    close: () => server.close(),
  };
  servers.push(served);
  return served;
}

interface TestUser { id: string; token: string; refresh: string; email: string }

async function createUser(email: string): Promise<TestUser> {
  await auth.service.register({ email, password: PASSWORD });
  const login = await auth.service.login('local-userpass', { username: email, password: PASSWORD });
  return { id: login.user_id, token: login.access_token, refresh: login.refresh_token!, email };
}

const bearer = (user: TestUser) => ({ Authorization: `Bearer ${user.token}` });
const endpointUrl = (route: string) => `/app/${APP_ID}/endpoint${route}`;
const action = (name: string, version = 'v1') => endpointUrl(`/data/${version}/action/${name}`);
const items = { dataSource: 'mongodb-atlas', database: 'todo', collection: 'Item' };

function assertError(res: Response, status: number, code: string, pattern?: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.equal(res.json.error_code, code, res.text);
  assert.equal(typeof res.json.link, 'string');
  if (pattern) assert.match(res.json.error, pattern);
}

let main: Served;
let ann: TestUser;
let bob: TestUser;

before(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'asl-endpoints-'));
  store = await openEmbeddedStore({});
  functionsApp = await loadApp(appFs(appFiles(DATA_API_JSON)), APP_ROOT);
  dataFor = createDataAccess({ app: functionsApp, store, values: {}, environment: { tag: '', values: {} } });
  auth = await openAuth({
    dataDir, appId: APP_ID, providers: functionsApp.authProviders, secrets, log,
    findCustomUserData: async () => ({ plan: 'gold' }),
  });
  runner = createFunctionRunner({
    loadSource: withEndpointSources(() => functionsApp, (name) => {
      const file = functionsApp.functions.get(name)?.sourceFile;
      return file && { source: file.text, path: file.path };
    }),
    host: {
      serviceAction: (service, act, args, ctx) => runServiceAction(
        (s, d, c) => dataFor.forUser(ctx.runAsSystem || !ctx.user ? 'system' : ctx.user).collection(s, d, c), service, act, args),
      values: { get: () => undefined },
      environment: { tag: '', values: {} },
      executeFunction: (name, args, ctx) => runner.run(name, args, ctx),
    },
    timeoutMs: 20_000,
    poolSize: 2,
  });
  main = await serve(appFiles(DATA_API_JSON));
  ann = await createUser('ann@example.com');
  bob = await createUser('bob@example.com');
});

after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await runner.close();
  await auth.close();
  await store.close();
  await fs.rm(dataDir, { recursive: true, force: true });
});

describe('custom endpoints: requests and responses', () => {
  test('GET passes query parameters to the function and answers its result as JSON', async () => {
    const res = await main.request('GET', `${endpointUrl('/echo')}?name=Ann&name=Other&tag=x`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(res.json, { query: { name: 'Ann', tag: 'x' }, body: null, userType: 'system' });
  });

  test('POST passes the body as a BSON Binary read with text(), headers under their canonical names', async () => {
    const res = await main.request('POST', endpointUrl('/app-auth'), {
      headers: { ...bearer(ann), 'x-custom': 'one' }, json: { hello: 'world' },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, {
      query: {}, contentType: ['application/json'], custom: ['one'], body: '{"hello":"world"}',
      user: ann.id, userType: 'normal', plan: null, method: 'POST',
    });
  });

  test('respond_result with response.setStatusCode/setHeader/addHeader/setBody sends that response', async () => {
    const res = await main.request('POST', endpointUrl('/respond'), { json: { name: 'Bob' } });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('content-type'), 'text/plain');
    assert.equal(res.headers.get('x-multi'), 'a, b');
    assert.equal(res.text, 'hello Bob');
  });

  test('respond_result false answers 204 with no body and no content type', async () => {
    const res = await main.request('POST', endpointUrl('/silent'), { json: { a: 1 } });
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    assert.equal(res.headers.get('content-type'), null);
  });

  test('http_method "*" answers every method and the function sees which', async () => {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await main.request(method, endpointUrl('/any/nested'));
      assert.equal(res.status, 200, `${method}: ${res.text}`);
      assert.deepEqual(res.json, { method });
    }
  });

  test('a method the route does not configure gets 405; an unknown route gets 404', async () => {
    assert.equal((await main.request('DELETE', endpointUrl('/echo'))).status, 405);
    assertError(await main.request('GET', endpointUrl('/nowhere')), 404, 'NotFound');
  });

  test('a disabled endpoint answers 404 and says why', async () => {
    assertError(await main.request('GET', endpointUrl('/off')), 404, 'NotFound', /disabled/);
  });

  test('another app id gets 404', async () => {
    assertError(await main.request('GET', '/app/other-app-zzzzz/endpoint/echo'), 404, 'AppNotFound');
  });

  test('a module.exports function can send a binary body', async () => {
    const res = await fetch(main.url + endpointUrl('/binary'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.deepEqual([...new Uint8Array(await res.arrayBuffer())], [0, 255, 1, 128]);
  });

  test('an invalid status code from response.setStatusCode is a server error, not a broken response', async () => {
    assertError(await main.request('GET', endpointUrl('/bad-status')), 500, 'FunctionExecutionError', /42/);
  });

  test('a throwing function gives the client error body', async () => {
    assertError(await main.request('GET', endpointUrl('/boom')), 400, 'FunctionExecutionError', /kaput/);
  });

  test('return_type EJSON keeps BSON types; Accept: application/json overrides it', async () => {
    const ejson = await main.request('GET', endpointUrl('/typed'));
    assert.equal(ejson.status, 200);
    assert.equal(ejson.headers.get('content-type'), 'application/ejson');
    assert.deepEqual(ejson.json, { n: { $numberLong: '5' }, id: { $oid: '65f000000000000000000001' } });
    const json = await main.request('GET', endpointUrl('/typed'), { headers: { Accept: 'application/json' } });
    assert.equal(json.headers.get('content-type'), 'application/json');
    assert.deepEqual(json.json, { n: 5, id: '65f000000000000000000001' });
  });
});

describe('custom endpoints: validation', () => {
  test('SECRET_AS_QUERY_PARAM: the right secret passes, a wrong or missing one gets 401', async () => {
    const ok = await main.request('GET', `${endpointUrl('/secret')}?secret=${HOOK_SECRET}&x=1`);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.query.x, '1');
    assertError(await main.request('GET', `${endpointUrl('/secret')}?secret=wrong`), 401, 'IncomingWebhookAuthFailed');
    assertError(await main.request('GET', endpointUrl('/secret')), 401, 'IncomingWebhookAuthFailed', /secret/);
  });

  test('VERIFY_PAYLOAD: a good signature passes, a bad or missing one gets 401', async () => {
    const body = JSON.stringify({ event: 'push', n: 1 });
    const signature = createHmac('sha256', HOOK_SECRET).update(body).digest('hex');
    const ok = await main.request('POST', endpointUrl('/signed'), { body, headers: { 'Content-Type': 'application/json', 'Endpoint-Signature': `sha256=${signature}` } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.body, body);
    const tampered = JSON.stringify({ event: 'push', n: 2 });
    assertError(await main.request('POST', endpointUrl('/signed'), { body: tampered, headers: { 'Endpoint-Signature': `sha256=${signature}` } }), 401, 'IncomingWebhookAuthFailed', /does not match/);
    assertError(await main.request('POST', endpointUrl('/signed'), { body }), 401, 'IncomingWebhookAuthFailed', /Endpoint-Signature/);
  });

  test('a secret that has no value is a clear server error naming it, never its value', async () => {
    const server = await serve(appFiles(DATA_API_JSON, [endpoint('/needs', 'GET', 'echoSystem', { validation_method: 'SECRET_AS_QUERY_PARAM', secret_name: 'missing_secret' })]));
    assertError(await server.request('GET', `${endpointUrl('/needs')}?secret=x`), 500, 'InternalServerError', /missing_secret.*--secret/);
  });

  test('the secret value never reaches the log', () => {
    assert.ok(!logs.some((line) => line.includes(HOOK_SECRET)), logs.join('\n'));
  });
});

describe('custom endpoints: authentication', () => {
  test('application authentication: a bearer token runs as that user, none gets 401', async () => {
    const ok = await main.request('POST', endpointUrl('/app-auth'), { headers: bearer(bob), json: {} });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.user, bob.id);
    assertError(await main.request('POST', endpointUrl('/app-auth'), { json: {} }), 401, 'MissingAuthReq');
    assertError(await main.request('POST', endpointUrl('/app-auth'), { headers: { Authorization: 'Bearer nonsense' }, json: {} }), 401, 'InvalidSession');
  });

  test('application authentication by email/password and apiKey credential headers', async () => {
    const byPassword = await main.request('POST', endpointUrl('/app-auth'), { headers: { email: ann.email, password: PASSWORD }, json: {} });
    assert.equal(byPassword.json.user, ann.id);
    assertError(await main.request('POST', endpointUrl('/app-auth'), { headers: { email: ann.email, password: 'wrong password' }, json: {} }), 401, 'InvalidPassword');
    const key = await auth.service.createApiKey(bob.refresh, { name: 'endpoint-key' });
    const byKey = await main.request('POST', endpointUrl('/app-auth'), { headers: { apiKey: key.key }, json: {} });
    assert.equal(byKey.json.user, bob.id);
  });

  test('fetch_custom_user_data decides whether context.user.custom_data is loaded', async () => {
    const without = await main.request('POST', endpointUrl('/app-auth'), { headers: bearer(ann), json: {} });
    assert.equal(without.json.plan, null);
    const withData = await main.request('POST', endpointUrl('/app-auth-data'), { headers: bearer(ann), json: {} });
    assert.equal(withData.json.plan, 'gold');
  });

  test('system authentication needs no credentials', async () => {
    const res = await main.request('GET', endpointUrl('/echo'));
    assert.equal(res.json.userType, 'system');
  });

  test('a user id script picks the user the function runs as', async () => {
    const res = await main.request('GET', `${endpointUrl('/whoami')}?as=${bob.id}`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { user: bob.id, email: bob.email });
    assertError(await main.request('GET', `${endpointUrl('/whoami')}?as=000000000000000000000000`), 401, 'AuthError', /does not exist/);
  });

  test('a fixed run_as_user_id runs as that user', async () => {
    const files = appFiles(DATA_API_JSON, [endpoint('/fixed', 'GET', 'scripted')]);
    files['functions/config.json'] = [{ name: 'scripted', private: false, run_as_user_id: ann.id }];
    const server = await serve(files);
    const res = await server.request('GET', endpointUrl('/fixed'));
    assert.deepEqual(res.json, { user: ann.id, email: ann.email });
  });

  test("the function's can_evaluate is checked for the caller", async () => {
    const ok = await main.request('GET', endpointUrl('/guarded'), { headers: bearer(ann) });
    assert.equal(ok.json, 'welcome ann@example.com');
    assertError(await main.request('GET', endpointUrl('/guarded'), { headers: bearer(bob) }), 403, 'FunctionExecutionError', /can_evaluate/);
  });

  test('data the function touches is checked against the calling user\'s rules', async () => {
    assertError(await main.request('POST', endpointUrl('/write-as-user'), { headers: bearer(ann), json: {} }), 400, 'FunctionExecutionError', /not permitted/);
  });
});

describe('Data API', () => {
  test('needs authentication: no credentials get 401', async () => {
    assertError(await main.request('POST', action('find'), { json: items }), 401, 'MissingAuthReq');
  });

  test('insertOne, findOne and find as JSON', async () => {
    const inserted = await main.request('POST', action('insertOne'), { headers: bearer(ann), json: { ...items, document: { owner_id: ann.id, summary: 'milk', n: 1 } } });
    assert.equal(inserted.status, 200, inserted.text);
    assert.equal(inserted.headers.get('content-type'), 'application/json');
    assert.match(inserted.json.insertedId, /^[0-9a-f]{24}$/);

    const found = await main.request('POST', action('findOne'), {
      headers: bearer(ann), json: { ...items, filter: { _id: { $oid: inserted.json.insertedId } }, projection: { summary: 1 } },
    });
    assert.deepEqual(found.json, { document: { _id: inserted.json.insertedId, summary: 'milk' } });

    const many = await main.request('POST', action('insertMany'), {
      headers: bearer(ann), json: { ...items, documents: [{ owner_id: ann.id, summary: 'eggs', n: 2 }, { owner_id: ann.id, summary: 'tea', n: 3 }] },
    });
    assert.equal(many.json.insertedIds.length, 2);
    const list = await main.request('POST', action('find'), {
      headers: bearer(ann), json: { ...items, filter: { n: { $gte: 1 } }, projection: { _id: 0, summary: 1 }, sort: { n: -1 }, limit: 2, skip: 1 },
    });
    assert.deepEqual(list.json, { documents: [{ summary: 'eggs' }, { summary: 'milk' }] });
    const missing = await main.request('POST', action('findOne'), { headers: bearer(ann), json: { ...items, filter: { summary: 'nothing' } } });
    assert.deepEqual(missing.json, { document: null });
  });

  test('updateOne, updateMany with upsert, replaceOne, deleteOne, deleteMany and aggregate', async () => {
    const h = bearer(ann);
    const base = { ...items, database: 'todo' };
    await main.request('POST', action('insertMany'), { headers: h, json: { ...base, documents: [1, 2, 3].map((k) => ({ owner_id: ann.id, kind: 'u', k })) } });
    const one = await main.request('POST', action('updateOne'), { headers: h, json: { ...base, filter: { kind: 'u', k: 1 }, update: { $set: { done: true } } } });
    assert.deepEqual(one.json, { matchedCount: 1, modifiedCount: 1 });
    const manyUpd = await main.request('POST', action('updateMany'), { headers: h, json: { ...base, filter: { kind: 'u' }, update: { $inc: { k: 10 } } } });
    assert.deepEqual(manyUpd.json, { matchedCount: 3, modifiedCount: 3 });
    const upsert = await main.request('POST', action('updateOne'), {
      headers: h, json: { ...base, filter: { kind: 'u', k: 99, owner_id: ann.id }, update: { $set: { made: true } }, upsert: true },
    });
    assert.equal(upsert.json.matchedCount, 0);
    assert.match(upsert.json.upsertedId, /^[0-9a-f]{24}$/);
    const replaced = await main.request('POST', action('replaceOne'), { headers: h, json: { ...base, filter: { kind: 'u', k: 11 }, replacement: { owner_id: ann.id, kind: 'u', k: 50 } } });
    assert.deepEqual(replaced.json, { matchedCount: 1, modifiedCount: 1 });
    const sum = await main.request('POST', action('aggregate'), {
      headers: h, json: { ...base, pipeline: [{ $match: { kind: 'u' } }, { $group: { _id: '$kind', total: { $sum: '$k' }, count: { $sum: 1 } } }] },
    });
    assert.deepEqual(sum.json, { documents: [{ _id: 'u', total: 12 + 13 + 50 + 99, count: 4 }] });
    const delOne = await main.request('POST', action('deleteOne'), { headers: h, json: { ...base, filter: { kind: 'u', k: 50 } } });
    assert.deepEqual(delOne.json, { deletedCount: 1 });
    const delMany = await main.request('POST', action('deleteMany'), { headers: h, json: { ...base, filter: { kind: 'u' } } });
    assert.deepEqual(delMany.json, { deletedCount: 3 });
  });

  test('Accept: application/ejson answers canonical EJSON', async () => {
    const id = new ObjectId();
    await main.request('POST', action('insertOne'), {
      headers: bearer(ann), body: EJSON.stringify({ ...items, document: { _id: id, owner_id: ann.id, big: { $numberLong: '9007199254740993' } } }, { relaxed: false }),
    });
    const res = await main.request('POST', action('findOne'), {
      headers: { ...bearer(ann), Accept: 'application/ejson' }, body: EJSON.stringify({ ...items, filter: { _id: id } }, { relaxed: false }),
    });
    assert.equal(res.headers.get('content-type'), 'application/ejson');
    assert.deepEqual(res.json.document._id, { $oid: id.toHexString() });
    assert.deepEqual(res.json.document.big, { $numberLong: '9007199254740993' });
  });

  test('rules apply to the calling user', async () => {
    await main.request('POST', action('insertOne'), { headers: bearer(ann), json: { ...items, document: { owner_id: ann.id, summary: 'private to ann' } } });
    const bobSees = await main.request('POST', action('find'), { headers: { email: bob.email, password: PASSWORD }, json: { ...items, filter: { summary: 'private to ann' } } });
    assert.deepEqual(bobSees.json, { documents: [] });
    const bobUpdates = await main.request('POST', action('updateMany'), { headers: bearer(bob), json: { ...items, filter: { summary: 'private to ann' }, update: { $set: { summary: 'hacked' } } } });
    assert.deepEqual(bobUpdates.json, { matchedCount: 0, modifiedCount: 0 });
    assertError(await main.request('POST', action('insertOne'), { headers: bearer(bob), json: { ...items, document: { owner_id: ann.id, summary: 'forged' } } }), 403, 'PermissionDenied', /write filter/);
    const annSees = await main.request('POST', action('find'), { headers: bearer(ann), json: { ...items, filter: { summary: 'private to ann' }, projection: { _id: 0, summary: 1 } } });
    assert.deepEqual(annSees.json, { documents: [{ summary: 'private to ann' }] });
  });

  test('beta is served beside v1; other versions, unknown actions and bad bodies are refused', async () => {
    const beta = await main.request('POST', action('find', 'beta'), { headers: bearer(ann), json: { ...items, filter: { nothing: true } } });
    assert.deepEqual(beta.json, { documents: [] });
    assertError(await main.request('POST', action('find', 'v9'), { headers: bearer(ann), json: items }), 404, 'NotFound', /v9/);
    assertError(await main.request('POST', action('dropDatabase'), { headers: bearer(ann), json: items }), 404, 'ServiceCommandNotFound');
    assertError(await main.request('POST', action('find'), { headers: bearer(ann), json: { dataSource: 'mongodb-atlas', database: 'todo' } }), 400, 'InvalidParameter', /collection/);
    assertError(await main.request('POST', action('deleteMany'), { headers: bearer(ann), json: items }), 400, 'InvalidParameter', /filter/);
    assertError(await main.request('POST', action('find'), { headers: bearer(ann), json: { ...items, dataSource: 'elsewhere' } }), 404, 'ServiceNotFound');
    assertError(await main.request('POST', action('find'), { headers: { ...bearer(ann), 'Content-Type': 'application/json' }, body: '{not json' }), 400, 'BadRequest');
    assert.equal((await main.request('GET', action('find'))).status, 405);
  });

  test('run_as_system with return_type EJSON needs no credentials, bypasses rules and honours Accept: application/json', async () => {
    const server = await serve(appFiles({ ...DATA_API_JSON, return_type: 'EJSON', run_as_system: true }, []));
    await server.request('POST', action('insertOne'), { json: { ...items, document: { owner_id: 'nobody', summary: 'system note', n: 7 } } });
    const ejson = await server.request('POST', action('findOne'), { json: { ...items, filter: { summary: 'system note' } } });
    assert.equal(ejson.headers.get('content-type'), 'application/ejson');
    assert.deepEqual(ejson.json.document.n, { $numberInt: '7' });
    const json = await server.request('POST', action('findOne'), { headers: { Accept: 'application/json' }, json: { ...items, filter: { summary: 'system note' }, projection: { _id: 0 } } });
    assert.deepEqual(json.json, { document: { owner_id: 'nobody', summary: 'system note', n: 7 } });
  });

  test('the Data API keeps a whole-number double a double: canonical EJSON in and out, plain JSON numbers out', async () => {
    const server = await serve(appFiles({ ...DATA_API_JSON, return_type: 'EJSON', run_as_system: true }, []));
    const inserted = await server.request('POST', action('insertOne'), {
      json: { ...items, document: { owner_id: 'nobody', summary: 'typed', d: { $numberDouble: '4.0' }, i: { $numberInt: '4' }, f: 4.5 } },
    });
    assert.equal(inserted.status, 200, inserted.text);
    await server.request('POST', action('updateOne'), { json: { ...items, filter: { summary: 'typed' }, update: { $inc: { d: 1, i: 1 } } } });
    const ejson = await server.request('POST', action('findOne'), { json: { ...items, filter: { summary: 'typed', d: 5 }, projection: { _id: 0 } } });
    assert.deepEqual(ejson.json.document, { owner_id: 'nobody', summary: 'typed', d: { $numberDouble: '5.0' }, i: { $numberInt: '5' }, f: { $numberDouble: '4.5' } });
    const json = await server.request('POST', action('findOne'), { headers: { Accept: 'application/json' }, json: { ...items, filter: { summary: 'typed' }, projection: { _id: 0 } } });
    assert.deepEqual(json.json, { document: { owner_id: 'nobody', summary: 'typed', d: 5, i: 5, f: 4.5 } });
  });

  test('Data API validation by secret query parameter', async () => {
    const server = await serve(appFiles({ ...DATA_API_JSON, run_as_system: true, validation_method: 'SECRET_AS_QUERY_PARAM', secret_name: 'hook_secret' }, []));
    assertError(await server.request('POST', action('find'), { json: items }), 401, 'IncomingWebhookAuthFailed');
    const ok = await server.request('POST', `${action('find')}?secret=${HOOK_SECRET}`, { json: { ...items, filter: { summary: 'system note' } } });
    assert.equal(ok.status, 200, ok.text);
  });

  test('log_function_arguments logs each call with its arguments; otherwise nothing is logged', async () => {
    const quiet = logs.length;
    await main.request('POST', action('find'), { headers: bearer(ann), json: { ...items, filter: { marker: 'quiet-call' } } });
    assert.ok(!logs.slice(quiet).some((line) => line.includes('quiet-call')));
    const server = await serve(appFiles({ ...DATA_API_JSON, run_as_system: true, log_function_arguments: true }, []));
    await server.request('POST', action('find'), { json: { ...items, filter: { marker: 'logged-call' } } });
    assert.ok(logs.some((line) => line.startsWith('info [data api] find') && line.includes('logged-call')), logs.join('\n'));
  });

  test('a disabled or absent Data API answers 404 and says how to enable it', async () => {
    const disabled = await serve(appFiles({ ...DATA_API_JSON, disabled: true }, []));
    assertError(await disabled.request('POST', action('find'), { headers: bearer(ann), json: items }), 404, 'NotFound', /disabled.*data_api_config\.json/);
    const absent = await serve(appFiles(undefined, []));
    assertError(await absent.request('POST', action('find'), { headers: bearer(ann), json: items }), 404, 'NotFound', /not enabled/);
  });
});
