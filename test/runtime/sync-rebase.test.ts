// The rebase the sync server runs on each upload (runtime/sync/merge/rebase.ts, called by the engine and by
// the property test's simulated server): which history entries an upload meets, the reciprocal forms kept
// per client file, and the bootstraps a flexible client integrated between entries.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyChangeset, dumpState, emptyState } from '../../runtime/sync/merge/apply';
import { ReciprocalHistory, type RebaseEntry } from '../../runtime/sync/merge/rebase';
import type { TimedChangeset } from '../../runtime/sync/merge/transform';
import { changesByObject } from '../../runtime/sync/flexible/view';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { create, insert, SCHEMA, set, str } from '../helpers/sync-merge-build';

const timed = (instructions: Instruction[], originTimestamp: bigint, originFileIdent: number): TimedChangeset => ({ instructions, originTimestamp, originFileIdent: BigInt(originFileIdent) });

/** A server history whose entries count how often the rebase read them. */
function history(changesets: TimedChangeset[]): { entries: RebaseEntry[]; reads: number[] } {
  const reads = changesets.map(() => 0);
  const entries = changesets.map((changeset, i) => ({
    version: i + 1,
    originFileIdent: Number(changeset.originFileIdent),
    changeset: () => { reads[i]!++; return changeset; },
    index: () => changesByObject(changeset.instructions),
  }));
  return { entries, reads };
}

const rebase = (server: ReciprocalHistory, client: number, base: number, upload: TimedChangeset, entries: RebaseEntry[]) =>
  server.rebase(client, base, upload, changesByObject(upload.instructions), entries);

describe('sync rebase (the server\'s step for an upload)', () => {
  test('an upload meets the entries of other client files that touch its objects, and loses to a later write', () => {
    const { entries, reads } = history([
      timed([set(1, 'name', str('theirs'))], 300n, 2),
      timed([set(1, 'name', str('own earlier'))], 150n, 3),
      timed([set(2, 'name', str('elsewhere'))], 400n, 2),
    ]);
    const result = rebase(new ReciprocalHistory(), 3, 0, timed([set(1, 'name', str('mine'))], 200n, 3), entries);
    assert.ok(result.ok);
    assert.deepEqual(result.changeset.instructions, [], 'the later write of client 2 wins: the upload\'s update is dropped');
    assert.deepEqual(reads, [1, 0, 0], 'its own entry and the entry on another object are passed by unread');
  });

  test('a schema change is met by every upload, and a later upload wins over an earlier entry', () => {
    const { entries } = history([timed(SCHEMA, 100n, 2), timed([set(1, 'name', str('theirs'))], 100n, 2)]);
    const result = rebase(new ReciprocalHistory(), 3, 0, timed([set(1, 'name', str('mine'))], 200n, 3), entries);
    assert.ok(result.ok);
    assert.deepEqual(result.changeset.instructions, [set(1, 'name', str('mine'))]);
  });

  test('the reciprocal form an upload left is what the same client\'s next upload on that base meets', () => {
    // Server: client 2 inserted "a" at tags[0]; client 3, which had not seen it, inserted "b" then "c" after it.
    const state = emptyState();
    applyChangeset(state, [...SCHEMA, create(1)]);
    const v1 = timed([insert(1, 'tags', [0], str('a'), 0)], 100n, 2);
    applyChangeset(state, v1.instructions);
    const { entries, reads } = history([v1]);
    const server = new ReciprocalHistory();
    const first = rebase(server, 3, 0, timed([insert(1, 'tags', [0], str('b'), 0)], 200n, 3), entries);
    assert.ok(first.ok);
    applyChangeset(state, first.changeset.instructions);
    const second = rebase(server, 3, 0, timed([insert(1, 'tags', [1], str('c'), 1)], 201n, 3), entries);
    assert.ok(second.ok);
    applyChangeset(state, second.changeset.instructions);
    assert.deepEqual(reads, [1], 'the second upload met the kept form, not the stored entry');
    assert.deepEqual(dumpState(state).Task!['int:1']!.tags, ['string:a', 'string:b', 'string:c']);
    // An upload on a later base meets nothing before it (and the forms below it are dropped).
    const third = rebase(server, 3, 1, timed([insert(1, 'tags', [0], str('d'), 3)], 202n, 3), entries);
    assert.ok(third.ok);
    assert.deepEqual(third.changeset.instructions, [insert(1, 'tags', [0], str('d'), 3)]);
  });

  test('a bootstrap the client integrated is met after the entries of its version', () => {
    const order: string[] = [];
    const seen = (name: string, changeset: TimedChangeset) => ({ ...changeset, get instructions() { order.push(name); return changeset.instructions; } });
    const { entries } = history([timed([set(1, 'name', str('v1'))], 100n, 2), timed([set(1, 'name', str('v2'))], 110n, 2)]);
    const metEntries = entries.map((e) => ({ ...e, changeset: () => seen(`v${e.version}`, e.changeset()) }));
    const bootstrap = { version: 1, changeset: seen('bootstrap at 1', timed([set(1, 'name', str('boot'))], 105n, 0)), keep: () => undefined };
    const upload = timed([set(1, 'name', str('mine'))], 50n, 3);
    const result = new ReciprocalHistory().rebase(3, 0, upload, changesByObject(upload.instructions), metEntries, [bootstrap]);
    assert.ok(result.ok);
    assert.deepEqual(result.changeset.instructions, []);
    assert.deepEqual([...new Set(order)], ['v1', 'bootstrap at 1', 'v2']);
  });
});
