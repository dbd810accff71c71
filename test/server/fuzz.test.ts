// Robustness: thousands of mutated versions of the example app (truncated, retyped, random keys and rule
// expressions, odd bsonTypes, unicode, huge strings, deep nesting) go through loading, the checks and the
// language features. Nothing may throw, every returned range must lie inside its document, and no call
// may take a second. ASL_FUZZ_RUNS and ASL_FUZZ_SEED change the run; a failure prints the seed and the
// ASL_FUZZ_PATH that replays just the failing case.
//
// Open bugs the fuzzer has found are listed in KNOWN_BUGS: while open, the fuzz runs count their hits
// instead of failing, and each has a minimal regression case below marked `todo`. Fixing one means
// deleting its entry and the `todo` marker, so that the fuzzer guards it again.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { getNodeValue } from 'jsonc-parser';
import { checkApp } from '../../core/check';
import { loadApp } from '../../core/load';
import { toLspDiagnostic } from '../../server/convert';
import { codeActions } from '../../server/features/codeActions';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';
import { loadedApp } from './features-fixtures';
import { jsonFilesOf, readExampleApp } from './fuzz/corpus';
import { Exerciser, type FuzzFailure } from './fuzz/harness';
import { applyMutation, nodePools, type MutationFamily } from './fuzz/mutations';
import { mutatedCorpus, planArbitrary, prototypeNameSweep, type FuzzPlan } from './fuzz/plan';

const SEED = Number(process.env.ASL_FUZZ_SEED ?? 20261122);
const RUNS = Number(process.env.ASL_FUZZ_RUNS ?? 10_000);
/** fast-check's replay path of a failure (printed with it): reruns just that case. */
const REPLAY_PATH = process.env.ASL_FUZZ_PATH;

interface KnownBug { todo: string; matches: (failure: FuzzFailure) => boolean }

/** None open now: the five the fuzzer found are fixed and guarded by the regression cases below. */
const KNOWN_BUGS: Record<string, KnownBug> = {};

function knownBug(failure: FuzzFailure): string | undefined {
  return Object.entries(KNOWN_BUGS).find(([, bug]) => bug.matches(failure))?.[0];
}

const corpus = readExampleApp();
const jsonRels = jsonFilesOf(corpus);

describe('fuzzing the checks and language features with mutated example apps', () => {
  test(`${RUNS} random mutated apps: no exception, every range inside its document, every call under 1 s`, { timeout: 10 * 60_000 }, async (t) => {
    t.diagnostic(`seed ${SEED}, runs ${RUNS} (set ASL_FUZZ_SEED / ASL_FUZZ_RUNS to change)`);
    const exerciser = new Exerciser(knownBug);
    const families = new Map<MutationFamily, number>();
    let versions = 0, multiFile = 0;
    const started = performance.now();
    const outcome = await fc.check(fc.asyncProperty(planArbitrary(corpus, jsonRels), async (plan: FuzzPlan) => {
      versions++;
      if (plan.files.length > 1) multiFile++;
      for (const f of plan.files) for (const m of f.mutations) families.set(m.family, (families.get(m.family) ?? 0) + 1);
      const label = plan.files.map((f) => `${f.rel} (${f.mutations.map((m) => m.family).join(' + ')})`).join(', ') + (plan.freshCaches ? ', cold' : '');
      await exerciser.run(mutatedCorpus(corpus, plan), plan.files, { ...plan, label });
    }), { seed: SEED, numRuns: RUNS, ...(REPLAY_PATH ? { path: REPLAY_PATH } : {}) });
    if (outcome.failed) {
      assert.fail([
        `after ${outcome.numRuns} runs (shrunk ${outcome.numShrinks} times): ${(outcome.errorInstance as Error)?.message ?? outcome.errorInstance}`,
        `replay: ASL_FUZZ_SEED=${SEED} ASL_FUZZ_PATH=${outcome.counterexamplePath}`,
        `counterexample: ${JSON.stringify(outcome.counterexample).slice(0, 4000)}`,
      ].join('\n'));
    }
    assert.ok(versions >= (REPLAY_PATH ? 1 : RUNS));
    t.diagnostic(`${versions} app versions (${multiFile} with 2–3 files mutated) in ${((performance.now() - started) / 1000).toFixed(1)} s, ${exerciser.timings.calls} timed calls`);
    t.diagnostic(`mutations: ${[...families].sort().map(([f, n]) => `${f} ${n}`).join(', ')}`);
    t.diagnostic(`slowest: ${exerciser.timings.summary()}`);
    if (exerciser.knownBugHits.size) t.diagnostic(`open bugs hit: ${[...exerciser.knownBugHits].map(([bug, n]) => `${bug} ×${n}`).join(', ')}`);
  });

  test('every key and string value renamed to an Object.prototype member, one at a time', { timeout: 5 * 60_000 }, async (t) => {
    const exerciser = new Exerciser(knownBug);
    let versions = 0;
    for (const { rel, text, offset, name } of prototypeNameSweep(corpus, jsonRels)) {
      versions++;
      const files = new Map(corpus).set(rel, text);
      try {
        await exerciser.run(files, [{ rel, points: [{ offset }, { offset: offset + name.length }, { node: 0, edge: 1 }] }]);
      } catch (e) {
        assert.fail(`${rel} with "${name}" at offset ${offset - 1}: ${(e as Error).message}`);
      }
    }
    assert.ok(versions > 1000, `the sweep covers the corpus (${versions} versions)`);
    t.diagnostic(`${versions} app versions; slowest: ${exerciser.timings.summary()}`);
    if (exerciser.knownBugHits.size) t.diagnostic(`open bugs hit: ${[...exerciser.knownBugHits].map(([bug, n]) => `${bug} ×${n}`).join(', ')}`);
  });
});

describe('the mutators', () => {
  const validJson = fc.constantFrom(...jsonRels).filter((rel) => corpus.get(rel)!.trim() !== '');
  const parsed = (text: string) => JSON.parse(text) as unknown;
  const size = (value: unknown): number => (Array.isArray(value) ? value.reduce<number>((n, v) => n + 1 + size(v), 0)
    : value && typeof value === 'object' ? Object.values(value).reduce<number>((n, v) => n + 1 + size(v), 0) : 0);

  test('removing a member keeps valid JSON valid and removes exactly that member', () => {
    fc.assert(fc.property(validJson, fc.nat(), (rel, pick) => {
      const text = corpus.get(rel)!;
      const members = nodePools(text).member;
      const after = parsed(applyMutation(text, { family: 'remove-member', kind: 'remove-member', pick }));
      if (!members.length) return assert.deepEqual(after, parsed(text));
      const member = members[pick % members.length];
      const value = getNodeValue(member.type === 'property' ? member.children![1] : member);
      assert.equal(size(parsed(text)) - size(after), 1 + size(value), `${rel}: member ${pick % members.length}`);
    }));
  });

  test('retyping replaces a value with one of another JSON type', () => {
    fc.assert(fc.property(validJson, fc.nat(), fc.nat(), (rel, pick, start) => {
      const text = corpus.get(rel)!;
      const candidates = { string: '"s"', number: '1', boolean: 'true', null: 'null', array: '[]', object: '{}' } as const;
      const after = applyMutation(text, { family: 'retype', kind: 'retype-node', pool: 'value', pick, candidates, start });
      const node = nodePools(text).value[pick % nodePools(text).value.length];
      const replacement = after.slice(node.offset, node.offset + after.length - text.length + node.length);
      assert.notEqual(nodePools(replacement).value[0]?.type, node.type);
      parsed(after);
    }));
  });

  test('an inserted key with a JSON value keeps the file valid JSON and holds that value', () => {
    fc.assert(fc.property(validJson, fc.nat(), fc.string(), fc.jsonValue(), (rel, pick, key, value) => {
      const after = applyMutation(corpus.get(rel)!, { family: 'random-key', kind: 'insert-key', pick, key, text: JSON.stringify(value) });
      parsed(after);
      const inserted = nodePools(after).object.map((o) => o.children?.[0]).find((p) => p?.children?.[0]?.value === key);
      assert.ok(inserted, `${rel}: no object starts with ${JSON.stringify(key)}`);
      // jsonc-parser builds null-prototype objects; compare the JSON.
      assert.equal(JSON.stringify(getNodeValue(inserted.children![1])), JSON.stringify(value));
    }));
  });
});

describe('regressions found by fuzzing', () => {
  /** A partition-sync app whose Task schema declares the partition key with `bsonType`. */
  function partitionSyncApp(partitionType: string, bsonType: string): Record<string, unknown> {
    const files = baseApp();
    files['sync/config.json'] = {
      type: 'partition', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'todo',
      partition: { key: '_partition', type: partitionType, permissions: { read: true, write: true } },
    };
    const schema = files['data_sources/mongodb-atlas/todo/Task/schema.json'] as { properties: Record<string, unknown> };
    schema.properties._partition = { bsonType };
    return files;
  }

  test('a title fix in a one-line resolver whose untitled payload nests 120 levels deep', async () => {
    const rel = 'graphql/custom_resolvers/mutation_renameTask.json';
    const nested = (depth: number): unknown => (depth === 0 ? 'x' : { a: nested(depth - 1) });
    const files = baseApp();
    files[rel] = JSON.stringify({ ...(files[rel] as object), payload_type_format: 'custom', payload_type: { bsonType: 'object', properties: { n: { bsonType: 'string' } }, deep: nested(120) } });
    const app = await loadedApp(files);
    const file = app.model.files.get(path.join(APP_ROOT, rel))!;
    const actions = codeActions(app, file, app.diagnostics.filter((d) => d.file === file.path).map(toLspDiagnostic));
    assert.ok(actions.some((a) => a.title === 'Add "title": "RenameTaskPayload"'), actions.map((a) => a.title).join(', '));
  });

  test('partition.type naming an Object.prototype member is reported as an invalid type', async () => {
    for (const name of ['constructor', '__proto__', 'toString']) {
      const model = await loadApp(appFs(partitionSyncApp(name, 'string')), APP_ROOT);
      const diagnostics = checkApp(model);
      assert.ok(diagnostics.some((d) => d.file.endsWith('sync/config.json') && d.code === 'schema/enum'), `${name}: ${diagnostics.map((d) => d.code).join(', ')}`);
    }
  });

  // Beyond the fuzzer's few hundred levels, found by probing the same harness at greater depths.
  // The depth at which the stack overflows depends on how far the JIT has optimised the recursion, so these use depths well past it.
  test('a file nested 100,000 levels deep is reported, not thrown on', async () => {
    const files = baseApp();
    files['auth/providers.json'] = '['.repeat(100_000) + ']'.repeat(100_000);
    const model = await loadApp(appFs(files), APP_ROOT);
    const diagnostics = checkApp(model);
    assert.ok(diagnostics.some((d) => d.file.endsWith('auth/providers.json') && d.severity === 'error'), diagnostics.map((d) => d.code).join(', '));
  });

  test('a schema whose properties nest 1,200 levels deep is checked or reported as too deep to check, never thrown on', async () => {
    const files = baseApp();
    const nestedSchema = (depth: number): unknown => (depth === 0 ? { bsonType: 'string' } : { bsonType: 'object', title: `Level${depth}`, properties: { p: nestedSchema(depth - 1) } });
    const rel = 'data_sources/mongodb-atlas/todo/Task/schema.json';
    const schema = files[rel] as { properties: Record<string, unknown> };
    schema.properties.deep = nestedSchema(1200);
    // Compact: indented, this file would pass the loader's size limit.
    files[rel] = JSON.stringify(schema);
    const app = await loadedApp(files);
    // The schema is valid. Whether the validator can walk 1,200 levels depends on the stack left and on how far
    // the JIT has optimised its recursion, so both outcomes are right; a thrown RangeError never is.
    const codes = app.diagnostics.map((d) => `${d.severity} ${d.code}`);
    assert.ok(codes.length === 0 || (codes.length === 1 && codes[0] === 'warning schema/too-deep'), codes.join(', '));
  });

  test('a partition key declared with a bsonType named like an Object.prototype member gets no partition.type fix', async () => {
    for (const name of ['constructor', '__proto__']) {
      const app = await loadedApp(partitionSyncApp('string', name));
      const file = app.model.files.get(path.join(APP_ROOT, 'data_sources/mongodb-atlas/todo/Task/schema.json'))!;
      const mismatch = app.diagnostics.filter((d) => d.file === file.path && d.code === 'sync/partition-type-mismatch');
      assert.equal(mismatch.length, 1, name);
      const titles = codeActions(app, file, mismatch.map(toLspDiagnostic)).map((a) => a.title);
      assert.deepEqual(titles, ['Change bsonType to "string" to match partition.type'], name);
    }
  });
});
