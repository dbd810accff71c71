// Runs every benchmark in sequence (`node --import tsx bench/<name>.bench.ts`), shows each one's output as
// it comes, and ends with a summary of every goal line with MET / NOT MET. A goal that is not met does not
// fail the run; a benchmark that crashes (non-zero exit, signal, or overrunning its time limit) does.
// Run: node bench/run.mjs [name ...]     e.g. `node bench/run.mjs graphql auth`; no names runs them all.
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.dirname(BENCH_DIR);
/** In the order they run; `args` go to that benchmark only. */
const BENCHMARKS = [
  // Its full run, fsync mode included, takes about 85 s on the 2-core machine: under the 2-minute bar
  // above which `--skip-fsync` would be passed.
  { name: 'store', args: [] },
  { name: 'lsp', args: [] },
  { name: 'graphql', args: [] },
  { name: 'functions', args: [] },
  { name: 'auth', args: [] },
  { name: 'editor', args: [] },
  { name: 'sync', args: [] },
  { name: 'realm-sync', args: [] },
  { name: 'realm-sync-flexible', args: [] },
  { name: 'rql', args: [] },
  { name: 'templates', args: [] },
  { name: 'admin', args: [] },
  { name: 'tls', args: [] },
  { name: 'data-io', args: [] },
  { name: 'metrics', args: [] },
  // Cost as the work grows: each writes its charts to bench/out/ and rebuilds bench/out/index.html.
  { name: 'curves-validation', args: [] },
  { name: 'curves-store', args: [] },
  { name: 'curves-graphql', args: [] },
  { name: 'curves-sync', args: [] },
];
/** Longest one benchmark may run before it counts as crashed. */
const TIME_LIMIT_MS = 6 * 60 * 1000;
/** A goal line names its goal and ends with its verdict: `… (goal ≥ 3×) NOT MET`, `… goal >= 2x: met`. */
const GOAL_LINE = /goal/i;
const VERDICT = /[\s:]*\b(not\s+)?met\s*$/i;
const CORES = os.availableParallelism();

/**
 * The 1-minute load average. A benchmark itself keeps about two cores busy (server and load generator),
 * so only a load above one more than the core count says that other processes competed for the CPU.
 */
const BUSY_LOAD = CORES + 1;

function loadAverage() {
  return os.loadavg()[0];
}

/** The running benchmark's process group, ended too when this runner is interrupted (it is not in our group). */
let endRunning;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    endRunning?.();
    process.exit(130);
  });
}

function runBenchmark({ name, args }) {
  const file = path.join('bench', `${name}.bench.ts`);
  const goals = [];
  const started = Date.now();
  return new Promise((resolve) => {
    // A process group of its own: at the limit, or once the benchmark has exited, whatever it started (servers,
    // measuring children that would keep a core busy and hold the output pipe open) ends with it.
    const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    const killGroup = () => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch (error) {
        if (error.code !== 'ESRCH') throw error;
      }
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, TIME_LIMIT_MS);
    endRunning = killGroup;
    child.on('exit', killGroup);
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      console.log(line);
      const verdict = VERDICT.exec(line);
      if (GOAL_LINE.test(line) && verdict) goals.push({ text: line.slice(0, verdict.index).trim(), met: !verdict[1] });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const seconds = (Date.now() - started) / 1000;
      const crash = timedOut ? `ran over ${TIME_LIMIT_MS / 60000} minutes` : code !== 0 ? `exited with ${signal ?? `code ${code}`}` : undefined;
      resolve({ name, file, goals, seconds, crash });
    });
  });
}

function formatSeconds(seconds) {
  return seconds >= 60 ? `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s` : `${seconds.toFixed(1)} s`;
}

async function main() {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((w) => !BENCHMARKS.some((b) => b.name === w));
  if (unknown.length > 0) {
    console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${BENCHMARKS.map((b) => b.name).join(', ')}`);
    process.exit(2);
  }
  const selected = wanted.length > 0 ? BENCHMARKS.filter((b) => wanted.includes(b.name)) : BENCHMARKS;
  const results = [];
  for (const benchmark of selected) {
    console.log(`\n=== ${path.join('bench', `${benchmark.name}.bench.ts`)} ===`);
    const loadBefore = loadAverage();
    const result = await runBenchmark(benchmark);
    result.load = Math.max(loadBefore, loadAverage());
    console.log(`--- ${benchmark.name}: ${result.crash ? `CRASHED (${result.crash})` : 'done'} in ${formatSeconds(result.seconds)}; machine load average ${loadBefore.toFixed(1)} before, ${loadAverage().toFixed(1)} after (${CORES} cores)`);
    results.push(result);
  }

  const total = results.reduce((sum, r) => sum + r.seconds, 0);
  console.log(`\n=== summary: ${results.length} benchmark(s) in ${formatSeconds(total)} ===`);
  const width = Math.max(...results.map((r) => r.name.length));
  for (const r of results) {
    if (r.crash) console.log(`${r.name.padEnd(width)}  CRASHED  ${r.crash}`);
    else if (r.goals.length === 0) console.log(`${r.name.padEnd(width)}  -        no goal line printed`);
    for (const goal of r.goals) console.log(`${r.name.padEnd(width)}  ${(goal.met ? 'MET' : 'NOT MET').padEnd(7)}  ${goal.text}`);
  }
  const goals = results.flatMap((r) => r.goals);
  const crashed = results.filter((r) => r.crash);
  const busy = results.filter((r) => r.load > BUSY_LOAD);
  if (busy.length > 0) {
    console.log(`warning: the machine's load average exceeded ${BUSY_LOAD} (${CORES} cores + 1) around ${busy.map((r) => `${r.name} (${r.load.toFixed(1)})`).join(', ')}: other processes competed for the CPU, so those figures are unreliable; run again on a quiet machine`);
  }
  console.log(`goals: ${goals.filter((g) => g.met).length} met, ${goals.filter((g) => !g.met).length} not met; crashed: ${crashed.length === 0 ? 'none' : crashed.map((r) => r.name).join(', ')}`);
  process.exitCode = crashed.length > 0 ? 1 : 0;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
