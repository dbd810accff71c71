// The pool of an app's function workers, in the runtime: which worker runs each call, the time limit,
// stuck workers. The workers run where the agent (agent.ts) keeps them, in the app's function process;
// the pool talks to each over the worker's own channel (channel.ts: calls, data, outcomes), and to the
// agent about the workers themselves (start, seal, stop, how far each has got). Calls share workers: a
// function spends most of its time waiting for data from the runtime, and while it waits its worker runs
// others. Messages to a worker leave in one batch per turn of the event loop. The time limit: when a call
// runs out of time, its worker is pinged; a worker that answers is merely waiting, so only that call is
// dropped; a worker that does not is stuck in a loop and is terminated. Its other calls then are retried
// on another worker when they had not yet asked the runtime for anything (so nothing of them was seen),
// and fail with a clear error otherwise. A worker stuck in a call's code for 100 ms (no message handled,
// as much CPU time spent) is sealed: the calls it has not started move to other workers at once (see
// seal()), so a loop delays no call that was merely queued behind it. Everything from a worker is checked
// before use: its code is the app's.
import type { BatchLink } from './channel';
import {
  type FromAgent, type FromPool, type FromWorker, type StopCause, type ToAgent, type ToPool, type ToWorker, type WorkerInit, type Carried,
} from './protocol';

export interface WorkerPoolOptions {
  timeoutMs: number;
  /**
   * A debugger may pause workers (asl serve --inspect-functions): calls have no time limit, and a worker
   * that handles no message for a while in a call's code is sealed whatever CPU time the process spends
   * (a paused thread spends none), so the calls it has not started move on and others keep answering.
   */
  debugging?: boolean;
  poolSize: number;
  /** Sends a message to the agent that owns the workers. */
  agent(message: ToAgent): void;
  /** The data channel for worker `n`: what the agent passes the worker, and the link once the worker is on it. */
  openLink(n: number): { spec: WorkerInit['link']; link: Promise<BatchLink<ToWorker>>; cancel(): void };
  /** Messages for the runner. */
  emit(message: FromPool): void;
}

export interface WorkerPool {
  receive(message: ToPool): void;
  fromAgent(message: FromAgent): void;
  /** Ends every call still there and has the agent stop the workers (without waiting for it: it may be gone). */
  close(): void;
}

interface WorkerSlot {
  n: number;
  link?: BatchLink<ToWorker>;
  cancelLink(): void;
  ready: boolean;
  alive: boolean;
  calls: Map<number, PoolCall>;
  knownSources: Set<number>;
  /** Messages for the worker, sent together when this turn of the event loop ends (or once it is connected). */
  outbox: ToWorker[];
  /** When the oldest message the worker has not answered since was sent; undefined when it has answered all. */
  unansweredSince?: number;
  /** From the agent's last report: messages the worker has handled, and the call whose code it runs (0: none). */
  handled: number;
  running: number;
  /** How many messages the worker had handled when last seen to progress, and since when. */
  handledSeen: number;
  handledSeenSince: number;
  /** The agent's process's CPU time (µs) when the worker was last seen progressing, or was sent its oldest unanswered message. */
  cpuAtSeen: number;
  cpuAtUnanswered: number;
  /** Per-worker number of the last call dispatched to it. */
  dispatched: number;
  /** Its channel closed: it takes no calls, and is stopped unless the agent reports it stopped first. */
  disconnected?: boolean;
  /**
   * No new calls go to it; `sealing` while the agent has not yet said which calls it started, `unsealing`
   * while it has not yet lifted the seal (only one of the two is ever asked of the agent at a time).
   */
  sealed: boolean;
  sealing: boolean;
  unsealing: boolean;
  /** Resolves true when the worker answers the ping in flight. */
  ping?: { answered: Promise<boolean>; answer(alive: boolean): void };
  /** Once the pool has stopped it: resolves with the call whose code it was running. */
  halted?: Promise<number>;
  stopped?(running: number): void;
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
/** How long a worker with messages unanswered may show no progress before it is ranked as possibly stuck. */
const IN_CODE_AFTER_MS = 50;
/** How long the agent has to report why a worker whose channel closed stopped. */
const CHANNEL_CLOSED_GRACE_MS = 1000;
/** How long a ping may go unanswered before the worker counts as stuck. */
const PING_GRACE_MS = 250;
const RECENT_NAMES_KEPT = 1000;

export function createWorkerPool(options: WorkerPoolOptions): WorkerPool {
  const { timeoutMs, emit } = options;
  const poolSize = Math.max(1, options.poolSize);
  const sources = new Map<number, { text: string; path: string }>();
  /** Workers not stopped by the pool (sealed ones included). */
  const slots: WorkerSlot[] = [];
  /** Every worker by number until the agent says it stopped (its last reports still count). */
  const byNumber = new Map<number, WorkerSlot>();
  const queue: PoolCall[] = [];
  const calls = new Map<number, PoolCall>();
  /** The names of the latest calls by id, to name a finished call whose leftover code blocks a worker. */
  const recentNames = new Map<number, string>();
  let nextWorker = 1;
  /** The agent's process's CPU time (µs) at its last report. */
  let agentCpu = 0;
  let watching = false;
  let closed = false;

  function spawn(): WorkerSlot {
    const n = nextWorker++;
    const opened = options.openLink(n);
    const slot: WorkerSlot = {
      n, cancelLink: opened.cancel, ready: false, alive: true, calls: new Map(), knownSources: new Set(), outbox: [],
      handled: 0, running: 0, handledSeen: 0, handledSeenSince: 0, cpuAtSeen: 0, cpuAtUnanswered: 0, dispatched: 0, sealed: false, sealing: false, unsealing: false,
    };
    slots.push(slot);
    byNumber.set(n, slot);
    options.agent({ t: 'start', n, link: opened.spec });
    opened.link.then((link) => {
      if (!slot.alive) {
        link.close();
        return;
      }
      slot.link = link;
      link.listen((batch) => received(slot, batch), (why) => channelClosed(slot, why));
      link.hold(slot.calls.size > 0);
      flush(slot);
    }, () => undefined);
    return slot;
  }

  /**
   * A worker's channel closed: the worker stopped (the agent's report of why follows shortly and settles
   * its calls), or its code closed the channel, in which case it is stopped here.
   */
  function channelClosed(slot: WorkerSlot, why: string | undefined): void {
    if (!slot.alive) return;
    slot.disconnected = true;
    setTimeout(() => {
      if (slot.alive) void retire(slot, (call) => ({ message: `the function worker's channel to the runtime closed${why ? `: ${why}` : ''}`, name: call.name }));
    }, CHANNEL_CLOSED_GRACE_MS).unref();
  }

  /**
   * A batch from a worker: each message is checked before it is used. `rescued`: sent on by the agent from
   * a stuck or stopping worker's mailbox, whose finished calls still count after the pool has stopped it.
   */
  function received(slot: WorkerSlot, batch: unknown, rescued = false): void {
    if (!Array.isArray(batch)) return;
    for (const message of batch) {
      if (!slot.alive && !rescued) return;
      const checked = checkedFromWorker(message);
      if (checked) onWorkerMessage(slot, checked);
      else emit({ t: 'log', name: 'functions', level: 'error', text: 'a function worker sent a message the runtime does not accept; it was ignored' });
    }
    if (queue.length > 0) pump();
  }

  function send(slot: WorkerSlot, message: ToWorker): void {
    if (slot.outbox.length === 0) setImmediate(flush, slot);
    slot.outbox.push(message);
    if (slot.unansweredSince === undefined) {
      slot.unansweredSince = Date.now();
      slot.cpuAtUnanswered = agentCpu;
    }
    watch();
  }

  function flush(slot: WorkerSlot): void {
    if (!slot.alive || !slot.link) return;
    const batch = slot.outbox;
    slot.outbox = [];
    if (batch.length > 0) slot.link.send(batch);
  }

  function startClock(call: PoolCall): void {
    if (options.debugging) return;
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
      slot.link?.hold(false);
      // Workers started beyond the pool's size while others were stuck go once they are idle.
      if (!slot.sealed && slots.filter((s) => s.alive && !s.sealed).length > poolSize) void retire(slot, () => undefined);
      else pump();
    }
    return true;
  }

  /** A call ran out of time: drop it alone if its worker still answers, else stop the stuck worker. */
  async function timeUp(call: PoolCall): Promise<void> {
    const slot = call.slot;
    if (!slot || !slot.alive || !slot.calls.has(call.id)) return;
    if (await answersPing(slot)) {
      if (!slot.calls.has(call.id)) return;
      for (const dropped of [call, ...descendants(slot, call)]) {
        send(slot, { t: 'abandon', id: dropped.id });
        end(dropped, { timeUp: true });
      }
      return;
    }
    if (!slot.alive) return;
    // The worker names the call whose code it is stuck in. That call's whole tree (callers waiting on it,
    // calls it waits on) ran out of time; the worker's other calls, the one whose clock ran out included,
    // only shared the worker. When the worker names no running call (code a finished call left behind
    // keeps it busy), no call is charged with the time limit.
    const running = await halt(slot);
    const culprit = slot.calls.get(running);
    if (!culprit) {
      const left = recentNames.get(running);
      const blamed = left ? `code function '${left}' left running after it returned` : 'code no running call accounts for';
      emit({ t: 'log', name: left ?? 'functions', level: 'error', text: `${blamed} kept a function worker busy past the time limit; the worker was stopped and its calls retried elsewhere where possible` });
      settleCallsOf(slot, () => undefined, () => `stopped with its worker, which ${blamed} kept busy`);
      return;
    }
    const tree = new Set([culprit, ...descendants(slot, culprit)]);
    for (let p = culprit.parent; p; p = p.parent) tree.add(p);
    emit({ t: 'log', name: culprit.name, level: 'error', text: `exceeded the execution time limit and kept its worker busy; the worker was stopped (${slot.calls.size - tree.size} other call(s) on it retried elsewhere or failed)` });
    settleCallsOf(slot, (c) => (tree.has(c) ? 'timeUp' : undefined), () =>
      `stopped with its worker: function '${culprit.name}', running on the same worker, exceeded the execution time limit`);
  }

  /**
   * The agent stopped a worker that used more memory than functions may: the call running its code then
   * is charged with it (with its tree); the worker's other calls are retried elsewhere where possible.
   */
  function outOfMemory(slot: WorkerSlot, how: string, running: number): void {
    const culprit = slot.calls.get(running);
    const tree = new Set(culprit ? [culprit, ...descendants(slot, culprit)] : []);
    for (let p = culprit?.parent; p; p = p.parent) tree.add(p);
    const message = `exceeded the memory limit of functions: ${how}; the worker was stopped`;
    emit({ t: 'log', name: culprit?.name ?? 'functions', level: 'error', text: message });
    settleCallsOf(slot, (c) => (tree.has(c) ? { message } : undefined), () =>
      `stopped with its worker: ${culprit ? `function '${culprit.name}'` : 'a function'}, running on the same worker, exceeded the memory limit`);
  }

  /** The agent reports progress while some worker has calls or unanswered messages (and watches memory meanwhile). */
  function watch(): void {
    if (watching || closed) return;
    watching = true;
    options.agent({ t: 'watch', on: true });
  }

  /**
   * The agent's report: each worker's progress. Looks for workers to seal: those that have handled none
   * of their messages for a while, in the middle of a call's code (stuck in it, or in a long computation).
   * A worker between two messages is merely waiting for the machine (a loaded machine runs function
   * threads last, see worker.ts), and is left alone.
   */
  function progressed(cpu: number, workers: number[]): void {
    agentCpu = cpu;
    const now = Date.now();
    for (let i = 0; i + 2 < workers.length; i += 3) {
      const slot = byNumber.get(workers[i]!);
      if (!slot?.alive) continue;
      slot.handled = workers[i + 1]!;
      slot.running = workers[i + 2]!;
    }
    let waiting = false;
    for (const slot of [...slots]) {
      if (slot.calls.size > 0) waiting = true;
      if (slot.unansweredSince === undefined || !slot.alive || !slot.ready) continue;
      waiting = true;
      if (slot.handled !== slot.handledSeen) {
        slot.handledSeen = slot.handled;
        slot.handledSeenSince = now;
        slot.cpuAtSeen = cpu;
        continue;
      }
      const sinceSeen = slot.handledSeenSince >= slot.unansweredSince;
      const stalledMs = now - (sinceSeen ? slot.handledSeenSince : slot.unansweredSince);
      const stalledCpuMs = (cpu - (sinceSeen ? slot.cpuAtSeen : slot.cpuAtUnanswered)) / 1000;
      const busy = options.debugging || stalledCpuMs > STALLED_AFTER_MS;
      if (!slot.sealed && stalledMs > STALLED_AFTER_MS && busy && slot.running !== 0) seal(slot);
      else if (!options.debugging && slot.sealed && !slot.sealing && !slot.unsealing && slot.calls.size === 0 && stalledMs > timeoutMs) retireLeftover(slot);
    }
    if (!waiting && watching) {
      watching = false;
      options.agent({ t: 'watch', on: false });
    }
  }

  /**
   * A stuck worker gets no more calls, and the calls it has not started move to other workers as soon as
   * the agent has sealed it: the worker and the agent agree atomically on which it started (see
   * WorkerInit.started). When it gets through its messages again it is unsealed; if not, its calls' time
   * limit stops it.
   */
  function seal(slot: WorkerSlot): void {
    slot.sealed = true;
    slot.sealing = true;
    options.agent({ t: 'seal', n: slot.n });
    // A replacement starts at once: a worker takes a while to start, and the next stuck one should find it ready.
    if (slots.filter((s) => s.alive && !s.sealed).length < poolSize && slots.length < 2 * poolSize) spawn();
  }

  function sealed(slot: WorkerSlot, lastStarted: number): void {
    if (!slot.alive || !slot.sealing) return;
    slot.sealing = false;
    const moved = [...slot.calls.values()].filter((call) => call.seq > lastStarted);
    for (const call of moved) {
      slot.calls.delete(call.id);
      clearTimeout(call.timer);
      call.slot = undefined;
    }
    if (slot.calls.size === 0) slot.link?.hold(false);
    queue.unshift(...moved);
    // The worker reports `drained` (seeing its seal) once it gets through what it was sent, this ping included.
    send(slot, { t: 'ping' });
    pump();
  }

  /**
   * The sealed worker handled all it was sent (the calls it skipped included): it takes calls again once
   * the agent has lifted the seal (a call sent before that would be skipped).
   */
  function unseal(slot: WorkerSlot): void {
    if (!slot.sealed || slot.sealing || slot.unsealing) return;
    slot.unsealing = true;
    options.agent({ t: 'unseal', n: slot.n });
  }

  function unsealed(slot: WorkerSlot): void {
    if (!slot.alive || !slot.unsealing) return;
    slot.unsealing = false;
    slot.sealed = false;
    if (queue.length > 0) pump();
  }

  /** Code no running call accounts for (a finished call's leftovers) has kept a sealed worker busy past the time limit. */
  function retireLeftover(slot: WorkerSlot): void {
    const left = recentNames.get(slot.running);
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
    if (recentNames.size > RECENT_NAMES_KEPT) recentNames.delete(recentNames.keys().next().value!);
    if (slot.calls.size === 0) slot.link?.hold(true);
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
   * How little a worker is to be preferred: its calls, and far more when it has shown no progress for a
   * while with messages unanswered (it may be stuck) or is still starting up (which takes longer still).
   */
  function rank(slot: WorkerSlot, now: number): number {
    const inCode = slot.unansweredSince !== undefined && now - Math.max(slot.handledSeenSince, slot.unansweredSince) >= IN_CODE_AFTER_MS;
    return slot.calls.size + (inCode ? 4 * poolSize : 0) + (slot.ready ? 0 : 8 * poolSize);
  }

  /**
   * A worker for the next call: an idle one, a new one while the pool has room, else the least busy
   * responsive one. When every worker is stuck (one user's loops can occupy them all until their time
   * limit), up to as many workers again are started, so that other users' calls still run at once.
   */
  function pickSlot(): WorkerSlot | undefined {
    const usable = slots.filter((s) => s.alive && !s.sealed && !s.disconnected);
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
      const slot = parentSlot?.alive && parentSlot.calls.has(call.parent!.id) && !parentSlot.sealed && !parentSlot.disconnected ? parentSlot : pickSlot();
      if (!slot) return;
      queue.shift();
      dispatch(call, slot);
    }
  }

  /**
   * Takes a worker out of the pool and has the agent terminate it; resolves with the call whose code it
   * was running then.
   */
  function halt(slot: WorkerSlot): Promise<number> {
    if (slot.halted) return slot.halted;
    slot.alive = false;
    const at = slots.indexOf(slot);
    if (at >= 0) slots.splice(at, 1);
    slot.link?.close();
    slot.cancelLink();
    slot.ping?.answer(false);
    slot.halted = new Promise((resolve) => { slot.stopped = resolve; });
    options.agent({ t: 'stop', n: slot.n });
    return slot.halted;
  }

  /** The agent says a worker stopped: as the pool asked, or on its own (out of memory, failed, exited). */
  function stopped(n: number, running: number, cause: StopCause | undefined): void {
    const slot = byNumber.get(n);
    if (!slot) return;
    byNumber.delete(n);
    if (slot.halted) {
      slot.stopped!(running);
      return;
    }
    const reason = cause ?? { failed: 'function worker stopped unexpectedly' };
    void halt(slot);
    slot.stopped!(running);
    if ('memory' in reason) outOfMemory(slot, reason.memory, running);
    else settleCallsOf(slot, (call) => ({ message: reason.failed, name: call.name }));
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
    const halted = halt(slot);
    settleCallsOf(slot, errorFor, otherwise);
    return halted;
  }

  function settleCallsOf(
    slot: WorkerSlot, errorFor: (call: PoolCall) => 'timeUp' | { message: string; name?: string } | undefined, otherwise?: (call: PoolCall) => string,
  ): void {
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
  }

  function onWorkerMessage(slot: WorkerSlot, message: FromWorker): void {
    switch (message.t) {
      case 'ready':
        if (slot.ready) return;
        slot.ready = true;
        // Its start-up is no sign of being stuck: what it was sent meanwhile counts as sent now.
        if (slot.calls.size > 0) {
          slot.unansweredSince = Date.now();
          slot.cpuAtUnanswered = agentCpu;
        }
        for (const call of slot.calls.values()) startClock(call);
        return;
      case 'pong':
        slot.ping?.answer(true);
        return;
      case 'drained':
        slot.unansweredSince = undefined;
        if (message.sealed) unseal(slot);
        return;
      case 'log':
        emit(message);
        return;
      case 'skipped':
        // The worker saw the seal before starting this call; sealed() has moved it already.
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
      case 'reload':
        sources.clear();
        for (const slot of slots) {
          slot.knownSources.clear();
          send(slot, { t: 'reload' });
        }
        return;
    }
  }

  function fromAgent(message: FromAgent): void {
    switch (message.t) {
      case 'progress':
        progressed(message.cpu, message.workers);
        return;
      case 'rescued': {
        const slot = byNumber.get(message.n);
        if (slot) received(slot, message.messages, true);
        return;
      }
      case 'sealed': {
        const slot = byNumber.get(message.n);
        if (slot) sealed(slot, message.started);
        return;
      }
      case 'unsealed': {
        const slot = byNumber.get(message.n);
        if (slot) unsealed(slot);
        return;
      }
      case 'stopped':
        stopped(message.n, message.running, message.cause);
        return;
      case 'sync':
        // The runner answers these.
        return;
    }
  }

  return {
    receive,
    fromAgent,
    close() {
      closed = true;
      queue.length = 0;
      if (watching) options.agent({ t: 'watch', on: false });
      watching = false;
      for (const slot of [...slots]) void retire(slot, () => ({ message: 'the function runner is closed' }));
    },
  };
}

const isId = (v: unknown): v is number => Number.isSafeInteger(v);
const isText = (v: unknown): v is string => typeof v === 'string';
const LOG_LEVELS = new Set(['log', 'info', 'warn', 'error', 'debug']);

function isLent(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return false;
  const { root, items } = v as { root?: unknown; items?: unknown };
  return (root === undefined || isId(root)) && (items === undefined || (Array.isArray(items) && items.every(isId)));
}

/** The message, when it is one a worker may send; its code is the app's, so nothing is taken on trust. */
export function checkedFromWorker(m: unknown): FromWorker | undefined {
  if (m === null || typeof m !== 'object') return undefined;
  const x = m as Record<string, unknown>;
  const ok = (() => {
    switch (x.t) {
      case 'ready':
      case 'pong':
        return true;
      case 'drained':
        return typeof x.sealed === 'boolean';
      case 'skipped':
        return isId(x.id);
      case 'done':
        return isId(x.id) && (x.returned === undefined ? isText(x.payload) : isLent(x.returned) && (x.payload === undefined || isText(x.payload)));
      case 'failed':
        return isId(x.id) && isText(x.message) && (x.stack === undefined || isText(x.stack));
      case 'syntax':
        return isId(x.id) && isText(x.reason) && isId(x.line) && isId(x.character);
      case 'service':
        return isId(x.id) && isId(x.rid) && isText(x.service) && isText(x.action) && isText(x.payload);
      case 'execute':
        return isId(x.id) && isId(x.rid) && isText(x.name) && isText(x.payload);
      case 'log':
        return isText(x.name) && LOG_LEVELS.has(x.level as string) && isText(x.text);
      default:
        return false;
    }
  })();
  return ok ? (m as FromWorker) : undefined;
}
