// Language server speed on a synthetic app of about 1,000 config files, each figure a ratio or a
// percentile measured in this run (issue 3):
//   1. full validation (load + every check) ÷ reading and jsonc-parsing the same files   goal ≤ 4
//   2. edit-to-diagnostics p95 for one file (the workspace's reload after an edit)      goal ≤ 15 ms
//   3. completion p95 inside a rule expression                                         goal ≤ 5 ms
// Run: node --import tsx bench/lsp.bench.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseTree } from 'jsonc-parser';
import { checkApp } from '../core/check';
import { nodeFileSystem } from '../core/fs';
import { loadApp } from '../core/load';
import { AppWorkspace } from '../server/workspace';
import { writeSyntheticApp } from './synthetic-app';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-lsp-'));
const app = writeSyntheticApp(root);
console.log(`synthetic app: ${app.files} config files in ${root}`);

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function jsonFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...jsonFiles(p)); else if (e.name.endsWith('.json')) out.push(p);
  }
  return out;
}

async function readAndParse(): Promise<number> {
  const start = performance.now();
  for (const file of jsonFiles(root)) parseTree(await fs.promises.readFile(file, 'utf8'));
  return performance.now() - start;
}

async function fullValidation(): Promise<number> {
  const start = performance.now();
  checkApp(await loadApp(nodeFileSystem, root));
  return performance.now() - start;
}

async function main(): Promise<void> {
  // Warm both paths (JIT, schema compilation) before measuring; then take the median of several runs.
  await readAndParse(); await fullValidation();
  const parseTimes: number[] = [];
  const validateTimes: number[] = [];
  for (let i = 0; i < 5; i++) { parseTimes.push(await readAndParse()); validateTimes.push(await fullValidation()); }
  const parse = percentile(parseTimes, 50);
  const validate = percentile(validateTimes, 50);
  const ratio = validate / parse;
  console.log(`1. full validation ${validate.toFixed(1)} ms ÷ read+parse ${parse.toFixed(1)} ms = ${ratio.toFixed(2)} (goal ≤ 4) ${ratio <= 4 ? 'MET' : 'NOT MET'}`);

  const workspace = new AppWorkspace(nodeFileSystem, { cacheDisk: true });
  await workspace.setFolders([root]);
  const edits: number[] = [];
  for (let i = 0; i < 120; i++) {
    const file = app.resolverFiles[i % app.resolverFiles.length];
    const text = fs.readFileSync(file, 'utf8').replace(/"function_name": "[^"]*"/, `"function_name": "fn${i % 7 === 0 ? 'missing' : i % app.resolverFiles.length}"`);
    const start = performance.now();
    workspace.setOpenText(file, text);
    await workspace.fileChanged(file, 'changed');
    const loaded = workspace.appOf(file)!;
    AppWorkspace.byFile(loaded.diagnostics);
    edits.push(performance.now() - start);
  }
  const editP95 = percentile(edits.slice(20), 95);
  console.log(`2. edit-to-diagnostics p95 ${editP95.toFixed(2)} ms over ${edits.length - 20} edits (goal ≤ 15 ms) ${editP95 <= 15 ? 'MET' : 'NOT MET'}`);

  const completion = await import('../server/features/completion').catch(() => undefined);
  if (!completion) {
    console.log('3. completion p95: not measured (server/features/completion is not built)');
  } else {
    const { completionP95 } = await import('./lsp-completion');
    const p95 = await completionP95(workspace, app.syncFile);
    console.log(`3. completion p95 inside a rule expression ${p95.toFixed(3)} ms (goal ≤ 5 ms) ${p95 <= 5 ? 'MET' : 'NOT MET'}`);
  }
  fs.rmSync(root, { recursive: true, force: true });
}

main().catch((e) => { console.error(e); process.exitCode = 1; });
