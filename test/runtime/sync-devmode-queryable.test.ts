// Development mode for flexible sync on the app's files: the fields a subscription queries become collection
// queryable fields of sync/config.json, edited in place; only a collection schema's top-level scalar (or
// list of scalars) properties qualify, whatever a client names.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { syncSettingsFromFile, type SyncSettings } from '../../core/sync';
import { addQueryableFields } from '../../runtime/sync';

const POSTCARD_SCHEMA = {
  title: 'Postcard', bsonType: 'object',
  properties: {
    _id: { bsonType: 'objectId' }, owner: { bsonType: 'string' }, stamps: { bsonType: 'long' }, tags: { bsonType: 'array', items: { bsonType: 'string' } },
    address: { bsonType: 'object', properties: { city: { bsonType: 'string' } } },
    stops: { bsonType: 'array', items: { bsonType: 'object', properties: { city: { bsonType: 'string' } } } },
  },
};

const CONFIG_TEXT = `{
  // kept: comments and layout
  "type": "flexible",
  "state": "enabled",
  "development_mode_enabled": true,
  "service_name": "mongodb-atlas",
  "database_name": "devdb",
  "queryable_fields_names": ["owner"],
  "collection_queryable_fields_names": {
    "Letter": ["sender"]
  }
}
`;

describe('development mode: queried fields become collection queryable fields', () => {
  let appDir: string;
  let settings: SyncSettings;
  const configFile = () => path.join(appDir, 'sync', 'config.json');
  const config = () => fs.readFileSync(configFile(), 'utf8');

  beforeEach(() => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-devmode-'));
    fs.mkdirSync(path.join(appDir, 'sync'));
    fs.writeFileSync(configFile(), CONFIG_TEXT);
    const parsed = syncSettingsFromFile(JSON.parse(CONFIG_TEXT.replace(/^\s*\/\/.*$/m, '')));
    assert.ok(parsed.ok);
    settings = parsed.settings;
  });
  afterEach(() => fs.rmSync(appDir, { recursive: true, force: true }));

  test('scalar and list-of-scalar properties are added under the collection, the rest of the file is kept', () => {
    const added = addQueryableFields(appDir, settings, [{ collection: 'Postcard', schema: POSTCARD_SCHEMA, fields: ['stamps', 'tags', 'stamps'] }]);
    assert.deepEqual(added, [{ collection: 'Postcard', field: 'stamps' }, { collection: 'Postcard', field: 'tags' }]);
    const text = config();
    assert.match(text, /\/\/ kept: comments and layout/);
    const parsed = JSON.parse(text.replace(/^\s*\/\/.*$/m, '')) as Record<string, unknown>;
    assert.deepEqual(parsed.collection_queryable_fields_names, { Letter: ['sender'], Postcard: ['stamps', 'tags'] });
    assert.deepEqual(parsed.queryable_fields_names, ['owner']);
  });

  test('fields already listed for the collection in the file are kept and not repeated', () => {
    addQueryableFields(appDir, settings, [{ collection: 'Letter', schema: { properties: { sender: { bsonType: 'string' }, sent: { bsonType: 'date' } } }, fields: ['sender', 'sent'] }]);
    const parsed = JSON.parse(config().replace(/^\s*\/\/.*$/m, '')) as { collection_queryable_fields_names: Record<string, string[]> };
    assert.deepEqual(parsed.collection_queryable_fields_names.Letter, ['sender', 'sent']);
  });

  test('embedded objects, lists of them, unknown properties and names that are not identifiers are never added', () => {
    const added = addQueryableFields(appDir, settings, [
      { collection: 'Postcard', schema: POSTCARD_SCHEMA, fields: ['address', 'stops', 'missing', 'address.city', '$where', '__proto__'] },
      { collection: '../../etc', schema: POSTCARD_SCHEMA, fields: ['owner'] },
    ]);
    assert.deepEqual(added, []);
    assert.equal(config(), CONFIG_TEXT, 'the file is not touched when nothing qualifies');
  });

  test('outside development mode nothing is written', () => {
    assert.throws(() => addQueryableFields(appDir, { ...settings, developmentModeEnabled: false }, [{ collection: 'Postcard', schema: POSTCARD_SCHEMA, fields: ['stamps'] }]), /development mode is off/);
    assert.equal(config(), CONFIG_TEXT);
  });
});
