// The merge of Realm sync (runtime/sync/merge): each conflict rule as two clients' concurrent changesets
// and the state every peer converges to (whichever upload reaches the server first); a property test
// with 2–4 clients, random changesets and random sync orders; the transform's errors.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { applyChangeset, cloneState, dumpState, emptyState, type DumpValue, type Value } from '../../runtime/sync/merge/apply';
import { mergeChangesets, transformUpload, TransformError } from '../../runtime/sync/merge/transform';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import {
  add, clear, create, erase, insert, int, link, move, pk, remove, SCHEMA, set, setErase, setInsert, str,
} from '../helpers/sync-merge-build';
import { serveDist, type ServedDist } from '../dist/fixtures/serve';
import { probeAvailable, runProbe, startReferenceServer } from '../helpers/realm-probe';
import { playScenario, randomWrite } from '../helpers/sync-merge-random';
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

describe('destructive schema changes', () => {
  /** Both clients start from the schema and Task 1, write concurrently, A uploads first; returns the converged dump. */
  function convergeSchema(a: Instruction[], b: Instruction[]) {
    const server = new SimServer();
    const clientA = new SimClient(A);
    const clientB = new SimClient(B);
    clientA.write([...SCHEMA, create(1), create(1, 'Person')], 1n);
    settle(server, [clientA, clientB]);
    clientA.write(a, 100n);
    clientB.write(b, 200n);
    settle(server, [clientA, clientB]);
    const result = dumps(server, [clientA, clientB]);
    assert.deepEqual(result.clients[0], result.server);
    assert.deepEqual(result.clients[1], result.server);
    return { state: result.server as ReturnType<typeof dumpState>, server };
  }

  test('EraseColumn drops a concurrent Update of that column', () => {
    const { state } = convergeSchema([{ type: 'EraseColumn', table: 'Task', field: 'name' }], [set(1, 'name', str('b')), set(1, 'count', int(4))]);
    assert.equal('name' in state.Task['int:1'], false);
    assert.equal(state.Task['int:1'].count, 'int:4');
  });

  test('EraseTable drops what the other side did in that table', () => {
    const { state } = convergeSchema([{ type: 'EraseTable', table: 'Person' }], [create(2, 'Person'), set(1, 'name', str('p'), [], 0, 'Person'), set(1, 'name', str('t'))]);
    assert.equal(state.Person, undefined);
    assert.equal(state.Task['int:1'].name, 'string:t');
  });

  test('a link column added towards a table the other side erased is erased with it', () => {
    const friend: Instruction = { type: 'AddColumn', table: 'Task', field: 'friend', valueType: 'link', keyType: 'null', nullable: true, collectionType: 'single', linkTargetTable: 'Person' };
    const { state, server } = convergeSchema([{ type: 'EraseColumn', table: 'Task', field: 'owner' }, { type: 'EraseTable', table: 'Person' }], [friend]);
    assert.equal(state.Person, undefined);
    assert.equal('friend' in state.Task['int:1'], false);
    assert.equal(server.state.tables.get('Task')!.columns.has('friend'), false);
  });
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

  test('a move in a list of embedded objects vs a change inside an element: as realm-core 14.14 computes it', () => {
    // realm-core's nested rule for ArrayMove adjusts the move's own source index from the inner path's
    // index and leaves the inner path as it is; clients compute exactly this, so the server must too.
    const ours = [{ instructions: [move(1, 'items', [0], 2, 3)], originTimestamp: 1n, originFileIdent: 2n }];
    const theirs = [{ instructions: [set(1, 'items', str('x'), [0, 'text'])], originTimestamp: 2n, originFileIdent: 3n }];
    const result = mergeChangesets(ours, theirs);
    assert.ok(result.ok);
    assert.deepEqual(result.theirs[0].instructions, theirs[0].instructions);
    assert.deepEqual(result.ours[0].instructions, [move(1, 'items', [2], 2, 3)]);
  });

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

describe('convergence: 2–4 clients, random concurrent changesets, random sync order', () => {
  test('every client and the server end in the same state', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 4 }), fc.array(fc.noBias(fc.nat({ max: 1_000_000 })), { minLength: 200, maxLength: 800 }), (clientCount, choices) => {
        const { server, clients } = playScenario(clientCount, choices);
        const result = dumps(server, clients);
        result.clients.forEach((state, i) => assert.deepEqual(state, result.server, `client ${i} and the server`));
      }),
      { numRuns: 200 },
    );
  });
});


describe('the merge by object', () => {
  test('gives what the pass over every pair gives (an erased column elsewhere forces that pass)', () => {
    fc.assert(
      fc.property(fc.array(fc.noBias(fc.nat({ max: 1_000_000 })), { minLength: 50, maxLength: 400 }), (choices) => {
        let at = 0;
        const choose = (n: number) => (at < choices.length ? choices[at++] % n : 0);
        const base = emptyState();
        applyChangeset(base, SCHEMA);
        for (let i = 0; i < 6; i++) applyChangeset(base, randomWrite(base, choose));
        const writesOn = (ident: bigint) => {
          const state = cloneState(base);
          return Array.from({ length: 1 + choose(4) }, (_, i) => {
            const instructions = randomWrite(state, choose);
            applyChangeset(state, instructions);
            return { instructions, originTimestamp: BigInt(choose(3) + i), originFileIdent: ident };
          });
        };
        const ours = writesOn(2n);
        const theirs = writesOn(3n);
        const elsewhere = { instructions: [{ type: 'EraseColumn', table: 'Elsewhere', field: 'gone' } as Instruction], originTimestamp: 0n, originFileIdent: 4n };
        const byObject = mergeChangesets(ours, theirs);
        const everyPair = mergeChangesets([...ours, elsewhere], theirs);
        assert.ok(byObject.ok && everyPair.ok);
        assert.deepEqual(byObject.theirs, everyPair.theirs);
        assert.deepEqual(byObject.ours, everyPair.ours.slice(0, ours.length));
      }),
      { numRuns: 300 },
    );
  });
});

describe('hostile changesets', () => {
  // Any typed instructions (indexes, sizes and paths that do not fit together) give a result or a
  // TransformError, never another exception.
  const pathElement = fc.oneof(fc.nat({ max: 4 }), fc.constantFrom('text', 'qty', 'k'));
  const target = fc.record({ table: fc.constantFrom('Task', 'Item'), object: fc.nat({ max: 2 }).map(pk), field: fc.constantFrom('tags', 'items', 'name'), path: fc.array(pathElement, { maxLength: 3 }) });
  const payload = fc.oneof(fc.constant({ type: 'null' } as const), fc.string({ maxLength: 2 }).map(str), fc.integer().map(int), fc.constant({ type: 'objectValue' } as const), fc.constant({ type: 'list' } as const));
  const instruction: fc.Arbitrary<Instruction> = fc.oneof(
    fc.record({ type: fc.constant('Update' as const), value: payload, isDefault: fc.boolean(), priorSize: fc.nat({ max: 4 }) }).chain((rest) => target.map((t) => ({ ...t, ...rest }))),
    fc.record({ type: fc.constant('ArrayInsert' as const), value: payload, priorSize: fc.integer({ min: -1, max: 4 }) }).chain((rest) => target.map((t) => ({ ...t, ...rest }))),
    fc.record({ type: fc.constant('ArrayErase' as const), priorSize: fc.nat({ max: 4 }) }).chain((rest) => target.map((t) => ({ ...t, ...rest }))),
    fc.record({ type: fc.constant('ArrayMove' as const), ndx2: fc.integer({ min: -1, max: 4 }), priorSize: fc.nat({ max: 4 }) }).chain((rest) => target.map((t) => ({ ...t, ...rest }))),
    fc.record({ type: fc.constant('AddInteger' as const), value: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }) }).chain((rest) => target.map((t) => ({ ...t, ...rest }))),
    fc.record({ type: fc.constant('Clear' as const), collectionType: fc.constantFrom('list' as const, 'set' as const) }).chain((rest) => target.map((t) => ({ ...t, ...rest }))),
    fc.record({ type: fc.constantFrom('SetInsert' as const, 'SetErase' as const), value: payload }).chain((rest) => target.map((t) => ({ ...t, ...rest }))),
    fc.nat({ max: 2 }).map((n) => erase(n)),
    fc.nat({ max: 2 }).map((n) => create(n)),
    fc.constantFrom<Instruction>(...SCHEMA.slice(0, 4), SCHEMA[SCHEMA.length - 1], { type: 'EraseTable', table: 'Item' }, { type: 'EraseTable', table: 'Person' }, { type: 'EraseColumn', table: 'Task', field: 'tags' }),
  );
  const changeset = (ident: bigint) => fc.record({ instructions: fc.array(instruction, { maxLength: 8 }), originTimestamp: fc.bigInt({ min: 0n, max: 3n }), originFileIdent: fc.constant(ident) });

  test('give a merge or a TransformError, nothing else', () => {
    fc.assert(
      fc.property(fc.array(changeset(2n), { maxLength: 3 }), fc.array(changeset(3n), { maxLength: 3 }), (ours, theirs) => {
        const result = mergeChangesets(ours, theirs);
        if (!result.ok) assert.ok(result.error instanceof TransformError && result.error.message.length > 0);
      }),
      { numRuns: 2000 },
    );
  });
});

// realm-core's reference server against the merge on the same scenario: two devices write offline
// (A first, then B, so B's writes carry the later timestamps), then A syncs, B syncs, A syncs again. The
// probe writes are mirrored by the instructions realm-core's client makes for them: a create sets each
// given field after CreateObject and fills a new list by insertions; an update of a list clears it first.
const PROBE_SCHEMA = [
  { name: 'Task', primaryKey: '_id', properties: { _id: 'int', _partition: 'string?', name: 'string?', count: 'int', tags: 'string[]', labels: 'string<>', attrs: 'string{}', checklist: 'Item[]' } },
  { name: 'Item', embedded: true, properties: { text: 'string', done: 'bool' } },
];
const PROBE_TABLES: Instruction[] = [
  { type: 'AddTable', table: 'Item', spec: { kind: 'embedded' } },
  { type: 'AddColumn', table: 'Item', field: 'text', valueType: 'string', keyType: 'null', nullable: false, collectionType: 'single' },
  { type: 'AddColumn', table: 'Item', field: 'done', valueType: 'bool', keyType: 'null', nullable: false, collectionType: 'single' },
  { type: 'AddTable', table: 'Task', spec: { kind: 'topLevel', pkField: '_id', pkType: 'int', pkNullable: false, asymmetric: false } },
  { type: 'AddColumn', table: 'Task', field: '_partition', valueType: 'string', keyType: 'null', nullable: true, collectionType: 'single' },
  { type: 'AddColumn', table: 'Task', field: 'name', valueType: 'string', keyType: 'null', nullable: true, collectionType: 'single' },
  { type: 'AddColumn', table: 'Task', field: 'count', valueType: 'int', keyType: 'null', nullable: false, collectionType: 'single' },
  { type: 'AddColumn', table: 'Task', field: 'tags', valueType: 'string', keyType: 'null', nullable: false, collectionType: 'list' },
  { type: 'AddColumn', table: 'Task', field: 'labels', valueType: 'string', keyType: 'null', nullable: false, collectionType: 'set' },
  { type: 'AddColumn', table: 'Task', field: 'attrs', valueType: 'string', keyType: 'string', nullable: false, collectionType: 'dictionary' },
  { type: 'AddColumn', table: 'Task', field: 'checklist', valueType: 'link', keyType: 'null', nullable: false, collectionType: 'list', linkTargetTable: 'Item' },
];

interface ProbeTask {
  name?: string; count?: number; tags?: string[]; labels?: string[]; attrs?: Record<string, string>; checklist?: { text: string; done: boolean }[];
}
type ProbeWrite = { op: 'create' | 'update' | 'delete'; id: number; value?: ProbeTask };

/**
 * The instructions realm-core's client records for a probe write on `partition`: a create sets each given
 * field after CreateObject and fills new collections by insertions; an update clears a collection it
 * replaces first.
 */
function instructionsOf(write: ProbeWrite, partition: string): Instruction[] {
  if (write.op === 'delete') return [erase(write.id)];
  const id = write.id;
  const out: Instruction[] = write.op === 'create' ? [create(id), set(id, '_partition', str(partition))] : [];
  const value = write.value ?? {};
  const replacing = (field: string, kind: 'list' | 'set' | 'dictionary') => {
    if (write.op === 'update') out.push(clear(id, field, kind));
  };
  if (value.name !== undefined) out.push(set(id, 'name', str(value.name)));
  if (value.count !== undefined) out.push(set(id, 'count', int(value.count)));
  if (value.tags) {
    replacing('tags', 'list');
    value.tags.forEach((tag, i) => out.push(insert(id, 'tags', [i], str(tag), i)));
  }
  if (value.labels) {
    replacing('labels', 'set');
    for (const label of value.labels) out.push({ type: 'SetInsert', table: 'Task', object: pk(id), field: 'labels', path: [], value: str(label) });
  }
  if (value.attrs) {
    replacing('attrs', 'dictionary');
    for (const [key, text] of Object.entries(value.attrs)) out.push(set(id, 'attrs', str(text), [key]));
  }
  if (value.checklist) {
    replacing('checklist', 'list');
    value.checklist.forEach((item, i) => {
      out.push(insert(id, 'checklist', [i], { type: 'objectValue' }, i));
      out.push(set(id, 'checklist', str(item.text), [i, 'text']), set(id, 'checklist', { type: 'bool', value: item.done }, [i, 'done']));
    });
  }
  return out;
}

/** A model value in the probe's `object` line form. */
function probeValue(value: Value): unknown {
  switch (value.kind) {
    case 'scalar': {
      const payload = value.value;
      if (payload.type === 'int') return Number(payload.value);
      if (payload.type === 'string' || payload.type === 'bool') return payload.value;
      return null;
    }
    case 'list': return value.items.map(probeValue);
    case 'set': return value.items.map((item) => probeValue({ kind: 'scalar', value: item })).sort();
    case 'dictionary': return Object.fromEntries([...value.entries].map(([key, entry]) => [key, probeValue(entry)]));
    case 'object': return Object.fromEntries([...value.fields].map(([name, field]) => [name, probeValue(field)]));
  }
}

/** The model's Task objects in the probe's `object` line form. */
function probeObjects(state: ReturnType<typeof emptyState>): Record<string, unknown>[] {
  const table = state.tables.get('Task');
  if (!table) return [];
  return [...table.objects.values()]
    .map(({ pk: key, fields }) => ({ _id: key.type === 'int' ? Number(key.value) : null, ...(probeValue({ kind: 'object', fields }) as object) }))
    .sort((x, y) => Number(x._id) - Number(y._id));
}

/** The probe's objects with sets in a canonical order and keys sorted, as `probeObjects` gives them. */
function canonicalProbeObjects(objects: Record<string, unknown>[]): unknown {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === 'object') return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]));
    return value;
  };
  return [...objects].sort((x, y) => Number(x._id) - Number(y._id)).map((object) => canonical({ ...object, labels: [...(object.labels as string[])].sort() }));
}

function probeWriteJson(write: ProbeWrite, partition: string): Record<string, unknown> {
  if (write.op === 'delete') return { op: 'delete', type: 'Task', id: write.id };
  if (write.op === 'update') return { op: 'update', type: 'Task', id: write.id, value: write.value };
  return { op: 'create', type: 'Task', value: { _id: write.id, _partition: partition, ...write.value } };
}

/** `offline`: each device's writes, made offline one device after the other (so in timestamp order). */
interface ReferenceScenario { name: string; base: ProbeWrite[]; offline: ProbeWrite[][] }

const referenceScenarios: ReferenceScenario[] = [
  {
    name: 'the same field: the later write wins',
    base: [{ op: 'create', id: 1, value: { name: 'base', count: 1, tags: ['x'] } }],
    offline: [
      [{ op: 'update', id: 1, value: { name: 'a' } }],
      [{ op: 'update', id: 1, value: { name: 'b' } }],
    ],
  },
  {
    name: 'different fields: both kept',
    base: [{ op: 'create', id: 1, value: { name: 'base', count: 1 } }],
    offline: [
      [{ op: 'update', id: 1, value: { name: 'a' } }],
      [{ op: 'update', id: 1, value: { count: 5 } }],
    ],
  },
  {
    name: 'delete vs a later update: deleted',
    base: [{ op: 'create', id: 1, value: { name: 'base', count: 1 } }, { op: 'create', id: 2, value: { name: 'other' } }],
    offline: [
      [{ op: 'delete', id: 1 }],
      [{ op: 'update', id: 1, value: { name: 'b', count: 9 } }, { op: 'update', id: 2, value: { name: 'b2' } }],
    ],
  },
  {
    name: 'list insertions at the same index of a new object: the earlier first',
    base: [],
    offline: [
      [{ op: 'create', id: 2, value: { tags: ['a1', 'a2'] } }],
      [{ op: 'create', id: 2, value: { tags: ['b1'] } }],
    ],
  },
  {
    name: 'a list replaced on both sides: the later replacement wins',
    base: [{ op: 'create', id: 1, value: { tags: ['x', 'y'] } }],
    offline: [
      [{ op: 'update', id: 1, value: { tags: ['x', 'a'] } }],
      [{ op: 'update', id: 1, value: { name: 'b', tags: ['b', 'x', 'y'] } }],
    ],
  },
  {
    name: 'delete and re-create vs a later update of the old object: the re-created object without the update',
    base: [{ op: 'create', id: 1, value: { name: 'base', count: 3 } }],
    offline: [
      [{ op: 'delete', id: 1 }, { op: 'create', id: 1, value: { name: 'again' } }],
      [{ op: 'update', id: 1, value: { name: 'b', count: 9 } }],
    ],
  },
  {
    name: 'a set, a dictionary and embedded objects filled on both sides of a new object',
    base: [],
    offline: [
      [{ op: 'create', id: 3, value: { labels: ['a', 'both'], attrs: { k: 'a', ka: 'a' }, checklist: [{ text: 'a1', done: false }] } }],
      [{ op: 'create', id: 3, value: { labels: ['b', 'both'], attrs: { k: 'b' }, checklist: [{ text: 'b1', done: true }] } }],
    ],
  },
  {
    name: 'embedded objects replaced on one side, the other edits the old ones: the later replacement wins',
    base: [{ op: 'create', id: 1, value: { checklist: [{ text: 'x', done: false }, { text: 'y', done: false }] } }],
    offline: [
      [{ op: 'update', id: 1, value: { checklist: [{ text: 'x', done: true }, { text: 'y', done: false }], attrs: { k: 'a' } } }],
      [{ op: 'update', id: 1, value: { checklist: [{ text: 'z', done: false }], labels: ['b'] } }],
    ],
  },
  {
    name: 'three devices: the same field, and insertions at the same index of a new list',
    base: [{ op: 'create', id: 1, value: { name: 'base' } }],
    offline: [
      [{ op: 'update', id: 1, value: { name: 'a' } }, { op: 'create', id: 4, value: { tags: ['a'] } }],
      [{ op: 'update', id: 1, value: { name: 'b', count: 2 } }, { op: 'create', id: 4, value: { tags: ['b1', 'b2'] } }],
      [{ op: 'update', id: 1, value: { count: 3 } }, { op: 'create', id: 4, value: { tags: ['c'], name: 'c' } }],
    ],
  },
];

describe("the same final objects as realm-core's own server (reference server, realm-sync-probe clients)", { skip: !probeAvailable && 'realm-sync-probe is not beside the project' }, () => {
  let served: ServedDist;
  let reference: { url: string; close(): Promise<void> };
  const dataDirs: string[] = [];

  before(async () => {
    [served, reference] = await Promise.all([serveDist(), startReferenceServer()]);
  });
  after(async () => {
    await Promise.all([served?.close(), reference?.close()]);
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  referenceScenarios.forEach((scenario, index) => {
    test(scenario.name, async () => {
      const partition = `merge-${index}-${Date.now()}`;
      const device = (who: string) => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `asl-merge-${who}-`));
        dataDirs.push(dataDir);
        const script = {
          baseUrl: served.url, appId: served.appId, partition, schema: PROBE_SCHEMA, dataDir, syncRoute: reference.url, timeoutMs: 15000,
          credentials: { type: 'emailPassword', email: `${who}-merge@example.com`, password: 'merge-Passw0rd', register: true },
        };
        return async (extra: Record<string, unknown>) => {
          const run = await runProbe({ ...script, ...extra });
          assert.equal(run.result.status, 'ok', JSON.stringify(run.lines.slice(-5)));
          return run;
        };
      };
      const devices = scenario.offline.map((_, i) => device(String.fromCharCode(97 + i)));
      await devices[0](scenario.base.length ? { writes: scenario.base.map((w) => probeWriteJson(w, partition)) } : {});
      for (const run of devices.slice(1)) await run({});
      for (const [i, run] of devices.entries()) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 20));
        await run({ offline: true, writes: scenario.offline[i].map((w) => probeWriteJson(w, partition)) });
      }
      for (const run of devices) await run({});
      const finals = [];
      for (const run of devices) finals.push(await run({}));

      const server = new SimServer();
      const clients = devices.map((_, i) => new SimClient(BigInt(i + 2)));
      clients[0].write([...PROBE_TABLES, ...scenario.base.flatMap((w) => instructionsOf(w, partition))], 100n);
      settle(server, clients);
      clients.forEach((client, i) => client.write(scenario.offline[i].flatMap((w) => instructionsOf(w, partition)), BigInt(200 + 100 * i)));
      settle(server, clients);
      settle(server, clients);

      const expected = canonicalProbeObjects(finals[0].objects('Task'));
      finals.forEach((run, i) => assert.deepEqual(canonicalProbeObjects(run.objects('Task')), expected, `device ${i} agrees on the reference server`));
      assert.deepEqual(canonicalProbeObjects(probeObjects(server.state)), expected, 'the merge reaches the objects the reference server reached');
      clients.forEach((client) => assert.deepEqual(canonicalProbeObjects(probeObjects(client.state)), expected));
    });
  });
});
