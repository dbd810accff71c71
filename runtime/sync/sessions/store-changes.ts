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

/**
 * Consecutive changes grouped into entries within the limits, as they come (a bulk write's instructions then
 * live one entry at a time, not all at once); an object's instructions are never split.
 */
export class ObjectChangeGroups<D> {
  private group: ObjectChange<D>[] = [];
  private instructions = 0;
  private bytes = 0;

  constructor(private readonly limits = STORE_CHANGE_ENTRY_LIMITS) {}

  /** Adds a change; returns the group it closed, if it closed one. */
  add(change: ObjectChange<D>): ObjectChange<D>[] | undefined {
    if (change.instructions.length === 0) return undefined;
    this.group.push(change);
    this.instructions += change.instructions.length;
    this.bytes += change.bytes;
    const { maxObjects, maxInstructions, maxBytes } = this.limits;
    return this.group.length >= maxObjects || this.instructions >= maxInstructions || this.bytes >= maxBytes ? this.finish() : undefined;
  }

  /** The open group, closed (undefined when empty). */
  finish(): ObjectChange<D>[] | undefined {
    if (this.group.length === 0) return undefined;
    const closed = this.group;
    this.group = [];
    this.instructions = 0;
    this.bytes = 0;
    return closed;
  }
}

/** Consecutive changes grouped into entries within the limits; an object's instructions are never split. */
export function groupObjectChanges<D>(changes: readonly ObjectChange<D>[], limits = STORE_CHANGE_ENTRY_LIMITS): ObjectChange<D>[][] {
  const grouper = new ObjectChangeGroups<D>(limits);
  const groups: ObjectChange<D>[][] = [];
  for (const change of changes) {
    const closed = grouper.add(change);
    if (closed) groups.push(closed);
  }
  const last = grouper.finish();
  if (last) groups.push(last);
  return groups;
}
