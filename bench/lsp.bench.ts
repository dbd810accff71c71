// Language server speed on a synthetic app of about 1,000 config files, each figure a ratio or a
// percentile measured in this run (issue 3):
//   1. full validation (load + every check) ÷ reading and jsonc-parsing the same files   goal ≤ 1.5
//   2. edit-to-diagnostics p95 for one file (the workspace's reload after an edit)      goal ≤ 10 ms
//   3. completion p95 inside a rule expression                                         goal ≤ 5 ms
//   4. GraphQL diagnostics after an edit p95, 1,000-line .graphql file, over LSP with dist/server.js
//      (bench/lsp-graphql-wire.ts; the handler alone in process: bench/lsp-graphql.ts)       goal ≤ 15 ms
//   5. GraphQL completion p95 in the same file                                          goal ≤ 5 ms
// The measurements (fixtures/lsp-measure.ts) run bundled with the product's build options, as the language
// server ships (dist/server.js).
// Run: node --import tsx bench/lsp.bench.ts
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { bundleForBench } from './fixtures/load';

void bundleForBench({ 'lsp-measure': 'bench/fixtures/lsp-measure.ts' }).then((dir) => {
  const { status, signal } = spawnSync(process.execPath, [path.join(dir, 'lsp-measure.js')], { stdio: 'inherit' });
  if (status !== 0) {
    console.error(`the LSP measurements ${signal ? `were killed by ${signal}` : `exited with code ${status}`}`);
    process.exitCode = 1;
  }
});
