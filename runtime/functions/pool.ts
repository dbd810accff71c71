// The pool of worker threads that run an app's functions, inside that app's function process (process.ts).
// Calls share workers: a function spends most of its time waiting for data from the runtime, and while it
// waits its worker runs others. Messages each way leave in one batch per turn of the event loop. The time
// limit: when a call runs out of time, its worker is pinged; a worker that answers is merely waiting, so
// only that call is dropped; a worker that does not is stuck in a loop and is terminated. Its other calls
// then are retried on another worker when they had not yet asked the runtime for anything (so nothing of
// them was seen), and fail with a clear error otherwise. A worker stuck in a call's code for 100 ms (no
// message handled, as much CPU time spent) is sealed: the calls it has not started move to other workers
// at once (see seal()), so a loop delays no call that was merely queued behind it. Everything a call asks for (data, values, nested
// calls) goes to the runtime, which alone holds the app's state; this pool holds only what it is given.
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import {
  SEALED, type Carried, type FromPool, type FromWorker, type SyncReply, type SyncRequest, type ToPool, type ToWorker, type WorkerInit,
} from './protocol';

export interface WorkerPoolOptions {
  timeoutMs: number;
  poolSize: number;
  /** Memory the workers together may use beyond what they used when last idle, in MiB (see watchMemory). */
  memoryLimitMb: number;
  packagesDir: string | undefined;
  /** Starts one worker thread running worker.ts. */
  startWorker(init: WorkerInit, options: WorkerStartOptions): Worker;
  /** Messages for the runtime; the caller batches them. */
  emit(message: FromPool): void;
}

export interface WorkerStartOptions {
  workerData: WorkerInit;
  transferList: MessagePort[];
  env: Record<string, string>;
  resourceLimits: { maxOldGenerationSizeMb: number };
  name: string;
}

export interface WorkerPool {
  receive(message: ToPool): void;
  close(): Promise<void>;
}

interface WorkerSlot {
  worker: Worker;
  syncPort: MessagePort;
  ready: boolean;
  alive: boolean;
  calls: Map<number, PoolCall>;
  knownSources: Set<number>;
  /** Messages for the worker, posted together when this turn of the event loop ends. */
  outbox: ToWorker[];
  /** When the oldest message the worker has not answered since was sent; undefined when it has answered all. */
  unansweredSince?: number;
  /** Which call's code the worker is running (see WorkerInit.runningCall). */
  runningCall: Int32Array;
  syncFlag: Int32Array;
  /** How many messages the worker has handled (see WorkerInit.handled), as last seen, and since when. */
  handled: Int32Array;
  handledSeen: number;
  handledSeenSince: number;
  /** This process's CPU time (µs) when the worker was last seen handling a message, or was sent its oldest unanswered one. */
  cpuAtSeen: number;
  cpuAtUnanswered: number;
  /** The last call the worker started, and whether it is sealed (see WorkerInit.started). */
  started: Int32Array;
  /** Per-worker number of the last call dispatched to it. */
  dispatched: number;
  sealed: boolean;
  /** Resolves true when the worker answers the ping in flight. */
  ping?: { answered: Promise<boolean>; answer(alive: boolean): void };
}

interface PoolCall {
  id: number;
  name: string;
  sourceId: number;
  payload: Carried;
  parent?: PoolCall;
  slot?: WorkerSlot;
  /** Its number on its worker (see WorkerSlot.dispatched). */
  seq: number;
  timer?: NodeJS.Timeout;
  /** Requests it sent to the runtime (data, nested calls): after one, a retry could repeat what it did. */
  hostRequests: number;
}

/** How long a worker may leave messages unanswered before new calls go elsewhere. */
const UNRESPONSIVE_AFTER_MS = 1000;
/**
 * How long a worker may handle no message at all, while it has some, before it is sealed; this process
 * must also have spent as much CPU time meanwhile (a stuck worker burns it; a loaded machine that merely
 * runs the function threads late does not).
 */
const STALLED_AFTER_MS = 100;
/** How often workers with unanswered messages are looked at. */
const RESPONSIVENESS_CHECK_MS = 25;
/** How long a ping may go unanswered before the worker counts as stuck. */
const PING_GRACE_MS = 250;
const RECENT_NAMES_KEPT = 1000;
/** A worker's heap limit (V8's old generation); buffers and typed arrays are outside it, see watchMemory. */
export const WORKER_HEAP_LIMIT_MB = 256;
const MEMORY_RELEASE_MS = 500;
/** How often the workers' memory is checked while calls run: a loop filling buffers can take ~100 MiB in 25 ms. */
const MEMORY_CHECK_MS = 25;
/** The lower bits of WorkerInit.started: the worker's number of the call it started last. */
const SEQ_MASK = SEALED - 1;

export function createWorkerPool(options: WorkerPoolOptions): WorkerPool {
  const { timeoutMs, emit } = options;
  const poolSize = Math.max(1, options.poolSize);
  const sources = new Map<number, { text: string; path: string }>();
  const slots: WorkerSlot[] = [];
  const queue: PoolCall[] = [];
  const calls = new Map<number, PoolCall>();
  /** The names of the latest calls by id, to name a finished call whose leftover code blocks a worker. */
  const recentNames = new Map<number, string>();
  /** Synchronous requests of workers waiting for the runtime's answer, by request id. */
  const syncWaiting = new Map<number, WorkerSlot>();
  let nextSyncId = 1;
  let closed = false;

  function spawn(): WorkerSlot {
    const syncFlag = new Int32Array(new SharedArrayBuffer(4));
    const runningCall = new Int32Array(new SharedArrayBuffer(4));
    const started = new Int32Array(new SharedArrayBuffer(4));
    const handled = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    const init: WorkerInit = { packagesDir: options.packagesDir, syncFlag, runningCall, started, handled, syncPort: port2 };
    const slot: WorkerSlot = {
      worker: options.startWorker(init, {
        workerData: init, transferList: [port2], env: {}, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_LIMIT_MB }, name: 'asl-functions',
      }),
      runningCall,
      syncFlag,
      handled,
      handledSeen: 0,
      handledSeenSince: 0,
      cpuAtSeen: 0,
      cpuAtUnanswered: 0,
      started,
      dispatched: 0,
      sealed: false,
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
      const sid = nextSyncId++;
      syncWaiting.set(sid, slot);
      emit({ t: 'sync', sid, request });
    });
    slot.worker.on('message', (batch: FromWorker[]) => {
      for (const message of batch) onWorkerMessage(slot, message);
      if (queue.length > 0) pump();
    });
    slot.worker.on('error', (error) => {
      if ((error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        void outOfMemory(slot, `its heap grew beyond ${WORKER_HEAP_LIMIT_MB} MB`);
        return;
      }
      void retire(slot, (call) => ({ message: `function worker failed: ${error.message}`, name: call.name }));
    });
    slot.worker.on('exit', (code) => retire(slot, (call) => ({ message: `function worker stopped unexpectedly (exit code ${code})`, name: call.name })));
    slots.push(slot);
    return slot;
  }

  function answerSync(sid: number, reply: SyncReply): void {
    const slot = syncWaiting.get(sid);
    if (!slot) return;
    syncWaiting.delete(sid);
    if (!slot.alive) return;
    slot.syncPort.postMessage(reply);
    Atomics.store(slot.syncFlag, 0, 1);
    Atomics.notify(slot.syncFlag, 0);
  }

  function send(slot: WorkerSlot, message: ToWorker): void {
    if (slot.outbox.length === 0) setImmediate(flush, slot);
    slot.outbox.push(message);
    if (slot.unansweredSince === undefined) {
      slot.unansweredSince = Date.now();
      slot.cpuAtUnanswered = cpuTime();
    }
    watchResponsiveness();
  }

  function flush(slot: WorkerSlot): void {
    const batch = slot.outbox;
    slot.outbox = [];
    if (slot.alive && batch.length > 0) slot.worker.postMessage(batch);
  }

  function startClock(call: PoolCall): void {
    call.timer = setTimeout(() => void timeUp(call), timeoutMs);
  }

  /** Settles a call here and tells the runtime how it ended. */
  function end(call: PoolCall, outcome: { timeUp: true } | { message: string }): void {
    if (!forget(call)) return;
    emit('timeUp' in outcome ? { t: 'ended', id: call.id, timeUp: true } : { t: 'ended', id: call.id, message: outcome.message });
  }

  /** Drops a call from its worker; false when it was no longer there. */
  function forget(call: PoolCall): boolean {
    const slot = call.slot;
    if (!slot || !slot.calls.delete(call.id)) return false;
    calls.delete(call.id);
    clearTimeout(call.timer);
    if (slot.alive && slot.calls.size === 0) {
      slot.worker.unref();
      // Workers started beyond the pool's size while others were stuck go once they are idle.
      if (!slot.sealed && slots.filter((s) => s.alive && !s.sealed).length > poolSize) void retire(slot, () => undefined);
      else pump();
    }
    return true;
  }

  /** A call ran out of time: drop it alone if its worker still answers, else stop the stuck worker. */
  async function timeUp(call: PoolCall): Promise<void> {
    const slot = call.slot;
    if (!slot || !slot.calls.has(call.id)) return;
    if (await answersPing(slot)) {
      if (!slot.calls.has(call.id)) return;
      for (const dropped of [call, ...descendants(slot, call)]) {
        send(slot, { t: 'abandon', id: dropped.id });
        end(dropped, { timeUp: true });
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
      emit({ t: 'log', name: left ?? 'functions', level: 'error', text: `${blamed} kept a function worker busy past the time limit; the worker was stopped and its calls retried elsewhere where possible` });
      await retire(slot, () => undefined, () => `stopped with its worker, which ${blamed} kept busy`);
      return;
    }
    const tree = new Set([culprit, ...descendants(slot, culprit)]);
    for (let p = culprit.parent; p; p = p.parent) tree.add(p);
    emit({ t: 'log', name: culprit.name, level: 'error', text: `exceeded the execution time limit and kept its worker busy; the worker was stopped (${slot.calls.size - tree.size} other call(s) on it retried elsewhere or failed)` });
    await retire(slot, (c) => (tree.has(c) ? 'timeUp' : undefined), () =>
      `stopped with its worker: function '${culprit.name}', running on the same worker, exceeded the execution time limit`);
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
    emit({ t: 'log', name: culprit?.name ?? 'functions', level: 'error', text: message });
    return retire(slot, (c) => (tree.has(c) ? { message } : undefined), () =>
      `stopped with its worker: ${culprit ? `function '${culprit.name}'` : 'a function'}, running on the same worker, exceeded the memory limit`);
  }

  /** Memory of this process not held by its main thread: the workers' (their heaps, buffers and typed arrays). */
  function workersMemory(): number {
    const usage = process.memoryUsage();
    return usage.rss - usage.heapTotal - usage.external;
  }

  /** CPU time this process (all its threads) has used, in µs. */
  function cpuTime(): number {
    const usage = process.cpuUsage();
    return usage.user + usage.system;
  }

  const memoryLimitBytes = options.memoryLimitMb * 1024 * 1024;
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

  let responsivenessWatch: NodeJS.Timeout | undefined;

  /**
   * While some worker has messages unanswered, looks for workers to seal: those that have handled none of
   * their messages for a while, in the middle of a call's code (stuck in it, or in a long computation).
   * A worker between two messages is merely waiting for the machine (a loaded machine runs function
   * threads last, see worker.ts), and is left alone.
   */
  function watchResponsiveness(): void {
    if (responsivenessWatch) return;
    responsivenessWatch = setInterval(() => {
      const now = Date.now();
      let waiting = false;
      for (const slot of [...slots]) {
        if (slot.unansweredSince === undefined || !slot.alive || !slot.ready) continue;
        waiting = true;
        const handled = Atomics.load(slot.handled, 0);
        if (handled !== slot.handledSeen) {
          slot.handledSeen = handled;
          slot.handledSeenSince = now;
          slot.cpuAtSeen = cpuTime();
          continue;
        }
        const sinceSeen = slot.handledSeenSince >= slot.unansweredSince;
        const stalledMs = now - (sinceSeen ? slot.handledSeenSince : slot.unansweredSince);
        const stalledCpuMs = (cpuTime() - (sinceSeen ? slot.cpuAtSeen : slot.cpuAtUnanswered)) / 1000;
        if (!slot.sealed && stalledMs > STALLED_AFTER_MS && stalledCpuMs > STALLED_AFTER_MS && Atomics.load(slot.runningCall, 0) !== 0) seal(slot);
        else if (slot.sealed && slot.calls.size === 0 && stalledMs > timeoutMs) retireLeftover(slot);
      }
      if (!waiting) {
        clearInterval(responsivenessWatch);
        responsivenessWatch = undefined;
      }
    }, RESPONSIVENESS_CHECK_MS);
    responsivenessWatch.unref();
  }

  /**
   * A stuck worker gets no more calls, and the calls it has not started move to other workers at once:
   * the worker and this thread agree atomically on which it started (see WorkerInit.started). When it
   * gets through its messages again it is unsealed; if not, its calls' time limit stops it.
   */
  function seal(slot: WorkerSlot): void {
    let seen = Atomics.load(slot.started, 0);
    for (;;) {
      const before = Atomics.compareExchange(slot.started, 0, seen, seen | SEALED);
      if (before === seen) break;
      seen = before;
    }
    slot.sealed = true;
    const lastStarted = seen & SEQ_MASK;
    const moved = [...slot.calls.values()].filter((call) => call.seq > lastStarted);
    for (const call of moved) {
      slot.calls.delete(call.id);
      clearTimeout(call.timer);
      call.slot = undefined;
    }
    if (slot.calls.size === 0) slot.worker.unref();
    // A replacement starts at once: a worker takes a while to start, and the next stuck one should find it ready.
    if (slots.filter((s) => s.alive && !s.sealed).length < poolSize && slots.length < 2 * poolSize) spawn();
    queue.unshift(...moved);
    pump();
  }

  /** The worker handled all it was sent (the calls it skipped included): it takes calls again. */
  function unseal(slot: WorkerSlot): void {
    if (!slot.sealed) return;
    Atomics.and(slot.started, 0, SEQ_MASK);
    slot.sealed = false;
    if (queue.length > 0) pump();
  }

  /** Code no running call accounts for (a finished call's leftovers) has kept a sealed worker busy past the time limit. */
  function retireLeftover(slot: WorkerSlot): void {
    const left = recentNames.get(Atomics.load(slot.runningCall, 0));
    emit({ t: 'log', name: left ?? 'functions', level: 'error', text: `${left ? `code function '${left}' left running after it returned` : 'code no running call accounts for'} kept a function worker busy past the time limit; the worker was stopped` });
    void retire(slot, () => undefined);
  }

  function descendants(slot: WorkerSlot, call: PoolCall): PoolCall[] {
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

  function dispatch(call: PoolCall, slot: WorkerSlot): void {
    call.slot = slot;
    call.seq = ++slot.dispatched;
    recentNames.set(call.id, call.name);
    watchMemory();
    if (recentNames.size > RECENT_NAMES_KEPT) recentNames.delete(recentNames.keys().next().value!);
    if (slot.calls.size === 0) slot.worker.ref();
    slot.calls.set(call.id, call);
    const known = slot.knownSources.has(call.sourceId);
    slot.knownSources.add(call.sourceId);
    const source = sources.get(call.sourceId);
    if (!source) {
      end(call, { message: `the source of function '${call.name}' was not sent to the function process` });
      return;
    }
    send(slot, {
      t: 'call', id: call.id, seq: call.seq, name: call.name, sourceId: call.sourceId, path: source.path, payload: call.payload,
      ...(known ? {} : { source: source.text }),
    });
    if (slot.ready) startClock(call);
  }

  /**
   * A worker for the next call: an idle one, a new one while the pool has room, else the least busy
   * responsive one. When every worker is stuck (one user's loops can occupy them all until their time
   * limit), up to as many workers again are started, so that other users' calls still run at once.
   */
  /**
   * How little a worker is to be preferred: its calls, and far more when it has been in one piece of code
   * since the last look (it may be stuck there) or is still starting up (which takes longer still).
   */
  function rank(slot: WorkerSlot, now: number): number {
    const inCode = slot.unansweredSince !== undefined && Atomics.load(slot.handled, 0) === slot.handledSeen && now - slot.handledSeenSince >= RESPONSIVENESS_CHECK_MS;
    return slot.calls.size + (inCode ? 4 * poolSize : 0) + (slot.ready ? 0 : 8 * poolSize);
  }

  function pickSlot(): WorkerSlot | undefined {
    const usable = slots.filter((s) => s.alive && !s.sealed);
    const idle = usable.find((s) => s.ready && s.calls.size === 0);
    if (idle) return idle;
    if (slots.length < poolSize) return spawn();
    const now = Date.now();
    let best: WorkerSlot | undefined;
    for (const slot of usable) {
      if (slot.ready && slot.unansweredSince !== undefined && now - slot.unansweredSince > UNRESPONSIVE_AFTER_MS) continue;
      if (!best || rank(slot, now) < rank(best, now)) best = slot;
    }
    if (!best && slots.length < 2 * poolSize) return spawn();
    return best;
  }

  function pump(): void {
    while (queue.length > 0 && !closed) {
      const call = queue[0]!;
      // A nested call runs on its caller's worker (waiting for a free one could deadlock a saturated pool).
      const parentSlot = call.parent?.slot;
      const slot = parentSlot?.alive && parentSlot.calls.has(call.parent!.id) && !parentSlot.sealed ? parentSlot : pickSlot();
      if (!slot) return;
      queue.shift();
      dispatch(call, slot);
    }
  }

  /**
   * Stops a worker. Each of its calls ends as `errorFor(call)` says (the time limit, or a message); when
   * that gives undefined, the call is retried on another worker if it is a top-level call that never
   * asked the runtime for anything, and fails with `otherwise(call)` if not.
   */
  function retire(
    slot: WorkerSlot, errorFor: (call: PoolCall) => 'timeUp' | { message: string; name?: string } | undefined, otherwise?: (call: PoolCall) => string,
  ): Promise<unknown> {
    if (!slot.alive) return Promise.resolve();
    slot.alive = false;
    slots.splice(slots.indexOf(slot), 1);
    slot.syncPort.close();
    slot.ping?.answer(false);
    for (const [sid, waiting] of syncWaiting) if (waiting === slot) syncWaiting.delete(sid);
    const exited = slot.worker.terminate();
    const retries: PoolCall[] = [];
    for (const call of [...slot.calls.values()]) {
      const error = errorFor(call);
      if (error === 'timeUp') {
        end(call, { timeUp: true });
      } else if (error) {
        end(call, { message: error.message });
      } else if (!call.parent && call.hostRequests === 0) {
        slot.calls.delete(call.id);
        clearTimeout(call.timer);
        call.slot = undefined;
        retries.push(call);
      } else {
        end(call, { message: otherwise!(call) });
      }
    }
    queue.unshift(...retries);
    pump();
    return exited;
  }

  function onWorkerMessage(slot: WorkerSlot, message: FromWorker): void {
    switch (message.t) {
      case 'ready':
        slot.ready = true;
        // Its start-up is no sign of being stuck: what it was sent meanwhile counts as sent now.
        if (slot.calls.size > 0) slot.unansweredSince = Date.now();
        for (const call of slot.calls.values()) startClock(call);
        return;
      case 'pong':
        slot.ping?.answer(true);
        return;
      case 'drained':
        slot.unansweredSince = undefined;
        unseal(slot);
        return;
      case 'log':
        emit(message);
        return;
      case 'skipped':
        // The worker saw the seal before starting this call; seal() has moved it already.
        return;
    }
    const call = slot.calls.get(message.id);
    if (!call) return;
    switch (message.t) {
      case 'done':
      case 'failed':
      case 'syntax':
        if (forget(call)) emit(message);
        return;
      case 'service':
      case 'execute':
        call.hostRequests++;
        emit(message);
        return;
    }
  }

  function receive(message: ToPool): void {
    switch (message.t) {
      case 'call': {
        if (closed || calls.has(message.id)) return;
        if (message.source !== undefined) sources.set(message.sourceId, { text: message.source, path: message.path });
        const parent = message.parent === undefined ? undefined : calls.get(message.parent);
        const call: PoolCall = {
          id: message.id, name: message.name, sourceId: message.sourceId, payload: message.payload, seq: 0, hostRequests: 0, ...(parent ? { parent } : {}),
        };
        calls.set(call.id, call);
        queue.push(call);
        pump();
        return;
      }
      case 'reply': {
        const slot = calls.get(message.id)?.slot;
        if (slot?.alive) send(slot, message);
        return;
      }
      case 'sync':
        answerSync(message.sid, message.reply);
        return;
      case 'reload':
        sources.clear();
        for (const slot of slots) {
          slot.knownSources.clear();
          send(slot, { t: 'reload' });
        }
        return;
    }
  }

  return {
    receive,
    async close() {
      closed = true;
      queue.length = 0;
      await Promise.all([...slots].map((slot) => retire(slot, () => ({ message: 'the function runner is closed' }))));
    },
  };
}
