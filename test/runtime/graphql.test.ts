// The GraphQL endpoint over the generated API: every query and mutation, the QueryInput operators,
// relationships, scalar conversions, the request envelope and its errors, limits and the document cache.
// Executes against the embedded in-memory store; data access goes through an injected per-user accessor.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { getVariableValues, parse as parseGraphql, type OperationDefinitionNode } from 'graphql';
import { Decimal128, Long, ObjectId } from 'bson';
import { generateSchema } from '../../core/graphql';
import { loadApp } from '../../core/load';
import { createGraphqlEndpoint, type GraphqlEndpoint } from '../../runtime/graphql';
import { leafVariableCoercion } from '../../runtime/graphql/endpoint';
import { buildRuntimeModel } from '../../runtime/graphql/model';
import { buildExecutableSchema } from '../../runtime/graphql/resolvers';
import { openEmbeddedStore, type DocumentStore, type StoreCollection } from '../../runtime/store';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';
import { taskCollectionFiles } from './fixtures/graphql-apps';

interface TestUser { id: string }


function taskApp(): Record<string, unknown> {
  const files = baseApp();
  delete files['graphql/custom_resolvers/mutation_renameTask.json'];
  return { ...files, ...taskCollectionFiles() };
}

/** Counts the data accesses per user and the finds per collection, as a rules layer would see them. */
class RecordingAccess {
  readonly users: TestUser[] = [];
  readonly finds = new Map<string, number>();
  constructor(private readonly store: DocumentStore) {}

  collectionFor = (user: TestUser, dataSource: string, database: string, name: string): StoreCollection => {
    assert.equal(dataSource, 'mongodb-atlas');
    this.users.push(user);
    const inner = this.store.collection(database, name);
    const finds = this.finds;
    return Object.assign(Object.create(inner) as StoreCollection, {
      find(...args: Parameters<StoreCollection['find']>) {
        finds.set(name, (finds.get(name) ?? 0) + 1);
        return inner.find(...args);
      },
    });
  };
}

const alice: TestUser = { id: 'alice' };
const ids = {
  ann: new ObjectId('65f000000000000000000001'), bob: new ObjectId('65f000000000000000000002'), cy: new ObjectId('65f000000000000000000003'),
  t1: new ObjectId('5f1f1a3ae4b0c1a2b3c4d501'), t2: new ObjectId('5f1f1a3ae4b0c1a2b3c4d502'), t3: new ObjectId('5f1f1a3ae4b0c1a2b3c4d503'),
  t4: new ObjectId('5f1f1a3ae4b0c1a2b3c4d504'),
};

async function setup(options: { disableIntrospection?: boolean; maxQueryDepth?: number; maxBodyBytes?: number; documentCacheSize?: number } = {}) {
  const app = await loadApp(appFs(taskApp()), APP_ROOT);
  const generated = generateSchema(app);
  assert.deepEqual(generated.diagnostics.filter((d) => d.severity === 'error'), []);
  const store = await openEmbeddedStore();
  const access = new RecordingAccess(store);
  const endpoint = createGraphqlEndpoint<TestUser>({
    generated,
    collectionFor: access.collectionFor,
    runFunction: async () => { throw new Error('no resolvers in this app'); },
    disableIntrospection: options.disableIntrospection,
    limits: { maxQueryDepth: options.maxQueryDepth ?? 10, maxBodyBytes: options.maxBodyBytes, documentCacheSize: options.documentCacheSize },
  });
  const users = store.collection('todo', 'User');
  await users.insertMany([
    { _id: ids.ann, name: 'Ann', team: 'red' }, { _id: ids.bob, name: 'Bob', team: 'blue' }, { _id: ids.cy, name: 'Cy', team: 'red' },
  ]);
  const tasks = store.collection('todo', 'Task');
  await tasks.insertMany([
    {
      _id: ids.t1, name: 'Write spec', isComplete: false, priority: 3, dueDate: new Date('2024-05-01T00:00:00Z'), owner: ids.ann,
      watchers: [ids.bob, ids.cy], tags: ['docs', 'urgent'], checklist: [{ text: 'outline', done: true }, { text: 'draft', done: false }],
      meta: { source: 'email', views: Long.fromNumber(12) }, 'Assigned team': 'platform', cost: Decimal128.fromString('12.50'),
    },
    { _id: ids.t2, name: 'Review', isComplete: true, priority: 1, dueDate: new Date('2024-04-01T00:00:00Z'), owner: ids.bob, watchers: [ids.ann], tags: ['docs'] },
    { _id: ids.t3, name: 'Ship', isComplete: false, priority: 5, owner: ids.cy, checklist: [{ text: 'tag', done: false }] },
    { _id: ids.t4, name: 'Idea', priority: null },
  ]);
  return { endpoint, store, access, tasks, users };
}

async function run(endpoint: GraphqlEndpoint<TestUser>, query: string, variables?: Record<string, unknown>, operationName?: string) {
  const response = await endpoint.execute({ query, variables, operationName }, alice);
  return response;
}

/** Runs a query that must succeed and returns its data. */
async function data(endpoint: GraphqlEndpoint<TestUser>, query: string, variables?: Record<string, unknown>) {
  const response = await run(endpoint, query, variables);
  assert.equal(response.status, 200);
  assert.equal(response.body.errors, undefined, JSON.stringify(response.body.errors));
  return response.body.data as Record<string, any>;
}

async function taskNames(endpoint: GraphqlEndpoint<TestUser>, query: unknown): Promise<string[]> {
  const result = await data(endpoint, 'query($q: TaskQueryInput) { tasks(query: $q, sortBy: NAME_ASC) { name } }', { q: query });
  return result.tasks.map((t: { name: string }) => t.name);
}

describe('GraphQL endpoint: queries', () => {
  let endpoint: GraphqlEndpoint<TestUser>;
  let access: RecordingAccess;
  before(async () => ({ endpoint, access } = await setup()));

  test('a single document with scalar wire forms: ObjectId hex, DateTime RFC 3339, Long and Decimal as numbers, renamed keys', async () => {
    const result = await data(endpoint, `{ task(query: {name: "Write spec"}) {
      _id name isComplete priority dueDate tags AssignedTeam cost meta { source views } checklist { text done } } }`);
    assert.deepEqual(result.task, {
      _id: ids.t1.toHexString(), name: 'Write spec', isComplete: false, priority: 3, dueDate: '2024-05-01T00:00:00.000Z', tags: ['docs', 'urgent'],
      AssignedTeam: 'platform', cost: 12.5, meta: { source: 'email', views: 12 },
      checklist: [{ text: 'outline', done: true }, { text: 'draft', done: false }],
    });
  });

  test('no match gives null for the singular query and an empty list for the plural one', async () => {
    const result = await data(endpoint, '{ task(query: {name: "nope"}) { name } tasks(query: {name: "nope"}) { name } }');
    assert.deepEqual(result, { task: null, tasks: [] });
  });

  test('missing and null fields are null', async () => {
    const result = await data(endpoint, '{ task(query: {name: "Idea"}) { priority isComplete dueDate tags meta { source } owner { name } } }');
    assert.deepEqual(result.task, { priority: null, isComplete: null, dueDate: null, tags: null, meta: null, owner: null });
  });

  test('limit defaults to 100 and caps the result; sortBy orders ascending and descending', async () => {
    assert.equal((await data(endpoint, '{ tasks { _id } }')).tasks.length, 4);
    const limited = await data(endpoint, '{ tasks(limit: 2, sortBy: PRIORITY_DESC) { name priority } }');
    assert.deepEqual(limited.tasks, [{ name: 'Ship', priority: 5 }, { name: 'Write spec', priority: 3 }]);
    const byDate = await data(endpoint, '{ tasks(query: {dueDate_exists: true}, sortBy: DUEDATE_ASC) { name } }');
    assert.deepEqual(byDate.tasks.map((t: { name: string }) => t.name), ['Review', 'Write spec']);
    const byId = await data(endpoint, '{ tasks(sortBy: _ID_DESC, limit: 1) { name } }');
    assert.deepEqual(byId.tasks, [{ name: 'Idea' }]);
  });

  test('equality and comparison operators on scalars', async () => {
    assert.deepEqual(await taskNames(endpoint, { isComplete: false }), ['Ship', 'Write spec']);
    assert.deepEqual(await taskNames(endpoint, { isComplete_ne: false }), ['Idea', 'Review']);
    assert.deepEqual(await taskNames(endpoint, { priority_gt: 1 }), ['Ship', 'Write spec']);
    assert.deepEqual(await taskNames(endpoint, { priority_gte: 3, priority_lt: 5 }), ['Write spec']);
    assert.deepEqual(await taskNames(endpoint, { priority_lte: 1 }), ['Review']);
    assert.deepEqual(await taskNames(endpoint, { priority_in: [1, 5] }), ['Review', 'Ship']);
    assert.deepEqual(await taskNames(endpoint, { priority_nin: [1, 5] }), ['Idea', 'Write spec']);
    assert.deepEqual(await taskNames(endpoint, { name_gt: 'S' }), ['Ship', 'Write spec']);
    assert.deepEqual(await taskNames(endpoint, { dueDate_lt: '2024-04-15T00:00:00Z' }), ['Review']);
    assert.deepEqual(await taskNames(endpoint, { AssignedTeam: 'platform' }), ['Write spec']);
  });

  test('ObjectId arguments match stored ObjectIds', async () => {
    assert.deepEqual(await taskNames(endpoint, { _id: ids.t2.toHexString() }), ['Review']);
    assert.deepEqual(await taskNames(endpoint, { _id_in: [ids.t2.toHexString(), ids.t3.toHexString()] }), ['Review', 'Ship']);
    assert.deepEqual(await taskNames(endpoint, { owner_exists: true, _id_ne: ids.t1.toHexString() }), ['Review', 'Ship']);
  });

  test('_exists: false matches missing or null, true matches present values', async () => {
    assert.deepEqual(await taskNames(endpoint, { priority_exists: false }), ['Idea']);
    assert.deepEqual(await taskNames(endpoint, { priority_exists: true }), ['Review', 'Ship', 'Write spec']);
    assert.deepEqual(await taskNames(endpoint, { checklist_exists: false }), ['Idea', 'Review']);
  });

  test('AND and OR combine sub-queries, also on the same field', async () => {
    assert.deepEqual(await taskNames(endpoint, { OR: [{ priority: 1 }, { priority: 5 }] }), ['Review', 'Ship']);
    assert.deepEqual(await taskNames(endpoint, { AND: [{ priority_gt: 1 }, { priority_lt: 5 }] }), ['Write spec']);
    assert.deepEqual(await taskNames(endpoint, { priority_gt: 1, AND: [{ OR: [{ name: 'Ship' }, { name: 'Review' }] }] }), ['Ship']);
  });

  test('scalar arrays: _in matches when any element is listed, _nin when none is', async () => {
    assert.deepEqual(await taskNames(endpoint, { tags_in: ['urgent', 'later'] }), ['Write spec']);
    assert.deepEqual(await taskNames(endpoint, { tags_nin: ['urgent'] }), ['Idea', 'Review', 'Ship']);
    assert.deepEqual(await taskNames(endpoint, { tags: ['docs'] }), ['Review']);
  });

  test('embedded objects and arrays of embedded objects', async () => {
    assert.deepEqual(await taskNames(endpoint, { meta: { source: 'email' } }), ['Write spec']);
    assert.deepEqual(await taskNames(endpoint, { meta: { views_gt: 20 } }), []);
    assert.deepEqual(await taskNames(endpoint, { checklist: [{ text: 'draft', done: false }] }), ['Write spec']);
    // One element must match the whole sub-query: no element of "Write spec" is {text: outline, done: false}.
    assert.deepEqual(await taskNames(endpoint, { checklist: [{ text: 'outline', done: false }] }), []);
    assert.deepEqual(await taskNames(endpoint, { checklist_in: [{ text: 'tag' }, { text: 'outline' }] }), ['Ship', 'Write spec']);
    assert.deepEqual(await taskNames(endpoint, { checklist_nin: [{ done: true }] }), ['Idea', 'Review', 'Ship']);
  });

  test('relationship sub-queries match documents whose source key points at a matching foreign document', async () => {
    assert.deepEqual(await taskNames(endpoint, { owner: { team: 'red' } }), ['Ship', 'Write spec']);
    assert.deepEqual(await taskNames(endpoint, { owner: { name_in: ['Bob'] }, isComplete: true }), ['Review']);
    assert.deepEqual(await taskNames(endpoint, { watchers: [{ name: 'Bob' }, { name: 'Cy' }] }), ['Write spec']);
    assert.deepEqual(await taskNames(endpoint, { watchers_in: [{ name: 'Ann' }, { name: 'Cy' }] }), ['Review', 'Write spec']);
    assert.deepEqual(await taskNames(endpoint, { watchers_nin: [{ name: 'Ann' }] }), ['Idea', 'Ship', 'Write spec']);
    assert.deepEqual(await taskNames(endpoint, { owner_exists: false }), ['Idea']);
  });

  test('to-one and to-many relationships resolve, with one find per relationship for the whole list', async () => {
    access.finds.clear();
    const result = await data(endpoint, '{ tasks(sortBy: NAME_ASC) { name owner { name } watchers { name } } }');
    assert.deepEqual(result.tasks, [
      { name: 'Idea', owner: null, watchers: null },
      { name: 'Review', owner: { name: 'Bob' }, watchers: [{ name: 'Ann' }] },
      { name: 'Ship', owner: { name: 'Cy' }, watchers: null },
      { name: 'Write spec', owner: { name: 'Ann' }, watchers: [{ name: 'Bob' }, { name: 'Cy' }] },
    ]);
    assert.equal(access.finds.get('Task'), 1);
    // Owners and watchers are both User by _id: one shared loader, one batched query.
    assert.equal(access.finds.get('User'), 1);
  });

  test('sorting by a to-one relationship sorts by its stored link value', async () => {
    const result = await data(endpoint, '{ tasks(query: {owner_exists: true}, sortBy: OWNER_DESC) { name } }');
    assert.deepEqual(result.tasks.map((t: { name: string }) => t.name), ['Ship', 'Review', 'Write spec']);
  });

  test('every data access runs as the requesting user', async () => {
    access.users.length = 0;
    const bob = { id: 'bob' };
    const response = await endpoint.execute({ query: '{ tasks { owner { name } } }' }, bob);
    assert.equal(response.status, 200);
    assert.ok(access.users.length >= 2);
    assert.ok(access.users.every((u) => u === bob));
  });

  test('operationName picks the operation; fragments and aliases work', async () => {
    const query = `query A { task(query: {name: "Ship"}) { ...T } }
      query B { review: task(query: {name: "Review"}) { ...T } }
      fragment T on Task { name priority }`;
    assert.deepEqual((await run(endpoint, query, undefined, 'B')).body, { data: { review: { name: 'Review', priority: 1 } } });
    assert.deepEqual((await run(endpoint, query, undefined, 'A')).body, { data: { task: { name: 'Ship', priority: 5 } } });
    const ambiguous = await run(endpoint, query);
    assert.equal(ambiguous.status, 200);
    assert.equal(ambiguous.body.data, null);
    assert.match(ambiguous.body.errors![0].message, /operation name/i);
  });
});

describe('GraphQL endpoint: mutations', () => {
  let endpoint: GraphqlEndpoint<TestUser>;
  let tasks: StoreCollection;
  let users: StoreCollection;
  before(async () => ({ endpoint, tasks, users } = await setup()));

  test('insertOne converts scalars to BSON per field and returns the stored document', async () => {
    const id = '65f0000000000000000000aa';
    const result = await data(endpoint, `mutation($d: TaskInsertInput!) { insertOneTask(data: $d) { _id name dueDate cost meta { views } AssignedTeam } }`, {
      d: { _id: id, name: 'New', dueDate: '2024-06-01T10:00:00Z', cost: 1.25, meta: { source: 'ui', views: 7 }, AssignedTeam: 'core', owner: { link: ids.bob.toHexString() } },
    });
    assert.deepEqual(result.insertOneTask, { _id: id, name: 'New', dueDate: '2024-06-01T10:00:00.000Z', cost: 1.25, meta: { views: 7 }, AssignedTeam: 'core' });
    const stored = await tasks.findOne({ _id: new ObjectId(id) });
    assert.ok(stored);
    assert.ok(stored.owner instanceof ObjectId && stored.owner.equals(ids.bob));
    assert.ok(stored.dueDate instanceof Date);
    assert.ok(stored.cost instanceof Decimal128);
    assert.ok((stored.meta as { views: unknown }).views instanceof Long);
    assert.equal(stored['Assigned team'], 'core');
  });

  test('insertOne without an _id gets a generated ObjectId', async () => {
    const result = await data(endpoint, 'mutation { insertOneTask(data: {name: "No id"}) { _id name } }');
    assert.match(result.insertOneTask._id, /^[0-9a-f]{24}$/);
    assert.ok(await tasks.findOne({ _id: new ObjectId(result.insertOneTask._id) }));
  });

  test('RelationInput: create inserts foreign documents and wins over link', async () => {
    const result = await data(endpoint, `mutation { insertOneTask(data: {name: "Rel",
      owner: {link: "${ids.ann.toHexString()}", create: {name: "Dee", team: "green"}},
      watchers: {create: [{name: "Eve"}, {name: "Fay"}]}}) { owner { name team } watchers { name } } }`);
    assert.deepEqual(result.insertOneTask, { owner: { name: 'Dee', team: 'green' }, watchers: [{ name: 'Eve' }, { name: 'Fay' }] });
    assert.equal(await users.countDocuments({ name: { $in: ['Dee', 'Eve', 'Fay'] } }), 3);
  });

  test('RelationInput: link to-many stores the linked values', async () => {
    const result = await data(endpoint, `mutation { insertOneTask(data: {name: "Linked",
      watchers: {link: ["${ids.ann.toHexString()}", "${ids.cy.toHexString()}"]}}) { watchers { name } } }`);
    assert.deepEqual(result.insertOneTask.watchers, [{ name: 'Ann' }, { name: 'Cy' }]);
    const stored = await tasks.findOne({ name: 'Linked' });
    assert.ok(Array.isArray(stored!.watchers) && (stored!.watchers as unknown[]).every((w) => w instanceof ObjectId));
  });

  test('insertMany returns the inserted ids', async () => {
    const result = await data(endpoint, 'mutation { insertManyTasks(data: [{name: "M1", priority: 8}, {name: "M2", priority: 8}]) { insertedIds } }');
    assert.equal(result.insertManyTasks.insertedIds.length, 2);
    const stored = await tasks.find({ priority: 8 }, { sort: { name: 1 } });
    assert.deepEqual(stored.map((d) => d._id!.toString()), result.insertManyTasks.insertedIds);
  });

  test('updateOne applies set, _inc and _unset to the first match and returns the updated document', async () => {
    const result = await data(endpoint, `mutation { updateOneTask(query: {name: "Write spec"},
      set: {priority_inc: 2, isComplete: true, tags_unset: true, meta: {source: "chat"}}) { name priority isComplete tags meta { source views } } }`);
    assert.deepEqual(result.updateOneTask, { name: 'Write spec', priority: 5, isComplete: true, tags: null, meta: { source: 'chat', views: 12 } });
    const stored = await tasks.findOne({ name: 'Write spec' });
    assert.equal('tags' in stored!, false);
  });

  test('updateOne with no match returns null; updateMany reports matched and modified counts', async () => {
    assert.deepEqual(await data(endpoint, 'mutation { updateOneTask(query: {name: "nope"}, set: {priority: 1}) { name } }'), { updateOneTask: null });
    const result = await data(endpoint, 'mutation { updateManyTasks(query: {priority: 8}, set: {priority_inc: 1}) { matchedCount modifiedCount } }');
    assert.deepEqual(result.updateManyTasks, { matchedCount: 2, modifiedCount: 2 });
    assert.equal(await tasks.countDocuments({ priority: 9 }), 2);
    const unchanged = await data(endpoint, 'mutation { updateManyTasks(query: {priority: 9}, set: {priority: 9}) { matchedCount modifiedCount } }');
    assert.deepEqual(unchanged.updateManyTasks, { matchedCount: 2, modifiedCount: 0 });
  });

  test('updateOne can relink a relationship', async () => {
    const result = await data(endpoint, `mutation { updateOneTask(query: {name: "Ship"}, set: {owner: {link: "${ids.ann.toHexString()}"}}) { owner { name } } }`);
    assert.deepEqual(result.updateOneTask.owner, { name: 'Ann' });
  });

  test('replaceOne replaces the first match; without a match it returns null', async () => {
    const result = await data(endpoint, 'mutation { replaceOneTask(query: {name: "M1"}, data: {name: "M1 replaced"}) { name priority } }');
    assert.deepEqual(result.replaceOneTask, { name: 'M1 replaced', priority: null });
    assert.deepEqual(await data(endpoint, 'mutation { replaceOneTask(query: {name: "nope"}, data: {name: "x"}) { name } }'), { replaceOneTask: null });
    assert.equal(await tasks.countDocuments({ name: 'x' }), 0);
  });

  test('upsertOne replaces a match or inserts the data', async () => {
    const replaced = await data(endpoint, 'mutation { upsertOneTask(query: {name: "M2"}, data: {name: "M2 up", priority: 1}) { name priority } }');
    assert.deepEqual(replaced.upsertOneTask, { name: 'M2 up', priority: 1 });
    const before = await tasks.countDocuments({});
    const inserted = await data(endpoint, 'mutation { upsertOneTask(query: {name: "Fresh"}, data: {name: "Fresh", priority: 4}) { name priority } }');
    assert.deepEqual(inserted.upsertOneTask, { name: 'Fresh', priority: 4 });
    assert.equal(await tasks.countDocuments({}), before + 1);
  });

  test('deleteOne returns the deleted document; deleteMany counts', async () => {
    const deleted = await data(endpoint, 'mutation { deleteOneTask(query: {name: "Fresh"}) { name priority } }');
    assert.deepEqual(deleted.deleteOneTask, { name: 'Fresh', priority: 4 });
    assert.equal(await tasks.countDocuments({ name: 'Fresh' }), 0);
    const many = await data(endpoint, 'mutation { deleteManyTasks(query: {name_in: ["M1 replaced", "M2 up"]}) { deletedCount } }');
    assert.deepEqual(many.deleteManyTasks, { deletedCount: 2 });
  });

  test('deleteOne requires a query', async () => {
    const response = await run(endpoint, 'mutation { deleteOneTask { name } }');
    assert.equal(response.body.data, null);
    assert.match(response.body.errors![0].message, /argument "query"/);
  });

  test('store failures are errors in the platform message form with data null', async () => {
    const response = await run(endpoint, `mutation { insertOneTask(data: {_id: "${ids.t2.toHexString()}", name: "dup"}) { _id } }`);
    assert.equal(response.status, 200);
    assert.equal(response.body.data, null);
    const [error] = response.body.errors!;
    assert.match(error.message, /^reason=".*duplicate key.*"; code="MongoDBError"; untrusted=".*"; details=map\[\]$/);
    assert.deepEqual(error.path, ['insertOneTask']);
    assert.deepEqual(error.locations, [{ line: 1, column: 12 }]);
  });

  test('deleteMany without a query deletes every document', async () => {
    const count = await tasks.countDocuments({});
    const result = await data(endpoint, 'mutation { deleteManyTasks { deletedCount } }');
    assert.deepEqual(result.deleteManyTasks, { deletedCount: count });
    assert.equal(await tasks.countDocuments({}), 0);
  });
});

describe('GraphQL endpoint: rule errors from the data layer', () => {
  test('an error with an errorCode is rendered as reason/code/untrusted and nulls the data', async () => {
    const app = await loadApp(appFs(taskApp()), APP_ROOT);
    const store = await openEmbeddedStore();
    const denied = Object.assign(new Error('no rule exists for namespace "todo.Task"'), { errorCode: 'NoMatchingRuleFound', untrusted: 'read not permitted' });
    const endpoint = createGraphqlEndpoint<TestUser>({
      generated: generateSchema(app),
      collectionFor: (_user, _ds, database, name) => {
        const inner = store.collection(database, name);
        if (name !== 'Task') return inner;
        return Object.assign(Object.create(inner) as StoreCollection, { find: async () => { throw denied; }, findOne: async () => { throw denied; } });
      },
      runFunction: async () => undefined,
      limits: { maxQueryDepth: 10 },
    });
    const response = await endpoint.execute({ query: '{\n  task { name }\n}' }, alice);
    assert.deepEqual(response, {
      status: 200,
      body: {
        data: null,
        errors: [{
          message: 'reason="no rule exists for namespace \\"todo.Task\\""; code="NoMatchingRuleFound"; untrusted="read not permitted"; details=map[]',
          locations: [{ line: 2, column: 3 }], path: ['task'],
        }],
      },
    });
  });
});

describe('GraphQL endpoint: requests, limits and cache', () => {
  let endpoint: GraphqlEndpoint<TestUser>;
  before(async () => ({ endpoint } = await setup({ maxQueryDepth: 3, maxBodyBytes: 2048 })));

  test('malformed bodies are 400 with a message saying what is wrong', async () => {
    const cases: [unknown, RegExp][] = [
      ['text', /JSON object/], [[{ query: '{ tasks { name } }' }], /JSON object/], [null, /JSON object/],
      [{}, /no "query"/], [{ qeury: '{ tasks { name } }' }, /no "query"/],
      [{ query: 5 }, /"query" must be a string, not a number/], [{ query: { obj: 'ect' } }, /not an object/], [{ query: ['x'] }, /not an array/],
      [{ query: '{ __typename }', variables: 'x' }, /"variables" must be an object, not a string/],
      [{ query: '{ __typename }', variables: [1] }, /"variables" must be an object, not an array/],
      [{ query: '{ __typename }', operationName: 3 }, /"operationName" must be a string/],
      [{ query: '{ __typename }', extensions: 'x' }, /"extensions" must be an object/],
    ];
    for (const [body, message] of cases) {
      const response = await endpoint.execute(body, alice);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.body.data, null);
      assert.match(response.body.errors![0].message, message);
    }
  });

  test('null variables, operationName and extensions mean absent', async () => {
    const response = await endpoint.execute({ query: 'query Q { __typename }', variables: null, operationName: null, extensions: null }, alice);
    assert.deepEqual(response, { status: 200, body: { data: { __typename: 'Query' } } });
    const named = await endpoint.execute({ query: 'query Q { __typename }', operationName: 'Q', extensions: { some: 'value' } }, alice);
    assert.deepEqual(named, { status: 200, body: { data: { __typename: 'Query' } } });
  });

  test('raw bodies: size limit 413, invalid JSON 400, empty 400, valid executes', async () => {
    const big = JSON.stringify({ query: `{ tasks { name } } # ${'x'.repeat(3000)}` });
    const tooBig = await endpoint.executeRaw(big, alice);
    assert.equal(tooBig.status, 413);
    assert.match(tooBig.body.errors![0].message, /limited to 2048 bytes/);
    const invalid = await endpoint.executeRaw('{ "not a JSON', alice);
    assert.equal(invalid.status, 400);
    assert.match(invalid.body.errors![0].message, /not valid JSON/);
    assert.equal((await endpoint.executeRaw('', alice)).status, 400);
    const ok = await endpoint.executeRaw(Buffer.from(JSON.stringify({ query: '{ task(query: {name: "Ship"}) { priority } }' })), alice);
    assert.deepEqual(ok, { status: 200, body: { data: { task: { priority: 5 } } } });
  });

  test('syntax and validation errors are 200 with data null and locations', async () => {
    const syntax = await endpoint.execute({ query: '{' }, alice);
    assert.equal(syntax.status, 200);
    assert.equal(syntax.body.data, null);
    assert.match(syntax.body.errors![0].message, /Syntax Error/);
    const unknown = await endpoint.execute({ query: '{ tasks { xyzzy } }' }, alice);
    assert.equal(unknown.status, 200);
    assert.deepEqual(unknown.body, { data: null, errors: [{ message: 'Cannot query field "xyzzy" on type "Task".', locations: [{ line: 1, column: 11 }] }] });
  });

  test('bad variables are reported without executing', async () => {
    const wrongType = await endpoint.execute({ query: 'query($p: Int) { tasks(query: {priority: $p}) { name } }', variables: { p: 'high' } }, alice);
    assert.equal(wrongType.status, 200);
    assert.equal(wrongType.body.data, null);
    assert.match(wrongType.body.errors![0].message, /\$p.*Int/);
    const badId = await endpoint.execute({ query: 'query($id: ObjectId) { task(query: {_id: $id}) { name } }', variables: { id: 'not-hex' } }, alice);
    assert.equal(badId.body.data, null);
    assert.match(badId.body.errors![0].message, /ObjectId/);
    const missing = await endpoint.execute({ query: 'mutation($d: TaskInsertInput!) { insertOneTask(data: $d) { name } }', variables: {} }, alice);
    assert.equal(missing.body.data, null);
    assert.match(missing.body.errors![0].message, /\$d/);
    const badField = await endpoint.execute({ query: 'query($q: TaskQueryInput) { tasks(query: $q) { name } }', variables: { q: { bogus_gt: 1 } } }, alice);
    assert.equal(badField.body.data, null);
    assert.match(badField.body.errors![0].message, /bogus_gt/);
  });

  test('the depth limit rejects deeper operations, counting fragment spreads', async () => {
    assert.equal((await endpoint.execute({ query: '{ tasks { owner { name } } }' }, alice)).body.errors, undefined);
    const deep = await endpoint.execute({ query: '{ tasks { checklist { text } meta { source } owner { name } } }' }, alice);
    assert.equal(deep.body.errors, undefined);
    const tooDeep = await endpoint.execute({
      query: 'query Deep { tasks { ...F } } fragment F on Task { owner { ... on User { name } } watchers { _id } } ', variables: {},
    }, alice);
    assert.equal(tooDeep.body.errors, undefined, 'fragments add no level of their own');
    const app = await loadApp(appFs(taskApp()), APP_ROOT);
    const shallow = createGraphqlEndpoint<TestUser>({
      generated: generateSchema(app), collectionFor: () => { throw new Error('must not execute'); }, runFunction: async () => undefined, limits: { maxQueryDepth: 2 },
    });
    const rejected = await shallow.execute({ query: 'query Deep { tasks { ...F } } fragment F on Task { owner { name } }' }, alice);
    assert.equal(rejected.status, 200);
    assert.equal(rejected.body.data, null);
    assert.equal(rejected.body.errors![0].message, 'The operation "Deep" nests fields 3 levels deep; the limit is 2.');
  });

  test('introspection works by default and is rejected when disabled; __typename stays allowed', async () => {
    const open = await endpoint.execute({ query: '{ __schema { queryType { name } } }' }, alice);
    assert.deepEqual(open.body, { data: { __schema: { queryType: { name: 'Query' } } } });
    const { endpoint: closed } = await setup({ disableIntrospection: true });
    for (const query of ['{ __schema { queryType { name } } }', '{ __type(name: "Task") { name } }']) {
      const response = await closed.execute({ query }, alice);
      assert.equal(response.body.data, null);
      assert.match(response.body.errors![0].message, /introspection has been disabled/);
    }
    assert.deepEqual((await closed.execute({ query: '{ __typename }' }, alice)).body, { data: { __typename: 'Query' } });
  });

  test('the document cache parses, validates and compiles a query text once', async () => {
    const { endpoint: fresh } = await setup({ documentCacheSize: 2 });
    const query = 'query($n: String) { tasks(query: {name: $n}) { name priority } }';
    const first = await fresh.execute({ query, variables: { n: 'Ship' } }, alice);
    const second = await fresh.execute({ query, variables: { n: 'Review' } }, alice);
    assert.deepEqual(first.body, { data: { tasks: [{ name: 'Ship', priority: 5 }] } });
    assert.deepEqual(second.body, { data: { tasks: [{ name: 'Review', priority: 1 }] } });
    assert.deepEqual({ ...fresh.stats }, { parsed: 1, compiled: 1, cacheHits: 1 });
    // Invalid documents are cached too, and the cache is bounded: the least recently used text leaves.
    await fresh.execute({ query: '{ nope }' }, alice);
    await fresh.execute({ query: '{ nope }' }, alice);
    assert.deepEqual({ ...fresh.stats }, { parsed: 2, compiled: 1, cacheHits: 2 });
    await fresh.execute({ query: '{ __typename }' }, alice);
    await fresh.execute({ query }, alice);
    assert.equal(fresh.stats.parsed, 4, 'the first query was evicted by the two newer texts');
  });
});

describe('GraphQL endpoint: stored BSON undefined', () => {
  test('a field holding BSON undefined is served as {} while a missing one is null', async () => {
    const app = await loadApp(appFs(taskApp()), APP_ROOT);
    const endpoint = createGraphqlEndpoint<TestUser>({
      generated: generateSchema(app),
      collectionFor: () => ({ findOne: async () => ({ _id: ids.t1, name: 'Odd', priority: undefined, meta: { source: undefined } }) }) as unknown as StoreCollection,
      runFunction: async () => undefined,
      limits: { maxQueryDepth: 10 },
    });
    const response = await endpoint.execute({ query: '{ task { name priority isComplete meta { source } } }' }, alice);
    assert.deepEqual(response.body, { data: { task: { name: 'Odd', priority: {}, isComplete: null, meta: { source: {} } } } });
  });
});

describe('GraphQL endpoint: variable coercion', () => {
  test('the fast path for scalar and enum variables agrees with graphql-js, or leaves the value to it', async () => {
    const app = await loadApp(appFs(taskApp()), APP_ROOT);
    const schema = buildExecutableSchema(buildRuntimeModel(generateSchema(app)));
    const operation = parseGraphql(
      'query($s: String!, $i: Int, $f: Float, $b: Boolean, $oid: ObjectId, $d: DateTime, $l: Long, $e: TaskSortByInput) { tasks { _id } }',
    ).definitions[0] as OperationDefinitionNode;
    const definitions = operation.variableDefinitions!;
    const coerce = leafVariableCoercion(schema, definitions);
    assert.ok(coerce, 'every variable is a leaf type without a default');
    const anyJson = fc.oneof(
      fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(2 ** 31), fc.constant(-(2 ** 31) - 1),
      fc.constantFrom('65f000000000000000000001', '2024-05-01T00:00:00Z', '12', 'NAME_ASC', 'nope', '', '1.5'),
      fc.array(fc.integer(), { maxLength: 2 }), fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
    );
    // Mostly values of the variable's own type, so most sets take the fast path; sometimes anything.
    const mostly = (own: fc.Arbitrary<unknown>) => fc.oneof({ arbitrary: own, weight: 4 }, { arbitrary: anyJson, weight: 1 });
    const variableSets = fc.record({
      s: mostly(fc.string()), i: mostly(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })), f: mostly(fc.double({ noNaN: true, noDefaultInfinity: true })),
      b: mostly(fc.boolean()), oid: mostly(fc.constantFrom('65f000000000000000000001', '5f1f1a3ae4b0c1a2b3c4d501')),
      d: mostly(fc.constantFrom('2024-05-01T00:00:00Z', '2024-05-01T00:00:00.123Z', '2024-05-01')), l: mostly(fc.constantFrom('12', 12, '-9007199254740993')),
      e: mostly(fc.constantFrom('NAME_ASC', 'NAME_DESC', '_ID_ASC')),
    }, { requiredKeys: ['s'] });
    let fast = 0;
    fc.assert(fc.property(variableSets, (variables) => {
      const quick = coerce!(variables);
      const reference = getVariableValues(schema, definitions, variables);
      if (quick === undefined) return;
      fast++;
      assert.equal(reference.errors, undefined, `graphql-js refuses ${JSON.stringify(variables)}`);
      assert.deepEqual(quick, reference.coerced);
    }), { numRuns: 2000 });
    assert.ok(fast > 200, `only ${fast} variable sets took the fast path`);
    assert.equal(leafVariableCoercion(schema, parseGraphql('query($q: TaskQueryInput) { tasks { _id } }').definitions
      .map((d) => (d as OperationDefinitionNode).variableDefinitions![0])), undefined, 'input objects go to graphql-js');
  });
});
