// Aggregations that outrun the serving thread's brief budget finish on a worker thread of their own, so
// one heavy pipeline (or a user repeating the heaviest one the limits allow) holds up no other request.
// The worker gets the documents it reads as BSON (their stored form) and builds the same views; it
// answers with the output documents as BSON, or, for a pipeline that only selects, their places in its
// input. One task at a time; a task that overstays the limit by far, or a worker that runs out of
// memory, ends the worker (the next task starts another). Without the bundled worker (sources run
// without a build) there is none, and the caller evaluates on its own thread to the full limit.
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { BSON } from 'bson';
import { runAggregation } from './aggregation';
import { fromComparable, toComparable, toStorable } from './bson-values';
import { evaluateBriefly, EvaluationTooLong, MAX_EVALUATION_MS } from './evaluation-limits';
import { StoreError, type Document } from './types';

export interface EvaluationTask {
  id: number;
  /** `{p: pipeline}` in BSON, the pipeline in its stored form. */
  pipeline: Uint8Array;
  /** The collection's documents, each in BSON. */
  input: Uint8Array[];
  /** The other collections the pipeline reads, by name. */
  collections: Record<string, Uint8Array[]>;
  selecting: boolean;
}

export type EvaluationOutcome =
  | { id: number; indices: number[] }
  | { id: number; docs: Uint8Array[] }
  | { id: number; error: { message: string; code: number; codeName: string } };

/**
 * How long an aggregation may run on the serving thread; one that needs longer finishes on the evaluation
 * worker, so it holds other requests up for this long at most.
 */
const SERVING_THREAD_EVALUATION_MS = 50;
/** How long past the evaluation limit a task may run before its worker is ended. */
const OVERSTAY_MS = 2_000;
/** The worker's heap: an aggregation that needs more ends the worker, not the runtime. */
const WORKER_HEAP_MB = 1024;
/** Tasks waiting for the worker at most (each holds a copy of the documents it reads); more are refused. */
const MAX_WAITING = 32;

function workerFile(): string | undefined {
  const bundled = path.join(__dirname, 'store-evaluator.js');
  if (fs.existsSync(bundled)) return bundled;
  const built = path.resolve(__dirname, '../../dist/store-evaluator.js');
  return fs.existsSync(built) ? built : undefined;
}

interface Waiting { task: EvaluationTask; resolve(outcome: EvaluationOutcome): void; reject(error: Error): void }

class Evaluator {
  private worker: Worker | undefined;
  private readonly queue: Waiting[] = [];
  private running: (Waiting & { timer: NodeJS.Timeout }) | undefined;
  private nextId = 1;

  constructor(private readonly file: string) {}

  /** Whether another task would wait beyond the bound. */
  full(): boolean {
    return this.queue.length >= MAX_WAITING;
  }

  run(task: Omit<EvaluationTask, 'id'>): Promise<EvaluationOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ task: { ...task, id: this.nextId++ }, resolve, reject });
      this.startNext();
    });
  }

  private startNext(): void {
    if (this.running || this.queue.length === 0) return;
    const next = this.queue.shift()!;
    const worker = this.ensureWorker();
    const timer = setTimeout(() => this.endWorker(`the aggregation ran for more than ${MAX_EVALUATION_MS + OVERSTAY_MS} ms`), MAX_EVALUATION_MS + OVERSTAY_MS);
    this.running = { ...next, timer };
    // Copied, not transferred: BSON's buffers may share one pooled ArrayBuffer with others.
    worker.postMessage(next.task);
    worker.ref();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.file, { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    worker.on('message', (outcome: EvaluationOutcome) => {
      const running = this.running;
      if (this.worker !== worker || !running || outcome.id !== running.task.id) return;
      clearTimeout(running.timer);
      this.running = undefined;
      running.resolve(outcome);
      if (this.queue.length === 0) worker.unref();
      this.startNext();
    });
    // An ended worker's own error and exit come later, when another may be running: they concern only it.
    worker.on('error', (error) => { if (this.worker === worker) this.endWorker(error.message); });
    worker.on('exit', () => { if (this.worker === worker) this.endWorker('the evaluation worker stopped'); });
    this.worker = worker;
    return worker;
  }

  /** The worker is gone or to be ended: the running task fails, and the next one starts another worker. */
  private endWorker(why: string): void {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) void worker.terminate();
    const running = this.running;
    this.running = undefined;
    if (running) {
      clearTimeout(running.timer);
      running.reject(StoreError.badValue(`the aggregation was stopped: ${why}`));
    }
    this.startNext();
  }
}

let shared: Evaluator | null | undefined;

/** The process's evaluation worker, or undefined when it is not built. */
export function evaluator(): Pick<Evaluator, 'run' | 'full'> | undefined {
  if (shared === undefined) {
    const file = workerFile();
    shared = file ? new Evaluator(file) : null;
  }
  return shared ?? undefined;
}

/**
 * One aggregation: `here()` runs it on this thread within the serving thread's budget; past it, the
 * evaluation worker runs `task()` (built only then) and `fromWorker` reads its answer. `failed` turns an
 * evaluation error of `here()` into the caller's error. Without the worker, `here()` runs to the full limit.
 */
export async function evaluateAggregation<T>(
  here: () => T,
  task: () => Omit<EvaluationTask, 'id'>,
  fromWorker: (outcome: Exclude<EvaluationOutcome, { error: unknown }>) => T,
  failed: (error: unknown) => Error,
): Promise<T> {
  const worker = evaluator();
  try {
    return worker ? evaluateBriefly(SERVING_THREAD_EVALUATION_MS, here) : here();
  } catch (error) {
    if (!(error instanceof EvaluationTooLong)) throw failed(error);
  }
  if (worker!.full()) throw StoreError.badValue(`${MAX_WAITING} long evaluations are already waiting for the evaluation worker; try again later or narrow the input with $match first`);
  const outcome = await worker!.run(task());
  if ('error' in outcome) throw new StoreError(outcome.error.message, outcome.error.code, outcome.error.codeName);
  return fromWorker(outcome);
}

/**
 * Runs a pipeline that reads no other collection over `documents` (in their stored form) with the store's
 * semantics, as the data layer does over the documents a caller may read: computed output, plain numbers.
 */
export function aggregateDocuments(pipeline: Document[], documents: readonly Document[]): Promise<Document[]> {
  const storable = toStorable(pipeline, 'pipeline') as Document[];
  return evaluateAggregation(
    () => runAggregation(toComparable(storable) as Document[], documents.map((doc) => toComparable(doc) as Document), () => [], false)
      .map((doc) => fromComparable(doc) as Document),
    () => ({ pipeline: BSON.serialize({ p: storable }), input: documents.map((doc) => BSON.serialize(doc)), collections: {}, selecting: false }),
    (outcome) => ('docs' in outcome ? outcome.docs.map((bytes) => BSON.deserialize(bytes) as Document) : []),
    (error) => (error instanceof StoreError ? error : StoreError.badValue(`Invalid pipeline: ${(error as Error)?.message ?? String(error)}`)),
  );
}
