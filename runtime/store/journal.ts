// Record framing and the append-only journal writer of the embedded store.
// A record is [u32 payload length][u32 CRC-32 of payload][payload], little-endian. A reader stops at
// the first record that is short or fails its checksum: everything before it is intact.
import fs from 'node:fs';
import { crc32 } from 'node:zlib';
import { StoreError, StoreErrorCode } from './types';

export const RECORD_HEADER_BYTES = 8;
/** Larger than any record the store writes (bson caps a document at 16 MiB); guards garbage lengths. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

export function frameRecord(payload: Uint8Array): Buffer {
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + payload.length);
  record.writeUInt32LE(payload.length, 0);
  record.writeUInt32LE(crc32(payload), 4);
  record.set(payload, RECORD_HEADER_BYTES);
  return record;
}

export interface ScanResult {
  payloads: Buffer[];
  /** Bytes from the start that hold whole, valid records. */
  validLength: number;
}

export function scanRecords(data: Buffer): ScanResult {
  const payloads: Buffer[] = [];
  let offset = 0;
  while (offset + RECORD_HEADER_BYTES <= data.length) {
    const length = data.readUInt32LE(offset);
    const checksum = data.readUInt32LE(offset + 4);
    const end = offset + RECORD_HEADER_BYTES + length;
    if (length > MAX_RECORD_BYTES || end > data.length) break;
    const payload = data.subarray(offset + RECORD_HEADER_BYTES, end);
    if (crc32(payload) !== checksum) break;
    payloads.push(payload);
    offset = end;
  }
  return { payloads, validLength: offset };
}

/**
 * `fsync`: a write is acknowledged after fdatasync (survives power loss).
 * `os`: acknowledged once handed to the OS with write(2) (survives a killed process, not power loss).
 */
export type Durability = 'fsync' | 'os';

interface Pending {
  fd: number;
  record: Buffer;
  resolve: () => void;
  reject: (error: Error) => void;
  /** Takes the record's change back out of memory when the record could not be written. */
  undo?: () => void;
}

/** What a writer reports for records it could not write; a full disk says so. */
function writeFailure(error: unknown): StoreError {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new StoreError(`The data folder's disk is full (${code}): the write was not made; free some space and try again`, StoreErrorCode.OutOfDiskSpace, 'OutOfDiskSpace');
  }
  return new StoreError(`The store's journal could not be written (${code ?? (error as Error)?.message}): the write was not made`, StoreErrorCode.InternalError, 'InternalError');
}

function fdatasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(fd, (error) => (error ? reject(error) : resolve())));
}

function writeFully(fd: number, data: Buffer): void {
  let written = 0;
  while (written < data.length) written += fs.writeSync(fd, data, written, data.length - written);
}

/**
 * Appends records to the current journal file with group commit: records queued while a sync is in
 * flight are written together and share the next sync. Records are acknowledged in order.
 *
 * A batch that cannot be written (a full disk, an I/O error) is cut off the file again, so the journal
 * holds whole records only and later ones are not stranded behind a torn one; it and every record queued
 * after it (their changes may build on it) are refused, newest first taken back out of memory (`undo`),
 * and the writer goes on: once space is freed, writes succeed again. Only a file that cannot be cut back
 * fails the writer for good.
 */
export class JournalWriter {
  private pending: Pending[] = [];
  private flushing = false;
  private failure: Error | undefined;
  private idle: (() => void)[] = [];
  private bytes: number;
  /** Per file, the length holding the records written so far (where a failed batch is cut back to). */
  private readonly written = new Map<number, number>();
  private counters = { records: 0, syncs: 0 };
  private inBatch = 0;

  constructor(private fd: number, initialBytes: number, private readonly durability: Durability) {
    this.bytes = initialBytes;
    this.written.set(fd, initialBytes);
  }

  /** Records written and syncs issued so far; fewer syncs than records shows group commit at work. */
  get stats(): { records: number; syncs: number } {
    return { ...this.counters };
  }

  /** Records queued or in the batch being written and synced: not durable yet. */
  get pendingRecords(): number {
    return this.pending.length + this.inBatch;
  }

  /** Bytes in the current journal file, counting queued records. */
  get size(): number {
    return this.bytes;
  }

  append(record: Buffer, undo?: () => void): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.bytes += record.length;
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ fd: this.fd, record, resolve, reject, ...(undo ? { undo } : {}) });
      if (!this.flushing) {
        this.flushing = true;
        queueMicrotask(() => void this.flushLoop());
      }
    });
  }

  /**
   * Directs records appended from now on to a new file. Records already queued still go to the
   * old file; `drain()` tells when they are all written.
   */
  rotate(fd: number): void {
    this.fd = fd;
    this.bytes = 0;
    this.written.set(fd, 0);
  }

  /** Resolves once every queued record is written (and synced in `fsync` mode). */
  drain(): Promise<void> {
    if (!this.flushing && this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private async flushLoop(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      this.inBatch = batch.length;
      try {
        if (this.failure) throw this.failure;
        // A batch spans at most two files (around a rotation); each is written then synced.
        const files = [...new Set(batch.map((p) => p.fd))];
        for (const fd of files) {
          const data = Buffer.concat(batch.filter((p) => p.fd === fd).map((p) => p.record));
          writeFully(fd, data);
          if (this.durability === 'fsync') {
            await fdatasync(fd);
            this.counters.syncs++;
          }
          this.written.set(fd, (this.written.get(fd) ?? 0) + data.length);
        }
        this.counters.records += batch.length;
        for (const p of batch) p.resolve();
      } catch (error) {
        this.refuse([...batch, ...this.pending], error);
        this.pending = [];
      }
    }
    this.inBatch = 0;
    this.flushing = false;
    for (const fd of [...this.written.keys()]) if (fd !== this.fd) this.written.delete(fd);
    const waiting = this.idle;
    this.idle = [];
    for (const resolve of waiting) resolve();
  }

  /** Cuts the files back to their written records, takes the refused records' changes out of memory, newest first, and rejects them. */
  private refuse(refused: Pending[], error: unknown): void {
    if (!this.failure) {
      try {
        for (const fd of new Set(refused.map((p) => p.fd))) fs.ftruncateSync(fd, this.written.get(fd) ?? 0);
      } catch (truncateError) {
        this.failure = new StoreError(`The store's journal could not be written nor cut back (${(truncateError as Error).message}); reopen the store`, StoreErrorCode.InternalError, 'InternalError');
      }
    }
    const reason = this.failure ?? writeFailure(error);
    for (const p of [...refused].reverse()) p.undo?.();
    this.bytes = this.written.get(this.fd) ?? 0;
    for (const p of refused) p.reject(reason);
  }
}
