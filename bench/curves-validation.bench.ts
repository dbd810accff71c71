// Cost as the work grows (curve `validation`): full validation of a synthetic app of 100, 1,000 and
// 10,000 config files, time per file; goal: grows ≤ 2× from the smallest to the largest. Table printed,
// chart in bench/out/validation.svg, all curves in bench/out/index.html (fixtures/curves.ts).
// The measurements (fixtures/curves-validation-measure.ts) run bundled, as the language server ships.
// Run: node --import tsx bench/curves-validation.bench.ts
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { bundleForBench } from './fixtures/load';

void bundleForBench({ 'curves-validation-measure': 'bench/fixtures/curves-validation-measure.ts' }).then((dir) => {
  const { status, signal } = spawnSync(process.execPath, [path.join(dir, 'curves-validation-measure.js')], { stdio: 'inherit' });
  if (status !== 0) {
    console.error(`the validation curve ${signal ? `was killed by ${signal}` : `exited with code ${status}`}`);
    process.exitCode = 1;
  }
});
