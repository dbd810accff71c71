// Partition-based sync, the pure parts: permission shapes with their traces (the product description's
// table and the spec's evaluation rules), compiled = interpreted, write ⇒ read, partition values of every
// key type with the wrong-type error for each pair, membership, and the state machine.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Binary, Long, ObjectId, UUID } from 'bson';
import { compileExpression, evaluateExpression, evaluateExpressionTraced, type EvaluationEnv, type EvaluationTrace } from '../../core/rules';
import {
  checkPartitionValue, frozenMessage, INITIAL_SYNC_STATE, membershipOf, parsePartitionValue, partitionFields, partitionId,
  reconcileSync, syncSettingsFromAdmin, syncSettingsFromFile, syncSettingsToAdmin, syncSettingsToFile, type SyncSettings,
} from '../../core/sync';

const USER = '65a0000000000000000000aa';
const OTHER = '65a0000000000000000000bb';

function env(partition: unknown, extra: Partial<EvaluationEnv> = {}): EvaluationEnv {
  return {
    user: { id: USER, type: 'normal', data: { email: 'ada@example.com', team: 'blue' }, custom_data: { shared: ['team-blue', 'PUBLIC'], region: 'eu', level: 3 } },
    partition,
    values: { admins: [OTHER, USER], readOnly: 'read-only' },
    environment: { tag: 'development', values: {} },
    ...extra,
  };
}

/** Depth-first, the first part written as `expression`. */
function find(trace: EvaluationTrace, expression: string): EvaluationTrace | undefined {
  if (trace.expression === expression) return trace;
  for (const child of trace.children) {
    const found = find(child, expression);
    if (found) return found;
  }
  return undefined;
}

interface Shape {
  name: string;
  expr: unknown;
  partition: unknown;
  result: boolean;
  /** A part of the trace: its expression, and the values it must show. */
  part?: { expression: string; subject?: unknown; operand?: unknown; result: boolean; note?: RegExp };
}

const SHAPES: Shape[] = [
  { name: 'true', expr: true, partition: 'x', result: true },
  { name: 'false', expr: false, partition: 'x', result: false },
  { name: '{} is true', expr: {}, partition: 'x', result: true },
  { name: '%%true: true', expr: { '%%true': true }, partition: 'x', result: true, part: { expression: '"%%true": true', subject: true, operand: true, result: true } },
  { name: '%%partition literal, matching', expr: { '%%partition': 'PUBLIC' }, partition: 'PUBLIC', result: true, part: { expression: '"%%partition": "PUBLIC"', subject: 'PUBLIC', operand: 'PUBLIC', result: true } },
  { name: '%%partition literal, other partition', expr: { '%%partition': 'PUBLIC' }, partition: 'private', result: false, part: { expression: '"%%partition": "PUBLIC"', subject: 'private', operand: 'PUBLIC', result: false } },
  { name: '%%partition $in', expr: { '%%partition': { $in: ['a', 'b'] } }, partition: 'b', result: true, part: { expression: '"$in": ["a","b"]', subject: 'b', operand: ['a', 'b'], result: true } },
  { name: '%%partition %in, not listed', expr: { '%%partition': { '%in': ['a', 'b'] } }, partition: 'c', result: false, part: { expression: '"%in": ["a","b"]', subject: 'c', operand: ['a', 'b'], result: false } },
  { name: '%%user.id literal', expr: { '%%user.id': USER }, partition: 'x', result: true, part: { expression: `"%%user.id": "${USER}"`, subject: USER, operand: USER, result: true } },
  { name: '%%user.id $in of another user', expr: { '%%user.id': { $in: [OTHER] } }, partition: 'x', result: false, part: { expression: `"$in": ["${OTHER}"]`, subject: USER, operand: [OTHER], result: false } },
  { name: '%%user.id equals %%partition (per-user partition)', expr: { '%%user.id': '%%partition' }, partition: USER, result: true, part: { expression: '"%%user.id": "%%partition"', subject: USER, operand: USER, result: true } },
  { name: 'custom data array lists the partition', expr: { '%%user.custom_data.shared': '%%partition' }, partition: 'team-blue', result: true, part: { expression: '"%%user.custom_data.shared": "%%partition"', subject: ['team-blue', 'PUBLIC'], operand: 'team-blue', result: true } },
  { name: 'custom data array does not list it', expr: { '%%user.custom_data.shared': '%%partition' }, partition: 'team-red', result: false },
  { name: 'missing custom data field names nothing', expr: { '%%user.custom_data.nope': '%%partition' }, partition: 'x', result: false, part: { expression: '"%%user.custom_data.nope": "%%partition"', result: false, note: /names nothing/ } },
  { name: '%%user.data field', expr: { '%%user.data.team': 'blue' }, partition: 'x', result: true, part: { expression: '"%%user.data.team": "blue"', subject: 'blue', operand: 'blue', result: true } },
  { name: '$ne: any partition but one', expr: { '%%partition': { $ne: 'read-only' } }, partition: 'read-only', result: false, part: { expression: '"$ne": "read-only"', subject: 'read-only', operand: 'read-only', result: false } },
  { name: '$ne with %%values', expr: { '%%partition': { $ne: '%%values.readOnly' } }, partition: 'notes', result: true, part: { expression: '"$ne": "%%values.readOnly"', subject: 'notes', operand: 'read-only', result: true } },
  { name: '$in from %%values', expr: { '%%user.id': { $in: '%%values.admins' } }, partition: 'x', result: true },
  { name: '$in from the custom data list', expr: { '%%partition': { $in: '%%user.custom_data.shared' } }, partition: 'PUBLIC', result: true },
  { name: '$or: second branch', expr: { $or: [{ '%%user.id': '%%partition' }, { '%%user.custom_data.shared': '%%partition' }] }, partition: 'PUBLIC', result: true, part: { expression: '"%%user.id": "%%partition"', subject: USER, operand: 'PUBLIC', result: false } },
  { name: '%or: no branch', expr: { '%or': [{ '%%partition': 'a' }, { '%%partition': 'b' }] }, partition: 'c', result: false },
  { name: '$and: every part', expr: { $and: [{ '%%user.custom_data.region': 'eu' }, { '%%user.custom_data.level': { $gte: 3 } }] }, partition: 'x', result: true, part: { expression: '"$gte": 3', subject: 3, operand: 3, result: true } },
  { name: '%and on a subject', expr: { '%%user.custom_data.level': { '%and': [{ $gt: 0 }, { $lte: 2 }] } }, partition: 'x', result: false, part: { expression: '"$lte": 2', subject: 3, operand: 2, result: false } },
  { name: '$exists', expr: { '%%user.custom_data.region': { $exists: true } }, partition: 'x', result: true },
  { name: '%not (undocumented)', expr: { '%not': { '%%partition': 'a' } }, partition: 'b', result: true },
  { name: '%nor (undocumented)', expr: { '%nor': [{ '%%partition': 'a' }, { '%%partition': 'b' }] }, partition: 'b', result: false },
  { name: '%%false: <expr> holds when it is false', expr: { '%%false': { '%%partition': 'a' } }, partition: 'b', result: true },
  { name: 'environment tag', expr: { '%%environment.tag': 'development' }, partition: 'x', result: true },
  { name: 'objectId key: %stringToOid of the user id', expr: { '%%partition': { '%stringToOid': '%%user.id' } }, partition: new ObjectId(USER), result: true, part: { expression: '"%stringToOid": "%%user.id"', result: true } },
  { name: 'objectId key compared with the user id string is always false', expr: { '%%user.id': '%%partition' }, partition: new ObjectId(USER), result: false },
  { name: '%oidToString', expr: { '%%user.id': { '%oidToString': '%%partition' } }, partition: new ObjectId(USER), result: true },
  { name: 'uuid key: %uuidToString', expr: { '%%partition': { '%uuidToString': '%%partition' } }, partition: new UUID('6f1c2b9e-7a0d-4a4e-9f4e-0a1b2c3d4e5f'), result: false },
  { name: 'uuid key: %stringToUuid', expr: { '%%partition': { '%stringToUuid': '6f1c2b9e-7a0d-4a4e-9f4e-0a1b2c3d4e5f' } }, partition: new UUID('6f1c2b9e-7a0d-4a4e-9f4e-0a1b2c3d4e5f'), result: true },
  { name: 'long key against a number', expr: { '%%partition': 42 }, partition: Long.fromNumber(42), result: true },
  { name: 'bare field key has no meaning in sync', expr: { owner: USER }, partition: 'x', result: false },
  { name: 'unknown operator is false', expr: { '%%partition': { $regex: 'a' } }, partition: 'a', result: false, part: { expression: '"$regex": "a"', result: false, note: /unknown operator/ } },
];

describe('permission expression shapes, each with its trace', () => {
  for (const shape of SHAPES) {
    test(shape.name, async () => {
      const { result, trace } = await evaluateExpressionTraced(shape.expr, env(shape.partition));
      assert.equal(result, shape.result);
      assert.equal(trace.result, shape.result);
      assert.equal(await evaluateExpression(shape.expr, env(shape.partition)), shape.result, 'the untraced evaluation agrees');
      assert.equal(await compileExpression(shape.expr)(env(shape.partition)), shape.result, 'the compiled form agrees');
      if (!shape.part) return;
      const part = find(trace, shape.part.expression);
      assert.ok(part, `no part ${shape.part.expression} in ${JSON.stringify(trace, null, 1)}`);
      assert.equal(part.result, shape.part.result);
      if ('subject' in shape.part) assert.deepEqual(part.subject, shape.part.subject);
      if ('operand' in shape.part) assert.deepEqual(part.operand, shape.part.operand);
      if (shape.part.note) assert.match(part.note ?? '', shape.part.note);
    });
  }

  test('%function: its returned value is compared with the key, and the trace shows the call and its answer', async () => {
    const calls: unknown[][] = [];
    const expr = { '%%true': { '%function': { name: 'canRead', arguments: ['%%partition', '%%user.id'] } } };
    const callFunction = async (name: string, args: unknown[]) => { calls.push([name, ...args]); return args[0] === 'open'; };
    const granted = await evaluateExpressionTraced(expr, env('open', { callFunction }));
    assert.equal(granted.result, true);
    assert.deepEqual(calls, [['canRead', 'open', USER]]);
    const call = find(granted.trace, '"%function": {"name":"canRead","arguments":["%%partition","%%user.id"]}');
    assert.deepEqual([call?.subject, call?.operand, call?.result], [true, true, true]);
    assert.equal(await compileExpression(expr)(env('shut', { callFunction })), false, 'the compiled form runs functions too');
    const failing = await evaluateExpressionTraced(expr, env('x', { callFunction: async () => { throw new Error('boom'); } }));
    assert.equal(failing.result, false);
    assert.match(find(failing.trace, '"%function": {"name":"canRead","arguments":["%%partition","%%user.id"]}')?.note ?? '', /Function 'canRead' failed in a rule: boom/);
  });

  test('the compiled form is synchronous for expressions without functions', () => {
    const compiled = compileExpression({ $or: [{ '%%user.id': '%%partition' }, { '%%partition': { $in: '%%user.custom_data.shared' } }] });
    assert.equal(compiled(env(USER)), true);
    assert.equal(compiled(env('nope')), false);
  });
});

describe('partition values: every key type, and ErrorIllegalDatabasePath for each wrong pair', () => {
  const samples: Record<string, { text: string; value: unknown }> = {
    string: { text: '"abc"', value: 'abc' },
    objectId: { text: '{"$oid":"65a000000000000000000001"}', value: new ObjectId('65a000000000000000000001') },
    long: { text: '{"$numberLong":"42"}', value: 42 },
    uuid: { text: '{"$uuid":"6f1c2b9e-7a0d-4a4e-9f4e-0a1b2c3d4e5f"}', value: new UUID('6f1c2b9e-7a0d-4a4e-9f4e-0a1b2c3d4e5f') },
  };
  for (const expected of Object.keys(samples)) {
    for (const [found, sample] of Object.entries(samples)) {
      test(`key type ${expected}, client value ${found}`, () => {
        const parsed = parsePartitionValue(sample.text, { type: expected, required: true });
        if (expected === found) {
          assert.ok(parsed.ok);
          assert.equal(partitionId(parsed.value), partitionId(sample.value));
        } else {
          assert.ok(!parsed.ok);
          assert.deepEqual([parsed.error.code, parsed.error.name], [204, 'ErrorIllegalDatabasePath']);
          assert.equal(parsed.error.message, `attempted to bind on illegal realm partition: expected partition to have type ${expected} but found ${found}`);
        }
      });
    }
  }

  test('a plain JSON integer is a long (Int32 accepted), a UUID in $binary form is a uuid', () => {
    assert.ok(parsePartitionValue('42', { type: 'long', required: true }).ok);
    const binary = new Binary(new UUID('6f1c2b9e-7a0d-4a4e-9f4e-0a1b2c3d4e5f').buffer, 4);
    const parsed = parsePartitionValue(`{"$binary":{"base64":"${Buffer.from(binary.buffer).toString('base64')}","subType":"04"}}`, { type: 'uuid', required: true });
    assert.ok(parsed.ok);
  });

  test('null: the null partition when the key is optional, the wrong-type error when required', () => {
    assert.ok(parsePartitionValue('null', { type: 'objectId', required: false }).ok);
    const required = checkPartitionValue(null, { type: 'objectId', required: true });
    assert.ok(!required.ok);
    assert.equal(required.error.message, 'attempted to bind on illegal realm partition: expected partition to have type objectId but found null');
  });

  test('unparsable text', () => {
    const parsed = parsePartitionValue('{"$oid": 12', { type: 'objectId', required: true });
    assert.ok(!parsed.ok);
    assert.equal(parsed.error.code, 204);
    assert.equal(parsed.error.message, `Illegal Realm path (BIND): serialized partition '{"$oid": 12' is invalid`);
  });
});

describe('membership', () => {
  const optional = { key: 'p', type: 'string', required: false };
  const required = { ...optional, required: true };
  test('key present with the right type: that partition', () => assert.deepEqual(membershipOf({ p: 'a' }, optional), { partition: 'a' }));
  test('optional key absent or null: the null partition', () => {
    assert.deepEqual(membershipOf({}, optional), { partition: null });
    assert.deepEqual(membershipOf({ p: null }, optional), { partition: null });
  });
  test('required key absent: ignored, with why', () => assert.deepEqual(membershipOf({}, required), { ignored: 'the required partition key "p" is missing' }));
  test('wrong type: ignored either way', () => {
    assert.deepEqual(membershipOf({ p: 5 }, optional), { ignored: 'the partition key "p" is long, not string' });
    assert.deepEqual(membershipOf({ p: new ObjectId() }, required), { ignored: 'the partition key "p" is objectId, not string' });
  });
  test('longs: Int32, Long and numbers are one partition; a double is not a long', () => {
    const long = { key: 'p', type: 'long', required: true };
    const a = membershipOf({ p: 7 }, long), b = membershipOf({ p: Long.fromNumber(7) }, long);
    assert.ok('partition' in a && 'partition' in b);
    assert.equal(partitionId(a.partition), partitionId(b.partition));
    assert.ok('ignored' in membershipOf({ p: 7.5 }, long));
  });
});

describe('sync/data partition_fields', () => {
  test('fields with one partition type in every schema', () => {
    const fields = partitionFields([
      { properties: { _id: { bsonType: 'objectId' }, owner_id: { bsonType: 'string' }, team: { bsonType: 'objectId' }, n: { bsonType: 'int' } } },
      { properties: { _id: { bsonType: 'objectId' }, owner_id: { bsonType: 'string' }, team: { bsonType: 'string' }, n: { bsonType: 'long' } } },
    ]);
    assert.deepEqual(fields, [{ key: 'n', type: 'long' }, { key: 'owner_id', type: 'string' }]);
  });
});

describe('the state machine', () => {
  const base = (over: Partial<SyncSettings> = {}): SyncSettings => {
    const parsed = syncSettingsFromFile({
      type: 'partition', state: 'enabled', service_name: 'mongodb-atlas', database_name: 'db',
      partition: { key: '_partition', type: 'string', required: false, permissions: { read: true, write: { '%%user.id': '%%partition' } } },
    });
    assert.ok(parsed.ok);
    return { ...parsed.settings, ...over };
  };
  const clusters = ['mongodb-atlas'];

  test('enable needs a cluster, key, type and both permissions', () => {
    const noCluster = reconcileSync(INITIAL_SYNC_STATE, base({ serviceName: 'other' }), clusters, 1);
    assert.match(noCluster.refused?.message ?? '', /linked cluster/);
    const noWrite = reconcileSync(INITIAL_SYNC_STATE, base({ partition: { key: 'k', type: 'string', required: false, permissions: { read: true } } }), clusters, 1);
    assert.match(noWrite.refused?.message ?? '', /write permission/);
    const badType = reconcileSync(INITIAL_SYNC_STATE, base({ partition: { key: 'k', type: 'int', required: false, permissions: { read: true, write: true } } }), clusters, 1);
    assert.match(badType.refused?.message ?? '', /partition.type/);
    assert.equal(reconcileSync(INITIAL_SYNC_STATE, base(), clusters, 1).transition, 'enabled');
  });

  test('enable → pause → resume → terminate → re-enable with a new key, and frozen rules in between', () => {
    const enabled = reconcileSync(INITIAL_SYNC_STATE, base(), clusters, 100).state;
    const changed = reconcileSync(enabled, base({ partition: { key: 'owner', type: 'string', required: false, permissions: { read: true, write: true } } }), clusters, 101);
    assert.equal(changed.state, enabled);
    assert.deepEqual(changed.refused?.paths, [['partition', 'key'], ['partition', 'permissions', 'write']]);
    assert.equal(changed.refused?.message, frozenMessage([['partition', 'key'], ['partition', 'permissions', 'write']]));
    const paused = reconcileSync(enabled, base({ state: 'disabled' }), clusters, 200);
    assert.deepEqual([paused.transition, paused.state.status, paused.state.lastDisabled], ['paused', 'paused', 200]);
    const resumed = reconcileSync(paused.state, base(), clusters, 300);
    assert.deepEqual([resumed.transition, resumed.state.epoch], ['resumed', 1]);
    const terminated = reconcileSync(resumed.state, base({ state: '' }), clusters, 400);
    assert.deepEqual([terminated.transition, terminated.state.status, terminated.state.epoch, terminated.state.lastDisabled], ['terminated', 'terminated', 2, 400]);
    const newKey = base({ partition: { key: 'owner', type: 'objectId', required: true, permissions: { read: true, write: true } } });
    const reEnabled = reconcileSync(terminated.state, newKey, clusters, 500);
    assert.deepEqual([reEnabled.transition, reEnabled.state.status, reEnabled.state.epoch, reEnabled.state.running?.frozen.key], ['re-enabled', 'enabled', 2, 'owner']);
    assert.match(reEnabled.notice ?? '', /new local database files/);
  });

  test('flexible sync enables on a linked cluster, keeps its queryable fields, pauses, resumes, terminates, and cannot switch mode while it runs', () => {
    const file = { type: 'flexible', state: 'enabled', service_name: 'mongodb-atlas', database_name: 'todo', queryable_fields_names: ['owner_id'], indexed_queryable_fields_names: ['team'] };
    const parsed = syncSettingsFromFile(file);
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.settings.queryable, { queryable_fields_names: ['owner_id'], indexed_queryable_fields_names: ['team'] });
    assert.deepEqual(syncSettingsToFile(parsed.settings), { ...file, development_mode_enabled: false, is_recovery_mode_disabled: false });
    const enabled = reconcileSync(INITIAL_SYNC_STATE, parsed.settings, clusters, 1);
    assert.deepEqual([enabled.transition, enabled.state.status, enabled.state.running?.settings.databaseName], ['enabled', 'enabled', 'todo']);
    const noCluster = syncSettingsFromFile({ ...file, service_name: 'elsewhere' });
    assert.ok(noCluster.ok);
    assert.match(reconcileSync(INITIAL_SYNC_STATE, noCluster.settings, clusters, 1).refused?.message ?? '', /no data source named "elsewhere"/);
    const toPartition = reconcileSync(enabled.state, base(), clusters, 2);
    assert.equal(toPartition.state, enabled.state);
    assert.deepEqual(toPartition.refused?.paths, [['type']]);
    const paused = reconcileSync(enabled.state, { ...parsed.settings, state: 'disabled' }, clusters, 3);
    assert.deepEqual([paused.transition, paused.state.status], ['paused', 'paused']);
    const resumed = reconcileSync(paused.state, parsed.settings, clusters, 4);
    assert.equal(resumed.transition, 'resumed');
    const terminated = reconcileSync(resumed.state, { ...parsed.settings, state: '' }, clusters, 5);
    assert.deepEqual([terminated.transition, terminated.state.epoch], ['terminated', 2]);
    assert.ok(!syncSettingsFromFile({ ...file, queryable_fields_names: 'owner_id' }).ok);
  });

  test('the admin form has no service_name or last_disabled; PATCH bodies parse with the service patched', () => {
    const admin = syncSettingsToAdmin({ ...base(), lastDisabled: 5 });
    assert.equal('service_name' in admin, false);
    assert.equal('last_disabled' in admin, false);
    const parsed = syncSettingsFromAdmin(admin, 'mongodb-atlas');
    assert.ok(parsed.ok);
    assert.equal(parsed.settings.serviceName, 'mongodb-atlas');
    assert.ok(!syncSettingsFromAdmin({ state: 'paused' }, 'x').ok);
  });
});
