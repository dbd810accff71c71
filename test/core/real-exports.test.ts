// Zero false errors on real exports (issue 11 §2): each class of file content that the platform's exporter
// writes, and that a check once called an error, checked on a small app of our own. Rule of thumb: could a
// platform export contain this? Then it is not an error (at most a warning or information).
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { checkApp } from '../../core/check';
import type { Diagnostic } from '../../core/diagnostics';
import { generateSchema } from '../../core/graphql';
import { loadApp } from '../../core/load';
import { schemasByKind } from '../../core/validate/structure';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';

async function load(files: Record<string, unknown>) {
  return loadApp(appFs(files), APP_ROOT);
}

async function check(files: Record<string, unknown>) {
  return checkApp(await load(files));
}

const errorsOf = (ds: Diagnostic[]) => ds.filter((d) => d.severity === 'error').map((d) => `${path.relative(APP_ROOT, d.file)} ${d.code} ${d.message}`);
const withCode = (ds: Diagnostic[], code: string) => ds.filter((d) => d.code === code);

describe('real exports check without false errors', () => {
  test('the base app has no error (the baseline the other cases change)', async () => {
    assert.deepEqual(errorsOf(await check(baseApp())), []);
  });

  test('"" is "not set" for optional strings, enums, paths and booleans; a boolean "" reads as false', async () => {
    const files = baseApp();
    files['hosting/config.json'] = { enabled: false, app_default_domain: '', custom_domain: '', default_error_path: '', default_error_code: '' };
    files['http_endpoints/config.json'] = [{ route: '/hook', http_method: 'POST', function_name: 'renameTask', validation_method: 'NO_VALIDATION', respond_result: true, fetch_custom_user_data: '', create_user_on_auth: false, disabled: false }];
    files['http_endpoints/data_api_config.json'] = { disabled: true, versions: ['v1'], return_type: 'JSON', create_user_on_auth: false, run_as_system: false, run_as_user_id: '', run_as_user_id_script_source: '', validation_method: '', secret_name: '', fetch_custom_user_data: false };
    files['functions/config.json'] = [{ name: 'resetFunc', private: '', run_as_user_id: '', run_as_user_id_script_source: '' }, { name: 'renameTask', private: false }];
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    const app = await load(files);
    assert.equal(app.functions.get('resetFunc')!.private, false, '"" for a boolean reads as false');
    assert.equal(app.endpoints[0]!.fetchCustomUserData, false);
  });

  test('a whole file written as null (the exporter\'s empty list) reads as empty, with a warning', async () => {
    const files = baseApp();
    files['http_endpoints/config.json'] = 'null';
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    assert.equal(withCode(diagnostics, 'schema/null-file')[0]?.severity, 'warning');
  });

  test('custom JWT with useJWKURI: signingAlgorithm absent or "" means RS256', async () => {
    for (const signingAlgorithm of [undefined, '']) {
      const files = baseApp();
      const config: Record<string, unknown> = { audience: '', requireAnyAudience: false, useJWKURI: true, jwkURI: 'https://id.example.com/.well-known/jwks.json' };
      if (signingAlgorithm !== undefined) config.signingAlgorithm = signingAlgorithm;
      (files['auth/providers.json'] as Record<string, unknown>)['custom-token'] = { name: 'custom-token', type: 'custom-token', disabled: false, config, secret_config: { signingKeys: [] }, metadata_fields: [] };
      assert.deepEqual(errorsOf(await check(files)), [], `signingAlgorithm ${JSON.stringify(signingAlgorithm)}`);
    }
  });

  test('root identity fields missing or placeholders in templated exports are information at most', async () => {
    for (const root of [{ config_version: 20180301 }, { config_version: 20180301, app_id: '', name: '' }, { config_version: 20180301, app_id: '<App ID>', name: 'tasks', location: '', deployment_model: '' }]) {
      const files = baseApp();
      delete files['realm_config.json'];
      files['stitch.json'] = root;
      const diagnostics = await check(files);
      assert.deepEqual(errorsOf(diagnostics), [], JSON.stringify(root));
      assert.ok(diagnostics.filter((d) => d.file.endsWith('stitch.json')).every((d) => d.severity === 'information'), JSON.stringify(diagnostics));
    }
    const files = baseApp();
    delete files['realm_config.json'];
    files['root_config.json'] = { name: 'tasks' };
    files['.mdb/meta.json'] = { config_version: 20230101, app_id: '', group_id: '', client_app_id: '', last_pulled: 0 };
    assert.deepEqual(errorsOf(await check(files)), []);
  });

  test('folder-per-function: the source is the one in the same folder, whatever the folder is called', async () => {
    const files = baseApp();
    delete files['functions/config.json'];
    delete files['functions/resetFunc.js'];
    delete files['functions/renameTask.js'];
    files['functions/resetfunc/config.json'] = { name: 'resetFunc', private: true };
    files['functions/resetfunc/source.js'] = 'exports = () => ({ status: "fail" });\n';
    files['functions/Rename-Task/config.json'] = { name: 'renameTask', private: false };
    files['functions/Rename-Task/source.js'] = 'exports = async ({ taskId, name }) => ({ _id: taskId, name });\n';
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    assert.deepEqual(withCode(diagnostics, 'function/missing-source'), []);
    const app = await load(files);
    assert.deepEqual([...app.functions.keys()].sort(), ['renameTask', 'resetFunc']);
    assert.equal(app.functions.get('resetFunc')!.sourceFile!.relPath, 'functions/resetfunc/source.js');
    assert.equal(app.functions.get('renameTask')!.sourceFile!.relPath, 'functions/Rename-Task/source.js');
  });

  test('a function the platform wrote without a source file is a warning', async () => {
    const files = baseApp();
    files['functions/config.json'] = [{ name: 'resetFunc', private: true }, { name: 'renameTask', private: false }, { name: 'emptyOne', private: false }];
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    assert.equal(withCode(diagnostics, 'function/missing-source')[0]?.severity, 'warning');
  });

  test('rules.json naming its database and collection is authoritative over the folder names', async () => {
    const files = baseApp();
    for (const name of ['schema.json', 'relationships.json', 'rules.json']) {
      files[`data_sources/mongodb-atlas/todo/TaskFolder/${name}`] = files[`data_sources/mongodb-atlas/todo/Task/${name}`];
      delete files[`data_sources/mongodb-atlas/todo/Task/${name}`];
    }
    files['data_sources/mongodb-atlas/todo/TaskFolder/rules.json'] = { database: 'todo', collection: 'Task', roles: [], filters: [] };
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    assert.equal(withCode(diagnostics, 'rules/collection-mismatch')[0]?.severity, 'information');
    const app = await load(files);
    const collection = app.dataSources[0]!.collections.find((c) => c.dir.endsWith('TaskFolder'))!;
    assert.equal(collection.collection, 'Task', 'the model (and so the runtime) uses the rules.json namespace');
    assert.equal(generateSchema(app).types.find((t) => t.typeName === 'Task')?.collection, 'Task');
  });

  test('bsonType "float" is a double (Float)', async () => {
    const files = baseApp();
    const schema = files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> };
    schema.properties.price = { bsonType: 'float' };
    schema.properties.sizes = { bsonType: 'array', items: { bsonType: 'float' } };
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    assert.deepEqual(withCode(diagnostics, 'graphql/unsupported-type'), []);
    const sdl = generateSchema(await load(files)).sdl;
    assert.match(sdl, /price: Float\n/);
    assert.match(sdl, /price_inc: Float\n/);
    assert.match(sdl, /sizes: \[Float\]\n/);
  });

  test('JSON-Schema forms: items as a one-element array, type where bsonType goes, properties without a type', async () => {
    const files = baseApp();
    const schema = files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> };
    schema.properties.tags = { bsonType: 'array', items: [{ bsonType: 'string' }] };
    schema.properties.owner = { type: 'objectId' };
    schema.properties.address = { properties: { city: { type: 'string' } } };
    files['graphql/custom_resolvers/query_recent.json'] = {
      on_type: 'Query', field_name: 'recent', function_name: 'renameTask', input_type_format: '',
      payload_type_format: 'custom', payload_type: { title: 'RecentItems', bsonType: 'array', items: [{ title: 'RecentItem', bsonType: 'object', properties: { name: { bsonType: 'string' } } }] },
    };
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    const sdl = generateSchema(await load(files)).sdl;
    assert.match(sdl, /tags: \[String\]\n/);
    assert.match(sdl, /owner: ObjectId\n/);
    assert.match(sdl, /address: TaskAddress\n/);
    assert.match(sdl, /recent: \[RecentItem\]\n/);
  });

  test('values the platform stores but that look wrong are warnings: "false" for a permission, a trigger with nothing to run', async () => {
    const files = baseApp();
    files['data_sources/mongodb-atlas/todo/Task/rules.json'] = { database: 'todo', collection: 'Task', roles: [{ name: 'owner', apply_when: {}, insert: 'false', delete: 'true', search: true, read: true, write: true }], filters: [] };
    files['triggers/onSignup.json'] = { name: 'onSignup', type: 'AUTHENTICATION', config: { operation_type: 'CREATE', providers: ['local-userpass'] }, disabled: true };
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    const noFunction = withCode(diagnostics, 'trigger/no-function');
    assert.equal(noFunction.length, 1);
    assert.equal(noFunction[0]!.severity, 'warning');
    const stringBooleans = diagnostics.filter((d) => d.file.endsWith('Task/rules.json') && d.severity === 'warning');
    assert.equal(stringBooleans.length, 2, JSON.stringify(diagnostics));
  });

  test('a resolver naming a generated type that has no schema is a warning and stays out of the local API', async () => {
    const files = baseApp();
    files['graphql/custom_resolvers/query_old.json'] = { on_type: 'Query', field_name: 'oldReport', function_name: 'renameTask', input_type_format: '', payload_type_format: 'generated', payload_type: 'Report' };
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    const unknown = withCode(diagnostics, 'graphql/unknown-generated-type');
    assert.equal(unknown.length, 1);
    assert.equal(unknown[0]!.severity, 'warning');
    assert.match(unknown[0]!.message, /Query\.oldReport is left out of the local API/);
    assert.doesNotMatch(generateSchema(await load(files)).sdl, /oldReport/);

    files['graphql/custom_resolvers/report_age.json'] = { on_type: 'Report', field_name: 'age', function_name: 'renameTask', input_type_format: '', payload_type_format: 'scalar', payload_type: 'int' };
    const onMissingType = await check(files);
    assert.deepEqual(errorsOf(onMissingType), []);
    const parent = withCode(onMissingType, 'graphql/unknown-resolver-parent');
    assert.equal(parent[0]?.severity, 'warning');
    assert.match(parent[0]!.message, /Report\.age is left out of the local API/);
  });

  test('trailing commas: one warning per comma, the file still reads; unparseable JSON stays an error', async () => {
    const files = baseApp();
    files['values/appName.json'] = '{\n  "name": "appName",\n  "from_secret": false,\n  "value": ["a", "b",],\n}\n';
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    const commas = diagnostics.filter((d) => d.file.endsWith('appName.json'));
    assert.deepEqual(commas.map((d) => [d.code, d.severity, d.range.start.line, d.range.start.character, d.range.end.character]),
      [['json/trailing-comma', 'warning', 3, 20, 21], ['json/trailing-comma', 'warning', 3, 22, 23]]);
    assert.deepEqual((await load(files)).values[0]!.value, ['a', 'b']);

    files['values/appName.json'] = '{"name": "appName", "value": [1 2]}';
    assert.deepEqual(withCode(await check(files), 'json/syntax').map((d) => d.severity), ['error']);
  });

  test('every bundled JSON Schema allows trailing commas, so VS Code\'s JSON service adds no second diagnostic to ours', () => {
    for (const [kind, schema] of Object.entries(schemasByKind)) assert.equal((schema as { allowTrailingCommas?: unknown }).allowTrailingCommas, true, kind);
  });

  test('legacy secrets.json grouped by owner is read, its leaves named by their keys', async () => {
    const files = baseApp();
    delete files['realm_config.json'];
    files['stitch.json'] = { config_version: 20180301, app_id: 'tasks-abcde', name: 'tasks' };
    files['secrets.json'] = { auth_providers: { 'oauth2-google': { googleSecret: 'x' } }, services: { mail: { apiKey: 'y' } } };
    files['values/mailKey.json'] = { name: 'mailKey', from_secret: true, value: 'apiKey' };
    const diagnostics = await check(files);
    assert.deepEqual(errorsOf(diagnostics), []);
    assert.deepEqual(withCode(diagnostics, 'secret/no-local-value'), [], 'the grouped secret "apiKey" supplies the value');
  });
});
