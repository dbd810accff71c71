import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { graphqlSync } from 'graphql';
import { GraphQLDateTime, GraphQLLong, GraphQLObjectId } from '../../core/graphql/scalars';
import { generateSchema } from '../../core/graphql/generate';
import { graphqlTestApp } from './graphql-app';

describe('ObjectId scalar', () => {
  test('serialises ObjectId-like values and hex strings to a 24-hex string', () => {
    assert.equal(GraphQLObjectId.serialize({ toHexString: () => '5f1f1a3ae4b0c1a2b3c4d5e6' }), '5f1f1a3ae4b0c1a2b3c4d5e6');
    assert.equal(GraphQLObjectId.serialize('5F1F1A3AE4B0C1A2B3C4D5E6'), '5f1f1a3ae4b0c1a2b3c4d5e6');
    assert.throws(() => GraphQLObjectId.serialize('nope'), /ObjectId cannot represent/);
  });

  test('parses variables and literals', () => {
    assert.equal(GraphQLObjectId.parseValue('5f1f1a3ae4b0c1a2b3c4d5e6'), '5f1f1a3ae4b0c1a2b3c4d5e6');
    assert.throws(() => GraphQLObjectId.parseValue(12), /ObjectId cannot represent/);
  });
});

describe('DateTime scalar', () => {
  test('serialises to RFC 3339', () => {
    assert.equal(GraphQLDateTime.serialize(new Date('2020-09-01T15:38:14.918Z')), '2020-09-01T15:38:14.918Z');
    assert.equal(GraphQLDateTime.serialize('2024-05-01T00:00:00Z'), '2024-05-01T00:00:00.000Z');
    assert.equal(GraphQLDateTime.serialize({ t: 1600000000, i: 1 }), '2020-09-13T12:26:40.000Z', 'BSON Timestamp');
    assert.throws(() => GraphQLDateTime.serialize(new Date(NaN)), /invalid Date/);
    assert.throws(() => GraphQLDateTime.serialize('yesterday'), /invalid date-time/);
  });

  test('parses to a Date', () => {
    const parsed = GraphQLDateTime.parseValue('2020-09-01T15:38:14.918+02:00');
    assert.ok(parsed instanceof Date);
    assert.equal(parsed.toISOString(), '2020-09-01T13:38:14.918Z');
    assert.throws(() => GraphQLDateTime.parseValue('2020-13-45'), /invalid date-time/);
  });
});

describe('Long scalar', () => {
  test('serialises numbers, bigints and BSON Long-like values', () => {
    assert.equal(GraphQLLong.serialize(42), 42);
    assert.equal(GraphQLLong.serialize(2n ** 40n), 2 ** 40);
    assert.equal(GraphQLLong.serialize({ toNumber: () => 7 }), 7);
    assert.equal(GraphQLLong.serialize({ valueOf: () => 9 }), 9);
    assert.throws(() => GraphQLLong.serialize(1.5), /Long cannot represent/);
    assert.throws(() => GraphQLLong.serialize(2n ** 60n), /Long cannot represent/);
  });
});

describe('scalars in the generated schema', () => {
  test('literals in a query are parsed by the generated schema', () => {
    const { schema } = generateSchema(graphqlTestApp({
      'data_sources/mongodb-atlas/db/Event/schema.json': { title: 'Event', properties: { _id: { bsonType: 'objectId' }, at: { bsonType: 'date' }, n: { bsonType: 'long' } } },
    }));
    const seen: unknown[] = [];
    const result = graphqlSync({
      schema,
      source: '{ event(query: {_id: "5f1f1a3ae4b0c1a2b3c4d5e6", at_gt: "2020-01-01T00:00:00Z", n_in: [1, 2]}) { _id at n } }',
      rootValue: { event: (args: { query: unknown }) => { seen.push(args.query); return { _id: { toHexString: () => 'aaaaaaaaaaaaaaaaaaaaaaaa' }, at: new Date(0), n: 5 }; } },
    });
    assert.equal(result.errors, undefined);
    assert.deepEqual(JSON.parse(JSON.stringify(result.data)), { event: { _id: 'aaaaaaaaaaaaaaaaaaaaaaaa', at: '1970-01-01T00:00:00.000Z', n: 5 } });
    assert.deepEqual(seen.map((q) => ({ ...(q as object) })), [{ _id: '5f1f1a3ae4b0c1a2b3c4d5e6', at_gt: new Date('2020-01-01T00:00:00Z'), n_in: [1, 2] }]);
    const bad = graphqlSync({ schema, source: '{ event(query: {_id: "xyz"}) { _id } }', rootValue: {} });
    assert.match(bad.errors![0].message, /ObjectId/);
  });
});
