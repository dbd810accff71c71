// Custom resolvers through the GraphQL endpoint with the real function runner: every input format
// (none, scalar, scalar list, generated, generated list, custom) and payload format (DefaultPayload,
// scalar, scalar list, generated, generated list, custom object, custom list), the (input, source) /
// (source) calling convention, payload conformance, and failing functions.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ObjectId } from 'bson';
import { generateSchema } from '../../core/graphql';
import { loadApp } from '../../core/load';
import { createFunctionRunner, type FunctionRunner, type FunctionUser } from '../../runtime/functions';
import { createGraphqlEndpoint, type GraphqlEndpoint } from '../../runtime/graphql';
import { openEmbeddedStore, type DocumentStore } from '../../runtime/store';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';
import { objectSchema, resolver } from './fixtures/graphql-apps';

const ds = 'data_sources/mongodb-atlas/todo';
const resolverDir = 'graphql/custom_resolvers';

const functions: Record<string, string> = {
  taskSummary: 'exports = async ({ owner, status }, source) => ({ owner, status, count: owner.length + status.length, sourceType: typeof source });',
  renameTask: `exports = async ({ taskId, name }) => context.services.get('mongodb-atlas').db('todo').collection('Task')
    .findOneAndUpdate({ _id: taskId }, { $set: { name } }, { returnNewDocument: true });`,
  taskHistory: 'exports = async (source) => [{ at: "2024-05-01", note: "viewed " + source.name }, { at: "2024-05-02", note: "owner " + source.owner.toHexString() }];',
  archiveCompletedTasks: 'exports = async () => 42;',
  whoAmI: 'exports = async (...args) => context.user.id + " with " + args.length + " arguments";',
  double: 'exports = async (n, source) => n * 2 + (source === undefined ? 0 : 1000);',
  reverse: 'exports = async (words) => words.slice().reverse();',
  describeInsert: 'exports = async (input) => input._id._bsontype + " " + input.name + " " + Object.prototype.toString.call(input.dueDate);',
  namesOf: 'exports = async (inputs) => inputs.map((t) => t.name.toUpperCase());',
  topTasks: 'exports = async () => [{ _id: "65f0000000000000000000aa", name: "Top", owner: new BSON.ObjectId("65f000000000000000000001") }, { _id: new BSON.ObjectId(), name: "Second" }];',
  stats: 'exports = async () => ({ total: 3, "by owner": [{ name: "Ann", count: new BSON.Long(2) }], ignored: true });',
  risks: 'exports = async () => [{ level: "high" }, { level: "low" }];',
  label: 'exports = async (prefix, source) => prefix + source.name;',
  brokenSummary: 'exports = async () => ({ owner: 5, status: "x", count: 1 });',
  missingCount: 'exports = async () => ({ owner: "a", status: "b" });',
  notAnInt: 'exports = async () => "seven";',
  notAList: 'exports = async () => ({ level: "high" });',
  badTask: 'exports = async () => ({ _id: "nope", name: "x" });',
  boom: 'exports = async () => { throw new Error("the resolver blew up"); };',
  spin: 'exports = async () => { for (;;) {} };',
};



function resolverApp(): Record<string, unknown> {
  const files = baseApp();
  for (const key of Object.keys(files)) if (key.startsWith('functions/') || key.startsWith(resolverDir)) delete files[key];
  const summary = objectSchema('TaskSummary', { owner: { bsonType: 'string' }, status: { bsonType: 'string' }, count: { bsonType: 'int' } }, ['owner', 'status', 'count']);
  const resolvers: Record<string, unknown> = {
    taskSummary: resolver('Query', 'taskSummary', 'taskSummary',
      ['custom', objectSchema('TaskSummaryInput', { owner: { bsonType: 'string' }, status: { bsonType: 'string' } }, ['owner', 'status'])], ['custom', summary]),
    renameTask: resolver('Mutation', 'renameTask', 'renameTask',
      ['custom', objectSchema('RenameTaskInput', { taskId: { bsonType: 'objectId' }, name: { bsonType: 'string' } }, ['taskId', 'name'])], ['generated', 'Task']),
    history: resolver('Task', 'history', 'taskHistory', [''], ['custom', {
      bsonType: 'array', items: objectSchema('TaskHistoryEntry', { at: { bsonType: 'string' }, note: { bsonType: 'string' } }, ['at', 'note']),
    }]),
    archiveCompletedTasks: resolver('Mutation', 'archiveCompletedTasks', 'archiveCompletedTasks', [''], ['']),
    whoAmI: resolver('Query', 'whoAmI', 'whoAmI', [''], ['scalar', 'string']),
    double: resolver('Query', 'double', 'double', ['scalar', 'int'], ['scalar', 'int']),
    reverse: resolver('Query', 'reverse', 'reverse', ['scalar-list', 'string'], ['scalar-list', 'string']),
    describeInsert: resolver('Query', 'describeInsert', 'describeInsert', ['generated', 'TaskInsertInput'], ['scalar', 'string']),
    namesOf: resolver('Query', 'namesOf', 'namesOf', ['generated-list', 'TaskInsertInput'], ['scalar-list', 'string']),
    topTasks: resolver('Query', 'topTasks', 'topTasks', [''], ['generated-list', 'Task']),
    stats: resolver('Query', 'stats', 'stats', [''], ['custom', objectSchema('TaskStats', {
      total: { bsonType: 'int' }, 'by owner': { bsonType: 'array', items: { bsonType: 'object', properties: { name: { bsonType: 'string' }, count: { bsonType: 'long' } } } },
    })]),
    risks: resolver('Query', 'risks', 'risks', [''], ['custom', { title: 'RisksPayload', bsonType: 'array', items: { bsonType: 'object', properties: { level: { bsonType: 'string' } } } }]),
    label: resolver('Task', 'label', 'label', ['scalar', 'string'], ['scalar', 'string']),
    brokenSummary: resolver('Query', 'brokenSummary', 'brokenSummary', [''], ['custom', objectSchema('BrokenSummary', summary.properties, summary.required)]),
    missingCount: resolver('Query', 'missingCount', 'missingCount', [''], ['custom', objectSchema('MissingCount', summary.properties, summary.required)]),
    notAnInt: resolver('Query', 'notAnInt', 'notAnInt', [''], ['scalar', 'int']),
    notAList: resolver('Query', 'notAList', 'notAList', [''], ['custom', { bsonType: 'array', items: objectSchema('Risk', { level: { bsonType: 'string' } }) }]),
    badTask: resolver('Query', 'badTask', 'badTask', [''], ['generated', 'Task']),
    boom: resolver('Query', 'boom', 'boom', [''], ['scalar', 'string']),
    spin: resolver('Query', 'spin', 'spin', [''], ['scalar', 'string']),
  };
  return {
    ...files,
    'functions/config.json': Object.keys(functions).map((name) => ({ name, private: false })),
    ...Object.fromEntries(Object.entries(functions).map(([name, source]) => [`functions/${name}.js`, source])),
    ...Object.fromEntries(Object.entries(resolvers).map(([name, config]) => [`${resolverDir}/${name}.json`, config])),
    [`${ds}/Task/schema.json`]: objectSchema('Task', {
      _id: { bsonType: 'objectId' }, name: { bsonType: 'string' }, owner: { bsonType: 'objectId' }, dueDate: { bsonType: 'date' },
    }, ['_id', 'name']),
    [`${ds}/Task/relationships.json`]: { owner: { ref: '#/relationship/mongodb-atlas/todo/User', source_key: 'owner', foreign_key: '_id', is_list: false } },
  };
}

const ann = new ObjectId('65f000000000000000000001');
const taskId = new ObjectId('5f1f1a3ae4b0c1a2b3c4d5e6');
const user: FunctionUser = { id: 'user-1', type: 'normal', data: {}, custom_data: {}, identities: [] };

describe('GraphQL custom resolvers', () => {
  let endpoint: GraphqlEndpoint<FunctionUser>;
  let runner: FunctionRunner;
  let store: DocumentStore;

  before(async () => {
    const app = await loadApp(appFs(resolverApp()), APP_ROOT);
    const generated = generateSchema(app);
    assert.deepEqual(generated.diagnostics.filter((d) => d.severity === 'error').map((d) => d.message), []);
    store = await openEmbeddedStore();
    await store.collection('todo', 'User').insertOne({ _id: ann, name: 'Ann' });
    await store.collection('todo', 'Task').insertOne({ _id: taskId, name: 'Write spec', owner: ann });
    runner = createFunctionRunner({
      loadSource: (name) => {
        const file = app.functions.get(name)?.sourceFile;
        return file && { source: file.text, path: file.path };
      },
      host: {
        async serviceAction(_service, action, args) {
          assert.equal(action, 'findOneAndUpdate');
          const { database, collection, filter, update, returnNewDocument } = args as Record<string, never>;
          return store.collection(database, collection).findOneAndUpdate(filter, update, { returnNewDocument });
        },
        values: { get: () => undefined },
        environment: { tag: '', values: {} },
        executeFunction: (name, args, ctx) => runner.run(name, args, ctx),
      },
      timeoutMs: 2000,
      poolSize: 2,
    });
    endpoint = createGraphqlEndpoint<FunctionUser>({
      generated,
      collectionFor: (_user, _source, database, name) => store.collection(database, name),
      runFunction: (name, args, caller) => runner.run(name, args, { user: caller }),
      limits: { maxQueryDepth: 10 },
    });
  });

  after(() => runner.close());

  async function data(query: string, variables?: Record<string, unknown>) {
    const response = await endpoint.execute({ query, variables }, user);
    assert.equal(response.status, 200);
    assert.equal(response.body.errors, undefined, JSON.stringify(response.body.errors));
    return response.body.data as Record<string, any>;
  }

  async function failure(query: string) {
    const response = await endpoint.execute({ query }, user);
    assert.equal(response.status, 200);
    assert.equal(response.body.data, null);
    assert.equal(response.body.errors!.length, 1);
    return response.body.errors![0];
  }

  test('custom input and custom payload: the function receives (input) with source absent on Query', async () => {
    const result = await data('query($i: TaskSummaryInput) { taskSummary(input: $i) { owner status count } }', { i: { owner: 'ann', status: 'open' } });
    assert.deepEqual(result.taskSummary, { owner: 'ann', status: 'open', count: 7 });
  });

  test('custom input with an ObjectId reaches the function as a BSON ObjectId; generated payload resolves like a document', async () => {
    const result = await data(`mutation { renameTask(input: {taskId: "${taskId.toHexString()}", name: "Renamed"}) { _id name owner { name } } }`);
    assert.deepEqual(result.renameTask, { _id: taskId.toHexString(), name: 'Renamed', owner: { name: 'Ann' } });
    assert.equal((await store.collection('todo', 'Task').findOne({ _id: taskId }))!.name, 'Renamed');
  });

  test('computed field without input: the function receives (source), the parent document', async () => {
    const result = await data('{ tasks { name history { at note } } }');
    assert.deepEqual(result.tasks, [{
      name: 'Renamed', history: [{ at: '2024-05-01', note: 'viewed Renamed' }, { at: '2024-05-02', note: `owner ${ann.toHexString()}` }],
    }]);
  });

  test('computed field with input: the function receives (input, source)', async () => {
    const result = await data('{ task { label(input: "Task: ") } }');
    assert.deepEqual(result.task, { label: 'Task: Renamed' });
  });

  test('DefaultPayload resolves status "complete" whatever the function returns', async () => {
    assert.deepEqual(await data('mutation { archiveCompletedTasks { status } }'), { archiveCompletedTasks: { status: 'complete' } });
  });

  test('no input: the function is called with no arguments and as the requesting user', async () => {
    assert.deepEqual(await data('{ whoAmI }'), { whoAmI: 'user-1 with 0 arguments' });
  });

  test('scalar input and payload', async () => {
    assert.deepEqual(await data('{ double(input: 21) }'), { double: 42 });
  });

  test('scalar-list input and payload', async () => {
    assert.deepEqual(await data('{ reverse(input: ["a", "b", "c"]) }'), { reverse: ['c', 'b', 'a'] });
  });

  test('generated input: shaped like the input type, with ObjectId and DateTime converted', async () => {
    const result = await data(`{ describeInsert(input: {_id: "${taskId.toHexString()}", name: "x", dueDate: "2024-01-01T00:00:00Z"}) }`);
    assert.deepEqual(result, { describeInsert: 'ObjectId x [object Date]' });
  });

  test('generated-list input', async () => {
    const result = await data(`{ namesOf(input: [{_id: "${taskId.toHexString()}", name: "a"}, {_id: "${ann.toHexString()}", name: "b"}]) }`);
    assert.deepEqual(result, { namesOf: ['A', 'B'] });
  });

  test('generated-list payload: documents with relationships resolved', async () => {
    const result = await data('{ topTasks { _id name owner { name } } }');
    assert.equal(result.topTasks.length, 2);
    assert.deepEqual(result.topTasks[0], { _id: '65f0000000000000000000aa', name: 'Top', owner: { name: 'Ann' } });
    assert.match(result.topTasks[1]._id, /^[0-9a-f]{24}$/);
    assert.equal(result.topTasks[1].owner, null);
  });

  test('custom object payload: singularised title, sanitised keys, nested types, Long as a number, extra keys dropped', async () => {
    const result = await data('{ stats { __typename total ByOwner { __typename name count } } }');
    assert.deepEqual(result.stats, { __typename: 'TaskStat', total: 3, ByOwner: [{ __typename: 'TaskStatByOwner', name: 'Ann', count: 2 }] });
  });

  test('custom list payload with the title on the array: [<Title>Item]', async () => {
    const result = await data('{ risks { __typename level } }');
    assert.deepEqual(result.risks, [{ __typename: 'RisksPayloadItem', level: 'high' }, { __typename: 'RisksPayloadItem', level: 'low' }]);
  });

  test('a result that does not fit the payload type is an error naming the resolver and the misfit', async () => {
    const cases: [string, RegExp][] = [
      ['{ brokenSummary { owner } }', /Query\.brokenSummary \(function \\"brokenSummary\\"\).*BrokenSummary: the result\.owner: expected String, got 5/],
      ['{ missingCount { owner } }', /Query\.missingCount .*the result\.count: required field is missing/],
      ['{ notAnInt }', /Query\.notAnInt .*payload type Int: the result: expected Int, got \\"seven\\"/],
      ['{ notAList { level } }', /Query\.notAList .*payload type \[Risk\]: the result: expected a list/],
      ['{ badTask { name } }', /Query\.badTask .*payload type Task: the result\._id: expected ObjectId, got \\"nope\\"/],
    ];
    for (const [query, message] of cases) {
      const error = await failure(query);
      assert.match(error.message, /^reason=".*"; code="FunctionExecutionError"; untrusted=".*"; details=map\[\]$/);
      assert.match(error.message, message);
      assert.deepEqual(error.path, [query.match(/\{ (\w+)/)![1]]);
    }
  });

  test('a throwing function is a FunctionExecutionError entry with data null', async () => {
    const error = await failure('{ boom }');
    assert.match(error.message, /^reason="[^"]*the resolver blew up[^"]*"; code="FunctionExecutionError"/);
    assert.deepEqual(error.path, ['boom']);
    assert.deepEqual(error.locations, [{ line: 1, column: 3 }]);
  });

  test('a looping function is stopped at the time limit', async () => {
    const error = await failure('{ spin }');
    assert.match(error.message, /code="ExecutionTimeLimitExceeded"/);
    // The runner replaced the stopped worker: later calls still work.
    assert.deepEqual(await data('{ double(input: 2) }'), { double: 4 });
  });

  test('one failing computed field nulls the whole response', async () => {
    const response = await endpoint.execute({ query: '{ whoAmI boom }' }, user);
    assert.equal(response.body.data, null);
    assert.equal(response.body.errors!.length, 1);
  });
});
