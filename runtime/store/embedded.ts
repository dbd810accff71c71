// The embedded persistent store. Layout of the data directory:
//   LOCK                   pid of the process that has the store open
//   snapshot.bson          compacted state: header {gen}, then collections and documents, then an end record
//   journal-<gen>.log      changes after the snapshot of that generation, one framed BSON record per change
// Opening loads the snapshot, replays journals of its generation and later, and truncates a torn or
// corrupt tail (everything before it is kept). Compaction rotates to a new journal, writes the
// snapshot to a temp file, fsyncs it, renames it over the old one and fsyncs the directory.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { BSON } from 'bson';
import { deserializeStored } from '../../core/bsonDecode';
import { MemoryStore } from './memory-store';
import { frameRecord, JournalWriter, scanRecords, type Durability } from './journal';
import { StoreError, StoreErrorCode, type Document, type DocumentStore, type StoreStats } from './types';
import { processRuns } from '../processes';

export type { Durability } from './journal';

export interface EmbeddedStoreOptions {
  /** Data directory; undefined keeps everything in memory (tests). */
  dir?: string;
  clock?: () => Date;
  /** Default `fsync`: acknowledged writes survive power loss; `os` survives a killed process only. */
  durability?: Durability;
  /** Journal size that triggers compaction (at least twice the last snapshot). Default 64 MiB. */
  compactAfterBytes?: number;
}

export interface RecoveryReport {
  /** Journal records replayed on open. */
  replayedRecords: number;
  /** Bytes cut from journal tails because they held a torn or corrupt record. */
  truncatedBytes: number;
}

const SNAPSHOT = 'snapshot.bson';
const SNAPSHOT_TEMP = 'snapshot.bson.tmp';
const LOCK = 'LOCK';
const FORMAT_VERSION = 1;
const JOURNAL_PATTERN = /^journal-(\d+)\.log$/;
const SNAPSHOT_CHUNK_BYTES = 1024 * 1024;
const DEFAULT_COMPACT_AFTER_BYTES = 64 * 1024 * 1024;

type Op =
  | { o: 'p'; n: string; d: Document }
  | { o: 'r'; n: string; id: unknown }
  | { o: 'i'; n: string; f: string }
  /** Several puts and removes that became durable together (a commit). */
  | { o: 'b'; ops: ({ o: 'p'; n: string; d: Document } | { o: 'r'; n: string; id: unknown })[] }
  | { o: 'h'; v: number; gen: number }
  | { o: 'e'; count: number };

function encode(op: Op): Buffer {
  return frameRecord(BSON.serialize(op as unknown as Document));
}

function decode(payload: Buffer): Op {
  return deserializeStored(payload, { keepRegExps: true }) as unknown as Op;
}

function journalName(gen: number): string {
  return `journal-${String(gen).padStart(8, '0')}.log`;
}

function fsyncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Takes the directory's lock file, taking over one left by a process that no longer runs. */
function acquireLock(dir: string): () => void {
  const lockPath = path.join(dir, LOCK);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx', mode: 0o600 });
      return () => fs.rmSync(lockPath, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(fs.readFileSync(lockPath, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && processRuns(holder)) {
        const who = holder === process.pid ? 'this process' : `process ${holder}`;
        throw new StoreError(`The data directory ${dir} is already open by ${who}`, StoreErrorCode.IllegalOperation, 'IllegalOperation');
      }
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new StoreError(`Could not lock the data directory ${dir}`, StoreErrorCode.IllegalOperation, 'IllegalOperation');
}

function corrupt(file: string, why: string): StoreError {
  return new StoreError(`The store file ${file} is corrupt (${why}); restore it from a backup or remove the data directory`, StoreErrorCode.InternalError, 'InternalError');
}

/** Loads snapshot.bson into the engine; returns its generation (0 when there is none). */
function loadSnapshot(dir: string, engine: MemoryStore): { gen: number; bytes: number } {
  const file = path.join(dir, SNAPSHOT);
  if (!fs.existsSync(file)) return { gen: 0, bytes: 0 };
  const data = fs.readFileSync(file);
  const { payloads, validLength } = scanRecords(data);
  // The snapshot became visible only after it was complete and synced, so any damage is real corruption.
  if (validLength !== data.length) throw corrupt(file, `bad record at byte ${validLength}`);
  const ops = payloads.map(decode);
  const header = ops[0];
  const footer = ops[ops.length - 1];
  if (header?.o !== 'h' || header.v !== FORMAT_VERSION) throw corrupt(file, 'missing or unknown header');
  if (footer?.o !== 'e' || footer.count !== ops.length - 2) throw corrupt(file, 'incomplete');
  for (const op of ops.slice(1, -1)) applyOp(engine, op, file);
  return { gen: header.gen, bytes: data.length };
}

function applyOp(engine: MemoryStore, op: Op, file: string): void {
  switch (op.o) {
    case 'p': engine.restorePut(op.n, op.d); break;
    case 'r': engine.restoreRemove(op.n, op.id); break;
    case 'i': engine.restoreIndex(op.n, op.f); break;
    case 'b': for (const part of op.ops) applyOp(engine, part, file); break;
    default: throw corrupt(file, `unexpected record '${String(op.o)}'`);
  }
}

/** The name of the snapshot file in a store's directory. */
export const SNAPSHOT_FILE = SNAPSHOT;

/**
 * The bytes of a snapshot file (`snapshot.bson`) holding `contents`, in chunks of about 1 MiB: header, each
 * collection's indexes and documents, end record. A directory holding only this file opens as that state.
 */
export function* snapshotFileChunks(contents: readonly { namespace: string; indexes: readonly string[]; docs: readonly Document[] }[], gen: number): Generator<Buffer> {
  let chunk: Buffer[] = [];
  let chunkBytes = 0;
  let count = 0;
  const add = (op: Op): Buffer | undefined => {
    const record = encode(op);
    chunk.push(record);
    chunkBytes += record.length;
    if (op.o !== 'h' && op.o !== 'e') count++;
    if (chunkBytes < SNAPSHOT_CHUNK_BYTES) return undefined;
    const data = Buffer.concat(chunk);
    chunk = [];
    chunkBytes = 0;
    return data;
  };
  let full = add({ o: 'h', v: FORMAT_VERSION, gen });
  if (full) yield full;
  for (const { namespace, indexes, docs } of contents) {
    for (const field of indexes) if ((full = add({ o: 'i', n: namespace, f: field }))) yield full;
    for (const doc of docs) if ((full = add({ o: 'p', n: namespace, d: doc }))) yield full;
  }
  add({ o: 'e', count });
  yield Buffer.concat(chunk);
}

/** The persistent store: the engine plus its journal, snapshot and lock. */
export class EmbeddedStore extends MemoryStore implements DocumentStore {
  private writer!: JournalWriter;
  private fd = -1;
  private gen = 0;
  private snapshotBytes = 0;
  private compaction: Promise<void> | undefined;
  private lastAck: Promise<void> = Promise.resolve();
  private compactionFailure: Error | undefined;
  readonly recovery: RecoveryReport = { replayedRecords: 0, truncatedBytes: 0 };

  private constructor(
    private readonly dir: string,
    private readonly options: EmbeddedStoreOptions,
    private readonly releaseLock: () => void,
  ) {
    super({ clock: options.clock });
  }

  static async open(dir: string, options: EmbeddedStoreOptions): Promise<EmbeddedStore> {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const releaseLock = acquireLock(dir);
    try {
      const store = new EmbeddedStore(dir, options, releaseLock);
      store.load();
      return store;
    } catch (error) {
      releaseLock();
      throw error;
    }
  }

  /** Replays snapshot and journals into memory, then opens the newest journal for appending. */
  private load(): void {
    const dir = this.dir;
    fs.rmSync(path.join(dir, SNAPSHOT_TEMP), { force: true });
    const snapshot = loadSnapshot(dir, this);
    this.snapshotBytes = snapshot.bytes;
    const journals = fs.readdirSync(dir)
      .map((name) => ({ name, gen: Number(JOURNAL_PATTERN.exec(name)?.[1] ?? NaN) }))
      .filter((j) => Number.isInteger(j.gen))
      .sort((a, b) => a.gen - b.gen);
    for (const stale of journals.filter((j) => j.gen < snapshot.gen)) fs.rmSync(path.join(dir, stale.name), { force: true });
    const live = journals.filter((j) => j.gen >= snapshot.gen);
    for (const journal of live) {
      const file = path.join(dir, journal.name);
      const data = fs.readFileSync(file);
      const { payloads, validLength } = scanRecords(data);
      for (const payload of payloads) applyOp(this, decode(payload), file);
      this.recovery.replayedRecords += payloads.length;
      if (validLength < data.length) {
        this.recovery.truncatedBytes += data.length - validLength;
        fs.truncateSync(file, validLength);
      }
    }
    this.gen = live.length ? live[live.length - 1].gen : snapshot.gen;
    this.fd = fs.openSync(path.join(dir, journalName(this.gen)), 'a', 0o600);
    fs.fsyncSync(this.fd);
    fsyncDirectory(dir);
    this.writer = new JournalWriter(this.fd, fs.fstatSync(this.fd).size, this.options.durability ?? 'fsync');
    this.journal = {
      put: (n, d, undo) => this.append({ o: 'p', n, d }, undo),
      remove: (n, id, undo) => this.append({ o: 'r', n, id }, undo),
      declareIndex: (n, f) => this.append({ o: 'i', n, f }),
      commit: (changes, undo) => this.append({ o: 'b', ops: changes.map((c) => ('put' in c ? { o: 'p' as const, n: c.put, d: c.doc } : { o: 'r' as const, n: c.remove, id: c.id })) }, undo),
    };
  }

  private append(op: Op, undo?: () => void): Promise<void> {
    const ack = this.writer.append(encode(op), undo);
    this.lastAck = ack;
    if (!this.compaction && this.writer.size >= Math.max(this.options.compactAfterBytes ?? DEFAULT_COMPACT_AFTER_BYTES, 2 * this.snapshotBytes)) {
      void this.compact().catch((error: Error) => {
        this.compactionFailure = error;
      });
    }
    return ack;
  }

  /** Journal records written and syncs issued since the store was opened. */
  get journalStats(): { records: number; syncs: number } {
    return this.writer.stats;
  }

  stats(): StoreStats {
    const { records, syncs } = this.writer.stats;
    return {
      open: !this.isClosed, snapshotBytes: this.snapshotBytes, journalBytes: this.writer.size,
      journalPendingRecords: this.writer.pendingRecords, journalRecords: records, journalSyncs: syncs,
    };
  }

  /** The error of the last failed background compaction, if any (the journal keeps working). */
  get lastCompactionError(): Error | undefined {
    return this.compactionFailure;
  }

  /** Writes a snapshot of the current state and starts a new journal; one runs at a time. */
  compact(): Promise<void> {
    this.assertOpen();
    this.compaction ??= this.runCompaction().finally(() => {
      this.compaction = undefined;
    });
    return this.compaction;
  }

  private async runCompaction(): Promise<void> {
    const gen = this.gen + 1;
    const newFd = fs.openSync(path.join(this.dir, journalName(gen)), 'a', 0o600);
    fsyncDirectory(this.dir);
    // Capture and rotate in the same tick, so the snapshot holds exactly the changes journaled before.
    const contents = this.contents();
    const oldFd = this.fd;
    const oldWritesDone = this.lastAck.catch(() => undefined);
    this.writer.rotate(newFd);
    this.fd = newFd;
    this.gen = gen;

    const temp = path.join(this.dir, SNAPSHOT_TEMP);
    const handle = await fsp.open(temp, 'w', 0o600);
    let bytes = 0;
    try {
      for (const data of snapshotFileChunks(contents, gen)) {
        await handle.write(data);
        bytes += data.length;
      }
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await fsp.rename(temp, path.join(this.dir, SNAPSHOT));
    fsyncDirectory(this.dir);
    this.snapshotBytes = bytes;
    await oldWritesDone;
    fs.closeSync(oldFd);
    for (const name of fs.readdirSync(this.dir)) {
      const match = JOURNAL_PATTERN.exec(name);
      if (match && Number(match[1]) < gen) fs.rmSync(path.join(this.dir, name), { force: true });
    }
  }

  override async close(): Promise<void> {
    if (this.isClosed) return;
    // Refuse new operations first; changes already applied finish reaching the journal below.
    await super.close();
    await this.compaction?.catch(() => undefined);
    await this.lastAck.catch(() => undefined);
    await this.writer.drain();
    fs.closeSync(this.fd);
    this.releaseLock();
  }
}

/** Opens the embedded store in `dir`, or an in-memory store when `dir` is undefined. */
export async function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<MemoryStore> {
  if (options.dir === undefined) return new MemoryStore({ clock: options.clock });
  return EmbeddedStore.open(path.resolve(options.dir), options);
}
