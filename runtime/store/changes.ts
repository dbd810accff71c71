// Change events for database triggers: a DocumentStore decorator that reports every successful write as
// the platform's change events (insert, update, replace, delete), with the documents before and after.
// Writes to a namespace somebody listens to run one at a time through the decorator, so the documents read
// around a write are exactly the ones it changed and events come out in write order; on the embedded store
// the next one starts once the previous is applied and its event emitted, and each resolves once durable. Namespaces nobody
// listens to pass straight through, without the lock or the extra reads.
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { ObjectId, Timestamp } from 'bson';
import { bsonType, typedValueKey, valueKey } from './bson-values';
import { seedFromFilter } from './update';
import type {
  CollectionName, CommitWrite, CountOptions, DeleteResult, Document, DocumentStore, Filter, FindOneAndDeleteOptions,
  FindOneAndModifyOptions, FindOptions, InsertManyResult, InsertOneResult, StoreCollection, UpdateResult,
  UpdateSpec, UpsertOptions,
} from './types';

export type ChangeOperationType = 'insert' | 'update' | 'replace' | 'delete';

export interface UpdateDescription {
  /** Changed and added fields by dotted path, with their new values. */
  updatedFields: Document;
  removedFields: string[];
  truncatedArrays: { field: string; newSize: number }[];
}

/**
 * A change event as the platform hands it to trigger functions. The decorator fills in everything it
 * knows; which of `fullDocument`/`fullDocumentBeforeChange` a trigger actually sees is the dispatcher's call.
 */
export interface ChangeEvent {
  /** Resume token. */
  _id: { _data: string };
  operationType: ChangeOperationType;
  clusterTime: Timestamp;
  wallTime: Date;
  ns: { db: string; coll: string };
  documentKey: { _id: unknown };
  /** insert and replace: the new document; update: the document after the update; delete: absent. */
  fullDocument?: Document;
  /** update, replace, delete: the document before the change. */
  fullDocumentBeforeChange?: Document;
  /** update only. */
  updateDescription?: UpdateDescription;
}

export type ChangeListener = (change: ChangeEvent) => void;

/** A write whose events wait for its durability: delivered once it is, dropped if its changes were taken back. */
interface PendingWrite {
  events: ChangeEvent[];
  outcome: boolean | undefined;
  delivered: () => void;
  /** The async context the write was made in: the listener runs in it (sees the writer's context). */
  context: AsyncResource;
}

export interface ChangeEventOptions {
  /** Whether any listener cares about this operation on this namespace; writes nobody wants cost nothing extra. Default: all. */
  wants?: (database: string, collection: string, operationType: ChangeOperationType) => boolean;
  /** Source of `clusterTime` and `wallTime`. */
  now?: () => Date;
}

/**
 * Wraps a store so every successful write reports change events to `listener`, which is called in write
 * order, in the writer's async context, once the write is durable and before the write resolves (a write
 * whose journal record fails reports nothing), and must not throw.
 */
export function withChangeEvents(store: DocumentStore, listener: ChangeListener, options: ChangeEventOptions = {}): DocumentStore {
  const wants = options.wants ?? (() => true);
  const now = options.now ?? (() => new Date());
  const tails = new Map<string, Promise<unknown>>();
  /** Writes applied but not yet durable that emitted events, in emission order (a store with untilApplied). */
  const queued: PendingWrite[] = [];
  const currentWrite = new AsyncLocalStorage<PendingWrite>();
  let lastSecond = 0;
  let increment = 0;

  /** Runs `work` after every earlier write to the namespace has finished, whatever its outcome. */
  function serialized<T>(namespace: string, work: () => Promise<T>): Promise<T> {
    return serializedAll([namespace], work);
  }

  /**
   * Runs `work` after every earlier write to any of the namespaces has been applied and its event emitted,
   * whatever its outcome; resolves once its writes are durable too. A store whose writes apply at once
   * (untilApplied) lets the next write in as soon as this one is applied, so consecutive writes share a sync.
   */
  function serializedAll<T>(namespaces: readonly string[], work: () => Promise<T>): Promise<T> {
    const untilApplied = store.untilApplied?.bind(store);
    if (!untilApplied) return lockedAll(namespaces, work);
    // An AsyncResource holds the writer's context as AsyncLocalStorage.snapshot() does, for ~1% of its cost
    // (Node 20's snapshot binds a function through a deprecation wrapper: ~5-20 µs per single insert).
    const write: PendingWrite = { events: [], outcome: undefined, delivered: () => undefined, context: new AsyncResource('asl-store-write') };
    const delivered = new Promise<void>((resolve) => { write.delivered = resolve; });
    const settle = (outcome: boolean): Promise<void> => {
      write.outcome = outcome;
      if (write.events.length === 0) return Promise.resolve();
      deliverSettled();
      return delivered;
    };
    return lockedAll(namespaces, () => currentWrite.run(write, () => untilApplied(work))).then(async ({ result, durable }) => {
      try {
        await durable;
      } catch (error) {
        await settle(false);
        throw error;
      }
      // What a failed write made durable before failing is reported too.
      await settle(true);
      if (result.status === 'rejected') throw result.reason;
      return result.value;
    });
  }

  /**
   * Hands the events of settled writes to the listener in the order they were emitted, each in its
   * writer's async context; a write that did not become durable (its changes taken back) reports nothing.
   */
  function deliverSettled(): void {
    while (queued.length > 0 && queued[0]!.outcome !== undefined) {
      const write = queued.shift()!;
      if (write.outcome) write.context.runInAsyncScope(() => { for (const event of write.events) listener(event); });
      write.delivered();
    }
  }

  /** Runs `work` after every earlier `work` on any of the namespaces has finished, whatever its outcome. */
  function lockedAll<T>(namespaces: readonly string[], work: () => Promise<T>): Promise<T> {
    const earlier = namespaces.map((ns) => tails.get(ns)).filter((t) => t !== undefined);
    const previous = earlier.length === 0 ? Promise.resolve() : earlier.length === 1 ? earlier[0]! : Promise.all(earlier);
    const result = previous.then(work, work);
    const tail = result.catch(() => undefined);
    for (const ns of namespaces) tails.set(ns, tail);
    void tail.then(() => {
      for (const ns of namespaces) if (tails.get(ns) === tail) tails.delete(ns);
    });
    return result;
  }

  function emit(db: string, coll: string, operationType: ChangeOperationType, parts: Omit<ChangeEvent, '_id' | 'operationType' | 'clusterTime' | 'wallTime' | 'ns'>): void {
    const wallTime = now();
    // A cluster time never goes backwards, even when the clock does: the increment orders events within a second.
    const second = Math.max(lastSecond, Math.floor(wallTime.getTime() / 1000));
    increment = second === lastSecond ? increment + 1 : 1;
    lastSecond = second;
    const token = second.toString(16).padStart(8, '0') + increment.toString(16).padStart(8, '0');
    const event: ChangeEvent = { _id: { _data: token }, operationType, clusterTime: new Timestamp({ t: second, i: increment }), wallTime, ns: { db, coll }, ...parts };
    const write = currentWrite.getStore();
    if (!write) return listener(event);
    if (write.events.length === 0) queued.push(write);
    write.events.push(event);
  }

  const emitInserted = (db: string, coll: string, doc: Document) => emit(db, coll, 'insert', { documentKey: { _id: doc._id }, fullDocument: doc });
  function emitChanged(db: string, coll: string, op: 'update' | 'replace', before: Document, after: Document | undefined): void {
    if (!after || typedValueKey(before) === typedValueKey(after)) return;
    emit(db, coll, op, {
      documentKey: { _id: before._id }, fullDocument: after, fullDocumentBeforeChange: before,
      ...(op === 'update' ? { updateDescription: describeUpdate(before, after) } : {}),
    });
  }
  const emitRemoved = (db: string, coll: string, before: Document) => emit(db, coll, 'delete', { documentKey: { _id: before._id }, fullDocumentBeforeChange: before });

  /**
   * A commit's writes with their events: each watched document is read before and after, as a single write's
   * is, under the locks of every namespace it touches (taken together, so two commits cannot wait on each other).
   */
  async function commitWithEvents(commit: (writes: readonly CommitWrite[]) => Promise<void>, writes: readonly CommitWrite[]): Promise<void> {
    const watched = writes.filter((w) => (['insert', 'replace', 'delete'] as const).some((op) => wants(w.database, w.collection, op)));
    if (watched.length === 0) return commit(writes);
    const namespaces = [...new Set(watched.map((w) => `${w.database}.${w.collection}`))];
    const idOf = (w: CommitWrite) => ('insert' in w ? w.insert._id : 'replace' in w ? w.replace._id : w.delete);
    const read = (w: CommitWrite) => store.collection(w.database, w.collection).findOne({ _id: { $eq: idOf(w) } });
    return serializedAll(namespaces, async () => {
      const before = await Promise.all(watched.map(read));
      await commit(writes);
      const after = await Promise.all(watched.map((w) => ('delete' in w ? null : read(w))));
      watched.forEach((w, i) => {
        const [was, is] = [before[i], after[i]];
        if (was && !is && wants(w.database, w.collection, 'delete')) emitRemoved(w.database, w.collection, was);
        else if (!was && is && wants(w.database, w.collection, 'insert')) emitInserted(w.database, w.collection, is);
        else if (was && is && wants(w.database, w.collection, 'replace')) emitChanged(w.database, w.collection, 'replace', was, is);
      });
    });
  }

  function wrap(inner: StoreCollection): StoreCollection {
    const db = inner.database;
    const coll = inner.name;
    const namespace = `${db}.${coll}`;
    const wanted = (op: ChangeOperationType) => wants(db, coll, op);
    const anyWanted = () => wanted('insert') || wanted('update') || wanted('replace') || wanted('delete');
    const byId = async (ids: unknown[], projection?: Document): Promise<Map<string, Document>> => {
      if (ids.length === 0) return new Map();
      const docs = await inner.find({ _id: { $in: ids } }, projection ? { projection } : {});
      return new Map(docs.map((doc) => [valueKey(doc._id), doc]));
    };
    const emitInsert = (doc: Document) => emitInserted(db, coll, doc);
    const emitModified = (op: 'update' | 'replace', before: Document, after: Document | undefined) => emitChanged(db, coll, op, before, after);
    const emitDeleted = (before: Document) => emitRemoved(db, coll, before);

    /** updateOne/updateMany/replaceOne: the matched documents before, the write, the same documents after. */
    async function modify(op: 'update' | 'replace', filter: Filter, many: boolean, write: () => Promise<UpdateResult>): Promise<UpdateResult> {
      if (!anyWanted()) return write();
      return serialized(namespace, async () => {
        const before = wanted(op) ? await inner.find(filter, many ? {} : { limit: 1 }) : [];
        const result = await write();
        if (before.length > 0) {
          const after = await byId(before.map((doc) => doc._id));
          for (const doc of before) emitModified(op, doc, after.get(valueKey(doc._id)));
        }
        if (result.upsertedId !== undefined && wanted('insert')) {
          const inserted = await inner.findOne({ _id: result.upsertedId });
          if (inserted) emitInsert(inserted);
        }
        return result;
      });
    }

    /** findOneAndUpdate/findOneAndReplace: as `modify`; the caller gets the store's own answer back. */
    async function findAndModify(
      op: 'update' | 'replace', filter: Filter, options: FindOneAndModifyOptions,
      write: () => Promise<Document | null>, upsertWithKnownId: () => { id: unknown; write: () => Promise<Document | null> },
    ): Promise<Document | null> {
      if (!anyWanted()) return write();
      return serialized(namespace, async () => {
        const before = await inner.findOne(filter, { sort: options.sort });
        if (before) {
          const result = await write();
          if (wanted(op)) emitModified(op, before, (await byId([before._id])).get(valueKey(before._id)));
          return result;
        }
        if (!options.upsert || !wanted('insert')) return write();
        // Nothing matches, so this write inserts; with its `_id` known up front the new document can be read back.
        const upsert = upsertWithKnownId();
        const result = await upsert.write();
        const inserted = upsert.id === undefined ? null : await inner.findOne({ _id: upsert.id });
        if (inserted) emitInsert(inserted);
        return result;
      });
    }

    async function remove(filter: Filter, many: boolean, write: () => Promise<DeleteResult>): Promise<DeleteResult> {
      if (!wanted('delete')) return write();
      return serialized(namespace, async () => {
        const before = await inner.find(filter, many ? {} : { limit: 1 });
        const result = await write();
        // Only a writer outside this runtime (a shared MongoDB deployment) can make the counts differ.
        const survivors = result.deletedCount === before.length ? new Map() : await byId(before.map((doc) => doc._id));
        for (const doc of before) if (!survivors.has(valueKey(doc._id))) emitDeleted(doc);
        return result;
      });
    }

    return {
      database: db,
      name: coll,
      find: (filter?: Filter, opts?: FindOptions) => inner.find(filter, opts),
      findOne: (filter?: Filter, opts?: Omit<FindOptions, 'limit'>) => inner.findOne(filter, opts),
      aggregate: (pipeline: Document[]) => inner.aggregate(pipeline),
      countDocuments: (filter?: Filter, opts?: CountOptions) => inner.countDocuments(filter, opts),
      createIndex: (field: string) => inner.createIndex(field),

      async insertOne(doc: Document): Promise<InsertOneResult> {
        if (!anyWanted()) return inner.insertOne(doc);
        return serialized(namespace, async () => {
          const [withId] = withIds([doc]);
          const result = await inner.insertOne(withId);
          if (wanted('insert')) {
            const inserted = await inner.findOne({ _id: result.insertedId });
            if (inserted) emitInsert(inserted);
          }
          return result;
        });
      },

      async insertMany(docs: Document[]): Promise<InsertManyResult> {
        if (!anyWanted() || !Array.isArray(docs)) return inner.insertMany(docs);
        return serialized(namespace, async () => {
          const prepared = withIds(docs);
          const ids = prepared.map((doc) => (isDocument(doc) ? doc._id : undefined)).filter((id) => id !== undefined);
          if (!wanted('insert')) return inner.insertMany(prepared);
          // Inserts are ordered: when one fails, the ones before it stay. Knowing which ids already existed
          // tells which of the documents now present this write inserted.
          const existing = await byId(ids, { _id: 1 });
          let failure: unknown;
          let result: InsertManyResult | undefined;
          try {
            result = await inner.insertMany(prepared);
          } catch (error) {
            failure = error;
          }
          const present = await byId(ids);
          const seen = new Set<string>();
          for (const doc of prepared) {
            const key = isDocument(doc) ? valueKey(doc._id) : undefined;
            if (key === undefined || seen.has(key) || existing.has(key) || !present.has(key)) break;
            seen.add(key);
            emitInsert(present.get(key)!);
          }
          if (result === undefined) throw failure;
          return result;
        });
      },

      updateOne: (filter: Filter, update: UpdateSpec, opts?: UpsertOptions) => modify('update', filter, false, () => inner.updateOne(filter, update, opts)),
      updateMany: (filter: Filter, update: UpdateSpec, opts?: UpsertOptions) => modify('update', filter, true, () => inner.updateMany(filter, update, opts)),
      replaceOne: (filter: Filter, replacement: Document, opts?: UpsertOptions) => modify('replace', filter, false, () => inner.replaceOne(filter, replacement, opts)),
      deleteOne: (filter: Filter) => remove(filter, false, () => inner.deleteOne(filter)),
      deleteMany: (filter?: Filter) => remove(filter ?? {}, true, () => inner.deleteMany(filter)),
      findOneAndUpdate: (filter: Filter, update: UpdateSpec, opts: FindOneAndModifyOptions = {}) =>
        findAndModify('update', filter, opts, () => inner.findOneAndUpdate(filter, update, opts), () => {
          const upsert = updateUpsertingWithId(filter, update);
          return { id: upsert.id, write: () => inner.findOneAndUpdate(filter, upsert.update, opts) };
        }),
      findOneAndReplace: (filter: Filter, replacement: Document, opts: FindOneAndModifyOptions = {}) =>
        findAndModify('replace', filter, opts, () => inner.findOneAndReplace(filter, replacement, opts), () => {
          const upsert = replacementUpsertingWithId(filter, replacement);
          return { id: upsert.id, write: () => inner.findOneAndReplace(filter, upsert.replacement, opts) };
        }),
      async findOneAndDelete(filter: Filter, opts: FindOneAndDeleteOptions = {}): Promise<Document | null> {
        if (!wanted('delete')) return inner.findOneAndDelete(filter, opts);
        return serialized(namespace, async () => {
          const before = await inner.findOne(filter, { sort: opts.sort });
          const result = await inner.findOneAndDelete(filter, opts);
          if (before && result) emitDeleted(before);
          return result;
        });
      },
    };
  }

  // A wrapped collection holds no state of its own, and making one takes a closure per method.
  const wrapped = new Map<string, StoreCollection>();
  return {
    collection: (database: string, name: string) => {
      const key = `${database}\u0000${name}`;
      let collection = wrapped.get(key);
      if (!collection) wrapped.set(key, (collection = wrap(store.collection(database, name))));
      return collection;
    },
    listCollections: (): Promise<CollectionName[]> => store.listCollections(),
    close: () => store.close(),
    storedOriginals: (found: readonly unknown[]) => store.storedOriginals?.(found),
    ...(store.snapshot ? { snapshot: () => store.snapshot!() } : {}),
    ...(store.stats ? { stats: () => store.stats!() } : {}),
    ...(store.commit ? { commit: (writes: readonly CommitWrite[]) => commitWithEvents(store.commit!.bind(store), writes) } : {}),
  };
}

function isDocument(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Documents with the `_id` the store would give them (a new ObjectId for a missing or null one), so the write's ids are known up front. */
function withIds(docs: Document[]): Document[] {
  return docs.map((doc) => {
    if (!isDocument(doc) || (doc._id !== undefined && doc._id !== null)) return doc;
    const { _id: _missing, ...fields } = doc;
    return { _id: new ObjectId(), ...fields };
  });
}

/**
 * The `_id` an upserting update gives the document it inserts: from the update, else from the filter's
 * equalities (as the store seeds it), else a new ObjectId the update now sets on insert.
 */
function updateUpsertingWithId(filter: Filter, update: UpdateSpec): { id: unknown; update: UpdateSpec } {
  if (!isDocument(update) || !isDocument(filter)) return { id: undefined, update };
  for (const op of ['$set', '$setOnInsert']) {
    const args = update[op];
    if (isDocument(args) && args._id !== undefined) return { id: args._id, update };
  }
  const seeded = seedFromFilter(filter)._id;
  if (seeded !== undefined) return { id: seeded, update };
  const id = new ObjectId();
  const setOnInsert = isDocument(update.$setOnInsert) ? update.$setOnInsert : {};
  return { id, update: { ...update, $setOnInsert: { ...setOnInsert, _id: id } } };
}

/** As `updateUpsertingWithId`, for a replacement: its own `_id`, the filter's, or a new one added to it. */
function replacementUpsertingWithId(filter: Filter, replacement: Document): { id: unknown; replacement: Document } {
  if (!isDocument(replacement) || !isDocument(filter)) return { id: undefined, replacement };
  if (replacement._id !== undefined) return { id: replacement._id, replacement };
  const seeded = seedFromFilter(filter)._id;
  if (seeded !== undefined) return { id: seeded, replacement };
  const id = new ObjectId();
  return { id, replacement: { _id: id, ...replacement } };
}

function isSubDocument(value: unknown): value is Document {
  return isDocument(value) && bsonType(value) === undefined;
}

/**
 * What an update changed, by dotted path: sub-documents are compared field by field, anything else
 * (arrays included) is reported whole when it differs.
 */
export function describeUpdate(before: Document, after: Document): UpdateDescription {
  const updatedFields: Document = {};
  const removedFields: string[] = [];
  const walk = (prefix: string, old: Document, next: Document) => {
    for (const [key, value] of Object.entries(next)) {
      const path = prefix + key;
      if (!(key in old)) {
        updatedFields[path] = value;
        continue;
      }
      const previous = old[key];
      if (typedValueKey(previous) === typedValueKey(value)) continue;
      const reported = Object.keys(updatedFields).length + removedFields.length;
      if (isSubDocument(previous) && isSubDocument(value)) walk(`${path}.`, previous, value);
      // Same fields in another order: only the whole sub-document says what changed.
      if (Object.keys(updatedFields).length + removedFields.length === reported) updatedFields[path] = value;
    }
    for (const key of Object.keys(old)) if (!(key in next)) removedFields.push(prefix + key);
  };
  walk('', before, after);
  return { updatedFields, removedFields, truncatedArrays: [] };
}

/**
 * The update operators that turn `before` into `after`, field by field at the top level (`$set` keeps
 * existing fields in place and appends new ones, as the update produced them). Lets a caller that computed
 * the new document itself still write it as an update, so triggers see an update event rather than a replace.
 */
export function updateBetween(before: Document, after: Document): UpdateSpec {
  const $set: Document = {};
  const $unset: Document = {};
  for (const [key, value] of Object.entries(after)) {
    if (key !== '_id' && (!(key in before) || typedValueKey(before[key]) !== typedValueKey(value))) $set[key] = value;
  }
  for (const key of Object.keys(before)) if (!(key in after)) $unset[key] = '';
  return { ...(Object.keys($set).length ? { $set } : {}), ...(Object.keys($unset).length ? { $unset } : {}) };
}
