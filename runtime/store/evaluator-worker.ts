// Entry of the evaluation worker (bundled as dist/store-evaluator.js; see evaluator.ts): each task is one
// aggregation, run to the full evaluation limit with the same stages and bounds as on the serving thread.
import { parentPort } from 'node:worker_threads';
import { deserialize, serialize } from 'bson';
import { yieldToRuntime } from '../priority';
import { runAggregation } from './aggregation';
import { fromComparable, toComparable, toStorable } from './bson-values';
import type { EvaluationOutcome, EvaluationTask } from './evaluator';
import { StoreError, type Document } from './types';

function views(docs: readonly Uint8Array[]): Document[] {
  return docs.map((bytes) => toComparable(deserialize(bytes)) as Document);
}

function evaluate(task: EvaluationTask): EvaluationOutcome {
  try {
    const input = views(task.input);
    const others = new Map<string, Document[]>();
    const collection = (name: string): Document[] => {
      let found = others.get(name);
      if (!found) others.set(name, (found = views(task.collections[name] ?? [])));
      return found;
    };
    const stages = toComparable(toStorable((deserialize(task.pipeline) as { p: unknown }).p, 'pipeline')) as Document[];
    const output = runAggregation(stages, input, collection, task.selecting);
    if (task.selecting) {
      const places = new Map(input.map((view, i) => [view, i]));
      return { id: task.id, indices: output.map((doc) => places.get(doc) ?? -1) };
    }
    return { id: task.id, docs: output.map((doc) => serialize(fromComparable(doc) as Document)) };
  } catch (error) {
    if (error instanceof StoreError) return { id: task.id, error: { message: error.message, code: error.code, codeName: error.codeName } };
    const bad = StoreError.badValue(`Invalid pipeline: ${(error as Error)?.message ?? String(error)}`);
    return { id: task.id, error: { message: bad.message, code: bad.code, codeName: bad.codeName } };
  }
}

// Heavy evaluation runs below the runtime's priority, as function code does.
yieldToRuntime();

parentPort!.on('message', (task: EvaluationTask) => {
  parentPort!.postMessage(evaluate(task));
});
