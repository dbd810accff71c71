import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Long, ObjectId, UUID } from 'bson';
import { Query } from 'mingo';
import { JsonFile } from '../../core/json';
import { DiagnosticSink } from '../../core/diagnostics';
import {
  analyzeExpression, evaluateExpression, expandExpressionToQuery, EXPANSIONS, EXPRESSION_CONTEXTS, OPERATORS,
  type EvaluationEnv, type RuleEvaluationError,
} from '../../core/rules';

/** Keys drawn mostly from the language's own vocabulary, so generated values reach deep into the analysis. */
const vocabularyKey = fc.oneof(
  fc.constantFrom(...EXPANSIONS.map((e) => e.label), ...OPERATORS.map((o) => o.name)),
  fc.constantFrom('%%user.id', '%%user.custom_data.team', '%%user.identities.provider_type', '%%values.list', '%%root.owner', '%%usr.id', '%%', 'name', 'arguments', 'owner_id', '__proto__', 'constructor'),
  fc.string(),
);

const vocabularyString = fc.oneof(
  fc.constantFrom('%%partition', '%%user.id', '%%user.custom_data.team', '%%values.list', '%%args.0', '%%prev', '%%nope.x', 'PUBLIC', '5f1f0a1b2c3d4e5f60718293', '0f8fad5b-d9cb-469f-a165-70867728950e'),
  fc.string(),
);

const { expression } = fc.letrec((tie) => ({
  expression: fc.oneof(
    { depthSize: 'small' },
    fc.boolean(),
    fc.constant(null),
    fc.integer(),
    fc.double(),
    vocabularyString,
    fc.array(tie('expression'), { maxLength: 4 }),
    fc.dictionary(vocabularyKey, tie('expression'), { maxKeys: 4 }),
  ),
}));

const anyJson = fc.oneof(fc.jsonValue(), expression);

function env(functionFails: boolean, errors: RuleEvaluationError[]): EvaluationEnv {
  return {
    user: { id: '5f1f0a1b2c3d4e5f60718293', type: 'normal', custom_data: { team: ['a', 'PUBLIC'], nested: { list: [1, Long.fromNumber(2)] } }, identities: [{ provider_type: 'anon-user' }] },
    partition: new ObjectId('5f1f0a1b2c3d4e5f60718293'),
    root: { owner: 'x', id: new UUID('0f8fad5b-d9cb-469f-a165-70867728950e'), at: new Date(0) },
    values: { list: ['PUBLIC', 1] },
    environment: { tag: 'qa', values: {} },
    request: { httpMethod: 'GET' },
    args: [1, 'two'],
    callFunction: async (name, args) => {
      if (functionFails) throw new Error(`failed ${name}`);
      return args.length > 0;
    },
    onError: (error) => errors.push(error),
  };
}

describe('rules never throw', () => {
  test('analysis of any JSON value, in every context, yields diagnostics with ranges inside the file', () => {
    fc.assert(fc.property(anyJson, fc.constantFrom(...EXPRESSION_CONTEXTS), fc.boolean(), (value, context, withFacts) => {
      const text = JSON.stringify({ rule: value }, null, 1);
      const file = new JsonFile('/x.json', 'x.json', text);
      const sink = new DiagnosticSink();
      const facts = withFacts ? { functionNames: ['f'], partitionType: 'objectId' as const, customDataFields: ['team'], valueNames: ['list'], environmentValueNames: [] } : {};
      analyzeExpression(file, ['rule'], context, facts, sink);
      const end = file.positionAt(text.length);
      for (const d of sink.items) {
        assert.ok(d.code.startsWith('rule/'));
        assert.ok(d.range.start.line < end.line || (d.range.start.line === end.line && d.range.start.character <= end.character));
      }
    }), { numRuns: 400 });
  });

  test('analysis of arbitrary (mostly broken) text never throws', () => {
    fc.assert(fc.property(fc.string(), fc.constantFrom(...EXPRESSION_CONTEXTS), (text, context) => {
      const file = new JsonFile('/x.json', 'x.json', `{"rule": ${text}`);
      analyzeExpression(file, ['rule'], context, { functionNames: [], customDataFields: [] }, new DiagnosticSink());
    }), { numRuns: 300 });
  });

  test('evaluation of any value resolves to a boolean', async () => {
    await fc.assert(fc.asyncProperty(anyJson, fc.boolean(), async (value, functionFails) => {
      const errors: RuleEvaluationError[] = [];
      const result = await evaluateExpression(value, env(functionFails, errors));
      assert.equal(typeof result, 'boolean');
      assert.ok(errors.every((e) => e.reason !== 'internal'), JSON.stringify(errors));
    }), { numRuns: 400 });
  });

  test('query expansion of any value resolves to a query object', async () => {
    await fc.assert(fc.asyncProperty(anyJson, fc.boolean(), async (value, functionFails) => {
      const errors: RuleEvaluationError[] = [];
      const query = await expandExpressionToQuery(value, env(functionFails, errors));
      assert.ok(typeof query === 'object' && query !== null && !Array.isArray(query));
      assert.ok(errors.every((e) => e.reason !== 'internal'), JSON.stringify(errors));
    }), { numRuns: 300 });
  });

  test('very deep nesting is false for evaluation and reported by analysis', async () => {
    let deep: unknown = { '%%true': true };
    for (let i = 0; i < 5000; i++) deep = i % 2 ? { $or: [deep] } : { '%%true': deep };
    const errors: RuleEvaluationError[] = [];
    assert.equal(await evaluateExpression(deep, { onError: (e) => errors.push(e) }), false);
    assert.ok(errors.some((e) => e.reason === 'too-deep'));
    const query = await expandExpressionToQuery(deep, {});
    assert.deepEqual(new Query(query).find([{ a: 1 }, {}]).all(), [], 'a too deep filter matches nothing');

    let text = '{"%%true": true}';
    for (let i = 0; i < 1000; i++) text = `{"$and": [${text}]}`;
    const file = new JsonFile('/x.json', 'x.json', `{"rule": ${text}}`);
    const sink = new DiagnosticSink();
    analyzeExpression(file, ['rule'], 'data-rule', {}, sink);
    assert.deepEqual(sink.items.map((d) => d.code), ['rule/too-deep']);
  });
});
