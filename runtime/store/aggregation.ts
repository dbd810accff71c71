// One aggregation over views (stored documents in the form mingo compares, see toComparable), the same on
// the serving thread and on the evaluation worker (evaluator.ts): the same stages, options and bounds.
import { ProcessingMode } from 'mingo';
import { Aggregator } from './regex';
import { isPlainObject } from '../../core/rules/bsonValues';
import type { Document } from './types';

/** Aggregation stages that pass on some of the documents they are given, unchanged and in some order. */
const SELECTING_STAGES = new Set(['$match', '$sort', '$skip', '$limit']);

/** Whether every stage only selects and orders documents: its output is some of its input, as it is. */
export function selectsOnly(pipeline: readonly Document[]): boolean {
  return pipeline.every((stage) => {
    const names = Object.keys(stage);
    return names.length === 1 && SELECTING_STAGES.has(names[0]!);
  });
}

/**
 * Runs `stages` (comparable form) over `input`; `collection(name)` gives the views of another collection of
 * the database that a stage reads. A selecting pipeline hands on its input objects themselves.
 */
export function runAggregation(stages: Document[], input: Document[], collection: (name: string) => Document[], selecting: boolean): Document[] {
  const aggregator = new Aggregator(stages, {
    scriptEnabled: false,
    processingMode: selecting ? ProcessingMode.CLONE_OFF : ProcessingMode.CLONE_INPUT,
    collectionResolver: collection,
  });
  return aggregator.run(input) as Document[];
}

/** The other collections a pipeline may read (`$lookup`, `$graphLookup`, `$unionWith`, at any depth). */
export function collectionsRead(pipeline: unknown): Set<string> {
  const names = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
      return;
    }
    if (!isPlainObject(value)) return;
    for (const [key, inner] of Object.entries(value)) {
      if ((key === '$lookup' || key === '$graphLookup') && isPlainObject(inner) && typeof inner.from === 'string') names.add(inner.from);
      if (key === '$unionWith') {
        if (typeof inner === 'string') names.add(inner);
        else if (isPlainObject(inner) && typeof inner.coll === 'string') names.add(inner.coll);
      }
      walk(inner);
    }
  };
  walk(pipeline);
  return names;
}
