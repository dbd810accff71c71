// Store writes on their way into the sync history (runtime/sync/sessions/store-changes.ts and the engine's
// use of it): a bulk write is recorded in bounded batches, in order, with every object once.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { groupObjectChanges, PendingStoreChanges, type ObjectChange } from '../../runtime/sync/sessions/store-changes';
import { parseChangeset } from '../../runtime/sync/wire/changeset';
import type { Instruction } from '../../runtime/sync/wire/instructions';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('PendingStoreChanges', () => {
  test('writes arriving before their batch starts join it; later ones form the next batch; histories apart', async () => {
    const scheduled: { history: string; take: () => number[] }[] = [];
    const pending = new PendingStoreChanges<number>((history, take) => scheduled.push({ history, take }));
    pending.add('p1', 1);
    pending.add('p1', 2);
    pending.add('p2', 10);
    pending.add('p1', 3);
    assert.deepEqual(scheduled.map((s) => s.history), ['p1', 'p2']);
    assert.deepEqual(scheduled[0]!.take(), [1, 2, 3]);
    pending.add('p1', 4);
    assert.deepEqual(scheduled.map((s) => s.history), ['p1', 'p2', 'p1'], 'a write after its batch was taken is the next batch');
    assert.deepEqual(scheduled[1]!.take(), [10]);
    assert.deepEqual(scheduled[2]!.take(), [4]);
  });
});

describe('groupObjectChanges', () => {
  const change = (n: number, bytes = 10): ObjectChange<number> => ({
    instructions: Array.from({ length: n }, () => ({ type: 'EraseObject', table: 'T', object: { type: 'int', value: 1n } }) as Instruction),
    bytes, detail: n,
  });

  test('closes an entry at any bound, never splits an object, skips writes without instructions', () => {
    const limits = { maxObjects: 3, maxInstructions: 10, maxBytes: 100 };
    assert.deepEqual(groupObjectChanges([change(1), change(1), change(1), change(1)], limits).map((g) => g.length), [3, 1]);
    assert.deepEqual(groupObjectChanges([change(6), change(6), change(1)], limits).map((g) => g.map((c) => c.detail)), [[6, 6], [1]]);
    assert.deepEqual(groupObjectChanges([change(1, 60), change(1, 60), change(1, 60)], limits).map((g) => g.length), [2, 1]);
    assert.deepEqual(groupObjectChanges([change(0), change(2), change(0)], limits).map((g) => g.map((c) => c.detail)), [[2]]);
    assert.deepEqual(groupObjectChanges([], limits), []);
  });
});

describe('a bulk write to a partition-synced collection', () => {
  let appDir: string;
  let runtime: RunningRuntime;

  before(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sync-store-changes-'));
    const files: Record<string, unknown> = {
      'realm_config.json': { config_version: 20210101, app_id: 'bulk-abcde', name: 'bulk' },
      'data_sources/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } },
      'data_sources/mongodb-atlas/bench/Item/schema.json': { title: 'Item', bsonType: 'object', required: ['_id', 'team'], properties: { _id: { bsonType: 'int' }, team: { bsonType: 'string' }, n: { bsonType: 'int' } } },
      'data_sources/mongodb-atlas/bench/Item/rules.json': { database: 'bench', collection: 'Item', roles: [], filters: [] },
      'sync/config.json': { type: 'partition', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'bench', partition: { key: 'team', type: 'string', required: true, permissions: { read: true, write: true } } },
    };
    for (const [rel, content] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(appDir, rel)), { recursive: true });
      fs.writeFileSync(path.join(appDir, rel), JSON.stringify(content));
    }
    runtime = await startRuntime({ appDir, port: 0, log: quiet });
  });

  after(async () => {
    await runtime?.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('5,000 documents in two partitions: a few bounded entries each, every object once, in write order', async () => {
    const store = runtime.sync.service.store;
    await store.collection('bench', 'Item').insertMany(Array.from({ length: 5000 }, (_, i) => ({ _id: i, team: i % 2 ? 'odd' : 'even', n: i })));
    const history = store.collection('__realm_sync', 'history');
    const created = async () => {
      const byPartition = new Map<string, number[]>();
      for (const entry of await history.find({}, { sort: { v: 1 } })) {
        const ids = byPartition.get(entry.p as string) ?? [];
        for (const instruction of parseChangeset((entry.cs as { buffer: Uint8Array }).buffer)) {
          if (instruction.type === 'CreateObject' && instruction.object.type === 'int') ids.push(Number(instruction.object.value));
        }
        byPartition.set(entry.p as string, ids);
      }
      return byPartition;
    };
    await runtime.sync.recorded();
    const partitions = [...(await created()).values()];
    assert.equal(partitions.length, 2);
    for (const ids of partitions) {
      assert.equal(ids.length, 2500);
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'in write order');
    }
    const entries = await history.countDocuments({});
    assert.ok(entries >= 6 && entries <= 8, `2,500 objects per partition at most 1,000 per entry: ${entries} entries`);
  });
});
