// Quick fixes: each applies a WorkspaceEdit built from a diagnostic of checkApp, checked by applying it.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { CodeAction, CreateFile, TextDocumentEdit, TextEdit } from 'vscode-languageserver';
import { JsonFile } from '../../core/json';
import { pathToUri, toLspDiagnostic } from '../../server/convert';
import { codeActions } from '../../server/features/codeActions';
import type { LoadedApp } from '../../server/workspace';
import { APP_ROOT, baseApp } from '../helpers/app';
import { loadedApp } from './features-fixtures';

/** The quick fixes checkApp's diagnostics of `rel` offer, with the code that produced them. */
function fixesFor(app: LoadedApp, rel: string, code: string): CodeAction[] {
  const file = app.model.files.get(path.join(APP_ROOT, rel))!;
  const diagnostics = app.diagnostics.filter((d) => d.file === file.path && d.code === code).map(toLspDiagnostic);
  assert.ok(diagnostics.length, `expected a ${code} diagnostic in ${rel}; got ${app.diagnostics.map((d) => d.code).join(', ')}`);
  return codeActions(app, file, diagnostics);
}

function applyTo(text: string, edits: TextEdit[]): string {
  const file = new JsonFile('/x.json', 'x.json', text);
  const sorted = [...edits].sort((a, b) => file.offsetAt(b.range.start) - file.offsetAt(a.range.start));
  for (const e of sorted) text = text.slice(0, file.offsetAt(e.range.start)) + e.newText + text.slice(file.offsetAt(e.range.end));
  return text;
}

function applyInFile(app: LoadedApp, action: CodeAction, rel: string): unknown {
  const abs = path.join(APP_ROOT, rel);
  const edits = action.edit?.changes?.[pathToUri(abs)];
  assert.ok(edits, `the fix edits ${rel}: ${JSON.stringify(action.edit)}`);
  return JSON.parse(applyTo(app.model.files.get(abs)!.text, edits));
}

describe('quick fixes', () => {
  test('each trailing comma has one warning and one fix that removes it', async () => {
    const files = baseApp();
    files['values/appName.json'] = '{\n  "name": "appName",\n  "value": ["a", "b",],\n  "from_secret": false,\n}\n';
    const app = await loadedApp(files);
    const fixes = fixesFor(app, 'values/appName.json', 'json/trailing-comma');
    assert.equal(fixes.length, 2);
    assert.ok(fixes.every((f) => f.title === 'Remove the trailing comma' && f.isPreferred));
    const rel = 'values/appName.json';
    const edits = fixes.flatMap((f) => f.edit!.changes![pathToUri(path.join(APP_ROOT, rel))]);
    const fixed = applyTo(app.model.files.get(path.join(APP_ROOT, rel))!.text, edits);
    assert.equal(fixed, '{\n  "name": "appName",\n  "value": ["a", "b"],\n  "from_secret": false\n}\n');
    assert.equal(new JsonFile('/x.json', 'x.json', fixed).trailingCommas.length, 0);
  });

  test('a permission written as the string "false" is fixed to the boolean', async () => {
    const files = baseApp();
    files['data_sources/mongodb-atlas/todo/Task/rules.json'] = { database: 'todo', collection: 'Task', roles: [{ name: 'r', apply_when: {}, read: true, write: true, insert: 'false' }], filters: [] };
    const app = await loadedApp(files);
    const [fix] = fixesFor(app, 'data_sources/mongodb-atlas/todo/Task/rules.json', 'schema/string-boolean');
    assert.equal(fix.title, 'Write false without quotes');
    const fixed = applyInFile(app, fix, 'data_sources/mongodb-atlas/todo/Task/rules.json') as { roles: Array<{ insert: unknown }> };
    assert.equal(fixed.roles[0].insert, false);
  });

  test('a missing resolver function is created with (input, source) when the resolver has input', async () => {
    const files = baseApp();
    (files['graphql/custom_resolvers/mutation_renameTask.json'] as Record<string, unknown>).function_name = 'tasks/rename';
    const app = await loadedApp(files);
    const [fix] = fixesFor(app, 'graphql/custom_resolvers/mutation_renameTask.json', 'resolver/unknown-function');
    assert.equal(fix.title, 'Create functions/tasks/rename.js');
    const [create, write] = fix.edit!.documentChanges! as [CreateFile, TextDocumentEdit];
    assert.equal(create.kind, 'create');
    assert.equal(create.uri, pathToUri(path.join(APP_ROOT, 'functions/tasks/rename.js')));
    assert.equal(write.textDocument.uri, create.uri);
    assert.match(write.edits[0].newText, /^exports = async function \(input, source\) \{$/m);
  });

  test('a computed field without input gets (source)', async () => {
    const files = baseApp();
    files['graphql/custom_resolvers/task_age.json'] = { on_type: 'Task', field_name: 'age', function_name: 'taskAge', input_type_format: '', payload_type: 'int', payload_type_format: 'scalar' };
    const app = await loadedApp(files);
    const [fix] = fixesFor(app, 'graphql/custom_resolvers/task_age.json', 'resolver/unknown-function');
    const write = fix.edit!.documentChanges![1] as TextDocumentEdit;
    assert.match(write.edits[0].newText, /^exports = async function \(source\) \{$/m);
    assert.match(write.edits[0].newText, /parent document/);
  });

  test('a custom payload without a title gets one, named after the field and not taken', async () => {
    const files = baseApp();
    files['graphql/custom_resolvers/query_stats.json'] = {
      on_type: 'Query', field_name: 'task', function_name: 'renameTask', input_type_format: '',
      payload_type_format: 'custom', payload_type: { bsonType: 'object', properties: { count: { bsonType: 'int' } } },
    };
    const app = await loadedApp(files);
    const fixes = fixesFor(app, 'graphql/custom_resolvers/query_stats.json', 'graphql/invalid-custom-type');
    assert.equal(fixes.length, 1);
    // `TaskPayload` is free but the title is singularised into the type name; `Task` itself is taken.
    assert.equal(fixes[0].title, 'Add "title": "TaskPayload"');
    const fixed = applyInFile(app, fixes[0], 'graphql/custom_resolvers/query_stats.json') as { payload_type: Record<string, unknown> };
    assert.equal(Object.keys(fixed.payload_type)[0], 'title');
    assert.equal(fixed.payload_type.title, 'TaskPayload');
  });

  test('a list payload gets the title on its items', async () => {
    const files = baseApp();
    files['graphql/custom_resolvers/query_list.json'] = {
      on_type: 'Query', field_name: 'report', function_name: 'renameTask',
      payload_type_format: 'custom', payload_type: { bsonType: 'array', items: { bsonType: 'object', properties: { n: { bsonType: 'int' } } } },
    };
    const app = await loadedApp(files);
    const [fix] = fixesFor(app, 'graphql/custom_resolvers/query_list.json', 'graphql/invalid-custom-type');
    const fixed = applyInFile(app, fix, 'graphql/custom_resolvers/query_list.json') as { payload_type: { items: Record<string, unknown> } };
    assert.equal(fixed.payload_type.items.title, 'ReportPayload');
  });

  test('partition.type is set to match the schemas, or the schema to match partition.type', async () => {
    const files = baseApp();
    files['sync/config.json'] = { type: 'partition', state: 'enabled', service_name: 'mongodb-atlas', database_name: 'todo', partition: { key: 'owner', type: 'string', permissions: { read: true, write: true } } };
    (files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> }).properties.owner = { bsonType: 'objectId' };
    (files['data_sources/mongodb-atlas/todo/User/schema.json'] as { properties: Record<string, unknown> }).properties.owner = { bsonType: 'string' };
    const app = await loadedApp(files);
    const [setType, setSchema] = fixesFor(app, 'data_sources/mongodb-atlas/todo/Task/schema.json', 'sync/partition-type-mismatch');
    assert.equal(setType.title, 'Set partition.type to "objectId" in sync/config.json');
    assert.equal((applyInFile(app, setType, 'sync/config.json') as { partition: { type: string } }).partition.type, 'objectId');
    assert.equal(setSchema.title, 'Change bsonType to "string" to match partition.type');
    const schema = applyInFile(app, setSchema, 'data_sources/mongodb-atlas/todo/Task/schema.json') as { properties: { owner: { bsonType: string } } };
    assert.equal(schema.properties.owner.bsonType, 'string');
  });

  test('at partition.type, the mismatch links each schema (relatedInformation) and offers only setting partition.type', async () => {
    const files = baseApp();
    files['sync/config.json'] = { type: 'partition', state: 'enabled', service_name: 'mongodb-atlas', database_name: 'todo', partition: { key: 'owner', type: 'string', permissions: { read: true, write: true } } };
    (files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> }).properties.owner = { bsonType: 'objectId' };
    const app = await loadedApp(files);
    const syncFile = app.model.files.get(path.join(APP_ROOT, 'sync/config.json'))!;
    const [lsp] = app.diagnostics.filter((d) => d.file === syncFile.path && d.code === 'sync/partition-type-mismatch').map(toLspDiagnostic);
    assert.ok(lsp);
    const schemaPath = path.join(APP_ROOT, 'data_sources/mongodb-atlas/todo/Task/schema.json');
    const atSchema = app.diagnostics.find((d) => d.file === schemaPath && d.code === 'sync/partition-type-mismatch')!;
    assert.deepEqual(lsp.relatedInformation, [{ location: { uri: pathToUri(schemaPath), range: atSchema.range }, message: '"owner" is objectId in todo.Task' }]);
    const fixes = fixesFor(app, 'sync/config.json', 'sync/partition-type-mismatch');
    assert.deepEqual(fixes.map((f) => f.title), ['Set partition.type to "objectId" in sync/config.json']);
    assert.equal((applyInFile(app, fixes[0]!, 'sync/config.json') as { partition: { type: string } }).partition.type, 'objectId');
  });

  test('signing keys are emptied when a JWK URI supplies the keys', async () => {
    const files = baseApp();
    files['auth/providers.json'] = { 'custom-token': { name: 'custom-token', type: 'custom-token', disabled: false,
      config: { useJWKURI: true, jwkURI: 'https://idp.example.com/keys', signingAlgorithm: 'RS256' }, secret_config: { signingKeys: ['k1'] } } };
    const app = await loadedApp(files);
    const [fix] = fixesFor(app, 'auth/providers.json', 'auth/jwk-uri-with-signing-keys');
    const fixed = applyInFile(app, fix, 'auth/providers.json') as Record<string, { secret_config: { signingKeys: unknown[] } }>;
    assert.deepEqual(fixed['custom-token'].secret_config.signingKeys, []);
  });

  test('a misspelt expansion is replaced by the suggestion', async () => {
    const files = baseApp();
    files['data_sources/mongodb-atlas/todo/Task/rules.json'] = { database: 'todo', collection: 'Task', roles: [{ name: 'owner', apply_when: { owner: '%%usr.id' }, read: true, write: true }] };
    const app = await loadedApp(files);
    const [fix] = fixesFor(app, 'data_sources/mongodb-atlas/todo/Task/rules.json', 'rule/unknown-expansion');
    assert.equal(fix.title, "Change to '%%user.id'");
    const fixed = applyInFile(app, fix, 'data_sources/mongodb-atlas/todo/Task/rules.json') as { roles: { apply_when: unknown }[] };
    assert.deepEqual(fixed.roles[0].apply_when, { owner: '%%user.id' });
  });

  test('a comparison that can never be true is rewritten with %stringToOid', async () => {
    const files = baseApp();
    files['sync/config.json'] = { type: 'partition', state: 'enabled', service_name: 'mongodb-atlas', database_name: 'todo',
      partition: { key: '_partition', type: 'objectId', permissions: { read: { '%%user.id': '%%partition' }, write: { '%%partition': '5f1e0a1b2c3d4e5f6a7b8c9d' } } } };
    for (const coll of ['Task', 'User']) (files[`data_sources/mongodb-atlas/todo/${coll}/schema.json`] as { properties: Record<string, unknown> }).properties._partition = { bsonType: 'objectId' };
    const app = await loadedApp(files);
    const fixes = fixesFor(app, 'sync/config.json', 'rule/type-never-equal');
    assert.equal(fixes.length, 2);
    let text = app.model.sync!.file.text;
    for (const fix of fixes) text = applyTo(text, fix.edit!.changes![pathToUri(app.model.sync!.file.path)]);
    const fixed = JSON.parse(text) as { partition: { permissions: Record<string, unknown> } };
    assert.deepEqual(fixed.partition.permissions.read, { '%%partition': { '%stringToOid': '%%user.id' } });
    assert.deepEqual(fixed.partition.permissions.write, { '%%partition': { '%stringToOid': '5f1e0a1b2c3d4e5f6a7b8c9d' } });
  });

  test('diagnostics without a fix produce no actions', async () => {
    const app = await loadedApp(baseApp());
    const file = app.model.files.get(path.join(APP_ROOT, 'auth/providers.json'))!;
    const actions = codeActions(app, file, [{ range: file.startRange, message: 'x', code: 'schema/unknown-key' }]);
    assert.deepEqual(actions, []);
  });
});
