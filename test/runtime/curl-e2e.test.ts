// examples/README.md, run as written: its curl requests (read from the README's `sh` blocks and sent with
// fetch, curl's defaults included) against the full runtime serving a copy of the example app, checking
// the answers the README promises. A README edit that breaks a request fails here.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { REPO_ROOT } from '../helpers/disk';
import { postJson, startExampleRuntime, type ExampleRuntime } from './fixtures/e2e-runtime';
import { ReadmeShell, readShellCommands, type CurlResult, type ShellCommand } from './fixtures/e2e-readme-shell';

const README = fs.readFileSync(path.join(REPO_ROOT, 'examples/README.md'), 'utf8');
/** Commands of the "Running it" block that build and start the runtime; the test starts it in-process instead. */
const SETUP_COMMANDS = ['npm run build', 'node dist/cli.js check examples/todo-tracker', 'npm start'];

describe('examples/README.md requests against the runtime serving examples/todo-tracker', () => {
  const commands = readShellCommands(README);
  const ran = new Set<ShellCommand>();
  const shell = new ReadmeShell(REPO_ROOT);
  let example: ExampleRuntime;

  /** Runs the one README command under `section` whose text contains `snippet`. */
  const step = async (section: string, snippet: string): Promise<CurlResult> => {
    const found = commands.filter((c) => c.section === section && c.source.includes(snippet));
    assert.equal(found.length, 1, `exactly one README command under "${section}" contains ${JSON.stringify(snippet)}`);
    ran.add(found[0]!);
    const result = await shell.run(found[0]!);
    return result ?? { status: 0, contentType: null, text: '', json: undefined };
  };
  const ok = (result: CurlResult) => assert.ok(result.status >= 200 && result.status < 300, `${result.status} ${result.text}`);
  const variable = (name: string) => shell.variables.get(name)!;

  before(async () => {
    example = await startExampleRuntime();
    shell.placeholders.set('<port>', String(example.runtime.port));
  });
  after(async () => { await example?.close(); });

  test('the README\'s base URL and app id reach the runtime', async () => {
    await step('Running it', 'BASE=');
    await step('Running it', 'APP=');
    await step('Running it', 'API=');
    assert.equal(variable('APP'), example.runtime.appId);
    const location = await fetch(`${variable('API')}/app/${variable('APP')}/location`);
    assert.equal(location.status, 200);
  });

  test('register, then log in at once (autoConfirm), then read the profile', async () => {
    ok(await step('Register and log in (email/password)', '/local-userpass/register'));
    const login = await step('Register and log in (email/password)', '/local-userpass/login');
    assert.equal(login.status, 200, login.text);
    assert.deepEqual(Object.keys(login.json).sort(), ['access_token', 'device_id', 'refresh_token', 'user_id'], 'the README shows these four fields');
    assert.match(login.json.user_id, /^[0-9a-f]{24}$/);
    shell.placeholders.set('<access_token>', login.json.access_token);
    shell.placeholders.set('<refresh_token>', login.json.refresh_token);
    shell.placeholders.set('<user_id>', login.json.user_id);
    await step('Register and log in (email/password)', 'ACCESS=');
    await step('Register and log in (email/password)', 'REFRESH=');
    await step('Register and log in (email/password)', 'ME=');

    const profile = await step('Register and log in (email/password)', '/auth/profile');
    assert.equal(profile.status, 200, profile.text);
    assert.equal(profile.json.user_id, variable('ME'));
    assert.equal(profile.json.data.email, 'ada@example.com');
    assert.deepEqual(profile.json.identities.map((i: { provider_type: string }) => i.provider_type), ['local-userpass']);
  });

  test('the first login ran onUserCreated: the User document exists as described', async () => {
    const me = variable('ME');
    const res = await postJson(`${variable('API')}/app/${variable('APP')}/graphql`, { query: '{ user(query: {userId: "' + me + '"}) { userId projectIds isAdmin } }' },
      { Authorization: `Bearer ${variable('ACCESS')}` });
    assert.deepEqual(res.body, { data: { user: { userId: me, projectIds: [], isAdmin: false } } });
  });

  test('GraphQL with the bearer token: insert a task, then read it with relationships and the computed field', async () => {
    await step('GraphQL with a bearer token', 'gql()');
    await step('GraphQL with a bearer token', 'TASK=');
    assert.match(variable('TASK'), /^[0-9a-f]{24}$/);

    const added = await step('GraphQL with a bearer token', 'AddTask');
    assert.equal(added.status, 200);
    assert.equal(added.contentType, 'application/json');
    assert.deepEqual(added.json, { data: { insertOneTask: { _id: variable('TASK'), name: 'Write spec', status: 'open' } } });

    const open = await step('GraphQL with a bearer token', 'query Open');
    assert.equal(open.json.errors, undefined, open.text);
    assert.equal(open.json.data.tasks.length, 1);
    const [task] = open.json.data.tasks;
    assert.equal(task._id, variable('TASK'));
    assert.equal(task.name, 'Write spec');
    assert.equal(task.status, 'open');
    assert.equal(Date.parse(task.dueDate), Date.parse('2024-05-01T00:00:00Z'));
    assert.deepEqual(task.tags, ['docs']);
    assert.deepEqual(task.checklist, [{ text: 'outline', done: true }, { text: 'examples', done: false }]);
    assert.equal(task.assignee, null);
    assert.equal(task.project, null);
    assert.deepEqual(task.history.map((h: { note: string }) => h.note), ['created "Write spec"'], 'Task.history starts with a created entry');
    assert.ok(!Number.isNaN(Date.parse(task.history[0].at)));
  });

  test('the three kinds of custom resolver answer as the README shows', async () => {
    const summary = await step('GraphQL with a bearer token', 'taskSummary');
    assert.deepEqual(summary.json, { data: { taskSummary: { owner: variable('ME'), status: 'open', count: 1 } } });

    const renamed = await step('GraphQL with a bearer token', 'renameTask');
    assert.equal(renamed.json.errors, undefined, renamed.text);
    assert.equal(renamed.json.data.renameTask._id, variable('TASK'));
    assert.equal(renamed.json.data.renameTask.name, 'Write the spec');
    assert.equal(renamed.json.data.renameTask.history[0].note, 'created "Write the spec"');

    const archived = await step('GraphQL with a bearer token', 'archiveCompletedTasks');
    assert.deepEqual(archived.json, { data: { archiveCompletedTasks: { status: 'complete' } } });
  });

  test('"changes recorded by the logTaskChange trigger follow" in Task.history', async () => {
    // Triggers fire after the write is acknowledged, so the entry may arrive a moment later.
    const deadline = Date.now() + 3000;
    let notes: string[] = [];
    while (Date.now() < deadline) {
      const res = await postJson(`${variable('API')}/app/${variable('APP')}/graphql`, { query: `{ task(query: {_id: "${variable('TASK')}"}) { history { note } } }` },
        { Authorization: `Bearer ${variable('ACCESS')}` });
      notes = res.body.data.task.history.map((h: { note: string }) => h.note);
      if (notes.length > 1) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.deepEqual(notes, ['created "Write the spec"', 'changed name']);
  });

  test('credential headers instead of a token', async () => {
    const res = await step('GraphQL with a bearer token', "-H 'email: ada@example.com'");
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { data: { tasks: [{ name: 'Write the spec' }] } });
  });

  test('calling sum answers 3 as EJSON; a private function fails', async () => {
    const sum = await step('Calling a function', '"name": "sum"');
    assert.equal(sum.status, 200);
    assert.deepEqual(sum.json, { $numberInt: '3' });
    const hidden = await postJson(`${variable('API')}/app/${variable('APP')}/functions/call`, { name: 'onUserCreated', arguments: [] },
      { Authorization: `Bearer ${variable('ACCESS')}` });
    assert.ok(hidden.status >= 400 && hidden.status < 500, JSON.stringify(hidden.body));
    assert.equal(hidden.body.error_code, 'FunctionNotFound');
  });

  test('API keys: create one with the refresh token, then log in with it as the same user', async () => {
    const created = await step('API keys', '/auth/api_keys');
    ok(created);
    assert.deepEqual(Object.keys(created.json).sort(), ['_id', 'disabled', 'key', 'name']);
    assert.equal(created.json.name, 'ci');
    assert.equal(created.json.disabled, false);
    shell.placeholders.set('<secret>', created.json.key);
    const login = await step('API keys', '/api-key/login');
    assert.equal(login.status, 200, login.text);
    assert.equal(login.json.user_id, variable('ME'));
  });

  test('custom JWT: the README\'s token script signs a token the provider accepts; name and email land in data', async () => {
    await step('Custom JWT', 'JWT=');
    assert.equal(variable('JWT').split('.').length, 3);
    const login = await step('Custom JWT', '/custom-token/login');
    assert.equal(login.status, 200, login.text);
    const profile = await fetch(`${variable('API')}/auth/profile`, { headers: { Authorization: `Bearer ${login.json.access_token}` } });
    const body = await profile.json() as { data: Record<string, unknown>; identities: Array<{ id: string; provider_type: string }> };
    assert.equal(body.data.name, 'Jean');
    assert.equal(body.data.email, 'jean@example.com');
    assert.deepEqual(body.identities.map((i) => [i.provider_type, i.id]), [['custom-token', 'jean-24601']]);

    const viaHeader = await postJson(`${variable('API')}/app/${variable('APP')}/graphql`, { query: '{ tasks { name } }' }, { jwtTokenString: variable('JWT') });
    assert.equal(viaHeader.status, 200, JSON.stringify(viaHeader.body));
    assert.deepEqual(viaHeader.body, { data: { tasks: [] } }, 'GraphQL accepts the token in jwtTokenString; Jean sees none of Ada\'s tasks');
  });

  test('the /taskStats HTTPS endpoint answers with the key and 401 without it', async () => {
    const stats = await step('Endpoint', '/endpoint/taskStats');
    assert.equal(stats.status, 200, stats.text);
    assert.equal(stats.json.app, 'Todo Tracker');
    assert.equal(stats.json.byStatus.open, 1);
    const refused = await fetch(`${variable('BASE')}/app/${variable('APP')}/endpoint/taskStats?key=wrong`);
    assert.equal(refused.status, 401);
  });

  test('every request of the README was run', () => {
    const skipped = commands.filter((c) => !ran.has(c) && !SETUP_COMMANDS.some((s) => c.source.startsWith(s)));
    assert.deepEqual(skipped.map((c) => `${c.section}: ${c.source}`), []);
  });
});
