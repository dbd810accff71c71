// The value encoding between the function runner and its workers: lent documents (protocol.Lent) must
// come out exactly as they went in, in any mix with other values, and be put back by handle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BSON, Decimal128, Long, ObjectId } from 'bson';
import { OriginalEncodings } from '../../runtime/functions/encodings';
import { toStorable } from '../../runtime/store/bson-values';
import { deserializeStored } from '../../core/bsonDecode';
import { mutate, mutation, supportedDoc } from './fixtures/bson-mutations';
import {
  carry, decodeLending, decodeReturned, decodeValue, encodeDocument, encodeLending, encodeReturned, encodesAs, encodeValue, uncarry, wrapDocuments,
} from '../../runtime/functions/protocol';

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
    // Numbers arrive typed as the store keeps them: a whole double (2^40, -0) as a Double.
    assert.deepEqual(decoded, toStorable(value));
    assert.deepEqual(received.map((r) => r.handle), lent.map((_, i) => i + 1));
    assert.deepEqual(received.map((r) => r.doc), lent.map((d) => toStorable(d)));
  }), { numRuns: 300 });
});

test('documents put together from their own BSON encode exactly as serialised in one go', () => {
  fc.assert(fc.property(fc.array(fc.oneof(doc, scalar), { maxLength: 25 }), (value) => {
    const whole = encodeLending(value, () => 0);
    const byItem = encodeLending(value, () => 0, (index) => encodeDocument(value[index] as Record<string, unknown>));
    assert.deepEqual(byItem, whole);
  }), { numRuns: 300 });
  assert.equal(wrapDocuments([]), Buffer.from(BSON.serialize({ v: [] })).toString('latin1'));
});

test('kept encodings answer as encoding does, and stay within their budget, dropping the oldest first', () => {
  const budget = 4096;
  const encodings = new OriginalEncodings(budget);
  const docs = Array.from({ length: 200 }, (_, i) => ({ _id: i, text: 'x'.repeat(i % 50), when: new Date(i) }));
  for (const d of docs) {
    assert.equal(encodings.encode(d), encodeDocument(d));
    assert.ok(encodings.keptBytes <= budget);
  }
  const last = docs[docs.length - 1]!;
  assert.equal(encodings.encode(last), encodeDocument(last));
  // What is kept is answered by identity: the kept answer for an object is returned even after it changed
  // (the caller vouches it never does), which shows which ones are still kept.
  const first = docs[0]!;
  (first as Record<string, unknown>).text = 'changed';
  (last as Record<string, unknown>).text = 'changed';
  assert.equal(encodings.encode(first), encodeDocument(first), 'the oldest was dropped, so it is encoded anew');
  assert.notEqual(encodings.encode(last), encodeDocument(last), 'the newest is still kept');
  const big = { blob: 'y'.repeat(70 * 1024) };
  const before = encodings.keptBytes;
  encodings.encode(big);
  assert.equal(encodings.keptBytes, before, 'documents over 64 KB are not kept');
});

// Values cross to a worker as they are when structured cloning gives what a BSON round trip gives.
const oddLeaf = fc.oneof(
  fc.string({ unit: 'binary' }), fc.constant('lone \ud800 surrogate'), fc.double(), fc.constant(-0), fc.integer(), fc.boolean(),
  fc.constant(null), fc.constant(undefined), fc.date(), fc.constant(new Date(Number.NaN)), fc.bigInt(),
  fc.constant(new ObjectId('65f000000000000000000001')), fc.constant(Long.fromNumber(5)), fc.constant(new Decimal128('1.5')),
  fc.constant(/x/g), fc.constant(new Map([['a', 1]])), fc.constant(new Uint8Array([1])), fc.constant(new Proxy({ a: 1 }, {})),
  fc.constant({ toBSON: () => 'x' }), fc.constant(Object.assign(new Date(0), { toBSON: () => 1 })), fc.constant(Object.assign([1, 2], { extra: true })),
  fc.constant({ get computed() { return 42; } }), fc.constant(Object.create(null) as object), fc.constant(new (class Point { x = 1; })()),
);
const oddKey = fc.oneof(fc.string(), fc.constant('__proto__'), fc.constant('a\u0000b'), fc.constant('\udc00'), fc.constant('$set'), fc.constant('a.b'));
const { oddValue } = fc.letrec((tie) => ({
  oddValue: fc.oneof({ depthSize: 'small' }, oddLeaf, fc.array(tie('oddValue'), { maxLength: 4 }), fc.sparseArray(tie('oddValue'), { maxLength: 4 }),
    fc.dictionary(oddKey, tie('oddValue'), { maxKeys: 4 })),
}));

/** Keys in order, all the way down: deepStrictEqual does not compare key order. */
function keyOrder(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || value instanceof Date) return null;
  return Object.keys(value).map((key) => [key, keyOrder((value as Record<string, unknown>)[key])]);
}

test('values carried to a worker as they are arrive as a BSON round trip would make them', () => {
  let plain = 0;
  fc.assert(fc.property(oddValue, (value) => {
    let carried: ReturnType<typeof carry>;
    try {
      carried = carry(value);
    } catch {
      assert.throws(() => encodeValue(value), 'carry threw where BSON does not');
      return;
    }
    if (typeof carried === 'string') return;
    plain++;
    const arrived = structuredClone(carried.plain);
    const viaBson = decodeValue(encodeValue(value));
    assert.deepStrictEqual(arrived, viaBson);
    assert.deepStrictEqual(keyOrder(arrived), keyOrder(viaBson));
  }), { numRuns: 3000 });
  assert.ok(plain > 300, `only ${plain} of the values went as plain data`);
  assert.equal(typeof carry(undefined), 'string', 'undefined crosses as BSON, which keeps it');
  assert.equal(uncarry(carry(undefined)), undefined);
});

test('returned handles are replaced by the lent objects themselves', () => {
  const kept = { a: 1 };
  const encoded = encodeReturned(['x', kept, { b: 2 }], (d) => (d === kept ? 7 : undefined));
  assert.deepEqual(encoded.returned, { items: [1, 7] });
  const decoded = decodeReturned(encoded, (handle) => (handle === 7 ? kept : assert.fail('unknown handle'))) as unknown[];
  assert.equal(decoded[1], kept);
  assert.deepEqual(decoded, ['x', { a: 1 }, { b: 2 }]);
  const root = encodeReturned(kept, () => 3);
  assert.equal(root.payload, undefined, 'nothing but the handle crosses');
  assert.equal(decodeReturned(root, () => kept), kept);
  const other = { c: 3 };
  const all = encodeReturned([kept, other], (d) => (d === kept ? 1 : 2));
  assert.equal(all.payload, undefined, 'nothing but the handles cross');
  const back = decodeReturned(all, (handle) => (handle === 1 ? kept : other)) as unknown[];
  assert.ok(back.length === 2 && back[0] === kept && back[1] === other);
  assert.deepEqual(decodeReturned(encodeReturned([], () => 1), () => undefined), []);
});

test('documents lent as all of a value travel without the rest', () => {
  const docs = [{ a: 1 }, { b: 2 }];
  const encoded = encodeLending(docs, () => 0);
  assert.equal(encoded.payload, undefined);
  assert.deepEqual(decodeLending(encoded, () => undefined), docs);
  assert.equal(encodeLending(docs[0], () => 0).payload, undefined);
  assert.notEqual(encodeLending([docs[0], 'text'], () => 0).payload, undefined);
});

// encodesAs(doc, bson) stands in for `BSON.serialize(doc)` byte-equal to `bson` (a lent document the
// function returns unchanged comes back as a handle): it must never answer true where the bytes differ,
// and must answer true for a document decoded and left alone.
test('encodesAs matches exactly when serializing would give the same bytes', () => {
  fc.assert(fc.property(supportedDoc, fc.array(mutation, { maxLength: 3 }), (original, mutations) => {
    const bytes = Buffer.from(BSON.serialize(original));
    const decoded = deserializeStored(bytes);
    const sameBytes = (doc: Record<string, unknown>): boolean => {
      try { return Buffer.from(BSON.serialize(doc)).equals(bytes); } catch { return false; }
    };
    // Left alone, a decoded document of these types re-encodes the same (a double holding an integer comes
    // back as a Double) and matches.
    assert.equal(sameBytes(decoded), true, 'decoding keeps every type');
    assert.equal(encodesAs(decoded, bytes), true, 'untouched');
    for (const m of mutations) mutate(decoded, m);
    if (encodesAs(decoded, bytes)) assert.ok(sameBytes(decoded), 'encodesAs matched a document that encodes differently');
  }), { numRuns: 3000 });
});

test('encodesAs is a match for untouched lent documents of the usual kind', () => {
  const doc = { _id: new ObjectId(), owner: 'ö@x', n: 3, big: Long.fromNumber(2 ** 40), at: new Date(5), price: new Decimal128(new Uint8Array(16)), ok: true, none: null, tags: ['a', { b: 1.5 }] };
  const bytes = Buffer.from(BSON.serialize(doc));
  const decoded = BSON.deserialize(bytes, { promoteLongs: false }) as Record<string, unknown>;
  assert.equal(encodesAs(decoded, bytes), true);
  (decoded.tags as unknown[]).push('c');
  assert.equal(encodesAs(decoded, bytes), false);
});
