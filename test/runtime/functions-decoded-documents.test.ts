// A function worker's cache of decoded documents: a document decoded once is copied out when the same bytes
// come back. Every copy must be exactly what decoding gives, and nothing a function does to its copy may reach
// the kept document or later copies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Binary, BSON, Code, Decimal128, Double, Int32, Long, MaxKey, ObjectId, Timestamp } from 'bson';
import { DecodedDocumentCache } from '../../runtime/functions/decoded-documents';
import { deserializeStored } from '../../core/bsonDecode';
import { mutate, mutation, supportedDoc } from './fixtures/bson-mutations';

const scalar = fc.oneof(
  fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(-0), fc.constant(undefined),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Long.fromBigInt(n)),
  fc.uint8Array({ minLength: 12, maxLength: 12 }).map((bytes) => new ObjectId(bytes)),
  fc.date(), fc.uint8Array({ minLength: 16, maxLength: 16 }).map((bytes) => new Decimal128(bytes)),
  fc.integer().map((n) => new Double(n)),
  // Kinds the cache does not copy: such documents are decoded every time.
  fc.constantFrom(new Binary(new Uint8Array([1, 2])), new Timestamp({ t: 1, i: 2 }), new Code('x'), new MaxKey(), /a+/),
);
const key = fc.string({ minLength: 1, maxLength: 5 }).filter((k) => !k.includes('\u0000') && !k.startsWith('$'));
const { doc } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('value'), { maxLength: 4 }), tie('doc')),
  doc: fc.dictionary(fc.oneof(key, fc.constant('__proto__'), fc.nat({ max: 20 }).map(String)), tie('value'), { maxKeys: 6, noNullPrototype: true }),
}));

const decode = (bytes: Buffer) => deserializeStored(bytes);

/** Changes everything inside `value` that can be changed in place. */
function vandalise(value: unknown): void {
  if (value instanceof ObjectId) value.id[0] ^= 0xff;
  else if (value instanceof Date) value.setTime(value.getTime() + 1);
  else if (value instanceof Decimal128) value.bytes[0] ^= 0xff;
  else if (value instanceof Long) (value as { low: number }).low ^= 1;
  else if (value instanceof Double) value.value += 1;
  else if (Array.isArray(value)) { value.forEach(vandalise); value.push('extra'); }
  else if (value !== null && typeof value === 'object') {
    for (const k of Object.keys(value)) vandalise((value as Record<string, unknown>)[k]);
    (value as Record<string, unknown>).extra = 1;
  }
}

test('copies are exactly what decoding gives, and what a function does to one reaches no other', () => {
  fc.assert(fc.property(doc, (original) => {
    const bytes = Buffer.from(BSON.serialize(original));
    const cache = new DecodedDocumentCache();
    const keyOf = bytes.toString('latin1');
    for (let round = 0; round < 3; round++) {
      const got = cache.decode(keyOf, bytes);
      assert.deepStrictEqual(got, decode(bytes));
      assert.deepStrictEqual(Object.keys(got), Object.keys(decode(bytes)));
      vandalise(got);
    }
  }), { numRuns: 2000 });
});

// A function worker returns a lent document as a handle when `matches` says it is still what it was: it
// must never say so of a document that would reach the main thread as something else.
test('a copy matches its kept document exactly while it would decode on the main thread as the kept document does', () => {
  fc.assert(fc.property(supportedDoc, fc.array(mutation, { maxLength: 3 }), (original, mutations) => {
    const bytes = Buffer.from(BSON.serialize(original));
    const cache = new DecodedDocumentCache();
    const keyOf = bytes.toString('latin1');
    cache.decode(keyOf, bytes);
    const copy = cache.decode(keyOf, bytes);
    assert.equal(cache.matches(keyOf, copy), true, 'an untouched copy matches');
    for (const m of mutations) mutate(copy, m);
    if (!cache.matches(keyOf, copy)) return;
    let reencoded: Buffer;
    try {
      reencoded = Buffer.from(BSON.serialize(copy));
    } catch {
      return assert.fail('matched a document that does not even serialize');
    }
    // Decoded on the main thread, what was returned and what was lent must be alike in every respect, key order included.
    assert.deepStrictEqual(decode(reencoded), decode(bytes), 'matched a document that reaches the main thread changed');
    assert.ok(Buffer.from(BSON.serialize(decode(reencoded))).equals(Buffer.from(BSON.serialize(decode(bytes)))), 'matched a document whose keys moved');
  }), { numRuns: 3000 });
  assert.equal(new DecodedDocumentCache().matches('no such bytes', {}), undefined);
});

test('a copy matches no longer when it changed in ways few random changes reach', () => {
  const bytes = Buffer.from(BSON.serialize({ zero: 0, negativeZero: -0, at: new Date(5), id: new ObjectId('65f000000000000000000001'), big: Long.fromNumber(7), n: 1 }));
  const keyOf = bytes.toString('latin1');
  const cache = new DecodedDocumentCache();
  cache.decode(keyOf, bytes);
  const changed = (change: (copy: Record<string, unknown>) => void): boolean | undefined => {
    const copy = cache.decode(keyOf, bytes);
    change(copy);
    return cache.matches(keyOf, copy);
  };
  assert.equal(changed(() => undefined), true);
  assert.equal(changed((c) => { c.zero = -0; }), false, '0 became -0 (a double)');
  assert.equal(changed((c) => { c.negativeZero = 0; }), false, '-0 became 0 (an int32)');
  assert.equal(changed((c) => { (c.at as Date & { toBSON?: unknown }).toBSON = () => 'text'; }), false, 'a date that serializes as something else');
  assert.equal(changed((c) => { (c.id as ObjectId & { toBSON?: unknown }).toBSON = () => 1; }), false, 'an ObjectId that serializes as something else');
  assert.equal(changed((c) => { c.big = new Timestamp({ t: 0, i: 7 }); }), false, 'a Timestamp with the same bits as the Long');
  assert.equal(changed((c) => { c.n = new Int32(1); }), false, 'a wrapper in place of the number');
  assert.equal(changed((c) => { Object.setPrototypeOf(c, null); }), true, 'a document without prototype serializes the same');
});

test('the cache keeps to its budget, the oldest going first', () => {
  const cache = new DecodedDocumentCache(1000);
  const docs = Array.from({ length: 40 }, (_, i) => Buffer.from(BSON.serialize({ _id: new ObjectId(), i, pad: 'x'.repeat(60) })));
  for (const bytes of docs) cache.decode(bytes.toString('latin1'), bytes);
  const kept = (cache as unknown as { byBytes: Map<string, unknown>; keptBytes: number });
  assert.ok(kept.keptBytes <= 1000, `kept ${kept.keptBytes} bytes`);
  assert.ok(kept.byBytes.has(docs.at(-1)!.toString('latin1')), 'the newest document was not kept');
  assert.ok(!kept.byBytes.has(docs[0]!.toString('latin1')), 'the oldest document was kept beyond the budget');
});
