import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { findAppRoots, findAppRootUpwards, loadApp } from '../../core/load';
import { memoryFileSystem } from '../../core/fs';
import { validateReferences } from '../../core/validate/references';
import { DiagnosticSink } from '../../core/diagnostics';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';

const rel = (p: string) => path.relative(APP_ROOT, p).split(path.sep).join('/');

describe('loadApp', () => {
  test('loads a 20210101 export into the model', async () => {
    const app = await loadApp(appFs(baseApp()), APP_ROOT);
    assert.equal(app.generation, '20210101');
    assert.equal(app.appId, 'tasks-abcde');
    assert.equal(app.name, 'tasks');
    assert.deepEqual(app.authProviders.map((p) => p.name), ['local-userpass', 'api-key']);
    assert.deepEqual([...app.functions.keys()].sort(), ['renameTask', 'resetFunc']);
    assert.equal(app.functions.get('resetFunc')!.private, true);
    assert.ok(app.functions.get('renameTask')!.sourceFile!.text.includes('exports'));
    assert.equal(app.dataSources.length, 1);
    assert.deepEqual(app.dataSources[0].collections.map((c) => `${c.database}.${c.collection}`), ['todo.Task', 'todo.User']);
    assert.equal(app.graphql.customResolvers[0].fieldName, 'renameTask');
    assert.equal(app.graphql.customResolvers[0].payloadTypeFormat, 'generated');
    assert.equal(app.sync!.developmentModeEnabled, false);
    assert.deepEqual(app.values.map((v) => v.name), ['appName']);
    assert.deepEqual(app.environments.map((e) => e.name), ['no-environment']);
    assert.deepEqual(app.loadDiagnostics, []);
  });

  test('v3: root_config.json with the version and ids in .mdb/meta.json, https_endpoints', async () => {
    const files = baseApp();
    delete files['realm_config.json'];
    files['root_config.json'] = { name: 'tasks', deployment_model: 'GLOBAL', provider_region: 'aws-us-east-1' };
    files['.mdb/meta.json'] = { config_version: 20230101, app_id: '64aa00000000000000000000', group_id: 'g1', client_app_id: 'tasks-zzzzz' };
    files['https_endpoints/config.json'] = [{ route: '/hello', http_method: 'GET', function_name: 'renameTask', validation_method: 'NO_VALIDATION' }];
    const app = await loadApp(appFs(files), APP_ROOT);
    assert.equal(app.generation, '20230101');
    assert.equal(app.appId, 'tasks-zzzzz', 'client_app_id wins over the internal id');
    assert.equal(app.groupId, 'g1');
    assert.equal(app.endpointsFolder, 'https_endpoints');
    assert.equal(app.endpoints[0].route, '/hello');
  });

  test('legacy: stitch.json, per-provider files, functions/<name>/source.js, services rules', async () => {
    const app = await loadApp(appFs({
      'stitch.json': { config_version: 20180301, app_id: 'old-abcde', name: 'old' },
      'auth_providers/anon-user.json': { name: 'anon-user', type: 'anon-user', disabled: false },
      'functions/hello/config.json': { name: 'hello', private: false },
      'functions/hello/source.js': 'exports = function() { return "hi"; };',
      'services/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: {} },
      'services/mongodb-atlas/rules/db.items.json': { database: 'db', collection: 'items', roles: [] },
    }), APP_ROOT);
    assert.equal(app.generation, 'legacy');
    assert.deepEqual(app.authProviders.map((p) => p.type), ['anon-user']);
    assert.deepEqual([...app.functions.keys()], ['hello']);
    assert.ok(app.functions.get('hello')!.sourceFile);
    assert.equal(app.dataSources[0].collections[0].collection, 'items');
  });

  test('function names keep sub-folders; sources without a manifest entry get defaults', async () => {
    const files = baseApp();
    files['functions/endpoint/hello.js'] = 'exports = () => 1;';
    const app = await loadApp(appFs(files), APP_ROOT);
    const fn = app.functions.get('endpoint/hello')!;
    assert.equal(fn.private, false);
    assert.equal(fn.manifest, undefined);
  });

  test('a collection folder without rules.json gets its database and collection from the folder names', async () => {
    const files = baseApp();
    delete files['data_sources/mongodb-atlas/todo/Task/rules.json'];
    const app = await loadApp(appFs(files), APP_ROOT);
    const task = app.dataSources[0].collections.find((c) => c.collection === 'Task')!;
    assert.equal(task.database, 'todo');
    assert.equal(task.rules, undefined);
    assert.deepEqual(app.loadDiagnostics, []);
  });

  test('syntax errors are located, and the rest of the app still loads', async () => {
    const files = baseApp();
    files['graphql/custom_resolvers/mutation_renameTask.json'] = '{\n  "on_type": "Mutation",\n  "field_name": "renameTask"\n  "function_name": "x"\n}';
    files['sync/config.json'] = '';
    const app = await loadApp(appFs(files), APP_ROOT);
    const syntax = app.loadDiagnostics.find((d) => d.code === 'json/syntax')!;
    assert.equal(rel(syntax.file), 'graphql/custom_resolvers/mutation_renameTask.json');
    assert.deepEqual(syntax.range.start, { line: 3, character: 2 });
    assert.ok(app.loadDiagnostics.some((d) => d.code === 'json/empty' && rel(d.file) === 'sync/config.json'));
    assert.equal(app.functions.size, 2, 'functions still load');
    assert.equal(app.dataSources[0].collections.length, 2, 'data sources still load');
  });

  test('empty rules.json and a rules.json naming another collection are errors at the right key', async () => {
    const files = baseApp();
    files['data_sources/mongodb-atlas/todo/User/rules.json'] = {};
    files['data_sources/mongodb-atlas/todo/Task/rules.json'] = { database: 'todo', collection: 'Tasks' };
    const app = await loadApp(appFs(files), APP_ROOT);
    assert.ok(app.loadDiagnostics.some((d) => d.code === 'rules/empty'));
    const mismatch = app.loadDiagnostics.find((d) => d.code === 'rules/collection-mismatch')!;
    assert.equal(mismatch.range.start.line, 2);
  });

  test('a folder with no root file yields a diagnostic instead of throwing', async () => {
    const app = await loadApp(appFs({ 'functions/a.js': 'exports = () => 1;' }), APP_ROOT);
    assert.ok(app.loadDiagnostics.some((d) => d.code === 'app/no-root-file'));
    assert.ok(app.functions.has('a'));
  });
});

describe('finding apps', () => {
  const fs = memoryFileSystem({
    '/ws/a/realm_config.json': '{"config_version": 20210101}',
    '/ws/a/functions/config.json': '[]',
    '/ws/nested/b/root_config.json': '{}',
    '/ws/legacy/config.json': '{"config_version": 20180301}',
    '/ws/notanapp/config.json': '{"port": 1}',
    '/ws/node_modules/x/realm_config.json': '{}',
  });

  test('findAppRoots finds every generation, skips node_modules and plain config.json folders', async () => {
    assert.deepEqual(await findAppRoots(fs, '/ws'), ['/ws/a', '/ws/legacy', '/ws/nested/b'].map((p) => path.resolve(p)));
  });

  test('findAppRootUpwards walks up from a sub-folder', async () => {
    assert.equal(await findAppRootUpwards(fs, '/ws/a/functions'), path.resolve('/ws/a'));
    assert.equal(await findAppRootUpwards(fs, '/ws/notanapp'), undefined);
  });
});

describe('validateReferences', () => {
  async function diagnose(files: Record<string, unknown>) {
    const sink = new DiagnosticSink();
    validateReferences(await loadApp(appFs(files), APP_ROOT), sink);
    return sink.items;
  }

  test('the base app has no reference problems', async () => {
    const items = await diagnose(baseApp());
    assert.deepEqual(items.filter((d) => d.code !== 'relationship/unknown-target'), []);
  });

  test('resolver/unknown-function points at the function_name value and suggests the closest name', async () => {
    const files = baseApp();
    (files['graphql/custom_resolvers/mutation_renameTask.json'] as Record<string, unknown>).function_name = 'renameTsk';
    const d = (await diagnose(files)).find((x) => x.code === 'resolver/unknown-function')!;
    assert.equal(rel(d.file), 'graphql/custom_resolvers/mutation_renameTask.json');
    assert.deepEqual(d.range.start, { line: 3, character: 19 });
    assert.match(d.message, /Did you mean "renameTask"/);
    assert.deepEqual(d.data, { functionName: 'renameTsk', hasInput: true, computed: false });
  });

  test('provider name must equal its type and its key', async () => {
    const files = baseApp();
    files['auth/providers.json'] = { 'api-key': { name: 'apikey', type: 'api-key', disabled: false } };
    const codes = (await diagnose(files)).map((d) => d.code);
    assert.ok(codes.includes('auth/name-type-mismatch'));
    assert.ok(codes.includes('auth/key-name-mismatch'));
  });

  test('at most one custom-token provider; reset function must exist', async () => {
    const files = baseApp();
    const providers = files['auth/providers.json'] as Record<string, Record<string, unknown>>;
    providers['local-userpass'].config = { runResetFunction: true, resetFunctionName: 'nope' };
    providers['custom-token'] = { name: 'custom-token', type: 'custom-token', config: {} };
    providers['jwt2'] = { name: 'jwt2', type: 'custom-token', config: {} };
    const codes = (await diagnose(files)).map((d) => d.code);
    assert.ok(codes.includes('auth/unknown-function'));
    assert.ok(codes.includes('auth/duplicate-custom-token'));
  });

  test('relationship targets and source keys must exist', async () => {
    const files = baseApp();
    files['data_sources/mongodb-atlas/todo/Task/relationships.json'] = {
      assignee: { ref: '#/relationship/mongodb-atlas/todo/Person', source_key: 'assignee', foreign_key: '_id', is_list: false },
      owner: { ref: 'mongodb-atlas/todo/User', source_key: 'ownerId', foreign_key: '_id', is_list: false },
    };
    const codes = (await diagnose(files)).map((d) => d.code).sort();
    assert.deepEqual(codes, ['relationship/bad-ref', 'relationship/unknown-source-key', 'relationship/unknown-target']);
  });

  test('custom user data must name an existing data source and function', async () => {
    const files = baseApp();
    files['auth/custom_user_data.json'] = { enabled: true, mongo_service_name: 'mongodb-atlas', database_name: 'todo', collection_name: 'Users', user_id_field: 'userId', on_user_creation_function_name: 'onCreate' };
    const codes = (await diagnose(files)).map((d) => d.code);
    assert.ok(codes.includes('custom-user-data/unknown-collection'));
    assert.ok(codes.includes('custom-user-data/unknown-function'));
  });

  test('duplicate manifest entries, manifest entries without source, duplicate resolver fields', async () => {
    const files = baseApp();
    files['functions/config.json'] = [{ name: 'resetFunc' }, { name: 'resetFunc' }, { name: 'ghost' }, { name: 'renameTask' }];
    files['graphql/custom_resolvers/other.json'] = { ...(files['graphql/custom_resolvers/mutation_renameTask.json'] as object) };
    const codes = (await diagnose(files)).map((d) => d.code);
    assert.ok(codes.includes('function/duplicate-name'));
    assert.ok(codes.includes('function/missing-source'));
    assert.ok(codes.includes('resolver/duplicate-field'));
  });

  test('sync must name a cluster data source', async () => {
    const files = baseApp();
    files['sync/config.json'] = { type: 'partition', state: 'enabled', service_name: 'lake', partition: { key: '_partition', type: 'string', permissions: { read: true, write: true } } };
    files['data_sources/lake/config.json'] = { name: 'lake', type: 'datalake', config: {} };
    const codes = (await diagnose(files)).map((d) => d.code);
    assert.ok(codes.includes('sync/not-a-cluster'));
  });
});

describe('secrets', () => {
  test('a signing key or value secret with no local value is a warning that says how to supply it', async () => {
    const files = baseApp();
    (files['auth/providers.json'] as Record<string, unknown>)['custom-token'] = {
      name: 'custom-token', type: 'custom-token', config: { signingAlgorithm: 'HS256' }, secret_config: { signingKeys: ['jwtKey'] },
    };
    files['values/apiSecret.json'] = { name: 'apiSecret', from_secret: true, value: 'apiSecretValue' };
    const sink = new DiagnosticSink();
    validateReferences(await loadApp(appFs(files), APP_ROOT), sink);
    const missing = sink.items.filter((d) => d.code === 'secret/no-local-value');
    assert.equal(missing.length, 2);
    assert.ok(missing.every((d) => d.severity === 'warning' && /secrets\.json/.test(d.message) && /--secret/.test(d.message)));
    files['secrets.json'] = { jwtKey: 'x'.repeat(32), apiSecretValue: 'y' };
    const sink2 = new DiagnosticSink();
    validateReferences(await loadApp(appFs(files), APP_ROOT), sink2);
    assert.deepEqual(sink2.items.filter((d) => d.code.startsWith('secret')), []);
  });
});

describe('closestName', () => {
  test('finds the nearest name within the limit, case-insensitively, and nothing beyond it', async () => {
    const { closestName } = await import('../../core/spelling');
    assert.equal(closestName('renameTsk', ['renameTask', 'taskSummary']), 'renameTask');
    assert.equal(closestName('RENAMETASK', ['renameTask']), 'renameTask');
    assert.equal(closestName('abc', ['xyz', 'abd', 'abcd']), 'abd');
    assert.equal(closestName('completelyDifferent', ['renameTask']), undefined);
    assert.equal(closestName('ab', ['abcdef'], 2), undefined);
  });
});
