// A synthetic exported app of about 1,000 config files (or `files`), shaped like a large real app, for benchmarks.
import fs from 'node:fs';
import path from 'node:path';

export interface SyntheticApp { root: string; files: number; resolverFiles: string[]; syncFile: string; collections: number }

/**
 * `files`: about how many config files to write; the collections (six files each) are 15% of them, as in
 * the 1,000-file app, and values fill up the rest.
 */
export function writeSyntheticApp(root: string, files = 1000): SyntheticApp {
  const collections = Math.max(1, Math.round(files * 0.15));
  let count = 0;
  const write = (rel: string, value: unknown) => {
    const abs = path.join(root, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, typeof value === 'string' ? value : JSON.stringify(value, null, 2) + '\n');
    if (rel.endsWith('.json')) count++;
  };
  write('realm_config.json', { config_version: 20210101, app_id: 'bench-abcde', name: 'bench', location: 'US-VA', deployment_model: 'GLOBAL' });
  write('auth/providers.json', { 'local-userpass': { name: 'local-userpass', type: 'local-userpass', disabled: false, config: { autoConfirm: true } } });
  write('auth/custom_user_data.json', { enabled: true, mongo_service_name: 'mongodb-atlas', database_name: 'db', collection_name: 'Coll0', user_id_field: 'userId' });
  write('data_sources/mongodb-atlas/config.json', { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } });
  const manifest: unknown[] = [];
  const resolverFiles: string[] = [];
  for (let i = 0; i < collections; i++) {
    const base = `data_sources/mongodb-atlas/db/Coll${i}`;
    write(`${base}/schema.json`, {
      title: `Coll${i}`, bsonType: 'object', required: ['_id', 'name', '_partition'],
      properties: {
        _id: { bsonType: 'objectId' }, _partition: { bsonType: 'string' }, name: { bsonType: 'string' }, userId: { bsonType: 'string' },
        count: { bsonType: 'int' }, when: { bsonType: 'date' }, tags: { bsonType: 'array', items: { bsonType: 'string' } },
        other: { bsonType: 'objectId' }, nested: { bsonType: 'object', properties: { a: { bsonType: 'string' }, b: { bsonType: 'double' } } },
      },
    });
    write(`${base}/relationships.json`, { other: { ref: `#/relationship/mongodb-atlas/db/Coll${(i + 1) % collections}`, source_key: 'other', foreign_key: '_id', is_list: false } });
    write(`${base}/rules.json`, {
      database: 'db', collection: `Coll${i}`,
      roles: [
        { name: 'owner', apply_when: { '%%root.userId': '%%user.id' }, document_filters: { read: { userId: '%%user.id' }, write: { userId: '%%user.id' } }, read: true, write: true, insert: true, delete: true, search: true },
        { name: 'reader', apply_when: { '%%user.custom_data.readers': '%%user.id' }, read: true, write: false },
      ],
      filters: [],
    });
    const fn = `fn${i}`;
    manifest.push({ name: fn, private: false });
    write(`functions/${fn}.js`, `exports = async function (input, source) { return { name: String(input && input.name) }; };\n`);
    const resolver = `graphql/custom_resolvers/query_resolver${i}.json`;
    resolverFiles.push(path.join(root, resolver));
    write(resolver, {
      on_type: 'Query', field_name: `resolver${i}`, function_name: fn, input_type_format: 'custom',
      input_type: { title: `Resolver${i}Input`, bsonType: 'object', required: ['name'], properties: { name: { bsonType: 'string' } } },
      payload_type_format: 'custom', payload_type: { title: `Resolver${i}Payload`, bsonType: 'object', properties: { name: { bsonType: 'string' } } },
    });
  }
  write('functions/config.json', manifest);
  for (let i = 0; count < files - 10; i++) write(`values/value${i}.json`, { name: `value${i}`, from_secret: false, value: `v${i}` });
  write('graphql/config.json', { use_natural_pluralization: true, disable_schema_introspection: false });
  for (const env of ['no-environment', 'development', 'testing', 'qa', 'production']) write(`environments/${env}.json`, { values: {} });
  const syncFile = path.join(root, 'sync/config.json');
  write('sync/config.json', {
    type: 'partition', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'db',
    partition: { key: '_partition', type: 'string', required: false, permissions: { read: { $or: [{ '%%user.id': '%%partition' }, { '%%user.custom_data.readers': '%%partition' }] }, write: { '%%user.id': '%%partition' } } },
  });
  return { root, files: count, resolverFiles, syncFile, collections };
}
