// The generated GraphQL API and custom resolvers over real HTTP on 127.0.0.1, through the whole request
// pipeline: authentication → rule-checked data access → store → function workers. Every generated query
// and mutation, each QueryInput operator class, relationships, scalar wire forms, every resolver input and
// payload format, and the error responses. Hot reload and crash safety live in runtime.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';
import { objectSchema, resolver, taskCollectionFiles } from './fixtures/graphql-apps';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const ds = 'data_sources/mongodb-atlas/todo';
const resolverDir = 'graphql/custom_resolvers';

interface Reply {
  status: number;
  body: any;
}

/** One role for every signed-in user: the tests exercise the rules layer without being limited by it. */
function openRules(collection: string) {
  return {
    database: 'todo', collection, filters: [],
    roles: [{ name: 'signed-in', apply_when: {}, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true }],
  };
}

/** baseApp with open rules for Task and User and no resolvers or functions beyond the reset function. */
function servedApp(): Record<string, unknown> {
  const files = baseApp();
  for (const key of Object.keys(files)) if (key.startsWith(resolverDir) || (key.startsWith('functions/') && key !== 'functions/resetFunc.js')) delete files[key];
  return {
    ...files,
    'functions/config.json': [{ name: 'resetFunc', private: true }],
    [`${ds}/Task/rules.json`]: openRules('Task'),
    [`${ds}/User/rules.json`]: openRules('User'),
  };
}

/** The collection shape of graphql.test.ts: every scalar kind, scalar and embedded arrays, an embedded object, to-one and to-many relationships. */
function taskApp(): Record<string, unknown> {
  return { ...servedApp(), ...taskCollectionFiles() };
}

/** A runtime on a temporary copy of `files`, with one registered and logged-in user. */
async function serve(files: Record<string, unknown>, functionTimeoutMs = 5000) {
  const appDir = writeApp(files);
  const runtime: RunningRuntime = await startRuntime({ appDir, port: 0, log: quiet, functionTimeoutMs });
  const close = async () => {
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  };
  try {
    const app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    const credentials = { email: 'grace@example.com', password: 'graphql over http' };
    const registered = await fetch(`${app}/auth/providers/local-userpass/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(credentials) });
    assert.equal(registered.status, 201, await registered.text());
    const login = await postText(`${app}/auth/providers/local-userpass/login`, JSON.stringify({ username: credentials.email, password: credentials.password }));
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const authorization = `Bearer ${login.body.access_token}`;
    const graphqlUrl = `${app}/graphql`;
    return {
      userId: login.body.user_id as string,
      /** Posts a raw body to the GraphQL route. */
      raw: (text: string) => postText(graphqlUrl, text, { authorization }),
      gql: (query: string, variables?: Record<string, unknown>, operationName?: string) =>
        postText(graphqlUrl, JSON.stringify({ query, variables, operationName }), { authorization }),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

type Served = Awaited<ReturnType<typeof serve>>;

/** Every answer of the GraphQL route is JSON (graphql.md §11), errors included. */
async function postText(url: string, text: string, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text });
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  return { status: res.status, body: JSON.parse(await res.text()) };
}

/** A JSON value as a GraphQL literal, to send the same arguments inline as through variables. */
function graphqlLiteral(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(graphqlLiteral).join(', ')}]`;
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${k}: ${graphqlLiteral(v)}`).join(', ')}}`;
  return JSON.stringify(value);
}

/** The platform's key=value error message (graphql.md §11) for a failure whose untrusted text is the reason. */
function platformMessage(reason: string, code: string): string {
  return `reason=${JSON.stringify(reason)}; code=${JSON.stringify(code)}; untrusted=${JSON.stringify(reason)}; details=map[]`;
}

const ok = (data: Record<string, unknown>): Reply => ({ status: 200, body: { data } });

const ids = {
  ann: '65f000000000000000000001', bob: '65f000000000000000000002', cy: '65f000000000000000000003',
  t1: '5f1f1a3ae4b0c1a2b3c4d501', t2: '5f1f1a3ae4b0c1a2b3c4d502', t3: '5f1f1a3ae4b0c1a2b3c4d503', t4: '5f1f1a3ae4b0c1a2b3c4d504',
  m1: '65a0000000000000000000a1', m2: '65a0000000000000000000a2', m3: '65a0000000000000000000a3', up: '65a0000000000000000000b1',
};

/** Ids of the documents the limit test inserts, ascending with `i`. */
const bulkId = (i: number) => (0x70000000 + i).toString(16).padStart(24, '0');

describe('generated GraphQL API over HTTP', () => {
  let app: Served;
  const gql = (query: string, variables?: Record<string, unknown>, operationName?: string) => app.gql(query, variables, operationName);

  /** Runs a TaskQueryInput both through a variable and inline, and expects the same task names from both. */
  async function expectNames(query: Record<string, unknown>, names: string[]): Promise<void> {
    const expected = ok({ tasks: names.map((name) => ({ name })) });
    assert.deepEqual(await gql('query($q: TaskQueryInput) { tasks(query: $q, sortBy: NAME_ASC) { name } }', { q: query }), expected, `variables: ${JSON.stringify(query)}`);
    assert.deepEqual(await gql(`{ tasks(query: ${graphqlLiteral(query)}, sortBy: NAME_ASC) { name } }`), expected, `inline: ${graphqlLiteral(query)}`);
  }

  before(async () => {
    app = await serve(taskApp());
    const users = await gql('mutation($u: [UserInsertInput!]!) { insertManyUsers(data: $u) { insertedIds } }', {
      u: [{ _id: ids.ann, name: 'Ann', team: 'red' }, { _id: ids.bob, name: 'Bob', team: 'blue' }, { _id: ids.cy, name: 'Cy', team: 'red' }],
    });
    assert.deepEqual(users, ok({ insertManyUsers: { insertedIds: [ids.ann, ids.bob, ids.cy] } }));
    const tasks = await gql('mutation($t: [TaskInsertInput!]!) { insertManyTasks(data: $t) { insertedIds } }', {
      t: [
        {
          _id: ids.t1, name: 'Write spec', isComplete: false, priority: 3, dueDate: '2024-05-01T00:00:00Z', owner: { link: ids.ann },
          watchers: { link: [ids.bob, ids.cy] }, tags: ['docs', 'urgent'], checklist: [{ text: 'outline', done: true }, { text: 'draft', done: false }],
          meta: { source: 'email', views: 12 }, AssignedTeam: 'platform', cost: 12.5,
        },
        { _id: ids.t2, name: 'Review', isComplete: true, priority: 1, dueDate: '2024-04-01T00:00:00Z', owner: { link: ids.bob }, watchers: { link: [ids.ann] }, tags: ['docs'] },
        { _id: ids.t3, name: 'Ship', isComplete: false, priority: 5, owner: { link: ids.cy }, checklist: [{ text: 'tag', done: false }] },
        { _id: ids.t4, name: 'Idea' },
      ],
    });
    assert.deepEqual(tasks, ok({ insertManyTasks: { insertedIds: [ids.t1, ids.t2, ids.t3, ids.t4] } }));
  });
  after(async () => { await app?.close(); });

  describe('queries', () => {
    test('scalars on the wire: ObjectId hex, DateTime RFC 3339, Long and decimal as numbers; embedded values; renamed keys', async () => {
      assert.deepEqual(await gql(`{ task(query: {_id: "${ids.t1}"}) {
        _id name isComplete priority dueDate tags AssignedTeam cost meta { source views } checklist { text done } } }`), ok({
        task: {
          _id: ids.t1, name: 'Write spec', isComplete: false, priority: 3, dueDate: '2024-05-01T00:00:00.000Z', tags: ['docs', 'urgent'],
          AssignedTeam: 'platform', cost: 12.5, meta: { source: 'email', views: 12 },
          checklist: [{ text: 'outline', done: true }, { text: 'draft', done: false }],
        },
      }));
    });

    test('the singular query returns the match or null; the plural one a list, empty without matches', async () => {
      assert.deepEqual(await gql('{ task(query: {priority_gt: 4}) { name priority } }'), ok({ task: { name: 'Ship', priority: 5 } }));
      assert.deepEqual(await gql('{ task(query: {name: "nope"}) { name } tasks(query: {name: "nope"}) { name } }'), ok({ task: null, tasks: [] }));
    });

    test('missing fields and missing relationships are null', async () => {
      assert.deepEqual(await gql('{ task(query: {name: "Idea"}) { priority isComplete dueDate tags meta { source } cost owner { name } watchers { name } } }'),
        ok({ task: { priority: null, isComplete: null, dueDate: null, tags: null, meta: null, cost: null, owner: null, watchers: null } }));
    });

    test('sortBy orders ascending and descending by scalars and by a to-one relationship; limit caps the list', async () => {
      assert.deepEqual(await gql('{ tasks(limit: 2, sortBy: PRIORITY_DESC) { name priority } }'),
        ok({ tasks: [{ name: 'Ship', priority: 5 }, { name: 'Write spec', priority: 3 }] }));
      assert.deepEqual(await gql('{ tasks(sortBy: NAME_DESC) { name } }'), ok({ tasks: [{ name: 'Write spec' }, { name: 'Ship' }, { name: 'Review' }, { name: 'Idea' }] }));
      assert.deepEqual(await gql('{ tasks(query: {dueDate_exists: true}, sortBy: DUEDATE_ASC) { name dueDate } }'),
        ok({ tasks: [{ name: 'Review', dueDate: '2024-04-01T00:00:00.000Z' }, { name: 'Write spec', dueDate: '2024-05-01T00:00:00.000Z' }] }));
      assert.deepEqual(await gql('{ tasks(sortBy: _ID_DESC, limit: 1) { _id } }'), ok({ tasks: [{ _id: ids.t4 }] }));
      assert.deepEqual(await gql('{ tasks(query: {owner_exists: true}, sortBy: OWNER_ASC) { name } }'),
        ok({ tasks: [{ name: 'Write spec' }, { name: 'Review' }, { name: 'Ship' }] }));
    });

    test('equality and the comparison operators _ne, _gt, _gte, _lt, _lte on every scalar kind', async () => {
      await expectNames({ isComplete: false }, ['Ship', 'Write spec']);
      await expectNames({ isComplete_ne: false }, ['Idea', 'Review']);
      await expectNames({ priority: 3 }, ['Write spec']);
      await expectNames({ priority_ne: 3 }, ['Idea', 'Review', 'Ship']);
      await expectNames({ priority_gt: 1 }, ['Ship', 'Write spec']);
      await expectNames({ priority_gte: 3, priority_lt: 5 }, ['Write spec']);
      await expectNames({ priority_lte: 1 }, ['Review']);
      await expectNames({ name_gt: 'S' }, ['Ship', 'Write spec']);
      await expectNames({ dueDate_lt: '2024-04-15T00:00:00Z' }, ['Review']);
      await expectNames({ dueDate_gte: '2024-04-15T00:00:00Z' }, ['Write spec']);
      await expectNames({ _id: ids.t2 }, ['Review']);
      await expectNames({ _id_gt: ids.t2, _id_lte: ids.t3 }, ['Ship']);
      await expectNames({ cost_gt: 12, cost_lt: 13 }, ['Write spec']);
      await expectNames({ AssignedTeam: 'platform' }, ['Write spec']);
    });

    test('_in and _nin on scalars', async () => {
      await expectNames({ priority_in: [1, 5] }, ['Review', 'Ship']);
      await expectNames({ priority_nin: [1, 5] }, ['Idea', 'Write spec']);
      await expectNames({ _id_in: [ids.t2, ids.t3] }, ['Review', 'Ship']);
      await expectNames({ name_nin: ['Idea', 'Ship'] }, ['Review', 'Write spec']);
    });

    test('_exists: true matches present values; false matches missing or null', async () => {
      await expectNames({ priority_exists: false }, ['Idea']);
      await expectNames({ priority_exists: true }, ['Review', 'Ship', 'Write spec']);
      await expectNames({ checklist_exists: false }, ['Idea', 'Review']);
      await expectNames({ meta_exists: true }, ['Write spec']);
      await expectNames({ owner_exists: false }, ['Idea']);
    });

    test('AND and OR, nested and on the same field', async () => {
      await expectNames({ OR: [{ priority: 1 }, { priority: 5 }] }, ['Review', 'Ship']);
      await expectNames({ AND: [{ priority_gt: 1 }, { priority_lt: 5 }] }, ['Write spec']);
      await expectNames({ priority_gt: 1, AND: [{ OR: [{ name: 'Ship' }, { name: 'Review' }] }] }, ['Ship']);
    });

    test('embedded object sub-queries', async () => {
      await expectNames({ meta: { source: 'email' } }, ['Write spec']);
      await expectNames({ meta: { views_gte: 12 } }, ['Write spec']);
      await expectNames({ meta: { views_gt: 20 } }, []);
    });

    test('scalar arrays: equality with the whole list, _in when any element is listed, _nin when none is', async () => {
      await expectNames({ tags: ['docs'] }, ['Review']);
      await expectNames({ tags_in: ['urgent', 'later'] }, ['Write spec']);
      await expectNames({ tags_nin: ['urgent'] }, ['Idea', 'Review', 'Ship']);
    });

    test('arrays of embedded objects: one element matches the whole sub-query', async () => {
      await expectNames({ checklist: [{ text: 'draft', done: false }] }, ['Write spec']);
      await expectNames({ checklist: [{ text: 'outline', done: false }] }, []);
      await expectNames({ checklist_in: [{ text: 'tag' }, { text: 'outline' }] }, ['Ship', 'Write spec']);
      await expectNames({ checklist_nin: [{ done: true }] }, ['Idea', 'Review', 'Ship']);
    });

    test('to-one relationship sub-queries', async () => {
      await expectNames({ owner: { team: 'red' } }, ['Ship', 'Write spec']);
      await expectNames({ owner: { name_in: ['Bob'] }, isComplete: true }, ['Review']);
    });

    test('to-many relationship sub-queries: each listed query, _in, _nin', async () => {
      await expectNames({ watchers: [{ name: 'Bob' }, { name: 'Cy' }] }, ['Write spec']);
      await expectNames({ watchers_in: [{ name: 'Ann' }, { name: 'Cy' }] }, ['Review', 'Write spec']);
      await expectNames({ watchers_nin: [{ name: 'Ann' }] }, ['Idea', 'Ship', 'Write spec']);
    });

    test('to-one and to-many relationships resolve in responses', async () => {
      assert.deepEqual(await gql('{ tasks(sortBy: NAME_ASC) { name owner { _id name } watchers { name team } } }'), ok({
        tasks: [
          { name: 'Idea', owner: null, watchers: null },
          { name: 'Review', owner: { _id: ids.bob, name: 'Bob' }, watchers: [{ name: 'Ann', team: 'red' }] },
          { name: 'Ship', owner: { _id: ids.cy, name: 'Cy' }, watchers: null },
          { name: 'Write spec', owner: { _id: ids.ann, name: 'Ann' }, watchers: [{ name: 'Bob', team: 'blue' }, { name: 'Cy', team: 'red' }] },
        ],
      }));
    });

    test('query, variables and operationName together pick and parameterise one operation', async () => {
      const document = `query ByName($n: String) { task(query: {name: $n}) { name priority } }
        query ByPriority($p: Int) { task(query: {priority: $p}) { name } }`;
      assert.deepEqual(await gql(document, { p: 1 }, 'ByPriority'), ok({ task: { name: 'Review' } }));
      assert.deepEqual(await gql(document, { n: 'Ship' }, 'ByName'), ok({ task: { name: 'Ship', priority: 5 } }));
    });
  });

  describe('mutations', () => {
    test('insertOne converts every scalar kind, links a relationship and returns the stored document', async () => {
      const inserted = await gql(`mutation($d: TaskInsertInput!) {
        insertOneTask(data: $d) { _id name isComplete priority dueDate cost tags AssignedTeam meta { source views } checklist { text done } owner { name } } }`, {
        d: {
          _id: ids.m1, name: 'New', isComplete: false, priority: 8, dueDate: '2024-06-01T10:00:00+02:00', cost: 1.25, tags: ['a', 'b'],
          AssignedTeam: 'core', meta: { source: 'ui', views: 5000000000 }, checklist: [{ text: 'x', done: false }], owner: { link: ids.bob },
        },
      });
      assert.deepEqual(inserted, ok({
        insertOneTask: {
          _id: ids.m1, name: 'New', isComplete: false, priority: 8, dueDate: '2024-06-01T08:00:00.000Z', cost: 1.25, tags: ['a', 'b'],
          AssignedTeam: 'core', meta: { source: 'ui', views: 5000000000 }, checklist: [{ text: 'x', done: false }], owner: { name: 'Bob' },
        },
      }));
      // Stored as Long and Decimal128: comparisons on them find the document again.
      assert.deepEqual(await gql('{ tasks(query: {meta: {views_gt: 4294967296}, cost_lte: 1.25, cost_gt: 1}) { _id } }'), ok({ tasks: [{ _id: ids.m1 }] }));
    });

    test('insertOne without an _id stores a generated ObjectId', async () => {
      const inserted = await gql('mutation { insertOneTask(data: {name: "No id", priority: 8}) { _id name } }');
      const id = inserted.body.data?.insertOneTask?._id;
      assert.match(String(id), /^[0-9a-f]{24}$/);
      assert.deepEqual(inserted, ok({ insertOneTask: { _id: id, name: 'No id' } }));
      assert.deepEqual(await gql('query($id: ObjectId) { task(query: {_id: $id}) { name } }', { id }), ok({ task: { name: 'No id' } }));
    });

    test('RelationInput create inserts foreign documents and wins over link, for to-one and to-many', async () => {
      const inserted = await gql(`mutation { insertOneTask(data: {name: "Rel",
        owner: {link: "${ids.ann}", create: {name: "Dee", team: "green"}},
        watchers: {link: ["${ids.ann}"], create: [{name: "Eve"}, {name: "Fay"}]}}) { name owner { name team } watchers { name } } }`);
      assert.deepEqual(inserted, ok({ insertOneTask: { name: 'Rel', owner: { name: 'Dee', team: 'green' }, watchers: [{ name: 'Eve' }, { name: 'Fay' }] } }));
      assert.deepEqual(await gql('{ users(query: {name_in: ["Dee", "Eve", "Fay"]}, sortBy: NAME_ASC) { name } }'),
        ok({ users: [{ name: 'Dee' }, { name: 'Eve' }, { name: 'Fay' }] }));
    });

    test('RelationInput link stores the linked values, to-one and to-many', async () => {
      const inserted = await gql(`mutation { insertOneTask(data: {name: "Linked", owner: {link: "${ids.cy}"}, watchers: {link: ["${ids.ann}", "${ids.cy}"]}}) {
        owner { name } watchers { name } } }`);
      assert.deepEqual(inserted, ok({ insertOneTask: { owner: { name: 'Cy' }, watchers: [{ name: 'Ann' }, { name: 'Cy' }] } }));
      await expectNames({ owner: { name: 'Cy' }, watchers: [{ name: 'Ann' }] }, ['Linked']);
    });

    test('insertMany returns the inserted ids in order', async () => {
      assert.deepEqual(await gql(`mutation { insertManyTasks(data: [{_id: "${ids.m2}", name: "M2", priority: 20, tags: ["x"]}, {_id: "${ids.m3}", name: "M3", priority: 20}]) { insertedIds } }`),
        ok({ insertManyTasks: { insertedIds: [ids.m2, ids.m3] } }));
    });

    test('updateOne applies set, _inc and _unset to the first match and returns the updated document', async () => {
      const updated = await gql(`mutation { updateOneTask(query: {_id: "${ids.m2}"},
        set: {priority_inc: 2, isComplete: true, tags_unset: true, meta: {source: "chat"}}) { name priority isComplete tags meta { source views } } }`);
      assert.deepEqual(updated, ok({ updateOneTask: { name: 'M2', priority: 22, isComplete: true, tags: null, meta: { source: 'chat', views: null } } }));
      await expectNames({ _id: ids.m2, tags_exists: false, priority: 22 }, ['M2']);
      assert.deepEqual(await gql('mutation { updateOneTask(query: {name: "nope"}, set: {priority: 1}) { name } }'), ok({ updateOneTask: null }));
    });

    test('updateOne relinks a relationship', async () => {
      assert.deepEqual(await gql(`mutation { updateOneTask(query: {_id: "${ids.m3}"}, set: {owner: {link: "${ids.ann}"}}) { name owner { name } } }`),
        ok({ updateOneTask: { name: 'M3', owner: { name: 'Ann' } } }));
    });

    test('updateMany reports matched and modified counts', async () => {
      assert.deepEqual(await gql('mutation { updateManyTasks(query: {priority_gte: 20}, set: {priority: 30}) { matchedCount modifiedCount } }'),
        ok({ updateManyTasks: { matchedCount: 2, modifiedCount: 2 } }));
      assert.deepEqual(await gql('mutation { updateManyTasks(query: {priority: 30}, set: {priority: 30}) { matchedCount modifiedCount } }'),
        ok({ updateManyTasks: { matchedCount: 2, modifiedCount: 0 } }));
      assert.deepEqual(await gql('mutation { updateManyTasks(query: {priority: 30}, set: {priority_inc: -1}) { matchedCount modifiedCount } }'),
        ok({ updateManyTasks: { matchedCount: 2, modifiedCount: 2 } }));
      await expectNames({ priority: 29 }, ['M2', 'M3']);
    });

    test('upsertOne inserts the data without a match and replaces the match otherwise', async () => {
      assert.deepEqual(await gql(`mutation { upsertOneTask(query: {name: "Up"}, data: {_id: "${ids.up}", name: "Up", priority: 1, tags: ["t"]}) { _id name priority tags } }`),
        ok({ upsertOneTask: { _id: ids.up, name: 'Up', priority: 1, tags: ['t'] } }));
      assert.deepEqual(await gql(`mutation { upsertOneTask(query: {_id: "${ids.up}"}, data: {name: "Up again", priority: 2}) { _id name priority tags } }`),
        ok({ upsertOneTask: { _id: ids.up, name: 'Up again', priority: 2, tags: null } }));
      await expectNames({ name_in: ['Up', 'Up again'] }, ['Up again']);
    });

    test('replaceOne replaces the first match; without a match it returns null and inserts nothing', async () => {
      assert.deepEqual(await gql(`mutation { replaceOneTask(query: {_id: "${ids.m1}"}, data: {name: "Replaced"}) { _id name priority meta { source } owner { name } } }`),
        ok({ replaceOneTask: { _id: ids.m1, name: 'Replaced', priority: null, meta: null, owner: null } }));
      assert.deepEqual(await gql('mutation { replaceOneTask(query: {name: "nope"}, data: {name: "ghost"}) { name } }'), ok({ replaceOneTask: null }));
      await expectNames({ name: 'ghost' }, []);
    });

    test('deleteOne returns the deleted document; without a match it returns null', async () => {
      assert.deepEqual(await gql(`mutation { deleteOneTask(query: {_id: "${ids.up}"}) { _id name priority } }`),
        ok({ deleteOneTask: { _id: ids.up, name: 'Up again', priority: 2 } }));
      assert.deepEqual(await gql(`mutation { deleteOneTask(query: {_id: "${ids.up}"}) { name } }`), ok({ deleteOneTask: null }));
    });

    test('deleteMany with a query counts what it deleted', async () => {
      assert.deepEqual(await gql('mutation { deleteManyTasks(query: {priority: 29}) { deletedCount } }'), ok({ deleteManyTasks: { deletedCount: 2 } }));
      await expectNames({ name_in: ['M2', 'M3'] }, []);
    });

    test('deleteMany without a query deletes every document; limit defaults to 100', async () => {
      const before = await gql('{ tasks(limit: 1000) { _id } }');
      assert.deepEqual(await gql('mutation { deleteManyTasks { deletedCount } }'), ok({ deleteManyTasks: { deletedCount: before.body.data.tasks.length } }));
      assert.deepEqual(await gql('{ tasks { _id } }'), ok({ tasks: [] }));
      const bulk = Array.from({ length: 105 }, (_, i) => ({ _id: bulkId(i), name: `bulk ${i}` }));
      assert.deepEqual(await gql('mutation($d: [TaskInsertInput!]!) { insertManyTasks(data: $d) { insertedIds } }', { d: bulk }),
        ok({ insertManyTasks: { insertedIds: bulk.map((t) => t._id) } }));
      const byDefault = await gql('{ tasks(sortBy: _ID_ASC) { _id } }');
      assert.deepEqual(byDefault, ok({ tasks: bulk.slice(0, 100).map((t) => ({ _id: t._id })) }));
      assert.deepEqual(await gql('{ tasks(limit: 105, sortBy: _ID_DESC) { _id } }'), ok({ tasks: bulk.slice().reverse().map((t) => ({ _id: t._id })) }));
    });
  });

  describe('errors', () => {
    /** A 200 with data null and one error entry located at the operation's variable definitions. */
    const variableError = (message: string, column: number): Reply => ({ status: 200, body: { data: null, errors: [{ message, locations: [{ line: 1, column }] }] } });

    test('bad variables: wrong types, missing required, unknown input fields; nothing executes', async () => {
      const insert = 'mutation($d: TaskInsertInput!) { insertOneTask(data: $d) { name } }';
      assert.deepEqual(await gql('query($q: TaskQueryInput) { tasks(query: $q) { name } }', { q: { name: 5 } }),
        variableError('Variable "$q" got invalid value 5 at "q.name"; String cannot represent a non string value: 5', 7));
      assert.deepEqual(await gql(insert, { d: { name: 'x', _id: 'not-hex' } }),
        variableError('Variable "$d" got invalid value "not-hex" at "d._id"; ObjectId cannot represent a non-ObjectId value: "not-hex"', 10));
      assert.deepEqual(await gql(insert, {}), variableError('Variable "$d" of required type "TaskInsertInput!" was not provided.', 10));
      assert.deepEqual(await gql(insert, { d: { name: 'x', bogus: 1 } }),
        variableError('Variable "$d" got invalid value { name: "x", bogus: 1 }; Field "bogus" is not defined by type "TaskInsertInput". Did you mean "tags"?', 10));
      const wrongScalar = await gql('query($p: Int) { tasks(query: {priority: $p}) { name } }', { p: 'high' });
      assert.match(wrongScalar.body.errors?.[0]?.message ?? '', /^Variable "\$p" got invalid value "high"; .*Int cannot represent non-integer value: "high"$/);
      assert.deepEqual(wrongScalar, variableError(wrongScalar.body.errors[0].message, 7));
      assert.deepEqual(await gql('{ tasks(query: {name: "x"}) { _id } }'), ok({ tasks: [] }), 'the mutations with bad variables inserted nothing');
    });

    test('scalar variables get the same coercion messages as input-object variables', async () => {
      assert.deepEqual(await gql('query($p: Int) { tasks(query: {priority: $p}) { name } }', { p: 'high' }),
        variableError('Variable "$p" got invalid value "high"; Int cannot represent non-integer value: "high"', 7));
      assert.deepEqual(await gql('query($id: ObjectId) { task(query: {_id: $id}) { name } }', { id: 'not-hex' }),
        variableError('Variable "$id" got invalid value "not-hex"; ObjectId cannot represent a non-ObjectId value: "not-hex"', 7));
    });

    test('the query depth limit refuses deeper operations before executing them', async () => {
      const nested = (ofTypes: number) => `query Deep { __type(name: "Task") { ${'ofType { '.repeat(ofTypes)}name${' }'.repeat(ofTypes)} } }`;
      // __type + 30 ofType + name = 32 levels: the runtime's limit.
      assert.deepEqual(await gql(nested(30)), ok({ __type: { ofType: null } }));
      assert.deepEqual(await gql(nested(31)), {
        status: 200,
        body: { data: null, errors: [{ message: 'The operation "Deep" nests fields 33 levels deep; the limit is 32.', locations: [{ line: 1, column: 1 }] }] },
      });
    });

    test('a malformed JSON body is a 400 JSON error and the route keeps serving', async () => {
      const text = '{"query": ';
      let parseError = '';
      try { JSON.parse(text); } catch (error) { parseError = (error as Error).message; }
      assert.deepEqual(await app.raw(text), { status: 400, body: { data: null, errors: [{ message: `The request body is not valid JSON: ${parseError}` }] } });
      assert.deepEqual(await app.raw('[]'), { status: 400, body: { data: null, errors: [{ message: 'The request body must be a JSON object with a "query" string.' }] } });
      assert.deepEqual(await app.raw('{"variables": {}}'), { status: 400, body: { data: null, errors: [{ message: 'The request has no "query"; send the operation text as a string.' }] } });
      assert.deepEqual(await gql('{ tasks(limit: 1, sortBy: _ID_ASC) { name } }'), ok({ tasks: [{ name: 'bulk 0' }] }));
    });

    test('a store failure is a platform error entry with data null', async () => {
      // bulk 0 of the limit test is still stored.
      const duplicate = await gql(`mutation { insertOneTask(data: {_id: "${bulkId(0)}", name: "dup"}) { _id } }`);
      assert.equal(duplicate.status, 200);
      assert.deepEqual(Object.keys(duplicate.body), ['data', 'errors']);
      assert.equal(duplicate.body.data, null);
      assert.equal(duplicate.body.errors.length, 1);
      const { message, ...where } = duplicate.body.errors[0];
      assert.match(message, /^reason=".*duplicate key.*"; code="MongoDBError"; untrusted=".*"; details=map\[\]$/);
      assert.deepEqual(where, { locations: [{ line: 1, column: 12 }], path: ['insertOneTask'] });
    });
  });
});

/** What every echo function returns: its arguments with BSON types and dates tagged, and the calling user. */
const ECHO = `const tagged = (v) => v === undefined ? { undefined: true } : v === null ? null : Array.isArray(v) ? v.map(tagged)
  : Object.prototype.toString.call(v) === "[object Date]" ? { Date: v.toISOString() }
  : typeof v === "object" && typeof v._bsontype === "string" ? { [v._bsontype]: v.toString() }
  : typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, tagged(x)]))
  : v;
exports = async (...args) => JSON.stringify({ user: context.user.id, args: args.map(tagged) });
`;

const resolverFunctions: Record<string, string> = {
  echo: ECHO,
  archiveCompletedTasks: 'exports = async () => ({ status: "failed", archived: 3 });',
  double: 'exports = async (n) => n * 2;',
  half: 'exports = async (x) => x / 2;',
  words: 'exports = async (text) => text.split(" ");',
  renameTask: `exports = async ({ taskId, name }) => context.services.get('mongodb-atlas').db('todo').collection('Task')
    .findOneAndUpdate({ _id: taskId }, { $set: { name } }, { returnNewDocument: true });`,
  tasksNamed: `exports = async (names) => context.services.get('mongodb-atlas').db('todo').collection('Task')
    .find({ name: { $in: names } }).sort({ name: -1 }).toArray();`,
  taskSummary: `exports = async ({ owner, status }) => ({
    owner, status, count: owner.length + status.length, id: new BSON.ObjectId("65f0000000000000000000ff"), at: new Date("2024-05-01T12:30:00Z"),
    big: BSON.Long.fromNumber(5000000000), price: BSON.Decimal128.fromString("12.50"), labels: [owner, status], detail: { note: owner + "/" + status }, ignored: true });`,
  taskHistory: 'exports = async (source) => [{ at: "2024-05-01", note: "viewed " + source.name }, { at: "2024-05-02", note: "owner " + source.owner.toHexString() }];',
  risks: 'exports = async () => [{ level: "high" }, { level: "low" }];',
  brokenSummary: 'exports = async () => ({ owner: 5, status: "x", count: 1 });',
  boom: 'exports = async () => { throw new Error("the resolver blew up"); };',
  spin: 'exports = async () => { for (;;) {} };',
};



/** The resolver shapes of graphql-resolvers.test.ts, with an echo function behind every input format. */
function resolverApp(): Record<string, unknown> {
  const echoString = ['scalar', 'string'] as [string, unknown];
  const resolvers: Record<string, unknown> = {
    echoNone: resolver('Query', 'echoNone', 'echo', [''], echoString),
    echoScalar: resolver('Query', 'echoScalar', 'echo', ['scalar', 'int'], echoString),
    echoScalarList: resolver('Query', 'echoScalarList', 'echo', ['scalar-list', 'string'], echoString),
    echoGenerated: resolver('Query', 'echoGenerated', 'echo', ['generated', 'TaskInsertInput'], echoString),
    echoGeneratedList: resolver('Query', 'echoGeneratedList', 'echo', ['generated-list', 'TaskInsertInput'], echoString),
    echoCustom: resolver('Mutation', 'echoCustom', 'echo', ['custom', objectSchema('EchoInput', {
      id: { bsonType: 'objectId' }, when: { bsonType: 'date' }, count: { bsonType: 'int' }, words: { bsonType: 'array', items: { bsonType: 'string' } },
      detail: { bsonType: 'object', properties: { note: { bsonType: 'string' } } },
    }, ['id'])], echoString),
    echoSource: resolver('Task', 'echoSource', 'echo', [''], echoString),
    echoLabel: resolver('Task', 'echoLabel', 'echo', ['scalar', 'string'], echoString),
    archiveCompletedTasks: resolver('Mutation', 'archiveCompletedTasks', 'archiveCompletedTasks', [''], ['']),
    double: resolver('Query', 'double', 'double', ['scalar', 'int'], ['scalar', 'int']),
    half: resolver('Query', 'half', 'half', ['scalar', 'double'], ['scalar', 'double']),
    words: resolver('Query', 'words', 'words', ['scalar', 'string'], ['scalar-list', 'string']),
    renameTask: resolver('Mutation', 'renameTask', 'renameTask',
      ['custom', objectSchema('RenameTaskInput', { taskId: { bsonType: 'objectId' }, name: { bsonType: 'string' } }, ['taskId', 'name'])], ['generated', 'Task']),
    tasksNamed: resolver('Query', 'tasksNamed', 'tasksNamed', ['scalar-list', 'string'], ['generated-list', 'Task']),
    taskSummary: resolver('Query', 'taskSummary', 'taskSummary',
      ['custom', objectSchema('TaskSummaryInput', { owner: { bsonType: 'string' }, status: { bsonType: 'string' } }, ['owner', 'status'])],
      ['custom', objectSchema('TaskSummary', {
        owner: { bsonType: 'string' }, status: { bsonType: 'string' }, count: { bsonType: 'int' }, id: { bsonType: 'objectId' }, at: { bsonType: 'date' },
        big: { bsonType: 'long' }, price: { bsonType: 'decimal' }, labels: { bsonType: 'array', items: { bsonType: 'string' } },
        detail: { bsonType: 'object', properties: { note: { bsonType: 'string' } } },
      }, ['owner', 'status', 'count'])]),
    history: resolver('Task', 'history', 'taskHistory', [''], ['custom', {
      bsonType: 'array', items: objectSchema('TaskHistoryEntry', { at: { bsonType: 'string' }, note: { bsonType: 'string' } }, ['at', 'note']),
    }]),
    risks: resolver('Query', 'risks', 'risks', [''], ['custom', { title: 'RisksPayload', bsonType: 'array', items: { bsonType: 'object', properties: { level: { bsonType: 'string' } } } }]),
    brokenSummary: resolver('Query', 'brokenSummary', 'brokenSummary', [''], ['custom', objectSchema('BrokenSummary',
      { owner: { bsonType: 'string' }, status: { bsonType: 'string' }, count: { bsonType: 'int' } }, ['owner', 'status', 'count'])]),
    boom: resolver('Query', 'boom', 'boom', [''], ['scalar', 'string']),
    spin: resolver('Query', 'spin', 'spin', [''], ['scalar', 'string']),
  };
  return {
    ...servedApp(),
    'functions/config.json': [{ name: 'resetFunc', private: true }, ...Object.keys(resolverFunctions).map((name) => ({ name, private: false }))],
    ...Object.fromEntries(Object.entries(resolverFunctions).map(([name, source]) => [`functions/${name}.js`, source])),
    ...Object.fromEntries(Object.entries(resolvers).map(([name, config]) => [`${resolverDir}/${name}.json`, config])),
    [`${ds}/Task/schema.json`]: objectSchema('Task', {
      _id: { bsonType: 'objectId' }, name: { bsonType: 'string' }, owner: { bsonType: 'objectId' }, dueDate: { bsonType: 'date' },
    }, ['_id', 'name']),
    [`${ds}/Task/relationships.json`]: { owner: { ref: '#/relationship/mongodb-atlas/todo/User', source_key: 'owner', foreign_key: '_id', is_list: false } },
  };
}

describe('custom resolvers over HTTP', () => {
  let app: Served;
  const gql = (query: string, variables?: Record<string, unknown>) => app.gql(query, variables);
  const taskId = '5f1f1a3ae4b0c1a2b3c4d5e6';
  const otherTaskId = '5f1f1a3ae4b0c1a2b3c4d5e7';
  const storedTask = { _id: { ObjectId: taskId }, name: 'Write spec', owner: { ObjectId: ids.ann }, dueDate: { Date: '2024-05-01T00:00:00.000Z' } };

  /** Runs a query whose only field is an echo resolver and returns what its function received. */
  async function echoed(query: string, variables?: Record<string, unknown>): Promise<unknown> {
    const reply = await gql(query, variables);
    assert.equal(reply.status, 200);
    assert.deepEqual(Object.keys(reply.body), ['data'], JSON.stringify(reply.body));
    const values = Object.values(reply.body.data as Record<string, unknown>);
    assert.equal(values.length, 1);
    assert.equal(typeof values[0], 'string');
    return JSON.parse(values[0] as string);
  }

  before(async () => {
    app = await serve(resolverApp(), 1500);
    assert.deepEqual(await gql(`mutation { insertOneUser(data: {_id: "${ids.ann}", name: "Ann"}) { name } }`), ok({ insertOneUser: { name: 'Ann' } }));
    assert.deepEqual(await gql(`mutation { insertManyTasks(data: [{_id: "${taskId}", name: "Write spec", owner: {link: "${ids.ann}"}, dueDate: "2024-05-01T00:00:00Z"},
      {_id: "${otherTaskId}", name: "Review"}]) { insertedIds } }`), ok({ insertManyTasks: { insertedIds: [taskId, otherTaskId] } }));
  });
  after(async () => { await app?.close(); });

  describe('input formats: the function receives (input) on Query and Mutation, as the requesting user', () => {
    test('no input: called with no arguments', async () => {
      assert.deepEqual(await echoed('{ echoNone }'), { user: app.userId, args: [] });
    });

    test('scalar input', async () => {
      assert.deepEqual(await echoed('query($n: Int) { echoScalar(input: $n) }', { n: 21 }), { user: app.userId, args: [21] });
    });

    test('scalar-list input', async () => {
      assert.deepEqual(await echoed('{ echoScalarList(input: ["a", "b"]) }'), { user: app.userId, args: [['a', 'b']] });
    });

    test('generated input: shaped like the insert input, ObjectId and DateTime converted, RelationInput kept', async () => {
      const received = await echoed(`{ echoGenerated(input: {_id: "${taskId}", name: "x", dueDate: "2024-01-01T00:00:00Z", owner: {link: "${ids.ann}"}}) }`);
      assert.deepEqual(received, {
        user: app.userId,
        args: [{ _id: { ObjectId: taskId }, name: 'x', dueDate: { Date: '2024-01-01T00:00:00.000Z' }, owner: { link: { ObjectId: ids.ann } } }],
      });
    });

    test('generated-list input', async () => {
      const received = await echoed('query($l: [TaskInsertInput]) { echoGeneratedList(input: $l) }', { l: [{ _id: taskId, name: 'a' }, { _id: otherTaskId, name: 'b' }] });
      assert.deepEqual(received, { user: app.userId, args: [[{ _id: { ObjectId: taskId }, name: 'a' }, { _id: { ObjectId: otherTaskId }, name: 'b' }]] });
    });

    test('custom input: every property converted, nested objects kept', async () => {
      const received = await echoed('mutation($i: EchoInput) { echoCustom(input: $i) }', {
        i: { id: ids.ann, when: '2024-02-29T23:00:00-01:00', count: 3, words: ['x', 'y'], detail: { note: 'n' } },
      });
      assert.deepEqual(received, {
        user: app.userId,
        args: [{ id: { ObjectId: ids.ann }, when: { Date: '2024-03-01T00:00:00.000Z' }, count: 3, words: ['x', 'y'], detail: { note: 'n' } }],
      });
    });
  });

  describe('computed fields: the function receives (source) or (input, source)', () => {
    test('without input: (source), the parent document as stored', async () => {
      const reply = await gql(`{ task(query: {_id: "${taskId}"}) { name echoSource } }`);
      assert.equal(reply.status, 200);
      assert.equal(reply.body.data.task.name, 'Write spec');
      assert.deepEqual(JSON.parse(reply.body.data.task.echoSource), { user: app.userId, args: [storedTask] });
    });

    test('with input: (input, source)', async () => {
      const reply = await gql(`{ task(query: {_id: "${taskId}"}) { echoLabel(input: "Task: ") } }`);
      assert.equal(reply.status, 200);
      assert.deepEqual(JSON.parse(reply.body.data.task.echoLabel), { user: app.userId, args: ['Task: ', storedTask] });
    });

    test('a custom list payload on every document of a list, items titled: [TaskHistoryEntry]', async () => {
      assert.deepEqual(await gql(`{ tasks(query: {_id: "${taskId}"}) { name history { __typename at note } } }`), ok({
        tasks: [{
          name: 'Write spec',
          history: [{ __typename: 'TaskHistoryEntry', at: '2024-05-01', note: 'viewed Write spec' }, { __typename: 'TaskHistoryEntry', at: '2024-05-02', note: `owner ${ids.ann}` }],
        }],
      }));
    });
  });

  describe('payload formats', () => {
    test('DefaultPayload is {status: "complete"} whatever the function returns', async () => {
      assert.deepEqual(await gql('mutation { archiveCompletedTasks { __typename status } }'),
        ok({ archiveCompletedTasks: { __typename: 'DefaultPayload', status: 'complete' } }));
    });

    test('scalar payloads: Int and Float', async () => {
      assert.deepEqual(await gql('{ double(input: 21) half(input: 2.5) }'), ok({ double: 42, half: 1.25 }));
    });

    test('scalar-list payload', async () => {
      assert.deepEqual(await gql('{ words(input: "to be or") }'), ok({ words: ['to', 'be', 'or'] }));
    });

    test('generated payload: resolved like a stored document, relationships included', async () => {
      assert.deepEqual(await gql(`mutation { renameTask(input: {taskId: "${otherTaskId}", name: "Reviewed"}) { __typename _id name dueDate owner { name } } }`),
        ok({ renameTask: { __typename: 'Task', _id: otherTaskId, name: 'Reviewed', dueDate: null, owner: null } }));
      assert.deepEqual(await gql(`{ task(query: {_id: "${otherTaskId}"}) { name } }`), ok({ task: { name: 'Reviewed' } }));
    });

    test('generated-list payload', async () => {
      assert.deepEqual(await gql('{ tasksNamed(input: ["Write spec", "Reviewed", "nope"]) { _id name dueDate owner { name } } }'), ok({
        tasksNamed: [
          { _id: taskId, name: 'Write spec', dueDate: '2024-05-01T00:00:00.000Z', owner: { name: 'Ann' } },
          { _id: otherTaskId, name: 'Reviewed', dueDate: null, owner: null },
        ],
      }));
    });

    test('custom object payload: scalars on the wire, nested type, extra keys dropped', async () => {
      assert.deepEqual(await gql('{ taskSummary(input: {owner: "ann", status: "open"}) { __typename owner status count id at big price labels detail { __typename note } } }'), ok({
        taskSummary: {
          __typename: 'TaskSummary', owner: 'ann', status: 'open', count: 7, id: '65f0000000000000000000ff', at: '2024-05-01T12:30:00.000Z',
          big: 5000000000, price: 12.5, labels: ['ann', 'open'], detail: { __typename: 'TaskSummaryDetail', note: 'ann/open' },
        },
      }));
    });

    test('custom list payload with the title on the array: [<Title>Item]', async () => {
      assert.deepEqual(await gql('{ risks { __typename level } }'),
        ok({ risks: [{ __typename: 'RisksPayloadItem', level: 'high' }, { __typename: 'RisksPayloadItem', level: 'low' }] }));
    });
  });

  describe('failing functions', () => {
    test('a payload mismatch is an error naming the resolver, its function and the misfit', async () => {
      const reason = 'custom resolver Query.brokenSummary (function "brokenSummary") returned a value that does not fit its payload type BrokenSummary: the result.owner: expected String, got 5';
      assert.deepEqual(await gql('{ brokenSummary { owner } }'), {
        status: 200,
        body: { data: null, errors: [{ message: platformMessage(reason, 'FunctionExecutionError'), locations: [{ line: 1, column: 3 }], path: ['brokenSummary'] }] },
      });
    });

    test("a throwing function's message surfaces in the error entry", async () => {
      assert.deepEqual(await gql('{ boom }'), {
        status: 200,
        body: { data: null, errors: [{ message: platformMessage('the resolver blew up', 'FunctionExecutionError'), locations: [{ line: 1, column: 3 }], path: ['boom'] }] },
      });
    });

    test('a looping function is stopped at the time limit and the runtime keeps serving', async () => {
      assert.deepEqual(await gql('{ spin }'), {
        status: 200,
        body: { data: null, errors: [{ message: platformMessage('execution time limit exceeded', 'ExecutionTimeLimitExceeded'), locations: [{ line: 1, column: 3 }], path: ['spin'] }] },
      });
      assert.deepEqual(await gql('{ double(input: 4) tasks(query: {name: "Write spec"}) { name } }'), ok({ double: 8, tasks: [{ name: 'Write spec' }] }));
    });
  });
});
