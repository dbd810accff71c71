// Completion over in-memory apps, with `|` marking the cursor in the document being edited.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CompletionItem, TextEdit } from 'vscode-languageserver';
import { completion } from '../../server/features/completion';
import { baseApp } from '../helpers/app';
import { cursor, loadedApp } from './features-fixtures';

function partitionApp(): Record<string, unknown> {
  const files = baseApp();
  files['sync/config.json'] = {
    type: 'partition', state: 'enabled', service_name: 'mongodb-atlas', database_name: 'todo', development_mode_enabled: false,
    partition: { key: '_partition', type: 'string', permissions: { read: true, write: true } },
  };
  const task = files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> };
  task.properties._partition = { bsonType: 'objectId' };
  const user = files['data_sources/mongodb-atlas/todo/User/schema.json'] as { properties: Record<string, unknown> };
  user.properties._partition = { bsonType: 'objectId' };
  user.properties.team = { bsonType: 'string' };
  files['auth/custom_user_data.json'] = { enabled: true, mongo_service_name: 'mongodb-atlas', database_name: 'todo', collection_name: 'User', user_id_field: '_id' };
  return files;
}

async function complete(files: Record<string, unknown>, rel: string, marked: string, schemaDocumentation = true): Promise<CompletionItem[]> {
  const app = await loadedApp(files);
  const { file, position } = cursor(rel, marked);
  return completion(app, file, position, { schemaDocumentation }).items;
}

const labels = (items: CompletionItem[]) => items.map((i) => i.label);
const edit = (item: CompletionItem | undefined) => item?.textEdit as TextEdit;

describe('completion in rule expressions', () => {
  test('expansions after %% in a key, replacing what is typed', async () => {
    const items = await complete(partitionApp(), 'sync/config.json', '{"type": "partition", "partition": {"key": "_partition", "type": "string", "permissions": {"read": {"%%|": "x"}}}}');
    assert.ok(labels(items).includes('%%user'));
    assert.ok(labels(items).includes('%%partition'));
    assert.ok(!labels(items).includes('%%root'), '%%root is a data-rule expansion, not usable in sync');
    const user = items.find((i) => i.label === '%%user')!;
    assert.equal(edit(user).newText, '%%user');
    assert.deepEqual(edit(user).range.start.character, edit(user).range.end.character - 2);
  });

  test('members after %%user. in a value', async () => {
    const items = await complete(partitionApp(), 'sync/config.json', '{"type": "partition", "partition": {"key": "_partition", "type": "string", "permissions": {"read": {"%%partition": "%%user.|"}}}}');
    assert.deepEqual(labels(items).sort(), ['%%user.custom_data', '%%user.data', '%%user.id', '%%user.identities', '%%user.type']);
  });

  test('custom user data fields after %%user.custom_data.', async () => {
    const items = await complete(partitionApp(), 'sync/config.json', '{"type": "partition", "partition": {"key": "_partition", "type": "string", "permissions": {"read": {"%%user.custom_data.|": "%%partition"}}}}');
    assert.ok(labels(items).includes('%%user.custom_data.team'), JSON.stringify(labels(items)));
    assert.ok(labels(items).includes('%%user.custom_data._partition'));
  });

  test('operators after $ and % in keys of a data rule', async () => {
    const rules = 'data_sources/mongodb-atlas/todo/Task/rules.json';
    const dollar = await complete(baseApp(), rules, '{"roles": [{"name": "r", "apply_when": {"%%user.id": {"$|": 1}}}]}');
    assert.ok(labels(dollar).includes('$in') && labels(dollar).includes('$exists'));
    assert.ok(labels(dollar).every((l) => l.startsWith('$')));
    const percent = await complete(baseApp(), rules, '{"roles": [{"name": "r", "apply_when": {"%|": 1}}]}');
    assert.ok(labels(percent).includes('%function') && labels(percent).includes('%%root'));
  });

  test('function names inside %function', async () => {
    const items = await complete(partitionApp(), 'sync/config.json', '{"type": "partition", "partition": {"key": "_partition", "type": "string", "permissions": {"write": {"%%true": {"%function": {"name": "|"}}}}}}');
    assert.deepEqual(labels(items), ['renameTask', 'resetFunc']);
  });

  test('a half-typed, unterminated expansion still completes', async () => {
    const items = await complete(partitionApp(), 'sync/config.json', '{"type": "partition", "partition": {"permissions": {"read": {"%%us|');
    assert.deepEqual(labels(items), ['%%user']);
  });
});

describe('completion of names the app defines', () => {
  test('partition.key offers only fields common to all synced schemas', async () => {
    const items = await complete(partitionApp(), 'sync/config.json', '{"type": "partition", "partition": {"key": "|"}}');
    assert.deepEqual(labels(items).sort(), ['_id', '_partition', 'name']);
    assert.match(items.find((i) => i.label === '_partition')!.detail!, /objectId/);
  });

  test('partition.type preselects the type the schemas declare', async () => {
    const items = await complete(partitionApp(), 'sync/config.json', '{"type": "partition", "partition": {"key": "_partition", "type": |}}');
    assert.deepEqual(labels(items).slice(0, 4).sort(), ['long', 'objectId', 'string', 'uuid']);
    assert.equal(items.find((i) => i.preselect)?.label, 'objectId');
    assert.equal(edit(items.find((i) => i.label === 'uuid')).newText, '"uuid"');
  });

  test('resolver on_type offers Query, Mutation and the document types, with their SDL', async () => {
    const items = await complete(baseApp(), 'graphql/custom_resolvers/x.json', '{"on_type": "|"}');
    assert.deepEqual(labels(items).slice(0, 4), ['Query', 'Mutation', 'Task', 'User']);
    assert.match(String((items[2].documentation as { value: string }).value), /type Task \{/);
  });

  test('generated input types for input_type and document types for payload_type', async () => {
    const input = await complete(baseApp(), 'graphql/custom_resolvers/x.json', '{"input_type_format": "generated", "input_type": "|"}');
    assert.ok(labels(input).includes('TaskInsertInput'));
    assert.ok(!labels(input).includes('Task'));
    const payload = await complete(baseApp(), 'graphql/custom_resolvers/x.json', '{"payload_type_format": "generated-list", "payload_type": "|"}');
    assert.ok(labels(payload).includes('Task'));
    assert.ok(!labels(payload).includes('TaskInsertInput'));
  });

  test('scalar formats offer bsonType names with their GraphQL scalar', async () => {
    const items = await complete(baseApp(), 'graphql/custom_resolvers/x.json', '{"input_type_format": "scalar-list", "input_type": "|"}');
    assert.equal(items.find((i) => i.label === 'long')?.detail, 'GraphQL [Long]');
  });

  test('required lists offer the schema\'s own properties not listed yet', async () => {
    const items = await complete(baseApp(), 'graphql/custom_resolvers/x.json',
      '{"input_type_format": "custom", "input_type": {"title": "In", "bsonType": "object", "properties": {"a": {"bsonType": "string"}, "b": {"bsonType": "int"}}, "required": ["a", "|"]}}');
    assert.deepEqual(labels(items), ['b']);
  });

  test('signing keys offer known secret names and say which have no local value', async () => {
    const files = baseApp();
    files['secrets.json'] = { jwt_key: 'x'.repeat(32) };
    files['values/other.json'] = { name: 'other', from_secret: true, value: 'other_secret' };
    const items = await complete(files, 'auth/providers.json', '{"custom-token": {"name": "custom-token", "type": "custom-token", "secret_config": {"signingKeys": ["|"]}}}');
    assert.deepEqual(labels(items), ['jwt_key', 'other_secret']);
    assert.match(items[1].detail!, /no local value/);
  });
});

describe('completion from the bundled JSON Schemas', () => {
  test('custom-token config keys, with their documentation, leaving out keys already present', async () => {
    const items = await complete(baseApp(), 'auth/providers.json', '{"custom-token": {"name": "custom-token", "type": "custom-token", "config": {"audience": [], |}}}');
    assert.deepEqual(labels(items).sort(), ['jwkURI', 'requireAnyAudience', 'signingAlgorithm', 'useJWKURI']);
    const jwk = items.find((i) => i.label === 'useJWKURI')!;
    assert.equal(edit(jwk).newText, '"useJWKURI": ');
    assert.match(String((jwk.documentation as { value: string }).value), /jwkURI/);
  });

  test('local-userpass gets its own keys, not custom-token\'s', async () => {
    const items = await complete(baseApp(), 'auth/providers.json', '{"local-userpass": {"name": "local-userpass", "type": "local-userpass", "config": {"|"}}}');
    assert.ok(labels(items).includes('resetFunctionName'));
    assert.ok(!labels(items).includes('jwkURI'));
  });

  test('enum values with their descriptions', async () => {
    const items = await complete(baseApp(), 'auth/providers.json', '{"custom-token": {"name": "custom-token", "type": "custom-token", "config": {"signingAlgorithm": "|"}}}');
    assert.deepEqual(labels(items), ['HS256', 'RS256']);
    assert.match(String((items[0].documentation as { value: string }).value), /shared secret/);
  });

  test('provider function names come from functions/', async () => {
    const items = await complete(baseApp(), 'auth/providers.json', '{"local-userpass": {"name": "local-userpass", "type": "local-userpass", "config": {"resetFunctionName": "r|"}}}');
    assert.deepEqual(labels(items), ['renameTask', 'resetFunc']);
  });

  test('schema completions can be turned off for editors that apply the schemas themselves', async () => {
    const items = await complete(baseApp(), 'auth/providers.json', '{"custom-token": {"name": "custom-token", "type": "custom-token", "config": {|}}}', false);
    assert.deepEqual(items, []);
  });

  test('a file outside any app still gets schema completions', async () => {
    const { file, position } = cursor('auth/providers.json', '{"anon-user": {"type": "anon-user", "|"}}');
    const items = completion(undefined, file, position).items;
    assert.ok(labels(items).includes('disabled'));
    assert.ok(!labels(items).includes('type'));
  });
});
