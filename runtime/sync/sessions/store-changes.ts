// Store writes to synced collections on their way into the sync history: collected per history while an
// earlier batch is being recorded, then recorded together in a few bounded entries. A bulk write of n
// documents is then one queued task and ~n/1,000 entries instead of n tasks each waiting for its own
// durable history write (and n entries that would push older clients past the history's size limit).
import type { Instruction } from '../wire/instructions';

/** Store writes waiting for one history, taken by the task recording them. */
export class PendingStoreChanges<T> {
  private readonly pending = new Map<string, T[]>();

  /** `schedule` queues the task that will record a history's changes; it calls `take` when it starts. */
  constructor(private readonly schedule: (history: string, take: () => T[]) => void) {}

  add(history: string, change: T): void {
    const waiting = this.pending.get(history);
    if (waiting) {
      waiting.push(change);
      return;
    }
    const changes = [change];
    this.pending.set(history, changes);
    this.schedule(history, () => {
      // Later writes start a new batch, recorded by a task queued after this one: the history keeps their order.
      if (this.pending.get(history) === changes) this.pending.delete(history);
      return changes;
    });
  }
}

/** How large one history entry made of store writes may grow: closed once past either bound. */
export const STORE_CHANGE_ENTRY_LIMITS = { maxObjects: 1_000, maxInstructions: 20_000, maxBytes: 1_000_000 };

export interface ObjectChange<D> {
  instructions: Instruction[];
  /** The written document's approximate encoded size, for the entry's byte bound. */
  bytes: number;
  /** What the caller keeps of the change beside the entry (the documents flexible sessions filter by). */
  detail: D;
}

/** Consecutive changes grouped into entries within the limits; an object's instructions are never split. */
export function groupObjectChanges<D>(changes: readonly ObjectChange<D>[], limits = STORE_CHANGE_ENTRY_LIMITS): ObjectChange<D>[][] {
  const groups: ObjectChange<D>[][] = [];
  let group: ObjectChange<D>[] = [];
  let instructions = 0;
  let bytes = 0;
  for (const change of changes) {
    if (change.instructions.length === 0) continue;
    group.push(change);
    instructions += change.instructions.length;
    bytes += change.bytes;
    if (group.length >= limits.maxObjects || instructions >= limits.maxInstructions || bytes >= limits.maxBytes) {
      groups.push(group);
      group = [];
      instructions = 0;
      bytes = 0;
    }
  }
  if (group.length > 0) groups.push(group);
  return groups;
}
