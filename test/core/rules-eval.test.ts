import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, Decimal128, Double, Int32, Long, ObjectId, UUID } from 'bson';
import { Query } from 'mingo';
import { canEvaluate, evaluateExpression, expandExpressionToQuery, matchNothingQuery, type EvaluationEnv, type RuleEvaluationError } from '../../core/rules';

const USER_ID = '5f1f0a1b2c3d4e5f60718293';
const OTHER_ID = '60c0ffee0000000000000001';

function user(custom_data?: Record<string, unknown>, extra: Partial<EvaluationEnv['user']> = {}): EvaluationEnv['user'] {
  return { id: USER_ID, type: 'normal', data: { email: 'ada@example.com' }, ...(custom_data ? { custom_data } : {}), identities: [], ...extra };
}

/** The env of a sync BIND (rules-and-sync §4): user, partition, values, environment. */
function bind(partition: unknown, custom_data?: Record<string, unknown>): EvaluationEnv {
  return { user: user(custom_data), partition, values: {}, environment: { tag: 'development', values: {} } };
}

describe('common shapes of rules-and-sync §4', () => {
  test('true / false: everyone / nobody', async () => {
    assert.equal(await evaluateExpression(true, bind('any')), true);
    assert.equal(await evaluateExpression(false, bind('any')), false);
  });

  test('{"%%true": true}: everyone', async () => {
    assert.equal(await evaluateExpression({ '%%true': true }, bind('any')), true);
    assert.equal(await evaluateExpression({ '%%true': false }, bind('any')), false);
    assert.equal(await evaluateExpression({ '%%false': false }, bind('any')), true);
  });

  test('{"%%partition": "PUBLIC"}: only partition PUBLIC', async () => {
    const rule = { '%%partition': 'PUBLIC' };
    assert.equal(await evaluateExpression(rule, bind('PUBLIC')), true);
    assert.equal(await evaluateExpression(rule, bind('private')), false);
    assert.equal(await evaluateExpression(rule, bind(null)), false);
  });

  test('{"%%partition": {"$in": ["a", "b"]}}: listed partitions', async () => {
    const rule = { '%%partition': { $in: ['a', 'b'] } };
    assert.equal(await evaluateExpression(rule, bind('b')), true);
    assert.equal(await evaluateExpression(rule, bind('c')), false);
    assert.equal(await evaluateExpression({ '%%partition': { '%in': ['a', 'b'] } }, bind('a')), true);
  });

  test('{"%%user.id": "<id>"} and {"%%user.id": {"$in": [...]}}: listed users, any partition', async () => {
    assert.equal(await evaluateExpression({ '%%user.id': USER_ID }, bind('x')), true);
    assert.equal(await evaluateExpression({ '%%user.id': OTHER_ID }, bind('x')), false);
    assert.equal(await evaluateExpression({ '%%user.id': { $in: [OTHER_ID, USER_ID] } }, bind('y')), true);
    assert.equal(await evaluateExpression({ '%%user.id': { $in: [OTHER_ID] } }, bind('y')), false);
  });

  test('{"%%user.custom_data.<f>": "%%partition"}: the field holds or lists the value', async () => {
    const rule = { '%%user.custom_data.readPartitions': '%%partition' };
    assert.equal(await evaluateExpression(rule, bind('team-1', { readPartitions: 'team-1' })), true);
    assert.equal(await evaluateExpression(rule, bind('team-2', { readPartitions: ['team-1', 'team-2'] })), true);
    assert.equal(await evaluateExpression(rule, bind('team-3', { readPartitions: ['team-1', 'team-2'] })), false);
    assert.equal(await evaluateExpression(rule, bind('team-1')), false, 'no custom data');
  });

  test('{"%%partition": {"$ne": "read-only"}}: any partition except one', async () => {
    const rule = { '%%partition': { $ne: 'read-only' } };
    assert.equal(await evaluateExpression(rule, bind('notes')), true);
    assert.equal(await evaluateExpression(rule, bind('read-only')), false);
  });

  test('{"%%true": {"%function": …}}: the function decides, with resolved arguments', async () => {
    const calls: [string, unknown[]][] = [];
    const env: EvaluationEnv = {
      ...bind('team-7'),
      callFunction: async (name, args) => { calls.push([name, args]); return args[0] === 'team-7'; },
    };
    const rule = { '%%true': { '%function': { name: 'canRead', arguments: ['%%partition', '%%user.id', 3] } } };
    assert.equal(await evaluateExpression(rule, env), true);
    assert.deepEqual(calls, [['canRead', ['team-7', USER_ID, 3]]]);
    assert.equal(await evaluateExpression(rule, { ...env, partition: 'team-8' }), false);
  });

  test('the §2 config: owner reads and writes, shared partitions are readable', async () => {
    const read = { $or: [{ '%%user.id': '%%partition' }, { '%%user.custom_data.shared': '%%partition' }] };
    const write = { '%%user.id': '%%partition' };
    assert.equal(await evaluateExpression(write, bind(USER_ID)), true);
    assert.equal(await evaluateExpression(write, bind('shared-1', { shared: ['shared-1'] })), false);
    assert.equal(await evaluateExpression(read, bind('shared-1', { shared: ['shared-1'] })), true);
    assert.equal(await evaluateExpression(read, bind('other', { shared: ['shared-1'] })), false);
  });
});

describe('expression structure', () => {
  test('{} is true; entries are an implicit AND', async () => {
    const env = bind('p');
    assert.equal(await evaluateExpression({}, env), true);
    assert.equal(await evaluateExpression({ '%%partition': 'p', '%%user.id': USER_ID }, env), true);
    assert.equal(await evaluateExpression({ '%%partition': 'p', '%%user.id': OTHER_ID }, env), false);
  });

  test('%and / %or / %nor / %not at expression level and applied to a subject', async () => {
    const env = bind(5, { level: 7 });
    assert.equal(await evaluateExpression({ '%and': [{ '%%partition': 5 }, { '%%user.type': 'normal' }] }, env), true);
    assert.equal(await evaluateExpression({ $and: [{ '%%partition': 5 }, { '%%user.type': 'server' }] }, env), false);
    assert.equal(await evaluateExpression({ '%or': [{ '%%partition': 6 }, { '%%user.type': 'normal' }] }, env), true);
    assert.equal(await evaluateExpression({ '%nor': [{ '%%partition': 6 }, { '%%user.type': 'server' }] }, env), true);
    assert.equal(await evaluateExpression({ $not: { '%%partition': 5 } }, env), false);
    assert.equal(await evaluateExpression({ '%%user.custom_data.level': { '%and': [{ $gt: 0 }, { $lte: 42 }] } }, env), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.level': { '%and': [{ $gt: 0 }, { $lte: 6 }] } }, env), false);
    assert.equal(await evaluateExpression({ '%%user.custom_data.level': { $or: [{ $lt: 0 }, 7] } }, env), true);
    assert.equal(await evaluateExpression({ '%%partition': { '%not': { $in: [1, 5] } } }, env), false);
    assert.equal(await evaluateExpression({ '%%partition': { $nor: [1, 2] } }, env), true);
  });

  test('an embedded expression yields its result, compared with the key', async () => {
    const env = bind('p');
    assert.equal(await evaluateExpression({ '%%true': { '%%user.id': USER_ID } }, env), true);
    assert.equal(await evaluateExpression({ '%%false': { '%%user.id': OTHER_ID } }, env), true);
    assert.equal(await evaluateExpression({ '%%true': { '%%user.id': OTHER_ID } }, env), false);
  });

  test('comparisons and $exists', async () => {
    const env = bind('m', { level: 7, name: 'ada' });
    assert.equal(await evaluateExpression({ '%%user.custom_data.level': { $gt: 6, $gte: 7, $lt: 8, $lte: 7 } }, env), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.level': { $gt: 7 } }, env), false);
    assert.equal(await evaluateExpression({ '%%user.custom_data.name': { $gt: 'a', $lt: 'b' } }, env), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.name': { $gt: 1 } }, env), false, 'no order across types');
    assert.equal(await evaluateExpression({ '%%user.custom_data.name': { $exists: true }, '%%user.custom_data.team': { $exists: false } }, env), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.team': { $exists: true } }, env), false);
    assert.equal(await evaluateExpression({ '%%user.custom_data.level': { $eq: 7, $ne: 8 } }, env), true);
  });

  test('arrays: contains for a scalar value, deep equality for an array value, any element for orderings', async () => {
    const env = bind('x', { tags: ['a', 'b'], scores: [1, 9] });
    assert.equal(await evaluateExpression({ '%%user.custom_data.tags': 'b' }, env), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.tags': ['a', 'b'] }, env), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.tags': ['b', 'a'] }, env), false);
    assert.equal(await evaluateExpression({ '%%user.custom_data.tags': { $in: ['z', 'a'] } }, env), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.tags': { $nin: ['a'] } }, env), false);
    assert.equal(await evaluateExpression({ '%%user.custom_data.scores': { $gt: 5 } }, env), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.scores': { $gt: 9 } }, env), false);
  });

  test('literal documents compare deeply with their expansions resolved first', async () => {
    const env = bind('x', { owner: { id: USER_ID, role: 'admin' } });
    assert.equal(await evaluateExpression({ '%%user.custom_data.owner': { role: 'admin', id: '%%user.id' } }, env), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.owner': { id: '%%user.id' } }, env), false);
  });
});

describe('expansions', () => {
  test('values, environment, request, identities (both spellings) and the document expansions', async () => {
    const env: EvaluationEnv = {
      user: user(undefined, { identities: [{ id: 'x', providerType: 'custom-token' }, { id: 'y', provider_type: 'anon-user' }] }),
      values: { adminIds: [OTHER_ID, USER_ID], limits: { max: 3 } },
      environment: { tag: 'production', values: { region: 'eu' } },
      request: { httpMethod: 'POST', requestHeaders: { 'X-Trace': ['1'] } },
      root: { owner_id: USER_ID, status: 'open', tags: ['a'] },
      prevRoot: { owner_id: USER_ID, status: 'draft' },
      this: 'open',
      prev: 'draft',
    };
    const holds = async (rule: unknown) => evaluateExpression(rule, env);
    assert.equal(await holds({ '%%user.id': { $in: '%%values.adminIds' } }), true);
    assert.equal(await holds({ '%%values.limits.max': 3 }), true);
    assert.equal(await holds({ '%%environment.tag': 'production', '%%environment.values.region': 'eu' }), true);
    assert.equal(await holds({ '%%request.httpMethod': 'POST', '%%request.requestHeaders.X-Trace': '1' }), true);
    assert.equal(await holds({ '%%user.identities.provider_type': 'custom-token' }), true);
    assert.equal(await holds({ '%%user.identities.providerType': 'anon-user' }), true);
    assert.equal(await holds({ '%%user.identities.0.id': 'x' }), true);
    assert.equal(await holds({ '%%root.owner_id': '%%user.id', '%%prevRoot.status': 'draft', '%%this': 'open', '%%prev': 'draft' }), true);
    assert.equal(await holds({ '%%root': { $exists: true }, '%%root.tags': 'a' }), true);
  });

  test('bare field keys read the document in data rules, the arguments otherwise', async () => {
    const rule = { owner_id: '%%user.id', 'meta.kind': 'note' };
    assert.equal(await evaluateExpression(rule, { user: user(), root: { owner_id: USER_ID, meta: { kind: 'note' } } }), true);
    assert.equal(await evaluateExpression(rule, { user: user(), root: { owner_id: OTHER_ID, meta: { kind: 'note' } } }), false);
    assert.equal(await evaluateExpression(rule, { user: user(), args: { owner_id: USER_ID, meta: { kind: 'note' } } }), true);
    assert.equal(await evaluateExpression({ '%%args.0': 'x' }, { args: ['x'] }), true);
    assert.equal(await evaluateExpression(rule, { user: user() }), false);
  });

  test('unknown or missing expansions are undefined and compare false, even with each other', async () => {
    const env = bind('p');
    assert.equal(await evaluateExpression({ '%%nope': 'x' }, env), false);
    assert.equal(await evaluateExpression({ '%%user.custom_data.a': '%%user.custom_data.b' }, env), false);
    assert.equal(await evaluateExpression({ '%%user.custom_data.a': null }, env), false);
    assert.equal(await evaluateExpression({ '%%true.x': true }, env), false);
    assert.equal(await evaluateExpression({ '%%user.id': { $in: '%%values.missing' } }, env), false);
    assert.equal(await evaluateExpression({ '%%user.constructor': { $exists: true } }, env), false, 'inherited members are not fields');
    assert.equal(await evaluateExpression({ '%%user.id.length': 24 }, env), false);
  });
});

describe('BSON-typed comparisons and conversions', () => {
  test('ObjectId partitions: strings never equal them; %stringToOid converts', async () => {
    const partition = new ObjectId(USER_ID);
    assert.equal(await evaluateExpression({ '%%user.id': '%%partition' }, bind(partition)), false);
    assert.equal(await evaluateExpression({ '%%partition': { '%stringToOid': '%%user.id' } }, bind(partition)), true);
    assert.equal(await evaluateExpression({ '%%partition': { '%stringToOid': OTHER_ID } }, bind(partition)), false);
    assert.equal(await evaluateExpression({ '%%partition': { '%stringToOid': 'not-hex' } }, bind(partition)), false);
    assert.equal(await evaluateExpression({ '%%user.id': { '%oidToString': '%%partition' } }, bind(partition)), true);
    assert.equal(await evaluateExpression({ '%%partition': { $in: [{ '%stringToOid': OTHER_ID }, { '%stringToOid': USER_ID }] } }, bind(partition)), true);
    assert.equal(await evaluateExpression({ '%%partition': { $gt: { '%stringToOid': '000000000000000000000000' } } }, bind(partition)), true);
  });

  test('numbers compare numerically across number, Long, Int32, Double and Decimal128', async () => {
    assert.equal(await evaluateExpression({ '%%partition': 42 }, bind(Long.fromNumber(42))), true);
    assert.equal(await evaluateExpression({ '%%partition': 43 }, bind(Long.fromNumber(42))), false);
    assert.equal(await evaluateExpression({ '%%partition': 42 }, bind(new Int32(42))), true);
    assert.equal(await evaluateExpression({ '%%partition': 2.5 }, bind(new Double(2.5))), true);
    assert.equal(await evaluateExpression({ '%%partition': 2.5 }, bind(Decimal128.fromString('2.50'))), true);
    assert.equal(await evaluateExpression({ '%%partition': { $gt: 41, $lt: 43 } }, bind(Long.fromNumber(42))), true);
    assert.equal(await evaluateExpression({ '%%partition': '42' }, bind(Long.fromNumber(42))), false);
    const big = Long.fromString('9007199254740993');
    assert.equal(await evaluateExpression({ '%%partition': '%%values.big' }, { ...bind(big), values: { big: Long.fromString('9007199254740993') } }), true);
    assert.equal(await evaluateExpression({ '%%partition': '%%values.big' }, { ...bind(big), values: { big: Long.fromString('9007199254740992') } }), false, 'beyond 2^53 compared exactly');
  });

  test('UUIDs compare by bytes; %stringToUuid and %uuidToString convert', async () => {
    const text = '0f8fad5b-d9cb-469f-a165-70867728950e';
    const partition = new UUID(text);
    assert.equal(await evaluateExpression({ '%%partition': { '%stringToUuid': text } }, bind(partition)), true);
    assert.equal(await evaluateExpression({ '%%partition': { '%stringToUuid': text.toUpperCase() } }, bind(partition)), true);
    assert.equal(await evaluateExpression({ '%%partition': text }, bind(partition)), false, 'a string never equals a UUID');
    assert.equal(await evaluateExpression({ '%%partition': { '%stringToUuid': '0f8fad5b' } }, bind(partition)), false);
    assert.equal(await evaluateExpression({ '%%partition': { '%stringToUuid': text } }, bind(new Binary(partition.buffer, Binary.SUBTYPE_UUID))), true);
    assert.equal(await evaluateExpression({ '%%user.custom_data.team': { '%uuidToString': '%%partition' } }, bind(partition, { team: text })), true);
    assert.equal(await evaluateExpression({ '%%partition': '%%values.same' }, { ...bind(partition), values: { same: new UUID(text) } }), true);
  });

  test('dates compare by time', async () => {
    const env: EvaluationEnv = { root: { due: new Date('2024-01-02T00:00:00Z') }, values: { start: new Date('2024-01-01T00:00:00Z'), same: new Date('2024-01-02T00:00:00Z') } };
    assert.equal(await evaluateExpression({ due: '%%values.same' }, env), true);
    assert.equal(await evaluateExpression({ due: { $gt: '%%values.start' } }, env), true);
    assert.equal(await evaluateExpression({ due: { $lt: '%%values.start' } }, env), false);
  });
});

describe('%function', () => {
  test('the return value is compared with the subject', async () => {
    const env: EvaluationEnv = { ...bind('team-1'), callFunction: async (name) => (name === 'teamOf' ? 'team-1' : 'other') };
    assert.equal(await evaluateExpression({ '%%partition': { '%function': { name: 'teamOf' } } }, env), true);
    assert.equal(await evaluateExpression({ '%%partition': { '%function': { name: 'elsewhere' } } }, env), false);
    assert.equal(await evaluateExpression({ '%%true': { '%function': { name: 'teamOf' } } }, env), false, 'a truthy non-boolean is not true');
  });

  test('a throwing function makes the expression false and is reported through onError', async () => {
    const errors: RuleEvaluationError[] = [];
    const env: EvaluationEnv = {
      ...bind('p'),
      callFunction: async () => { throw new Error('boom'); },
      onError: (error) => errors.push(error),
    };
    assert.equal(await evaluateExpression({ '%%true': { '%function': { name: 'canRead' } } }, env), false);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].reason, 'function-failed');
    assert.equal(errors[0].functionName, 'canRead');
    assert.match(errors[0].message, /boom/);
  });

  test('without a function caller the call is false and reported; a throwing onError changes nothing', async () => {
    const errors: RuleEvaluationError[] = [];
    assert.equal(await evaluateExpression({ '%%true': { '%function': { name: 'f' } } }, { onError: (e) => errors.push(e) }), false);
    assert.deepEqual(errors.map((e) => e.reason), ['no-function-caller']);
    const env: EvaluationEnv = { callFunction: async () => { throw new Error('x'); }, onError: () => { throw new Error('callback'); } };
    assert.equal(await evaluateExpression({ '%%true': { '%function': { name: 'f' } } }, env), false);
  });

  test('malformed calls are false without calling; conditions after a false one are not evaluated', async () => {
    let calls = 0;
    const env: EvaluationEnv = { ...bind('p'), callFunction: async () => { calls++; return true; } };
    assert.equal(await evaluateExpression({ '%%true': { '%function': 'canRead' } }, env), false);
    assert.equal(await evaluateExpression({ '%%true': { '%function': { name: 'f', arguments: 'x' } } }, env), false);
    assert.equal(await evaluateExpression({ '%%partition': 'q', '%%true': { '%function': { name: 'f' } } }, env), false);
    assert.equal(await evaluateExpression({ '%or': [{ '%%partition': 'p' }, { '%%true': { '%function': { name: 'f' } } }] }, env), true);
    assert.equal(calls, 0);
  });
});

describe('expandExpressionToQuery', () => {
  const docs = [
    { _id: 1, owner_id: USER_ID, team: 't1', status: 'open', ref: new ObjectId(USER_ID) },
    { _id: 2, owner_id: OTHER_ID, team: 't1', status: 'closed', ref: new ObjectId(OTHER_ID) },
    { _id: 3, owner_id: OTHER_ID, status: 'open' },
  ];
  const find = (query: Record<string, unknown>) => new Query(query).find(docs).all().map((d) => (d as { _id: number })._id);

  test('expansions become values; MongoDB operators stay; %-operators become $-operators', async () => {
    const env: EvaluationEnv = { user: user({ teams: ['t1'] }) };
    const query = await expandExpressionToQuery({ owner_id: '%%user.id', status: { $in: ['open'], $ne: 'x' }, team: { '%in': '%%user.custom_data.teams' } }, env);
    assert.deepEqual(query, { owner_id: USER_ID, status: { $in: ['open'], $ne: 'x' }, team: { $in: ['t1'] } });
    assert.deepEqual(find(query), [1]);
  });

  test('conversions and %function produce typed values', async () => {
    const env: EvaluationEnv = { user: user(), callFunction: async (_name, args) => args[0] };
    const query = await expandExpressionToQuery({ ref: { '%stringToOid': '%%user.id' }, status: { '%function': { name: 'echo', arguments: ['open'] } } }, env);
    assert.ok(query.ref instanceof ObjectId);
    assert.equal(query.status, 'open');
    assert.deepEqual(find(query), [1]);
  });

  test('booleans: true matches all, false none', async () => {
    assert.deepEqual(await expandExpressionToQuery(true, {}), {});
    assert.deepEqual(find(await expandExpressionToQuery(false, {})), []);
    assert.deepEqual(find(matchNothingQuery()), []);
  });

  test('a condition naming a missing value matches nothing, not documents lacking the field', async () => {
    const env: EvaluationEnv = { user: user() };
    assert.deepEqual(find(await expandExpressionToQuery({ team: '%%user.custom_data.team' }, env)), []);
    const either = await expandExpressionToQuery({ $or: [{ team: '%%user.custom_data.team' }, { owner_id: '%%user.id' }] }, env);
    assert.deepEqual(find(either), [1], 'the resolvable branch still grants');
    assert.deepEqual(find(await expandExpressionToQuery({ $nor: [{ team: '%%user.custom_data.team' }] }, env)), [], 'a negated missing value denies');
    assert.deepEqual(find(await expandExpressionToQuery({ ref: { '%stringToOid': 'bad' } }, env)), []);
  });

  test('expansion keys are rule conditions evaluated now', async () => {
    const admin: EvaluationEnv = { user: user({ isAdmin: true }) };
    const plain: EvaluationEnv = { user: user({ isAdmin: false }) };
    const filter = { $or: [{ '%%user.custom_data.isAdmin': true }, { owner_id: '%%user.id' }] };
    assert.deepEqual(find(await expandExpressionToQuery(filter, admin)), [1, 2, 3]);
    assert.deepEqual(find(await expandExpressionToQuery(filter, plain)), [1]);
  });

  test('malformed filters deny and are reported', async () => {
    const errors: RuleEvaluationError[] = [];
    const env: EvaluationEnv = { onError: (e) => errors.push(e) };
    assert.deepEqual(find(await expandExpressionToQuery('owner', env)), []);
    assert.deepEqual(find(await expandExpressionToQuery({ $or: 'x' }, env)), []);
    assert.deepEqual(errors.map((e) => e.reason), ['invalid-query']);
  });
});

test('can_evaluate: absent, null or {} allows; otherwise the expression decides for the call', async () => {
  const env = { user: { id: 'u1', type: 'normal', data: {}, custom_data: {}, identities: [] }, args: [1] };
  for (const rule of [undefined, null, {}]) assert.equal(await canEvaluate(rule, env), true, JSON.stringify(rule));
  assert.equal(await canEvaluate({ '%%user.id': 'u1' }, env), true);
  assert.equal(await canEvaluate({ '%%user.id': 'u2' }, env), false);
  assert.equal(await canEvaluate(false, env), false);
});
