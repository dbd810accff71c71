// Runs an app's functions in a process of their own: the function process (process.ts), started on the
// first call under Node's permission model, with an empty environment and none of the runtime's key
// material or other apps' data, runs them on worker threads, which its agent (agent.ts) owns. The pool
// (pool.ts, here in the runtime) sends each call straight to a worker over that worker's channel
// (channel.ts) and keeps the time limit; the agent reports on the workers and keeps their memory in
// bounds. Data, values and nested function calls are answered here, in the runtime, by the injected host;
// the process gets the values a call asks for and nothing else. Every message from the process and its
// workers is checked before it is used: code there is the app's, and the runtime trusts none of it.
import { spawn } from 'node:child_process';
import { MessageChannel, Worker } from 'node:worker_threads';
import fs from 'node:fs';
import path from 'node:path';
import { OriginalEncodings } from './encodings';
import { ExecutionTimeLimitExceeded, FunctionExecutionError, FunctionNotFound, FunctionSyntaxError } from './errors';
import { createAgent } from './agent';
import { createLinkServer, portLink, type BatchLink, type LinkServer } from './channel';
import { currentNode, type FunctionNode } from './functionNode';
import { createWorkerPool, type WorkerPool } from './pool';
import type { FunctionProcessArgument, FunctionProcessSettings } from './process';
import {
  carry, decodeReturned, decodeValue, encodeLending,
  type CallPayload, type Carried, type Encoded, type FromAgent, type FromPool, type LogLevel, type SyncReply, type ToAgent, type ToWorker,
} from './protocol';

/** The platform's function time limit. */
export const DEFAULT_FUNCTION_TIMEOUT_MS = 300_000;

export interface FunctionSource { source: string; path: string }

export interface FunctionUser {
  id: string;
  type: string;
  data: Record<string, unknown>;
  custom_data: Record<string, unknown>;
  identities: unknown[];
}

/** Identifies a running call; see `FunctionCallContext.caller`. */
export interface FunctionCaller { readonly functionName: string }

export interface FunctionCallContext {
  /** `context.user`; a system user when absent. */
  user?: FunctionUser;
  /** `context.request`: HTTP metadata of the incoming request. */
  request?: Record<string, unknown>;
  runAsSystem?: boolean;
  /**
   * Set by the runner on the context it hands to `host.executeFunction`. Keep it (spread the context) when
   * calling `run()` for that nested call: it then runs on the caller's worker instead of waiting for a free one,
   * which could otherwise deadlock a saturated pool.
   */
  caller?: FunctionCaller;
  /** Anything else the host wants back in `serviceAction`/`executeFunction`. */
  [key: string]: unknown;
}

export interface FunctionHost {
  /** One data action, shaped like the client API's (client-api.md §8): `args` holds `database`, `collection` and the action's keys. */
  serviceAction(service: string, action: string, args: Record<string, unknown>, ctx: FunctionCallContext): unknown;
  values: { get(name: string): unknown };
  readonly environment: { tag: string; values: Record<string, unknown> };
  /**
   * For an array `serviceAction` returned (untouched since): the documents that never change its elements
   * are copies of, in order (see DocumentStore.storedOriginals), whose BSON the runner then keeps.
   */
  storedOriginals?(found: readonly unknown[]): readonly object[] | undefined;
  /** `context.functions.execute(name, ...args)`. */
  executeFunction(name: string, args: unknown[], ctx: FunctionCallContext): Promise<unknown>;
}

export type FunctionLog = (functionName: string, level: LogLevel, text: string) => void;

/** What the function process's inspector did on a start: listens at `url` (which holds its secret), or could not. */
export type FunctionInspectorEvent = { url: string; port: number } | { error: string };

/**
 * Debugging functions (asl serve --inspect-functions): the function process runs with Node's inspector
 * on 127.0.0.1, its workers debuggable, and calls without a time limit.
 */
export interface FunctionInspectorOptions {
  /** Port on 127.0.0.1; 0 picks a free one, which later starts of the function process keep. */
  port: number;
  /** Told on each start of the function process. */
  onInspector(event: FunctionInspectorEvent): void;
  /** The Node that runs the function process (functionNode.ts, findDebugNode); default this process's own. */
  node?: FunctionNode;
}

/**
 * Why `node` (default: this process's Node) cannot debug functions, or undefined when it can: the workers
 * run under Node's permission model, which refuses the inspector unless `--allow-inspector` grants it (Node
 * 24 and later); running them without the model to debug them would take the sandbox away.
 */
export function whyFunctionsCannotBeDebugged(node: FunctionNode = currentNode()): string | undefined {
  if (node.allowInspector) return undefined;
  return `debugging functions needs a Node whose permission model has --allow-inspector (Node 24 or later); ${node.execPath} is Node ${node.version}, whose permission model refuses the inspector to the function process`;
}

export interface FunctionRunnerOptions {
  loadSource(name: string): FunctionSource | undefined | Promise<FunctionSource | undefined>;
  host: FunctionHost;
  timeoutMs?: number;
  poolSize?: number;
  /**
   * Memory the pool's workers together may use beyond what they used when last idle, in MiB: their heaps
   * (each also limited to 256 MB) and the typed arrays and buffers no heap limit covers. Default 768.
   */
  memoryLimitMb?: number;
  log?: FunctionLog;
  /** The app's `functions/node_modules`; without it functions can require only the allowed Node built-ins. */
  packagesDir?: string;
  /**
   * Runs the worker pool on this process's own threads, without the function process: no boundary at all
   * (function code that leaves its vm context reaches this process). Only for measuring what the boundary
   * costs (bench/functions.bench.ts); never for serving apps.
   */
  unisolatedForBenchmarks?: boolean;
  /** Debug functions (see FunctionInspectorOptions); never with `unisolatedForBenchmarks`. */
  inspect?: FunctionInspectorOptions;
}

export interface FunctionRunner {
  /** `args`, `ctx.user` and `ctx.request` cross to the worker when this turn of the event loop ends: leave them unchanged. */
  run(name: string, args: unknown[], ctx?: FunctionCallContext): Promise<unknown>;
  /** Forget loaded sources (they changed on disk); calls already running finish with the old code. */
  reload(): void;
  /**
   * Starts the function process now rather than at the first call (readiness; a debugger can then attach
   * before it); resolves with whether its agent connected (false: it could not start, or it exited first).
   */
  warmUp(): Promise<boolean>;
  /**
   * `up`: a process runs and its agent connected; `idle`: none runs (never started, or the last one ended;
   * the next call starts one); `starting`; `failed`: the last start ended before its agent connected;
   * `closed`. Readiness reads it.
   */
  state(): 'up' | 'idle' | 'starting' | 'failed' | 'closed';
  /** The running function process's pid (metrics read its memory); undefined when none runs, or in benchmarks' threads. */
  processId(): number | undefined;
  close(): Promise<void>;
}

interface LoadedSource { id: number; text: string; path: string }

/** One function process (or, for benchmarks, the workers on this process's threads), its pool, and what it has been sent. */
interface FunctionProcess {
  alive: boolean;
  /** Settles true once its agent is connected, false when it ends first. */
  connected: Promise<boolean>;
  /** Whether `connected` settled true. */
  up: boolean;
  /** The child process's pid; absent for the workers on this process's threads. */
  pid?: number;
  /** Sources given to its pool since its start or the last reload. */
  knownSources: Set<number>;
  pool: WorkerPool;
  /** Sends a message to its agent. */
  agent(message: ToAgent): void;
  /** Whether it keeps this process's event loop going (while calls run) or not. */
  hold(busy: boolean): void;
  stop(): Promise<void>;
}

interface CallRecord {
  id: number;
  name: string;
  source: LoadedSource;
  ctx: FunctionCallContext;
  caller: FunctionCaller;
  process: FunctionProcess;
  /** When it was handed to the pool (Date.now()). */
  since: number;
  /** Documents lent to it in replies, by handle (see protocol.Lent). */
  lent?: Map<number, unknown>;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/**
 * Workers started at most, whatever the number of cores: calls spend most of their time waiting for the
 * runtime, so a worker more than there are cores costs little, and each worker's queue of messages (whose
 * answers leave together) stays short. On two cores four served function resolvers ~10% faster than two.
 */
const DEFAULT_POOL_SIZE = 4;
const DEFAULT_MEMORY_LIMIT_MB = 768;
/**
 * A call still unsettled this long after twice its time limit (time queued for a worker included) has
 * been lost by the pool: it ends here with the time limit, and the loss is logged as the defect it is.
 */
const LOST_CALL_GRACE_MS = 5000;
const LOST_CALL_SWEEP_MS = 1000;
const STDERR_TAIL_CHARS = 2000;
/** What the runtime reads of the function process's stderr at most, per window (Node's own reports are a few KB). */
const STDERR_CHARS_PER_WINDOW = 256 * 1024;
const STDERR_WINDOW_MS = 1000;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The bundled function process, beside the bundle that loads it (dist/); from sources (tests through tsx),
 * the one `npm run build` left in dist/: under the permission model it cannot compile TypeScript itself.
 */
function functionProcessFile(): string {
  const bundled = path.join(__dirname, 'function-process.js');
  if (fs.existsSync(bundled)) return bundled;
  const built = path.resolve(__dirname, '../../dist/function-process.js');
  if (fs.existsSync(built)) return built;
  throw new Error(`the function process is not built (${built}): run npm run build`);
}

/**
 * Characters `--allow-fs-read` gives a meaning to on some Node versions (a list separator, a wildcard): a
 * path holding one could grant more than itself, so it is never granted.
 */
const PERMISSION_PATH_SYNTAX = /[,*]/;

/**
 * The function process's command line: read access to its own two files and the app's packages only,
 * worker threads allowed (they run the functions), nothing else: no file writes, no child processes, no
 * native addons, no WASI, no inspector.
 */
function functionProcessArguments(node: FunctionNode, file: string, settings: FunctionProcessArgument, log: FunctionLog, inspectPort?: number): string[] {
  const own = [file, path.join(path.dirname(file), 'function-worker.js')];
  if (own.some((p) => PERMISSION_PATH_SYNTAX.test(p))) throw new Error(`functions cannot run from ${path.dirname(file)}: its path holds a comma or an asterisk, which Node's permission model reads as syntax`);
  const packages = settings.packagesDir;
  if (packages && PERMISSION_PATH_SYNTAX.test(packages)) {
    log('functions', 'warn', `functions cannot require packages from ${packages}: its path holds a comma or an asterisk, which Node's permission model reads as syntax`);
  }
  const readable = [...own, ...(packages && !PERMISSION_PATH_SYNTAX.test(packages) ? [packages] : [])];
  return [
    node.permissionFlag, ...readable.map((p) => `--allow-fs-read=${p}`), '--allow-worker',
    // Where the permission model also covers the network (Node 25): functions need it (context.http, fetch),
    // and the workers reach the runtime over a local socket.
    ...(node.allowNet ? ['--allow-net'] : []),
    // The permission model's own warnings (experimental; --allow-worker) say nothing the runtime's user can act on.
    '--no-warnings',
    // Each worker collects its own heap on its own (low-priority) thread rather than with the process's
    // helper threads: on two cores, a call then took ~20 µs less CPU (runtime/functions/README.md, Costs).
    '--single-threaded-gc',
    // Debugging: the inspector on loopback whatever the runtime's --host, its secret (the path of its
    // WebSocket) only on stderr, which the runtime reads and function code cannot (Node would otherwise
    // hand it to anything on the machine that asks http://127.0.0.1:PORT/json/list, function code included).
    // The workers get `--allow-inspector` too (process.ts), without which Node debugs no worker; lockdown.ts
    // takes the inspector module's powers from them before function code runs.
    ...(inspectPort === undefined ? [] : ['--allow-inspector', `--inspect=127.0.0.1:${inspectPort}`, '--inspect-publish-uid=stderr']),
    file, JSON.stringify(settings),
  ];
}

/** What Node's inspector writes to stderr: never part of an error message (its URL holds the inspector's secret). */
const INSPECTOR_LINE = /^(Debugger listening on |Debugger attached|Debugger ending on |Waiting for the debugger|For help, see: |Starting inspector on )/;

const isId = (v: unknown): v is number => Number.isSafeInteger(v);
const isText = (v: unknown): v is string => typeof v === 'string';

/** The message, when it is one the function process's agent may send; its code is the app's, so nothing is taken on trust. */
function checkedFromAgent(m: unknown): FromAgent | undefined {
  if (m === null || typeof m !== 'object') return undefined;
  const x = m as Record<string, unknown>;
  const ok = (() => {
    switch (x.t) {
      case 'progress':
        return typeof x.cpu === 'number' && Array.isArray(x.workers) && x.workers.every(isId);
      case 'sealed':
        return isId(x.n) && isId(x.started);
      case 'unsealed':
        return isId(x.n);
      case 'rescued':
        return isId(x.n) && Array.isArray(x.messages);
      case 'stopped': {
        const cause = x.cause as Record<string, unknown> | undefined;
        return isId(x.n) && isId(x.running) && (cause === undefined || (cause !== null && typeof cause === 'object' && (isText(cause.memory) || isText(cause.failed))));
      }
      case 'sync': {
        const request = x.request as Record<string, unknown> | null;
        return isId(x.sid) && request !== null && typeof request === 'object' && (request.t === 'environment' || (request.t === 'value' && isText(request.name)));
      }
      default:
        return false;
    }
  })();
  return ok ? (m as FromAgent) : undefined;
}

export function createFunctionRunner(options: FunctionRunnerOptions): FunctionRunner {
  const { host } = options;
  const log: FunctionLog = options.log ?? (() => undefined);
  const settings: FunctionProcessSettings = {
    memoryLimitMb: options.memoryLimitMb ?? DEFAULT_MEMORY_LIMIT_MB,
    ...(options.packagesDir ? { packagesDir: options.packagesDir } : {}),
  };
  const timeoutMs = options.timeoutMs ?? DEFAULT_FUNCTION_TIMEOUT_MS;
  const inspect = options.inspect && !options.unisolatedForBenchmarks ? options.inspect : undefined;
  const node = inspect?.node ?? currentNode();
  if (inspect) {
    const why = whyFunctionsCannotBeDebugged(node);
    if (why) throw new Error(why);
  }
  /** The inspector's port: as given, or the one Node picked on the first start, kept for later starts. */
  let inspectPort = inspect?.port;
  const poolSize = Math.max(1, options.poolSize ?? DEFAULT_POOL_SIZE);

  const sources = new Map<string, LoadedSource>();
  const syntaxErrors = new Map<number, FunctionSyntaxError>();
  /** Running calls by id. */
  const calls = new Map<number, CallRecord>();
  /** Running calls by the caller identity they handed the host (a plain map, emptied as calls settle: cheaper than a WeakMap entry per call). */
  const callers = new Map<FunctionCaller, CallRecord>();
  const encodings = new OriginalEncodings();
  let current: FunctionProcess | undefined;
  /** The last process started ended before its agent connected (see FunctionRunner.state). */
  let lastStartFailed = false;
  let nextSourceId = 1;
  let nextCallId = 1;
  let nextHandle = 1;
  let closed = false;

  async function load(name: string): Promise<LoadedSource> {
    const found = await options.loadSource(name);
    if (!found) throw new FunctionNotFound(name);
    const loaded = { id: nextSourceId++, text: found.source, path: found.path };
    sources.set(name, loaded);
    return loaded;
  }

  /** The pool, whose messages come here, talking to its agent through `agent` and to workers through `openLink`. */
  function createPool(fp: () => FunctionProcess, agent: (message: ToAgent) => void, openLink: Parameters<typeof createWorkerPool>[0]['openLink']): WorkerPool {
    const emit = batcher<FromPool>((batch) => { for (const message of batch) onPoolMessage(fp(), message); });
    return createWorkerPool({ timeoutMs, poolSize, agent, openLink, emit, debugging: inspect !== undefined });
  }

  /** Messages to the agent leave in one batch when this turn of the event loop ends. */
  function batcher<T>(deliver: (batch: T[]) => void): (message: T) => void {
    let outbox: T[] = [];
    return (message) => {
      if (outbox.length === 0) {
        setImmediate(() => {
          const batch = outbox;
          outbox = [];
          deliver(batch);
        });
      }
      outbox.push(message);
    };
  }

  function startProcess(): FunctionProcess {
    const file = functionProcessFile();
    const links: LinkServer = createLinkServer((error) => log('functions', 'error', `function workers cannot connect to the runtime: ${error.message}`));
    // The agent's link is one of the link server's, like each worker's: no IPC channel, whose messages
    // Node would decode (and throw on, out of the runtime's reach) before the runtime could check them.
    const agentLink = links.expect<ToAgent>();
    const child = spawn(node.execPath, functionProcessArguments(node, file, { ...settings, link: { address: links.address, token: agentLink.token } }, log, inspectPort), {
      stdio: ['ignore', 'ignore', 'pipe'],
      // Nothing of the runtime's environment (tokens, keys, paths): the process needs none of it, but for
      // running as Node inside the editor's Electron and Windows' system folder (sockets and crypto need it).
      env: {
        ...(process.versions.electron ? { ELECTRON_RUN_AS_NODE: '1' } : {}),
        ...(process.platform === 'win32' && process.env.SystemRoot ? { SystemRoot: process.env.SystemRoot } : {}),
      },
      windowsHide: true,
    });
    /** The end of what it wrote to stderr (Node's own reports, such as running out of memory). */
    let stderrTail = '';
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let connected!: (up: boolean) => void;
    const connection = new Promise<boolean>((resolve) => { connected = resolve; });
    void exited.then(() => { if (!fp.up) { lastStartFailed = true; connected(false); } });
    const stderr = child.stderr as (NodeJS.ReadableStream & { ref?(): void; unref?(): void }) | null;
    let toAgentLink: BatchLink<ToAgent> | undefined;
    /** Batches for the agent before it has connected. */
    let early: ToAgent[][] = [];
    let holding = false;
    const toAgent = batcher<ToAgent>((batch) => {
      if (toAgentLink) toAgentLink.send(batch);
      else if (fp.alive) early.push(batch);
    });
    const pool = createPool(() => fp, toAgent, () => {
      const { token, link } = links.expect<ToWorker>();
      return { spec: { address: links.address, token }, link, cancel: () => links.cancel(token) };
    });
    const fp: FunctionProcess = {
      alive: true, connected: connection, up: false, ...(child.pid !== undefined ? { pid: child.pid } : {}), knownSources: new Set(), pool, agent: toAgent,
      hold(busy) {
        holding = busy;
        toAgentLink?.hold(busy);
        if (busy) {
          child.ref();
          stderr?.ref?.();
        } else {
          child.unref();
          stderr?.unref?.();
        }
      },
      async stop() {
        fp.alive = false;
        pool.close();
        // Referenced again so that waiting for its exit keeps this process's event loop going.
        child.ref();
        child.kill('SIGKILL');
        await exited;
        await links.close();
      },
    };
    void agentLink.link.then((link) => {
      if (!fp.alive) {
        link.close();
        return;
      }
      toAgentLink = link;
      fp.up = true;
      lastStartFailed = false;
      connected(true);
      link.hold(holding);
      for (const batch of early) link.send(batch);
      early = [];
      link.listen((batch) => fromAgent(fp, batch), (why) => {
        if (!fp.alive) return;
        // It wrote what is no frame, or closed its link (ending, or its code did): either way it is done
        // for; its exit fails what it still ran, with what it wrote to stderr.
        if (why) lost(fp, `the function process broke its link to the runtime: ${why}`);
        child.kill('SIGKILL');
      });
    });
    stderr?.setEncoding('utf8');
    // Read at a bounded rate: function code can write to the descriptor as fast as a pipe takes it, and
    // reading it all cost the runtime a core; paused, the pipe fills and the writer waits, not the runtime.
    let stderrWindowStart = 0;
    let stderrWindowChars = 0;
    /** The inspector's first lines, until it said where it listens (or that it cannot). */
    let inspectorLines = inspect ? '' : undefined;
    stderr?.on('data', (chunk: string) => {
      if (inspectorLines !== undefined) {
        inspectorLines += chunk;
        const listening = /Debugger listening on (ws:\/\/127\.0\.0\.1:(\d+)\/[0-9a-f-]+)/.exec(inspectorLines);
        const failed = /Starting inspector on (\S+) failed: ([^\n]*)/.exec(inspectorLines);
        if (listening) {
          inspectPort = Number(listening[2]);
          inspect!.onInspector({ url: listening[1]!, port: inspectPort });
        } else if (failed) {
          inspect!.onInspector({ error: `the function inspector cannot listen on ${failed[1]}: ${failed[2]}` });
        }
        if (listening || failed || inspectorLines.length > STDERR_TAIL_CHARS) inspectorLines = undefined;
      }
      stderrTail = (stderrTail + chunk).split('\n').filter((line) => !INSPECTOR_LINE.test(line)).join('\n').slice(-STDERR_TAIL_CHARS);
      const now = Date.now();
      if (now - stderrWindowStart >= STDERR_WINDOW_MS) {
        stderrWindowStart = now;
        stderrWindowChars = 0;
      }
      stderrWindowChars += chunk.length;
      if (stderrWindowChars > STDERR_CHARS_PER_WINDOW) {
        stderr.pause();
        setTimeout(() => stderr.resume(), stderrWindowStart + STDERR_WINDOW_MS - now).unref();
      }
    });
    child.on('error', (error) => log('functions', 'error', `the function process failed: ${error.message}`));
    child.on('exit', (code, signal) => {
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      const detail = stderrTail.trim().split('\n').slice(-3).join(' ').slice(0, 500);
      lost(fp, `the function process stopped unexpectedly (${how})${detail ? `: ${detail}` : ''}`);
      void links.close();
    });
    fp.hold(false);
    return fp;
  }

  /** The workers on this process's own threads (see FunctionRunnerOptions.unisolatedForBenchmarks). */
  function startUnisolated(): FunctionProcess {
    const workerFile = path.join(path.dirname(functionProcessFile()), 'function-worker.js');
    const agent = createAgent({
      ...settings, packagesDir: settings.packagesDir,
      startWorker: (_init, workerOptions) => new Worker(workerFile, workerOptions),
      emit: batcher<FromAgent>((batch) => fromAgent(fp, batch)),
    });
    const toAgent = batcher<ToAgent>((batch) => { for (const message of batch) agent.receive(message); });
    const pool = createPool(() => fp, toAgent, () => {
      const { port1, port2 } = new MessageChannel();
      const link: BatchLink<ToWorker> = portLink(port1);
      return { spec: { port: port2 }, link: Promise.resolve(link), cancel: () => port1.close() };
    });
    const fp: FunctionProcess = {
      alive: true, connected: Promise.resolve(true), up: true, knownSources: new Set(), pool, agent: toAgent,
      hold: () => undefined,
      async stop() {
        fp.alive = false;
        pool.close();
        await agent.close();
      },
    };
    return fp;
  }

  /** A batch from the agent: each message is checked before it is used. */
  function fromAgent(fp: FunctionProcess, batch: unknown): void {
    if (!Array.isArray(batch) || !fp.alive) return;
    for (const message of batch) {
      const checked = checkedFromAgent(message);
      if (!checked) log('functions', 'error', 'the function process sent a message the runtime does not accept; it was ignored');
      else if (checked.t === 'sync') answerSync(fp, checked.sid, checked.request);
      else fp.pool.fromAgent(checked);
    }
  }

  /** The process is gone: its calls fail, and the next call starts another. */
  function lost(fp: FunctionProcess, why: string): void {
    const wasAlive = fp.alive;
    fp.alive = false;
    if (current === fp) current = undefined;
    for (const call of [...calls.values()]) {
      if (call.process === fp) settle(call, { error: new FunctionExecutionError(call.name, why) });
    }
    // Its calls have failed with the reason above; the pool only lets go of its workers and timers.
    if (wasAlive) fp.pool.close();
    // While debugging, the next process starts at once (not on the next call), so that its inspector is
    // announced and the debugger attaches again before a call runs. Not after a process that never came
    // up: that would loop.
    if (inspect && wasAlive && fp.up) {
      setImmediate(() => {
        if (closed || current) return;
        try {
          current = startProcess();
        } catch (error) {
          log('functions', 'error', `the function process cannot start again: ${messageOf(error)}`);
        }
      });
    }
  }

  let sweep: NodeJS.Timeout | undefined;

  /** The last guard: no call waits forever, whatever happened to it in the pool. */
  function sweepLostCalls(): void {
    const deadline = Date.now() - (2 * timeoutMs + LOST_CALL_GRACE_MS);
    for (const call of [...calls.values()]) {
      if (call.since > deadline) continue;
      log(call.name, 'error', `the function pool did not settle call ${call.id} within twice the execution time limit; it was ended here (a defect of the runtime, please report it)`);
      settle(call, { error: new ExecutionTimeLimitExceeded(call.name) });
    }
    if (calls.size === 0) {
      clearInterval(sweep);
      sweep = undefined;
    }
  }

  function settle(call: CallRecord, outcome: { value: unknown } | { error: Error }): void {
    if (!calls.delete(call.id)) return;
    callers.delete(call.caller);
    if ('error' in outcome) call.reject(outcome.error);
    else call.resolve(outcome.value);
    if (calls.size === 0 && call.process.alive) call.process.hold(false);
  }

  /** The BSON of `value`'s elements by index, when it is an array of copies of documents whose BSON is kept. */
  function keptEncodings(value: unknown): ((index: number) => Encoded) | undefined {
    if (!Array.isArray(value)) return undefined;
    const originals = host.storedOriginals?.(value);
    if (!originals || originals.length !== value.length) return undefined;
    return (index) => encodings.encode(originals[index] as Record<string, unknown>);
  }

  function reply(call: CallRecord, rid: number, work: () => unknown, fromService = false): void {
    const lend = (doc: unknown): number => {
      const handle = nextHandle++;
      (call.lent ??= new Map()).set(handle, doc);
      return handle;
    };
    Promise.resolve()
      .then(work)
      .then(
        (value) => {
          if (calls.has(call.id)) toPool(call.process, { t: 'reply', id: call.id, rid, ok: true, ...encodeLending(value, lend, fromService ? keptEncodings(value) : undefined) });
        },
        (error: unknown) => {
          if (calls.has(call.id)) toPool(call.process, { t: 'reply', id: call.id, rid, ok: false, message: messageOf(error) });
        },
      )
      .catch((error: unknown) => {
        if (calls.has(call.id)) toPool(call.process, { t: 'reply', id: call.id, rid, ok: false, message: messageOf(error) });
      });
  }

  function toPool(fp: FunctionProcess, message: Parameters<WorkerPool['receive']>[0]): void {
    if (fp.alive) fp.pool.receive(message);
  }

  function answerSync(fp: FunctionProcess, sid: number, request: Extract<FromAgent, { t: 'sync' }>['request']): void {
    let answer: SyncReply;
    try {
      answer = { ok: true, payload: carry(request.t === 'value' ? host.values.get(request.name) : host.environment) };
    } catch (error) {
      answer = { ok: false, message: messageOf(error) };
    }
    fp.agent({ t: 'sync', sid, reply: answer });
  }

  function onPoolMessage(fp: FunctionProcess, message: FromPool): void {
    if (message.t === 'log') {
      log(message.name, message.level, message.text);
      return;
    }
    const call = calls.get(message.id);
    if (!call || call.process !== fp) return;
    switch (message.t) {
      case 'ended':
        settle(call, { error: message.timeUp ? new ExecutionTimeLimitExceeded(call.name) : new FunctionExecutionError(call.name, message.message) });
        return;
      case 'done': {
        let value: unknown;
        try {
          value = decodeReturned(message, (handle) => {
            if (!call.lent?.has(handle)) throw new Error(`the function returned document ${handle}, which was never lent to this call`);
            return call.lent.get(handle);
          });
        } catch (error) {
          settle(call, { error: new FunctionExecutionError(call.name, messageOf(error)) });
          return;
        }
        settle(call, { value });
        return;
      }
      case 'failed':
        settle(call, { error: new FunctionExecutionError(call.name, message.message, message.stack) });
        return;
      case 'syntax': {
        const error = new FunctionSyntaxError(call.name, call.source.path, message.reason, { line: message.line, character: message.character });
        syntaxErrors.set(call.source.id, error);
        settle(call, { error });
        return;
      }
      case 'service':
        reply(call, message.rid, () => host.serviceAction(message.service, message.action, decodeValue(message.payload) as Record<string, unknown>, call.ctx), true);
        return;
      case 'execute':
        reply(call, message.rid, () => host.executeFunction(message.name, decodeValue(message.payload) as unknown[], { ...call.ctx, caller: call.caller }));
        return;
    }
  }

  return {
    async run(name, args, ctx = {}) {
      if (closed) throw new FunctionExecutionError(name, 'the function runner is closed');
      const source = sources.get(name) ?? (await load(name));
      const syntaxError = syntaxErrors.get(source.id);
      if (syntaxError) throw syntaxError;
      let payload: Carried;
      try {
        // Absent rather than undefined, which would keep the payload from crossing as plain data.
        payload = carry({
          args, runAsSystem: ctx.runAsSystem === true, ...(ctx.user ? { user: ctx.user } : {}), ...(ctx.request ? { request: ctx.request } : {}),
        } satisfies CallPayload);
      } catch (error) {
        throw new FunctionExecutionError(name, `arguments cannot be passed to the function: ${messageOf(error)}`);
      }
      if (closed) throw new FunctionExecutionError(name, 'the function runner is closed');
      let fp: FunctionProcess;
      try {
        fp = (current ??= options.unisolatedForBenchmarks ? startUnisolated() : startProcess());
      } catch (error) {
        throw new FunctionExecutionError(name, `the function process cannot start: ${messageOf(error)}`);
      }
      return new Promise((resolve, reject) => {
        const parent = ctx.caller ? callers.get(ctx.caller) : undefined;
        const call: CallRecord = { id: nextCallId++, name, source, ctx, caller: Object.freeze({ functionName: name }), process: fp, since: Date.now(), resolve, reject };
        callers.set(call.caller, call);
        // While debugging a paused call may wait for as long as the developer likes.
        if (!sweep && !inspect) {
          sweep = setInterval(sweepLostCalls, LOST_CALL_SWEEP_MS);
          sweep.unref();
        }
        if (calls.size === 0) fp.hold(true);
        calls.set(call.id, call);
        const known = fp.knownSources.has(source.id);
        fp.knownSources.add(source.id);
        toPool(fp, {
          t: 'call', id: call.id, name, sourceId: source.id, path: source.path, payload,
          ...(parent && parent.process === fp ? { parent: parent.id } : {}),
          ...(known ? {} : { source: source.text }),
        });
      });
    },

    reload() {
      sources.clear();
      syntaxErrors.clear();
      if (current) {
        current.knownSources.clear();
        toPool(current, { t: 'reload' });
      }
    },

    async warmUp() {
      if (closed) return false;
      try {
        current ??= options.unisolatedForBenchmarks ? startUnisolated() : startProcess();
      } catch (error) {
        lastStartFailed = true;
        log('functions', 'error', `the function process cannot start: ${messageOf(error)}`);
        return false;
      }
      return current.connected;
    },

    processId: () => (current?.alive ? current.pid : undefined),

    state() {
      if (closed) return 'closed';
      if (current?.alive) return current.up ? 'up' : 'starting';
      return lastStartFailed ? 'failed' : 'idle';
    },

    async close() {
      closed = true;
      clearInterval(sweep);
      sweep = undefined;
      for (const call of [...calls.values()]) settle(call, { error: new FunctionExecutionError(call.name, 'the function runner is closed') });
      callers.clear();
      const fp = current;
      current = undefined;
      if (fp?.alive) await fp.stop();
    },
  };
}
