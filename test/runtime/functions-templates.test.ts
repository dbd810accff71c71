// A function worker's document templates: a document decoded once is copied out when the same bytes come
// back. Every copy must be exactly what decoding gives, and nothing a function does to its copy may reach
// the template or later copies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Binary, BSON, Code, Decimal128, Double, Long, MaxKey, ObjectId, Timestamp } from 'bson';
import { DocumentTemplates } from '../../runtime/functions/templates';

const scalar = fc.oneof(
  fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(-0), fc.constant(undefined),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Long.fromBigInt(n)),
  fc.uint8Array({ minLength: 12, maxLength: 12 }).map((bytes) => new ObjectId(bytes)),
  fc.date(), fc.uint8Array({ minLength: 16, maxLength: 16 }).map((bytes) => new Decimal128(bytes)),
  fc.integer().map((n) => new Double(n)),
  // Kinds the templates do not copy: such documents are decoded every time.
  fc.constantFrom(new Binary(new Uint8Array([1, 2])), new Timestamp({ t: 1, i: 2 }), new Code('x'), new MaxKey(), /a+/),
);
const key = fc.string({ minLength: 1, maxLength: 5 }).filter((k) => !k.includes('\u0000') && !k.startsWith('$'));
const { doc } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('value'), { maxLength: 4 }), tie('doc')),
  doc: fc.dictionary(fc.oneof(key, fc.constant('__proto__'), fc.nat({ max: 20 }).map(String)), tie('value'), { maxKeys: 6, noNullPrototype: true }),
}));

const decode = (bytes: Buffer) => BSON.deserialize(bytes, { promoteLongs: false }) as Record<string, unknown>;

/** Changes everything inside `value` that can be changed in place. */
function vandalise(value: unknown): void {
  if (value instanceof ObjectId) value.id[0] ^= 0xff;
  else if (value instanceof Date) value.setTime(value.getTime() + 1);
  else if (value instanceof Decimal128) value.bytes[0] ^= 0xff;
  else if (value instanceof Long) (value as { low: number }).low ^= 1;
  else if (Array.isArray(value)) { value.forEach(vandalise); value.push('extra'); }
  else if (value !== null && typeof value === 'object') {
    for (const k of Object.keys(value)) vandalise((value as Record<string, unknown>)[k]);
    (value as Record<string, unknown>).extra = 1;
  }
}

test('copies are exactly what decoding gives, and what a function does to one reaches no other', () => {
  fc.assert(fc.property(doc, (original) => {
    const bytes = Buffer.from(BSON.serialize(original));
    const templates = new DocumentTemplates();
    const keyOf = bytes.toString('latin1');
    for (let round = 0; round < 3; round++) {
      const got = templates.decode(keyOf, bytes);
      assert.deepStrictEqual(got, decode(bytes));
      assert.deepStrictEqual(Object.keys(got), Object.keys(decode(bytes)));
      vandalise(got);
    }
  }), { numRuns: 2000 });
});

test('templates keep to their budget, the oldest going first', () => {
  const templates = new DocumentTemplates(1000);
  const docs = Array.from({ length: 40 }, (_, i) => Buffer.from(BSON.serialize({ _id: new ObjectId(), i, pad: 'x'.repeat(60) })));
  for (const bytes of docs) templates.decode(bytes.toString('latin1'), bytes);
  const kept = (templates as unknown as { byBytes: Map<string, unknown>; keptBytes: number });
  assert.ok(kept.keptBytes <= 1000, `kept ${kept.keptBytes} bytes`);
  assert.ok(kept.byBytes.has(docs.at(-1)!.toString('latin1')), 'the newest document was not kept');
  assert.ok(!kept.byBytes.has(docs[0]!.toString('latin1')), 'the oldest document was kept beyond the budget');
});
