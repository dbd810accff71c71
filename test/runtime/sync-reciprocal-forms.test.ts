// The reciprocal forms a client file's uploads leave (runtime/sync/sessions/reciprocal-forms.ts) outlive
// the process that made them, bounded: read back by a new instance over the same store; past the bound,
// only the version below which they are missing is stored, and an upload that would need them is told so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ObjectId } from 'bson';
import { openEmbeddedStore } from '../../runtime/store';
import { ReciprocalForms } from '../../runtime/sync/sessions/reciprocal-forms';
import type { TimedChangeset } from '../../runtime/sync/merge/transform';
import type { Instruction } from '../../runtime/sync/wire/instructions';

const form = (text: string): TimedChangeset => ({
  instructions: [{ type: 'Update', table: 'Note', object: { type: 'objectId', value: new ObjectId('65e000000000000000000001') }, field: 'text', path: [], value: { type: 'string', value: text }, isDefault: false, priorSize: 0 } as Instruction],
  originTimestamp: 42n, originFileIdent: 7n,
});

test('forms are stored per client file and read back after a restart; trimmed ones go, and an empty set leaves no document', async () => {
  const store = await openEmbeddedStore();
  const first = new ReciprocalForms(store, () => 1);
  await first.load(5);
  first.forUpload(5, 10);
  first.keep(5, 11, form('eleven'));
  first.keep(5, 12, form('twelve'));
  await first.save(5);
  const second = new ReciprocalForms(store, () => 1);
  await second.load(5);
  assert.equal(second.missing(5, 10), false);
  const forms = second.forUpload(5, 11);
  assert.deepEqual([...forms.keys()], [12]);
  assert.deepEqual(forms.get(12), form('twelve'));
  second.forUpload(5, 12);
  await second.save(5);
  assert.equal(await store.collection('__realm_sync', 'reciprocal').countDocuments({}), 0);
  // Another epoch (sync terminated) sees none of them.
  first.keep(5, 13, form('thirteen'));
  await first.save(5);
  const other = new ReciprocalForms(store, () => 2);
  await other.load(5);
  assert.equal(other.forUpload(5, 0).size, 0);
});

test('past 16 client files in memory the oldest are read back from the store at their next upload', async () => {
  const store = await openEmbeddedStore();
  const forms = new ReciprocalForms(store, () => 1);
  for (let ident = 100; ident < 120; ident++) {
    await forms.load(ident);
    forms.forUpload(ident, 1);
    forms.keep(ident, 2, form(`file ${ident}`));
    await forms.save(ident);
  }
  assert.equal(await store.collection('__realm_sync', 'reciprocal').countDocuments({}), 20);
  // With their stored copies gone, the newest still has its forms in memory; the oldest reads nothing back.
  await store.collection('__realm_sync', 'reciprocal').deleteMany({ v: 2, f: { $in: ['1|100', '1|119'] } });
  await forms.load(119);
  assert.deepEqual(forms.forUpload(119, 1).get(2), form('file 119'));
  await forms.load(100);
  assert.equal(forms.forUpload(100, 1).size, 0);
});

test('past the stored bound only the version below which forms are missing is kept; an upload based before it needs a reset', async () => {
  const store = await openEmbeddedStore();
  const first = new ReciprocalForms(store, () => 1);
  await first.load(9);
  const big = form('x'.repeat(3 * 1024 * 1024));
  for (const version of [21, 22, 23]) first.keep(9, version, big);
  await first.save(9);
  assert.equal(first.missing(9, 20), false, 'this process still has them');
  const second = new ReciprocalForms(store, () => 1);
  await second.load(9);
  assert.equal(second.missing(9, 20), true);
  assert.equal(second.missing(9, 23), false);
  second.forUpload(9, 23);
  await second.save(9);
  const third = new ReciprocalForms(store, () => 1);
  await third.load(9);
  assert.equal(third.missing(9, 20), false, 'cleared once an upload was based past it');
});
