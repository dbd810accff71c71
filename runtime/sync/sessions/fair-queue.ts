/**
 * Tasks run one at a time, as in a plain queue, but owners with waiting tasks take turns: each owner's
 * own tasks run in the order they came, and one owner's backlog (a user's hundreds of uploads) delays
 * another owner's next task by one task of each other busy owner, not by the whole backlog. The
 * `first` owner's waiting tasks run before anyone else's.
 */
export class FairQueue {
  /** Owners with waiting tasks, in turn order (a Map keeps insertion order). */
  private readonly waiting = new Map<string, (() => Promise<void>)[]>();
  private busy = false;

  constructor(private readonly first?: string) {}

  run<T>(owner: string, task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = async () => {
        try {
          resolve(await task());
        } catch (error) {
          reject(error);
        }
      };
      const tasks = this.waiting.get(owner);
      if (tasks) tasks.push(start);
      else this.waiting.set(owner, [start]);
      if (!this.busy) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.busy = true;
    try {
      for (;;) {
        const owner = this.first !== undefined && this.waiting.has(this.first) ? this.first : this.waiting.keys().next().value;
        if (owner === undefined) return;
        const tasks = this.waiting.get(owner)!;
        const task = tasks.shift()!;
        // Back of the line for the owner's next task.
        this.waiting.delete(owner);
        if (tasks.length > 0) this.waiting.set(owner, tasks);
        await task();
      }
    } finally {
      this.busy = false;
    }
  }
}
