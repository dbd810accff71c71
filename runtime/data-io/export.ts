// The collections an export writes: one snapshot of the store (every collection as it was at one instant),
// the runtime's own databases left out, and the whole of it written as mongodump lays a dump out, directly
// or as the frames a running runtime streams to `asl data export`.
import { DataFrameKind, type DataCollectionFrame, type DataEndFrame } from '../../core/runtime-protocol';
import { bsonChunks } from './bson-file';
import { encodeFrame, jsonFrame } from './frames';
import { DumpFileWriter } from './layout';
import { RUNTIME_DATABASES, type DocumentStore, type StoreSnapshotCollection } from '../store/types';

export class ExportRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExportRefused';
  }
}

/** The app's collections (of `database` only, when given) at one instant. */
export function exportSnapshot(store: DocumentStore, database?: string): StoreSnapshotCollection[] {
  if (!store.snapshot) throw new ExportRefused('the app\'s data is in a MongoDB deployment, not the embedded store: use mongodump');
  return store.snapshot()
    .filter((c) => !RUNTIME_DATABASES.has(c.database) && (database === undefined || c.database === database))
    .sort((a, b) => `${a.database}.${a.name}`.localeCompare(`${b.database}.${b.name}`));
}

export interface ExportOutcome { collections: { database: string; collection: string; documents: number }[] }

/** Writes the snapshot as a dump folder (`<dir>/<db>/<collection>.bson` and `.metadata.json`, `.gz` with gzip). */
export function writeDumpFolder(dir: string, snapshot: readonly StoreSnapshotCollection[], gzip: boolean): ExportOutcome {
  for (const c of snapshot) {
    const writer = new DumpFileWriter(dir, c.database, c.name, c.indexes, gzip);
    try {
      for (const chunk of bsonChunks(c.docs)) writer.write(chunk);
      writer.finish();
    } catch (error) {
      writer.abandon();
      throw error;
    }
  }
  return { collections: snapshot.map((c) => ({ database: c.database, collection: c.name, documents: c.docs.length })) };
}

/** The snapshot as the export route's frames: each collection, its documents, then the end. */
export function* exportFrames(snapshot: readonly StoreSnapshotCollection[]): Generator<Buffer> {
  let documents = 0;
  for (const c of snapshot) {
    yield jsonFrame(DataFrameKind.collection, { database: c.database, collection: c.name, indexes: c.indexes } satisfies DataCollectionFrame);
    for (const chunk of bsonChunks(c.docs)) yield encodeFrame(DataFrameKind.documents, chunk);
    documents += c.docs.length;
  }
  yield jsonFrame(DataFrameKind.end, { collections: snapshot.length, documents } satisfies DataEndFrame);
}
