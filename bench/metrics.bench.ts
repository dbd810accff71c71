// What the runtime's metrics cost (runtime/ops), every figure measured in this run:
//   1. requests per CPU second (this process's: client and server) through the HTTP server (runtime/http/server.ts) reporting each answer to
//      RuntimeMetrics (counter + latency histogram by route pattern), vs the same server reporting to
//      nothing, both keeping the request log as the runtime's does; 40 routes, 16 requests in flight, in short slices alternating which goes first (the
//      machine's drift between seconds is larger than the effect), median of the pairs' ratios. The
//      routes do nothing, so this is the most metrics can cost a request: a fixed 1–2 µs      goal ≥ 0.9×
//   2. one scrape (the text exposition of everything those rounds recorded, Node's default metrics
//      included), printed beside a request's time
// Both servers run in this process, so the figure is the server's work, not a child's scheduling.
// Run: node --import tsx bench/metrics.bench.ts [--requests N] [--rounds N]
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { Router } from '../runtime/http/router';
import { createHttpServer, type RunningHttpServer } from '../runtime/http/server';
import { RuntimeMetrics } from '../runtime/ops/metrics';
import { RequestLog } from '../runtime/log';
import { goalLine, median, option } from './fixtures/load';

const REQUESTS = option('requests', 300);
const ROUNDS = option('rounds', 60);
const IN_FLIGHT = 16;
const ROUTES = 40;

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined, enabled: () => false };

function router(): Router {
  const r = new Router();
  for (let i = 0; i < ROUTES; i++) r.get(`/api/client/v2.0/app/:appId/r${i}`, () => ({ body: { ok: true }, encoding: 'json' }));
  return r;
}

/**
 * CPU seconds this process spends (client and server alike: the client's share is the same for both) to
 * answer REQUESTS requests, IN_FLIGHT at a time over kept-alive connections. CPU time, not wall time: other
 * processes on a shared machine move wall time far more than the effect measured.
 */
async function load(server: RunningHttpServer): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  let next = 0;
  const one = () => new Promise<void>((resolve, reject) => {
    const i = next++;
    http.get({ agent, host: '127.0.0.1', port: server.port, path: `/api/client/v2.0/app/app-${i % 7}/r${i % ROUTES}`, headers: { host: `localhost:${server.port}` } }, (res) => {
      res.resume();
      res.on('end', resolve);
    }).on('error', reject);
  });
  const started = process.cpuUsage();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => { while (next < REQUESTS) await one(); }));
  const used = process.cpuUsage(started);
  agent.destroy();
  return (used.user + used.system) / 1e6;
}

async function main(): Promise<void> {
  const metrics = new RuntimeMetrics();
  // Both keep the request log, as the runtime's server does (the answer reaches metrics from the same listener).
  const measured = await createHttpServer({ log: quiet, router: router(), requestLog: new RequestLog(), onAnswered: metrics.httpAnswered });
  const bare = await createHttpServer({ log: quiet, router: router(), requestLog: new RequestLog() });
  await load(measured);
  await load(bare);
  const ratios: number[] = [];
  const costs = { with: [] as number[], without: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const [first, second] = round % 2 === 0 ? [measured, bare] : [bare, measured];
    const a = await load(first);
    const b = await load(second);
    const withMetrics = first === measured ? a : b;
    const without = first === measured ? b : a;
    // Throughput with metrics ÷ without = CPU time without ÷ CPU time with.
    ratios.push(without / withMetrics);
    costs.with.push(withMetrics / REQUESTS * 1e6);
    costs.without.push(without / REQUESTS * 1e6);
  }
  console.log(`${ROUNDS} pairs of ${REQUESTS}-request slices; ratio per pair: min ${Math.min(...ratios).toFixed(2)}, max ${Math.max(...ratios).toFixed(2)}`);
  console.log(`CPU per request (client and server), median: ${median(costs.with).toFixed(1)} µs with metrics, ${median(costs.without).toFixed(1)} µs without`);
  const scrapes: number[] = [];
  for (let i = 0; i < 20; i++) {
    const started = performance.now();
    await metrics.text();
    scrapes.push(performance.now() - started);
  }
  console.log(`scrape: median ${median(scrapes).toFixed(2)} ms for ${(await metrics.text()).length} bytes`);
  console.log(goalLine('metrics: requests per CPU second with metrics ÷ without (median of pairs), goal', median(ratios), '>=', 0.9));
  await measured.close();
  await bare.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
