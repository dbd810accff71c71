// Custom resolver cost (issue 4): the same 20 documents through the runtime, once as the generated field
// `items(query: {owner})` and once through the custom resolver `ownedItems(input: {owner})`, whose app
// function reads them with `context.services…find({owner}).toArray()` as the requesting user (so the
// same role filters both). Both are bearer-authenticated requests to one runtime in a child process.
// Figure: time per request via the function ÷ natively, i.e. native throughput ÷ function throughput at
// equal connection counts, measured with the two kinds alternating in short slices on every connection
// (measureAlternatingSlices): rounds of seconds drift by ±15% on this machine, which moved the per-round
// ratio of autocannon rounds between 1.27 and 1.72 within one run; neighbouring slices see the same
// machine. An autocannon run of each kind, before, gives latencies.                    goal ≤ 1.3×
// Second figure (issue 21): what a function call costs with functions in a process of their own, under
// Node's permission model, against what it cost on the runtime's own threads (the runtime started with
// `functionsUnisolatedForBenchmarks`, as before the boundary). A call's added cost is time per resolver
// request minus time per generated-field request on the same server, each from that server's alternating
// slices; both servers' two kinds of request are interleaved in the same slices (so the machine's drift,
// which moved rounds of one server then the other by ±15%, meets both alike); each server's added cost is
// taken per group of neighbouring slices, and the figure is the ratio of the two servers' medians over all
// rounds' groups (a single round's ratio of two small differences is too noisy to judge by). goal ≤ 1.2×
// Run: node --import tsx bench/functions.bench.ts [--seconds N] [--warmup N] [--sliced-seconds N] [--connections N]
//        [--boundary-rounds N] [--boundary-seconds N]
import assert from 'node:assert/strict';
import fs from 'node:fs';
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
const GOAL = 1.2;
const BOUNDARY_ROUNDS = option('boundary-rounds', 8);
const BOUNDARY_SECONDS = option('boundary-seconds', 10);
const BOUNDARY_GOAL = 1.1;

/** Linux's clock ticks per second for /proc's CPU times (USER_HZ, 100 on every Linux Node supports). */
const TICKS_PER_SECOND = 100;

/** CPU time (ms) of a process's threads, as its main thread and the rest, from /proc; undefined where there is none. */
function threadsCpuMs(pid: number): { main: number; others: number } | undefined {
  let main = 0;
  let others = 0;
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
      if (tid === String(pid)) main += ms;
      else others += ms;
    }
  } catch {
    return undefined;
  }
  return { main, others };
}

/** CPU time (ms) of a process and its children (the runtime's function process), from /proc. */
function processTreeCpuMs(pids: number[]): number | undefined {
  let total = 0;
  for (const pid of pids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
    } catch {
      return undefined;
    }
  }
  return total;
}

/** The processes whose parent is `pid` (the runtime's function process), from /proc. */
function childProcesses(pid: number): number[] {
  if (!fs.existsSync('/proc')) return [];
  return fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number).filter((child) => {
    try {
      const stat = fs.readFileSync(`/proc/${child}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
    } catch {
      return false;
    }
  });
}

/**
 * Runs a load and prints the CPU time per request of the server's threads and its function process's:
 * where a call's time goes, which a shared machine disturbs far less than it does throughput.
 */
async function loadWithCpu(label: string, serverPid: number, load: Parameters<typeof runLoad>[0], seconds: number): Promise<void> {
  const processes = [serverPid, ...childProcesses(serverPid)];
  const before = processes.map(threadsCpuMs);
  const result = await runLoad(load, seconds);
  const after = processes.map(threadsCpuMs);
  if (before.some((b) => !b) || after.some((a) => !a)) return;
  const perRequest = (index: number, part: 'main' | 'others') => `${(((after[index]![part] - before[index]![part]) * 1000) / result.requests).toFixed(0).padStart(4)} µs`;
  const own = `server main thread ${perRequest(0, 'main')}, its other threads ${perRequest(0, 'others')}`;
  const child = processes.length > 1 ? `; function process main thread ${perRequest(1, 'main')}, its threads ${perRequest(1, 'others')}` : '';
  console.log(`  ${label.padEnd(34)} CPU per request: ${own}${child}`);
}

async function main(): Promise<void> {
  const workspace = await createWorkspace();
  let runtime: ServerProcess | undefined;
  let unisolated: ServerProcess | undefined;
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

    console.log(`functions bench: ${PER_OWNER} documents per request, ${CONNECTIONS} connections, one runtime in a child process (its functions in a process of their own)`);
    const nativeLoad = { url: runtime.graphqlUrl, connections: CONNECTIONS, headers, body: nativeBody, expectBody: native.text };
    const functionLoad = { url: runtime.graphqlUrl, connections: CONNECTIONS, headers, body: functionBody, expectBody: viaFunction.text };
    for (const load of [nativeLoad, functionLoad]) await runLoad(load, WARMUP_SECONDS);
    console.log(`autocannon, ${SECONDS} s each after ${WARMUP_SECONDS} s of warm-up each:`);
    console.log(describeLoad('generated field items(query: {owner})', await runLoad(nativeLoad, SECONDS)));
    console.log(describeLoad('custom resolver ownedItems (app function)', await runLoad(functionLoad, SECONDS)));
    console.log(`CPU time per request (from /proc, ${SECONDS} s each):`);
    await loadWithCpu('generated field', runtime.pid, nativeLoad, SECONDS);
    await loadWithCpu('resolver, functions in own process', runtime.pid, functionLoad, SECONDS);
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

    unisolated = await startServer({ kind: 'functions-unisolated', appDir: workspace.appDir, dataDir: workspace.copyData('unisolated') });
    const { access_token: threadsToken } = await registerAndLogin(unisolated.appUrl!, owner, PASSWORD);
    const threadsHeaders = { authorization: `Bearer ${threadsToken}` };
    const threadsNative = await post(unisolated.graphqlUrl, JSON.parse(nativeBody), threadsHeaders);
    const threadsFunction = await post(unisolated.graphqlUrl, JSON.parse(functionBody), threadsHeaders);
    assert.equal(threadsNative.text, native.text);
    assert.equal(threadsFunction.text, viaFunction.text);
    const servers = [
      { name: 'boundary', pid: runtime.pid, url: runtime.graphqlUrl, headers, nativeText: native.text, functionText: viaFunction.text },
      { name: 'threads', pid: unisolated.pid, url: unisolated.graphqlUrl, headers: threadsHeaders, nativeText: threadsNative.text, functionText: threadsFunction.text },
    ];
    const threadsFunctionLoad = { url: unisolated.graphqlUrl, connections: CONNECTIONS, headers: threadsHeaders, body: functionBody, expectBody: threadsFunction.text };
    await runLoad(threadsFunctionLoad, WARMUP_SECONDS);
    await loadWithCpu('resolver, functions on its threads', unisolated.pid, threadsFunctionLoad, SECONDS);
    console.log(`function call's added cost (resolver − generated field, time per request), functions in their own process vs on the runtime's threads, ${BOUNDARY_ROUNDS} rounds of ${2 * BOUNDARY_SECONDS} s, the four kinds of request interleaved in ${SLICE_MS} ms slices:`);
    // Per group of four neighbouring slices (one of each kind, 1.6 s), each server's added cost: the
    // machine's drift, which moves whole groups, cancels within each; the figure is the ratio of the two
    // servers' medians over all rounds' groups.
    const perGroup = new Map<string, number[]>([['boundary', []], ['threads', []]]);
    const cpuPerGroup = new Map<string, number[]>([['boundary', []], ['threads', []]]);
    const perRound: number[] = [];
    for (let round = 0; round < BOUNDARY_ROUNDS; round++) {
      const ordered = round % 2 === 0 ? servers : [...servers].reverse();
      const kinds = ordered.flatMap((server) => {
        const tree = [server.pid, ...childProcesses(server.pid)];
        const cpuMs = () => processTreeCpuMs(tree);
        return [
          { name: `${server.name} native`, url: server.url, headers: server.headers, body: nativeBody, expectBody: server.nativeText, cpuMs },
          { name: `${server.name} function`, url: server.url, headers: server.headers, body: functionBody, expectBody: server.functionText, cpuMs },
        ];
      });
      const result = await measureAlternatingSlices({
        url: ordered[0]!.url, connections: CONNECTIONS, kinds, seconds: 2 * BOUNDARY_SECONDS, sliceMs: SLICE_MS, settleMs: SETTLE_MS,
      });
      const roundAdded = new Map<string, number>();
      ordered.forEach((server, index) => {
        const [nativeRates, functionRates] = [result.rates[2 * index]!, result.rates[2 * index + 1]!];
        const added = nativeRates.map((nativeRate, group) => 1e6 / functionRates[group]! - 1e6 / nativeRate);
        perGroup.get(server.name)!.push(...added);
        roundAdded.set(server.name, median(added));
        const cpu = result.cpuPerRequest;
        if (cpu) cpuPerGroup.get(server.name)!.push(...cpu[2 * index]!.map((nativeCpu, group) => cpu[2 * index + 1]![group]! - nativeCpu));
        console.log(`  round ${round + 1} ${server.name.padEnd(8)} generated field ${median(nativeRates).toFixed(0).padStart(6)} req/s, resolver ${median(functionRates).toFixed(0).padStart(6)} req/s: a call adds ${roundAdded.get(server.name)!.toFixed(0)} µs of server time per request`);
      });
      perRound.push(roundAdded.get('boundary')! / roundAdded.get('threads')!);
    }
    const [boundaryAdded, threadsAdded] = [median(perGroup.get('boundary')!), median(perGroup.get('threads')!)];
    console.log(`  added cost, boundary ÷ threads, per round: ${perRound.map((r) => r.toFixed(2)).join(' ')}`);
    console.log(`  all rounds (medians over ${perGroup.get('boundary')!.length} groups): a call adds ${boundaryAdded.toFixed(0)} µs with functions in their own process, ${threadsAdded.toFixed(0)} µs on the runtime's threads`);
    const [boundaryCpu, threadsCpu] = [cpuPerGroup.get('boundary')!, cpuPerGroup.get('threads')!];
    if (boundaryCpu.length > 0 && threadsCpu.length > 0) {
      console.log(`  CPU time in the same slices (each server and its function process, from /proc): a call adds ${median(boundaryCpu).toFixed(0)} µs of CPU in its own process, ${median(threadsCpu).toFixed(0)} µs on the runtime's threads (${(median(boundaryCpu) / median(threadsCpu)).toFixed(2)}×; the goal is the time figure below)`);
    }
    const boundaryRatio = boundaryAdded / threadsAdded;
    console.log(goalLine('function call added cost, own process ÷ runtime threads', boundaryRatio, '<=', BOUNDARY_GOAL));
  } finally {
    await unisolated?.stop();
    await runtime?.stop();
    workspace.remove();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
