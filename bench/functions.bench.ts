// Custom resolver cost (issue 4): the same 20 documents through the runtime, once as the generated field
// `items(query: {owner})` and once through the custom resolver `ownedItems(input: {owner})`, whose app
// function reads them with `context.services…find({owner}).toArray()` as the requesting user (so the
// same role filters both). Both are bearer-authenticated requests to one runtime in a child process,
// driven by autocannon from this process under the same load, in alternating rounds.
// Figure: time per request via the function ÷ natively, i.e. native throughput ÷ function throughput
// (equal connection counts, so this is also the ratio of mean latencies)            goal ≤ 1.3×
// Run: node --import tsx bench/functions.bench.ts [--seconds N] [--rounds N] [--connections N]
import assert from 'node:assert/strict';
import { createWorkspace, GENERATED_QUERY, ownerEmail, PASSWORD, PER_OWNER, RESOLVER_QUERY } from './fixtures/app';
import { describeLoad, describeRounds, goalLine, measureInterleaved, option, pairedRatio, post, registerAndLogin, startServer, throughputRatio, type ServerProcess } from './fixtures/load';

const SECONDS = option('seconds', 5);
const ROUNDS = option('rounds', 3);
const WARMUP_SECONDS = option('warmup', 2);
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

    console.log(`functions bench: ${PER_OWNER} documents per request, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${SECONDS} s each after ${WARMUP_SECONDS} s warm-up`);
    console.log('one runtime in a child process (function workers are its threads); autocannon in this process');
    const results = await measureInterleaved([
      { name: 'native', load: { url: runtime.graphqlUrl, connections: CONNECTIONS, headers, body: nativeBody, expectBody: native.text } },
      { name: 'function', load: { url: runtime.graphqlUrl, connections: CONNECTIONS, headers, body: functionBody, expectBody: viaFunction.text } },
    ], { warmupSeconds: WARMUP_SECONDS, seconds: SECONDS, rounds: ROUNDS });
    const nativeResult = results.get('native')!;
    const functionResult = results.get('function')!;
    console.log(describeLoad('generated field items(query: {owner})', nativeResult.total));
    console.log(describeLoad('custom resolver ownedItems (app function)', functionResult.total));
    const latency = pairedRatio(functionResult.rounds.map((r) => r.latencyMs), nativeResult.rounds.map((r) => r.latencyMs));
    console.log(`mean latency ratio (function ÷ native): ${latency.ratio.toFixed(2)}×`);
    const time = throughputRatio(nativeResult, functionResult);
    console.log(describeRounds('time per request, function ÷ native, by round', time.rounds));
    console.log(goalLine('function resolver ÷ generated field, time per request', time.ratio, '<=', GOAL));
  } finally {
    await runtime?.stop();
    workspace.remove();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
