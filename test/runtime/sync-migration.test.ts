// The pure parts of the partition → flexible sync migration: the query a migrated client subscribes with
// (realm-core applies it to every table), the flexible settings a partition config becomes, the status shape
// realm-core's harness reads, and the check of a flexible BIND's `migratedPartition`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Long, ObjectId, UUID } from 'bson';
import { flexibleSettingsOf, migrationStatus, partitionRql, type SyncSettings } from '../../core/sync';
import { migratedPartitionRefusal } from '../../runtime/sync/migration/bind';

test('partitionRql writes each partition key type as RQL', () => {
  assert.equal(partitionRql('_partition', 'p "1"'), '_partition == "p \\"1\\""');
  assert.equal(partitionRql('owner', new ObjectId('65c000000000000000000001')), 'owner == oid(65c000000000000000000001)');
  assert.equal(partitionRql('n', 42), 'n == 42');
  assert.equal(partitionRql('n', Long.fromString('9007199254740993')), 'n == 9007199254740993');
  assert.equal(partitionRql('u', new UUID('3b241101-e2bb-4255-8caf-4136c566a962')), 'u == uuid(3b241101-e2bb-4255-8caf-4136c566a962)');
  assert.equal(partitionRql('_partition', null), '_partition == nil');
  assert.equal(partitionRql('a key', 'x'), '`a key` == "x"');
  assert.throws(() => partitionRql('k', true), /no RQL form/);
});

test('flexibleSettingsOf keeps what both modes share and makes the partition key queryable', () => {
  const partition: SyncSettings = {
    type: 'partition', state: 'enabled', developmentModeEnabled: false, serviceName: 'mongodb-atlas', databaseName: 'tracker',
    partition: { key: '_partition', type: 'string', required: false, permissions: { read: true, write: true } },
    clientMaxOfflineDays: 30, isRecoveryModeDisabled: true,
  };
  assert.deepEqual(flexibleSettingsOf(partition), {
    type: 'flexible', state: 'enabled', developmentModeEnabled: false, serviceName: 'mongodb-atlas', databaseName: 'tracker',
    clientMaxOfflineDays: 30, isRecoveryModeDisabled: true, queryable: { queryable_fields_names: ['_partition'] },
  });
});

test('migrationStatus: empty statusMessage once a step is done, as the harness waits for', () => {
  assert.deepEqual(migrationStatus(undefined, []), { statusMessage: '', isMigrated: false, isCancelable: false, isRevertible: false, errorMessage: '', unmigratableRules: [] });
  const migrating = migrationStatus({ phase: 'migrating', partitionKey: 'k', startedAt: 't0' }, []);
  assert.equal(migrating.statusMessage, 'migrating to flexible sync');
  assert.equal(migrating.isMigrated, false);
  const migrated = migrationStatus({ phase: 'migrated', partitionKey: 'k', startedAt: 't0', completedAt: 't1' }, []);
  assert.deepEqual([migrated.statusMessage, migrated.isMigrated, migrated.isRevertible], ['', true, true]);
  const rolledBack = migrationStatus({ phase: 'rolled-back', partitionKey: 'k', startedAt: 't2', completedAt: 't3' }, []);
  assert.deepEqual([rolledBack.statusMessage, rolledBack.isMigrated, rolledBack.isRevertible], ['', false, false]);
});

test('migratedPartition: only on a migrated app, and of the partition key type', () => {
  const from = { key: '_partition', type: 'string', required: false, permissions: { read: true, write: true } };
  assert.equal(migratedPartitionRefusal({ schemaVersion: 0 }, undefined), undefined);
  assert.equal(migratedPartitionRefusal({ migratedPartition: '"p1"' }, from), undefined);
  assert.match(migratedPartitionRefusal({ migratedPartition: '"p1"' }, undefined)!.message, /not migrated from partition-based sync/);
  assert.equal(migratedPartitionRefusal({ migratedPartition: 42 }, from)!.code, 204);
  assert.match(migratedPartitionRefusal({ migratedPartition: '42' }, from)!.message, /expected partition to have type string but found long/);
  assert.match(migratedPartitionRefusal({ migratedPartition: '{"bad":' }, from)!.message, /is invalid/);
});
