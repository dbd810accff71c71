// Creating an app from a template (read the template, fill in the new app's ids, write backend/ and
// frontend/<id>/) ÷ copying the same files with fs.cp, for all 13 templates per round. Rounds alternate
// the two kinds on the same disk; the figure is the median of the per-round ratios.
// Run: node --import tsx bench/templates.bench.ts [--rounds N]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { nodeFileSystem, nodeFileWriter } from '../core/fs';
import { TEMPLATES, createFromTemplate } from '../core/templates';
import { bundledTemplates } from '../runtime/templates';
import { goalLine, median, option } from './fixtures/load';

const ROUNDS = option('rounds', 30);
const GOAL = 3;
const source = bundledTemplates();
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-templates-'));
/** The baseline's sources: each template's created app, as files on disk. */
const originals = path.join(work, 'originals');

function countFiles(dir: string): number {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).length;
}

async function createAll(round: number): Promise<number> {
  const started = performance.now();
  await Promise.all(TEMPLATES.map((t, i) =>
    createFromTemplate(source, nodeFileSystem, nodeFileWriter, { templateId: t.id, name: `App${i}`, parentDir: path.join(work, `create-${round}`, t.id) })));
  return performance.now() - started;
}

async function copyAll(round: number): Promise<number> {
  const started = performance.now();
  await Promise.all(TEMPLATES.map((t) => fs.promises.cp(path.join(originals, t.id), path.join(work, `copy-${round}`, t.id), { recursive: true })));
  return performance.now() - started;
}

async function main(): Promise<void> {
  for (const t of TEMPLATES) {
    await createFromTemplate(source, nodeFileSystem, nodeFileWriter, { templateId: t.id, name: `App${TEMPLATES.indexOf(t)}`, parentDir: path.join(originals, t.id) });
  }
  const fileCount = TEMPLATES.reduce((n, t) => n + countFiles(path.join(originals, t.id)), 0);

  // Warm-up: the page cache and the JIT, for both kinds.
  for (let i = 0; i < 3; i++) { await createAll(-1 - i); await copyAll(-1 - i); }

  const ratios: number[] = [];
  const created: number[] = [];
  const copied: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let createMs: number;
    let copyMs: number;
    if (round % 2 === 0) { createMs = await createAll(round); copyMs = await copyAll(round); } else { copyMs = await copyAll(round); createMs = await createAll(round); }
    created.push(createMs);
    copied.push(copyMs);
    ratios.push(createMs / copyMs);
    fs.rmSync(path.join(work, `create-${round}`), { recursive: true, force: true });
    fs.rmSync(path.join(work, `copy-${round}`), { recursive: true, force: true });
  }
  fs.rmSync(work, { recursive: true, force: true });

  console.log(`templates: ${TEMPLATES.length} apps, ${fileCount} files per round, ${ROUNDS} rounds (order alternating)`);
  console.log(`create from template: median ${median(created).toFixed(1)} ms per round; fs.cp of the same files: median ${median(copied).toFixed(1)} ms`);
  console.log(goalLine('creating apps from templates ÷ fs.cp of the same files (median of per-round ratios)', median(ratios), '<=', GOAL));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
