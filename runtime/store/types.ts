// The storage interface every data-source backend implements (embedded store, MongoDB driver).
// Documents are plain JS objects holding bson values; results are shaped like the MongoDB driver's.

export type Document = Record<string, unknown>;
export type Filter = Document;
/** An update document made of operators (`$set`, `$inc`, ...). */
export type UpdateSpec = Document;
export type SortSpec = Record<string, 1 | -1>;
export type Projection = Document;

export interface FindOptions {
  projection?: Projection;
  sort?: SortSpec;
  limit?: number;
  skip?: number;
}

export interface UpsertOptions {
  upsert?: boolean;
}

export interface FindOneAndModifyOptions {
  sort?: SortSpec;
  projection?: Projection;
  upsert?: boolean;
  /** Return the document as it is after the change instead of before it. */
  returnNewDocument?: boolean;
}

export interface FindOneAndDeleteOptions {
  sort?: SortSpec;
  projection?: Projection;
}

export interface CountOptions {
  limit?: number;
  skip?: number;
}

export interface InsertOneResult { insertedId: unknown }
export interface InsertManyResult { insertedIds: unknown[] }
export interface UpdateResult {
  matchedCount: number;
  modifiedCount: number;
  /** Present only when the operation inserted a document. */
  upsertedId?: unknown;
}
export interface DeleteResult { deletedCount: number }

export interface StoreCollection {
  readonly database: string;
  readonly name: string;
  find(filter?: Filter, options?: FindOptions): Promise<Document[]>;
  findOne(filter?: Filter, options?: Omit<FindOptions, 'limit'>): Promise<Document | null>;
  insertOne(doc: Document): Promise<InsertOneResult>;
  insertMany(docs: Document[]): Promise<InsertManyResult>;
  updateOne(filter: Filter, update: UpdateSpec, options?: UpsertOptions): Promise<UpdateResult>;
  updateMany(filter: Filter, update: UpdateSpec, options?: UpsertOptions): Promise<UpdateResult>;
  replaceOne(filter: Filter, replacement: Document, options?: UpsertOptions): Promise<UpdateResult>;
  deleteOne(filter: Filter): Promise<DeleteResult>;
  deleteMany(filter?: Filter): Promise<DeleteResult>;
  findOneAndUpdate(filter: Filter, update: UpdateSpec, options?: FindOneAndModifyOptions): Promise<Document | null>;
  findOneAndReplace(filter: Filter, replacement: Document, options?: FindOneAndModifyOptions): Promise<Document | null>;
  findOneAndDelete(filter: Filter, options?: FindOneAndDeleteOptions): Promise<Document | null>;
  aggregate(pipeline: Document[]): Promise<Document[]>;
  countDocuments(filter?: Filter, options?: CountOptions): Promise<number>;
  /** Declares an index on a (dotted) field; idempotent. Returns the index name, as the driver does. */
  createIndex(field: string): Promise<string>;
}

export interface CollectionName { database: string; name: string }

/**
 * One write of a commit: `insert` fails when the `_id` exists; `replace` (by the document's `_id`) and
 * `delete` (by id) do nothing when it does not.
 */
export type CommitWrite =
  | { database: string; collection: string; insert: Document }
  | { database: string; collection: string; replace: Document }
  | { database: string; collection: string; delete: unknown };

export interface DocumentStore {
  collection(database: string, name: string): StoreCollection;
  listCollections(): Promise<CollectionName[]>;
  close(): Promise<void>;
  /**
   * Applies writes to several collections as one unit: all are checked before any is applied, and they
   * become durable together (the embedded store: one journal record, one sync). Absent when the store
   * cannot promise that (MongoDB without transactions): callers then write one by one.
   */
  commit?(writes: readonly CommitWrite[]): Promise<void>;
  /**
   * Runs `work` (calls of this store) with its writes resolving once applied; gives its outcome, and a
   * promise of the durability of what it applied (a failed work may have applied part): the change-event decorator reads around a write and emits its event under a lock it
   * then releases, so the next write to the collection is applied and made durable together with this one
   * (the embedded store, whose writes apply before their first await). Absent where writes apply remotely.
   */
  untilApplied?<T>(work: () => Promise<T>): Promise<{ result: PromiseSettledResult<T>; durable: Promise<void> }>;
  /**
   * For an array a collection's `find` returned (that array itself): the store's own documents its elements
   * are copies of, in order. The store never changes those objects (a write stores new ones), so what is
   * derived from one, its BSON say, can be kept by its identity. Undefined when the store does not know.
   */
  storedOriginals?(found: readonly unknown[]): readonly Document[] | undefined;
  /**
   * Every collection (empty ones with declared indexes too) with its documents as they all were at one
   * instant: the store's own objects, which it never changes, so they stay that instant's while writes go
   * on. Absent when the store cannot take one (MongoDB).
   */
  snapshot?(): StoreSnapshotCollection[];
  /** What an operator watches (metrics): absent when the store cannot tell (MongoDB). */
  stats?(): StoreStats;
}

/** The embedded store's footprint and how far its journal is behind the writes it acknowledged or holds. */
export interface StoreStats {
  /** Whether the store still takes operations. */
  open: boolean;
  /** Bytes of the last snapshot and of the journal written since it (what a restart replays). */
  snapshotBytes: number;
  journalBytes: number;
  /** Journal records queued or being written and synced: writes not yet durable. */
  journalPendingRecords: number;
  /** Journal records written and fsyncs issued since the store opened. */
  journalRecords: number;
  journalSyncs: number;
}

/** One collection of a `snapshot`: its declared index fields (`_id` not among them) and its documents, in natural order. */
export interface StoreSnapshotCollection { database: string; name: string; indexes: string[]; docs: readonly Document[] }

/**
 * Databases the runtime keeps its own records in, in an app's store: sync's history, client files and
 * partition salts; auth records when they are kept over a store. App code never reaches them
 * (data/access.ts); only the runtime's own code does, through the store.
 */
export const SYNC_METADATA_DATABASE = '__realm_sync';
export const AUTH_RECORDS_DATABASE = '__asl_auth';
export const RUNTIME_DATABASES: ReadonlySet<string> = new Set([SYNC_METADATA_DATABASE, AUTH_RECORDS_DATABASE]);

/** MongoDB server error codes the store reports, so callers can map them to client error bodies. */
export const StoreErrorCode = {
  BadValue: 2,
  FailedToParse: 9,
  TypeMismatch: 14,
  ImmutableField: 66,
  ConflictingUpdateOperators: 40,
  DuplicateKey: 11000,
  IllegalOperation: 20,
  InternalError: 1,
  OutOfDiskSpace: 14031,
} as const;

/**
 * An error the caller can turn into a JSON error body. `code` follows MongoDB's numbering
 * (11000 = duplicate key) so both backends report the same codes.
 */
export class StoreError extends Error {
  constructor(message: string, readonly code: number, readonly codeName: string) {
    super(message);
    this.name = 'StoreError';
  }

  static badValue(message: string): StoreError {
    return new StoreError(message, StoreErrorCode.BadValue, 'BadValue');
  }

  static failedToParse(message: string): StoreError {
    return new StoreError(message, StoreErrorCode.FailedToParse, 'FailedToParse');
  }
}

/**
 * The filter selecting the document whose `_id` equals `id`, as a value: an id that came from a client and
 * looks like an operator (`{"$in": […]}`, `{"$ne": null}`) matches only a document with that literal id.
 */
export function byId(id: unknown): Filter {
  return { _id: { $eq: id } };
}
