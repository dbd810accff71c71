// Record framing and the append-only journal writer of the embedded store.
// A record is [u32 payload length][u32 CRC-32 of payload][payload], little-endian. A reader stops at
// the first record that is short or fails its checksum: everything before it is intact.
import fs from 'node:fs';
import { crc32 } from 'node:zlib';

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
 */
export class JournalWriter {
  private pending: Pending[] = [];
  private flushing = false;
  private failure: Error | undefined;
  private idle: (() => void)[] = [];
  private bytes: number;
  private counters = { records: 0, syncs: 0 };
  private inBatch = 0;

  constructor(private fd: number, initialBytes: number, private readonly durability: Durability) {
    this.bytes = initialBytes;
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

  append(record: Buffer): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.bytes += record.length;
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ fd: this.fd, record, resolve, reject });
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
          writeFully(fd, Buffer.concat(batch.filter((p) => p.fd === fd).map((p) => p.record)));
          if (this.durability === 'fsync') {
            await fdatasync(fd);
            this.counters.syncs++;
          }
        }
        this.counters.records += batch.length;
        for (const p of batch) p.resolve();
      } catch (error) {
        this.failure ??= new Error(`The store's journal could not be written; reopen the store: ${(error as Error).message}`);
        for (const p of batch) p.reject(this.failure);
      }
    }
    this.inBatch = 0;
    this.flushing = false;
    const waiting = this.idle;
    this.idle = [];
    for (const resolve of waiting) resolve();
  }
}
