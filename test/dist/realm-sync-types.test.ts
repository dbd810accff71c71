// Every primary key type and every property type through the Realm sync protocol, on an app in
// development mode: realm-core's client uploads its schema and objects, the runtime writes the collection
// schemas, stores the documents with their BSON types, and a second client downloads them unchanged.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { writeApp } from '../helpers/disk';
import { probeAvailable, registerUser, runProbe, type ProbeRun } from '../helpers/realm-probe';
import { serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

const APP = {
  'realm_config.json': { config_version: 20210101, app_id: 'types-abcde', name: 'types', location: 'US-VA', deployment_model: 'GLOBAL' },
  'auth/providers.json': { 'local-userpass': { name: 'local-userpass', type: 'local-userpass', config: { autoConfirm: true, resetPasswordUrl: 'http://localhost/reset' }, disabled: false } },
  'data_sources/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } },
  'data_sources/mongodb-atlas/default_rule.json': { roles: [{ name: 'all', apply_when: {}, read: true, write: true, insert: true, delete: true, search: true }], filters: [] },
  'sync/config.json': {
    type: 'partition', state: 'enabled', development_mode_enabled: true, service_name: 'mongodb-atlas', database_name: 'types',
    partition: { key: '_partition', type: 'string', required: false, permissions: { read: true, write: true } },
  },
};

const SCHEMA = [
  {
    name: 'Everything', primaryKey: '_id',
    properties: {
      _id: 'objectId', _partition: 'string?', int: 'int', bool: 'bool', string: 'string', data: 'data', date: 'date', float: 'float',
      double: 'double', mixed: 'mixed', objectId: 'objectId', decimal: 'decimal128', uuid: 'uuid', optionalInt: 'int?',
      ints: 'int[]', strings: 'string[]', doubles: 'double[]', tags: 'string<>', numbers: 'int<>', scores: 'double{}', labels: 'string{}',
      owner: 'ByString', items: 'Item[]', address: 'Address',
    },
  },
  { name: 'Item', embedded: true, properties: { text: 'string', done: 'bool', note: 'Address' } },
  { name: 'Address', embedded: true, properties: { street: 'string', number: 'int?' } },
  { name: 'ByString', primaryKey: '_id', properties: { _id: 'string', _partition: 'string?', name: 'string' } },
  { name: 'ByInt', primaryKey: '_id', properties: { _id: 'int', _partition: 'string?', name: 'string' } },
  { name: 'ByUuid', primaryKey: '_id', properties: { _id: 'uuid', _partition: 'string?', name: 'string' } },
];

const EVERYTHING = {
  _id: { $oid: '65c000000000000000000001' }, _partition: 'p', int: 42, bool: true, string: 'text ü', data: { $binary: { base64: 'AAEC', subType: '00' } },
  date: { $date: '2024-01-02T03:04:05.678Z' }, float: 1.5, double: 4, mixed: 'mixed text', objectId: { $oid: '65c0000000000000000000ff' },
  decimal: { $numberDecimal: '1234.5678' }, uuid: { $uuid: '0f8fad5b-d9cb-469f-a165-70867728950e' }, optionalInt: null,
  ints: [1, 2, 3], strings: ['x', 'y'], doubles: [0.5, 2], tags: ['red', 'blue'], numbers: [7, 8], scores: { math: 9.5, art: 7 }, labels: { a: 'A' },
  owner: 'string-key', items: [{ text: 'one', done: false, note: { street: 'Main', number: 1 } }, { text: 'two', done: true, note: null }],
  address: { street: 'Elm', number: null },
};

describe('Realm sync: every key and property type, development mode', { skip, timeout: 180_000 }, () => {
  let served: ServedDist;
  let appDir: string;
  const user = { type: 'emailPassword', email: 'types@example.com', password: 'types-Passw0rd' };
  before(async () => {
    appDir = writeApp(APP);
    served = await serveDist({ appDir });
    await registerUser(served.app, user.email, user.password);
  });
  after(async () => {
    await served?.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  const script = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, credentials: user, partition: 'p', schema: SCHEMA, timeoutMs: 15000, ...extra });
  const assertOk = (run: ProbeRun, what: string) => assert.equal(run.result.exitCode, 0, `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);

  test('objects of every key type and property type go up and come back down unchanged', async () => {
    const writes = [
      { op: 'create', type: 'ByString', value: { _id: 'string-key', _partition: 'p', name: 'by string' } },
      { op: 'create', type: 'ByInt', value: { _id: 9007199254740993, _partition: 'p', name: 'by int' } },
      { op: 'create', type: 'ByUuid', value: { _id: { $uuid: '3b241101-e2bb-4255-8caf-4136c566a962' }, _partition: 'p', name: 'by uuid' } },
      { op: 'create', type: 'Everything', value: EVERYTHING },
    ];
    const up = await runProbe(script({ writes }));
    assertOk(up, 'upload');
    for (const type of ['Everything', 'ByString', 'ByInt', 'ByUuid']) {
      assert.ok(fs.existsSync(path.join(appDir, 'data_sources/mongodb-atlas/types', type, 'schema.json')), `development mode wrote the schema of ${type}`);
    }
    const down = await runProbe(script({}));
    assertOk(down, 'download');
    for (const type of ['ByString', 'ByInt', 'ByUuid', 'Everything']) {
      assert.deepEqual(down.objects(type), up.objects(type), `${type} came back as it went up`);
    }
    assert.equal(down.objects('Everything').length, 1);
  });

  test('updates of lists, sets, dictionaries and embedded objects reach another client', async () => {
    const id = EVERYTHING._id;
    const up = await runProbe(script({ writes: [{ op: 'update', type: 'Everything', id, value: {
      ints: [3, 2], tags: ['green'], scores: { math: 1 }, items: [{ text: 'only', done: true, note: null }], address: { street: 'Oak', number: 5 }, double: 2.25, mixed: 17,
    } }] }));
    assertOk(up, 'update');
    const down = await runProbe(script({}));
    assertOk(down, 'download after update');
    assert.deepEqual(down.objects('Everything'), up.objects('Everything'));
    assert.deepEqual((down.objects('Everything')[0] as { ints: unknown }).ints, [3, 2]);
  });

  test('a new client whose schema contradicts the schema synced on its partition is refused with a schema mismatch, and changes nothing', async () => {
    const contradicting = [{ name: 'ByInt', primaryKey: '_id', properties: { _id: 'int', _partition: 'string?', name: 'int' } }];
    const run = await runProbe({ ...script({}), schema: contradicting, writes: [{ op: 'create', type: 'ByInt', value: { _id: 5, _partition: 'p', name: 7 } }] });
    assert.notEqual(run.result.exitCode, 0, 'the contradicting client fails');
    const errors = run.lines.filter((l) => l.event === 'sync_error').map((l) => JSON.stringify(l)).join('\n');
    assert.match(errors, /Schema mismatch: Property 'name' in class 'ByInt' is of type (Int on one side and type String|String on one side and type Int) on the other/);
    const down = await runProbe(script({}));
    assertOk(down, 'a client of the synced schema still syncs');
    assert.deepEqual((down.objects('ByInt') as { _id: unknown }[]).map((o) => o._id), [9007199254740993]);
  });
});
