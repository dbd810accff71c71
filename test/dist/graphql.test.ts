// The shipped runtime (`node dist/cli.js serve`) on a copy of examples/todo-tracker, over real HTTP: the
// graphql-http MUST audits, introspection with graphql-js equal to `asl schema`, `__typename` at every
// level. These are what broke when the bundle carried two copies of graphql-js.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { buildClientSchema, buildSchema, getIntrospectionQuery, printSchema, type IntrospectionQuery } from 'graphql';
import { serverAudits, type AuditResult } from 'graphql-http';
import { appliesToPostJson, DELIBERATE_DIFFERENCES, POST_JSON_MUST_AUDITS } from '../runtime/fixtures/graphql-http-audits';
import { CLI, graphql, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

describe('dist/cli.js serve: GraphQL over real HTTP', () => {
  let served: ServedDist;
  let token = '';
  let userId = '';
  const endpoint = () => `${served.app}/graphql`;
  const ask = (query: string, variables?: Record<string, unknown>) => graphql(endpoint(), token, query, variables);

  before(async () => {
    served = await serveDist();
    const login = await registerAndLogIn(served.app, 'dist@example.com', 'dist-password-1');
    token = login.access_token;
    userId = login.user_id;
  });
  after(async () => { assert.equal(await served?.close(), 0, 'the runtime stops cleanly on SIGTERM'); });

  test('graphql-http audits: every MUST for POST application/json passes (13/13)', async () => {
    const authorizedFetch = (input: string | URL | Request, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      headers.set('Authorization', `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    };
    const audits = serverAudits({ url: endpoint, fetchFn: authorizedFetch });
    const results: AuditResult[] = [];
    for (const audit of audits) results.push(await audit.fn());
    const must = results.filter(appliesToPostJson);
    assert.deepEqual(must.map((r) => r.id).sort(), [...POST_JSON_MUST_AUDITS].sort());
    assert.deepEqual(must.flatMap((r) => (r.status === 'ok' ? [] : [`${r.id} ${r.name}: ${r.reason}`])), []);
    const undocumented = results.filter((r) => r.status !== 'ok' && !(r.id in DELIBERATE_DIFFERENCES));
    assert.deepEqual(undocumented.map((r) => `${r.id} ${r.name}`), []);
  });

  test('introspection with getIntrospectionQuery() builds a client schema that prints as `asl schema`', async () => {
    const res = await ask(getIntrospectionQuery());
    assert.equal(res.status, 200);
    assert.equal(res.body.errors, undefined, JSON.stringify(res.body.errors));
    const introspected = printSchema(buildClientSchema(res.body.data as IntrospectionQuery));
    const sdl = execFileSync(process.execPath, [CLI, 'schema', served.appDir], { encoding: 'utf8' });
    assert.equal(introspected, printSchema(buildSchema(sdl)));
  });

  test('__typename at the root, on objects, through relationships, on custom resolver and mutation payloads', async () => {
    assert.deepEqual((await ask('{ __typename }')).body, { data: { __typename: 'Query' } });
    assert.deepEqual((await ask('mutation { __typename }')).body, { data: { __typename: 'Mutation' } });
    assert.deepEqual((await ask('{ __schema { queryType { name } mutationType { name } } }')).body,
      { data: { __schema: { queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } } } });

    const me = await ask('query Me($id: String) { user(query: { userId: $id }) { __typename _id } }', { id: userId });
    assert.equal(me.body.data.user.__typename, 'User', JSON.stringify(me.body));

    const inserted = await ask(`mutation Add($assignee: ObjectId) {
      insertOneTask(data: { _id: "${new ObjectId().toHexString()}", _partition: "${userId}", name: "Ship the bundle", status: "open", isComplete: true,
        assignee: { link: $assignee } }) { __typename _id }
    }`, { assignee: me.body.data.user._id });
    assert.equal(inserted.body.data?.insertOneTask?.__typename, 'Task', JSON.stringify(inserted.body));
    const taskId = inserted.body.data.insertOneTask._id;

    const nested = await ask(`{ tasks { __typename assignee { __typename } project { __typename } history { __typename note } } }`);
    assert.deepEqual(nested.body, { data: { tasks: [{
      __typename: 'Task', assignee: { __typename: 'User' }, project: null,
      history: [{ __typename: 'TaskHistoryEntry', note: 'created "Ship the bundle"' }],
    }] } });

    const summary = await ask(`{ taskSummary(input: { owner: "${userId}", status: "open" }) { __typename count } }`);
    assert.deepEqual(summary.body, { data: { taskSummary: { __typename: 'TaskSummary', count: 1 } } });

    const renamed = await ask('mutation R($id: ObjectId!) { renameTask(input: { taskId: $id, name: "Shipped" }) { __typename name } }', { id: taskId });
    assert.deepEqual(renamed.body, { data: { renameTask: { __typename: 'Task', name: 'Shipped' } } });
    const archived = await ask('mutation { archiveCompletedTasks { __typename } }');
    assert.deepEqual(archived.body, { data: { archiveCompletedTasks: { __typename: 'DefaultPayload' } } });
    const updated = await ask('mutation { updateManyTasks(query: {}, set: { status: "done" }) { __typename matchedCount } }');
    assert.deepEqual(updated.body, { data: { updateManyTasks: { __typename: 'UpdateManyPayload', matchedCount: 1 } } });
    const deleted = await ask('mutation { deleteManyTasks { __typename deletedCount } }');
    assert.deepEqual(deleted.body, { data: { deleteManyTasks: { __typename: 'DeleteManyPayload', deletedCount: 1 } } });
  });
});
