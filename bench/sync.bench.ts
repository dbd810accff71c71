// Partition sync speed, each figure a rate, ratio or percentile measured in this run (issue 15):
//   1. simple permission expressions, compiled: evaluations per second                      goal ≥ 1M/s
//   2. opening a 10,000-document partition ÷ a plain store query returning the same documents  goal ≤ 1.5×
//   3. a write fanned out to 100 live feeds: p95 from the write's acknowledgement to the last feed's message  goal ≤ 10 ms
//   4. 10,000 / 100,000 documents inserted into a synced collection (one insertMany; single inserts) ÷ unsynced  goal ≤ 3×
// The measurements (fixtures/sync-measure.ts) run bundled with the product's build options, with the
// function worker beside them, as the runtime ships.
// Run: node --import tsx bench/sync.bench.ts
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { bundleForBench } from './fixtures/load';

void bundleForBench({ 'sync-measure': 'bench/fixtures/sync-measure.ts', 'function-process': 'runtime/functions/process.ts', 'function-worker': 'runtime/functions/worker.ts' }).then((dir) => {
  const { status, signal } = spawnSync(process.execPath, [path.join(dir, 'sync-measure.js')], { stdio: 'inherit' });
  if (status !== 0) {
    console.error(`the sync measurements ${signal ? `were killed by ${signal}` : `exited with code ${status}`}`);
    process.exitCode = 1;
  }
});
