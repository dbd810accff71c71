import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import { JsonFile, type Range } from '../../core/json';
import { DiagnosticSink, type Diagnostic } from '../../core/diagnostics';
import { schemaKindForPath, schemasByKind, validateStructure } from '../../core/validate/structure';
import catalog from '../../schemas/catalog.json';

const repoRoot = path.resolve(__dirname, '../..');
const schemaDir = path.join(repoRoot, 'schemas');

function check(relPath: string, text: string): { file: JsonFile; diags: Diagnostic[] } {
  const file = new JsonFile(`/app/${relPath}`, relPath, text);
  const sink = new DiagnosticSink();
  validateStructure([file], sink);
  return { file, diags: sink.items };
}

function textAt(file: JsonFile, range: Range): string {
  return file.text.slice(file.offsetAt(range.start), file.offsetAt(range.end));
}

/** The single diagnostic with `code`, after checking it sits at line:character and covers `snippet`. */
function expectOne(result: { file: JsonFile; diags: Diagnostic[] }, code: string, line: number, character: number, snippet: string): Diagnostic {
  const matching = result.diags.filter((d) => d.code === code);
  assert.equal(matching.length, 1, `expected one ${code}, got: ${JSON.stringify(result.diags.map((d) => [d.code, d.message]), null, 1)}`);
  const [d] = matching;
  assert.deepEqual(d.range.start, { line, character }, `${code} start`);
  assert.equal(textAt(result.file, d.range), snippet);
  return d;
}

/** Line and character of the nth occurrence of `snippet`, counted straight from the text. */
function locate(text: string, snippet: string, nth = 0): { line: number; character: number } {
  let offset = -1;
  for (let i = 0; i <= nth; i++) {
    offset = text.indexOf(snippet, offset + 1);
    assert.ok(offset >= 0, `${snippet} occurs ${nth + 1} times`);
  }
  const before = text.slice(0, offset).split('\n');
  return { line: before.length - 1, character: before[before.length - 1].length };
}

/** The diagnostic with `code` that covers exactly `snippet` (its nth occurrence in the text). */
function expectAt(result: { file: JsonFile; diags: Diagnostic[] }, code: string, snippet: string, nth = 0): Diagnostic {
  const matching = result.diags.filter((d) => d.code === code && textAt(result.file, d.range) === snippet);
  assert.equal(matching.length, 1, `expected ${code} at ${snippet}, got: ${JSON.stringify(result.diags.map((d) => [d.code, textAt(result.file, d.range), d.message]), null, 1)}`);
  assert.deepEqual(matching[0].range.start, locate(result.file.text, snippet, nth));
  return matching[0];
}

function assertClean(relPath: string, text: string): void {
  const { diags } = check(relPath, text);
  assert.deepEqual(diags.map((d) => `${d.code}: ${d.message}`), [], `${relPath} should be valid`);
}

describe('schemaKindForPath', () => {
  const cases: [string, string | undefined][] = [
    ['realm_config.json', 'root-config'],
    ['root_config.json', 'root-config'],
    ['stitch.json', 'root-config'],
    ['config.json', 'root-config'],
    ['.mdb/meta.json', 'mdb-meta'],
    ['.mdb/app_meta.json', 'mdb-meta'],
    ['auth/providers.json', 'auth-providers'],
    ['auth/custom_user_data.json', 'custom-user-data'],
    ['functions/config.json', 'functions-config'],
    ['data_sources/mongodb-atlas/config.json', 'data-source-config'],
    ['data_sources/mongodb-atlas/default_rule.json', 'default-rule'],
    ['data_sources/mongodb-atlas/todo/Item/schema.json', 'collection-schema'],
    ['data_sources/mongodb-atlas/todo/Item/relationships.json', 'relationships'],
    ['data_sources/mongodb-atlas/todo/Item/rules.json', 'rules'],
    ['graphql/config.json', 'graphql-config'],
    ['graphql/validation_settings.json', 'graphql-validation-settings'],
    ['graphql/custom_resolvers/mutation_createDefaultAdminUser.json', 'graphql-custom-resolver'],
    ['sync/config.json', 'sync-config'],
    ['environments/no-environment.json', 'environment'],
    ['values/adminEmail.json', 'value'],
    ['triggers/onUserCreated.json', 'trigger'],
    ['http_endpoints/config.json', 'endpoints-config'],
    ['https_endpoints/config.json', 'endpoints-config'],
    ['http_endpoints/data_api_config.json', 'data-api-config'],
    ['https_endpoints/data_api_config.json', 'data-api-config'],
    ['hosting/config.json', 'hosting-config'],
    ['hosting/metadata.json', 'hosting-metadata'],
    // Same names elsewhere are not these files.
    ['nested/realm_config.json', undefined],
    ['functions/legacyFn/config.json', undefined],
    ['functions/package.json', undefined],
    ['hosting/files/config.json', undefined],
    ['hosting/files/values/a.json', undefined],
    ['http_endpoints/svc/config.json', undefined],
    ['data_sources/mongodb-atlas/todo/schema.json', undefined],
    ['data_sources/mongodb-atlas/todo/Item/extra/schema.json', undefined],
    ['graphql/custom_resolvers/nested/x.json', undefined],
    ['triggers/readme.md', undefined],
    ['log_forwarders/f.json', undefined],
  ];
  for (const [relPath, kind] of cases) {
    test(`${relPath} → ${kind ?? 'none'}`, () => assert.equal(schemaKindForPath(relPath), kind));
  }
});

describe('bundled schemas and catalog', () => {
  const schemaFiles = fs.readdirSync(schemaDir).filter((f) => f.endsWith('.schema.json'));

  test('every schema file compiles with ajv and is bundled by its kind', () => {
    assert.ok(schemaFiles.length >= 21);
    const ajv = new Ajv({ allErrors: true, strict: false, formats: { uri: true } });
    for (const name of schemaFiles) {
      const schema = JSON.parse(fs.readFileSync(path.join(schemaDir, name), 'utf8'));
      assert.equal(schema.$schema, 'http://json-schema.org/draft-07/schema#', name);
      assert.doesNotThrow(() => ajv.compile(schema), name);
      assert.deepEqual(schemasByKind[name.replace(/\.schema\.json$/, '')], schema, `${name} is bundled`);
    }
    assert.equal(Object.keys(schemasByKind).length, schemaFiles.length);
  });

  test('every catalog entry points at an existing schema and names its kind', () => {
    const kinds = new Set<string>();
    for (const entry of catalog) {
      assert.match(entry.url, /^\.\/schemas\/[a-z-]+\.schema\.json$/);
      assert.ok(fs.existsSync(path.join(repoRoot, entry.url)), entry.url);
      assert.equal(entry.url, `./schemas/${entry.kind}.schema.json`);
      kinds.add(entry.kind);
      for (const glob of entry.fileMatch) {
        assert.match(glob, /^\*\*\/[^*]/, `${glob} is anchored on a folder or file name`);
        assert.ok(!/^\*\*\/[^/]+$/.test(glob) || !['config.json', 'schema.json', 'rules.json'].includes(glob.slice(3)), `${glob} is narrow`);
      }
    }
    assert.deepEqual([...kinds].sort(), Object.keys(schemasByKind).sort(), 'every schema has catalog globs');
  });

  test('every property carries description and markdownDescription', () => {
    const missing: string[] = [];
    function walk(node: unknown, where: string, isProperty: boolean): void {
      if (Array.isArray(node)) { node.forEach((n, i) => walk(n, `${where}[${i}]`, false)); return; }
      if (typeof node !== 'object' || node === null) return;
      const record = node as Record<string, unknown>;
      if (isProperty && !(typeof record.description === 'string' && typeof record.markdownDescription === 'string')) missing.push(where);
      for (const [key, child] of Object.entries(record)) {
        // `if` subschemas are conditions, and snippets/examples are data, not property declarations.
        if (key === 'if' || key === 'defaultSnippets' || key === 'examples' || key === 'default' || key === 'enum') continue;
        if (key === 'properties' && typeof child === 'object' && child !== null) {
          for (const [prop, schema] of Object.entries(child)) walk(schema, `${where}.properties.${prop}`, true);
        } else walk(child, `${where}.${key}`, false);
      }
    }
    for (const [kind, schema] of Object.entries(schemasByKind)) walk(schema, kind, false);
    assert.deepEqual(missing, []);
  });

  test('enum descriptions line up with their enums', () => {
    function walk(node: unknown, where: string): void {
      if (typeof node !== 'object' || node === null) return;
      const record = node as Record<string, unknown>;
      if (Array.isArray(record.enum) && Array.isArray(record.enumDescriptions)) {
        assert.equal(record.enumDescriptions.length, record.enum.length, where);
      }
      for (const [key, child] of Object.entries(record)) walk(child, `${where}.${key}`);
    }
    for (const [kind, schema] of Object.entries(schemasByKind)) walk(schema, kind);
  });

  test('the collection-schema dialect is the same wherever it is copied', () => {
    const collection = schemasByKind['collection-schema'] as { definitions: Record<string, unknown> };
    const resolver = schemasByKind['graphql-custom-resolver'] as { definitions: Record<string, unknown> };
    assert.deepEqual(resolver.definitions.node, collection.definitions.node);
    assert.deepEqual(resolver.definitions.bsonTypeName, collection.definitions.bsonTypeName);
    const expressionCopies = Object.values(schemasByKind)
      .map((s) => (s as { definitions?: Record<string, unknown> }).definitions?.expression)
      .filter((e) => e !== undefined);
    assert.ok(expressionCopies.length >= 5);
    for (const copy of expressionCopies) assert.deepEqual(copy, expressionCopies[0]);
  });
});

describe('valid real-shaped documents yield no diagnostics', () => {
  const valid: [string, string][] = [
    ['realm_config.json', '{"config_version": 20210101, "name": "MyApp", "location": "US-VA", "deployment_model": "GLOBAL", "allowed_request_origins": ["https://example.org"]}'],
    ['realm_config.json', '{"app_id": "todo-sync-xbrma", "config_version": 20210101, "name": "Todo-Sync", "location": "US-VA", "deployment_model": "GLOBAL"}'],
    ['root_config.json', '{"name": "todo-web", "deployment_model": "LOCAL", "provider_region": "aws-us-east-1", "environment": "", "allowed_request_origins": []}'],
    ['root_config.json', '{"app_id": "tiered-abcde", "config_version": 20210101, "name": "tiered", "location": "IE", "provider_region": "aws-eu-west-1", "deployment_model": "LOCAL", "environment": "production"}'],
    ['stitch.json', '{"app_id": "legacy-xyz", "config_version": 20180301, "name": "legacy", "location": "US-VA", "deployment_model": "GLOBAL", "security": {"allowed_request_origins": []}, "hosting": {}, "custom_user_data_config": {"enabled": false}, "sync": {"development_mode_enabled": false}}'],
    ['config.json', '{"config_version": 20200603, "name": "old", "location": "US-OR", "deployment_model": "GLOBAL"}'],
    ['.mdb/meta.json', '{"config_version": 20230101, "app_id": "64b0c1a2b3c4d5e6f7a8b9c0", "group_id": "5f1f1a3ae4b0c1a2b3c4d5e6", "client_app_id": "todo-sync-xbrma"}'],
    ['.mdb/app_meta.json', '{"group_id": "5f1f1a3ae4b0c1a2b3c4d5e6", "app_id": "64b0c1a2b3c4d5e6f7a8b9c0", "config_version": 20210101}'],
    ['auth/providers.json', JSON.stringify({
      'anon-user': { name: 'anon-user', type: 'anon-user', disabled: true },
      'api-key': { name: 'api-key', type: 'api-key', disabled: true },
      'local-userpass': { name: 'local-userpass', type: 'local-userpass', disabled: false, config: { autoConfirm: true, resetFunctionName: 'resetFunc', runConfirmationFunction: false, runResetFunction: true } },
    })],
    ['auth/providers.json', JSON.stringify({
      'local-userpass': { name: 'local-userpass', type: 'local-userpass', disabled: false, config: { autoConfirm: false, confirmationFunctionName: 'confirmUser', resetFunctionName: 'passwordReset', runConfirmationFunction: true, runResetFunction: true, emailConfirmationUrl: 'https://app.example.com/confirm', confirmEmailSubject: 'Confirm', resetPasswordUrl: 'https://app.example.com/reset', resetPasswordSubject: 'Reset' } },
      'custom-token': { name: 'custom-token', type: 'custom-token', disabled: false, config: { audience: [], requireAnyAudience: false, signingAlgorithm: 'HS256', useJWKURI: false }, secret_config: { signingKeys: ['jwt_signing_key'] }, metadata_fields: [{ required: true, name: 'user_data.name', field_name: 'name' }, { required: false, name: 'user_data.aliases', field_name: 'aliases' }] },
    })],
    ['auth/providers.json', JSON.stringify({
      'custom-token': { name: 'custom-token', type: 'custom-token', disabled: false, config: { audience: [], jwkURI: 'https://idp.example.com/oauth2/default/v1/keys', useJWKURI: true }, secret_config: { signingKeys: [] }, metadata_fields: [] },
      'custom-function': { name: 'custom-function', type: 'custom-function', disabled: false, config: { authFunctionName: 'authFunc' } },
      'oauth2-google': { name: 'oauth2-google', type: 'oauth2-google', disabled: false, config: { clientId: 'abc.apps.googleusercontent.com', openId: true }, secret_config: { clientSecret: 'googleSecret' }, redirect_uris: ['myapp://auth'], metadata_fields: [{ required: false, name: 'email' }] },
      'oauth2-apple': { name: 'oauth2-apple', type: 'oauth2-apple', disabled: true, config: { clientId: 'com.example.app' }, secret_config: { clientSecret: 'appleSecret' }, redirect_uris: [] },
    })],
    ['auth/providers.json', '{"custom-token": {"name": "custom-token", "type": "custom-token", "disabled": false, "config": {"audience": "my-audience", "signingAlgorithm": "RS256"}, "secret_config": {"signingKeys": ["pem1", "pem2", "pem3"]}}}'],
    ['auth/custom_user_data.json', '{"enabled": true, "mongo_service_name": "mongodb-atlas", "database_name": "customData", "collection_name": "users", "user_id_field": "userId", "on_user_creation_function_name": "onUserCreated"}'],
    ['auth/custom_user_data.json', '{"enabled": false}'],
    ['functions/config.json', '[]'],
    ['functions/config.json', '[{"name": "resetFunc", "private": true}, {"name": "updateCollectionView", "private": true, "run_as_system": true}, {"name": "endpoint/hello/latest", "private": false, "can_evaluate": {}, "disable_arg_logs": true}, {"name": "asUser", "run_as_user_id": "5f1f1a3ae4b0c1a2b3c4d5e6", "can_evaluate": {"%%user.custom_data.isAdmin": true}}]'],
    ['data_sources/mongodb-atlas/config.json', '{"name": "mongodb-atlas", "type": "mongodb-atlas", "config": {"clusterName": "Cluster0", "readPreference": "primary", "wireProtocolEnabled": false}, "version": 1}'],
    ['data_sources/cluster-source/config.json', '{"name": "cluster-source", "type": "cluster-source", "config": {"clusterName": "Cluster0"}}'],
    ['data_sources/lake/config.json', '{"name": "lake", "type": "datalake", "config": {"dataLakeName": "FederatedDatabaseInstance0"}}'],
    ['data_sources/mongodb-atlas/todo/Task/schema.json', '{"title": "Task", "bsonType": "object", "required": ["_id", "name"], "properties": {"_id": {"bsonType": "objectId"}, "name": {"bsonType": "string"}, "isComplete": {"bsonType": "bool"}, "priority": {"bsonType": "int"}, "dueDate": {"bsonType": "date"}, "checklist": {"bsonType": "array", "items": {"bsonType": "object", "properties": {"text": {"bsonType": "string"}, "done": {"bsonType": "bool"}}}}}}'],
    ['data_sources/mongodb-atlas/todo/Item/schema.json', '{"title": "Item", "bsonType": "object", "required": ["_id", "isComplete", "owner_id", "summary"], "properties": {"_id": {"bsonType": "objectId"}, "isComplete": {"bsonType": "boolean"}, "owner_id": {"bsonType": "string"}, "summary": {"bsonType": "string"}}}'],
    ['data_sources/mongodb-atlas/app/incident/schema.json', '{"title": "incident", "bsonType": "object", "properties": {"_id": {"bsonType": "uuid"}, "n": {"bsonType": "long"}, "amount": {"bsonType": "decimal"}, "ratio": {"bsonType": "double"}, "at": {"bsonType": "timestamp"}, "blob": {"bsonType": "binData"}, "any": {"bsonType": "mixed"}, "maybe": {"bsonType": ["string", "int"]}, "code": {"bsonType": "string", "enum": ["a", "b"], "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"}}}'],
    ['data_sources/mongodb-atlas/todo/Task/relationships.json', '{"assignee": {"ref": "#/relationship/mongodb-atlas/todo/User", "source_key": "assignee", "foreign_key": "_id", "is_list": false}, "watched by": {"ref": "#/relationship/mongodb-atlas/todo/User", "source_key": "watched by", "foreign_key": "_id", "is_list": true}}'],
    ['data_sources/mongodb-atlas/todo/Item/rules.json', '{"collection": "Item", "database": "todo", "roles": [{"name": "write-own-items", "apply_when": {}, "document_filters": {"read": true, "write": {"owner_id": "%%user.id"}}, "read": true, "write": true, "insert": true, "delete": true, "search": true}], "filters": []}'],
    ['data_sources/mongodb-atlas/todo/Item/rules.json', '{"database": "todo", "collection": "Item", "roles": [{"name": "owner", "apply_when": {"%%root.owner_id": "%%user.id"}, "fields": {"secret": {"read": false, "write": false}, "address": {"read": true, "fields": {"zip": {"read": true, "write": {"%%user.custom_data.isAdmin": true}}}}}, "additional_fields": {"read": true, "write": true}, "insert": true, "delete": false, "search": true}, {"name": "admin", "apply_when": {"%%user.custom_data.isTeamAdmin": true}, "read": true, "write": true}], "filters": [{"name": "hide-drafts", "apply_when": {"%%user.custom_data.isAdmin": {"$ne": true}}, "query": {"draft": false}, "projection": {"notes": 0}}]}'],
    ['data_sources/mongodb-atlas/default_rule.json', '{"roles": [{"name": "read-not-write", "apply_when": {}, "document_filters": {"read": true, "write": false}, "read": true, "write": false, "insert": false, "delete": false, "search": true}]}'],
    ['graphql/config.json', '{"use_natural_pluralization": true}'],
    ['graphql/config.json', '{"use_natural_pluralization": false, "disable_schema_introspection": true}'],
    ['graphql/validation_settings.json', '{"read_validation_action": "ERROR", "read_validation_level": "STRICT", "write_validation_action": "ERROR", "write_validation_level": "STRICT"}'],
    ['graphql/custom_resolvers/mutation_renameTask.json', '{"on_type": "Mutation", "field_name": "renameTask", "function_name": "renameTask", "input_type_format": "custom", "input_type": {"title": "RenameTaskInput", "bsonType": "object", "required": ["taskId", "name"], "properties": {"taskId": {"bsonType": "objectId"}, "name": {"bsonType": "string"}}}, "payload_type_format": "generated", "payload_type": "Task"}'],
    ['graphql/custom_resolvers/task_history.json', '{"on_type": "Task", "field_name": "history", "function_name": "taskHistory", "input_type_format": "", "payload_type_format": "custom", "payload_type": {"bsonType": "array", "items": {"title": "TaskHistoryEntry", "bsonType": "object", "required": ["at", "note"], "properties": {"at": {"bsonType": "string"}, "note": {"bsonType": "string"}}}}}'],
    ['graphql/custom_resolvers/risks.json', '{"on_type": "Query", "field_name": "risks", "function_name": "risks", "input_type": "string", "input_type_format": "scalar", "payload_type": {"title": "RisksPayload", "bsonType": "array", "items": {"bsonType": "object", "properties": {"name": {"bsonType": "string"}}}}, "payload_type_format": "custom"}'],
    ['graphql/custom_resolvers/Mutation_archive.json', '{"on_type": "Mutation", "field_name": "archiveCompletedTasks", "function_name": "archive"}'],
    ['sync/config.json', JSON.stringify({ type: 'partition', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'todo', partition: { key: '_partition', type: 'string', required: true, permissions: { read: { $or: [{ '%%user.id': '%%partition' }, { '%%user.custom_data.shared': '%%partition' }] }, write: { '%%user.id': '%%partition' } } }, client_max_offline_days: 30, is_recovery_mode_disabled: false })],
    ['sync/config.json', '{"type": "partition", "state": "", "service_name": "mongodb-atlas", "partition": {"key": "owner", "type": "objectId", "permissions": {"read": true, "write": {"%%partition": {"%stringToOid": "%%user.id"}}}}, "last_disabled": 1700000000}'],
    ['sync/config.json', '{"type": "flexible", "state": "enabled", "development_mode_enabled": true, "service_name": "mongodb-atlas", "database_name": "todo", "client_max_offline_days": 30, "is_recovery_mode_disabled": false, "queryable_fields_names": ["_id", "owner_id"], "indexed_queryable_fields_names": ["owner_id"], "collection_queryable_fields_names": {"Item": ["team"]}, "asymmetric_tables": [], "permissions": {"rules": {}, "defaultRoles": []}, "last_disabled": 1690000000}'],
    ['sync/config.json', '{"development_mode_enabled": false}'],
    ['environments/production.json', '{"values": {}}'],
    ['environments/development.json', '{"values": {"apiBase": "https://dev.example.com", "limits": {"max": 5}, "flags": [1, 2]}}'],
    ['values/adminEmail.json', '{"id": "64b0c1a2b3c4d5e6f7a8b9c0", "name": "adminEmail", "from_secret": false, "value": "admin@example.com"}'],
    ['values/apiKey.json', '{"name": "apiKey", "from_secret": true, "value": "apiKeySecret"}'],
    ['values/list.json', '{"name": "list", "value": ["a", "b"]}'],
    ['triggers/onUserCreated.json', '{"name": "onUserCreated", "type": "AUTHENTICATION", "config": {"operation_type": "CREATE", "providers": ["local-userpass"]}, "disabled": false, "event_processors": {"FUNCTION": {"config": {"function_name": "onUserCreated"}}}}'],
    ['triggers/copyItems.json', '{"id": "64b0c1a2b3c4d5e6f7a8b9c0", "name": "copyItems", "type": "DATABASE", "config": {"service_name": "mongodb-atlas", "database": "db", "collection": "items", "operation_types": ["INSERT"], "full_document": true, "full_document_before_change": false, "unordered": false, "match": {}, "project": {}, "skip_catchup_events": false, "tolerate_resume_errors": false}, "disabled": false, "event_processors": {"FUNCTION": {"config": {"function_name": "updateCollectionView"}}}}'],
    ['triggers/nightly.json', '{"name": "nightly", "type": "SCHEDULED", "config": {"schedule": "0 3 * * *", "skip_catchup_events": true}, "function_name": "cleanup", "disabled": true}'],
    ['http_endpoints/config.json', '[{"route": "/hello", "http_method": "GET", "function_name": "endpoint/hello", "validation_method": "NO_VALIDATION", "respond_result": true, "fetch_custom_user_data": false, "create_user_on_auth": false, "disabled": false, "return_type": "JSON"}, {"route": "/hook", "http_method": "*", "function_name": "hook", "validation_method": "VERIFY_PAYLOAD", "secret_name": "hookSecret", "respond_result": false, "disabled": false}]'],
    ['https_endpoints/config.json', '[]'],
    ['http_endpoints/data_api_config.json', '{"disabled": false, "versions": ["v1"], "return_type": "JSON", "create_user_on_auth": false, "run_as_system": false, "run_as_user_id": "", "run_as_user_id_script_source": "", "can_evaluate": {}, "log_function_arguments": false, "validation_method": "NO_VALIDATION", "secret_name": "", "fetch_custom_user_data": false}'],
    ['hosting/config.json', '{"enabled": false}'],
    ['hosting/config.json', '{"enabled": true, "custom_domain": "www.example.com", "app_default_domain": "app-abcde.mongodbstitch.com", "default_error_path": "/index.html", "default_error_code": "200"}'],
    ['hosting/metadata.json', '[{"path": "/index.html", "attrs": [{"name": "Cache-Control", "value": "no-cache"}]}]'],
  ];
  const covered = new Set(valid.map(([relPath]) => schemaKindForPath(relPath)));
  test('the valid set covers every schema kind', () => assert.deepEqual([...covered].sort(), Object.keys(schemasByKind).sort()));
  valid.forEach(([relPath, text], i) => test(`${relPath} #${i}`, () => assertClean(relPath, text)));
});

describe('violations are reported with the right code at the right place', () => {
  test('wrong enum value points at the value and lists the choices', () => {
    const r = check('sync/config.json', `{
  "type": "partition",
  "state": "enabled",
  "service_name": "mongodb-atlas",
  "partition": {
    "key": "_partition",
    "type": "int"
  }
}`);
    const d = expectOne(r, 'schema/enum', 6, 12, '"int"');
    assert.equal(d.severity, 'error');
    assert.equal(d.message, '`partition.type` must be one of string, objectId, long, uuid; found "int".');
    assert.equal(r.diags.length, 1);
  });

  test('sync state enum includes the empty string and suggests the near miss', () => {
    const r = check('sync/config.json', '{"type": "flexible", "service_name": "mongodb-atlas", "state": "Enabled"}');
    const d = expectOne(r, 'schema/enum', 0, 63, '"Enabled"');
    assert.match(d.message, /one of enabled, disabled, ""; found "Enabled"\. Did you mean "enabled"\?/);
  });

  test('wrong type in an expression position', () => {
    const r = check('sync/config.json', `{"type": "partition", "service_name": "mongodb-atlas",
 "partition": {"key": "_partition", "type": "string",
   "permissions": {"read": "%%user.id", "write": true}}}`);
    const d = expectOne(r, 'schema/type', 2, 27, '"%%user.id"');
    assert.equal(d.message, '`partition.permissions.read` must be a boolean or an object; found string "%%user.id".');
  });

  test('partition mode requires the partition: reported at the document start', () => {
    const r = check('sync/config.json', `{
  "type": "partition",
  "service_name": "mongodb-atlas"
}`);
    const d = expectOne(r, 'schema/required', 0, 0, '{');
    assert.match(d.message, /^The file is missing the required property `partition`: partition-based sync/);
  });

  test('a partition block in flexible mode is not allowed, at its key', () => {
    const r = check('sync/config.json', `{
  "type": "flexible",
  "service_name": "mongodb-atlas",
  "partition": {"key": "_partition", "type": "string"}
}`);
    expectOne(r, 'schema/not-allowed', 3, 2, '"partition"');
  });

  test('unknown key is a warning on the key, with a suggestion', () => {
    const r = check('auth/providers.json', `{
  "local-userpass": {
    "name": "local-userpass",
    "type": "local-userpass",
    "config": {
      "autoconfirm": true
    }
  }
}`);
    const d = expectOne(r, 'schema/unknown-key', 5, 6, '"autoconfirm"');
    assert.equal(d.severity, 'warning');
    assert.equal(d.message, 'Unknown property `autoconfirm` in `local-userpass.config`; the platform ignores it. Did you mean `autoConfirm`?');
    assert.equal(r.diags.length, 1);
  });

  test('missing required property points at the owning object key and names the property', () => {
    const r = check('auth/providers.json', `{
  "custom-token": {
    "name": "custom-token",
    "type": "custom-token",
    "metadata_fields": [
      {"required": true, "field_name": "name"}
    ]
  }
}`);
    const d = expectOne(r, 'schema/required', 5, 6, '{');
    assert.match(d.message, /^`custom-token\.metadata_fields\[0\]` is missing the required property `name`/);

    const nested = check('auth/providers.json', `{
  "custom-function": {
    "name": "custom-function",
    "type": "custom-function",
    "config": {}
  }
}`);
    const n = expectOne(nested, 'schema/required', 4, 4, '"config"');
    assert.match(n.message, /`custom-function\.config` is missing the required property `authFunctionName`/);
  });

  test('custom-token config: algorithm, audience type, key count, JWK URI format', () => {
    const r = check('auth/providers.json', `{
  "custom-token": {
    "name": "custom-token", "type": "custom-token", "disabled": "false",
    "config": {"audience": 42, "signingAlgorithm": "HS512", "useJWKURI": true, "jwkURI": "keys.json"},
    "secret_config": {"signingKeys": ["k1", "k2", "k3", "k4"]}
  }
}`);
    assert.equal(expectAt(r, 'schema/string-boolean', '"false"').severity, 'warning');
    expectAt(r, 'schema/type', '42');
    expectAt(r, 'schema/enum', '"HS512"');
    const f = expectAt(r, 'schema/format', '"keys.json"');
    assert.match(f.message, /must be an absolute URL/);
    const c = expectAt(r, 'schema/item-count', '["k1", "k2", "k3", "k4"]');
    assert.equal(c.message, '`custom-token.secret_config.signingKeys` must have at most 3 items; found 4.');
  });

  test('provider name must equal its type, and unknown provider types are rejected', () => {
    const r = check('auth/providers.json', '{"anon": {"name": "anon", "type": "anon-user"}, "x": {"name": "x", "type": "magic-link"}}');
    const c = expectOne(r, 'schema/const', 0, 18, '"anon"');
    assert.equal(c.message, 'A anon-user provider must be named "anon-user".');
    expectAt(r, 'schema/enum', '"magic-link"');
  });

  test('metadata field_name longer than 63 characters', () => {
    const long = 'f'.repeat(64);
    const r = check('auth/providers.json', `{"custom-token": {"name": "custom-token", "type": "custom-token",
"metadata_fields": [{"name": "a.b", "field_name": "${long}"}]}}`);
    const d = expectOne(r, 'schema/length', 1, 50, `"${long}"`);
    assert.equal(d.message, '`custom-token.metadata_fields[0].field_name` must be at most 63 characters long; found 64.');
  });

  test('custom user data: enabled requires the collection coordinates', () => {
    const r = check('auth/custom_user_data.json', '{"enabled": true, "mongo_service_name": "mongodb-atlas"}');
    const missing = r.diags.filter((d) => d.code === 'schema/required').map((d) => d.message.match(/`(\w+)`/)?.[1]).sort();
    assert.deepEqual(missing, ['collection_name', 'database_name', 'user_id_field']);
    assert.ok(r.diags.every((d) => d.range.start.line === 0 && d.range.start.character === 0));
  });

  test('function manifest: array indices map to the right element', () => {
    const r = check('functions/config.json', `[
  {"name": "ok"},
  {"name": "bad", "private": "yes", "can_evaluate": "always"}
]`);
    const d = expectAt(r, 'schema/type', '"yes"');
    assert.deepEqual(d.range.start, { line: 2, character: 29 });
    assert.equal(d.message, '`[1].private` must be a boolean; found string "yes".');
    expectAt(r, 'schema/type', '"always"');
    assert.equal(r.diags.length, 2);
  });

  test('root file: a non-object document is reported on the first line', () => {
    const r = check('realm_config.json', '[\n  1\n]');
    const d = expectOne(r, 'schema/type', 0, 0, '[');
    assert.equal(d.message, 'The file must contain an object; found an array.');
  });

  test('root file: location enum, name pattern, origin URL', () => {
    const r = check('realm_config.json', `{
  "config_version": 20210101,
  "name": "My App",
  "location": "us-va",
  "deployment_model": "GLOBAL",
  "allowed_request_origins": ["example.org"]
}`);
    const p = expectOne(r, 'schema/pattern', 2, 10, '"My App"');
    assert.equal(p.message, '`name` has the wrong form: "My App". An app name may only contain ASCII letters, digits, `_` and `-`.');
    const e = expectOne(r, 'schema/enum', 3, 14, '"us-va"');
    assert.match(e.message, /Did you mean "US-VA"\?/);
    expectOne(r, 'schema/format', 5, 30, '"example.org"');
  });

  test('collection schema: bad bsonType deep inside, typo of a keyword, wrong required type', () => {
    const r = check('data_sources/mongodb-atlas/todo/Task/schema.json', `{
  "title": "Task",
  "bsonType": "object",
  "required": "_id",
  "properties": {
    "tags": {
      "bsonType": "array",
      "items": {"bsonType": "strng"}
    },
    "meta": {"bsonType": "object", "propertes": {}},
    "either": {"bsonType": ["string", "integer"]}
  }
}`);
    const enums = r.diags.filter((d) => d.code === 'schema/enum');
    assert.equal(enums.length, 2);
    assert.deepEqual(enums[0].range.start, { line: 7, character: 28 });
    assert.match(enums[0].message, /^`properties\.tags\.items\.bsonType` must be one of objectId, string, bool, boolean, .*; found "strng"\. Did you mean "string"\?$/);
    assert.equal(textAt(r.file, enums[1].range), '"integer"');
    assert.match(enums[1].message, /^`properties\.either\.bsonType\[1\]`/);
    const u = expectAt(r, 'schema/unknown-key', '"propertes"');
    assert.match(u.message, /Did you mean `properties`\?/);
    expectOne(r, 'schema/type', 3, 14, '"_id"');
  });

  test('relationships: numeric-looking keys stay object keys; ref form is checked', () => {
    const r = check('data_sources/mongodb-atlas/todo/Task/relationships.json', `{
  "0": {"ref": "User", "source_key": "0", "foreign_key": "_id", "is_list": "no"}
}`);
    const p = expectOne(r, 'schema/pattern', 1, 15, '"User"');
    assert.match(p.message, /#\/relationship\/<data source>\/<database>\/<collection>/);
    expectOne(r, 'schema/type', 1, 75, '"no"');
  });

  test('rules: role fields and filters', () => {
    const r = check('data_sources/mongodb-atlas/todo/Item/rules.json', `{
  "database": "todo",
  "collection": "Item",
  "roles": [
    {"name": "owner", "apply_when": "%%user.id", "search": "yes", "fields": {"a": {"read": 1}}}
  ],
  "filters": [{"query": {}}]
}`);
    expectAt(r, 'schema/type', '"%%user.id"');
    expectAt(r, 'schema/type', '"yes"');
    const types = r.diags.filter((d) => d.code === 'schema/type').map((d) => textAt(r.file, d.range));
    assert.deepEqual(types, ['"%%user.id"', '"yes"', '1']);
    const req = expectOne(r, 'schema/required', 6, 14, '{');
    assert.match(req.message, /`filters\[0\]` is missing the required property `name`/);
  });

  test('rules: missing database/collection names the properties', () => {
    const r = check('data_sources/mongodb-atlas/todo/Item/rules.json', '{"roles": []}');
    assert.deepEqual(r.diags.map((d) => d.code), ['schema/required', 'schema/required']);
    assert.match(r.diags.map((d) => d.message).join('\n'), /`database`[\s\S]*`collection`/);
  });

  test('default rule: unknown top-level key', () => {
    const r = check('data_sources/mongodb-atlas/default_rule.json', '{"roles": [], "rolez": []}');
    expectOne(r, 'schema/unknown-key', 0, 14, '"rolez"');
  });

  test('data source: type enum and readPreference', () => {
    const r = check('data_sources/mongodb-atlas/config.json', '{"name": "mongodb-atlas", "type": "mongodb-serverless", "config": {"readPreference": "fastest"}}');
    const enums = r.diags.filter((d) => d.code === 'schema/enum').map((d) => textAt(r.file, d.range));
    assert.deepEqual(enums, ['"mongodb-serverless"', '"fastest"']);
  });

  test('graphql config and validation settings: wrong types', () => {
    const g = check('graphql/config.json', '{"use_natural_pluralization": "true"}');
    assert.equal(expectOne(g, 'schema/string-boolean', 0, 30, '"true"').severity, 'warning');
    const v = check('graphql/validation_settings.json', '{"read_validation_action": false, "write_level": "STRICT"}');
    expectOne(v, 'schema/type', 0, 27, 'false');
    expectOne(v, 'schema/unknown-key', 0, 34, '"write_level"');
  });

  test('custom resolver: format enum, inline type without title, field name form', () => {
    const r = check('graphql/custom_resolvers/query_x.json', `{
  "on_type": "Query",
  "field_name": "task-summary",
  "function_name": "taskSummary",
  "input_type_format": "customs",
  "input_type": {"bsonType": "object", "properties": {"owner": {"bsonType": "string"}}},
  "payload_type": 5
}`);
    expectOne(r, 'schema/pattern', 2, 16, '"task-summary"');
    const e = expectOne(r, 'schema/enum', 4, 23, '"customs"');
    assert.match(e.message, /one of scalar, scalar-list, generated, generated-list, custom, ""; found "customs"\. Did you mean "custom"\?/);
    const s = expectOne(r, 'schema/shape', 5, 16, '{"bsonType": "object", "properties": {"owner": {"bsonType": "string"}}}');
    assert.match(s.message, /needs a `title`/);
    const t = expectOne(r, 'schema/type', 6, 18, '5');
    assert.equal(t.message, '`payload_type` must be a string or an object; found number 5.');
  });

  test('custom resolver: required fields', () => {
    const r = check('graphql/custom_resolvers/x.json', '{"on_type": "Query"}');
    assert.deepEqual(r.diags.map((d) => d.message.match(/`(\w+)`/)?.[1]).sort(), ['field_name', 'function_name']);
  });

  test('environment and value files', () => {
    const env = check('environments/qa.json', '{"values": []}');
    expectOne(env, 'schema/type', 0, 11, '[]');
    const missing = check('environments/qa.json', '{}');
    expectOne(missing, 'schema/required', 0, 0, '{');
    const secret = check('values/k.json', '{"name": "k", "from_secret": true, "value": {"a": 1}}');
    const d = expectOne(secret, 'schema/type', 0, 44, '{"a": 1}');
    assert.equal(d.message, '`value` must be a string; found an object.');
  });

  test('trigger: per-type config, operation types', () => {
    const r = check('triggers/t.json', `{
  "name": "on insert",
  "type": "DATABASE",
  "config": {"service_name": "mongodb-atlas", "database": "db", "operation_types": ["INSERT", "UPSERT"]}
}`);
    assert.equal(r.diags.filter((d) => d.code === 'schema/shape').length, 0, 'a trigger without a function is a warning of the reference checks, not a schema error');
    expectOne(r, 'schema/pattern', 1, 10, '"on insert"');
    expectAt(r, 'schema/enum', '"UPSERT"');

    const auth = check('triggers/a.json', '{"name": "a", "type": "AUTHENTICATION", "function_name": "f", "config": {"operation_type": "SIGNUP", "providers": ["local-userpass"], "service_name": "x"}}');
    expectOne(auth, 'schema/enum', 0, 91, '"SIGNUP"');
    expectOne(auth, 'schema/unknown-key', 0, 134, '"service_name"');

    const scheduled = check('triggers/s.json', '{"name": "s", "type": "SCHEDULED", "function_name": "f", "config": {"schedule": "every day"}}');
    expectOne(scheduled, 'schema/pattern', 0, 80, '"every day"');
  });

  test('endpoints: method enum, route form, missing function', () => {
    const r = check('https_endpoints/config.json', `[
  {"route": "hello", "http_method": "get", "validation_method": "NONE"}
]`);
    expectAt(r, 'schema/pattern', '"hello"');
    const enums = r.diags.filter((d) => d.code === 'schema/enum').map((d) => textAt(r.file, d.range));
    assert.deepEqual(enums, ['"get"', '"NONE"']);
    const req = expectOne(r, 'schema/required', 1, 2, '{');
    assert.match(req.message, /`\[0\]` is missing the required property `function_name`/);
  });

  test('data API: duplicate version points at the repeated item', () => {
    const r = check('http_endpoints/data_api_config.json', '{"versions": ["v1", "v1"], "return_type": "BSON", "can_evaluate": "yes"}');
    const d = expectOne(r, 'schema/duplicate-item', 0, 20, '"v1"');
    assert.match(d.message, /repeats "v1"/);
    expectOne(r, 'schema/enum', 0, 42, '"BSON"');
    expectOne(r, 'schema/type', 0, 66, '"yes"');
  });

  test('hosting config and metadata', () => {
    const h = check('hosting/config.json', '{"enabled": "no"}');
    expectOne(h, 'schema/type', 0, 12, '"no"');
    const m = check('hosting/metadata.json', '[{"path": "/a.html", "attrs": [{"name": "Content-Type"}]}]');
    expectOne(m, 'schema/required', 0, 31, '{');
  });

  test('.mdb metadata: group id form and version type', () => {
    const r = check('.mdb/meta.json', '{"config_version": "20230101", "group_id": "abc"}');
    expectOne(r, 'schema/type', 0, 19, '"20230101"');
    expectOne(r, 'schema/pattern', 0, 43, '"abc"');
  });
});

describe('what is not validated', () => {
  test('files without a parsed value are left to the loader', () => {
    const sink = new DiagnosticSink();
    validateStructure([new JsonFile('/app/auth/providers.json', 'auth/providers.json', '')], sink);
    assert.deepEqual(sink.items, []);
  });

  test('files without a schema kind are skipped', () => {
    const sink = new DiagnosticSink();
    validateStructure([new JsonFile('/app/functions/package.json', 'functions/package.json', '{"name": 5}')], sink);
    assert.deepEqual(sink.items, []);
  });

  test('a partially parsed file is still validated and each file reports against itself', () => {
    const broken = new JsonFile('/app/graphql/config.json', 'graphql/config.json', '{"use_natural_pluralization": 1,');
    const other = new JsonFile('/app/hosting/config.json', 'hosting/config.json', '{"enabled": 1}');
    assert.notEqual(broken.value, undefined);
    const sink = new DiagnosticSink();
    validateStructure([broken, other], sink);
    assert.deepEqual(sink.items.map((d) => [d.file, d.code]), [['/app/graphql/config.json', 'schema/type'], ['/app/hosting/config.json', 'schema/type']]);
  });
});
