// The value encoding between the function runner and its workers: lent documents (protocol.Lent) must
// come out exactly as they went in, in any mix with other values, and be put back by handle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Long, ObjectId } from 'bson';
import { decodeLending, decodeReturned, encodeLending, encodeReturned } from '../../runtime/functions/protocol';

const scalar = fc.oneof(
  fc.string(), fc.integer(), fc.double({ noNaN: true }), fc.boolean(), fc.constant(null),
  fc.integer().map((n) => Long.fromNumber(n)), fc.constant(new ObjectId('65f000000000000000000001')), fc.date({ noInvalidDate: true }),
);
const doc = fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }).filter((k) => !k.includes('\u0000') && !k.startsWith('$')), fc.oneof(scalar, fc.array(scalar, { maxLength: 3 })), { maxKeys: 5, noNullPrototype: true });

test('lent documents round-trip in any mix with other values, handles in order', () => {
  fc.assert(fc.property(fc.oneof(doc, fc.array(fc.oneof(doc, scalar), { maxLength: 25 }), scalar), (value) => {
    const lent: unknown[] = [];
    const encoded = encodeLending(value, (d) => lent.push(d));
    const received: { doc: unknown; handle: number }[] = [];
    const decoded = decodeLending(encoded, (d, handle) => received.push({ doc: d, handle }));
    assert.deepEqual(decoded, value);
    assert.deepEqual(received.map((r) => r.handle), lent.map((_, i) => i + 1));
    assert.deepEqual(received.map((r) => r.doc), lent);
  }), { numRuns: 300 });
});

test('returned handles are replaced by the lent objects themselves', () => {
  const kept = { a: 1 };
  const encoded = encodeReturned(['x', kept, { b: 2 }], (d) => (d === kept ? 7 : undefined));
  assert.deepEqual(encoded.returned, { items: [1, 7] });
  const decoded = decodeReturned(encoded.payload, encoded.returned, (handle) => (handle === 7 ? kept : assert.fail('unknown handle'))) as unknown[];
  assert.equal(decoded[1], kept);
  assert.deepEqual(decoded, ['x', { a: 1 }, { b: 2 }]);
  const root = encodeReturned(kept, () => 3);
  assert.equal(decodeReturned(root.payload, root.returned, () => kept), kept);
});
