// The editor's runtime and runner (issue 13), every figure a ratio or a bound measured in this run:
//   1. a query run through the runner module (core/runner: session lookup, timing, the answer's errors
//      read) vs the same HTTP request made bare with fetch and the same headers, alternating in rounds
//      against one runtime                                                              goal ≤ 1.10×
//   2. starting the runtime as the extension does (find the app, spawn dist/cli.js serve with an IPC
//      channel, wait for the handshake's ready) vs spawning a bare `node -e 0` to its exit   goal ≤ 10×
//   3. extension activation of the installed package: `npm run package`'s .vsix unpacked as VS Code
//      installs it (no checkout, no node_modules beside it), its dist/extension.js evaluated and
//      activate() called (with a stand-in for the `vscode` module, which only records calls)   goal ≤ 50 ms
//   4. the .vsix's size                                                                   goal ≤ 10 MB
// Run: node --import tsx bench/editor.bench.ts [--rounds N] [--requests N] [--starts N]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import Module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { unzipSync } from 'fflate';
import { nodeFileSystem } from '../core/fs';
import { findAppRoots } from '../core/load';
import { SessionPool, type Identity } from '../core/runner/identities';
import { runGraphql } from '../core/runner/run';
import { RuntimeProcess } from '../client/runtimeProcess';
import { goalLine, median, option } from './fixtures/load';

const ROUNDS = option('rounds', 15);
const REQUESTS = option('requests', 100);
const STARTS = option('starts', 7);
const REPO = path.resolve(__dirname, '..');
const CLI = path.join(REPO, 'dist', 'cli.js');
const EXAMPLE = path.join(REPO, 'examples', 'todo-tracker');

function copyExample(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-editor-bench-'));
  fs.cpSync(EXAMPLE, dir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  return dir;
}

async function startRuntime(appDir: string) {
  const [found] = await findAppRoots(nodeFileSystem, appDir);
  const started = RuntimeProcess.start({ cliPath: CLI, appDir: found!, port: 0, execPath: process.execPath, dataDir: path.join(appDir, '.asl') });
  return { process: started.process, ready: await started.ready };
}

async function runnerOverhead(): Promise<number> {
  const appDir = copyExample();
  const { process: runtime, ready } = await startRuntime(appDir);
  try {
    const pool = new SessionPool({ baseUrl: ready.url, appId: ready.apps[0]!.appId });
    const identity: Identity = { kind: 'email-password', email: 'bench@example.com', password: 'bench-password' };
    await pool.registerEmailPasswordUser(identity.email, identity.password);
    const userId = await pool.userIdOf(identity);
    for (let i = 0; i < 20; i++) {
      const add = await runGraphql(pool, identity, {
        query: 'mutation($t: TaskInsertInput!) { insertOneTask(data: $t) { _id } }',
        variables: { t: { _id: `65a00000000000000000${String(i).padStart(4, '0')}`, _partition: userId, name: `Task ${i}`, status: 'open', isComplete: false } },
      });
      if (add.errors.length) throw new Error(add.text);
    }
    const request = { query: 'query Tasks { tasks { _id name status isComplete } }', operationName: 'Tasks' };
    const url = `${ready.url}/api/client/v2.0/app/${ready.apps[0]!.appId}/graphql`;
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json', ...await pool.headersFor(identity) };
    const body = JSON.stringify(request);
    const bare = async () => {
      const response = await fetch(url, { method: 'POST', headers, body });
      const text = await response.text();
      if (response.status !== 200 || !text.includes('Task 19')) throw new Error(text);
    };
    const viaRunner = async () => {
      const result = await runGraphql(pool, identity, request);
      if (result.status !== 200 || !result.hasData) throw new Error(result.text);
    };
    for (let i = 0; i < 200; i++) { await bare(); await viaRunner(); }
    const ratios: number[] = [];
    const perRequest = { runner: [] as number[], bare: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which kind goes first, so neither always meets a warmer server.
      const order = round % 2 === 0 ? [viaRunner, bare] : [bare, viaRunner];
      const times = new Map<typeof bare, number>();
      for (const kind of order) {
        const started = performance.now();
        for (let i = 0; i < REQUESTS; i++) await kind();
        times.set(kind, (performance.now() - started) / REQUESTS);
      }
      perRequest.runner.push(times.get(viaRunner)!);
      perRequest.bare.push(times.get(bare)!);
      ratios.push(times.get(viaRunner)! / times.get(bare)!);
    }
    console.log(`runner: ${median(perRequest.runner).toFixed(3)} ms per request; bare fetch: ${median(perRequest.bare).toFixed(3)} ms (medians of ${ROUNDS} rounds of ${REQUESTS})`);
    return median(ratios);
  } finally {
    await runtime.stop();
    fs.rmSync(appDir, { recursive: true, force: true });
  }
}

function bareNodeStart(): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', () => resolve(performance.now() - started));
  });
}

async function runtimeStart(): Promise<{ ratio: number; runtimeMs: number; nodeMs: number }> {
  const appDir = copyExample();
  const runtimes: number[] = [];
  const nodes: number[] = [];
  try {
    for (let i = 0; i < STARTS; i++) {
      nodes.push(await bareNodeStart());
      const started = performance.now();
      const { process: runtime } = await startRuntime(appDir);
      runtimes.push(performance.now() - started);
      await runtime.stop();
    }
  } finally {
    fs.rmSync(appDir, { recursive: true, force: true });
  }
  return { ratio: median(runtimes) / median(nodes), runtimeMs: median(runtimes), nodeMs: median(nodes) };
}

/** A `vscode` module whose namespaces accept every call and return objects that do the same. */
function vscodeStandIn(): Record<string, unknown> {
  const handler: ProxyHandler<(...args: unknown[]) => unknown> = {
    get(_target, key) {
      if (key === 'then') return undefined;
      if (key === 'get') return (_name: string, fallback: unknown) => fallback;
      return new Proxy(function standIn() { return undefined; }, handler);
    },
    set() { return true; },
    apply() { return new Proxy(function standIn() { return undefined; }, handler); },
    construct() { return new Proxy(function standIn() { return undefined; }, handler) as object; },
  };
  const namespace = () => new Proxy(function standIn() { return undefined; }, handler);
  return {
    window: namespace(), workspace: namespace(), commands: namespace(), languages: namespace(), env: namespace(), Uri: namespace(),
    EventEmitter: namespace(), ThemeColor: namespace(), ThemeIcon: namespace(), StatusBarAlignment: { Left: 1, Right: 2 },
  };
}

/** Packages the .vsix (from the built dist/) and unpacks its extension folder as an install would. */
async function installedPackage(): Promise<{ dir: string; vsixBytes: number; cleanup(): void }> {
  const { packageExtension } = await import('../scripts/package.mjs');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-editor-bench-vsix-'));
  const vsix = packageExtension({ out: path.join(work, 'extension.vsix'), build: false });
  const dir = path.join(work, 'installed');
  for (const [name, data] of Object.entries(unzipSync(fs.readFileSync(vsix)))) {
    if (!name.startsWith('extension/') || name.endsWith('/')) continue;
    const file = path.join(dir, name.slice('extension/'.length));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, data);
  }
  return { dir, vsixBytes: fs.statSync(vsix).size, cleanup: () => fs.rmSync(work, { recursive: true, force: true }) };
}

function activation(extensionDir: string): number {
  const vscode = vscodeStandIn();
  const original = (Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown })._load;
  (Module as unknown as { _load: typeof original })._load = function load(request: string, ...rest: unknown[]) {
    return request === 'vscode' ? vscode : original.call(this, request, ...rest);
  };
  try {
    const started = performance.now();
    const extension = require(path.join(extensionDir, 'dist', 'extension.js')) as { activate(context: unknown): unknown };
    const context = { subscriptions: [], asAbsolutePath: (p: string) => path.join(extensionDir, p), workspaceState: { get: () => undefined, update: async () => undefined }, secrets: {} };
    extension.activate(context);
    return performance.now() - started;
  } finally {
    (Module as unknown as { _load: typeof original })._load = original;
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(CLI)) throw new Error('dist/cli.js is missing: run npm run build first');
  const installed = await installedPackage();
  let activationMs: number;
  try {
    activationMs = activation(installed.dir);
  } finally {
    installed.cleanup();
  }
  const start = await runtimeStart();
  console.log(`runtime start to ready: ${start.runtimeMs.toFixed(0)} ms; bare node -e 0: ${start.nodeMs.toFixed(0)} ms (medians of ${STARTS})`);
  const overhead = await runnerOverhead();
  console.log(goalLine('runner ÷ bare HTTP per query (median of per-round ratios)', overhead, '<=', 1.1));
  console.log(goalLine('runtime start ÷ bare node start', start.ratio, '<=', 10));
  console.log(goalLine('installed extension activation (load its dist/extension.js + activate())', activationMs, '<=', 50, ' ms'));
  console.log(goalLine('.vsix size', installed.vsixBytes / 1024 / 1024, '<=', 10, ' MB'));
}

main().then(() => process.exit(0), (error) => { console.error(error); process.exit(1); });
