// Work that may run long or be hostile (app functions, heavy evaluations) runs on threads below the
// runtime's priority, so the thread that serves requests keeps its share of the processor. A leaf: Node's
// `os` only, so the function worker's and the evaluation worker's bundles may take it.
import os from 'node:os';

/** How many nice steps such work runs below the runtime (19 is the lowest priority there is). */
const NICE_STEPS_BELOW_RUNTIME = 10;
const LOWEST_PRIORITY = 19;

/**
 * Lowers the calling thread's priority. On Linux a priority is per thread, and this thread's alone drops;
 * elsewhere the whole process's does. Where it is not permitted, the thread keeps the runtime's priority.
 */
export function yieldToRuntime(): void {
  try {
    os.setPriority(Math.min(LOWEST_PRIORITY, os.getPriority() + NICE_STEPS_BELOW_RUNTIME));
  } catch {
    // Not permitted here.
  }
}
