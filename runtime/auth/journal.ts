// Crash-safe persistence for the auth records: an append-only log of JSON lines, one per change, each
// acknowledged only after fdatasync. On open the log is replayed; a torn last write (power loss, kill -9
// mid-append) is cut off. When superseded lines dominate, the log is rewritten atomically (temp + rename).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

export type JournalRecord = { _id: string } & Record<string, unknown>;

/** Every live record by table name, then by id. */
export type JournalState = Map<string, Map<string, JournalRecord>>;

interface Line { t: string; id: string; d: JournalRecord | null }

export class Journal {
  private queue: Array<{ text: string; done: (e?: Error) => void }> = [];
  private flushing = false;

  private constructor(private readonly handle: fsp.FileHandle, readonly state: JournalState) {}

  static async open(filePath: string): Promise<Journal> {
    await fsp.mkdir(path.dirname(filePath), { recursive: true, mode: 0o700 });
    const state: JournalState = new Map();
    let text = '';
    try { text = await fsp.readFile(filePath, 'utf8'); } catch (e) { if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; }
    const { goodLength, lineCount } = replay(text, state, filePath);
    if (goodLength < Buffer.byteLength(text)) await fsp.truncate(filePath, goodLength);
    const live = [...state.values()].reduce((n, t) => n + t.size, 0);
    if (lineCount > 1000 && lineCount > 2 * live) await rewrite(filePath, state);
    const handle = await fsp.open(filePath, 'a', 0o600);
    return new Journal(handle, state);
  }

  put(table: string, record: JournalRecord): Promise<void> {
    let t = this.state.get(table);
    if (!t) this.state.set(table, (t = new Map()));
    t.set(record._id, record);
    return this.append({ t: table, id: record._id, d: record });
  }

  delete(table: string, id: string): Promise<void> {
    this.state.get(table)?.delete(id);
    return this.append({ t: table, id, d: null });
  }

  async close(): Promise<void> {
    while (this.flushing || this.queue.length) await new Promise((r) => setImmediate(r));
    await this.handle.close();
  }

  private append(line: Line): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ text: JSON.stringify(line) + '\n', done: (e) => (e ? reject(e) : resolve()) });
      if (!this.flushing) void this.flush();
    });
  }

  /** Group commit: whatever queued while the previous sync ran goes out in one write and one sync. */
  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.queue.length) {
      const batch = this.queue;
      this.queue = [];
      try {
        await this.handle.write(batch.map((b) => b.text).join(''));
        await this.handle.datasync();
        for (const b of batch) b.done();
      } catch (e) {
        for (const b of batch) b.done(e as Error);
      }
    }
    this.flushing = false;
  }
}

function replay(text: string, state: JournalState, filePath: string): { goodLength: number; lineCount: number } {
  let offset = 0;
  let goodLength = 0;
  let lineCount = 0;
  let badAt: number | undefined;
  while (offset < text.length) {
    const nl = text.indexOf('\n', offset);
    if (nl < 0) break; // no newline: a torn final append
    const raw = text.slice(offset, nl);
    offset = nl + 1;
    const line = parseLine(raw);
    if (!line) { badAt ??= lineCount; lineCount++; continue; }
    if (badAt !== undefined) throw new Error(`${filePath} is corrupt at line ${badAt + 1}: it is followed by valid records, so it is not a torn write`);
    lineCount++;
    let t = state.get(line.t);
    if (!t) state.set(line.t, (t = new Map()));
    if (line.d) t.set(line.id, line.d); else t.delete(line.id);
    goodLength = Buffer.byteLength(text.slice(0, offset));
  }
  return { goodLength, lineCount };
}

function parseLine(raw: string): Line | undefined {
  try {
    const v = JSON.parse(raw) as Line;
    return typeof v?.t === 'string' && typeof v.id === 'string' ? v : undefined;
  } catch { return undefined; }
}

async function rewrite(filePath: string, state: JournalState): Promise<void> {
  const tmp = `${filePath}.compact`;
  const lines: string[] = [];
  for (const [t, records] of state) for (const [id, d] of records) lines.push(JSON.stringify({ t, id, d }) + '\n');
  const handle = await fsp.open(tmp, 'w', 0o600);
  try { await handle.write(lines.join('')); await handle.sync(); } finally { await handle.close(); }
  await fsp.rename(tmp, filePath);
  const dir = fs.openSync(path.dirname(filePath), 'r');
  try { fs.fsyncSync(dir); } finally { fs.closeSync(dir); }
}
