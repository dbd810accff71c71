// One fuzz case: which files of the example app to mutate (usually one, sometimes two or three), how,
// and where in each mutated file to ask for completion, hover and code actions.
import fc from 'fast-check';
import { applyMutation, mutationArbitrary, nodePools, type Mutation } from './mutations';
import type { RequestPoint } from './harness';

export interface FileMutation {
  rel: string;
  /** Applied in order; later ones see the text the earlier ones produced. */
  mutations: Mutation[];
  points: RequestPoint[];
}

export interface FuzzPlan {
  files: FileMutation[];
  /** Load and check with empty caches instead of the caches kept from earlier cases (as after a server restart). */
  freshCaches: boolean;
  schemaDocumentation: boolean;
}

/** Every key and string value the corpus's JSON files use: random keys and values are drawn mostly from these, so they mean something. */
export function vocabulary(corpus: ReadonlyMap<string, string>, jsonRels: readonly string[]): { keys: string[]; strings: string[] } {
  const keys = new Set<string>(), strings = new Set<string>();
  for (const rel of jsonRels) {
    for (const node of nodePools(corpus.get(rel)!).string) {
      const isKey = node.parent?.type === 'property' && node.parent.children?.[0] === node;
      (isKey ? keys : strings).add(String(node.value));
    }
  }
  return { keys: [...keys].sort(), strings: [...strings].sort() };
}

export function planArbitrary(corpus: ReadonlyMap<string, string>, jsonRels: readonly string[]): fc.Arbitrary<FuzzPlan> {
  const mutation = mutationArbitrary(vocabulary(corpus, jsonRels));
  // Files holding rule expressions or schemas are where most of the checks' logic runs; favour them.
  const withExpressions = jsonRels.filter((rel) => nodePools(corpus.get(rel)!).expression.length > 0);
  const withSchemas = jsonRels.filter((rel) => nodePools(corpus.get(rel)!).bsonType.length > 0);
  const rel = fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...jsonRels) },
    { weight: 1, arbitrary: fc.constantFrom(...withExpressions) },
    { weight: 1, arbitrary: fc.constantFrom(...withSchemas) },
  );
  const point: fc.Arbitrary<RequestPoint> = fc.oneof(
    { weight: 6, arbitrary: fc.nat().map((offset) => ({ offset })) },
    // Token edges are where completion and hover decide between key, value and string contexts.
    { weight: 6, arbitrary: fc.record({ node: fc.nat(), edge: fc.constantFrom<0 | 1 | 2 | 3>(0, 1, 2, 3) }) },
    { weight: 1, arbitrary: fc.constant({ offset: Number.MAX_SAFE_INTEGER }) },
    // A request computed against an older version of the document can point past its end.
    { weight: 1, arbitrary: fc.record({ line: fc.nat(300), character: fc.nat(300) }) },
  );
  const fileMutation = fc.record({
    rel,
    mutations: fc.array(mutation, { minLength: 1, maxLength: 2 }),
    points: fc.array(point, { minLength: 2, maxLength: 3 }),
  });
  return fc.record({
    files: fc.oneof(
      { weight: 4, arbitrary: fileMutation.map((f) => [f]) },
      { weight: 1, arbitrary: fc.uniqueArray(fileMutation, { minLength: 2, maxLength: 3, selector: (f) => f.rel }) },
    ),
    // Cold checks cost several times a warm one; one case in sixteen keeps the budget.
    freshCaches: fc.nat(15).map((n) => n === 0),
    schemaDocumentation: fc.boolean(),
  });
}

/** The corpus with the plan's mutations applied. */
export function mutatedCorpus(corpus: ReadonlyMap<string, string>, plan: FuzzPlan): Map<string, string> {
  const files = new Map(corpus);
  for (const f of plan.files) files.set(f.rel, f.mutations.reduce(applyMutation, files.get(f.rel)!));
  return files;
}

/**
 * Every key and string value of every JSON file replaced, one at a time, by a name that is also a member
 * of Object.prototype. Random strings almost never hit these; lookups in plain-object tables do.
 */
export function* prototypeNameSweep(corpus: ReadonlyMap<string, string>, jsonRels: readonly string[]): Generator<{ rel: string; text: string; offset: number; name: string }> {
  for (const rel of jsonRels) {
    const original = corpus.get(rel)!;
    for (const node of nodePools(original).string) {
      for (const name of ['constructor', '__proto__']) {
        yield { rel, name, offset: node.offset + 1, text: original.slice(0, node.offset) + JSON.stringify(name) + original.slice(node.offset + node.length) };
      }
    }
  }
}
