// The runtime record (`<data folder>/runtime.json`, core/runtime-protocol.ts): written by a runtime for each
// data folder it holds, read by the `asl` CLI to ask that runtime instead of opening the locked folder.
import fs from 'node:fs';
import path from 'node:path';
import { isRuntimeRecord, RUNTIME_RECORD_FILE, type RuntimeRecord } from '../core/runtime-protocol';
import { processRuns } from './processes';

export const runtimeRecordPath = (dataDir: string) => path.join(dataDir, RUNTIME_RECORD_FILE);

export function writeRuntimeRecord(dataDir: string, record: RuntimeRecord): void {
  const file = runtimeRecordPath(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(record, null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** Removes the record if this process wrote it (a newer runtime may hold the folder by now). */
export function removeRuntimeRecord(dataDir: string): void {
  const record = readRecordFile(dataDir);
  if (record?.pid === process.pid) fs.rmSync(runtimeRecordPath(dataDir), { force: true });
}

/** The record of a runtime that holds `dataDir` and still runs; undefined for none, a stale or a foreign one. */
export function readRuntimeRecord(dataDir: string): RuntimeRecord | undefined {
  const record = readRecordFile(dataDir);
  if (!record || record.pid === process.pid || !processRuns(record.pid)) return undefined;
  return record;
}

function readRecordFile(dataDir: string): RuntimeRecord | undefined {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(runtimeRecordPath(dataDir), 'utf8'));
    return isRuntimeRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
