// The agent owns an app's function workers where they run: in the function process (process.ts), or on
// the runtime's own threads for benchmarks. It does what needs the workers' threads or the memory they
// share with it, on the pool's word (pool.ts, in the runtime): starting and terminating workers, sealing
// one and lifting its seal (the agent alone changes the seal, with a compare-and-exchange the worker takes
// part in), reporting how far each worker has got and which
// call's code it runs, keeping the workers' memory within the limit, and relaying the synchronous
// requests a worker blocks on. Calls and their data never pass here: they go between the pool and each
// worker over the worker's own channel (channel.ts).
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { createMailbox, mailboxOf, take, type Mailbox } from './mailbox';
import { SEALED, type FromAgent, type StopCause, type SyncReply, type SyncRequest, type ToAgent, type WorkerInit } from './protocol';

export interface AgentOptions {
  /** Memory the workers together may use beyond what they used when last idle, in MiB (see checkMemory). */
  memoryLimitMb: number;
  packagesDir: string | undefined;
  /** Starts one worker thread running worker.ts. */
  startWorker(init: WorkerInit, options: WorkerStartOptions): Worker;
  emit(message: FromAgent): void;
}

export interface WorkerStartOptions {
  workerData: WorkerInit;
  transferList: MessagePort[];
  env: Record<string, string>;
  resourceLimits: { maxOldGenerationSizeMb: number };
  name: string;
}

export interface Agent {
  receive(message: ToAgent): void;
  close(): Promise<void>;
}

interface AgentWorker {
  n: number;
  worker: Worker;
  syncPort: MessagePort;
  syncFlag: Int32Array;
  runningCall: Int32Array;
  started: Int32Array;
  handled: Int32Array;
  mailbox: Mailbox;
  /** Set once the runtime has been told it stopped. */
  gone: boolean;
}

/** A worker's heap limit (V8's old generation); buffers and typed arrays are outside it, see checkMemory. */
export const WORKER_HEAP_LIMIT_MB = 256;
/** How often progress is reported and memory checked while watching: a loop filling buffers can take ~100 MiB in 25 ms. */
export const WATCH_INTERVAL_MS = 25;
/** After stopping workers, their memory takes a moment to be given back: no further check until then. */
const MEMORY_RELEASE_MS = 500;
/** The lower bits of WorkerInit.started: the worker's number of the call it started last. */
export const SEQ_MASK = SEALED - 1;

export function createAgent(options: AgentOptions): Agent {
  const { emit } = options;
  const workers = new Map<number, AgentWorker>();
  /** Synchronous requests of workers waiting for the runtime's answer, by request id. */
  const syncWaiting = new Map<number, AgentWorker>();
  let nextSyncId = 1;
  let closed = false;

  function start(n: number, link: WorkerInit['link']): void {
    if (closed || workers.has(n)) return;
    const { port1, port2 } = new MessageChannel();
    const shared = (): Int32Array => new Int32Array(new SharedArrayBuffer(4));
    const init: WorkerInit = {
      packagesDir: options.packagesDir, link, syncFlag: shared(), runningCall: shared(), started: shared(), handled: shared(), mailbox: createMailbox(), syncPort: port2,
    };
    const transferList = 'port' in link ? [port2, link.port] : [port2];
    let worker: Worker;
    try {
      worker = options.startWorker(init, {
        workerData: init, transferList, env: {}, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_LIMIT_MB }, name: 'asl-functions',
      });
    } catch (error) {
      port1.close();
      emit({ t: 'stopped', n, running: 0, cause: { failed: `function worker could not start: ${error instanceof Error ? error.message : String(error)}` } });
      return;
    }
    const entry: AgentWorker = {
      n, worker, syncPort: port1, syncFlag: init.syncFlag, runningCall: init.runningCall, started: init.started, handled: init.handled, mailbox: mailboxOf(init.mailbox), gone: false,
    };
    workers.set(n, entry);
    worker.unref();
    port1.unref();
    port1.on('message', (request: SyncRequest) => {
      const sid = nextSyncId++;
      syncWaiting.set(sid, entry);
      emit({ t: 'sync', sid, request });
    });
    worker.on('error', (error) => {
      const cause: StopCause = (error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? { memory: `its heap grew beyond ${WORKER_HEAP_LIMIT_MB} MB` }
        : { failed: `function worker failed: ${error.message}` };
      void stop(entry, cause);
    });
    worker.on('exit', (code) => void stop(entry, { failed: `function worker stopped unexpectedly (exit code ${code})` }));
  }

  /** Terminates a worker (once) and tells the runtime which call's code it was running. */
  function stop(entry: AgentWorker, cause?: StopCause): Promise<unknown> {
    if (entry.gone) return Promise.resolve();
    entry.gone = true;
    workers.delete(entry.n);
    const running = Atomics.load(entry.runningCall, 0);
    rescue(entry);
    entry.syncPort.close();
    for (const [sid, waiting] of syncWaiting) if (waiting === entry) syncWaiting.delete(sid);
    const exited = entry.worker.terminate();
    emit({ t: 'stopped', n: entry.n, running, ...(cause ? { cause } : {}) });
    return exited;
  }

  /** Sends on what the worker left in its mailbox: it is stuck (or stopping), and those messages must not wait for it. */
  function rescue(entry: AgentWorker): void {
    const messages = take(entry.mailbox);
    if (messages.length > 0) emit({ t: 'rescued', n: entry.n, messages });
  }

  function seal(entry: AgentWorker): void {
    let seen = Atomics.load(entry.started, 0);
    for (;;) {
      const before = Atomics.compareExchange(entry.started, 0, seen, seen | SEALED);
      if (before === seen) break;
      seen = before;
    }
    rescue(entry);
    emit({ t: 'sealed', n: entry.n, started: seen & SEQ_MASK });
  }

  function answerSync(sid: number, reply: SyncReply): void {
    const entry = syncWaiting.get(sid);
    if (!entry) return;
    syncWaiting.delete(sid);
    if (entry.gone) return;
    entry.syncPort.postMessage(reply);
    Atomics.store(entry.syncFlag, 0, 1);
    Atomics.notify(entry.syncFlag, 0);
  }

  /** Memory of this process not held by its main thread: the workers' (their heaps, buffers and typed arrays). */
  function workersMemory(): number {
    const usage = process.memoryUsage();
    return usage.rss - usage.heapTotal - usage.external;
  }

  const memoryLimitBytes = options.memoryLimitMb * 1024 * 1024;
  let idleWorkersMemory: number | undefined;
  let memoryChecksFrom = 0;
  /** The call each worker was running the code of at the previous look. */
  const runningAtLastLook = new Map<AgentWorker, number>();
  let watch: NodeJS.Timeout | undefined;

  /**
   * Above the limit, a worker that has been running the same call's code since the previous look (a loop
   * filling buffers runs, it does not wait) is stopped, and the runtime charges that call with it. Calls
   * that merely happen to run at that instant go on.
   */
  function checkMemory(previous: Map<AgentWorker, number>): void {
    if (Date.now() < memoryChecksFrom) return;
    const used = workersMemory() - idleWorkersMemory!;
    if (used <= memoryLimitBytes) return;
    const busy = [...runningAtLastLook].filter(([entry, call]) => call !== 0 && previous.get(entry) === call).map(([entry]) => entry);
    if (busy.length === 0) return;
    memoryChecksFrom = Date.now() + MEMORY_RELEASE_MS;
    const how = `functions held ${Math.round(used / 1048576)} MiB more than when idle, above the limit of ${memoryLimitBytes / 1048576} MiB (buffers and typed arrays included)`;
    for (const entry of busy) void stop(entry, { memory: how });
  }

  function look(): void {
    const previous = new Map(runningAtLastLook);
    runningAtLastLook.clear();
    const report: number[] = [];
    for (const entry of workers.values()) {
      const running = Atomics.load(entry.runningCall, 0);
      runningAtLastLook.set(entry, running);
      report.push(entry.n, Atomics.load(entry.handled, 0), running);
    }
    const usage = process.cpuUsage();
    emit({ t: 'progress', cpu: usage.user + usage.system, workers: report });
    checkMemory(previous);
  }

  function setWatch(on: boolean): void {
    if (on && !watch && !closed) {
      idleWorkersMemory ??= workersMemory();
      watch = setInterval(look, WATCH_INTERVAL_MS);
      watch.unref();
    } else if (!on && watch) {
      clearInterval(watch);
      watch = undefined;
      runningAtLastLook.clear();
      idleWorkersMemory = workersMemory();
    }
  }

  return {
    receive(message) {
      switch (message.t) {
        case 'start':
          start(message.n, message.link);
          return;
        case 'seal': {
          const entry = workers.get(message.n);
          if (entry) seal(entry);
          return;
        }
        case 'unseal': {
          const entry = workers.get(message.n);
          if (entry) {
            Atomics.and(entry.started, 0, SEQ_MASK);
            emit({ t: 'unsealed', n: message.n });
          }
          return;
        }
        case 'stop': {
          const entry = workers.get(message.n);
          // One that stopped already was reported then; the answer still comes, so that nothing waits for it.
          if (entry) void stop(entry);
          else emit({ t: 'stopped', n: message.n, running: 0 });
          return;
        }
        case 'watch':
          setWatch(message.on);
          return;
        case 'sync':
          answerSync(message.sid, message.reply);
          return;
      }
    },
    async close() {
      closed = true;
      setWatch(false);
      await Promise.all([...workers.values()].map((entry) => stop(entry)));
    },
  };
}
