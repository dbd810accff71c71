// Documents into a store, all or nothing: everything the store would refuse that can be known up front is
// checked before the first write (names, the runtime's own databases, `_id`s repeated or already stored);
// then the writes go in batches through the store's ordinary write path (commits of the embedded store, so
// sync and triggers see them as any write), and should a batch still fail, the batches before it are taken
// back (deleted, and with `drop` the replaced documents put back) before the failure is reported.
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { EJSON, ObjectId } from 'bson';
import { bsonType, valueKey } from '../store/bson-values';
import { RUNTIME_DATABASES, type CommitWrite, type Document, type DocumentStore } from '../store/types';

export interface ImportCollection {
  database: string;
  collection: string;
  /** Single-field indexes to declare. */
  indexes: readonly string[];
  docs: readonly Document[];
  /** Each document's BSON size (batches stay well under the journal's record limit). */
  sizes: readonly number[];
  /** Where the documents come from, for messages (the dump file). */
  source: string;
}

export interface ImportOptions {
  /** Replace the documents of each collection imported (mongorestore's --drop); otherwise a stored `_id` refuses the import. */
  drop?: boolean;
  /** Called as batches become durable. */
  onProgress?(written: number, total: number): void;
}

export interface ImportOutcome {
  collections: { database: string; collection: string; documents: number }[];
}

/** An import refused before anything was written, or taken back after a batch failed. */
export class ImportRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportRefused';
  }
}

const BATCH_DOCUMENTS = 1000;
const BATCH_BYTES = 8 * 1024 * 1024;
/** Batches handed to the store before the oldest must be durable: writes overlap the journal's syncs. */
const BATCHES_IN_FLIGHT = 4;
const EXISTING_CHECK_CHUNK = 1000;
/** Documents checked between turns of the event loop. */
const CHECK_STRETCH = 5000;
/** The store's own limit (bson-values.ts toStorable), checked before anything is written. */
const MAX_NESTING = 100;
/** Each level of nesting takes at least 7 bytes of BSON (type, a one-character name, length, end): smaller documents cannot be too deep. */
const SMALLEST_TOO_DEEP_BYTES = 7 * MAX_NESTING;

/** Whether some value lies deeper than `limit` levels below the document (as toStorable counts them). */
function nestsDeeperThan(value: unknown, limit: number, depth = 0): boolean {
  if (depth > limit) return true;
  if (value === null || typeof value !== 'object' || bsonType(value) !== undefined || value instanceof Date || value instanceof RegExp) return false;
  for (const child of Array.isArray(value) ? value : Object.values(value)) if (nestsDeeperThan(child, limit, depth + 1)) return true;
  return false;
}

export async function importCollections(store: DocumentStore, collections: readonly ImportCollection[], options: ImportOptions = {}): Promise<ImportOutcome> {
  const prepared = await checkCollections(store, collections);
  if (!options.drop) await refuseStoredIds(store, prepared);
  const total = prepared.reduce((n, c) => n + c.docs.length, 0);
  const inserted: CommitWrite[] = [];
  const dropped: CommitWrite[] = [];
  try {
    for (const c of prepared) for (const field of c.indexes) await store.collection(c.database, c.collection).createIndex(field);
    if (options.drop) {
      for (const c of prepared) {
        const existing = await store.collection(c.database, c.collection).find({});
        const deletes = existing.map((doc): CommitWrite => ({ database: c.database, collection: c.collection, delete: doc._id }));
        await writeInBatches(store, deletes, deletes.map(() => 0));
        dropped.push(...existing.map((doc): CommitWrite => ({ database: c.database, collection: c.collection, insert: doc })));
      }
    }
    let written = 0;
    for (const c of prepared) {
      const writes = c.docs.map((doc): CommitWrite => ({ database: c.database, collection: c.collection, insert: doc }));
      await writeInBatches(store, writes, c.sizes, (batch) => {
        inserted.push(...batch);
        written += batch.length;
        options.onProgress?.(written, total);
      });
    }
  } catch (error) {
    const undone = await takeBack(store, inserted, dropped);
    throw new ImportRefused(`${(error as Error).message}; nothing was imported${undone}`);
  }
  return { collections: prepared.map((c) => ({ database: c.database, collection: c.collection, documents: c.docs.length })) };
}

interface Prepared { database: string; collection: string; indexes: readonly string[]; docs: Document[]; sizes: readonly number[]; source: string }

/** Names, databases and `_id`s checked; documents without an `_id` get an ObjectId now, so a take-back can name them. */
async function checkCollections(store: DocumentStore, collections: readonly ImportCollection[]): Promise<Prepared[]> {
  const namespaces = new Set<string>();
  const prepared: Prepared[] = [];
  for (const c of collections) {
    const namespace = `${c.database}.${c.collection}`;
    if (RUNTIME_DATABASES.has(c.database)) throw new ImportRefused(`${c.source}: the database ${c.database} is the runtime's own; it is restored with "asl data restore", never imported`);
    if (namespaces.has(namespace)) throw new ImportRefused(`${c.source}: the collection ${namespace} appears twice in the import`);
    namespaces.add(namespace);
    try {
      store.collection(c.database, c.collection);
    } catch (error) {
      throw new ImportRefused(`${c.source}: ${(error as Error).message}`);
    }
    const seen = new Set<string>();
    const docs: Document[] = [];
    for (let i = 0; i < c.docs.length; i++) {
      // In a running runtime, other requests and sync sessions get their turns between stretches.
      if (i > 0 && i % CHECK_STRETCH === 0) await yieldTurn();
      const doc = c.docs[i]!;
      const id = doc._id;
      if (Array.isArray(id) || id instanceof RegExp || bsonType(id) === 'BSONRegExp') {
        throw new ImportRefused(`${c.source}: document ${i + 1} has an _id of type ${Array.isArray(id) ? 'array' : 'regex'}, which no collection accepts`);
      }
      if (c.sizes[i]! >= SMALLEST_TOO_DEEP_BYTES && nestsDeeperThan(doc, MAX_NESTING)) throw new ImportRefused(`${c.source}: document ${i + 1} nests deeper than ${MAX_NESTING} levels, which the store refuses`);
      const withId = id === undefined || id === null ? { _id: new ObjectId(), ...doc } : doc;
      const key = valueKey(withId._id);
      if (seen.has(key)) throw new ImportRefused(`${c.source}: document ${i + 1} repeats the _id ${describeId(withId._id)}`);
      seen.add(key);
      docs.push(withId);
    }
    prepared.push({ database: c.database, collection: c.collection, indexes: c.indexes, docs, sizes: c.sizes, source: c.source });
  }
  return prepared;
}

async function refuseStoredIds(store: DocumentStore, prepared: readonly Prepared[]): Promise<void> {
  for (const c of prepared) {
    const target = store.collection(c.database, c.collection);
    if (c.docs.length === 0 || (await target.countDocuments({}, { limit: 1 })) === 0) continue;
    for (let at = 0; at < c.docs.length; at += EXISTING_CHECK_CHUNK) {
      const ids = c.docs.slice(at, at + EXISTING_CHECK_CHUNK).map((d) => d._id);
      const found = await target.findOne({ _id: { $in: ids } }, { projection: { _id: 1 } });
      if (found) throw new ImportRefused(`${c.source}: ${c.database}.${c.collection} already holds the document with _id ${describeId(found._id)}; nothing was imported (--drop replaces the collections the dump holds)`);
    }
  }
}

/**
 * The writes in batches (by count and bytes), a few in flight at once; `done` hears of each batch that became
 * durable, also after another failed (a take-back must know every one). Throws the first failure.
 */
async function writeInBatches(store: DocumentStore, writes: readonly CommitWrite[], sizes: readonly number[], done?: (batch: CommitWrite[]) => void): Promise<void> {
  const inFlight: Promise<void>[] = [];
  let failure: { error: unknown } | undefined;
  let start = 0;
  while (start < writes.length && !failure) {
    let end = start;
    let bytes = 0;
    while (end < writes.length && end - start < BATCH_DOCUMENTS && (end === start || bytes + sizes[end]! <= BATCH_BYTES)) bytes += sizes[end++]!;
    const batch = writes.slice(start, end);
    inFlight.push(commitBatch(store, batch).then(() => done?.(batch), (error: unknown) => { failure ??= { error }; }));
    if (inFlight.length >= BATCHES_IN_FLIGHT) await inFlight.shift();
    // A journal without fsync acknowledges within microtasks: give other work its turn between batches.
    await yieldTurn();
    start = end;
  }
  await Promise.all(inFlight);
  if (failure) throw failure.error;
}

function commitBatch(store: DocumentStore, batch: CommitWrite[]): Promise<void> {
  return store.commit ? store.commit(batch) : writeOneByOne(store, batch);
}

/** A store without commits (MongoDB): one write at a time. */
async function writeOneByOne(store: DocumentStore, batch: CommitWrite[]): Promise<void> {
  for (const w of batch) {
    const target = store.collection(w.database, w.collection);
    if ('insert' in w) await target.insertOne(w.insert);
    else if ('delete' in w) await target.deleteOne({ _id: { $eq: w.delete } });
  }
}

async function takeBack(store: DocumentStore, inserted: readonly CommitWrite[], dropped: readonly CommitWrite[]): Promise<string> {
  if (inserted.length === 0 && dropped.length === 0) return '';
  try {
    const deletes = inserted.map((w): CommitWrite => ({ database: w.database, collection: w.collection, delete: 'insert' in w ? w.insert._id : undefined }));
    await writeInBatches(store, deletes, deletes.map(() => 0));
    await writeInBatches(store, dropped, dropped.map(() => 0));
    return ` (the ${inserted.length} document(s) written before the failure were taken back${dropped.length ? `, and the ${dropped.length} replaced put back` : ''})`;
  } catch (error) {
    return `, but taking back the ${inserted.length} document(s) written before the failure failed too: ${(error as Error).message}`;
  }
}

function describeId(id: unknown): string {
  try {
    return EJSON.stringify({ _id: id } as Document, { relaxed: true }).slice('{"_id":'.length, -1);
  } catch {
    return String(id);
  }
}
