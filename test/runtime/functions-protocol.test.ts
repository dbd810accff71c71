// The value encoding between the function runner and its workers: lent documents (protocol.Lent) must
// come out exactly as they went in, in any mix with other values, and be put back by handle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Binary, BSON, Decimal128, Double, Int32, Long, ObjectId, Timestamp } from 'bson';
import { OriginalEncodings } from '../../runtime/functions/encodings';
import { decodeLending, decodeReturned, encodeDocument, encodeLending, encodeReturned, encodesAs, wrapDocuments } from '../../runtime/functions/protocol';

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

// encodesAs(doc, bson) stands in for `BSON.serialize(doc)` byte-equal to `bson` (a lent document the
// function returns unchanged comes back as a handle): it must never answer true where the bytes differ,
// and must answer true for a document decoded and left alone.
const supportedScalar = fc.oneof(
  fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(-0),
  fc.maxSafeInteger(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Long.fromBigInt(n)),
  fc.uint8Array({ minLength: 12, maxLength: 12 }).map((bytes) => new ObjectId(bytes)),
  fc.date(), fc.uint8Array({ minLength: 16, maxLength: 16 }).map((bytes) => new Decimal128(bytes)),
  // Stored as a double though it holds an integer (5.0): decoded it is 5, which encodes as an int32.
  fc.integer().map((n) => new Double(n)),
);
const key = fc.string({ minLength: 1, maxLength: 5 }).filter((k) => !k.includes('\u0000') && k !== '__proto__' && !k.startsWith('$'));
const { supportedDoc } = fc.letrec((tie) => ({
  supportedValue: fc.oneof({ depthSize: 'small' }, supportedScalar, fc.array(tie('supportedValue'), { maxLength: 4 }), tie('supportedDoc')),
  supportedDoc: fc.dictionary(key, tie('supportedValue'), { maxKeys: 5, noNullPrototype: true }),
}));
// Values are made anew for each use (mutations may change what they put in).
const replacement: fc.Arbitrary<() => unknown> = fc.oneof(
  supportedScalar.map((v) => () => BSON.deserialize(BSON.serialize({ v }), { promoteLongs: false }).v),
  fc.constantFrom<() => unknown>(
    () => undefined, () => 1, () => 1.5, () => '1', () => Long.fromNumber(1), () => new Int32(1), () => new Double(1),
    () => new Timestamp({ t: 0, i: 1 }), () => new Binary(new Uint8Array([1])), () => /x/, () => new Map([['a', 1]]),
    () => ({ toBSON: () => ({ a: 1 }) }), () => [1, 2], () => ({}),
  ),
);
type Mutation = { at: number; kind: 'set' | 'delete' | 'add' | 'reverse' | 'oid' | 'date' | 'push'; value: () => unknown; name: string };
const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(), kind: fc.constantFrom('set', 'delete', 'add', 'reverse', 'oid', 'date', 'push'), value: replacement, name: key,
});

/** Applies a mutation to one of the containers (objects, arrays) or BSON values inside `root`. */
function mutate(root: Record<string, unknown>, m: Mutation): void {
  const containers: (Record<string, unknown> | unknown[])[] = [];
  const values: unknown[] = [];
  (function walk(v: unknown): void {
    if (v instanceof ObjectId || v instanceof Date) values.push(v);
    else if (Array.isArray(v)) { containers.push(v); v.forEach(walk); }
    else if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) { containers.push(v as Record<string, unknown>); Object.values(v).forEach(walk); }
  })(root);
  const target = containers[m.at % containers.length]!;
  const keys = Object.keys(target);
  const some = keys.length > 0 ? keys[m.at % keys.length]! : m.name;
  const record = target as Record<string, unknown>;
  switch (m.kind) {
    case 'set': record[some] = m.value(); break;
    case 'delete': if (Array.isArray(target)) target.pop(); else delete record[some]; break;
    case 'add': record[Array.isArray(target) ? String(target.length) : m.name] = m.value(); break;
    case 'reverse': if (Array.isArray(target)) target.reverse(); else for (const k of keys.slice().reverse()) { const v = record[k]; delete record[k]; record[k] = v; } break;
    case 'push': if (Array.isArray(target)) target.push(m.value()); else record[some] = [record[some]]; break;
    case 'oid': { const oid = values.find((v) => v instanceof ObjectId) as ObjectId | undefined; if (oid) oid.id[m.at % 12] ^= 1; break; }
    case 'date': { const date = values.find((v) => v instanceof Date) as Date | undefined; if (date) date.setTime(date.getTime() + 1 + (m.at % 3)); break; }
  }
}

test('encodesAs matches exactly when serializing would give the same bytes', () => {
  fc.assert(fc.property(supportedDoc, fc.array(mutation, { maxLength: 3 }), (original, mutations) => {
    const bytes = Buffer.from(BSON.serialize(original));
    const decoded = BSON.deserialize(bytes, { promoteLongs: false }) as Record<string, unknown>;
    const sameBytes = (doc: Record<string, unknown>): boolean => {
      try { return Buffer.from(BSON.serialize(doc)).equals(bytes); } catch { return false; }
    };
    // Left alone, a decoded document of these types matches exactly when it re-encodes the same (a double
    // holding an integer comes back as a number that encodes as int32, so not always).
    assert.equal(encodesAs(decoded, bytes), sameBytes(decoded), 'untouched');
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
