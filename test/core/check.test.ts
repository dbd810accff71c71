// checkApp end to end over in-memory apps: expression analysis wired to the app's facts, sync checks,
// and the robustness promise (broken input yields diagnostics, never an exception).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { checkApp } from '../../core/check';
import { nodeFileSystem } from '../../core/fs';
import { loadApp } from '../../core/load';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';

const EXAMPLE = path.resolve(__dirname, '../../examples/todo-tracker');

function partitionSync(permissions: Record<string, unknown>, type = 'string') {
  return { type: 'partition', state: 'enabled', service_name: 'mongodb-atlas', database_name: 'todo', development_mode_enabled: false,
    partition: { key: '_partition', type, permissions } };
}

async function check(files: Record<string, unknown>) {
  return checkApp(await loadApp(appFs(files), APP_ROOT));
}

describe('checkApp', () => {
  test('sync permissions are analysed with the app facts (unknown expansion, missing %function)', async () => {
    const files = baseApp();
    files['sync/config.json'] = partitionSync({ read: { '%%usr.id': '%%partition' }, write: { '%%true': { '%function': { name: 'canWrite', arguments: ['%%partition'] } } } });
    const schema = files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> };
    schema.properties._partition = { bsonType: 'string' };
    const ds = await check(files);
    const expansion = ds.find((d) => d.code === 'rule/unknown-expansion')!;
    assert.ok(expansion, JSON.stringify(ds));
    assert.equal(path.relative(APP_ROOT, expansion.file), path.join('sync', 'config.json'));
    assert.ok(ds.some((d) => d.code === 'rule/unknown-function'));
  });

  test('a partition key whose schema type differs from partition.type is an error at the bsonType', async () => {
    const files = baseApp();
    files['sync/config.json'] = partitionSync({ read: true, write: true }, 'objectId');
    const schema = files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> };
    schema.properties._partition = { bsonType: 'string' };
    const mismatch = (await check(files)).find((d) => d.code === 'sync/partition-type-mismatch')!;
    assert.ok(mismatch);
    assert.deepEqual(mismatch.data, { schemaType: 'string', partitionType: 'objectId' });
  });

  test('a partition type mismatch is reported at partition.type in sync/config.json too, related to each schema', async () => {
    const files = baseApp();
    files['sync/config.json'] = partitionSync({ read: true, write: true }, 'objectId');
    for (const collection of ['Task', 'User']) {
      const schema = files[`data_sources/mongodb-atlas/todo/${collection}/schema.json`] as { properties: Record<string, unknown> };
      schema.properties._partition = { bsonType: 'string' };
    }
    const diagnostics = await check(files);
    const atConfig = diagnostics.filter((d) => d.code === 'sync/partition-type-mismatch' && d.file === path.join(APP_ROOT, 'sync/config.json'));
    assert.equal(atConfig.length, 1, JSON.stringify(diagnostics));
    const [mismatch] = atConfig;
    assert.equal(mismatch!.severity, 'error');
    const configText = JSON.stringify(files['sync/config.json'], null, 2);
    const typeLine = configText.split('\n').findIndex((l) => l.includes('"type": "objectId"'));
    assert.equal(mismatch!.range.start.line, typeLine, 'at the partition.type value');
    assert.match(mismatch!.message, /partition\.type is "objectId" but the partition key "_partition" is string in todo\.Task; string in todo\.User/);
    const atSchemas = diagnostics.filter((d) => d.code === 'sync/partition-type-mismatch' && d.file !== mismatch!.file);
    assert.deepEqual(mismatch!.related!.map((r) => [path.relative(APP_ROOT, r.file), r.range]), atSchemas.map((d) => [path.relative(APP_ROOT, d.file), d.range]));
    assert.deepEqual(mismatch!.data, { schemaType: 'string' });
  });

  test('a partition key that no schema defines is an error', async () => {
    const files = baseApp();
    files['sync/config.json'] = partitionSync({ read: true, write: true });
    assert.ok((await check(files)).some((d) => d.code === 'sync/partition-key-missing'));
  });

  test('data-rule expressions in rules.json and can_evaluate are analysed', async () => {
    const files = baseApp();
    files['data_sources/mongodb-atlas/todo/Task/rules.json'] = { database: 'todo', collection: 'Task', roles: [{ name: 'r', apply_when: { '%%user.idd': 'x' }, read: true, write: true }] };
    files['functions/config.json'] = [{ name: 'resetFunc', private: true, can_evaluate: { '%%partition': 'x' } }, { name: 'renameTask' }];
    const codes = (await check(files)).map((d) => d.code);
    assert.ok(codes.includes('rule/unknown-expansion'));
    assert.ok(codes.includes('rule/partition-outside-sync'));
  });

  test('a synced custom user data collection is a privilege escalation: warned at the sync write permission, with the fields rules read', async () => {
    const files = baseApp();
    files['auth/custom_user_data.json'] = { enabled: true, mongo_service_name: 'mongodb-atlas', database_name: 'todo', collection_name: 'User', user_id_field: 'userId' };
    files['sync/config.json'] = partitionSync({ read: { '%%user.id': '%%partition' }, write: { '$or': [{ '%%user.id': '%%partition' }, { '%%user.custom_data.isAdmin': true }] } });
    for (const collection of ['Task', 'User']) {
      (files[`data_sources/mongodb-atlas/todo/${collection}/schema.json`] as { properties: Record<string, unknown> }).properties._partition = { bsonType: 'string' };
    }
    files['data_sources/mongodb-atlas/todo/Task/rules.json'] = { database: 'todo', collection: 'Task', roles: [{ name: 'admin', apply_when: { '%%user.custom_data.isAdmin': true }, read: true, write: true }, { name: 'team', apply_when: {}, document_filters: { read: { team: { $in: '%%user.custom_data.teams' } }, write: false }, read: true, write: false }] };
    const warned = (await check(files)).filter((d) => d.code === 'sync/writable-custom-user-data');
    assert.equal(warned.length, 1);
    assert.equal(warned[0]!.severity, 'warning');
    assert.equal(path.relative(APP_ROOT, warned[0]!.file), path.join('sync', 'config.json'));
    assert.match(warned[0]!.message, /todo\.User holds the custom user data and is synced.*"isAdmin", "teams"/);
    assert.deepEqual(warned[0]!.data, { collection: 'todo.User', fields: ['isAdmin', 'teams'] });
    assert.deepEqual(warned[0]!.related!.map((r) => path.relative(APP_ROOT, r.file)), [path.join('data_sources/mongodb-atlas/todo/User/schema.json'), path.join('auth/custom_user_data.json')]);

    // Not synced, or no user may write: no warning.
    const readOnly = baseApp();
    Object.assign(readOnly, { 'auth/custom_user_data.json': files['auth/custom_user_data.json'], 'sync/config.json': partitionSync({ read: true, write: false }) });
    (readOnly['data_sources/mongodb-atlas/todo/User/schema.json'] as { properties: Record<string, unknown> }).properties._partition = { bsonType: 'string' };
    assert.deepEqual((await check(readOnly)).filter((d) => d.code.startsWith('sync/writable')), []);
  });

  test('a field the rules grant access by and keep read-only is writable through sync: warned with the reason', async () => {
    const files = baseApp();
    files['sync/config.json'] = partitionSync({ read: true, write: { '%%user.id': '%%partition' } });
    (files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> }).properties._partition = { bsonType: 'string' };
    files['data_sources/mongodb-atlas/todo/Task/rules.json'] = { database: 'todo', collection: 'Task', roles: [{
      name: 'shared', apply_when: {}, document_filters: { read: { sharedWith: '%%user.id' }, write: { owner: '%%user.id' } }, read: true, write: true,
      fields: { sharedWith: { read: true, write: false }, owner: { read: true, write: true } },
    }] };
    const warned = (await check(files)).filter((d) => d.code === 'sync/writable-access-field');
    assert.deepEqual(warned.map((d) => d.data), [{ collection: 'todo.Task', field: 'sharedWith' }]);
    assert.match(warned[0]!.message, /grant access by "sharedWith" and keep role "shared" from writing it, but sync writes bypass rules/);
  });

  test('the example app has no errors or warnings', async () => {
    const ds = checkApp(await loadApp(nodeFileSystem, EXAMPLE));
    assert.deepEqual(ds.filter((d) => d.severity === 'error' || d.severity === 'warning'), []);
  });
});

describe('robustness: every config file of the example app, broken every way', () => {
  const exampleFiles: Record<string, string> = {};
  (function walk(dir: string) {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p); else exampleFiles[path.relative(EXAMPLE, p).split(path.sep).join('/')] = fs.readFileSync(p, 'utf8');
    }
  })(EXAMPLE);
  const jsonFiles = Object.keys(exampleFiles).filter((f) => f.endsWith('.json'));

  const variants: Array<[string, (text: string) => string]> = [
    ['empty', () => ''],
    ['truncated', (t) => t.slice(0, Math.floor(t.length / 2))],
    ['wrong top-level type', (t) => (t.trim().startsWith('[') ? '{"a": 1}' : '[1, "two", null]')],
    ['every value mistyped', (t) => JSON.stringify(JSON.parse(t), (_k, v) => (typeof v === 'string' ? 42 : typeof v === 'number' ? 'x' : typeof v === 'boolean' ? {} : v))],
    ['null', () => 'null'],
  ];

  test(`${jsonFiles.length} files × ${variants.length} breakages give diagnostics on the broken file, never an exception`, async () => {
    assert.ok(jsonFiles.length >= 25);
    for (const rel of jsonFiles) {
      for (const [name, breakIt] of variants) {
        const files = { ...exampleFiles, [rel]: breakIt(exampleFiles[rel]) };
        let diagnostics;
        try {
          diagnostics = checkApp(await loadApp(appFs(files), APP_ROOT));
        } catch (e) {
          assert.fail(`${rel} (${name}) threw: ${(e as Error).stack}`);
        }
        const here = diagnostics.filter((d) => d.file === path.join(APP_ROOT, rel));
        // A mistyped file whose schema accepts strings-as-numbers may legitimately pass; every other breakage must be reported.
        if (name !== 'every value mistyped' || /"[^"]+"\s*:\s*"/.test(exampleFiles[rel])) {
          assert.ok(here.length > 0 || diagnostics.some((d) => d.severity === 'error'), `${rel} (${name}) produced no diagnostic`);
        }
      }
    }
  });
});

describe('CheckCache', () => {
  test('a second check after editing one file gives the same diagnostics as a fresh check', async () => {
    const { CheckCache } = await import('../../core/check');
    const { ParseCache } = await import('../../core/load');
    const files = baseApp();
    files['sync/config.json'] = partitionSync({ read: { '%%usr.id': '%%partition' }, write: true });
    const parseCache = new ParseCache();
    const cache = new CheckCache();
    const first = checkApp(await loadApp(appFs(files), APP_ROOT, { cache: parseCache }), cache);
    assert.ok(first.some((d) => d.code === 'rule/unknown-expansion'));
    (files['graphql/custom_resolvers/mutation_renameTask.json'] as Record<string, unknown>).function_name = 'gone';
    files['functions/config.json'] = [{ name: 'resetFunc', private: true }];
    delete files['functions/renameTask.js'];
    const incremental = checkApp(await loadApp(appFs(files), APP_ROOT, { cache: parseCache }), cache);
    const fresh = checkApp(await loadApp(appFs(files), APP_ROOT));
    assert.deepEqual(incremental, fresh);
    assert.ok(incremental.some((d) => d.code === 'resolver/unknown-function'));
  });
});

describe('migration to flexible sync', () => {
  test('each sync permission gets one information diagnostic listing what cannot migrate', async () => {
    const ds = checkApp(await loadApp(nodeFileSystem, EXAMPLE)).filter((d) => d.code === 'rule/migration-blocker');
    assert.equal(ds.length, 2);
    assert.ok(ds.every((d) => d.severity === 'information'));
    const read = ds.find((d) => /The read permission/.test(d.message))!;
    assert.match(read.message, /%%partition \(lines \d+(, \d+)+\) and %function \(line \d+\) have no flexible sync equivalent/);
  });
});

describe('partition key writes', () => {
  test('a role that lets clients change the partition key is warned about; an insert-only field rule is not', async () => {
    const files = baseApp();
    files['sync/config.json'] = partitionSync({ read: true, write: true });
    const schema = files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> };
    schema.properties._partition = { bsonType: 'string' };
    files['data_sources/mongodb-atlas/todo/Task/rules.json'] = { database: 'todo', collection: 'Task', roles: [
      { name: 'editor', apply_when: {}, read: true, write: true },
      { name: 'member', apply_when: {}, fields: { _partition: { read: true, write: { '%%prevRoot': { $exists: false } } } }, additional_fields: { read: true, write: true } },
      { name: 'viewer', apply_when: {}, read: true, write: false },
    ] };
    const writable = (await check(files)).filter((d) => d.code === 'sync/partition-key-writable');
    assert.deepEqual(writable.map((d) => d.message.match(/Role "(\w+)"/)?.[1]), ['editor']);
    assert.equal(writable[0].severity, 'warning');
  });
});
