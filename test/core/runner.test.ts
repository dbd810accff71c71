// The query runner's modules (identities, GraphQL over HTTP, variables) in plain Node against a real runtime
// serving a copy of the example app on 127.0.0.1: real logins and tokens, the app's own rules, token refresh
// after expiry, cancellation and time limits.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadApp } from '../../core/load';
import { nodeFileSystem } from '../../core/fs';
import { generateSchema } from '../../core/graphql';
import { SessionPool, RunnerError, mintCustomJwt, describeIdentity, type Identity } from '../../core/runner/identities';
import { curlFor, errorsOf, runGraphql } from '../../core/runner/run';
import { browseDocuments, callFunction, collectionCounts, createUser, deleteUser, listUsers } from '../../core/runner/local';
import { parseVariableInput, variablesFileFor, variablesFromFile } from '../../core/runner/variables';
import { missingFragments, operationText } from '../../core/runner/operation';
import { sampleOperation } from '../../core/runner/samples';
import { adminLocalGet, fetchSyncSessions } from '../../core/sync/sessionsClient';
import { fetchSimulation } from '../../core/sync/simulatorClient';
import { findGraphqlDocuments } from '../../core/graphql/embedded';
import { parse, validate, type GraphQLSchema } from 'graphql';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { REPO_ROOT } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const signingKey = 'local-example-secret-jwt-signing-key-not-for-production';

function copyExample(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-runner-'));
  fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), dir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  // A slow function behind a custom resolver, for cancellation and time limits.
  fs.writeFileSync(path.join(dir, 'functions/slowEcho.js'), 'exports = async (input) => { await new Promise((r) => setTimeout(r, 3000)); return { status: "done" }; };\n');
  const config = JSON.parse(fs.readFileSync(path.join(dir, 'functions/config.json'), 'utf8')) as unknown[];
  config.push({ name: 'slowEcho', private: false });
  fs.writeFileSync(path.join(dir, 'functions/config.json'), JSON.stringify(config, null, 2));
  fs.writeFileSync(path.join(dir, 'graphql/custom_resolvers/query_slowSummary.json'), JSON.stringify({
    on_type: 'Query', field_name: 'slowSummary', function_name: 'slowEcho', input_type_format: '', payload_type_format: '',
  }));
  return dir;
}

const tasksQuery = 'query Tasks { tasks { _id name } }';

describe('query runner against the runtime', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let pool: SessionPool;
  let admin: SessionPool;
  let nowMs = Date.now();
  const ada: Identity = { kind: 'email-password', email: 'ada@example.com', password: 'correct horse' };
  const bob: Identity = { kind: 'email-password', email: 'bob@example.com', password: 'battery staple' };

  before(async () => {
    appDir = copyExample();
    runtime = await startRuntime({ appDir, port: 0, log: quiet, functionTimeoutMs: 10_000, clock: { now: () => nowMs } });
    pool = new SessionPool({ baseUrl: runtime.url, appId: runtime.appId });
    const session = await runtime.mintAdminSession();
    admin = new SessionPool({
      baseUrl: runtime.url, appId: runtime.appId, admin: { accessToken: session.access_token, refreshToken: session.refresh_token },
      adminAppPath: `${new URL(runtime.adminUrl).pathname}/groups/${runtime.groupId}/apps/${runtime.apps[0]!.id}`,
    });
    await pool.registerEmailPasswordUser(ada.email, ada.password);
    await pool.registerEmailPasswordUser(bob.email, bob.password);
    const adaId = await pool.userIdOf(ada);
    const insert = await runGraphql(pool, ada, {
      query: 'mutation Add($t: TaskInsertInput!) { insertOneTask(data: $t) { _id } }', operationName: 'Add',
      variables: { t: { _id: '65a000000000000000000001', _partition: adaId, name: 'Write the docs', status: 'open', isComplete: false } },
    });
    assert.equal(insert.errors.length, 0, insert.text);
  });
  after(async () => { await runtime.close(); fs.rmSync(appDir, { recursive: true, force: true }); });

  test('an email/password user sees their own documents, with status, time and identity', async () => {
    const result = await runGraphql(pool, ada, { query: tasksQuery, operationName: 'Tasks' });
    assert.equal(result.status, 200);
    assert.deepEqual(JSON.parse(result.text), { data: { tasks: [{ _id: '65a000000000000000000001', name: 'Write the docs' }] } });
    assert.equal(result.identity, 'ada@example.com');
    assert.ok(result.timeMs >= 0);
  });

  test('another user, whose rules hide the documents, gets an empty list', async () => {
    const result = await runGraphql(pool, bob, { query: tasksQuery });
    assert.deepEqual(JSON.parse(result.text), { data: { tasks: [] } });
  });

  test('credential headers authenticate without a session', async () => {
    const result = await runGraphql(pool, { kind: 'credential-headers', headers: { email: ada.email, password: ada.password } }, { query: tasksQuery });
    assert.equal(JSON.parse(result.text).data.tasks.length, 1);
    const wrong = await runGraphql(pool, { kind: 'credential-headers', headers: { email: ada.email, password: 'nope' } }, { query: tasksQuery });
    assert.equal(wrong.status, 401);
  });

  test('an API key of a user logs in as that user', async () => {
    const refresh = await fetch(`${runtime.url}/api/client/v2.0/app/${runtime.appId}/auth/providers/local-userpass/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: ada.email, password: ada.password }),
    }).then((r) => r.json()) as { refresh_token: string };
    const key = await fetch(`${runtime.url}/api/client/v2.0/auth/api_keys`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${refresh.refresh_token}` }, body: JSON.stringify({ name: 'runner' }),
    }).then((r) => r.json()) as { key: string };
    const viaKey = await runGraphql(pool, { kind: 'api-key', key: key.key, name: 'runner' }, { query: tasksQuery });
    assert.equal(JSON.parse(viaKey.text).data.tasks.length, 1);
    const viaHeader = await runGraphql(pool, { kind: 'credential-headers', headers: { apiKey: key.key } }, { query: tasksQuery });
    assert.equal(JSON.parse(viaHeader.text).data.tasks.length, 1);
  });

  test('a custom JWT minted with the provider key logs in (and a wrong key is refused with the reason)', async () => {
    const token = await mintCustomJwt({ key: signingKey, sub: 'ext-42', aud: 'todo-tracker-abcde', claims: { name: 'Grace' } });
    const result = await runGraphql(pool, { kind: 'custom-jwt', token, sub: 'ext-42' }, { query: tasksQuery });
    assert.deepEqual(JSON.parse(result.text), { data: { tasks: [] } });
    const bad = await mintCustomJwt({ key: 'x'.repeat(40), sub: 'ext-43', aud: 'todo-tracker-abcde', claims: { name: 'Eve' } });
    await assert.rejects(runGraphql(pool, { kind: 'custom-jwt', token: bad }, { query: tasksQuery }), (e: unknown) => {
      assert.ok(e instanceof RunnerError);
      assert.match(e.message, /^Logging in with the custom-token provider failed: .+ \(HTTP 401/);
      return true;
    });
  });

  test('anonymous, when the provider is disabled, fails naming the provider', async () => {
    await assert.rejects(runGraphql(pool, { kind: 'anonymous' }, { query: tasksQuery }), /anon-user.*(unsupported|not)/);
  });

  test('an expired access token is refreshed and the request retried', async () => {
    const before = await runGraphql(pool, ada, { query: tasksQuery });
    assert.equal(before.status, 200);
    nowMs += 31 * 60 * 1000;
    const after = await runGraphql(pool, ada, { query: tasksQuery });
    assert.equal(after.status, 200, after.text);
    assert.equal(JSON.parse(after.text).data.tasks.length, 1);
  });

  test('GraphQL errors keep their locations', async () => {
    const result = await runGraphql(pool, ada, { query: 'query Broken {\n  tasks { nme }\n}' });
    assert.equal(result.errors.length, 1);
    assert.match(result.errors[0]!.message, /nme/);
    assert.deepEqual(result.errors[0]!.locations, [{ line: 2, column: 11 }]);
    assert.equal(result.hasData, false);
  });

  test('cancelling aborts a slow function-backed query at once', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 200);
    await assert.rejects(runGraphql(pool, ada, { query: 'query { slowSummary { status } }' }, { signal: controller.signal }), /cancelled/);
    assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
  });

  test('the time limit aborts with a message naming the setting', async () => {
    await assert.rejects(runGraphql(pool, ada, { query: 'query { slowSummary { status } }' }, { timeoutMs: 300 }), /took longer than the time limit of 0\.3 s \(setting appServicesLocal\.runner\.timeoutSeconds\)/);
  });

  test('a stopped runtime gives a message that says so', async () => {
    const nowhere = new SessionPool({ baseUrl: 'http://127.0.0.1:1', appId: 'x' });
    await assert.rejects(runGraphql(nowhere, { kind: 'credential-headers', headers: { apiKey: 'k' } }, { query: '{ a }' }), /Is the runtime running\?/);
  });

  test('admin-only identities say what they need', async () => {
    await assert.rejects(runGraphql(pool, { kind: 'system' }, { query: tasksQuery }), /admin session.*Start Runtime/);
  });

  test('with the admin session: the users, an existing user without a password, and system past the rules', async () => {
    const users = await listUsers(admin);
    const adaUser = users.find((u) => u.email === 'ada@example.com');
    assert.ok(adaUser, JSON.stringify(users));
    assert.deepEqual(adaUser.providers, ['local-userpass']);
    const asAda = await runGraphql(admin, { kind: 'existing-user', userId: adaUser.id, label: 'ada' }, { query: tasksQuery });
    assert.equal(JSON.parse(asAda.text).data.tasks.length, 1);
    assert.equal(asAda.identity, 'ada');
    const bobUser = users.find((u) => u.email === 'bob@example.com')!;
    const asBob = await runGraphql(admin, { kind: 'existing-user', userId: bobUser.id }, { query: tasksQuery });
    assert.deepEqual(JSON.parse(asBob.text).data.tasks, []);
    const asSystem = await runGraphql(admin, { kind: 'system' }, { query: tasksQuery });
    assert.equal(JSON.parse(asSystem.text).data.tasks.length, 1, asSystem.text);
    assert.equal(asSystem.identity, 'system (rules bypassed)');
  });

  test('the local routes refuse a user token and no token', async () => {
    const userHeaders = await pool.headersFor(ada);
    for (const headers of [userHeaders, {}]) {
      const response = await fetch(`${runtime.url}/api/admin/v3.0/local/app/${runtime.appId}/collections`, { headers });
      assert.equal(response.status, 401, await response.text());
    }
    const hijack = await fetch(`${runtime.url}/api/admin/v3.0/local/app/${runtime.appId}/graphql`, {
      method: 'POST', headers: { ...userHeaders, 'content-type': 'application/json' }, body: JSON.stringify({ query: tasksQuery }),
    });
    assert.equal(hijack.status, 401);
  });

  test('the runtime clients send through the fetch their pool was given, on the paths of core/apiRoutes.ts', async () => {
    const sent: string[] = [];
    const recording: typeof fetch = (input, init) => {
      sent.push(new URL(String(input)).pathname);
      return fetch(input, init);
    };
    const grant = await runtime.mintAdminSession();
    const injected = new SessionPool({ baseUrl: runtime.url, appId: runtime.appId, admin: { accessToken: grant.access_token, refreshToken: grant.refresh_token } }, recording);
    const counts = await collectionCounts(injected);
    assert.ok(counts.some((c) => c.collection === 'Task'));
    assert.deepEqual(await callFunction(injected, { kind: 'system' }, { name: 'sum', arguments: [1, 1] }), { $numberInt: '2' });
    assert.ok(Array.isArray(await fetchSyncSessions(adminLocalGet(injected))));
    const adaId = await pool.userIdOf(ada);
    const view = await fetchSimulation(injected, adaId, JSON.stringify(adaId));
    assert.equal(view.partition.text, JSON.stringify(adaId));
    const app = `/api/admin/v3.0/local/app/${encodeURIComponent(runtime.appId)}`;
    assert.deepEqual(sent, [`${app}/collections`, `${app}/functions/call`, `${app}/sync/sessions`, `${app}/sync/simulate`]);
  });

  test('document counts, documents as a user and as system, functions, user create and delete', async () => {
    const counts = await collectionCounts(admin);
    assert.deepEqual(counts.find((c) => c.collection === 'Task'), { dataSource: 'mongodb-atlas', database: 'tracker', collection: 'Task', count: 1 });
    assert.ok(counts.every((c) => typeof c.count === 'number'));
    const where = { dataSource: 'mongodb-atlas', database: 'tracker', collection: 'Task' };
    assert.deepEqual(await browseDocuments(admin, bob, where), []);
    assert.equal((await browseDocuments(admin, { kind: 'system' }, where) as unknown[]).length, 1);
    assert.deepEqual(await callFunction(admin, ada, { name: 'sum', arguments: [1, 2] }), { $numberInt: '3' });
    assert.deepEqual(await callFunction(admin, { kind: 'system' }, { name: 'sum', arguments: [2, 2] }), { $numberInt: '4' });
    await createUser(admin, 'carol@example.com', 'carol-secret');
    const carol = (await listUsers(admin)).find((u) => u.email === 'carol@example.com');
    assert.ok(carol);
    await assert.rejects(createUser(admin, 'carol@example.com', 'carol-secret'), /name already in use.*HTTP 409/);
    await deleteUser(admin, carol.id);
    assert.equal((await listUsers(admin)).some((u) => u.email === 'carol@example.com'), false);
    await assert.rejects(deleteUser(admin, carol.id), /user not found.*HTTP 404/);
  });

  test('curl repeats the request', async () => {
    const curl = await curlFor(pool, ada, { query: tasksQuery, operationName: 'Tasks' });
    assert.match(curl, /^curl -sS -X POST 'http:\/\/.+\/api\/client\/v2\.0\/app\/todo-tracker-abcde\/graphql'/);
    assert.match(curl, /-H 'Authorization: Bearer ey/);
    assert.match(curl, /"operationName":"Tasks"/);
  });

  test('identities are described without secrets', () => {
    assert.equal(describeIdentity({ kind: 'credential-headers', headers: { email: 'a@b.c', password: 'secret' } }), 'credential headers (email, password)');
    assert.equal(describeIdentity({ kind: 'system' }), 'system (rules bypassed)');
  });
});

describe('variables', () => {
  let schema: Awaited<ReturnType<typeof generateSchema>>['schema'];
  before(async () => {
    schema = generateSchema(await loadApp(nodeFileSystem, path.join(REPO_ROOT, 'examples/todo-tracker'))).schema;
  });
  const status = { name: 'status', type: 'String!', required: true };

  test('JSON values are checked against the declared type with graphql-js', () => {
    assert.deepEqual(parseVariableInput({ name: 'n', type: 'Int', required: false }, '5', schema), { ok: true, value: 5 });
    const wrong = parseVariableInput({ name: 'n', type: 'Int', required: false }, '"five"', schema);
    assert.equal(wrong.ok, false);
    assert.match((wrong as { message: string }).message, /^\$n \(Int\): Int cannot represent non-integer value: "five"/);
    const input = parseVariableInput({ name: 't', type: 'TaskInsertInput!', required: true }, '{"name": "x", "nope": 1}', schema);
    assert.equal(input.ok, false);
    assert.match((input as { message: string }).message, /nope/);
  });

  test('a bare word is a string for string-like scalars, and required variables must be given', () => {
    assert.deepEqual(parseVariableInput(status, 'open', schema), { ok: true, value: 'open' });
    assert.deepEqual(parseVariableInput({ name: 'id', type: 'ObjectId', required: false }, '65a000000000000000000001', schema), { ok: true, value: '65a000000000000000000001' });
    assert.equal(parseVariableInput({ name: 'id', type: 'ObjectId', required: false }, 'not-an-id', schema).ok, false);
    assert.deepEqual(parseVariableInput(status, '', schema), { ok: false, message: '$status is required (String!)' });
    assert.deepEqual(parseVariableInput({ name: 'n', type: 'Int', required: false }, '', schema), { ok: true, value: undefined });
    assert.equal(parseVariableInput({ name: 'n', type: 'Int', required: false }, 'five', schema).ok, false);
  });

  test('a sample operation for a custom resolver names its arguments as variables and selects its leaves', () => {
    assert.equal(sampleOperation(schema, 'Query', 'taskSummary'), 'query TaskSummary($input: TaskSummaryInput) {\n  taskSummary(input: $input) { owner status count }\n}\n');
    assert.match(sampleOperation(schema, 'Mutation', 'renameTask')!, /^mutation RenameTask\(\$input: RenameTaskInput\) \{\n {2}renameTask\(input: \$input\) \{ _id /);
    assert.equal(sampleOperation(schema, 'Query', 'noSuchField'), undefined);
  });

  test('a variables file beside the query, keyed by operation name', () => {
    assert.equal(variablesFileFor('/w/queries.graphql'), '/w/queries.variables.json');
    assert.equal(variablesFileFor('/w.d/api'), '/w.d/api.variables.json');
    const text = JSON.stringify({ ByStatus: { status: 'open' }, Bad: { status: 5 } });
    assert.deepEqual(variablesFromFile(text, 'ByStatus', [status], schema), { ok: true, variables: { status: 'open' } });
    assert.equal(variablesFromFile(text, 'Other', [status], schema), undefined);
    assert.equal(variablesFromFile(text, 'Bad', [status], schema)?.ok, false);
    assert.equal(variablesFromFile('{', 'ByStatus', [status], schema)?.ok, false);
  });

  test('errors of an answer are read without trusting its shape', () => {
    assert.deepEqual(errorsOf('not json'), { errors: [], hasData: false });
    assert.deepEqual(errorsOf('{"error":"bad","error_code":"X"}'), { errors: [{ message: 'bad' }], hasData: false, value: { error: 'bad', error_code: 'X' } });
    const answer = errorsOf('{"data":{"a":1},"errors":[{"message":"m","locations":[{"line":1,"column":2},"x"]}]}');
    assert.deepEqual([answer.errors, answer.hasData], [[{ message: 'm', locations: [{ line: 1, column: 2 }] }], true]);
  });
});

describe('the text sent for one operation', () => {
  let generateSchemaForExample: GraphQLSchema | undefined;
  before(async () => {
    generateSchemaForExample = generateSchema(await loadApp(nodeFileSystem, path.join(REPO_ROOT, 'examples/todo-tracker'))).schema;
  });
  const text = 'query Mistake {\n  tasks { nme }\n}\n\nquery Good {\n  tasks { ...Parts }\n}\n\nfragment Parts on Task { _id ...More }\nfragment More on Task { name }\nfragment Unused on Task { status }\n';

  test('keeps the operation and the fragments it uses, blanks the rest, keeps lines and length', () => {
    const [document] = findGraphqlDocuments('queries.graphql', text);
    const good = document!.operations.find((o) => o.name === 'Good')!;
    const sent = operationText(document!, good);
    assert.equal(sent.length, text.length);
    assert.equal(sent.split('\n').length, text.split('\n').length);
    assert.doesNotMatch(sent, /Mistake|nme|Unused/);
    assert.match(sent, /query Good \{\n {2}tasks \{ \.\.\.Parts \}\n\}/);
    assert.match(sent, /fragment Parts on Task \{ _id \.\.\.More \}\nfragment More on Task \{ name \}/);
    assert.deepEqual(validate(generateSchemaForExample!, parse(sent)), []);
  });

  test('fragments defined in other files: named as missing (through the document\'s own fragments too), then sent after the document', () => {
    const local = 'query Board {\n  tasks { ...Card }\n}\nfragment Card on Task { _id ...Shared }\nfragment Unused on Task { ...AlsoElsewhere }\n';
    const [document] = findGraphqlDocuments('board.graphql', local);
    const board = document!.operations[0];
    assert.deepEqual(missingFragments(document!, board), ['Shared']);
    const sent = operationText(document!, board, ['fragment Shared on Task { name ...Deeper }', 'fragment Deeper on Task { status }']);
    assert.equal(sent.split('\n').slice(0, 4).join('\n'), local.split('\n').slice(0, 4).join('\n'));
    assert.match(sent, /\nfragment Shared on Task \{ name \.\.\.Deeper \}\nfragment Deeper on Task \{ status \}$/);
    assert.doesNotMatch(sent, /Unused|AlsoElsewhere/);
    assert.deepEqual(validate(generateSchemaForExample!, parse(sent)), []);
  });
});
