// What a flexible sync client file holds, as recorded in the embedded store (runtime/sync/history/views.ts with
// FlexibleView's encoding): read back for the query version and server version a resuming client names,
// after a reopen of the store, and folded into one snapshot.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ObjectId, UUID } from 'bson';
import { openEmbeddedStore } from '../../runtime/store/embedded';
import { ClientViews } from '../../runtime/sync/history/views';
import { decodeHeld, encodeHeld, type HeldObject } from '../../runtime/sync/flexible/view';
import { primaryKeyText } from '../../runtime/sync/translate/values';

const item = (n: number): HeldObject => ({ table: 'Item', object: { type: 'objectId', value: ObjectId.createFromHexString(n.toString(16).padStart(24, '0')) } });
const names = (objects: HeldObject[]) => objects.map((o) => `${o.table} ${primaryKeyText(o.object)}`).sort();

/** What a client holds from a record: the snapshot, then each change's departures and arrivals in order. */
function heldFrom(recorded: { snapshot: Uint8Array; changes: { entered: Uint8Array; left: Uint8Array }[] }): string[] {
  const held = new Set(names(decodeHeld(recorded.snapshot)));
  for (const change of recorded.changes) {
    for (const name of names(decodeHeld(change.left))) held.delete(name);
    for (const name of names(decodeHeld(change.entered))) held.add(name);
  }
  return [...held].sort();
}

describe('client views recorded in the store', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-client-views-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('held objects of every primary key type survive the encoding', () => {
    const objects: HeldObject[] = [
      item(1), { table: 'Tag', object: { type: 'string', value: 'ümlaut and spaces' } }, { table: 'Counter', object: { type: 'int', value: -42n } },
      { table: 'Device', object: { type: 'uuid', value: new UUID('3b241101-e2bb-4255-8caf-4136c566a962') } }, { table: 'Nothing', object: { type: 'null' } },
    ];
    assert.deepEqual(names(decodeHeld(encodeHeld(objects))), names(objects));
    assert.deepEqual(decodeHeld(encodeHeld([])), []);
  });

  test('a resuming client gets the snapshot of its query version and the changes up to the server version it reached', async () => {
    let store = await openEmbeddedStore({ dir: path.join(dir, 'store'), durability: 'os' });
    let views = new ClientViews(store, () => 1);
    await views.saveSnapshot(7, 1, 1, 10, encodeHeld([item(1), item(2)]));
    await views.saveChanges(7, 2, 1, [
      { version: 12, entered: encodeHeld([item(3)]), left: encodeHeld([item(1)]) },
      { version: 15, entered: encodeHeld([]), left: encodeHeld([item(2)]) },
    ]);
    // The bootstrap of query version 2 was sent, but a client naming version 1 never applied it.
    await views.saveSnapshot(7, 3, 2, 15, encodeHeld([item(9)]));
    // Another client file's records are its own.
    await views.saveSnapshot(8, 1, 1, 10, encodeHeld([item(5)]));
    await store.close();
    store = await openEmbeddedStore({ dir: path.join(dir, 'store'), durability: 'os' });
    views = new ClientViews(store, () => 1);

    const atTwelve = await views.recorded(7, 1, 12);
    assert.ok(atTwelve);
    assert.deepEqual(heldFrom(atTwelve), names([item(2), item(3)]));
    assert.equal(atTwelve.nextSequence, 4);
    assert.equal(atTwelve.compactable, true);
    const atFifteen = await views.recorded(7, 1, 15);
    assert.deepEqual(heldFrom(atFifteen!), names([item(3)]));
    assert.deepEqual(heldFrom((await views.recorded(7, 2, 15))!), names([item(9)]));
    assert.equal(await views.recorded(7, 2, 14), undefined, 'a snapshot after the server version the client reached is not its own');
    assert.equal(await views.recorded(7, 3, 20), undefined);
    assert.equal(await views.recorded(9, 1, 20), undefined);

    // Folded into one snapshot at (query version 1, server version 12): the later records go.
    await views.compact(7, atTwelve.nextSequence, 1, 12, encodeHeld([item(2), item(3)]));
    const compacted = await views.recorded(7, 1, 30);
    assert.deepEqual(heldFrom(compacted!), names([item(2), item(3)]));
    assert.equal(compacted!.compactable, false);
    assert.equal(await views.recorded(7, 2, 30), undefined);
    assert.deepEqual(heldFrom((await views.recorded(8, 1, 10))!), names([item(5)]));
    // Another sync epoch (after a terminate) knows none of them.
    assert.equal(await new ClientViews(store, () => 2).recorded(7, 1, 30), undefined);
    await store.close();
  });

  test('a snapshot larger than one stored part is read back whole', async () => {
    const store = await openEmbeddedStore({ dir: path.join(dir, 'large'), durability: 'os' });
    const views = new ClientViews(store, () => 1);
    const many = Array.from({ length: 600_000 }, (_, n) => item(n));
    const bytes = encodeHeld(many);
    assert.ok(bytes.length > 8 * 1024 * 1024, `${bytes.length} bytes`);
    await views.saveSnapshot(3, 1, 1, 5, bytes);
    const recorded = await views.recorded(3, 1, 5);
    assert.equal(decodeHeld(recorded!.snapshot).length, many.length);
    await store.close();
  });
});
