// Sync schema versions without a client: which changes add a version (diff.ts, versions.ts), and how an
// older version's subscriptions and uploads are taken into the newest schema (projection.ts). The client's
// side is in test/dist/realm-sync-schema-versions.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { diffSchemas } from '../../runtime/sync/schema-versions/diff';
import { projectQueryBody, projectUpload, restrictMatchers } from '../../runtime/sync/schema-versions/projection';
import { SyncSchemaVersions } from '../../runtime/sync/schema-versions/versions';
import type { RealmSchema, RealmTable } from '../../runtime/sync/translate/schema';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { openStore } from '../../runtime/store';

function table(name: string, columns: Record<string, [string, boolean]>): RealmTable {
  return {
    name, embedded: false, asymmetric: false, primaryKey: { field: '_id', type: 'objectId', nullable: false },
    columns: new Map(Object.entries(columns).map(([field, [type, nullable]]) => [field, { name: field, type: type as never, nullable, collection: 'single' as const }])),
  };
}
const schema = (...tables: RealmTable[]): RealmSchema => new Map(tables.map((t) => [t.name, t]));

const V0 = schema(table('Thing', { name: ['string', false], legacy: ['string', true] }), table('Old', { x: ['int', false] }));
const V1 = schema(table('Thing', { name: ['string', false], extra: ['string', true] }));

const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;

describe('sync schema versions', () => {
  test('removing a table or a field, or changing optionality, is breaking; adding is additive', () => {
    const diff = diffSchemas(V0, V1);
    assert.deepEqual(diff.breaking, ['field "legacy" of table "Thing" removed', 'table "Old" removed']);
    assert.deepEqual(diff.additive, ['field "extra" added to table "Thing"']);
    const optional = diffSchemas(V1, schema(table('Thing', { name: ['string', true], extra: ['string', true] })));
    assert.deepEqual(optional.breaking, ['field "name" of table "Thing" changed from string (required) to string (optional)']);
  });

  test('a breaking change while versioning adds a version; while held, or not versioning, it updates the newest', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-versions-'));
    const store = await openStore({ dir: path.join(dataDir, 'data') });
    try {
      let current = { schema: V0, versioning: true };
      const versions = new SyncSchemaVersions({ dataDir, store, log: silent, current: async () => current });
      await versions.observe();
      assert.deepEqual(versions.list().map((v) => v.version), [0]);
      versions.hold();
      current = { schema: V1, versioning: true };
      await versions.observe();
      assert.equal(versions.latest, 0, 'held: nothing looked at');
      await versions.release();
      assert.deepEqual(versions.list().map((v) => [v.version, v.changes]), [[0, []], [1, ['field "legacy" of table "Thing" removed', 'table "Old" removed']]]);
      assert.ok(versions.snapshot(0)?.get('Old'), 'version 0 keeps its snapshot');
      assert.equal(versions.snapshot(1), undefined, 'the newest is the running schema');
      current = { schema: schema(table('Thing', { name: ['string', false] })), versioning: false };
      await versions.observe();
      assert.equal(versions.latest, 1, 'sync not running: no version');
      // Persisted: a new runtime reads the same versions.
      const again = new SyncSchemaVersions({ dataDir, store, log: silent, current: async () => current });
      assert.deepEqual(again.list().map((v) => v.version), [0, 1]);
      assert.equal(again.refusal({ schemaVersion: 1 }), undefined);
      assert.equal(again.refusal({ schemaVersion: 7 })?.code, 235);
      assert.equal(again.refusal({ schemaVersion: '1' })?.code, 235, 'a version must be a number');
      await again.recordClientFile(5, 1);
      assert.equal(await again.clientFileVersion(5), 1);
      assert.equal(await again.clientFileVersion(6), 0, 'a file from before versions synced at 0');
    } finally {
      await store.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('an older version\'s subscriptions: unknown tables refused, removed tables dropped, removed fields match nothing', () => {
    const v = { version: 0, schema: V0, latest: V1 };
    assert.deepEqual(projectQueryBody('{"Thing":"name == \\"a\\"","Old":"x > 1"}', v), { ok: true, body: '{"Thing":"name == \\"a\\""}' });
    const unknown = projectQueryBody('{"New":"TRUEPREDICATE"}', v);
    assert.equal(unknown.ok, false);
    const queries = new Map([['Thing', { matches: (doc: Record<string, unknown>) => doc.legacy === 'old' }]]);
    restrictMatchers(queries, v);
    assert.equal(queries.get('Thing')!.matches({ _id: 1, name: 'a', legacy: 'old' }), false);
  });

  test('an older version\'s upload: its schema dropped, removed tables and fields left out, fields outside its version refused', () => {
    const v = { version: 0, schema: V0, latest: V1 };
    const object = { type: 'objectId' as const, value: new ObjectId() };
    const at = { table: 'Thing', object, path: [] };
    const instructions: Instruction[] = [
      { type: 'AddTable', table: 'Thing', spec: { kind: 'topLevel', pkField: '_id', pkType: 'objectId', pkNullable: false, asymmetric: false } },
      { type: 'AddColumn', table: 'Thing', field: 'legacy', valueType: 'string', keyType: 'null', nullable: true, collectionType: 'single' },
      { type: 'CreateObject', table: 'Thing', object },
      { type: 'Update', ...at, field: 'name', value: { type: 'string', value: 'n' }, isDefault: false, priorSize: 0 },
      { type: 'Update', ...at, field: 'legacy', value: { type: 'string', value: 'l' }, isDefault: false, priorSize: 0 },
      { type: 'CreateObject', table: 'Old', object },
    ];
    const projected = projectUpload([{ clientVersion: 2, baseVersion: 1, timestamp: 0n, instructions, size: 0 }], v);
    assert.ok(projected.ok);
    assert.deepEqual(projected.changesets[0]!.instructions.map((i) => `${i.type} ${'field' in i ? i.field : i.table}`), ['CreateObject Thing', 'Update name']);
    const forged = projectUpload([{ clientVersion: 3, baseVersion: 1, timestamp: 0n, size: 0, instructions: [{ type: 'Update', ...at, field: 'extra', value: { type: 'string', value: 'x' }, isDefault: false, priorSize: 0 }] }], v);
    assert.equal(forged.ok, false);
    assert.match(!forged.ok ? forged.error.message : '', /field "extra" of table "Thing" is not in sync schema version 0/);
    // Migrating to the newest version: its schema is accepted too.
    const migrating = projectUpload([{ clientVersion: 3, baseVersion: 1, timestamp: 0n, size: 0, instructions: [{ type: 'AddColumn', table: 'Thing', field: 'extra', valueType: 'string', keyType: 'null', nullable: true, collectionType: 'single' }] }], { ...v, migratingTo: V1 });
    assert.ok(migrating.ok);
  });
});
