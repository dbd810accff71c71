// Rule-checked data access over the in-memory store: roles, document filters, field rules, filters,
// default rules, schema validation and the system bypass, plus the example app's own rules.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Decimal128, Int32, Long, ObjectId, UUID } from 'bson';
import { loadApp } from '../../core/load';
import { nodeFileSystem } from '../../core/fs';
import { openEmbeddedStore } from '../../runtime/store';
import { createDataAccess, DataAccessError, graphqlErrorMessage, type DataAccessOptions, type DataAccessUser } from '../../runtime/data';
import { expressionUsesDocument } from '../../runtime/data/rules';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';

const ALICE = '64b000000000000000000001';
const BOB = '64b000000000000000000002';

function user(id: string, customData: Record<string, unknown> = {}): DataAccessUser {
  return { id, type: 'normal', data: {}, custom_data: customData, identities: [{ id, provider_type: 'local-userpass' }] };
}

const RULES_PATH = 'data_sources/mongodb-atlas/todo/Task/rules.json';
const SCHEMA_PATH = 'data_sources/mongodb-atlas/todo/Task/schema.json';

/** An app whose `todo.Task` collection has the given roles (and optionally filters and schema). */
async function setup(taskRules: Record<string, unknown>, overrides: Record<string, unknown> = {}, options: Partial<DataAccessOptions> = {}) {
  const files = baseApp();
  delete files[SCHEMA_PATH];
  files[RULES_PATH] = { database: 'todo', collection: 'Task', filters: [], ...taskRules };
  Object.assign(files, overrides);
  const app = await loadApp(appFs(files), APP_ROOT);
  const store = await openEmbeddedStore({});
  const data = createDataAccess({ app, store, ...options });
  const system = data.forUser('system').collection('mongodb-atlas', 'todo', 'Task');
  const as = (who: DataAccessUser, request?: Record<string, unknown>) => data.forUser(who, request).collection('mongodb-atlas', 'todo', 'Task');
  return { app, store, data, system, as };
}

async function rejectsWith(promise: Promise<unknown>, code: string, pattern?: RegExp): Promise<DataAccessError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof DataAccessError, `expected a DataAccessError, got ${String(error)}`);
    assert.equal(error.errorCode, code);
    if (pattern) assert.match(error.message, pattern);
    return error;
  }
  assert.fail(`expected ${code}`);
}

const OWNER_ONLY = {
  roles: [{
    name: 'owner', apply_when: {},
    document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } },
    read: true, write: true, insert: true, delete: true, search: true,
  }],
};

describe('document filters', () => {
  test('a user reads and writes only their own documents', async () => {
    const { system, as } = await setup(OWNER_ONLY);
    await system.insertMany([
      { _id: 1, owner_id: ALICE, name: 'a1' }, { _id: 2, owner_id: ALICE, name: 'a2' }, { _id: 3, owner_id: BOB, name: 'b1' },
    ]);
    const alice = as(user(ALICE));
    assert.deepEqual((await alice.find({}, { sort: { _id: 1 } })).map((d) => d.name), ['a1', 'a2']);
    assert.equal(await alice.findOne({ _id: 3 }), null);
    assert.equal(await alice.countDocuments({}), 2);
    assert.deepEqual((await alice.find({}, { sort: { _id: -1 }, limit: 1 })).map((d) => d.name), ['a2']);

    const updated = await alice.updateMany({}, { $set: { done: true } });
    assert.deepEqual(updated, { matchedCount: 2, modifiedCount: 2 });
    assert.equal((await system.findOne({ _id: 3 }))!.done, undefined);

    assert.deepEqual(await alice.deleteOne({ _id: 3 }), { deletedCount: 0 });
    assert.deepEqual(await alice.deleteMany({}), { deletedCount: 2 });
    assert.equal(await system.countDocuments({}), 1);
  });

  test('inserting or moving a document outside the write filter is refused', async () => {
    const { system, as } = await setup(OWNER_ONLY);
    const alice = as(user(ALICE));
    await rejectsWith(alice.insertOne({ owner_id: BOB, name: 'sneaky' }), 'PermissionDenied', /write filter/);
    const { insertedId } = await alice.insertOne({ owner_id: ALICE, name: 'mine' });
    assert.ok(insertedId instanceof ObjectId, 'an _id is generated as drivers do');
    await rejectsWith(alice.updateOne({ _id: insertedId }, { $set: { owner_id: BOB } }), 'PermissionDenied', /write filter/);
    assert.equal((await system.findOne({ _id: insertedId }))!.owner_id, ALICE);
  });

  test('a document matching only the write filter is readable (write implies read)', async () => {
    const { system, as } = await setup({
      roles: [{
        name: 'writer', apply_when: {},
        document_filters: { read: { public: true }, write: { owner_id: '%%user.id' } },
        read: true, write: true,
      }],
    });
    await system.insertMany([{ _id: 1, public: true }, { _id: 2, owner_id: ALICE }, { _id: 3, owner_id: BOB }]);
    assert.deepEqual((await as(user(ALICE)).find({}, { sort: { _id: 1 } })).map((d) => d._id), [1, 2]);
  });

  test('each document is checked against the filters of its own role, not the union pushed to the store', async () => {
    const { system, as } = await setup({
      roles: [
        { name: 'flagged', apply_when: { flagged: true }, document_filters: { read: { owner_id: '%%user.id' }, write: false }, read: true },
        { name: 'public', apply_when: {}, document_filters: { read: { public: true }, write: false }, read: true },
      ],
    });
    await system.insertMany([{ _id: 1, flagged: true, public: true, owner_id: BOB }, { _id: 2, public: true }, { _id: 3, flagged: true, owner_id: ALICE }]);
    assert.deepEqual((await as(user(ALICE)).find({}, { sort: { _id: 1 } })).map((d) => d._id), [2, 3]);
  });
});

describe('whether rules read the user', () => {
  test('%%user as a value or a key, or a %function, makes the outcome per user; rules on documents alone do not', async () => {
    const readsUser = async (rules: Record<string, unknown>) => (await setup(rules)).data.rulesReadUser;
    const role = (extra: Record<string, unknown>) => ({ roles: [{ name: 'r', apply_when: {}, read: true, write: false, ...extra }] });
    assert.equal(await readsUser(OWNER_ONLY), true, 'a document filter on %%user.id');
    assert.equal(await readsUser(role({ apply_when: { '%%user.custom_data.admin': true } })), true, 'a key');
    assert.equal(await readsUser(role({ apply_when: { '%%true': { '%function': { name: 'isAdmin' } } } })), true, 'a function');
    assert.equal(await readsUser(role({ document_filters: { read: { tags: { '%in': ['a', '%%user.data.email'] } }, write: false } })), true, 'in an array');
    assert.equal(await readsUser(role({ document_filters: { read: { public: true }, write: false } })), false, 'documents only');
    assert.equal(await readsUser(role({ apply_when: { '%%root.owner': '%%values.owner' } })), false, '%%root and %%values');
  });
});

describe('flexible sync sessions: roles assigned once, Sync compatible only', () => {
  const FLEXIBLE = { 'sync/config.json': { type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', queryable_fields_names: ['owner_id'] } };
  const syncSetup = async (roles: unknown[]) => {
    const ctx = await setup({ roles }, FLEXIBLE);
    const asSync = (who: DataAccessUser) => ctx.data.forSyncSession(who).collection('mongodb-atlas', 'todo', 'Task');
    return { ...ctx, asSync };
  };
  const victimTask = () => ({ _id: new ObjectId('64c000000000000000000001'), owner_id: ALICE, name: 'victim task', secret: 's' });
  const OWNER_BY_DOCUMENT = { name: 'owner', apply_when: { owner_id: '%%user.id' }, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true };
  const READER = { name: 'reader', apply_when: {}, document_filters: { read: true, write: false }, read: true, write: false, insert: false, delete: false, search: true };

  test('an apply_when on document fields is decided with no document: a teammate cannot make herself the owner, then erase', async () => {
    const { system, as, asSync } = await syncSetup([OWNER_BY_DOCUMENT, READER]);
    await system.insertOne(victimTask());
    // Refused, or nothing the user may write matched: either way nothing changes.
    const changed = async (write: Promise<{ modifiedCount?: number; deletedCount?: number }>) => {
      try {
        const result = await write;
        return (result.modifiedCount ?? 0) + (result.deletedCount ?? 0);
      } catch (error) {
        assert.ok(error instanceof DataAccessError, String(error));
        return 0;
      }
    };
    assert.equal(await changed(asSync(user(BOB)).updateOne({ _id: victimTask()._id }, { $set: { owner_id: BOB } })), 0);
    assert.equal(await changed(asSync(user(BOB)).deleteOne({ _id: victimTask()._id })), 0);
    assert.equal((await asSync(user(BOB)).find({})).length, 1, 'the reader role still reads it');
    assert.equal((await asSync(user(ALICE)).find({})).length, 1, 'the owner too, as a reader: her role was assigned with no document');
    assert.deepEqual(await system.findOne({ _id: victimTask()._id }), victimTask(), 'unchanged');
    // Outside sync each document picks its role: Alice owns hers.
    assert.equal((await as(user(ALICE)).updateOne({ _id: victimTask()._id }, { $set: { name: 'renamed' } })).modifiedCount, 1);
  });

  test('the first applying role decides: when it is not Sync compatible the session gets nothing, later roles are not tried', async () => {
    const incompatible = [
      { ...READER, document_filters: { read: { name: 'x' }, write: false } },
      { ...READER, document_filters: { read: true } },
      { ...READER, read: { '%%user.id': ALICE } },
      { ...READER, fields: { _id: { read: true } } },
      { ...READER, document_filters: { read: { owner_id: { '%function': { name: 'isOwner' } } }, write: false } },
      { ...READER, document_filters: { read: { owner_id: '%%root.owner_id' }, write: false } },
    ];
    for (const role of incompatible) {
      const { system, asSync } = await syncSetup([role, READER]);
      await system.insertOne(victimTask());
      assert.deepEqual(await asSync(user(BOB)).find({}), [], JSON.stringify(role));
    }
    const { system, asSync } = await syncSetup([{ ...READER, document_filters: { read: { owner_id: '%%user.id' }, write: false } }, READER]);
    await system.insertOne(victimTask());
    assert.equal((await asSync(user(ALICE)).find({})).length, 1, 'a filter on a queryable field with %%user is compatible');
    assert.equal((await asSync(user(BOB)).find({})).length, 0, 'and selects per document; the later reader role is never tried');
  });

  test('a document read in part comes with its _id, the object\'s identity', async () => {
    const { system, as, asSync } = await syncSetup([{ ...READER, read: false, fields: { name: { read: true } } }]);
    await system.insertOne(victimTask());
    assert.deepEqual(await asSync(user(BOB)).find({}), [{ _id: victimTask()._id, name: 'victim task' }]);
    assert.deepEqual(await as(user(BOB)).find({}), [{ name: 'victim task' }], 'outside sync only the readable fields');
  });
});

describe('role selection', () => {
  const ADMIN_OR_OWNER = {
    roles: [
      { name: 'admin', apply_when: { '%%user.custom_data.isAdmin': true }, read: true, write: true, insert: true, delete: true },
      { name: 'owner', apply_when: { owner_id: '%%user.id' }, read: true, write: true, insert: true, delete: false },
      { name: 'reader', apply_when: { '%%root.public': true }, read: true, write: false, insert: false, delete: false },
    ],
  };

  test('apply_when on custom_data picks the admin role for every document', async () => {
    const { system, as } = await setup(ADMIN_OR_OWNER);
    await system.insertMany([{ _id: 1, owner_id: BOB }, { _id: 2, owner_id: ALICE }, { _id: 3 }]);
    const admin = as(user(ALICE, { isAdmin: true }));
    assert.equal((await admin.find({})).length, 3);
    assert.deepEqual(await admin.deleteMany({}), { deletedCount: 3 });
  });

  test('document-dependent apply_when chooses a role per document', async () => {
    const { system, as } = await setup(ADMIN_OR_OWNER);
    await system.insertMany([{ _id: 1, owner_id: ALICE }, { _id: 2, owner_id: BOB, public: true }, { _id: 3, owner_id: BOB }]);
    const alice = as(user(ALICE));
    assert.deepEqual((await alice.find({}, { sort: { _id: 1 } })).map((d) => d._id), [1, 2]);
    assert.deepEqual((await alice.find({}, { sort: { _id: 1 }, skip: 1, limit: 1 })).map((d) => d._id), [2]);
    assert.equal(await alice.countDocuments(), 2);
    // The owner role may update but not delete; the public document's role may not write at all.
    assert.deepEqual(await alice.updateOne({ _id: 1 }, { $set: { name: 'x' } }), { matchedCount: 1, modifiedCount: 1 });
    await rejectsWith(alice.deleteOne({ _id: 1 }), 'PermissionDenied', /delete not permitted/);
    await rejectsWith(alice.updateOne({ _id: 2 }, { $set: { name: 'x' } }), 'PermissionDenied', /field "name" is not writable/);
    await rejectsWith(alice.updateOne({ _id: 3 }, { $set: { name: 'x' } }), 'NoMatchingRuleFound');
  });

  test('no role at all: reads see nothing and writes fail with NoMatchingRuleFound', async () => {
    const { system, as } = await setup({ roles: [{ name: 'admin', apply_when: { '%%user.custom_data.isAdmin': true }, read: true, write: true }] });
    await system.insertOne({ _id: 1 });
    const alice = as(user(ALICE));
    assert.deepEqual(await alice.find({}), []);
    assert.equal(await alice.countDocuments({}), 0);
    assert.deepEqual(await alice.aggregate([{ $count: 'n' }]), []);
    const error = await rejectsWith(alice.insertOne({ name: 'x' }), 'NoMatchingRuleFound');
    assert.equal(error.httpStatus, 403);
    assert.match(graphqlErrorMessage(error), /^reason="insert not permitted: .*"; code="NoMatchingRuleFound"; untrusted=".*"; details=map\[\]$/);
    await rejectsWith(alice.updateMany({}, { $set: { a: 1 } }), 'NoMatchingRuleFound');
    await rejectsWith(alice.deleteMany({}), 'NoMatchingRuleFound');
  });

  test('%function in apply_when runs once per request through the injected caller', async () => {
    const calls: unknown[][] = [];
    const { system, data } = await setup(
      { roles: [{ name: 'vip', apply_when: { '%%true': { '%function': { name: 'isVip', arguments: ['%%user.id'] } } }, read: true }] },
      {},
      { callFunction: async (name, args, caller) => { calls.push([name, ...args, caller.id]); return args[0] === ALICE; } },
    );
    await system.insertMany([{ _id: 1 }, { _id: 2 }]);
    const scope = data.forUser(user(ALICE));
    assert.equal((await scope.collection('mongodb-atlas', 'todo', 'Task').find({})).length, 2);
    assert.equal(await scope.collection('mongodb-atlas', 'todo', 'Task').countDocuments({}), 2);
    assert.deepEqual(calls, [['isVip', ALICE, ALICE]]);
    assert.equal((await data.forUser(user(BOB)).collection('mongodb-atlas', 'todo', 'Task').find({})).length, 0);
  });

  test('a %function rule is evaluated again on every request of the same user', async () => {
    let vip = true;
    let calls = 0;
    const { system, data } = await setup(
      { roles: [{ name: 'vip', apply_when: { '%%true': { '%function': { name: 'isVip', arguments: [] } } }, read: true }] },
      {},
      { callFunction: async () => { calls++; return vip; } },
    );
    await system.insertMany([{ _id: 1 }, { _id: 2 }]);
    const alice = user(ALICE);
    const tasks = () => data.forUser(alice).collection('mongodb-atlas', 'todo', 'Task');
    assert.equal((await tasks().find({})).length, 2);
    vip = false;
    assert.equal((await tasks().find({})).length, 0);
    assert.equal(calls, 2);
  });

  test('user-only decisions are kept for the same user object, and never shared with another user object', async () => {
    const { system, data } = await setup({
      roles: [{
        name: 'team', apply_when: {},
        document_filters: { read: { team: '%%user.custom_data.team' }, write: { team: '%%user.custom_data.team' } },
        read: true, write: true,
      }],
    });
    await system.insertMany([{ _id: 1, team: 'red' }, { _id: 2, team: 'blue' }, { _id: 3, team: 'red' }]);
    const tasks = (who: DataAccessUser) => data.forUser(who).collection('mongodb-atlas', 'todo', 'Task');
    const red = user(ALICE, { team: 'red' });
    assert.deepEqual((await tasks(red).find({})).map((d) => d._id), [1, 3]);
    assert.deepEqual((await tasks(red).find({ _id: 3 })).map((d) => d._id), [3]);
    // The same user after a change of custom data is a new object (as a refreshed token gives).
    const movedToBlue = user(ALICE, { team: 'blue' });
    assert.deepEqual((await tasks(movedToBlue).find({})).map((d) => d._id), [2]);
    assert.deepEqual((await tasks(red).find({})).map((d) => d._id), [1, 3]);
    // A request carries details rules may read, so its decisions are its own.
    assert.deepEqual((await data.forUser(movedToBlue, { remoteIPAddress: '10.0.0.1' }).collection('mongodb-atlas', 'todo', 'Task').find({})).map((d) => d._id), [2]);
  });

  test('%%request and %%values are available to rules', async () => {
    const { system, as } = await setup(
      { roles: [{ name: 'office', apply_when: { '%%request.remoteIPAddress': { $in: '%%values.officeIps' } }, read: true }] },
      {},
      { values: { officeIps: ['10.0.0.1'] } },
    );
    await system.insertOne({ _id: 1 });
    assert.equal((await as(user(ALICE), { remoteIPAddress: '10.0.0.1' }).find({})).length, 1);
    assert.equal((await as(user(ALICE), { remoteIPAddress: '10.0.0.2' }).find({})).length, 0);
  });
});

describe('insert, delete and search flags', () => {
  test('insert: false and delete: false refuse those actions; reads and updates still work', async () => {
    const { system, as } = await setup({ roles: [{ name: 'editor', apply_when: {}, read: true, write: true, insert: false, delete: false }] });
    await system.insertOne({ _id: 1, name: 'a' });
    const alice = as(user(ALICE));
    await rejectsWith(alice.insertOne({ name: 'b' }), 'PermissionDenied', /insert not permitted/);
    await rejectsWith(alice.insertMany([{ name: 'b' }]), 'PermissionDenied', /insert not permitted/);
    await rejectsWith(alice.updateOne({ _id: 2 }, { $set: { name: 'c' } }, { upsert: true }), 'PermissionDenied', /insert not permitted/);
    await rejectsWith(alice.findOneAndDelete({ _id: 1 }), 'PermissionDenied', /delete not permitted/);
    assert.deepEqual(await alice.findOneAndUpdate({ _id: 1 }, { $set: { name: 'z' } }, { returnNewDocument: true }), { _id: 1, name: 'z' });
    assert.equal(await system.countDocuments({}), 1);
  });

  test('defaults: insert, delete and search are allowed when not set', async () => {
    const { system, as } = await setup({ roles: [{ name: 'all', apply_when: {}, read: true, write: true }] });
    const alice = as(user(ALICE));
    const { insertedId } = await alice.insertOne({ name: 'a' });
    assert.deepEqual(await alice.deleteOne({ _id: insertedId }), { deletedCount: 1 });
    assert.equal(await system.countDocuments({}), 0);
  });

  test('search: false refuses $search pipelines', async () => {
    const { as } = await setup({ roles: [{ name: 'nosearch', apply_when: {}, read: true, search: false }] });
    await rejectsWith(as(user(ALICE)).aggregate([{ $search: { text: { query: 'x', path: 'name' } } }]), 'PermissionDenied', /search not permitted/);
  });
});

describe('field-level rules', () => {
  const FIELD_RULES = {
    roles: [{
      name: 'member', apply_when: {},
      fields: {
        salary: { read: false, write: false },
        notes: { read: { '%%root.owner_id': '%%user.id' }, write: { '%%root.owner_id': '%%user.id' } },
        status: { write: true },
        address: { fields: { city: { read: true, write: true } } },
      },
      additional_fields: { read: true, write: false },
    }],
  };

  test('unreadable fields are left out; write implies read; nested fields', async () => {
    const { system, as } = await setup(FIELD_RULES);
    await system.insertMany([
      { _id: 1, owner_id: ALICE, name: 'a', salary: 10, notes: 'mine', status: 'open', address: { city: 'Oslo', street: 'Main' } },
      { _id: 2, owner_id: BOB, name: 'b', salary: 20, notes: 'his', status: 'done' },
    ]);
    const docs = await as(user(ALICE)).find({}, { sort: { _id: 1 } });
    assert.deepEqual(docs, [
      { _id: 1, owner_id: ALICE, name: 'a', notes: 'mine', status: 'open', address: { city: 'Oslo' } },
      { _id: 2, owner_id: BOB, name: 'b', status: 'done' },
    ]);
    assert.deepEqual(await as(user(ALICE)).find({ _id: 1 }, { projection: { name: 1, salary: 1 } }), [{ _id: 1, name: 'a' }]);
  });

  test('writes that touch a field the role may not write are refused, naming the field', async () => {
    const { system, as } = await setup(FIELD_RULES);
    await system.insertOne({ _id: 1, owner_id: ALICE, name: 'a', salary: 10, address: { city: 'Oslo', street: 'Main' } });
    const alice = as(user(ALICE));
    await rejectsWith(alice.updateOne({ _id: 1 }, { $set: { salary: 99 } }), 'PermissionDenied', /field "salary" is not writable/);
    await rejectsWith(alice.updateOne({ _id: 1 }, { $unset: { name: '' } }), 'PermissionDenied', /field "name" is not writable/);
    await rejectsWith(alice.updateOne({ _id: 1 }, { $set: { 'address.street': 'Side' } }), 'PermissionDenied', /field "address.street" is not writable/);
    await rejectsWith(alice.replaceOne({ _id: 1 }, { owner_id: ALICE, name: 'a', address: { city: 'Oslo', street: 'Main' } }), 'PermissionDenied', /field "salary"/);
    assert.deepEqual(await alice.updateOne({ _id: 1 }, { $set: { status: 'done', notes: 'n', 'address.city': 'Bergen' } }), { matchedCount: 1, modifiedCount: 1 });
    // Setting a field to the value it already has is no change and needs no permission.
    assert.deepEqual(await alice.updateOne({ _id: 1 }, { $set: { salary: 10 } }), { matchedCount: 1, modifiedCount: 0 });
    const stored = await system.findOne({ _id: 1 });
    assert.deepEqual(stored, { _id: 1, owner_id: ALICE, name: 'a', salary: 10, address: { city: 'Bergen', street: 'Main' }, status: 'done', notes: 'n' });
    await rejectsWith(as(user(BOB)).updateOne({ _id: 1 }, { $set: { notes: 'x' } }), 'PermissionDenied', /field "notes" is not writable/);
  });

  test('additional_fields decide fields not listed', async () => {
    const { system, as } = await setup({
      roles: [{ name: 'r', apply_when: {}, fields: { name: { read: true, write: true } }, additional_fields: { read: false, write: false }, insert: true }],
    });
    await system.insertOne({ _id: 1, name: 'a', secret: 's' });
    const alice = as(user(ALICE));
    assert.deepEqual(await alice.findOne({}), { name: 'a' });
    await rejectsWith(alice.insertOne({ name: 'b', secret: 'x' }), 'PermissionDenied', /field "secret" is not writable/);
    assert.ok((await alice.insertOne({ name: 'b' })).insertedId instanceof ObjectId);
  });
});

describe('filters', () => {
  test('filters add their query and projection when apply_when holds', async () => {
    const { system, as } = await setup({
      roles: [{ name: 'all', apply_when: {}, read: true, write: true }],
      filters: [
        { name: 'hide archived', apply_when: { '%%user.custom_data.isAdmin': { $ne: true } }, query: { archived: { $ne: true } }, projection: { internal: 0 } },
      ],
    });
    await system.insertMany([{ _id: 1, internal: 'x' }, { _id: 2, archived: true, internal: 'y' }]);
    assert.deepEqual(await as(user(ALICE)).find({}), [{ _id: 1 }]);
    assert.deepEqual(await as(user(ALICE)).updateMany({}, { $set: { seen: true } }), { matchedCount: 1, modifiedCount: 1 });
    assert.equal((await as(user(ALICE, { isAdmin: true })).find({})).length, 2);
  });
});

describe('default rules and data sources', () => {
  test('collections without rules use default_rule.json', async () => {
    const { data, store } = await setup(OWNER_ONLY, {
      'data_sources/mongodb-atlas/default_rule.json': { roles: [{ name: 'read-only', apply_when: {}, read: true, write: false, insert: false, delete: false }] },
    });
    await store.collection('todo', 'Event').insertOne({ _id: 1, kind: 'x' });
    const events = data.forUser(user(ALICE)).collection('mongodb-atlas', 'todo', 'Event');
    assert.deepEqual(await events.find({}), [{ _id: 1, kind: 'x' }]);
    await rejectsWith(events.insertOne({ kind: 'y' }), 'PermissionDenied', /insert not permitted/);
    await rejectsWith(events.updateOne({ _id: 1 }, { $set: { kind: 'z' } }), 'PermissionDenied', /field "kind"/);
  });

  test('no rules and no default rule deny everything', async () => {
    const { data, store } = await setup(OWNER_ONLY);
    await store.collection('todo', 'Event').insertOne({ _id: 1 });
    const events = data.forUser(user(ALICE)).collection('mongodb-atlas', 'todo', 'Event');
    assert.deepEqual(await events.find({}), []);
    await rejectsWith(events.insertOne({}), 'NoMatchingRuleFound');
  });

  test('an unknown data source is a clear error, for the system user too', async () => {
    const { data } = await setup(OWNER_ONLY);
    assert.throws(() => data.forUser(user(ALICE)).collection('cluster-x', 'todo', 'Task'), (e: unknown) =>
      e instanceof DataAccessError && e.errorCode === 'ServiceNotFound' && /cluster-x/.test(e.message));
    assert.throws(() => data.forUser('system').collection('cluster-x', 'todo', 'Task'), DataAccessError);
  });
});

describe('schema validation', () => {
  const SCHEMA = {
    title: 'Task', bsonType: 'object', required: ['_id', 'name', 'isComplete'],
    properties: {
      _id: { bsonType: 'objectId' }, name: { bsonType: 'string' }, isComplete: { bsonType: 'bool' }, done: { bsonType: 'boolean' },
      priority: { bsonType: 'int' }, views: { bsonType: 'long' }, ratio: { bsonType: 'double' }, price: { bsonType: 'decimal' },
      due: { bsonType: 'date' }, ref: { bsonType: 'uuid' }, anything: { bsonType: 'mixed' },
      tags: { bsonType: 'array', items: { bsonType: 'string' } },
      checklist: { bsonType: 'array', items: { bsonType: 'object', required: ['text'], properties: { text: { bsonType: 'string' }, done: { bsonType: 'bool' } } } },
    },
  };
  const OPEN = { roles: [{ name: 'all', apply_when: {}, read: true, write: true }] };

  async function schemaSetup(settings?: Record<string, unknown>, options: Partial<DataAccessOptions> = {}) {
    return setup(OPEN, { [SCHEMA_PATH]: SCHEMA, ...(settings ? { 'graphql/validation_settings.json': settings } : {}) }, options);
  }

  test('valid documents of every bsonType pass', async () => {
    const { as } = await schemaSetup();
    const alice = as(user(ALICE));
    await alice.insertOne({
      name: 'a', isComplete: false, done: true, priority: 3, views: Long.fromNumber(10), ratio: 0.5, price: Decimal128.fromString('9.99'),
      due: new Date(), ref: new UUID(), anything: { x: [1] }, tags: ['t'], checklist: [{ text: 'step', done: false }],
    });
    await alice.insertOne({ _id: new ObjectId(), name: 'b', isComplete: true, priority: new Int32(7), views: 12, ratio: 2 });
    assert.equal(await alice.countDocuments({}), 2);
  });

  test('invalid documents fail with SchemaValidationFailedWrite naming the field path', async () => {
    const { as, system } = await schemaSetup();
    const alice = as(user(ALICE));
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ isComplete: false }, /missing required field "name"/],
      [{ name: 'a', isComplete: 'no' }, /"isComplete" must be of bsonType bool/],
      [{ name: 'a', isComplete: true, priority: 1.5 }, /"priority" must be of bsonType int/],
      [{ name: 'a', isComplete: true, priority: Long.fromNumber(1) }, /"priority" must be of bsonType int, got long/],
      [{ name: 'a', isComplete: true, ratio: new Int32(1) }, /"ratio" must be of bsonType double/],
      [{ name: 'a', isComplete: true, views: 1.5 }, /"views" must be of bsonType long/],
      [{ name: 'a', isComplete: true, due: '2024-01-01' }, /"due" must be of bsonType date/],
      [{ name: 'a', isComplete: true, ref: 'not-a-uuid' }, /"ref" must be of bsonType uuid/],
      [{ name: 'a', isComplete: true, tags: ['ok', 5] }, /"tags\.1" must be of bsonType string/],
      [{ name: 'a', isComplete: true, checklist: [{ text: 'x' }, { done: true }] }, /missing required field "checklist\.1\.text"/],
      [{ _id: 'abc', name: 'a', isComplete: true }, /"_id" must be of bsonType objectId/],
    ];
    for (const [doc, message] of cases) {
      const error = await rejectsWith(alice.insertOne(doc), 'SchemaValidationFailedWrite', message);
      assert.equal(error.httpStatus, 400);
    }
    const { insertedId } = await alice.insertOne({ name: 'ok', isComplete: false });
    const error = await rejectsWith(alice.updateOne({ _id: insertedId }, { $set: { 'checklist': [{ text: 1 }] } }), 'SchemaValidationFailedWrite', /"checklist\.0\.text"/);
    assert.equal(error.details.field, 'checklist.0.text');
    await rejectsWith(alice.replaceOne({ _id: insertedId }, { name: 'no flag' }), 'SchemaValidationFailedWrite', /"isComplete"/);
    await rejectsWith(alice.updateOne({ name: 'new' }, { $set: { isComplete: 'x' } }, { upsert: true }), 'SchemaValidationFailedWrite', /"isComplete"/);
    assert.equal(await system.countDocuments({}), 1);
    // The system user is not validated.
    await system.insertOne({ name: 5 });
    assert.equal(await system.countDocuments({}), 2);
  });

  test('WARN lets invalid writes through and reports them; OFF skips validation', async () => {
    const warnings: string[] = [];
    const warn = await schemaSetup({ write_validation_action: 'WARN', write_validation_level: 'STRICT' }, { onWarning: (m) => warnings.push(m) });
    await warn.as(user(ALICE)).insertOne({ name: 5, isComplete: true });
    assert.equal(await warn.system.countDocuments({}), 1);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /"name" must be of bsonType string/);

    const off = await schemaSetup({ write_validation_action: 'ERROR', write_validation_level: 'OFF' });
    await off.as(user(ALICE)).insertOne({ name: 5 });
    assert.equal(await off.system.countDocuments({}), 1);
  });

  test('MODERATE does not validate updates of documents that were already invalid', async () => {
    const { as, system } = await schemaSetup({ write_validation_action: 'ERROR', write_validation_level: 'MODERATE' });
    await system.insertOne({ _id: new ObjectId(), legacy: true });
    const alice = as(user(ALICE));
    assert.deepEqual(await alice.updateOne({ legacy: true }, { $set: { touched: true } }), { matchedCount: 1, modifiedCount: 1 });
    await rejectsWith(alice.insertOne({ legacy: false }), 'SchemaValidationFailedWrite');
  });
});

describe('system user', () => {
  test('bypasses roles, field rules and flags', async () => {
    const { system } = await setup({ roles: [] });
    await system.insertOne({ _id: 1, secret: 's' });
    assert.deepEqual(await system.find({}), [{ _id: 1, secret: 's' }]);
    assert.deepEqual(await system.deleteMany({}), { deletedCount: 1 });
  });
});

describe('aggregate', () => {
  test('runs over the documents and fields the user may read', async () => {
    const { system, as } = await setup({
      roles: [{ name: 'r', apply_when: {}, document_filters: { read: { owner_id: '%%user.id' }, write: false }, fields: { amount: { read: true } }, additional_fields: { read: false } }],
    });
    await system.insertMany([{ _id: 1, owner_id: ALICE, amount: 2 }, { _id: 2, owner_id: ALICE, amount: 3 }, { _id: 3, owner_id: BOB, amount: 100 }]);
    const alice = as(user(ALICE));
    assert.deepEqual(await alice.aggregate([{ $group: { _id: null, total: { $sum: '$amount' } } }]), [{ _id: null, total: 5 }]);
    // Only `amount` is readable, `_id` included.
    assert.deepEqual(await alice.aggregate([{ $sort: { amount: -1 } }]), [{ amount: 3 }, { amount: 2 }]);
    await rejectsWith(alice.aggregate([{ $lookup: { from: 'User', localField: 'owner_id', foreignField: '_id', as: 'u' } }]), 'PermissionDenied', /\$lookup/);
  });
});

describe('example app todo-tracker', () => {
  const EXAMPLE = path.resolve('examples/todo-tracker');

  async function example() {
    const app = await loadApp(nodeFileSystem, EXAMPLE);
    const store = await openEmbeddedStore({});
    const data = createDataAccess({ app, store });
    const system = (coll: string) => data.forUser('system').collection('mongodb-atlas', 'tracker', coll);
    const as = (who: DataAccessUser, coll: string) => data.forUser(who).collection('mongodb-atlas', 'tracker', coll);
    return { system, as };
  }

  const PROJECT = new ObjectId().toHexString();
  const member = user(ALICE, { isAdmin: false, projectIds: [PROJECT] });
  const admin = user(BOB, { isAdmin: true, projectIds: [] });

  test('members see their own and their projects\' tasks and may not write priority; admins may', async () => {
    const { system, as } = await example();
    const other = new ObjectId().toHexString();
    await system('Task').insertMany([
      { _id: new ObjectId(), _partition: ALICE, name: 'mine', status: 'open', isComplete: false, priority: 1 },
      { _id: new ObjectId(), _partition: PROJECT, name: 'team', status: 'open', isComplete: false },
      { _id: new ObjectId(), _partition: other, name: 'foreign', status: 'open', isComplete: false },
    ]);
    const tasks = as(member, 'Task');
    assert.deepEqual((await tasks.find({}, { sort: { name: 1 } })).map((t) => t.name), ['mine', 'team']);
    const insert = { _partition: ALICE, name: 'new', status: 'open', isComplete: false };
    await rejectsWith(tasks.insertOne({ ...insert, priority: 2 }), 'PermissionDenied', /field "priority" is not writable/);
    await tasks.insertOne(insert);
    await rejectsWith(tasks.insertOne({ ...insert, _partition: other }), 'PermissionDenied', /write filter/);
    await rejectsWith(tasks.insertOne({ _partition: ALICE, name: 'no status' }), 'SchemaValidationFailedWrite', /"status"/);
    await rejectsWith(tasks.updateOne({ name: 'mine' }, { $set: { priority: 5 } }), 'PermissionDenied', /priority/);
    assert.equal((await tasks.updateMany({}, { $set: { status: 'done' } })).modifiedCount, 3);
    assert.equal((await system('Task').findOne({ name: 'foreign' }))!.status, 'open');

    const adminTasks = as(admin, 'Task');
    assert.equal((await adminTasks.find({})).length, 4);
    assert.deepEqual(await adminTasks.updateOne({ name: 'team' }, { $set: { priority: 3 } }), { matchedCount: 1, modifiedCount: 1 });
  });

  test('members cannot create projects or change memberIds; admins can', async () => {
    const { system, as } = await example();
    const projectId = ObjectId.createFromHexString(PROJECT);
    await rejectsWith(as(member, 'Project').insertOne({ _id: new ObjectId(), _partition: ALICE, name: 'p' }), 'PermissionDenied', /insert not permitted/);
    await as(admin, 'Project').insertOne({ _id: projectId, _partition: PROJECT, name: 'Team', memberIds: [] });
    const projects = as(member, 'Project');
    assert.deepEqual((await projects.find({})).map((p) => p.name), ['Team']);
    await rejectsWith(projects.updateOne({ _id: projectId }, { $push: { memberIds: new ObjectId() } }), 'PermissionDenied', /memberIds/);
    assert.deepEqual(await projects.updateOne({ _id: projectId }, { $set: { description: 'ours' } }), { matchedCount: 1, modifiedCount: 1 });
    assert.equal((await system('Project').findOne({ _id: projectId }))!.description, 'ours');
  });

  test('a user\'s email is readable and writable only by that user', async () => {
    const { system, as } = await example();
    await system('User').insertMany([
      { _id: new ObjectId(), _partition: ALICE, userId: ALICE, name: 'Alice', email: 'alice@example.com', projectIds: [], isAdmin: false },
      { _id: new ObjectId(), _partition: BOB, userId: BOB, name: 'Bob', email: 'bob@example.com', projectIds: [], isAdmin: false },
    ]);
    const users = as(member, 'User');
    const seen = await users.find({}, { sort: { name: 1 } });
    assert.deepEqual(seen.map((u) => [u.name, u.email]), [['Alice', 'alice@example.com'], ['Bob', undefined]]);
    assert.deepEqual(await users.updateOne({ userId: ALICE }, { $set: { email: 'a@example.org' } }), { matchedCount: 1, modifiedCount: 1 });
    await rejectsWith(users.updateOne({ userId: ALICE }, { $set: { isAdmin: true } }), 'PermissionDenied', /isAdmin/);
    // Bob's document is outside Alice's write filter, so her update matches nothing.
    assert.deepEqual(await users.updateOne({ userId: BOB }, { $set: { name: 'Robert' } }), { matchedCount: 0, modifiedCount: 0 });
  });

  test('collections without rules fall back to the read-only default role', async () => {
    const { system, as } = await example();
    await system('TaskEvent').insertOne({ _id: 1, note: 'created' });
    assert.deepEqual(await as(member, 'TaskEvent').find({}), [{ _id: 1, note: 'created' }]);
    await rejectsWith(as(member, 'TaskEvent').insertOne({ note: 'x' }), 'PermissionDenied', /insert not permitted/);
  });
});

describe('expression analysis', () => {
  test('tells user-only expressions (decided once per request) from document ones', () => {
    const userOnly = [
      { '%%user.custom_data.isAdmin': true },
      { '%%user.id': { $in: '%%values.admins' } },
      { $or: [{ '%%user.data.email': { '%exists': true } }, { '%%request.remoteIPAddress': '1.2.3.4' }] },
      { '%%true': { '%function': { name: 'f', arguments: ['%%user.id'] } } },
      { '%%user.data': { owner: 'literal keys of a value are not fields' } },
      { '%%true': { public: true } },
    ];
    const documentDependent = [
      { owner_id: '%%user.id' },
      { '%%root.owner_id': '%%user.id' },
      { '%%user.id': '%%root.owner_id' },
      { $and: [{ '%%user.id': { $exists: true } }, { '%%this': { $gt: 0 } }] },
      { '%%true': { '%function': { name: 'f', arguments: ['%%prevRoot'] } } },
      { '%%true': { '%%root.public': true } },
    ];
    for (const expr of userOnly) assert.equal(expressionUsesDocument(expr), false, JSON.stringify(expr));
    for (const expr of documentDependent) assert.equal(expressionUsesDocument(expr), true, JSON.stringify(expr));
  });

  test('schema failures format as the GraphQL error message', async () => {
    const { as } = await setup({ roles: [{ name: 'all', apply_when: {}, read: true, write: true }] }, {
      [SCHEMA_PATH]: { title: 'Task', bsonType: 'object', required: ['name'], properties: { name: { bsonType: 'string' } } },
    });
    const error = await rejectsWith(as(user(ALICE)).insertOne({ name: 1 }), 'SchemaValidationFailedWrite');
    assert.match(graphqlErrorMessage(error), /^reason="could not validate document for insert in todo\.Task: field \\"name\\" must be of bsonType string, got int"; code="SchemaValidationFailedWrite"; untrusted="[^"]+"; details=map\[field:name\]$/);
  });
});
