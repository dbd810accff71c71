// Cost as the work grows (curve `graphql`): the graphql benchmark's query (`items(query: {owner})`, bearer
// auth, the collection's role evaluated, 20 documents answered through the indexed `owner` field) against
// collections of 1,000, 100,000 and 1,000,000 documents (one owner per 20 documents, so the answer is the
// same size at every size). Time per request (1 ÷ throughput at 64 connections); goal: grows ≤ 2× from the
// smallest collection to the largest. One runtime per size (`node dist/cli.js serve`, fixtures/load.ts),
// all three running, measured in alternating rounds (fixtures/load.ts measureInterleaved).
// Table printed, chart in bench/out/graphql.svg, all curves in bench/out/index.html (fixtures/curves.ts).
// Run: node --import tsx bench/curves-graphql.bench.ts [--seconds 3] [--rounds 3] [--warmup 2] [--connections 64]
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { GENERATED_QUERY, PASSWORD, ownerEmail, writeBenchApp } from './fixtures/app';
import { median, reportCurve, runStoreJob } from './fixtures/curves';
import { bundleForBench, describeLoad, measureInterleaved, option, post, registerAndLogin, requestsPerSecond, startServer, type Contender, type ServerProcess } from './fixtures/load';

const SIZES = [1_000, 100_000, 1_000_000];
const SECONDS = option('seconds', 3);
const ROUNDS = option('rounds', 3);
const WARMUP_SECONDS = option('warmup', 2);
const CONNECTIONS = option('connections', 64);
/** Documents each owner has, so every answer holds this many. */
const PER_OWNER = 20;
/**
 * A size is left out (and the reason printed) when seeding and starting it, estimated linearly from the
 * size before, and then the measurement would end past this: bench/run.mjs ends a benchmark at 6 minutes.
 */
const BUDGET_MS = 5 * 60 * 1000 + 20_000;
/** A runtime opening a million documents on a loaded machine takes more than startServer's usual minute. */
const START_TIMEOUT_MS = 4 * 60 * 1000;

async function main(): Promise<void> {
  const started = performance.now();
  const script = path.join(await bundleForBench({ 'curves-store-measure': 'bench/fixtures/curves-store-measure.ts' }), 'curves-store-measure.js');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-curves-graphql-'));
  const servers: ServerProcess[] = [];
  try {
    const appDir = path.join(root, 'app');
    writeBenchApp(appDir);
    const owner = ownerEmail(7);
    const body = JSON.stringify({ query: GENERATED_QUERY, variables: { owner } });
    const contenders: Contender[] = [];
    const sizes: number[] = [];
    const answerBytes = new Map<number, number>();
    const measurementMs = (count: number) => count * (WARMUP_SECONDS + ROUNDS * SECONDS) * 1000 + 10_000;
    // Setting up the smallest size is taken as the fixed part (starting a process, the app); the rest of the
    // size before it is scaled to the next size.
    let fixedMs: number | undefined;
    let setUpMs: { documents: number; ms: number } | undefined;
    for (const documents of SIZES) {
      if (setUpMs && fixedMs !== undefined) {
        const estimate = fixedMs + (Math.max(0, setUpMs.ms - fixedMs) * documents) / setUpMs.documents;
        const end = performance.now() - started + estimate + measurementMs(sizes.length + 1);
        if (end > BUDGET_MS) {
          console.log(`${documents} documents left out: seeding and starting them would take about ${(estimate / 1000).toFixed(0)} s (${(setUpMs.ms / 1000).toFixed(1)} s for ${setUpMs.documents}, beyond the smallest size's ${(fixedMs / 1000).toFixed(1)} s scaled), so the run would end about ${(end / 1000).toFixed(0)} s in, past ${(BUDGET_MS / 1000).toFixed(0)} s, near bench/run.mjs's 6-minute limit (machine load ${os.loadavg()[0].toFixed(1)})`);
          break;
        }
      }
      const setUpStart = performance.now();
      const dataDir = path.join(root, `data-${documents}`);
      runStoreJob(script, 'seed', path.join(dataDir, 'data'), documents);
      const seeded = performance.now();
      const runtime = await startServer({ kind: 'runtime', appDir, dataDir }, START_TIMEOUT_MS);
      servers.push(runtime);
      setUpMs = { documents, ms: performance.now() - setUpStart };
      fixedMs ??= setUpMs.ms;
      sizes.push(documents);
      console.log(`${documents} documents: seeded in ${((seeded - setUpStart) / 1000).toFixed(1)} s, runtime ready ${((performance.now() - seeded) / 1000).toFixed(1)} s after`);
      const { access_token: token } = await registerAndLogin(runtime.appUrl!, owner, PASSWORD);
      const headers = { authorization: `Bearer ${token}` };
      const answer = await post(runtime.graphqlUrl, JSON.parse(body), headers);
      const items = (JSON.parse(answer.text) as { data: { items: { owner: string }[] } }).data.items;
      assert.equal(items.length, PER_OWNER, `the ${documents}-document runtime answered ${answer.text.slice(0, 300)}`);
      assert.ok(items.every((i) => i.owner === owner));
      // 20 documents of the same shape at every size (their numbers, and so a few bytes, differ): the work
      // per request does not grow, only the collection.
      answerBytes.set(documents, Buffer.byteLength(answer.text));
      contenders.push({ name: String(documents), load: { url: runtime.graphqlUrl, connections: CONNECTIONS, headers, body, expectBody: answer.text } });
    }
    console.log(`graphql curve: ${PER_OWNER} documents by an indexed owner, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${SECONDS} s after ${WARMUP_SECONDS} s warm-up each (${((performance.now() - started) / 1000).toFixed(0)} s to set up)`);
    const results = await measureInterleaved(contenders, { warmupSeconds: WARMUP_SECONDS, seconds: SECONDS, rounds: ROUNDS });
    for (const c of contenders) console.log(describeLoad(`${c.name} documents`, results.get(c.name)!.total));
    reportCurve({
      name: 'graphql', title: 'GraphQL throughput: an indexed query of 20 documents against a growing collection', workLabel: 'documents in the collection', costUnit: 'req/s', perUnitLabel: 'µs per request',
      points: sizes.map((documents) => {
        const { rounds, total } = results.get(String(documents))!;
        const perRequest = rounds.map((r) => 1e6 / requestsPerSecond(r));
        return { work: documents, cost: median(rounds.map(requestsPerSecond)), perUnit: median(perRequest), rounds: perRequest, note: `mean latency ${total.latencyMs.toFixed(1)} ms, p99 ${total.p99Ms.toFixed(0)} ms; answer ${answerBytes.get(documents)} bytes` };
      }),
      note: `Time per request (1 ÷ throughput at ${CONNECTIONS} connections, autocannon in the benchmark's process) against three runtimes of the bench app (fixtures/app.ts) whose bench.items holds ${sizes.map((n) => n.toLocaleString('en-US')).join(', ')} documents${sizes.length < SIZES.length ? ` (${SIZES.slice(sizes.length).map((n) => n.toLocaleString('en-US')).join(', ')} left out: it would not fit the time limit, see the output)` : ''}, one owner per ${PER_OWNER}, so every answer is 20 documents of the same shape; rounds alternate between the sizes, medians of ${ROUNDS} rounds of ${SECONDS} s. The work per request is constant, so a flat line means the collection's size costs nothing per request.`,
    });
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
