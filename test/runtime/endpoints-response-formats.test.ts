// The Data API's standard JSON form of BSON values, and how Accept picks JSON or EJSON.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, BSONRegExp, Decimal128, Double, Int32, Long, MaxKey, ObjectId, Timestamp } from 'bson';
import { encodeBody, negotiateReturnType, toPlainJson } from '../../runtime/endpoints/response-formats';

describe('standard JSON form', () => {
  test('each BSON type becomes its plain JSON equivalent', () => {
    const value = {
      id: new ObjectId('65f000000000000000000001'),
      when: new Date('2022-01-12T02:33:23.067Z'),
      int: new Int32(7), double: new Double(1.5), long: Long.fromString('2022'),
      price: Decimal128.fromString('9823.1297'),
      blob: new Binary(Buffer.from('hi'), 5),
      re: new BSONRegExp('^a', 'i'), native: /b+/g,
      ts: new Timestamp({ t: 10, i: 2 }),
      max: new MaxKey(),
      nested: [{ skip: undefined, keep: null }],
    };
    assert.deepEqual(toPlainJson(value), {
      id: '65f000000000000000000001',
      when: '2022-01-12T02:33:23.067Z',
      int: 7, double: 1.5, long: 2022,
      price: '9823.1297',
      blob: { Subtype: 5, Data: Buffer.from('hi').toString('base64') },
      re: { Pattern: '^a', Options: 'i' }, native: { Pattern: 'b+', Options: 'g' },
      ts: { T: 10, I: 2 },
      max: { $maxKey: 1 },
      nested: [{ keep: null }],
    });
  });

  test('EJSON output is canonical and typed application/ejson; JSON output is application/json', () => {
    assert.deepEqual(encodeBody({ n: Long.fromNumber(3) }, 'EJSON'), { text: '{"n":{"$numberLong":"3"}}', contentType: 'application/ejson' });
    assert.deepEqual(encodeBody({ n: Long.fromNumber(3) }, 'JSON'), { text: '{"n":3}', contentType: 'application/json' });
    assert.deepEqual(encodeBody(undefined, 'JSON'), { text: 'null', contentType: 'application/json' });
  });
});

describe('Accept negotiation', () => {
  test('an explicit media type wins over the configured return type', () => {
    assert.equal(negotiateReturnType('application/ejson', 'JSON'), 'EJSON');
    assert.equal(negotiateReturnType('text/html, application/json;q=0.9', 'EJSON'), 'JSON');
    assert.equal(negotiateReturnType('*/*', 'EJSON'), 'EJSON');
    assert.equal(negotiateReturnType(undefined, 'JSON'), 'JSON');
  });
});
