// Custom resolver cost (issue 4): the same 20 documents through the runtime, once as the generated field
// `items(query: {owner})` and once through the custom resolver `ownedItems(input: {owner})`, whose app
// function reads them with `context.services…find({owner}).toArray()` as the requesting user (so the
// same role filters both). Both are bearer-authenticated requests to one runtime in a child process.
// Figure: time per request via the function ÷ natively, i.e. native throughput ÷ function throughput at
// equal connection counts, measured with the two kinds alternating in short slices on every connection
// (measureAlternatingSlices): rounds of seconds drift by ±15% on this machine, which moved the per-round
// ratio of autocannon rounds between 1.27 and 1.72 within one run; neighbouring slices see the same
// machine. An autocannon run of each kind, before, gives latencies.                    goal ≤ 1.3×
// Run: node --import tsx bench/functions.bench.ts [--seconds N] [--warmup N] [--sliced-seconds N] [--connections N]
import assert from 'node:assert/strict';
import { createWorkspace, GENERATED_QUERY, ownerEmail, PASSWORD, PER_OWNER, RESOLVER_QUERY } from './fixtures/app';
import { describeLoad, goalLine, measureAlternatingSlices, median, option, post, registerAndLogin, runLoad, startServer, type ServerProcess } from './fixtures/load';

const SECONDS = option('seconds', 5);
/** The function path keeps speeding up for several seconds (four worker isolates compiling their code). */
const WARMUP_SECONDS = option('warmup', 8);
const SLICED_SECONDS = option('sliced-seconds', 60);
const SLICE_MS = option('slice-ms', 400);
/** Longer than nearly every request's latency under this load (p99 is a few tens of ms). */
const SETTLE_MS = option('settle-ms', 80);
const CONNECTIONS = option('connections', 64);
const GOAL = 1.3;

async function main(): Promise<void> {
  const workspace = await createWorkspace();
  let runtime: ServerProcess | undefined;
  try {
    runtime = await startServer({ kind: 'runtime', appDir: workspace.appDir, dataDir: workspace.copyData('runtime') });
    const owner = ownerEmail(7);
    const { access_token: token } = await registerAndLogin(runtime.appUrl!, owner, PASSWORD);
    const headers = { authorization: `Bearer ${token}` };
    const nativeBody = JSON.stringify({ query: GENERATED_QUERY, variables: { owner } });
    const functionBody = JSON.stringify({ query: RESOLVER_QUERY, variables: { owner } });
    const native = await post(runtime.graphqlUrl, JSON.parse(nativeBody), headers);
    const viaFunction = await post(runtime.graphqlUrl, JSON.parse(functionBody), headers);
    const nativeItems = (JSON.parse(native.text) as { data: { items: unknown[] } }).data.items;
    const functionItems = (JSON.parse(viaFunction.text) as { data: { ownedItems: unknown[] } | null }).data?.ownedItems;
    assert.equal(nativeItems.length, PER_OWNER, native.text.slice(0, 300));
    assert.deepEqual(functionItems, nativeItems, `the resolver's function answers differently: ${viaFunction.text.slice(0, 300)}`);

    console.log(`functions bench: ${PER_OWNER} documents per request, ${CONNECTIONS} connections, one runtime in a child process (function workers are its threads)`);
    const nativeLoad = { url: runtime.graphqlUrl, connections: CONNECTIONS, headers, body: nativeBody, expectBody: native.text };
    const functionLoad = { url: runtime.graphqlUrl, connections: CONNECTIONS, headers, body: functionBody, expectBody: viaFunction.text };
    for (const load of [nativeLoad, functionLoad]) await runLoad(load, WARMUP_SECONDS);
    console.log(`autocannon, ${SECONDS} s each after ${WARMUP_SECONDS} s of warm-up each:`);
    console.log(describeLoad('generated field items(query: {owner})', await runLoad(nativeLoad, SECONDS)));
    console.log(describeLoad('custom resolver ownedItems (app function)', await runLoad(functionLoad, SECONDS)));
    console.log(`alternating in ${SLICE_MS} ms slices (the first ${SETTLE_MS} ms of each not counted) for ${SLICED_SECONDS} s:`);
    const sliced = await measureAlternatingSlices({
      url: runtime.graphqlUrl, connections: CONNECTIONS,
      kinds: [{ name: 'native', headers, body: nativeBody, expectBody: native.text }, { name: 'function', headers, body: functionBody, expectBody: viaFunction.text }],
      seconds: SLICED_SECONDS, sliceMs: SLICE_MS, settleMs: SETTLE_MS,
    });
    const [nativeRates, functionRates] = sliced.rates;
    console.log(`  generated field     ${median(nativeRates).toFixed(0).padStart(7)} req/s (median over its ${nativeRates.length} slices)`);
    console.log(`  custom resolver     ${median(functionRates).toFixed(0).padStart(7)} req/s (median over its ${functionRates.length} slices)`);
    const sorted = [...sliced.ratios].sort((a, b) => a - b);
    const quartile = (q: number): string => sorted[Math.floor(q * (sorted.length - 1))]!.toFixed(2);
    console.log(`time per request, function ÷ native, per pair of slices: quartiles ${quartile(0.25)} / ${quartile(0.5)} / ${quartile(0.75)} over ${sorted.length} pairs`);
    console.log(goalLine('function resolver ÷ generated field, time per request', median(sliced.ratios), '<=', GOAL));
  } finally {
    await runtime?.stop();
    workspace.remove();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
