import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Decimal128, Int32, Long, ObjectId, UUID, Binary } from 'bson';
import {
  MAX_QUERY_DEPTH, RqlArgumentError, compileSubscription, indexOfLinear, likeMatches, RqlSyntaxError, applyDescriptors, checkSubscriptionQuery, matches, parseRql,
  queriedFields, toMongoFilter, tryParseRql, unsupportedInSubscriptions, type RqlQuery,
} from '../../core/rql';
import { embeddedRqlProblems, findEmbeddedRql } from '../../core/rql/embedded';
import { compiledQuery } from '../../runtime/store/query-cache';
import { toComparable, toStorable } from '../../runtime/store/bson-values';
import { checkApp } from '../../core/check';
import { loadApp } from '../../core/load';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';

const OID_A = '5f1f0a1b2c3d4e5f60718293';
const OID_B = '5f1f0a1b2c3d4e5f60718294';
const UUID_A = '0f8fad5b-d9cb-469f-a165-70867728950e';

const task = {
  _id: new ObjectId(OID_A),
  owner_id: 'abc',
  summary: 'Write the RQL parser',
  isComplete: false,
  priority: 3,
  score: 2.5,
  big: Long.fromString('9007199254740993'),
  small: new Int32(7),
  price: Decimal128.fromString('1.10'),
  tags: ['work', 'Urgent', 'rql'],
  counts: [1, 5, 9],
  empty: [],
  nothing: null,
  due: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)),
  uuid: new UUID(UUID_A),
  blob: new Binary(Buffer.from('hi')),
  address: { city: 'Oslo', zip: '0150' },
  items: [{ name: 'a', qty: 1 }, { name: 'b', qty: 7 }],
  settings: { theme: 'dark', size: 3 },
};

function evaluate(text: string, doc: unknown = task, args?: unknown[]): boolean {
  return matches(parseRql(text), doc, args);
}

describe('RQL evaluation: each operator on a document', () => {
  const cases: Array<[string, boolean, unknown[]?]> = [
    // Equality and the comparison operators, every spelling.
    ['owner_id == "abc"', true], ['owner_id = "abc"', true], ['owner_id == \'abc\'', true], ['owner_id != "abc"', false],
    ['owner_id <> "abd"', true], ['priority > 2', true], ['priority >= 3', true], ['priority => 3', true], ['priority < 3', false],
    ['priority <= 3', true], ['priority =< 2', false], ['score == 2.5', true], ['score > 2.4999', true],
    // Logic.
    ['owner_id == "abc" AND isComplete == false', true], ['owner_id == "abc" && isComplete == true', false],
    ['owner_id == "x" OR priority == 3', true], ['owner_id == "x" || priority == 4', false], ['NOT priority == 3', false],
    ['!(priority == 4)', true], ['not (priority == 4 or owner_id == "abc")', false], ['TRUEPREDICATE', true], ['FALSEPREDICATE', false],
    ['truepredicate and (falsepredicate or priority == 3)', true],
    // Numbers across types: Long beyond 2^53, Int32, Decimal128 against the literal's text.
    ['big == 9007199254740993', true], ['big == 9007199254740992', false], ['big > 9007199254740992', true],
    ['small == 7', true], ['small BETWEEN {7, 8}', true], ['price == 1.1', true], ['price > 1.09', true], ['price < 1.1', false],
    ['priority == 3.0', true], ['priority == "3"', false], ['priority != "3"', true], ['score == 0x2', false], ['priority == 0x3', true],
    // IN with lists and arguments, and a value IN a list property.
    ['owner_id IN {"x", "abc"}', true], ['owner_id IN {}', false], ['priority IN {1, 2}', false], ['"rql" IN tags', true],
    ['owner_id IN $0', true, [['abc', 'def']]], ['owner_id == $0', true, ['abc']], ['priority IN $0', false, [[]]],
    // realm-core drops [c] against a list literal.
    ['owner_id IN[c] {"ABC"}', false], ['owner_id IN[c] {"abc"}', true],
    // BETWEEN.
    ['priority BETWEEN {1, 3}', true], ['priority BETWEEN {4, 9}', false], ['counts BETWEEN {6, 8}', false], ['counts BETWEEN {4, 6}', true],
    ['due BETWEEN {2024-01-01@00:00:00, 2024-01-03@00:00:00}', true],
    // Strings: BEGINSWITH, ENDSWITH, CONTAINS, LIKE, with and without [c].
    ['summary BEGINSWITH "Write"', true], ['summary BEGINSWITH "write"', false], ['summary BEGINSWITH[c] "write"', true],
    ['summary ENDSWITH "parser"', true], ['summary ENDSWITH[c] "PARSER"', true], ['summary CONTAINS "RQL"', true],
    ['summary CONTAINS "rql"', false], ['summary CONTAINS[c] "rql"', true], ['summary LIKE "Write*parser"', true],
    ['summary LIKE "W?ite the*"', true], ['summary LIKE "Write"', false], ['summary LIKE[c] "*the rql*"', true], ['summary ==[c] "WRITE THE RQL PARSER"', true],
    ['summary !=[c] "write the rql parser"', false], ['priority BEGINSWITH "3"', false], ['summary CONTAINS ""', true],
    ['summary == B64"V3JpdGUgdGhlIFJRTCBwYXJzZXI="', true],
    // Lists: comparison means ANY element; ANY/SOME/ALL/NONE; @size/@count.
    ['tags == "work"', true], ['tags == "play"', false], ['tags ==[c] "urgent"', true], ['ANY tags == "rql"', true], ['SOME tags == "rql"', true],
    ['ALL tags == "rql"', false], ['ALL counts > 0', true], ['ALL counts > 1', false], ['NONE counts > 9', true], ['NONE counts > 8', false],
    ['counts > 8', true], ['counts != 1', true], ['ALL empty == 1', true], ['ANY empty == 1', false], ['NONE empty == 1', true],
    ['tags.@size == 3', true], ['tags.@count > 2', true], ['empty.@size == 0', true], ['owner_id.@size == 3', true], ['settings.@count == 2', true],
    ['tags BEGINSWITH "Urg"', true], ['ALL tags CONTAINS[c] "R"', true], ['ANY {1, 2} == priority', false], ['ANY {3, 2} == priority', true],
    ['ALL {3, 3} == priority', true], ['NONE {1, 2} == priority', true], ['tags IN {"rql", "x"}', false], ['ANY tags IN {"rql", "x"}', true],
    // A list property against a list literal, neither quantified, compares as a whole collection (realm-core).
    ['tags == {"work", "Urgent", "rql"}', true], ['tags == {"work", "rql", "Urgent"}', false], ['empty == {}', true], ['tags != {"work"}', true], ['ALL tags IN {"rql", "work", "Urgent"}', true],
    ['ALL tags IN {"rql", "work"}', false],
    // Null and missing fields.
    ['nothing == null', true], ['nothing == nil', true], ['missing == NULL', true], ['missing != null', false], ['owner_id == null', false],
    ['owner_id != null', true], ['missing > 1', false], ['missing < 1', false], ['nothing <= null', false],
    // Dates: timestamps and date literals.
    ['due == 2024-01-02@03:04:05', true], ['due == 2024-01-02T03:04:05', true], ['due > 2024-01-02@03:04:04:999999999', true],
    ['due == T1704164645:0', true], ['due < T1704164645:1', true], ['due > T1704164645:1', false], ['due == "2024-01-02"', false],
    // ObjectId, UUID, binary.
    [`_id == oid(${OID_A})`, true], [`_id == oid(${OID_B})`, false], [`_id < oid(${OID_B})`, true], [`uuid == uuid(${UUID_A})`, true],
    [`_id == uuid(${UUID_A})`, false], ['blob == B64"aGk="', true], ['_id == $0', true, [new ObjectId(OID_A)]],
    // Dotted paths: embedded objects and lists of them.
    ['address.city == "Oslo"', true], ['address.city BEGINSWITH "Os"', true], ['address.missing == null', true], ['items.qty > 5', true],
    ['ALL items.qty > 0', true], ['ALL items.qty > 1', false], ['items.name == "b"', true], ['settings["theme"] == "dark"', true],
    ['tags[1] == "Urgent"', true], ['tags[$0] == "rql"', true, [2]], ['settings.@keys == "size"', true], ['settings.@values == 3', true],
    // Aggregates, subqueries, arithmetic, @type.
    ['counts.@max == 9', true], ['counts.@min == 1', true], ['counts.@sum == 15', true], ['counts.@avg == 5', true], ['empty.@avg == null', true],
    ['empty.@sum == 0', true], ['items.@max.qty == 7', true], ['items.@sum.qty == 8', true],
    ['SUBQUERY(items, $x, $x.qty > 5 AND $x.name == "b").@count == 1', true], ['SUBQUERY(items, $x, $x.qty > 0).@size == 2', true],
    ['priority + 1 == 4', true], ['priority * 2 - 1 == 5', true], ['(priority + 1) * 2 == 8', true], ['priority / 2 == 1.5', true],
    ['score * 2 > priority', true], ['priority.@type == "int"', true], ['owner_id.@type == "string"', true], ['price.@type == "decimal128"', true],
    ['priority > score', true], ['owner_id == address.city', false],
  ];
  for (const [text, expected, args] of cases) {
    test(`${text}${args ? ` with ${JSON.stringify(args)}` : ''} → ${expected}`, () => {
      assert.equal(evaluate(text, task, args), expected);
    });
  }

  test('a document without the field, and values that are not documents, match as null', () => {
    assert.equal(evaluate('owner_id == null', {}), true);
    assert.equal(evaluate('owner_id == null', null), true);
    assert.equal(evaluate('owner_id == "x"', 'text'), false);
  });

  test('prototype names are not fields', () => {
    assert.equal(evaluate('constructor == null', {}), true);
    assert.equal(evaluate('__proto__ == null', {}), true);
    assert.equal(evaluate('toString.@size == 0', {}), false);
  });

  test('a missing argument is an RqlArgumentError', () => {
    assert.throws(() => matches(parseRql('owner_id == $1'), task, ['abc']), RqlArgumentError);
  });

  test('LIKE is linear on hostile patterns', () => {
    const text = 'a'.repeat(20_000);
    const pattern = '*a'.repeat(2_000) + 'b';
    assert.equal(evaluate(`s LIKE "${pattern}"`, { s: text }), false);
    // With `?` in the parts (issue 33).
    // 2.4 s before, in this test's case.
    assert.equal(likeMatches('a'.repeat(40_000), '*' + 'a'.repeat(20_000) + '?b'), false);
    assert.equal(likeMatches('ab'.repeat(20_000), '*a?'.repeat(6_000) + '*b'), true);
  });
});

describe('RQL SORT / DISTINCT / LIMIT', () => {
  const docs = [{ n: 2, s: 'b' }, { n: 1, s: 'a' }, { n: 3, s: 'a' }, { n: null, s: 'c' }];
  test('descriptors apply in the order written', () => {
    const q = parseRql('TRUEPREDICATE SORT(n DESC) LIMIT(2)');
    assert.deepEqual(applyDescriptors(docs, q.descriptors).map((d) => d.n), [3, 2]);
    const asc = parseRql('n != 0 SORT(n ASC)');
    assert.deepEqual(applyDescriptors(docs, asc.descriptors).map((d) => d.n), [null, 1, 2, 3]);
    const distinct = parseRql('TRUEPREDICATE SORT(s ASCENDING, n DESCENDING) DISTINCT(s)');
    assert.deepEqual(applyDescriptors(docs, distinct.descriptors), [{ n: 3, s: 'a' }, { n: 2, s: 'b' }, { n: null, s: 'c' }]);
  });
});

describe('RQL parser', () => {
  test('the canonical form a Realm SDK sends', () => {
    const q = parseRql('(owner_id == "6553a0c1" and isComplete == false) SORT(summary ASC) LIMIT(10)');
    assert.equal(q.predicate.kind, 'and');
    assert.deepEqual(q.descriptors.map((d) => d.kind), ['sort', 'limit']);
    assert.equal(q.argumentCount, 0);
  });

  test('literals', () => {
    const literal = (text: string) => {
      const p = parseRql(`x == ${text}`).predicate;
      assert.equal(p.kind, 'compare');
      assert.ok(p.kind === 'compare' && p.right.kind === 'constant');
      return p.kind === 'compare' && p.right.kind === 'constant' ? p.right.literal : undefined;
    };
    assert.deepEqual(literal('-12'), { type: 'number', text: '-12', value: -12, integer: -12n });
    assert.deepEqual(literal('1.5e3'), { type: 'number', text: '1.5e3', value: 1500 });
    assert.deepEqual(literal('2.5f'), { type: 'number', text: '2.5', value: 2.5 });
    assert.deepEqual(literal('0x1F'), { type: 'number', text: '0x1F', value: 31, integer: 31n });
    assert.deepEqual(literal('-inf'), { type: 'number', text: '-inf', value: -Infinity });
    // Escapes only keep the closing quote from ending the string; the value is the text as written (realm-core's rule).
    assert.deepEqual(literal('"a\\"b\\n\\u0041"'), { type: 'string', value: 'a\\"b\\n\\u0041' });
    assert.deepEqual(literal("'it\\'s'"), { type: 'string', value: "it\\'s" });
    assert.deepEqual(literal(`'say "hi"'`), { type: 'string', value: 'say "hi"' });
    assert.deepEqual(literal('TRUE'), { type: 'boolean', value: true });
    assert.deepEqual(literal('nil'), { type: 'null' });
    assert.deepEqual(literal('T-5:0'), { type: 'timestamp', seconds: -5n, nanoseconds: 0 });
    assert.deepEqual(literal('1970-01-01@00:00:10:5'), { type: 'timestamp', seconds: 10n, nanoseconds: 5 });
    assert.deepEqual(literal(`oid(${OID_A.toUpperCase()})`), { type: 'objectId', hex: OID_A });
    assert.deepEqual(literal(`uuid(${UUID_A})`), { type: 'uuid', hex: UUID_A.replace(/-/g, '') });
  });

  test('keywords: case rules follow realm-core, and some keywords still name properties', () => {
    assert.equal(parseRql('a == 1 AnD b == 2').predicate.kind, 'and');
    assert.equal(parseRql('name beginsWith "x"').predicate.kind, 'compare');
    assert.equal(evaluate('limit == 3 and sort == "x"', { limit: 3, sort: 'x' }), true);
    assert.equal(evaluate('android == 1', { android: 1 }), true);
    assert.equal(evaluate('first-name == "x"', { 'first-name': 'x' }), true);
    assert.equal(evaluate('a\\ b == 1', { 'a b': 1 }), true);
    assert.throws(() => parseRql('a == 1 Not b == 2'), RqlSyntaxError);
  });

  test('precedence: NOT over AND over OR; arithmetic before comparison', () => {
    const q = parseRql('a == 1 OR b == 2 AND NOT c == 3');
    assert.equal(q.predicate.kind, 'or');
    assert.ok(q.predicate.kind === 'or' && q.predicate.operands[1]!.kind === 'and');
    assert.equal(evaluate('a == 1 OR b == 2 AND c == 3', { a: 1, b: 0, c: 0 }), true);
    assert.equal(evaluate('(a == 1 OR b == 2) AND c == 3', { a: 1, b: 0, c: 0 }), false);
    assert.equal(evaluate('2 + a * 3 == 8', { a: 2 }), true);
  });

  test('arguments count', () => {
    assert.equal(parseRql('a == $0 and b IN $3').argumentCount, 4);
  });

  const errors: Array<[string, number, number, number, RegExp]> = [
    ['', 0, 1, 1, /empty; use TRUEPREDICATE/],
    ['owner_id', 0, 1, 1, /expected a comparison .* after 'owner_id', found the end of the query/],
    ['owner_id ==', 11, 1, 12, /expected a property, a value or an argument, found the end/],
    ['a == 1 AND', 10, 1, 11, /expected a property, a value or an argument/],
    ['a == 1 b == 2', 7, 1, 8, /unexpected 'b'; expected AND, OR, SORT, DISTINCT, LIMIT or the end/],
    ['a == "abc', 5, 1, 6, /string starting here is not closed/],
    ['(a == 1', 7, 1, 8, /expected '\)' to close the '\(' at column 1/],
    ['a == 1\n  AND b ~ 2', 15, 2, 9, /invalid character "~"/],
    ['a == 1 AND\n\n  b', 14, 3, 3, /expected a comparison .* after 'b'/],
    ['a ==[d] "x"', 4, 1, 5, /\[d\] is not a comparison option; only \[c\]/],
    ['a >[c] 1', 3, 1, 4, /\[c\] applies to ==, !=, IN/],
    ['a BETWEEN {1}', 10, 1, 11, /BETWEEN takes a list of two values/],
    ['a TEXT "x"', 2, 1, 3, /TEXT \(full-text search\) is not supported/],
    ['a.@links == 1', 2, 1, 3, /@links \(backlinks\) is not supported|expected/],
    ['a.@foo == 1', 2, 1, 3, /unknown operator @foo/],
    ['d == 2024-02-30@00:00:00', 5, 1, 6, /has no day 30/],
    ['d == 2024-13-01@00:00:00', 5, 1, 6, /not a valid date/],
    ['x == obj("Person", 1)', 5, 1, 6, /links to objects/],
    ['a == 1 LIMIT(x)', 13, 1, 14, /LIMIT takes a whole number/],
    ['a == 1 SORT(b UP)', 14, 1, 15, /expected ASC or DESC/],
    ['SUBQUERY(items, x, x.a == 1).@count > 0', 16, 1, 17, /expected a variable such as \$x/],
    ['a == 1 && b', 10, 1, 11, /expected a comparison/],
    ['NOT a', 4, 1, 5, /expected a comparison/],
    ['{1, a} == b', 4, 1, 5, /a list holds values and arguments/],
  ];
  for (const [text, offset, line, column, message] of errors) {
    test(`error in ${JSON.stringify(text)} at ${line}:${column}`, () => {
      const result = tryParseRql(text);
      assert.equal(result.ok, false);
      if (result.ok) return;
      assert.ok(result.error instanceof RqlSyntaxError);
      assert.match(result.error.reason, message);
      assert.equal(result.error.offset, offset);
      assert.equal(result.error.line, line);
      assert.equal(result.error.column, column);
      assert.ok(result.error.length >= (text.length > 0 ? 1 : 0));
      assert.ok(result.error.message.endsWith(`(line ${line}, column ${column})`));
    });
  }

  test('bounded: deep nesting and long text are syntax errors, not stack overflows', () => {
    const deep = `${'('.repeat(100_000)}a == 1${')'.repeat(100_000)}`;
    assert.throws(() => parseRql(deep), (e: unknown) => e instanceof RqlSyntaxError && e.reason.includes(`deeper than ${MAX_QUERY_DEPTH}`));
    assert.throws(() => parseRql('NOT '.repeat(50_000) + 'a == 1'), RqlSyntaxError);
    assert.throws(() => parseRql(`a == "${'x'.repeat(300_000)}"`), (e: unknown) => e instanceof RqlSyntaxError && /limit is 262144/.test(e.reason));
    const wide = Array.from({ length: 5_000 }, (_, i) => `a == ${i}`).join(' OR ');
    assert.equal(evaluate(wide, { a: 4_999 }), true);
  });

  test('hostile text: RqlSyntaxError or a query, nothing else', () => {
    const pieces = fc.constantFrom('a', 'b.c', '==', '!=', '<', '>=', 'IN', 'AND', 'OR', 'NOT', '(', ')', '{', '}', ',', '"x"', "'", '"', '$0', '@size', '.', '[c]',
      '[', ']', 'ANY', 'ALL', 'BETWEEN', 'LIKE', 'SUBQUERY', 'T1:2', 'oid(', 'uuid(', 'B64"', 'SORT', 'LIMIT', '1', '-', '+', '*', '/', 'TRUEPREDICATE', '\\', '\n', '\u0000', '😀');
    fc.assert(fc.property(fc.oneof(fc.string({ maxLength: 60 }), fc.array(pieces, { maxLength: 30 }).map((p) => p.join(' '))), (text) => {
      try {
        parseRql(text);
      } catch (error) {
        assert.ok(error instanceof RqlSyntaxError, `${JSON.stringify(text)} threw ${String(error)}`);
        assert.ok(error.offset >= 0 && error.offset <= text.length);
      }
    }), { numRuns: 3000 });
  });
});

describe('RQL fields and flexible sync settings', () => {
  test('queriedFields lists every property with its span, subquery variables resolved', () => {
    const text = 'owner_id == "a" AND (items.qty > 1 OR SUBQUERY(items, $x, $x.name == "b").@count > 0) AND counts.@max > 2 SORT(due DESC)';
    const uses = queriedFields(parseRql(text));
    assert.deepEqual(uses.map((u) => u.path), ['owner_id', 'items.qty', 'items', 'items.name', 'counts', 'due']);
    assert.deepEqual(uses.map((u) => u.field), ['owner_id', 'items', 'items', 'items', 'counts', 'due']);
    assert.equal(text.slice(uses[1]!.span.start, uses[1]!.span.end), 'items.qty');
  });

  const settings = { queryable_fields_names: ['owner_id', 'isComplete'], collection_queryable_fields_names: { Item: ['name'] } };

  test('a field that is not queryable is named, once, with its span', () => {
    const text = 'owner_id == "a" AND summary BEGINSWITH "x" AND summary ENDSWITH "y"';
    const problems = checkSubscriptionQuery(parseRql(text), 'Task', settings);
    assert.deepEqual(problems.map((p) => p.message), ['unsupported query for table "Task": key "summary" is not a queryable field']);
    assert.equal(text.slice(problems[0]!.span.start, problems[0]!.span.end), 'summary');
  });

  test('global, per-collection and always-allowed fields', () => {
    assert.deepEqual(checkSubscriptionQuery(parseRql('_id == $0 AND owner_id == "a" AND isComplete == false'), 'Task', settings), []);
    assert.deepEqual(checkSubscriptionQuery(parseRql('name == "x"'), 'Item', settings), []);
    assert.equal(checkSubscriptionQuery(parseRql('name == "x"'), 'Task', settings)[0]!.field, 'name');
    assert.deepEqual(checkSubscriptionQuery(parseRql('TRUEPREDICATE'), 'Task', {}), []);
  });

  test('operators flexible sync does not run', () => {
    const text = 'tags.@count > 1 AND counts.@sum > 1 AND address.city == "x" AND SUBQUERY(items, $x, $x.qty > 1).@count > 0 AND priority + 1 > 2 SORT(owner_id ASC) LIMIT(5)';
    const messages = unsupportedInSubscriptions(parseRql(text)).map((p) => p.message);
    assert.deepEqual(messages, [
      'flexible sync does not support @count/@size in subscriptions',
      'flexible sync does not support @sum in subscriptions',
      'flexible sync cannot query properties of embedded or linked objects ("address.city")',
      'flexible sync does not support SUBQUERY in subscriptions',
      'flexible sync does not support arithmetic (+ - * /) in subscriptions',
      'flexible sync does not support SORT in subscriptions',
      'flexible sync does not support LIMIT in subscriptions',
    ]);
    assert.deepEqual(unsupportedInSubscriptions(parseRql('owner_id == "a" AND tags == "x" OR "y" IN tags')), []);
  });

  test('the indexed queryable field must pin every branch', () => {
    const indexed = { queryable_fields_names: ['team', 'owner_id'], indexed_queryable_fields_names: ['team'] };
    const ok = ['team == "a"', 'team IN {"a", "b"} AND owner_id == "x"', '(team == "a" AND owner_id == "x") OR team == $0', '"a" == team'];
    for (const text of ok) assert.deepEqual(checkSubscriptionQuery(parseRql(text), 'Task', indexed), [], text);
    const bad = ['owner_id == "x"', 'team != "a"', 'team == "a" OR owner_id == "x"', 'TRUEPREDICATE', 'NOT team == "a"'];
    for (const text of bad) assert.deepEqual(checkSubscriptionQuery(parseRql(text), 'Task', indexed).map((p) => p.kind), ['indexed-field-missing'], text);
  });
});

describe('RQL to MongoDB filters', () => {
  const translations: Array<[string, unknown]> = [
    ['TRUEPREDICATE', {}],
    ['FALSEPREDICATE', { $nor: [{}] }],
    ['owner_id == "abc" AND isComplete == false', { $and: [{ owner_id: 'abc' }, { isComplete: false }] }],
    ['a == 1 OR NOT b == null', { $or: [{ a: 1 }, { $nor: [{ b: null }] }] }],
    ['a > 1 AND a <= 5', { $and: [{ a: { $gt: 1 } }, { a: { $lte: 5 } }] }],
    ['5 > a', { a: { $lt: 5 } }],
    ['"x" IN tags', { tags: 'x' }],
    ['a IN {1, 2}', { $or: [{ a: { $not: { $type: 'array' }, $in: [1, 2] } }, { a: { $eq: [1, 2] } }] }],
    ['ANY tags IN {"x", "y"}', { tags: { $in: ['x', 'y'] } }],
    ['a == 1.5', { a: { $in: [1.5, Decimal128.fromString('1.5')] } }],
    ['a BEGINSWITH "a.b"', { a: { $regex: '^a\\.b', $options: 's' } }],
    ['a ENDSWITH[c] "x"', { a: { $regex: 'x\\z', $options: 'is' } }],
    ['a LIKE "a*b?"', { a: { $regex: '^a.*b.\\z', $options: 's' } }],
    ['a ==[c] "Ab"', { a: { $regex: '^Ab\\z', $options: 'is' } }],
    ['a != 1', { $or: [{ a: { $not: { $type: 'array' }, $nin: [1] } }, { a: { $elemMatch: { $nin: [1] } } }] }],
    ['NONE tags == "x"', { $nor: [{ tags: 'x' }] }],
    [`_id == oid(${OID_A})`, { _id: new ObjectId(OID_A) }],
    ['d > T1:500000000', { d: { $gt: new Date(1500) } }],
    ['address.city == "Oslo"', { 'address.city': 'Oslo' }],
    ['a BETWEEN {1, 2}', { $or: [{ a: { $not: { $type: 'array' }, $gte: 1, $lte: 2 } }, { a: { $elemMatch: { $gte: 1, $lte: 2 } } }] }],
  ];
  for (const [text, filter] of translations) {
    test(`${text} → ${JSON.stringify(filter)}`, () => {
      const result = toMongoFilter(parseRql(text));
      assert.ok(result.ok, result.ok ? '' : result.reason);
      assert.deepEqual(result.ok && result.filter, filter);
    });
  }

  test('SORT and LIMIT translate; the arguments are bound', () => {
    const result = toMongoFilter(parseRql('owner == $0 SORT(a.b DESC, c ASC) LIMIT(5)'), ['u1']);
    assert.deepEqual(result, { ok: true, filter: { owner: 'u1' }, sort: { 'a.b': -1, c: 1 }, limit: 5 });
  });

  const untranslatable: Array<[string, RegExp]> = [
    ['ALL tags == "x"', /ALL/], ['tags.@size == 2', /@size/], ['a + 1 == 2', /arithmetic/], ['a == b', /two properties/],
    ['a.b != 1', /embedded path/], ['a > null', /null/], ['a !=[c] "x"', /!=\[c\]/], ['s == B64"aGk="', /B64/],
    ['d == T1:5', /sub-millisecond/], ['a == nan', /NaN/], ['TRUEPREDICATE DISTINCT(a)', /DISTINCT/],
    ['SUBQUERY(items, $x, $x.a == 1).@count > 0', /SUBQUERY/], ['a.b == null', /null through/], ['a IN ALL {1}', /ALL on a list/],
  ];
  for (const [text, reason] of untranslatable) {
    test(`${text} is reported untranslatable`, () => {
      const result = toMongoFilter(parseRql(text));
      assert.equal(result.ok, false);
      if (!result.ok) {
        assert.match(result.reason, reason);
        assert.ok(result.span.end > result.span.start);
      }
    });
  }
});

// The property: wherever a query translates, the store's evaluation of the filter (mingo with the
// store's comparable values and RE2 patterns, exactly as the runtime runs it) selects the same documents.
const OIDS = [OID_A, OID_B, '5f1f0a1b2c3d4e5f60718295'];
const strings = fc.constantFrom('a', 'b', 'A', 'ab', 'Ab', 'ba', 'a.b', 'a*b', 'a\nb', 'b\n', '', ' a', 'aab');
const numbers = fc.constantFrom(-1, 0, 1, 2, 1.5, -0.5, 3);
const scalar = fc.oneof(
  strings, numbers, fc.boolean(), fc.constant(null),
  fc.constantFrom(0, 1000, 1500, 2000).map((ms) => new Date(ms)),
  fc.constantFrom(...OIDS).map((h) => new ObjectId(h)),
  fc.constantFrom(1, 2).map((n) => Long.fromNumber(n)), fc.constantFrom(1, 3).map((n) => new Int32(n)),
  fc.constantFrom('1.5', '2', '-1').map((d) => Decimal128.fromString(d)),
);
const embedded = fc.record({ x: scalar, y: scalar }, { requiredKeys: [] });
const documentArb = fc.record({
  s: scalar, n: scalar, b: scalar, d: scalar, o: scalar,
  tags: fc.oneof(fc.array(scalar, { maxLength: 4 }), scalar),
  e: fc.oneof(embedded, fc.array(embedded, { maxLength: 3 }), fc.constant(null)),
}, { requiredKeys: [] });

const constantText = fc.oneof(
  // Single quotes hold the text as written, newlines included (no pool string has a quote or a backslash).
  strings.map((s) => `'${s}'`), numbers.map(String), fc.constantFrom('true', 'false', 'null'),
  fc.constantFrom('T0:0', 'T1:0', 'T1:500000000', 'T2:0'), fc.constantFrom(...OIDS).map((h) => `oid(${h})`),
);
const field = fc.constantFrom('s', 'n', 'b', 'd', 'o', 'tags', 'e.x', 'e.y', 'missing');
const comparison = fc.oneof(
  fc.tuple(fc.constantFrom('', 'ANY ', 'NONE ', 'ALL '), field, fc.constantFrom('==', '!=', '<', '<=', '>', '>=', '==[c]', '!=[c]'), constantText).map(([q, f, op, c]) => `${q}${f} ${op} ${c}`),
  fc.tuple(fc.constantFrom('', 'NONE '), field, fc.constantFrom('BEGINSWITH', 'ENDSWITH', 'CONTAINS', 'LIKE', 'BEGINSWITH[c]', 'CONTAINS[c]', 'LIKE[c]'), fc.constantFrom('"a"', '"b"', '"A"', '""', '"a*"', '"*b"', '"?"', '"a?b"', '"*.*"', '"a.b"', "'\n'")).map(([q, f, op, c]) => `${q}${f} ${op} ${c}`),
  fc.tuple(field, fc.array(constantText, { maxLength: 3 })).map(([f, items]) => `${f} IN {${items.join(', ')}}`),
  fc.tuple(fc.constantFrom('', 'NONE '), field, numbers, numbers).map(([q, f, lo, hi]) => `${q}${f} BETWEEN {${Math.min(lo, hi)}, ${Math.max(lo, hi)}}`),
  fc.tuple(constantText, field).map(([c, f]) => `${c} IN ${f}`),
  fc.constantFrom('TRUEPREDICATE', 'FALSEPREDICATE'),
);
const { predicateText } = fc.letrec((tie) => ({
  predicateText: fc.oneof(
    { depthSize: 'small' },
    comparison,
    fc.tuple(tie('predicateText'), fc.constantFrom('AND', 'OR'), tie('predicateText')).map(([a, op, b]) => `(${a as string}) ${op} (${b as string})`),
    tie('predicateText').map((p) => `NOT (${p as string})`),
  ),
}));

describe('RQL property: matches agrees with the store running the translated filter', () => {
  test('random documents and random translatable queries', () => {
    let translated = 0;
    fc.assert(fc.property(predicateText, fc.array(documentArb, { minLength: 1, maxLength: 6 }), (text, docs) => {
      const query: RqlQuery = parseRql(text as string);
      const translation = toMongoFilter(query);
      if (!translation.ok) return;
      translated++;
      const storeQuery = compiledQuery(toComparable(toStorable(translation.filter, 'filter')) as Record<string, unknown>);
      for (const doc of docs) {
        const expected = matches(query, doc);
        const actual = storeQuery.test(toComparable(toStorable(doc)) as Record<string, unknown>);
        assert.equal(actual, expected, `${text as string}\nfilter ${JSON.stringify(translation.filter)}\ndocument ${JSON.stringify(doc)}`);
      }
    }), { numRuns: 2500 });
    assert.ok(translated > 1200, `only ${translated} of 2500 queries translated`);
  });
});

describe('editor: flexible sync queryable fields against the synced schemas', () => {
  test('fields and collections no synced schema has are warned at their entry; the indexed field is checked', async () => {
    const files = baseApp();
    files['sync/config.json'] = {
      type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'todo',
      queryable_fields_names: ['_id', 'name', 'nmae', 'owner_id'],
      indexed_queryable_fields_names: ['assignee'],
      collection_queryable_fields_names: { Task: ['assignee', 'bogus'], Tsk: ['x'] },
      asymmetric_tables: ['User', 'Usr'],
    };
    const diagnostics = checkApp(await loadApp(appFs(files), APP_ROOT)).filter((d) => d.code.startsWith('sync/'));
    const text = JSON.stringify(files['sync/config.json'], null, 2);
    const at = (d: { range: { start: { line: number; character: number }; end: { line: number; character: number } } }) => {
      const lines = text.split('\n');
      return lines[d.range.start.line]!.slice(d.range.start.character, d.range.end.line === d.range.start.line ? d.range.end.character : undefined);
    };
    const summary = diagnostics.map((d) => [d.code, d.severity, at(d), d.message]);
    assert.deepEqual(summary, [
      ['sync/queryable-field-not-in-schema', 'warning', '"nmae"', 'No synced collection schema has a "nmae" property (synced: Task, User), so subscriptions on it match nothing; did you mean "name"?'],
      ['sync/queryable-field-not-in-schema', 'warning', '"owner_id"', 'No synced collection schema has a "owner_id" property (synced: Task, User), so subscriptions on it match nothing'],
      ['sync/collection-queryable-field-not-in-schema', 'warning', '"bogus"', 'The schema of todo.Task has no "bogus" property, so subscriptions on it match nothing'],
      ['sync/queryable-collection-unknown', 'warning', '"Tsk"', 'No synced collection is named "Tsk" (synced: Task, User); did you mean "Task"?'],
      ['sync/indexed-field-not-queryable', 'error', '"assignee"', 'The indexed queryable field "assignee" must also be listed in "queryable_fields_names"'],
      ['sync/indexed-field-not-in-schema', 'warning', '"assignee"', 'The indexed queryable field "assignee" must be in every synced collection; todo.User has no "assignee" property'],
      ['sync/asymmetric-table-unknown', 'warning', '"Usr"', 'No synced collection schema is titled "Usr" (synced: Task, User), so no object type is made asymmetric by this entry; did you mean "User"?'],
    ].sort((a, b) => diagnostics.findIndex((d) => d.message === a[3]) - diagnostics.findIndex((d) => d.message === b[3])));
    assert.equal(diagnostics.length, 7);
  });

  test('roles a flexible sync session cannot use are warned at the role, with why; compatible ones are not', async () => {
    const files = baseApp();
    files['sync/config.json'] = { type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'todo', queryable_fields_names: ['owner_id'] };
    files['data_sources/mongodb-atlas/todo/Task/rules.json'] = {
      database: 'todo', collection: 'Task', filters: [],
      roles: [
        { name: 'owner', apply_when: { owner_id: '%%user.id' }, document_filters: { read: true, write: true }, read: true, write: true },
        { name: 'byName', apply_when: {}, document_filters: { read: { name: 'x' }, write: false }, read: true, write: false, fields: { _id: { read: true } } },
        { name: 'teamed', apply_when: { '%%user.custom_data.team': 'a' }, document_filters: { read: { owner_id: { '%function': { name: 'owners', arguments: ['%%root'] } } }, write: false }, read: { '%%true': true } },
        { name: 'fine', apply_when: { '%%user.data.email': 'a@b.c' }, document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } }, read: true, write: true, fields: { name: { read: true } } },
      ],
    };
    const diagnostics = checkApp(await loadApp(appFs(files), APP_ROOT)).filter((d) => d.code === 'sync/role-not-sync-compatible' || d.code === 'sync/apply-when-uses-document');
    const byRole = (name: string) => diagnostics.filter((d) => d.message.includes(`"${name}"`) || (name === 'owner' && d.code === 'sync/apply-when-uses-document')).map((d) => d.code);
    assert.deepEqual(byRole('owner'), ['sync/apply-when-uses-document'], 'compatible, but decided with no document');
    assert.ok(diagnostics.some((d) => d.code === 'sync/apply-when-uses-document' && /the field "owner_id" reads as missing/.test(d.message)));
    assert.deepEqual(diagnostics.filter((d) => d.message.includes('Role "byName"')).map((d) => /"name" is not a queryable field|"_id"/.exec(d.message)?.[0]), ['"name" is not a queryable field', '"_id"']);
    const teamed = diagnostics.filter((d) => d.message.includes('Role "teamed"')).map((d) => d.message);
    assert.ok(teamed.some((m) => m.includes('%function')) && teamed.some((m) => m.includes('top-level "read"')), teamed.join('\n'));
    assert.equal(diagnostics.filter((d) => d.message.includes('Role "fine"')).length, 0);
  });

  test('a consistent flexible configuration has no sync diagnostics', async () => {
    const files = baseApp();
    files['sync/config.json'] = {
      type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'todo',
      queryable_fields_names: ['_id', 'name'], indexed_queryable_fields_names: ['name'], collection_queryable_fields_names: { Task: ['assignee'] },
    };
    assert.deepEqual(checkApp(await loadApp(appFs(files), APP_ROOT)).filter((d) => d.code.startsWith('sync/')), []);
  });
});

describe('RQL in JS/TS source', () => {
  test('queries of .filtered("…") calls with every quote, escapes mapped back to source columns', () => {
    const source = [
      'const a = tasks.filtered("name == \\"x\\" AND done == false");',
      "const b = tasks.filtered( 'owner_id == $0', id);",
      'const c = tasks.filtered(`priority > 2`);',
      'const d = tasks.filtered(`name == ${x}`);',
      'const e = tasks.filtered(query);',
    ].join('\n');
    assert.deepEqual(findEmbeddedRql(source).map((e) => e.query), ['name == "x" AND done == false', 'owner_id == $0', 'priority > 2']);
    const broken = 'realm.objects("Task").filtered("name == \\"x\\" AND ~");';
    const [problem] = embeddedRqlProblems(broken);
    assert.ok(problem);
    assert.equal(broken.slice(problem.start, problem.end), '~');
    assert.match(problem.message, /invalid character "~"/);
    assert.deepEqual(embeddedRqlProblems('x.filtered("")').map((p) => p.message), ['Realm Query Language: the query is empty; use TRUEPREDICATE to match every object']);
    assert.deepEqual(embeddedRqlProblems(source), []);
  });
});

describe('RQL subscriptions for the sync server', () => {
  const settings = { queryable_fields_names: ['owner_id', 'isComplete'], collection_queryable_fields_names: { tasks: ['priority'] } };

  test('an accepted subscription matches documents and carries its store filter', () => {
    const result = compileSubscription('Task', 'owner_id == "abc" and isComplete == false', settings);
    assert.ok(result.ok);
    if (!result.ok) return;
    assert.equal(result.subscription.matches(task), true);
    assert.equal(result.subscription.matches({ ...task, owner_id: 'x' }), false);
    assert.deepEqual(result.subscription.filter, { $and: [{ owner_id: 'abc' }, { isComplete: false }] });
  });

  test('per-collection fields apply under the collection name too', () => {
    assert.equal(compileSubscription('Task', 'priority > 1', settings, 'tasks').ok, true);
    assert.equal(compileSubscription('Task', 'priority > 1', settings).ok, false);
  });

  test('refusals: syntax, fields that are not queryable, unsupported operators, arguments', () => {
    const refusal = (text: string) => {
      const result = compileSubscription('Task', text, settings);
      assert.equal(result.ok, false);
      return result.ok ? '' : result.message;
    };
    assert.equal(refusal('owner_id == '), 'invalid query for table "Task": expected a property, a value or an argument, found the end of the query (line 1, column 13)');
    assert.equal(refusal('summary == "x" AND owner_id == "a"'), 'unsupported query for table "Task": key "summary" is not a queryable field');
    assert.equal(refusal('owner_id == "a" LIMIT(2)'), 'flexible sync does not support LIMIT in subscriptions');
    assert.match(refusal('owner_id == $0'), /cannot read arguments/);
  });

  test('LIKE within the evaluation bound (issue 33): patterns are strings, their ? parts at most 256 characters', () => {
    const like = { queryable_fields_names: ['owner_id', 'text', 'other'] };
    const result = (text: string) => compileSubscription('Note', text, like);
    assert.equal(result(`owner_id == "a" AND text LIKE "*${'a?'.repeat(127)}b*ab?c"`).ok, false, '255 + 4 characters of ? parts');
    assert.equal(result(`owner_id == "a" AND text LIKE "*${'a?'.repeat(127)}b*abc"`).ok, true, 'a literal part does not count');
    assert.equal(result(`owner_id == "a" AND (text LIKE "${'?'.repeat(200)}" OR text LIKE "${'?'.repeat(57)}")`).ok, false, 'the parts of every LIKE add up');
    const property = result('owner_id == "a" AND text LIKE other');
    assert.equal(property.ok ? '' : property.message, 'a LIKE pattern in a subscription must be a string, not a property');
    // Long literal needles are matched in memory (linear), not by a regular expression engine.
    const long = result(`owner_id == "a" AND text CONTAINS "${'a'.repeat(300)}"`);
    assert.ok(long.ok && long.subscription.filter === undefined);
    const short = result('owner_id == "a" AND text CONTAINS "abc"');
    assert.ok(short.ok && short.subscription.filter !== undefined);
  });

  test('indexOfLinear finds what indexOf finds, in linear time for long needles', () => {
    fc.assert(fc.property(fc.stringMatching(/^[ab]{0,120}$/), fc.stringMatching(/^[ab]{33,60}$/), fc.nat(130), (text, needle, from) => {
      assert.equal(indexOfLinear(text, needle, from), text.indexOf(needle, from));
    }), { numRuns: 500 });
    assert.equal(indexOfLinear(`${'a'.repeat(50)}x${'ab'.repeat(40)}`, 'ab'.repeat(40), 3), 51);
    // 0.5 s with indexOf: its search is text × needle at worst.
    const needle = `${'a'.repeat(15_000)}b${'a'.repeat(15_000)}`;
    assert.equal(matches(parseRql(`s CONTAINS "${needle}"`), { s: 'a'.repeat(90_000) }), false);
    assert.equal(likeMatches('a'.repeat(90_000), `*${needle}*`), false);
  });
});

describe('LIKE', () => {
  test('agrees with a regular expression on random texts and patterns', () => {
    const alphabet = fc.constantFrom('a', 'b', 'ü', '😀', '*', '?', '.');
    fc.assert(fc.property(fc.array(alphabet.filter((c) => c !== '*' && c !== '?'), { maxLength: 12 }), fc.array(alphabet, { maxLength: 8 }), (t, p) => {
      const text = t.join(''), pattern = p.join('');
      const regex = new RegExp(`^${p.map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.]/g, '\\.'))).join('')}$`, 'su');
      assert.equal(likeMatches(text, pattern), regex.test(text), `${JSON.stringify(text)} LIKE ${JSON.stringify(pattern)}`);
    }), { numRuns: 3000 });
  });
});
