// The embedded store on a disk that fills up (issue 34): a write that cannot be journaled is refused with
// a clear error and taken back out of memory, what was acknowledged stays readable, the journal holds
// whole records only, and once space is freed writes go on without reopening the store. The disk is a
// size-limited tmpfs the test mounts (needs root, as in CI; skipped otherwise).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openEmbeddedStore, type EmbeddedStore } from '../../runtime/store/embedded';
import { StoreError, StoreErrorCode } from '../../runtime/store/types';

const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'store-full-disk-'));
const mounted = process.getuid?.() === 0 && spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mount]).status === 0;
const skip = mounted ? false : 'mounting a size-limited tmpfs needs root';

describe('the embedded store on a full disk', { skip }, () => {
  const dir = path.join(mount, 'data');
  const filler = path.join(mount, 'filler');
  let store: EmbeddedStore;

  before(async () => {
    store = (await openEmbeddedStore({ dir })) as EmbeddedStore;
  });
  after(async () => {
    await store?.close().catch(() => undefined);
    spawnSync('umount', [mount]);
    fs.rmSync(mount, { recursive: true, force: true });
  });

  test('refused with OutOfDiskSpace and not applied; acknowledged writes kept; writes resume once space is freed; the files reopen whole', async () => {
    // Most of the disk taken by something else; the store's writes then run out of room.
    fs.writeFileSync(filler, Buffer.alloc(640 * 1024));
    const items = store.collection('db', 'items');
    const payload = 'x'.repeat(16 * 1024);
    const acknowledged: number[] = [];
    let refusal: unknown;
    for (let n = 0; n < 200 && !refusal; n++) {
      // Some writes concurrently, so a refused batch holds several records.
      const results = await Promise.allSettled([0, 1, 2].map((k) => items.insertOne({ _id: n * 3 + k, payload })));
      results.forEach((r, k) => { if (r.status === 'fulfilled') acknowledged.push(n * 3 + k); else refusal ??= r.reason; });
    }
    assert.ok(refusal instanceof StoreError, `a full disk refuses writes with a StoreError: ${String(refusal)}`);
    assert.equal(refusal.code, StoreErrorCode.OutOfDiskSpace);
    assert.match(refusal.message, /disk is full/);
    assert.ok(acknowledged.length > 0, 'some writes fitted');
    const stored = (await items.find({}, { projection: { _id: 1 } })).map((d) => d._id as number).sort((a, b) => a - b);
    assert.deepEqual(stored, acknowledged, 'exactly the acknowledged documents are there: the refused ones were taken back');
    await assert.rejects(items.updateOne({ _id: acknowledged[0] }, { $set: { payload: payload.repeat(16) } }), (e: unknown) => e instanceof StoreError && e.code === StoreErrorCode.OutOfDiskSpace);
    assert.equal((await items.findOne({ _id: acknowledged[0] }))?.payload, payload, 'a refused update leaves the document as it was');

    fs.rmSync(filler);
    await items.insertOne({ _id: 'after', payload: 'room again' });
    await items.deleteOne({ _id: acknowledged[0] });
    await store.close();
    store = (await openEmbeddedStore({ dir })) as EmbeddedStore;
    assert.equal(store.recovery.truncatedBytes, 0, 'the journal held whole records only');
    const reopened = (await store.collection('db', 'items').find({}, { projection: { _id: 1 } })).map((d) => d._id);
    assert.deepEqual(reopened, [...acknowledged.slice(1), 'after']);
  });
});
