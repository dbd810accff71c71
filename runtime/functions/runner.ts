// Runs app functions on a small pool of worker threads. Calls share workers: a function spends most of its
// time waiting for data from this thread, and while it waits its worker runs others. Messages each way
// leave in one batch per turn of the event loop. The time limit: when a call runs out of time, its worker
// is pinged; a worker that answers is merely waiting, so only that call is dropped; a worker that does not
// is stuck in a loop and is terminated. Its other calls then are retried on another worker when they had
// not yet asked this thread for anything (so nothing of them was seen), and fail with a clear error
// otherwise. New calls are not given to a worker that has left messages unanswered for a while. Data,
// values and nested function calls are answered here, on the main thread, by the injected host.
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import fs from 'node:fs';
import path from 'node:path';
import { OriginalEncodings } from './encodings';
import { ExecutionTimeLimitExceeded, FunctionExecutionError, FunctionNotFound, FunctionSyntaxError } from './errors';
import {
  carry, decodeReturned, decodeValue, encodeLending,
  type CallPayload, type Carried, type Encoded, type FromWorker, type LogLevel, type SyncReply, type SyncRequest, type ToWorker, type WorkerInit,
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
}

export interface FunctionRunner {
  /** `args`, `ctx.user` and `ctx.request` cross to the worker when this turn of the event loop ends: leave them unchanged. */
  run(name: string, args: unknown[], ctx?: FunctionCallContext): Promise<unknown>;
  /** Forget loaded sources (they changed on disk); calls already running finish with the old code. */
  reload(): void;
  close(): Promise<void>;
}

interface LoadedSource { id: number; text: string; path: string }

interface WorkerSlot {
  worker: Worker;
  syncPort: MessagePort;
  ready: boolean;
  alive: boolean;
  calls: Map<number, CallRecord>;
  knownSources: Set<number>;
  /** Messages for the worker, posted together when this turn of the event loop ends. */
  outbox: ToWorker[];
  /** When the oldest message the worker has not answered since was sent; undefined when it has answered all. */
  unansweredSince?: number;
  /** Which call's code the worker is running (see WorkerInit.runningCall). */
  runningCall: Int32Array;
  /** Resolves true when the worker answers the ping in flight. */
  ping?: { answered: Promise<boolean>; answer(alive: boolean): void };
}

interface CallRecord {
  id: number;
  name: string;
  source: LoadedSource;
  payload: Carried;
  ctx: FunctionCallContext;
  caller: FunctionCaller;
  /** The call that executed this one (`context.functions.execute`); it runs on the same worker. */
  parent?: CallRecord;
  slot?: WorkerSlot;
  timer?: NodeJS.Timeout;
  /** Requests it sent to this thread (data, nested calls): after one, a retry could repeat what it did. */
  hostRequests: number;
  /** Documents lent to it in replies, by handle (see protocol.Lent). */
  lent?: Map<number, unknown>;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/**
 * Workers started at most, whatever the number of cores: calls spend most of their time waiting for this
 * thread, so a worker more than there are cores costs little, and each worker's queue of messages (whose
 * answers leave together) stays short. On two cores four served function resolvers ~10% faster than two.
 */
const DEFAULT_POOL_SIZE = 4;
/** How long a worker may leave messages unanswered before new calls go elsewhere. */
const UNRESPONSIVE_AFTER_MS = 1000;
/** How long a ping may go unanswered before the worker counts as stuck. */
const PING_GRACE_MS = 250;
const RECENT_NAMES_KEPT = 1000;
/** A worker's heap limit (V8's old generation); buffers and typed arrays are outside it, see watchMemory. */
const WORKER_HEAP_LIMIT_MB = 256;
const DEFAULT_MEMORY_LIMIT_MB = 768;
const MEMORY_RELEASE_MS = 500;
/** How often the workers' memory is checked while calls run: a loop filling buffers can take ~100 MiB in 25 ms. */
const MEMORY_CHECK_MS = 25;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The bundle ships the worker as dist/function-worker.js beside the code that loads it; from sources it is compiled by tsx. */
function startWorker(init: WorkerInit): Worker {
  const options = {
    workerData: init,
    transferList: [init.syncPort],
    env: {},
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_LIMIT_MB },
    name: 'asl-functions',
  };
  const bundled = path.join(__dirname, 'function-worker.js');
  if (fs.existsSync(bundled)) return new Worker(bundled, options);
  const loader = `require(require.resolve('tsx/cjs', { paths: [${JSON.stringify(__dirname)}] }));`;
  return new Worker(`${loader} require(${JSON.stringify(path.join(__dirname, 'worker.ts'))});`, { ...options, eval: true });
}

export function createFunctionRunner(options: FunctionRunnerOptions): FunctionRunner {
  const { host } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_FUNCTION_TIMEOUT_MS;
  const poolSize = Math.max(1, options.poolSize ?? DEFAULT_POOL_SIZE);
  const log: FunctionLog = options.log ?? (() => undefined);

  const sources = new Map<string, LoadedSource>();
  const syntaxErrors = new Map<number, FunctionSyntaxError>();
  const slots: WorkerSlot[] = [];
  const queue: CallRecord[] = [];
  /** Running calls by the caller identity they handed the host (a plain map, emptied as calls settle: cheaper than a WeakMap entry per call). */
  const callers = new Map<FunctionCaller, CallRecord>();
  /** The names of the latest calls by id, to name a finished call whose leftover code blocks a worker. */
  const recentNames = new Map<number, string>();
  const encodings = new OriginalEncodings();
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

  function spawn(): WorkerSlot {
    const syncFlag = new Int32Array(new SharedArrayBuffer(4));
    const runningCall = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    const slot: WorkerSlot = {
      worker: startWorker({ packagesDir: options.packagesDir, syncFlag, runningCall, syncPort: port2 }),
      runningCall,
      syncPort: port1,
      ready: false,
      alive: true,
      calls: new Map(),
      knownSources: new Set(),
      outbox: [],
    };
    slot.worker.unref();
    port1.unref();
    port1.on('message', (request: SyncRequest) => {
      let reply: SyncReply;
      try {
        reply = { ok: true, payload: carry(request.t === 'value' ? host.values.get(request.name) : host.environment) };
      } catch (error) {
        reply = { ok: false, message: messageOf(error) };
      }
      port1.postMessage(reply);
      Atomics.store(syncFlag, 0, 1);
      Atomics.notify(syncFlag, 0);
    });
    slot.worker.on('message', (batch: FromWorker[]) => {
      slot.unansweredSince = undefined;
      for (const message of batch) onWorkerMessage(slot, message);
      if (queue.length > 0) pump();
    });
    slot.worker.on('error', (error) => {
      if ((error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        void outOfMemory(slot, `its heap grew beyond ${WORKER_HEAP_LIMIT_MB} MB`);
        return;
      }
      void retire(slot, (call) => new FunctionExecutionError(call.name, `function worker failed: ${error.message}`));
    });
    slot.worker.on('exit', (code) => retire(slot, (call) => new FunctionExecutionError(call.name, `function worker stopped unexpectedly (exit code ${code})`)));
    slots.push(slot);
    return slot;
  }

  function send(slot: WorkerSlot, message: ToWorker): void {
    if (slot.outbox.length === 0) setImmediate(flush, slot);
    slot.outbox.push(message);
    slot.unansweredSince ??= Date.now();
  }

  function flush(slot: WorkerSlot): void {
    const batch = slot.outbox;
    slot.outbox = [];
    if (slot.alive && batch.length > 0) slot.worker.postMessage(batch);
  }

  function startClock(call: CallRecord): void {
    call.timer = setTimeout(() => void timeUp(call), timeoutMs);
  }

  /** A call ran out of time: drop it alone if its worker still answers, else stop the stuck worker. */
  async function timeUp(call: CallRecord): Promise<void> {
    const slot = call.slot;
    if (!slot || !slot.calls.has(call.id)) return;
    if (await answersPing(slot)) {
      if (!slot.calls.has(call.id)) return;
      for (const dropped of [call, ...descendants(slot, call)]) {
        send(slot, { t: 'abandon', id: dropped.id });
        settle(dropped, { error: new ExecutionTimeLimitExceeded(dropped.name) });
      }
      return;
    }
    // The worker names the call whose code it is stuck in. That call's whole tree (callers waiting on it,
    // calls it waits on) ran out of time; the worker's other calls, the one whose clock ran out included,
    // only shared the worker. When the worker names no running call (code a finished call left behind
    // keeps it busy), no call is charged with the time limit.
    const running = Atomics.load(slot.runningCall, 0);
    const culprit = slot.calls.get(running);
    if (!culprit) {
      const left = recentNames.get(running);
      const blamed = left ? `code function '${left}' left running after it returned` : 'code no running call accounts for';
      log(left ?? 'functions', 'error', `${blamed} kept a function worker busy past the time limit; the worker was stopped and its calls retried elsewhere where possible`);
      await retire(slot, () => undefined, (c) => new FunctionExecutionError(c.name, `stopped with its worker, which ${blamed} kept busy`));
      return;
    }
    const tree = new Set([culprit, ...descendants(slot, culprit)]);
    for (let p = culprit.parent; p; p = p.parent) tree.add(p);
    log(culprit.name, 'error', `exceeded the execution time limit and kept its worker busy; the worker was stopped (${slot.calls.size - tree.size} other call(s) on it retried elsewhere or failed)`);
    await retire(slot, (c) => (tree.has(c) ? new ExecutionTimeLimitExceeded(c.name) : undefined), (c) =>
      new FunctionExecutionError(c.name, `stopped with its worker: function '${culprit.name}', running on the same worker, exceeded the execution time limit`));
  }

  /**
   * A worker used more memory than functions may: the call running its code then is charged with it (with
   * its tree); the worker's other calls are retried elsewhere where possible.
   */
  function outOfMemory(slot: WorkerSlot, how: string): Promise<unknown> {
    const culprit = slot.calls.get(Atomics.load(slot.runningCall, 0));
    const tree = new Set(culprit ? [culprit, ...descendants(slot, culprit)] : []);
    for (let p = culprit?.parent; p; p = p.parent) tree.add(p);
    const message = `exceeded the memory limit of functions: ${how}; the worker was stopped`;
    log(culprit?.name ?? 'functions', 'error', message);
    return retire(slot, (c) => (tree.has(c) ? new FunctionExecutionError(c.name, message) : undefined), (c) =>
      new FunctionExecutionError(c.name, `stopped with its worker: ${culprit ? `function '${culprit.name}'` : 'a function'}, running on the same worker, exceeded the memory limit`));
  }

  /** Memory of the process not held by this thread: the workers' (their heaps, buffers and typed arrays). */
  function workersMemory(): number {
    const usage = process.memoryUsage();
    return usage.rss - usage.heapTotal - usage.external;
  }

  const memoryLimitBytes = (options.memoryLimitMb ?? DEFAULT_MEMORY_LIMIT_MB) * 1024 * 1024;
  let idleWorkersMemory: number | undefined;
  let memoryWatch: NodeJS.Timeout | undefined;
  /** After stopping workers, their memory takes a moment to be given back: no further check until then. */
  let memoryChecksFrom = 0;

  /** The call each worker was running function code of at the previous check. */
  const runningAtLastCheck = new Map<WorkerSlot, number>();

  /**
   * While calls run, the workers' memory is checked often; above the limit, a worker that has been running
   * the same call's code since the previous check (a loop filling buffers runs, it does not wait) is
   * stopped, and that call charged with it. Calls that merely happen to run at that instant go on.
   */
  function watchMemory(): void {
    if (memoryWatch) return;
    idleWorkersMemory ??= workersMemory();
    memoryWatch = setInterval(() => {
      const previous = new Map(runningAtLastCheck);
      runningAtLastCheck.clear();
      for (const slot of slots) {
        const running = Atomics.load(slot.runningCall, 0);
        if (slot.alive && slot.calls.has(running)) runningAtLastCheck.set(slot, running);
      }
      if (!slots.some((s) => s.calls.size > 0)) {
        clearInterval(memoryWatch);
        memoryWatch = undefined;
        idleWorkersMemory = workersMemory();
        return;
      }
      if (Date.now() < memoryChecksFrom) return;
      const used = workersMemory() - idleWorkersMemory!;
      if (used <= memoryLimitBytes) return;
      const busy = [...runningAtLastCheck].filter(([slot, call]) => previous.get(slot) === call).map(([slot]) => slot);
      if (busy.length === 0) return;
      memoryChecksFrom = Date.now() + MEMORY_RELEASE_MS;
      for (const slot of busy) void outOfMemory(slot, `functions held ${Math.round(used / 1048576)} MiB more than when idle, above the limit of ${memoryLimitBytes / 1048576} MiB (buffers and typed arrays included)`);
    }, MEMORY_CHECK_MS);
    memoryWatch.unref();
  }

  function descendants(slot: WorkerSlot, call: CallRecord): CallRecord[] {
    return [...slot.calls.values()].filter((c) => {
      for (let p = c.parent; p; p = p.parent) if (p === call) return true;
      return false;
    });
  }

  function answersPing(slot: WorkerSlot): Promise<boolean> {
    if (!slot.ping) {
      let answer!: (alive: boolean) => void;
      const answered = new Promise<boolean>((resolve) => { answer = resolve; });
      const ping = { answered, answer };
      slot.ping = ping;
      const timer = setTimeout(() => ping.answer(false), PING_GRACE_MS);
      void answered.then(() => {
        clearTimeout(timer);
        if (slot.ping === ping) slot.ping = undefined;
      });
      send(slot, { t: 'ping' });
    }
    return slot.ping.answered;
  }

  function dispatch(call: CallRecord, slot: WorkerSlot): void {
    call.slot = slot;
    recentNames.set(call.id, call.name);
    watchMemory();
    if (recentNames.size > RECENT_NAMES_KEPT) recentNames.delete(recentNames.keys().next().value!);
    if (slot.calls.size === 0) slot.worker.ref();
    slot.calls.set(call.id, call);
    const known = slot.knownSources.has(call.source.id);
    slot.knownSources.add(call.source.id);
    send(slot, {
      t: 'call', id: call.id, name: call.name, sourceId: call.source.id, path: call.source.path, payload: call.payload,
      ...(known ? {} : { source: call.source.text }),
    });
    if (slot.ready) startClock(call);
  }

  /**
   * A worker for the next call: an idle one, a new one while the pool has room, else the least busy
   * responsive one. When every worker is stuck (one user's loops can occupy them all until their time
   * limit), up to as many workers again are started, so that other users' calls still run at once.
   */
  function pickSlot(): WorkerSlot | undefined {
    const idle = slots.find((s) => s.alive && s.calls.size === 0);
    if (idle) return idle;
    if (slots.length < poolSize) return spawn();
    const now = Date.now();
    let best: WorkerSlot | undefined;
    for (const slot of slots) {
      if (!slot.alive || (slot.unansweredSince !== undefined && now - slot.unansweredSince > UNRESPONSIVE_AFTER_MS)) continue;
      if (!best || slot.calls.size < best.calls.size) best = slot;
    }
    if (!best && slots.length < 2 * poolSize) return spawn();
    return best;
  }

  function pump(): void {
    while (queue.length > 0 && !closed) {
      const slot = pickSlot();
      if (!slot) return;
      dispatch(queue.shift()!, slot);
    }
  }

  function settle(call: CallRecord, outcome: { value: unknown } | { error: Error }): void {
    const slot = call.slot;
    if (!slot || !slot.calls.delete(call.id)) return;
    callers.delete(call.caller);
    clearTimeout(call.timer);
    if ('error' in outcome) call.reject(outcome.error);
    else call.resolve(outcome.value);
    if (slot.alive && slot.calls.size === 0) {
      slot.worker.unref();
      pump();
    }
  }

  /**
   * Stops a worker. Each of its calls fails with `errorFor(call)`; when that gives undefined, the call is
   * retried on another worker if it is a top-level call that never asked this thread for anything, and
   * fails with `otherwise(call)` if not.
   */
  function retire(slot: WorkerSlot, errorFor: (call: CallRecord) => Error | undefined, otherwise?: (call: CallRecord) => Error): Promise<unknown> {
    if (!slot.alive) return Promise.resolve();
    slot.alive = false;
    slots.splice(slots.indexOf(slot), 1);
    slot.syncPort.close();
    slot.ping?.answer(false);
    const exited = slot.worker.terminate();
    const retries: CallRecord[] = [];
    for (const call of [...slot.calls.values()]) {
      const error = errorFor(call);
      if (error) {
        settle(call, { error });
      } else if (!call.parent && call.hostRequests === 0) {
        slot.calls.delete(call.id);
        clearTimeout(call.timer);
        call.slot = undefined;
        retries.push(call);
      } else {
        settle(call, { error: otherwise!(call) });
      }
    }
    queue.unshift(...retries);
    pump();
    return exited;
  }

  /** The BSON of `value`'s elements by index, when it is an array of copies of documents whose BSON is kept. */
  function keptEncodings(value: unknown): ((index: number) => Encoded) | undefined {
    if (!Array.isArray(value)) return undefined;
    const originals = host.storedOriginals?.(value);
    if (!originals || originals.length !== value.length) return undefined;
    return (index) => encodings.encode(originals[index] as Record<string, unknown>);
  }

  function reply(slot: WorkerSlot, call: CallRecord, rid: number, work: () => unknown, fromService = false): void {
    const lend = (doc: unknown): number => {
      const handle = nextHandle++;
      (call.lent ??= new Map()).set(handle, doc);
      return handle;
    };
    Promise.resolve()
      .then(work)
      .then(
        (value) => {
          if (slot.alive) send(slot, { t: 'reply', rid, ok: true, ...encodeLending(value, lend, fromService ? keptEncodings(value) : undefined) });
        },
        (error: unknown) => {
          if (slot.alive) send(slot, { t: 'reply', rid, ok: false, message: messageOf(error) });
        },
      );
  }

  function onWorkerMessage(slot: WorkerSlot, message: FromWorker): void {
    if (message.t === 'ready') {
      slot.ready = true;
      for (const call of slot.calls.values()) startClock(call);
      return;
    }
    if (message.t === 'pong') {
      slot.ping?.answer(true);
      return;
    }
    if (message.t === 'drained') return;
    if (message.t === 'log') {
      log(message.name, message.level, message.text);
      return;
    }
    const call = slot.calls.get(message.id);
    if (!call) return;
    switch (message.t) {
      case 'done': {
        let value: unknown;
        try {
          value = decodeReturned(message, (handle) => {
            if (!call.lent?.has(handle)) throw new Error(`the worker returned document ${handle}, which was never lent to this call`);
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
        settle(call, { error: new FunctionExecutionError(call.name, message.message) });
        return;
      case 'syntax': {
        const error = new FunctionSyntaxError(call.name, call.source.path, message.reason, { line: message.line, character: message.character });
        syntaxErrors.set(call.source.id, error);
        settle(call, { error });
        return;
      }
      case 'service':
        call.hostRequests++;
        reply(slot, call, message.rid, () => host.serviceAction(message.service, message.action, decodeValue(message.payload) as Record<string, unknown>, call.ctx), true);
        return;
      case 'execute':
        call.hostRequests++;
        reply(slot, call, message.rid, () => host.executeFunction(message.name, decodeValue(message.payload) as unknown[], { ...call.ctx, caller: call.caller }));
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
      return new Promise((resolve, reject) => {
        const parent = ctx.caller ? callers.get(ctx.caller) : undefined;
        const call: CallRecord = {
          id: nextCallId++, name, source, payload, ctx, caller: Object.freeze({ functionName: name }), hostRequests: 0, resolve, reject,
          ...(parent ? { parent } : {}),
        };
        callers.set(call.caller, call);
        if (parent?.slot?.alive && parent.slot.calls.has(parent.id)) {
          dispatch(call, parent.slot);
        } else {
          queue.push(call);
          pump();
        }
      });
    },

    reload() {
      sources.clear();
      syntaxErrors.clear();
      for (const slot of slots) {
        slot.knownSources.clear();
        send(slot, { t: 'reload' });
      }
    },

    async close() {
      closed = true;
      for (const call of queue.splice(0)) call.reject(new FunctionExecutionError(call.name, 'the function runner is closed'));
      callers.clear();
      await Promise.all([...slots].map((slot) => retire(slot, (call) => new FunctionExecutionError(call.name, 'the function runner is closed'))));
    },
  };
}
