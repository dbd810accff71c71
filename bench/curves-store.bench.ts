// Cost as the work grows (curves `store-memory` and `store-open`): the embedded store holding 100,000 and
// 1,000,000 documents (the graphql benchmark's item shape, an index on `owner`):
//   store-memory: the RSS an opened store adds (after a full garbage collection) ÷ the documents' BSON size
//   store-open:   opening the store (replaying its files into memory) ÷ reading the same files, back to back,
//                 in CPU time (process.cpuUsage: on the shared machine one open's wall time moves 2× with
//                 the load, its CPU time does not); the wall times are printed beside
// Goal for each: grows ≤ 2× from 100k to 1M. Every reading is a fresh bundled child process
// (fixtures/curves-store-measure.ts), the sizes alternating round by round; medians of the rounds.
// Tables printed, charts in bench/out/, all curves in bench/out/index.html (fixtures/curves.ts).
// Run: node --import tsx bench/curves-store.bench.ts [--rounds 3]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { median, reportCurve, runStoreJob } from './fixtures/curves';
import { bundleForBench, option } from './fixtures/load';

const SIZES = [100_000, 1_000_000];
const ROUNDS = option('rounds', 3);
/**
 * Rounds stop early (at least one per size) when the next would end past this: bench/run.mjs ends a
 * benchmark at 6 minutes, and on a loaded machine one open of 1M documents can take over a minute.
 */
const BUDGET_MS = 5 * 60 * 1000;

interface OpenReading { fileBytes: number; readMs: number; readCpuMs: number; openMs: number; openCpuMs: number; rssBefore: number; rssAfter: number; heapAfter: number }

async function main(): Promise<void> {
  const started = performance.now();
  const script = path.join(await bundleForBench({ 'curves-store-measure': 'bench/fixtures/curves-store-measure.ts' }), 'curves-store-measure.js');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-curves-store-'));
  try {
    const stores = SIZES.map((documents) => {
      const dir = path.join(root, `store-${documents}`);
      const { bsonBytes } = runStoreJob<{ bsonBytes: number }>(script, 'seed', dir, documents);
      return { documents, dir, bsonBytes, readings: [] as OpenReading[] };
    });
    let rounds = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const roundStart = performance.now();
      for (const store of round % 2 === 0 ? stores : [...stores].reverse()) store.readings.push(runStoreJob<OpenReading>(script, 'open', store.dir, store.documents));
      rounds++;
      const now = performance.now();
      if (round + 1 < ROUNDS && now + (now - roundStart) - started > BUDGET_MS) {
        console.log(`rounds cut to ${rounds} of ${ROUNDS}: another (${((now - roundStart) / 1000).toFixed(0)} s) would end past ${BUDGET_MS / 60000} minutes, near bench/run.mjs's 6-minute limit (machine load ${os.loadavg()[0].toFixed(1)})`);
        break;
      }
    }
    const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
    const memory = stores.map((s) => s.readings.map((r) => (r.rssAfter - r.rssBefore) / s.bsonBytes));
    reportCurve({
      name: 'store-memory', title: 'Embedded store memory: RSS added by an opened store ÷ the documents\' BSON size', workLabel: 'documents', costUnit: 'MB RSS added', perUnitLabel: 'RSS ÷ BSON size',
      points: stores.map((s, i) => ({
        work: s.documents, cost: median(s.readings.map((r) => (r.rssAfter - r.rssBefore) / 2 ** 20)), perUnit: median(memory[i]!), rounds: memory[i]!,
        note: `BSON ${mb(s.bsonBytes)}, files ${mb(s.readings[0]!.fileBytes)}; JS heap after ${mb(median(s.readings.map((r) => r.heapAfter)))}`,
      })),
      note: `A fresh process per reading opens the store (durability os) and counts its documents; RSS after a full garbage collection minus RSS before opening, divided by the sum of the documents' BSON sizes (bson calculateObjectSize). Rows: the median of ${rounds} readings.`,
    });
    const openRatios = stores.map((s) => s.readings.map((r) => r.openCpuMs / r.readCpuMs));
    reportCurve({
      name: 'store-open', title: 'Embedded store open time ÷ reading its files (CPU time)', workLabel: 'documents', costUnit: 'ms of CPU to open', perUnitLabel: 'open ÷ read',
      points: stores.map((s, i) => ({
        work: s.documents, cost: median(s.readings.map((r) => r.openCpuMs)), perUnit: median(openRatios[i]!), rounds: openRatios[i]!,
        note: `CPU: read ${median(s.readings.map((r) => r.readCpuMs)).toFixed(0)} ms, open per document ${((median(s.readings.map((r) => r.openCpuMs)) * 1000) / s.documents).toFixed(1)} µs; wall: open ${median(s.readings.map((r) => r.openMs)).toFixed(0)} ms, read ${median(s.readings.map((r) => r.readMs)).toFixed(0)} ms, open ÷ read ${median(s.readings.map((r) => r.openMs / r.readMs)).toFixed(0)}`,
      })),
      note: `In each fresh process: every file of the data folder read whole three times (the first warms the page cache for both; the median is the baseline), then the store opened (replaying snapshot and journal into memory, the owner index rebuilt) and its documents counted; the ratio of their CPU times (every thread of the process) taken within each process, the median of ${rounds}. Wall times on a shared machine include waiting for a core. The seeder fsyncs its files first, so no open pays for its dirty pages.`,
    });
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
