// GraphQL latencies of the language server in a 1,000-line .graphql file against the synthetic app's schema,
// computed as the server's handlers do (server/features/graphql.ts, with its per-text document cache):
//   - diagnostics after an edit: find the documents of the new text, validate them (also for an edit that
//     breaks the syntax, without a goal);
//   - completion: the documents of the unchanged text (cached), then graphql-language-service's suggestions.
import { performance } from 'node:perf_hooks';
import { GraphqlDocuments, graphqlCompletion, graphqlDiagnostics } from '../server/features/graphql';
import { indexOf } from '../server/features/appIndex';
import type { LoadedApp } from '../server/workspace';

export interface GraphqlLatencies {
  lines: number;
  diagnosticsP95: number;
  completionP95: number;
  /** The same p95s in CPU time of this process: on a busy machine, wall time also counts waiting for a core. */
  diagnosticsCpuP95: number;
  completionCpuP95: number;
  errorsSeen: number;
  /** Diagnostics after an edit that leaves the text not parsing (typing `(` on the middle line): no goal. */
  syntaxErrorP95: number;
}

/** About ten lines per operation, each over one collection and its custom resolver. */
export function thousandLineQueries(collections: number): string {
  const lines: string[] = [];
  for (let i = 0; lines.length < 1000; i++) {
    const c = i % collections;
    lines.push(
      `query Items${i}($partition: String, $limit: Int = 20) {`,
      `  coll${c}s(query: { _partition: $partition, count_gt: 3, tags_in: ["a", "b"] }, limit: $limit, sortBy: NAME_ASC) {`,
      '    _id',
      '    name',
      '    when',
      '    nested { a b }',
      '    other { _id name }',
      '  }',
      `  resolver${c}(input: { name: "x${i}" }) { name }`,
      '}',
    );
  }
  return lines.slice(0, 1000).join('\n') + '\n';
}

/** Wall and CPU milliseconds of one call. */
function timed<T>(fn: () => T): { result: T; wall: number; cpu: number } {
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  const result = fn();
  const wall = performance.now() - start;
  const cpu = process.cpuUsage(cpuStart);
  return { result, wall, cpu: (cpu.user + cpu.system) / 1000 };
}

function p95(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.ceil(0.95 * sorted.length) - 1];
}

export function graphqlLatencies(app: LoadedApp, collections: number): GraphqlLatencies {
  const schema = indexOf(app).generated.schema;
  const documents = new GraphqlDocuments();
  const uri = 'file:///bench/queries.graphql';
  const original = thousandLineQueries(collections);
  const lines = original.split('\n');
  // Edits on the middle line's field, each a text not seen before (so nothing of the edited definition is
  // cached): alternately a valid aliased field and a misspelt one (an error to report).
  const editLine = lines.findIndex((l, i) => i >= 500 && l === '    name');
  let errorsSeen = 0;
  const diagnostics: number[] = [];
  const diagnosticsCpu: number[] = [];
  for (let i = 0; i < 220; i++) {
    const edited = [...lines];
    edited[editLine] = i % 2 ? `    nam${i}` : `    n${i}: name`;
    const text = edited.join('\n');
    const { result, wall, cpu } = timed(() => graphqlDiagnostics(schema, documents.of(uri, text)));
    diagnostics.push(wall);
    diagnosticsCpu.push(cpu);
    if (result.length) errorsSeen++;
  }
  // Typing inside a field leaves the text not parsing until the closing character comes.
  const syntaxErrors: number[] = [];
  for (let i = 0; i < 120; i++) {
    const edited = [...lines];
    edited[editLine] = `    name${i}(`;
    const text = edited.join('\n');
    const { result, wall } = timed(() => graphqlDiagnostics(schema, documents.of(uri, text)));
    syntaxErrors.push(wall);
    if (result.length !== 1 || !/^Syntax Error/.test(result[0].message)) throw new Error(`expected one syntax error, saw ${JSON.stringify(result)}`);
  }
  const completionLine = lines.findIndex((l, i) => i >= 500 && l === '    nested { a b }');
  const position = { line: completionLine, character: '    nested { '.length };
  const completion: number[] = [];
  const completionCpu: number[] = [];
  documents.of(uri, original);
  for (let i = 0; i < 600; i++) {
    const { result: items, wall, cpu } = timed(() => graphqlCompletion(schema, documents.of(uri, original), position));
    completion.push(wall);
    completionCpu.push(cpu);
    if (i === 0 && !items?.some((item) => item.label === 'b')) throw new Error(`completion did not offer the embedded fields: ${JSON.stringify(items?.map((x) => x.label))}`);
  }
  return {
    lines: lines.length - 1, errorsSeen,
    diagnosticsP95: p95(diagnostics.slice(20)), completionP95: p95(completion.slice(100)),
    diagnosticsCpuP95: p95(diagnosticsCpu.slice(20)), completionCpuP95: p95(completionCpu.slice(100)),
    syntaxErrorP95: p95(syntaxErrors.slice(20)),
  };
}
