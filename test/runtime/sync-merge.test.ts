// The merge of Realm sync (runtime/sync/merge): each conflict rule as two clients' concurrent changesets
// and the state every peer converges to (whichever upload reaches the server first); a property test
// with 2–4 clients, random changesets and random sync orders; the transform's errors.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyChangeset, dumpState, emptyState, type DumpValue } from '../../runtime/sync/merge/apply';
import { mergeChangesets, transformUpload, TransformError } from '../../runtime/sync/merge/transform';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import {
  add, clear, create, erase, insert, int, link, move, remove, SCHEMA, set, setErase, setInsert, str,
} from '../helpers/sync-merge-build';
import { dumps, settle, SimClient, SimServer } from '../helpers/sync-merge-sim';

const A = 2n;
const B = 3n;

interface Case {
  name: string;
  /** Written by client A and synced to both before the concurrent writes. */
  base: Instruction[];
  a: Instruction[];
  b: Instruction[];
  tsA: bigint;
  tsB: bigint;
  /** Fields of Task 1 (a subset) after convergence; null when Task 1 no longer exists. */
  expect: Record<string, DumpValue> | null;
}

/** Runs a case with A's or B's upload first; returns the converged dump after checking every peer agrees. */
function converge(c: Case, aFirst: boolean) {
  const server = new SimServer();
  const a = new SimClient(A);
  const b = new SimClient(B);
  a.write([...SCHEMA, ...c.base], 1n);
  settle(server, [a, b]);
  a.write(c.a, c.tsA);
  b.write(c.b, c.tsB);
  const order = aFirst ? [a, b] : [b, a];
  for (const client of order) while (client.pendingUploads > 0) client.uploadOne(server);
  settle(server, [a, b]);
  const result = dumps(server, [a, b]);
  assert.deepEqual(result.clients[0], result.server, 'client A and the server');
  assert.deepEqual(result.clients[1], result.server, 'client B and the server');
  return result.server as ReturnType<typeof dumpState>;
}

function pick(fields: Record<string, DumpValue>, keys: string[]): Record<string, DumpValue> {
  return Object.fromEntries(keys.map((k) => [k, fields[k]]));
}

const withTask = (...more: Instruction[]) => [create(1), ...more];

const cases: Case[] = [
  {
    name: 'Update vs Update of the same field: the later timestamp wins',
    base: withTask(set(1, 'name', str('base'))),
    a: [set(1, 'name', str('a'))], tsA: 200n,
    b: [set(1, 'name', str('b'))], tsB: 100n,
    expect: { name: 'string:a' },
  },
  {
    name: 'Update vs Update at the same timestamp: the higher file ident wins',
    base: withTask(),
    a: [set(1, 'name', str('a'))], tsA: 100n,
    b: [set(1, 'name', str('b'))], tsB: 100n,
    expect: { name: 'string:b' },
  },
  {
    name: 'Update of different fields: both kept',
    base: withTask(),
    a: [set(1, 'name', str('a'))], tsA: 100n,
    b: [set(1, 'count', int(7))], tsB: 200n,
    expect: { name: 'string:a', count: 'int:7' },
  },
  {
    name: 'a default value loses to an explicit one, whatever the timestamps',
    base: withTask(),
    a: [{ ...set(1, 'name', str('default')), isDefault: true } as Instruction], tsA: 300n,
    b: [set(1, 'name', str('explicit'))], tsB: 100n,
    expect: { name: 'string:explicit' },
  },
  {
    name: 'EraseObject vs Update of that object: the erase wins even when earlier',
    base: withTask(set(1, 'name', str('base'))),
    a: [erase(1)], tsA: 100n,
    b: [set(1, 'name', str('b')), add(1, 'count', 1)], tsB: 200n,
    expect: null,
  },
  {
    name: 'EraseObject vs erase-and-create: a later re-creation survives',
    base: withTask(set(1, 'name', str('base'))),
    a: [erase(1)], tsA: 100n,
    b: [erase(1), create(1), set(1, 'name', str('again'))], tsB: 200n,
    expect: { name: 'string:again', count: 'int:0' },
  },
  {
    name: 'EraseObject vs erase-and-create: a later erase removes the re-created object',
    base: withTask(set(1, 'name', str('base'))),
    a: [erase(1)], tsA: 300n,
    b: [erase(1), create(1), set(1, 'name', str('again'))], tsB: 200n,
    expect: null,
  },
  {
    name: 'CreateObject vs EraseObject: the erase wins',
    base: [],
    a: [create(1), set(1, 'name', str('a'))], tsA: 300n,
    b: [create(1), erase(1)], tsB: 100n,
    expect: null,
  },
  {
    name: 'AddInteger after an Update: the increment is added to the set value',
    base: withTask(set(1, 'count', int(1))),
    a: [add(1, 'count', 5)], tsA: 200n,
    b: [set(1, 'count', int(10))], tsB: 100n,
    expect: { count: 'int:15' },
  },
  {
    name: 'AddInteger before an Update: the set value wins',
    base: withTask(set(1, 'count', int(1))),
    a: [add(1, 'count', 5)], tsA: 100n,
    b: [set(1, 'count', int(10))], tsB: 200n,
    expect: { count: 'int:10' },
  },
  {
    name: 'AddInteger vs AddInteger: both counted',
    base: withTask(set(1, 'count', int(1))),
    a: [add(1, 'count', 5)], tsA: 100n,
    b: [add(1, 'count', -2), add(1, 'count', 10)], tsB: 200n,
    expect: { count: 'int:14' },
  },
  {
    name: 'ArrayInsert at the same index: the earlier insertion first',
    base: withTask(insert(1, 'tags', [0], str('x'), 0)),
    a: [insert(1, 'tags', [0], str('a'), 1)], tsA: 200n,
    b: [insert(1, 'tags', [0], str('b'), 1)], tsB: 100n,
    expect: { tags: ['string:b', 'string:a', 'string:x'] },
  },
  {
    name: 'ArrayInsert at the same index and timestamp: the lower file ident first',
    base: withTask(),
    a: [insert(1, 'tags', [0], str('a'), 0), insert(1, 'tags', [1], str('a2'), 1)], tsA: 100n,
    b: [insert(1, 'tags', [0], str('b'), 0)], tsB: 100n,
    expect: { tags: ['string:a', 'string:a2', 'string:b'] },
  },
  {
    name: 'ArrayInsert vs ArrayErase before it: the insertion index shifts down',
    base: withTask(insert(1, 'tags', [0], str('x'), 0), insert(1, 'tags', [1], str('y'), 1), insert(1, 'tags', [2], str('z'), 2)),
    a: [remove(1, 'tags', [0], 3)], tsA: 100n,
    b: [insert(1, 'tags', [2], str('n'), 3)], tsB: 200n,
    expect: { tags: ['string:y', 'string:n', 'string:z'] },
  },
  {
    name: 'ArrayErase of an element the other side erased: erased once',
    base: withTask(insert(1, 'tags', [0], str('x'), 0), insert(1, 'tags', [1], str('y'), 1), insert(1, 'tags', [2], str('z'), 2)),
    a: [remove(1, 'tags', [1], 3)], tsA: 100n,
    b: [remove(1, 'tags', [1], 3), remove(1, 'tags', [1], 2)], tsB: 200n,
    expect: { tags: ['string:x'] },
  },
  {
    name: 'Update of a list element the other side erased: dropped; later elements shift',
    base: withTask(insert(1, 'tags', [0], str('x'), 0), insert(1, 'tags', [1], str('y'), 1), insert(1, 'tags', [2], str('z'), 2)),
    a: [remove(1, 'tags', [1], 3)], tsA: 100n,
    b: [set(1, 'tags', str('Y'), [1], 3), set(1, 'tags', str('Z'), [2], 3)], tsB: 200n,
    expect: { tags: ['string:x', 'string:Z'] },
  },
  {
    name: 'ArrayMove vs ArrayInsert: the moved element and the insertion both land',
    base: withTask(insert(1, 'tags', [0], str('x'), 0), insert(1, 'tags', [1], str('y'), 1), insert(1, 'tags', [2], str('z'), 2)),
    a: [move(1, 'tags', [0], 2, 3)], tsA: 100n,
    b: [insert(1, 'tags', [1], str('n'), 3)], tsB: 200n,
    expect: { tags: ['string:n', 'string:y', 'string:z', 'string:x'] },
  },
  {
    name: 'ArrayMove vs ArrayMove of the same element: the later move decides',
    base: withTask(insert(1, 'tags', [0], str('x'), 0), insert(1, 'tags', [1], str('y'), 1), insert(1, 'tags', [2], str('z'), 2)),
    a: [move(1, 'tags', [0], 2, 3)], tsA: 100n,
    b: [move(1, 'tags', [0], 1, 3)], tsB: 200n,
    expect: { tags: ['string:y', 'string:x', 'string:z'] },
  },
  {
    name: 'Clear vs ArrayInsert in the cleared list: the clear wins whatever the timestamps',
    base: withTask(insert(1, 'tags', [0], str('x'), 0)),
    a: [clear(1, 'tags', 'list')], tsA: 100n,
    b: [insert(1, 'tags', [1], str('n'), 1), set(1, 'tags', str('X'), [0], 2)], tsB: 200n,
    expect: { tags: [] },
  },
  {
    name: 'Clear vs Clear: the later clear keeps its own insertions',
    base: withTask(insert(1, 'tags', [0], str('x'), 0)),
    a: [clear(1, 'tags', 'list'), insert(1, 'tags', [0], str('a'), 0)], tsA: 100n,
    b: [clear(1, 'tags', 'list'), insert(1, 'tags', [0], str('b'), 0)], tsB: 200n,
    expect: { tags: ['string:b'] },
  },
  {
    name: 'SetInsert of different values: both kept',
    base: withTask(),
    a: [setInsert(1, 'a')], tsA: 100n,
    b: [setInsert(1, 'b')], tsB: 200n,
    expect: { labels: ['string:a', 'string:b'] },
  },
  {
    name: 'SetErase after SetInsert of the same value: the later one wins (erase)',
    base: withTask(setInsert(1, 'a')),
    a: [setErase(1, 'a')], tsA: 200n,
    b: [setErase(1, 'a'), setInsert(1, 'a')], tsB: 100n,
    expect: { labels: [] },
  },
  {
    name: 'SetInsert after SetErase of the same value: the later one wins (insert)',
    base: withTask(setInsert(1, 'a')),
    a: [setErase(1, 'a')], tsA: 100n,
    b: [setErase(1, 'a'), setInsert(1, 'a')], tsB: 200n,
    expect: { labels: ['string:a'] },
  },
  {
    name: 'Clear of a set vs SetInsert: the clear wins',
    base: withTask(setInsert(1, 'a')),
    a: [clear(1, 'labels', 'set')], tsA: 100n,
    b: [setInsert(1, 'b')], tsB: 200n,
    expect: { labels: [] },
  },
  {
    name: 'Dictionary: the same key set on both sides, the later wins; other keys merge',
    base: withTask(),
    a: [set(1, 'attrs', str('a'), ['k']), set(1, 'attrs', str('1'), ['only-a'])], tsA: 100n,
    b: [set(1, 'attrs', str('b'), ['k'])], tsB: 200n,
    expect: { attrs: { k: 'string:b', 'only-a': 'string:1' } },
  },
  {
    name: 'Dictionary: a later erase of a key wins over an earlier set',
    base: withTask(set(1, 'attrs', str('v'), ['k'])),
    a: [set(1, 'attrs', { type: 'erased' }, ['k'])], tsA: 200n,
    b: [set(1, 'attrs', str('b'), ['k'])], tsB: 100n,
    expect: { attrs: {} },
  },
  {
    name: 'Embedded objects in a list: an insertion shifts the path of an update inside a later element',
    base: withTask(insert(1, 'items', [0], { type: 'objectValue' }, 0), set(1, 'items', str('a'), [0, 'text']),
      insert(1, 'items', [1], { type: 'objectValue' }, 1), set(1, 'items', str('b'), [1, 'text'])),
    a: [insert(1, 'items', [0], { type: 'objectValue' }, 2), set(1, 'items', str('n'), [0, 'text'])], tsA: 100n,
    b: [set(1, 'items', str('B'), [1, 'text'])], tsB: 200n,
    expect: { items: [{ qty: 'int:0', text: 'string:n' }, { qty: 'int:0', text: 'string:a' }, { qty: 'int:0', text: 'string:B' }] },
  },
  {
    name: 'Embedded objects in a list: an update inside an erased element is dropped',
    base: withTask(insert(1, 'items', [0], { type: 'objectValue' }, 0), set(1, 'items', str('a'), [0, 'text']),
      insert(1, 'items', [1], { type: 'objectValue' }, 1), set(1, 'items', str('b'), [1, 'text'])),
    a: [remove(1, 'items', [0], 2)], tsA: 100n,
    b: [set(1, 'items', str('A'), [0, 'text']), set(1, 'items', int(3), [1, 'qty'])], tsB: 200n,
    expect: { items: [{ qty: 'int:3', text: 'string:b' }] },
  },
  {
    name: 'a link to an object the other side erased reads as null',
    base: [create(1, 'Person'), create(1), create(2, 'Person')],
    a: [set(1, 'owner', link('Person', 1))], tsA: 200n,
    b: [erase(1, 'Person')], tsB: 100n,
    expect: { owner: null },
  },
  {
    name: 'a link set later than another link: the later one wins',
    base: [create(1, 'Person'), create(2, 'Person'), create(1)],
    a: [set(1, 'owner', link('Person', 1))], tsA: 200n,
    b: [set(1, 'owner', link('Person', 2))], tsB: 100n,
    expect: { owner: 'link:Person:int:1' },
  },
];

describe('merge rules: two clients, concurrent changesets, converged state', () => {
  for (const c of cases) {
    test(c.name, () => {
      for (const aFirst of [true, false]) {
        const state = converge(c, aFirst);
        const task = state.Task['int:1'];
        if (c.expect === null) assert.equal(task, undefined, `Task 1 is gone (${aFirst ? 'A' : 'B'} uploaded first)`);
        else assert.deepEqual(pick(task, Object.keys(c.expect)), c.expect, `${aFirst ? 'A' : 'B'} uploaded first`);
      }
    });
  }
});

describe('transformUpload', () => {
  test('rebases an upload over what the server integrated since its base', () => {
    const base = [...SCHEMA, create(1), insert(1, 'tags', [0], str('x'), 0)];
    const concurrent = [{ instructions: [insert(1, 'tags', [0], str('s'), 1), set(1, 'name', str('server'))], originTimestamp: 500n, originFileIdent: 4n }];
    const upload = { instructions: [insert(1, 'tags', [1], str('u'), 1), set(1, 'name', str('upload'))], originTimestamp: 400n, originFileIdent: 5n };
    const transformed = transformUpload(upload, concurrent);
    assert.deepEqual(transformed, [insert(1, 'tags', [2], str('u'), 2)]);
    const state = emptyState();
    applyChangeset(state, base);
    applyChangeset(state, concurrent[0].instructions);
    applyChangeset(state, transformed);
    assert.deepEqual(dumpState(state).Task['int:1'].tags, ['string:s', 'string:x', 'string:u']);
    assert.equal(dumpState(state).Task['int:1'].name, 'string:server');
  });

  test('an upload with no concurrent changesets is unchanged, and the inputs are not modified', () => {
    const upload = { instructions: [set(1, 'name', str('u'))], originTimestamp: 1n, originFileIdent: 2n };
    const before = structuredClone(upload.instructions);
    assert.deepEqual(transformUpload(upload, []), upload.instructions);
    const concurrent = [{ instructions: [set(1, 'name', str('c'))], originTimestamp: 2n, originFileIdent: 3n }];
    assert.deepEqual(transformUpload(upload, concurrent), []);
    assert.deepEqual(upload.instructions, before);
  });

  test('identical AddTable/AddColumn on both sides merge (both dropped)', () => {
    const result = mergeChangesets([{ instructions: SCHEMA, originTimestamp: 1n, originFileIdent: 2n }], [{ instructions: SCHEMA, originTimestamp: 2n, originFileIdent: 3n }]);
    assert.ok(result.ok);
    assert.deepEqual(result.theirs[0].instructions, []);
    assert.deepEqual(result.ours[0].instructions, []);
  });

  const table = (pkType: 'int' | 'string'): Instruction => ({ type: 'AddTable', table: 'Dog', spec: { kind: 'topLevel', pkField: '_id', pkType, pkNullable: false, asymmetric: false } });
  const column = (valueType: 'int' | 'string', collectionType: 'single' | 'list' = 'single', nullable = false): Instruction => ({ type: 'AddColumn', table: 'Dog', field: 'age', valueType, keyType: 'null', nullable, collectionType });
  const schemaConflicts: [string, Instruction, Instruction, RegExp][] = [
    ['primary key types', table('int'), table('string'), /'Dog' has primary key '_id', which is of type int on one side and type string on the other/],
    ['embedded vs top-level', table('int'), { type: 'AddTable', table: 'Dog', spec: { kind: 'embedded' } }, /has a primary key on one side, but not on the other/],
    ['property types', column('int'), column('string'), /Property 'age' in class 'Dog' is of type int on one side and type string on the other/],
    ['nullability', column('int'), column('int', 'single', true), /is nullable on one side and not on the other/],
    ['collection kinds', column('int'), column('int', 'list'), /is a single value on one side, and a list on the other/],
  ];
  for (const [what, mine, theirs, message] of schemaConflicts) {
    test(`conflicting ${what}: a schema mismatch is reported, not applied`, () => {
      const result = mergeChangesets([{ instructions: [mine], originTimestamp: 1n, originFileIdent: 2n }], [{ instructions: [theirs], originTimestamp: 2n, originFileIdent: 3n }]);
      assert.equal(result.ok, false);
      assert.ok(!result.ok && result.error instanceof TransformError && result.error.kind === 'schemaMismatch');
      assert.match(result.error.message, message);
      assert.throws(() => transformUpload({ instructions: [theirs], originTimestamp: 2n, originFileIdent: 3n }, [{ instructions: [mine], originTimestamp: 1n, originFileIdent: 2n }]), TransformError);
    });
  }

  test('inconsistent list sizes and malformed paths are bad changesets', () => {
    const ours = [{ instructions: [insert(1, 'tags', [0], str('a'), 1)], originTimestamp: 1n, originFileIdent: 2n }];
    const disagreeing = mergeChangesets(ours, [{ instructions: [insert(1, 'tags', [0], str('b'), 3)], originTimestamp: 2n, originFileIdent: 3n }]);
    assert.ok(!disagreeing.ok && disagreeing.error.kind === 'badChangeset');
    assert.match(disagreeing.error.message, /prior_size/);
    const noIndex = mergeChangesets(ours, [{ instructions: [{ ...remove(1, 'tags', [], 1) }], originTimestamp: 2n, originFileIdent: 3n }]);
    assert.ok(!noIndex.ok && /without a list index/.test(noIndex.error.message));
    const negative = mergeChangesets(ours, [{ instructions: [set(1, 'tags', str('x'), [-1], 1)], originTimestamp: 2n, originFileIdent: 3n }]);
    assert.ok(!negative.ok && /Invalid list index/.test(negative.error.message));
  });
});
