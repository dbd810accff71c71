// The export's BSON writer against the bson library: byte for byte the same for documents of the store's form
// (every BSON type, Unicode names and strings, deep and mixed nesting, seeded random documents), and a
// document that does not fit the room left leaves the writer as it was.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BSON, Double, Long, ObjectId } from 'bson';
import { deserializeStored } from '../../core/bsonDecode';
import { BsonWriter, NoRoom } from '../../runtime/data-io/bson-writer';
import { everyTypeDocument } from '../helpers/dump';

function written(doc: Record<string, unknown>): Buffer {
  const writer = new BsonWriter(Buffer.alloc(1 << 20));
  writer.document(doc);
  return Buffer.from((writer as unknown as { buf: Buffer }).buf.subarray(0, writer.length));
}

/** A small deterministic generator, so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  return () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

function randomValue(next: () => number, depth: number): unknown {
  const pick = Math.floor(next() * (depth > 3 ? 9 : 11));
  switch (pick) {
    case 0: return Math.floor(next() * 2 ** 31) - 2 ** 30;
    case 1: return next() * 1000 - 500;
    case 2: return ['', 'ascii', 'ünï', '日本語', '😀 emoji', 'tab\tnew\nline', 'a\u0000b'][Math.floor(next() * 7)];
    case 3: return next() < 0.5;
    case 4: return null;
    case 5: return new Date(Math.floor(next() * 4e12) - 1e12);
    case 6: return new ObjectId();
    case 7: return new Double(Math.floor(next() * 100));
    case 8: return Long.fromNumber(Math.floor(next() * 2 ** 52) - 2 ** 51);
    case 9: return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1));
    default: return Object.fromEntries(Array.from({ length: Math.floor(next() * 4) }, (_, i) => [['k', 'ключ', 'clé', '$x', 'a.b'][i % 5]! + i, randomValue(next, depth + 1)]));
  }
}

describe('BsonWriter', () => {
  test('writes every BSON type of the store\'s form as the bson library does', () => {
    for (const doc of [everyTypeDocument(1), { _id: 'ü', nested: { a: [[1, 2], { x: new Double(-0) }] }, big: 2 ** 40, nan: NaN, inf: Infinity, neg: -0 }]) {
      const stored = deserializeStored(BSON.serialize(doc), { keepRegExps: true });
      assert.deepEqual(written(stored), Buffer.from(BSON.serialize(stored)));
    }
  });

  test('seeded random documents come out byte for byte as the bson library writes them', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const doc = { _id: seed, ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`f${i}`, randomValue(next, 0)])) };
      assert.deepEqual(written(doc), Buffer.from(BSON.serialize(doc)), `seed ${seed}`);
    }
  });

  test('a document that does not fit leaves the writer as it was; a null byte in a name is refused', () => {
    const writer = new BsonWriter(Buffer.alloc(64));
    writer.document({ a: 1 });
    const before = writer.length;
    assert.throws(() => writer.document({ s: 'x'.repeat(100) }), NoRoom);
    assert.equal(writer.length, before);
    assert.throws(() => new BsonWriter(Buffer.alloc(64)).document({ 'a\u0000b': 1 }), /null byte/);
  });
});
