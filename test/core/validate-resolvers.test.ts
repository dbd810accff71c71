// Custom resolver rules added beside GraphQL generation: ignored settings, shadowed fields, `required`
// lists, functions that refuse every call.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { checkApp } from '../../core/check';
import { loadApp } from '../../core/load';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';

const RESOLVER = 'graphql/custom_resolvers/q.json';

async function check(resolver: Record<string, unknown>, edit: (files: Record<string, unknown>) => void = () => undefined) {
  const files = baseApp();
  files[RESOLVER] = { on_type: 'Query', field_name: 'stats', function_name: 'renameTask', ...resolver };
  edit(files);
  const app = await loadApp(appFs(files), APP_ROOT);
  return checkApp(app).filter((d) => d.file === path.join(APP_ROOT, RESOLVER));
}

describe('custom resolver checks', () => {
  test('a valid resolver has no problems', async () => {
    assert.deepEqual(await check({ input_type_format: 'scalar', input_type: 'string', payload_type_format: 'scalar', payload_type: 'int' }), []);
  });

  test('replacing a generated field is a warning at field_name', async () => {
    const ds = await check({ field_name: 'tasks', payload_type_format: 'generated-list', payload_type: 'Task' });
    const shadow = ds.find((d) => d.code === 'resolver/shadows-generated-field')!;
    assert.equal(shadow.severity, 'warning');
    assert.deepEqual(shadow.data, { field: 'Query.tasks' });
    assert.equal(shadow.range.start.line, 2);
  });

  test('a custom input type with "properties": {} is reported at properties, not at input_type', async () => {
    const resolver = { input_type_format: 'custom', input_type: { title: 'StatsInput', bsonType: 'object', properties: {} } };
    const empty = (await check(resolver)).filter((d) => d.code === 'graphql/invalid-custom-type');
    assert.equal(empty.length, 1, JSON.stringify(empty));
    const lines = JSON.stringify({ on_type: 'Query', field_name: 'stats', function_name: 'renameTask', ...resolver }, null, 2).split('\n');
    assert.equal(empty[0]!.range.start.line, lines.findIndex((l) => l.includes('"properties": {}')));
  });

  test('an input_type without a format, and a payload format without a type, are reported as ignored', async () => {
    const codes = (await check({ input_type: 'string', payload_type_format: 'scalar' })).map((d) => d.code);
    assert.ok(codes.includes('resolver/input-type-ignored'), codes.join());
    assert.ok(codes.includes('resolver/missing-payload-type'), codes.join());
    const payload = (await check({ payload_type: 'int', payload_type_format: '' })).map((d) => d.code);
    assert.ok(payload.includes('resolver/payload-type-ignored'), payload.join());
  });

  test('required names that are not properties are errors at the name, also in nested objects', async () => {
    const ds = await check({
      input_type_format: 'custom',
      input_type: { title: 'StatsInput', bsonType: 'object', required: ['from', 'too'], properties: {
        from: { bsonType: 'date' },
        range: { bsonType: 'object', required: ['end'], properties: { start: { bsonType: 'date' } } },
      } },
    });
    const unknown = ds.filter((d) => d.code === 'resolver/unknown-required-property');
    assert.deepEqual(unknown.map((d) => d.data?.name), ['too', 'end']);
    assert.deepEqual(unknown[0].data?.properties, ['from', 'range']);
  });

  test('a function whose can_evaluate is false is a warning; a private function is fine', async () => {
    const never = await check({}, (files) => { files['functions/config.json'] = [{ name: 'resetFunc' }, { name: 'renameTask', can_evaluate: false }]; });
    assert.ok(never.some((d) => d.code === 'resolver/function-never-callable'));
    const priv = await check({}, (files) => { files['functions/config.json'] = [{ name: 'resetFunc' }, { name: 'renameTask', private: true }]; });
    assert.deepEqual(priv, []);
  });

  test('rules already covered elsewhere keep their own codes (parent, scalar, generated name, title)', async () => {
    const codes = async (r: Record<string, unknown>) => (await check(r)).map((d) => d.code);
    assert.ok((await codes({ on_type: 'Nope' })).includes('graphql/unknown-resolver-parent'));
    assert.ok((await codes({ input_type_format: 'scalar', input_type: 'strng' })).includes('graphql/unknown-resolver-scalar'));
    assert.ok((await codes({ input_type_format: 'generated', input_type: 'Task' })).includes('graphql/unknown-generated-type'));
    assert.ok((await codes({ payload_type_format: 'custom', payload_type: { bsonType: 'object', properties: { a: { bsonType: 'int' } } } })).includes('graphql/invalid-custom-type'));
    assert.ok((await codes({ payload_type_format: 'custom', payload_type: { title: 'Task', bsonType: 'object', properties: { a: { bsonType: 'int' } } } })).includes('graphql/duplicate-type-name'));
  });
});
