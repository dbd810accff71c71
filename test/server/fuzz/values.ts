// Generators of JSON text for the mutators: values of every type, awkward keys, rule expressions built
// from the rule language's own tables, bsonType values, unicode, very long strings and deep nesting.
// Everything is produced as text (not as JS values) so that keys such as `__proto__` and duplicate keys
// survive into the document exactly as written.
import fc from 'fast-check';
import { EXPANSIONS, OPERATORS } from '../../../core/rules';

export type JsonType = 'string' | 'number' | 'boolean' | 'null' | 'array' | 'object';
export const JSON_TYPES: readonly JsonType[] = ['string', 'number', 'boolean', 'null', 'array', 'object'];

const quote = (s: string) => JSON.stringify(s);
export const objectText = (entries: ReadonlyArray<readonly [string, string]>) => `{${entries.map(([k, v]) => `${quote(k)}: ${v}`).join(', ')}}`;
const arrayText = (items: readonly string[]) => `[${items.join(', ')}]`;

/** Names that hit Object.prototype members when code indexes a plain object with a name from the file. */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];

const awkwardString = fc.constantFrom(
  '', ' ', '\u0000', '\u2028', '\u2029', '\uFEFF', '\ud800', '\udfff', '\ud83d', '🙂', 'e\u0301', '\r', '\r\n', '\n', '\t', '"', '\\',
  '%', '%%', '$', '.', '..', '/', '../..', 'a/b', 'null', 'true', '0', '-1', 'NaN', '[]', '{}', ...PROTOTYPE_KEYS,
);

export const unicodeString = fc.oneof(
  // Any code points, lone surrogates included (fast-check's 'binary' unit builds a table of all of them first).
  fc.array(fc.integer({ min: 0, max: 0x10ffff }), { maxLength: 24 }).map((codes) => String.fromCodePoint(...codes)),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  awkwardString,
);

const numberText = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
  fc.constantFrom('0', '-0', '1e308', '-1e308', '1e999', '1e-320', '9007199254740993', '123456789012345678901234567890', '0.1', '2147483648', '-2147483649', '1E2'),
);

const scalarText = fc.oneof(unicodeString.map(quote), numberText, fc.constantFrom('true', 'false', 'null'));

/** Not JSON, but what a half-typed or hand-edited file holds. */
const junkText = fc.constantFrom('NaN', 'undefined', "'single'", '.5', '01', '+1', '"unterminated', '// comment\n1', '/* open', '[1,]', '{"a":1,}', '{,}', '}', ']', ':', ',', '"\\u12"', '"\\x"', 'tru', 'nul');

export const jsonText = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 3, arbitrary: scalarText },
  { weight: 1, arbitrary: junkText },
);

/** Keys the app's files use, plus prototype names, awkward and random strings. */
export function keyArbitrary(vocabulary: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...vocabulary) },
    { weight: 1, arbitrary: fc.constantFrom(...PROTOTYPE_KEYS) },
    { weight: 2, arbitrary: unicodeString },
    { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  );
}

/** One value of each JSON type, so a mutator can pick one whose type differs from what it replaces. */
export function valuesOfEachType(key: fc.Arbitrary<string>): fc.Arbitrary<Record<JsonType, string>> {
  const small = fc.oneof(scalarText, fc.jsonValue({ maxDepth: 1 }).map((v) => JSON.stringify(v)));
  return fc.record({
    string: unicodeString.map(quote),
    number: numberText,
    boolean: fc.constantFrom('true', 'false'),
    null: fc.constant('null'),
    array: fc.array(small, { maxLength: 4 }).map(arrayText),
    object: fc.array(fc.tuple(key, small), { maxLength: 4 }).map(objectText),
  });
}

// ---- rule expressions (grammar from core/rules/tables.ts, with nonsense mixed in) ----

const pathSegment = fc.oneof(
  fc.constantFrom('id', 'custom_data', 'data', 'identities', 'values', 'tag', 'projectIds', 'isAdmin', '0', '-1', 'length', '', ...PROTOTYPE_KEYS),
  fc.string({ maxLength: 6 }),
);

const expansionString = fc.oneof(
  fc.constantFrom(...EXPANSIONS.flatMap((e) => [e.label, ...e.members.map((m) => `${e.label}.${m.name}`)])),
  fc.tuple(fc.constantFrom(...EXPANSIONS.map((e) => e.label)), fc.array(pathSegment, { maxLength: 4 })).map(([label, segments]) => [label, ...segments].join('.')),
  fc.constantFrom('%%', '%%%', '%%.', '%%user.', '%%user..id', '%%values.', '%%environment.values.', '%%root.', '%%nope', '%%USER', '%%user.id.', '%%args.0', '%%partition.x', '%% user', '%%true.x'),
);

const operatorName = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...OPERATORS.map((o) => o.name)) },
  { weight: 1, arbitrary: fc.constantFrom('%', '$', '%foo', '$where', '%%and', '%AND', '%function ', '$IN') },
);

const subjectKey = fc.oneof(
  { weight: 3, arbitrary: expansionString },
  { weight: 2, arbitrary: fc.constantFrom('_partition', 'owner_id', 'name', 'projectIds', '_id', 'status') },
  { weight: 1, arbitrary: operatorName },
  { weight: 1, arbitrary: unicodeString },
);

const functionName = fc.oneof(fc.constantFrom('canReadPartition', 'sum', 'endpoint/taskStats', 'missingFunction', ''), unicodeString);

export const expressionText: fc.Arbitrary<string> = fc.letrec<{ expression: string; operand: string; operatorObject: string }>((tie) => ({
  expression: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarText,
    expansionString.map(quote),
    fc.array(fc.tuple(subjectKey, tie('operand')), { maxLength: 3 }).map(objectText),
    fc.tuple(fc.constantFrom('%and', '$and', '%or', '$or', '%nor', '$nor'), fc.array(tie('expression'), { maxLength: 3 })).map(([op, items]) => objectText([[op, arrayText(items)]])),
    fc.tuple(fc.constantFrom('%not', '$not'), tie('expression')).map(([op, inner]) => objectText([[op, inner]])),
    fc.array(tie('expression'), { maxLength: 3 }).map(arrayText),
  ),
  operand: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarText,
    expansionString.map(quote),
    tie('operatorObject'),
    tie('expression'),
  ),
  operatorObject: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.array(fc.tuple(operatorName, fc.oneof(scalarText, expansionString.map(quote), fc.array(tie('operand'), { maxLength: 3 }).map(arrayText), tie('operand'))), { maxLength: 2 }).map(objectText),
    fc.tuple(functionName, fc.option(fc.array(fc.oneof(scalarText, expansionString.map(quote), tie('operand')), { maxLength: 3 }))).map(([name, args]) =>
      objectText([['%function', objectText(args === null ? [['name', quote(name)]] : [['name', quote(name)], ['arguments', arrayText(args)]])]])),
  ),
})).expression;

// ---- bsonType ----

const BSON_TYPE_NAMES = [
  'object', 'array', 'string', 'int', 'long', 'double', 'decimal', 'number', 'bool', 'boolean', 'objectId', 'date', 'timestamp', 'uuid',
  'binData', 'null', 'regex', 'javascript', 'minKey', 'maxKey', 'mixed', 'undefined', 'symbol', 'dbPointer', 'Object', 'STRING', 'int32', '',
];
const bsonTypeName = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...BSON_TYPE_NAMES) }, { weight: 1, arbitrary: unicodeString });

export const bsonTypeText = fc.oneof(
  { weight: 4, arbitrary: bsonTypeName.map(quote) },
  { weight: 2, arbitrary: fc.array(bsonTypeName, { maxLength: 4 }).map((names) => arrayText(names.map(quote))) },
  { weight: 1, arbitrary: fc.oneof(numberText, fc.constantFrom('null', 'true', '{}', '{"bsonType": "string"}', '[["string"]]')) },
);

// ---- extremes ----

const LONG_STRING_UNITS = ['a', 'é', '🙂', '%%user.custom_data.', 'x.', '\\"', '\\\\', ' ', '\\u0000', '$in', '\\n'];

/** A JSON string of 5,000–60,000 characters (units are already JSON-escaped). */
export const longStringText = fc.record({ length: fc.integer({ min: 5_000, max: 60_000 }), unit: fc.constantFrom(...LONG_STRING_UNITS) })
  .map(({ length, unit }) => `"${unit.repeat(Math.ceil(length / unit.length))}"`);

/** Long values that are not strings: huge numbers, arrays and objects with thousands of members. */
export const longValueText = fc.oneof(
  longStringText,
  fc.integer({ min: 1_000, max: 20_000 }).map((n) => '9'.repeat(n)),
  fc.integer({ min: 1_000, max: 5_000 }).map((n) => arrayText(Array.from({ length: n }, (_, i) => String(i)))),
  fc.integer({ min: 500, max: 2_000 }).map((n) => objectText(Array.from({ length: n }, (_, i) => [`k${i}`, quote(`v${i}`)] as const))),
);

type NestingShape = 'array' | 'object' | 'and' | 'not' | 'subject' | 'properties' | 'items' | 'unclosed';

function nest(shape: NestingShape, depth: number, leaf: string): string {
  const wrap = (open: string, close: string) => open.repeat(depth) + leaf + close.repeat(depth);
  switch (shape) {
    case 'array': return wrap('[', ']');
    case 'object': return wrap('{"a": ', '}');
    case 'and': return wrap('{"%and": [', ']}');
    case 'not': return wrap('{"%not": ', '}');
    case 'subject': return wrap('{"%%user.id": ', '}');
    case 'properties': return '{"bsonType": "object", "title": "Deep", "properties": {"p": '.repeat(depth) + '{"bsonType": "string"}' + '}}'.repeat(depth);
    case 'items': return '{"bsonType": "array", "items": '.repeat(depth) + '{"bsonType": "string"}' + '}'.repeat(depth);
    case 'unclosed': return '[{"a": '.repeat(depth) + leaf;
  }
}

/** A value nested 50–600 levels deep, in the shapes the checks recurse through. */
export const deepValueText = fc.record({
  shape: fc.constantFrom<NestingShape>('array', 'object', 'and', 'not', 'subject', 'properties', 'items', 'unclosed'),
  depth: fc.integer({ min: 50, max: 600 }),
  leaf: fc.oneof(scalarText, fc.constantFrom('{"%%true": true}', '"%%user.id"')),
}).map(({ shape, depth, leaf }) => nest(shape, depth, leaf));
