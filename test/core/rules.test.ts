import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { JsonFile, type Range } from '../../core/json';
import { DiagnosticSink, type Diagnostic } from '../../core/diagnostics';
import {
  analyzeExpression, completionsAt, describeRuleToken, EXPANSIONS, OPERATORS, OPERATORS_BY_NAME, MAX_EXPRESSION_DEPTH,
  type ExpressionContext, type ExpressionFacts,
} from '../../core/rules';

interface Analysis { file: JsonFile; items: Diagnostic[] }

/** Analyses the expression under key `rule` of a pretty-printed JSON file. */
function analyze(expression: unknown, context: ExpressionContext, facts: ExpressionFacts = {}): Analysis {
  return analyzeText(JSON.stringify({ rule: expression }, null, 2), ['rule'], context, facts);
}

function analyzeText(text: string, path: (string | number)[], context: ExpressionContext, facts: ExpressionFacts = {}): Analysis {
  const file = new JsonFile('/app/sync/config.json', 'sync/config.json', text);
  const sink = new DiagnosticSink();
  analyzeExpression(file, path, context, facts, sink);
  return { file, items: sink.items };
}

/** The range of the `occurrence`-th appearance of `snippet` in the file text. */
function rangeOf(file: JsonFile, snippet: string, occurrence = 0): Range {
  let offset = -1;
  for (let i = 0; i <= occurrence; i++) {
    offset = file.text.indexOf(snippet, offset + 1);
    assert.notEqual(offset, -1, `snippet ${snippet} #${occurrence} not in the text`);
  }
  return file.rangeOf(offset, snippet.length);
}

function only(items: Diagnostic[], code: string): Diagnostic {
  const found = items.filter((d) => d.code === code);
  assert.equal(found.length, 1, `expected one ${code}, got ${JSON.stringify(items.map((d) => d.code))}`);
  return found[0];
}

function codes(items: Diagnostic[]): string[] {
  return items.map((d) => d.code);
}

describe('rule analysis: expansions', () => {
  test('a misspelt expansion name is reported on the key with the closest spelling', () => {
    const { file, items } = analyze({ '%%usr.id': 'abc' }, 'data-rule');
    const d = only(items, 'rule/unknown-expansion');
    assert.equal(d.severity, 'error');
    assert.deepEqual(d.range, rangeOf(file, '"%%usr.id"'));
    assert.equal(d.data?.suggestion, '%%user.id');
    assert.equal(d.file, '/app/sync/config.json');
  });

  test('a misspelt member is reported on the value string with the corrected member', () => {
    const { file, items } = analyze({ '%%true': { '%%user.id': '%%user.custom_dta.team' } }, 'data-rule');
    const d = only(items, 'rule/unknown-expansion');
    assert.deepEqual(d.range, rangeOf(file, '"%%user.custom_dta.team"'));
    assert.equal(d.data?.suggestion, '%%user.custom_data.team');
  });

  test('paths below members without members, a bare %%values and empty segments are unknown expansions', () => {
    const { file, items } = analyze({ '%%user.id.x': 'a', '%%environment.tag.y': 'b', '%%values': 'c', '%%user..id': 'd', '%%': 'e' }, 'data-rule');
    assert.deepEqual(codes(items), Array(5).fill('rule/unknown-expansion'));
    assert.deepEqual(items[0].range, rangeOf(file, '"%%user.id.x"'));
    assert.equal(items[0].data?.suggestion, '%%user.id');
    assert.equal(items[1].data?.suggestion, '%%environment.tag');
    assert.deepEqual(items[2].range, rangeOf(file, '"%%values"'));
    assert.match(items[2].message, /needs a name/);
    assert.match(items[3].message, /empty path segment/);
  });

  test('%%partition with a path has no members and suggests the bare expansion', () => {
    const { items } = analyze({ '%%partition.x': 'a' }, 'partition-sync');
    assert.equal(only(items, 'rule/unknown-expansion').data?.suggestion, '%%partition');
  });

  test('%%partition outside partition sync is reported in each other context', () => {
    for (const context of ['flexible-sync', 'data-rule', 'can-evaluate', 'filter'] as const) {
      const { file, items } = analyze({ '%%user.id': '%%partition' }, context);
      const d = only(items, 'rule/partition-outside-sync');
      assert.equal(d.severity, 'error');
      assert.deepEqual(d.range, rangeOf(file, '"%%partition"'), context);
    }
  });

  test('document and request expansions are not allowed in sync (§1.5)', () => {
    for (const context of ['partition-sync', 'flexible-sync'] as const) {
      for (const expansion of ['%%root.owner', '%%prev', '%%prevRoot.owner', '%%this', '%%request.httpMethod']) {
        const { file, items } = analyze({ [expansion]: 'x' }, context);
        const d = only(items, 'rule/expansion-not-allowed');
        assert.deepEqual(d.range, rangeOf(file, `"${expansion}"`), `${expansion} in ${context}`);
        assert.equal(d.data?.context, context);
      }
    }
  });

  test('%%request is allowed in data rules, function rules and filters; %%args only where arguments exist', () => {
    for (const context of ['data-rule', 'can-evaluate', 'filter'] as const) {
      assert.deepEqual(analyze({ '%%request.httpMethod': 'GET' }, context).items, []);
    }
    assert.deepEqual(analyze({ '%%args.0': 'x' }, 'can-evaluate').items, []);
    assert.deepEqual(codes(analyze({ '%%args.0': 'x' }, 'data-rule').items), ['rule/expansion-not-allowed']);
  });

  test('unknown custom user data fields warn with the closest known field', () => {
    const facts = { customDataFields: ['readPartitions', 'team'] };
    const { file, items } = analyze({ '%%user.custom_data.readPartition': '%%partition' }, 'partition-sync', facts);
    const d = only(items, 'rule/unknown-custom-data-field');
    assert.equal(d.severity, 'warning');
    assert.deepEqual(d.range, rangeOf(file, '"%%user.custom_data.readPartition"'));
    assert.equal(d.data?.suggestion, '%%user.custom_data.readPartitions');
    assert.deepEqual(analyze({ '%%user.custom_data.team.name': 'x' }, 'data-rule', facts).items, []);
    assert.deepEqual(analyze({ '%%user.custom_data.anything': 'x' }, 'data-rule', {}).items, [], 'unknown schema: no check');
  });

  test('unknown app and environment value names warn', () => {
    const facts = { valueNames: ['adminIds'], environmentValueNames: ['region'] };
    const { file, items } = analyze({ '%%user.id': { $in: '%%values.adminId' }, '%%environment.values.regon': 'eu' }, 'data-rule', facts);
    assert.deepEqual(codes(items), ['rule/unknown-value', 'rule/unknown-value']);
    assert.deepEqual(items[0].range, rangeOf(file, '"%%values.adminId"'));
    assert.equal(items[0].data?.suggestion, 'adminIds');
    assert.deepEqual(items[1].range, rangeOf(file, '"%%environment.values.regon"'));
    assert.equal(items[1].data?.suggestion, 'region');
  });
});

describe('rule analysis: operators', () => {
  test('unknown operators are reported on the key with a suggestion', () => {
    const { file, items } = analyze({ '%%partition': { $inn: ['a'] }, '%%user.id': { '%eq': 'x' } }, 'partition-sync');
    const unknown = items.filter((d) => d.code === 'rule/unknown-operator');
    assert.equal(unknown.length, 2);
    assert.deepEqual(unknown[0].range, rangeOf(file, '"$inn"'));
    assert.equal(unknown[0].data?.suggestion, '$in');
    assert.deepEqual(unknown[1].range, rangeOf(file, '"%eq"'));
    assert.equal(unknown[1].data?.suggestion, '$eq');
  });

  test('$in and $nin need an array or an expansion', () => {
    const { file, items } = analyze({ '%%partition': { $in: 5 }, '%%user.id': { '%nin': 'plain' } }, 'partition-sync');
    const shapes = items.filter((d) => d.code === 'rule/operand-shape');
    assert.equal(shapes.length, 2);
    assert.deepEqual(shapes[0].range, rangeOf(file, '5'));
    assert.deepEqual(shapes[1].range, rangeOf(file, '"plain"'));
  });

  test('%function needs an object with a string name and an optional array of arguments', () => {
    const cases: [unknown, string][] = [
      ['canRead', '"canRead"'],
      [{ name: 5 }, '5'],
      [{ name: 'canRead', arguments: 'x' }, '"x"'],
      [{ name: 'canRead', argument: [] }, '"argument"'],
      [{ arguments: [] }, '"%function"'],
    ];
    for (const [operand, snippet] of cases) {
      const { file, items } = analyze({ '%%true': { '%function': operand } }, 'data-rule', { functionNames: ['canRead'] });
      const d = only(items, 'rule/operand-shape');
      assert.deepEqual(d.range, rangeOf(file, snippet), JSON.stringify(operand));
    }
    assert.deepEqual(analyze({ '%%true': { '%function': { name: 'canRead' } } }, 'data-rule', { functionNames: ['canRead'] }).items, []);
  });

  test('conversion operators take a literal or a single expansion', () => {
    const { file, items } = analyze({ '%%root.owner': { '%stringToOid': { '%oidToString': '%%user.id' } }, '%%root.team': { '%stringToUuid': ['a'] } }, 'data-rule');
    assert.deepEqual(codes(items), ['rule/operand-shape', 'rule/operand-shape']);
    assert.deepEqual(items[0].range, rangeOf(file, '{\n        "%oidToString": "%%user.id"\n      }'));
    assert.deepEqual(items[1].range.start, rangeOf(file, '[').start);
    assert.deepEqual(analyze({ '%%root.owner': { '%stringToOid': '%%user.id' } }, 'data-rule').items, []);
  });

  test('$exists needs a boolean; logical operators need a non-empty array', () => {
    const { file, items } = analyze({ '%%user.data.email': { $exists: 'yes' }, $or: [], '%and': { '%%true': true } }, 'data-rule');
    assert.deepEqual(codes(items), ['rule/operand-shape', 'rule/operand-shape', 'rule/operand-shape']);
    assert.deepEqual(items[0].range, rangeOf(file, '"yes"'));
    assert.deepEqual(items[1].range, rangeOf(file, '[]'));
  });

  test('an operator object cannot also hold field names', () => {
    const { file, items } = analyze({ '%%root.n': { $gt: 1, max: 5 } }, 'data-rule');
    assert.deepEqual(only(items, 'rule/operand-shape').range, rangeOf(file, '"max"'));
  });

  test('%function naming a missing function is reported on the name with the closest function', () => {
    const { file, items } = analyze({ '%%true': { '%function': { name: 'canRaed', arguments: ['%%partition'] } } }, 'partition-sync', { functionNames: ['canRead', 'other'] });
    const d = only(items, 'rule/unknown-function');
    assert.equal(d.severity, 'error');
    assert.deepEqual(d.range, rangeOf(file, '"canRaed"'));
    assert.deepEqual(d.data, { name: 'canRaed', suggestion: 'canRead' });
  });

  test('%function is not available in flexible sync; MongoDB query operators only in filters', () => {
    const flexible = analyze({ '%%true': { '%function': { name: 'f' } } }, 'flexible-sync');
    assert.deepEqual(flexible.items[0].range, rangeOf(flexible.file, '"%function"'));
    assert.deepEqual(codes(flexible.items), ['rule/operator-not-allowed']);
    assert.deepEqual(codes(analyze({ '%%user.data.email': { $regex: '@x$' } }, 'data-rule').items), ['rule/operator-not-allowed']);
    assert.deepEqual(analyze({ email: { $regex: '@x$', $options: 'i' }, tags: { $size: 2 } }, 'filter').items, []);
  });

  test('undocumented negations warn on the key; MongoDB $not/$nor are ordinary in filters', () => {
    const { file, items } = analyze({ '%nor': [{ '%%user.type': 'server' }], '%%partition': { '%not': { $in: ['admin'] } }, $not: { '%%true': false }, '%%user.id': { $nor: ['a'] } }, 'partition-sync');
    const warnings = items.filter((d) => d.code === 'rule/undocumented-operator');
    assert.deepEqual(warnings.map((d) => d.range), ['"%nor"', '"%not"', '"$not"', '"$nor"'].map((s) => rangeOf(file, s)));
    assert.ok(warnings.every((d) => d.severity === 'warning'));
    assert.deepEqual(analyze({ status: { $not: { $eq: 'closed' } }, $nor: [{ hidden: true }] }, 'filter').items, []);
    assert.deepEqual(codes(analyze({ '%nor': [{ hidden: true }] }, 'filter').items), ['rule/undocumented-operator']);
  });

  test('a subject operator standing where a subject belongs is misplaced', () => {
    const { file, items } = analyze({ $gt: 5 }, 'data-rule');
    assert.deepEqual(only(items, 'rule/misplaced-operator').range, rangeOf(file, '"$gt"'));
  });
});

describe('rule analysis: sync-specific checks', () => {
  test('bare field keys in sync permissions warn on the key', () => {
    for (const context of ['partition-sync', 'flexible-sync'] as const) {
      const { file, items } = analyze({ owner_id: '%%user.id' }, context);
      const d = only(items, 'rule/bare-field-in-sync');
      assert.equal(d.severity, 'warning');
      assert.deepEqual(d.range, rangeOf(file, '"owner_id"'));
    }
    assert.deepEqual(analyze({ owner_id: '%%user.id' }, 'data-rule').items, []);
    assert.deepEqual(analyze({ owner_id: '%%user.id' }, 'filter').items, []);
  });

  test('%%user.id compared with an objectId partition is never equal; the fix rewrites the property', () => {
    const { file, items } = analyze({ '%%user.id': '%%partition' }, 'partition-sync', { partitionType: 'objectId' });
    const d = only(items, 'rule/type-never-equal');
    assert.equal(d.severity, 'warning');
    assert.deepEqual(d.range, rangeOf(file, '"%%partition"'));
    assert.equal(d.data?.suggestion, '{"%%partition": {"%stringToOid": "%%user.id"}}');
    assert.equal(d.data?.replaces, 'property');
    assert.deepEqual(d.data?.replaceRange, rangeOf(file, '"%%user.id": "%%partition"'));
  });

  test('the reverse order, $in elements and literals of the wrong type are flagged too', () => {
    const reversed = analyze({ '%%partition': '%%user.id' }, 'partition-sync', { partitionType: 'objectId' });
    assert.deepEqual(only(reversed.items, 'rule/type-never-equal').range, rangeOf(reversed.file, '"%%user.id"'));

    const listed = analyze({ '%%partition': { $in: ['PUBLIC', 7] } }, 'partition-sync', { partitionType: 'long' });
    const d = only(listed.items, 'rule/type-never-equal');
    assert.deepEqual(d.range, rangeOf(listed.file, '"PUBLIC"'));
    assert.equal(d.data, undefined);

    const hex = analyze({ '%%partition': '5f1f0a1b2c3d4e5f60718293' }, 'partition-sync', { partitionType: 'objectId' });
    const fix = only(hex.items, 'rule/type-never-equal');
    assert.equal(fix.data?.suggestion, '{"%stringToOid":"5f1f0a1b2c3d4e5f60718293"}');
    assert.equal(fix.data?.replaces, 'value');
    assert.deepEqual(fix.data?.replaceRange, rangeOf(hex.file, '"5f1f0a1b2c3d4e5f60718293"'));
  });

  test('matching types, conversions and unknown partition types are not flagged', () => {
    const quiet = (expression: unknown, partitionType?: 'string' | 'objectId' | 'long' | 'uuid') =>
      analyze(expression, 'partition-sync', partitionType ? { partitionType } : {}).items.filter((d) => d.code === 'rule/type-never-equal');
    assert.deepEqual(quiet({ '%%user.id': '%%partition' }, 'string'), []);
    assert.deepEqual(quiet({ '%%user.id': '%%partition' }), []);
    assert.deepEqual(quiet({ '%%partition': { '%stringToOid': '%%user.id' } }, 'objectId'), []);
    assert.deepEqual(quiet({ '%%partition': 42 }, 'long'), []);
    assert.deepEqual(quiet({ '%%partition': null }, 'uuid'), []);
    assert.deepEqual(quiet({ '%%user.custom_data.readPartitions': '%%partition' }, 'objectId'), []);
  });

  test('%function and %%partition are migration blockers (information) in partition sync only', () => {
    const { file, items } = analyze({ '%%true': { '%function': { name: 'canRead', arguments: ['%%partition'] } } }, 'partition-sync');
    const blockers = items.filter((d) => d.code === 'rule/migration-blocker');
    assert.deepEqual(blockers.map((d) => d.range), [rangeOf(file, '"%function"'), rangeOf(file, '"%%partition"')]);
    assert.ok(blockers.every((d) => d.severity === 'information'));
    assert.deepEqual(analyze({ '%%true': { '%function': { name: 'canRead' } } }, 'data-rule').items, []);
  });
});

describe('rule analysis: shapes and robustness', () => {
  test('an expression must be true, false or an object', () => {
    const cases: [unknown, string][] = [['yes', '"yes"'], [5, '5'], [null, 'null'], [[true], '[\n    true\n  ]']];
    for (const [value, snippet] of cases) {
      const { file, items } = analyze(value, 'data-rule');
      assert.deepEqual(only(items, 'rule/invalid-expression').range, rangeOf(file, snippet));
    }
    assert.deepEqual(codes(analyze({ $or: [{ '%%true': true }, 'x'] }, 'data-rule').items), ['rule/invalid-expression']);
  });

  test('a missing path yields nothing; broken JSON yields diagnostics but never throws', () => {
    assert.deepEqual(analyzeText('{"other": 1}', ['rule'], 'data-rule').items, []);
    const broken = analyzeText('{"rule": {"%%usr": , "$or": [ {"%%user.id": }', ['rule'], 'data-rule');
    assert.deepEqual(codes(broken.items), ['rule/unknown-expansion']);
  });

  test('nesting deeper than the limit is reported once', () => {
    let expression: unknown = { '%%user.id': 'a' };
    for (let i = 0; i < MAX_EXPRESSION_DEPTH + 10; i++) expression = { $and: [expression] };
    const { items } = analyze(expression, 'data-rule');
    assert.deepEqual(codes(items), ['rule/too-deep']);
  });

  test('ranges point into a real multi-line sync config', () => {
    const text = [
      '{"type": "partition", "state": "enabled",',
      ' "partition": {"key": "_partition", "type": "objectId",',
      '   "permissions": {',
      '     "read":  {"$or": [{"%%user.id": "%%partition"}, {"%%user.custom_data.shared": "%%partition"}]},',
      '     "write": {"%%usr.id": "%%partition"}}}}',
    ].join('\n');
    const read = analyzeText(text, ['partition', 'permissions', 'read'], 'partition-sync', { partitionType: 'objectId' });
    const d = only(read.items, 'rule/type-never-equal');
    assert.deepEqual(d.range, { start: { line: 3, character: 37 }, end: { line: 3, character: 50 } });
    const write = analyzeText(text, ['partition', 'permissions', 'write'], 'partition-sync');
    assert.deepEqual(only(write.items, 'rule/unknown-expansion').range, { start: { line: 4, character: 15 }, end: { line: 4, character: 25 } });
  });
});

describe('rule analysis: valid expressions from the specification', () => {
  const facts: ExpressionFacts = {
    functionNames: ['canRead', 'isAdmin'], partitionType: 'string', customDataFields: ['shared', 'readPartitions', 'level', 'team'],
    valueNames: ['adminIds', 'blockedUsers'], environmentValueNames: ['region'],
  };
  const valid: [ExpressionContext, unknown][] = [
    ['partition-sync', true],
    ['partition-sync', false],
    ['partition-sync', {}],
    ['partition-sync', { '%%true': true }],
    ['partition-sync', { '%%partition': 'PUBLIC' }],
    ['partition-sync', { '%%partition': { $in: ['a', 'b'] } }],
    ['partition-sync', { '%%user.id': '5f1f0a1b2c3d4e5f60718293' }],
    ['partition-sync', { '%%user.id': { $in: ['5f1f0a1b2c3d4e5f60718293', '5f1f0a1b2c3d4e5f60718294'] } }],
    ['partition-sync', { '%%user.custom_data.readPartitions': '%%partition' }],
    ['partition-sync', { '%%partition': { $ne: 'read-only' } }],
    ['partition-sync', { '%%true': { '%function': { name: 'canRead', arguments: ['%%partition'] } } }],
    ['partition-sync', { $or: [{ '%%user.id': '%%partition' }, { '%%user.custom_data.shared': '%%partition' }] }],
    ['partition-sync', { '%or': [{ '%%user.id': '%%partition' }, { '%%partition': { '%in': '%%values.adminIds' } }] }],
    ['partition-sync', { '%%user.custom_data.level': { '%and': [{ $gt: 0 }, { $lte: 42 }] } }],
    ['partition-sync', { '%%user.data.email': { $exists: true }, '%%environment.tag': 'production', '%%environment.values.region': 'eu' }],
    ['flexible-sync', { '%%user.custom_data.team': { $exists: true }, '%%user.type': { $ne: 'server' } }],
    ['data-rule', { '%%root.owner_id': '%%user.id' }],
    ['data-rule', { owner_id: '%%user.id', '%%prevRoot.status': { $ne: 'closed' }, '%%this': { $gt: '%%prev' } }],
    ['data-rule', { '%%user.id': { '%oidToString': '%%root.owner_id' } }],
    ['data-rule', { '%%request.httpMethod': { $in: ['GET', 'POST'] }, '%%true': { '%function': { name: 'isAdmin', arguments: ['%%user', { doc: '%%root' }] } } }],
    ['data-rule', { '%%user.identities.provider_type': 'custom-token' }],
    ['can-evaluate', {}],
    ['can-evaluate', { '%%user.id': { '%nin': '%%values.blockedUsers' }, '%%args.0': { $gte: 1 } }],
    ['filter', { owner_id: '%%user.id', status: { $in: ['open', 'closed'] }, $or: [{ team: '%%user.custom_data.team' }, { public: true }] }],
    ['filter', { owner_id: { '%stringToOid': '%%user.id' }, $expr: { $eq: ['$a', '$b'] } }],
  ];
  for (const [context, expression] of valid) {
    test(`${context}: ${JSON.stringify(expression)}`, () => {
      const { items } = analyze(expression, context, facts);
      assert.deepEqual(items.filter((d) => d.code !== 'rule/migration-blocker'), []);
    });
  }
});

describe('rule tables and completion', () => {
  test('every expansion and operator carries a description; operand shapes are declared', () => {
    assert.ok(EXPANSIONS.every((e) => e.label === `%%${e.name}` && e.description.length > 10));
    assert.ok(OPERATORS.every((o) => o.description.length > 10 && o.allowedIn.length > 0));
    assert.equal(OPERATORS_BY_NAME.get('$in')?.operand, 'array-or-expansion');
    assert.equal(OPERATORS_BY_NAME.get('%function')?.operand, 'function-call');
    assert.equal(OPERATORS_BY_NAME.get('%nor')?.documented, false);
  });

  test('expansions after %%, filtered by what is typed and by context', () => {
    const all = completionsAt('%%', {}).map((c) => c.label);
    assert.ok(all.includes('%%user') && all.includes('%%partition') && all.includes('%%root'));
    assert.deepEqual(completionsAt('%%p', {}).map((c) => c.label), ['%%partition', '%%prevRoot', '%%prev']);
    assert.deepEqual(completionsAt('%%p', {}, 'partition-sync').map((c) => c.label), ['%%partition']);
    const user = completionsAt('%%u', {})[0];
    assert.equal(user.kind, 'expansion');
    assert.match(user.documentation, /custom_data/);
  });

  test('members after %%user. and custom data fields after %%user.custom_data.', () => {
    assert.deepEqual(completionsAt('%%user.', {}).map((c) => c.label), ['%%user.id', '%%user.type', '%%user.data', '%%user.custom_data', '%%user.identities']);
    const fields = completionsAt('%%user.custom_data.t', { customDataFields: ['team', 'tier', 'level'] });
    assert.deepEqual(fields.map((c) => c.label), ['%%user.custom_data.team', '%%user.custom_data.tier']);
    assert.equal(fields[0].kind, 'field');
    assert.deepEqual(completionsAt('%%user.custom_data.', {}), []);
    assert.deepEqual(completionsAt('%%values.a', { valueNames: ['adminIds', 'other'] }).map((c) => c.label), ['%%values.adminIds']);
    assert.deepEqual(completionsAt('%%environment.values.', { environmentValueNames: ['region'] }).map((c) => c.label), ['%%environment.values.region']);
  });

  test('operators after $ or %', () => {
    const dollar = completionsAt('$', {}, 'data-rule').map((c) => c.label);
    assert.ok(dollar.includes('$in') && dollar.includes('$exists') && !dollar.includes('$regex') && dollar.every((l) => l.startsWith('$')));
    assert.ok(completionsAt('$', {}, 'filter').some((c) => c.label === '$regex'));
    assert.deepEqual(completionsAt('%st', {}).map((c) => c.label), ['%stringToOid', '%stringToUuid']);
    const percent = completionsAt('%', {}, 'flexible-sync').map((c) => c.label);
    assert.ok(percent.includes('%and') && percent.includes('%%user') && !percent.includes('%function'));
    assert.match(completionsAt('%no', {}).find((c) => c.label === '%not')!.detail, /undocumented/);
    assert.deepEqual(completionsAt('abc', {}), []);
  });

  test('hover text for operators and expansions', () => {
    assert.match(describeRuleToken('%stringToOid') ?? '', /conversion operator[\s\S]*ObjectId[\s\S]*%%user\.id/);
    assert.match(describeRuleToken('%nor') ?? '', /undocumented/);
    assert.match(describeRuleToken('%%user.custom_data.team') ?? '', /custom user data document[\s\S]*Part of `%%user`/);
    assert.match(describeRuleToken('%%partition') ?? '', /Partition-based sync permissions only/);
    assert.equal(describeRuleToken('%%usr'), undefined);
    assert.equal(describeRuleToken('owner_id'), undefined);
  });
});
