// Hover over in-memory apps, with `|` marking the cursor.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hover } from '../../server/features/hover';
import { baseApp } from '../helpers/app';
import { cursor, loadedApp } from './features-fixtures';

async function hoverText(files: Record<string, unknown>, rel: string, marked: string, schemaDocumentation = true): Promise<string | undefined> {
  const app = await loadedApp(files);
  const { file, position } = cursor(rel, marked);
  const result = hover(app, file, position, { schemaDocumentation });
  return result ? (result.contents as { value: string }).value : undefined;
}

const RESOLVER = 'graphql/custom_resolvers/mutation_renameTask.json';
describe('hover', () => {
  test('a document type named in on_type shows its generated SDL', async () => {
    const text = await hoverText(baseApp(), RESOLVER, '{"on_type": "Ta|sk", "field_name": "x", "function_name": "renameTask"}');
    assert.match(text!, /```graphql\ntype Task \{\n {2}_id: ObjectId!\n {2}name: String!\n {2}assignee: User\n/);
  });

  test('the field name of a resolver shows the field it adds, with its custom input type', async () => {
    const files = baseApp();
    const text = await hoverText(files, RESOLVER, JSON.stringify(files[RESOLVER]).replace('"field_name":"renameTask"', '"field_name":"rename|Task"'));
    assert.match(text!, /extend type Mutation \{\n {2}renameTask\(input: RenameTaskInput\): Task\n\}/);
    assert.match(text!, /input RenameTaskInput \{\n {2}taskId: ObjectId!/);
  });

  test('a generated type named as payload shows its SDL; a scalar shows its mapping', async () => {
    const files = baseApp();
    const generated = await hoverText(files, RESOLVER, JSON.stringify(files[RESOLVER]).replace('"payload_type":"Task"', '"payload_type":"T|ask"'));
    assert.match(generated!, /type Task \{/);
    const scalar = await hoverText(files, 'graphql/custom_resolvers/q.json', '{"input_type_format": "scalar", "input_type": "lo|ng"}');
    assert.match(scalar!, /bsonType `long` → GraphQL `Long`/);
  });

  test('a collection schema title shows the collection\'s GraphQL type', async () => {
    const files = baseApp();
    const text = await hoverText(files, 'data_sources/mongodb-atlas/todo/User/schema.json', '{"title": "Us|er", "bsonType": "object", "properties": {"_id": {"bsonType": "objectId"}, "name": {"bsonType": "string"}}}');
    assert.match(text!, /type User \{\n {2}_id: ObjectId\n {2}name: String\n\}/);
  });

  test('rule expansions and operators are described', async () => {
    const rules = 'data_sources/mongodb-atlas/todo/Task/rules.json';
    const member = await hoverText(baseApp(), rules, '{"roles": [{"name": "r", "apply_when": {"%%user.cus|tom_data.team": {"$in": []}}}]}');
    assert.match(member!, /custom user data document/);
    const op = await hoverText(baseApp(), rules, '{"roles": [{"name": "r", "apply_when": {"%%user.id": {"$i|n": []}}}]}');
    assert.match(op!, /\*\*\$in\*\* — membership operator/);
  });

  test('provider keys and enum values show their documentation', async () => {
    const provider = (config: string) => `{"custom-token": {"name": "custom-token", "type": "custom-token", "config": {${config}}}}`;
    const key = await hoverText(baseApp(), 'auth/providers.json', provider('"requireAny|Audience": true'));
    assert.match(key!, /accepts any one of them/);
    const value = await hoverText(baseApp(), 'auth/providers.json', provider('"signingAlgorithm": "RS2|56"'));
    assert.match(value!, /`"RS256"`: RSA signature/);
    assert.equal(await hoverText(baseApp(), 'auth/providers.json', provider('"requireAny|Audience": true'), false), undefined);
  });

  test('a signing key secret says whether it has a local value and how to supply one', async () => {
    const text = await hoverText(baseApp(), 'auth/providers.json', '{"custom-token": {"name": "custom-token", "type": "custom-token", "secret_config": {"signingKeys": ["jw|t_key"]}}}', false);
    assert.match(text!, /no local value/);
    assert.match(text!, /--secret jwt_key=/);
  });

  test('function names say what the function is', async () => {
    const text = await hoverText(baseApp(), 'auth/providers.json', '{"local-userpass": {"name": "local-userpass", "type": "local-userpass", "config": {"resetFunctionName": "reset|Func"}}}', false);
    assert.match(text!, /\*\*function resetFunc\*\*: private/);
  });
});
