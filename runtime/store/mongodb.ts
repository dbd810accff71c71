// The storage interface over a real MongoDB deployment through the official driver. The driver is
// loaded lazily so the bundle stays small and apps without a MongoDB data source never load it.
import type { Collection, MongoClient } from 'mongodb';
import { ObjectId } from 'bson';
import { toStorable } from './bson-values';
import { describeViolation, findPipelineViolation } from './pipeline-check';
import {
  StoreError, StoreErrorCode,
  type CollectionName, type CountOptions, type DeleteResult, type Document, type DocumentStore, type Filter,
  type FindOneAndDeleteOptions, type FindOneAndModifyOptions, type FindOptions, type InsertManyResult,
  type InsertOneResult, type StoreCollection, type UpdateResult, type UpsertOptions,
} from './types';

export interface MongoStoreOptions {
  /** A MongoDB connection string, from the data source config or a command-line flag. */
  uri: string;
  /** How long to wait for a server before failing an operation. Default 10 s. */
  serverSelectionTimeoutMS?: number;
}

const SYSTEM_DATABASES = new Set(['admin', 'local', 'config']);

function isPlainObject(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Nothing reaches MongoDB with server-side JavaScript or server-state stages, at any depth (see
 * pipeline-check.ts); stages across collections are the data access layer's to refuse when rules apply.
 */
function checked<T>(value: T, what: string): T {
  const violation = findPipelineViolation(value, { allowCrossCollection: true }, what);
  if (violation) throw StoreError.badValue(describeViolation(violation));
  return value;
}

function requireDocument(value: unknown, what: string): Document {
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) throw StoreError.badValue(`${what} must be a document`);
  return value;
}

/** A filter or an update: a document, checked like a pipeline (`$expr` may hold `$function`, a filter `$where`). */
function requireQuery(value: unknown, what: string): Document {
  return checked(requireDocument(value, what), what);
}

/** Driver errors become StoreErrors with the server's code, so both backends report alike. */
function translate(error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const e = error as { message?: string; code?: unknown; codeName?: unknown };
  const message = e?.message ?? String(error);
  if (typeof e?.code === 'number') {
    return new StoreError(message, e.code, typeof e.codeName === 'string' ? e.codeName : e.code === 11000 ? 'DuplicateKey' : 'MongoServerError');
  }
  // The driver's own argument checks reject bad input; anything else (network, selection) is not the caller's fault.
  if (/InvalidArgument|MongoAPIError|MongoParseError|BSON/.test(String((error as Error)?.name))) return StoreError.badValue(message);
  return new StoreError(message, StoreErrorCode.InternalError, String((error as Error)?.name ?? 'InternalError'));
}

async function call<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw translate(error);
  }
}

/**
 * Documents are read with every number wrapped (`promoteValues: false`, asked per read: the driver's own
 * command replies stay promoted), so a whole-number double is told from an int32; the stored form then
 * keeps it a `Double` and makes the others JS numbers, in this bson copy's classes.
 */
const TYPED_READ = { promoteValues: false, promoteLongs: false } as const;

/** Results go through the stored form (see bson-values.ts). */
function fromDriver(doc: unknown): Document {
  return toStorable(doc) as Document;
}

function withId(doc: unknown): Document {
  const input = requireDocument(doc, 'A document to insert');
  // The driver adds `_id` to the caller's object, so a copy is inserted (the server moves `_id` first).
  return input._id == null ? { ...input, _id: new ObjectId() } : { ...input };
}

class MongoCollection implements StoreCollection {
  constructor(private readonly collection: Collection<Document>, readonly database: string, readonly name: string) {}

  find(filter?: Filter, options: FindOptions = {}): Promise<Document[]> {
    return call(async () => {
      const docs = await this.collection.find(requireQuery(filter, 'A query filter'), {
        projection: options.projection, sort: options.sort, limit: options.limit, skip: options.skip, ...TYPED_READ,
      }).toArray();
      return docs.map(fromDriver);
    });
  }

  findOne(filter?: Filter, options: Omit<FindOptions, 'limit'> = {}): Promise<Document | null> {
    return call(async () => {
      const doc = await this.collection.findOne(requireQuery(filter, 'A query filter'), {
        projection: options.projection, sort: options.sort, skip: options.skip, ...TYPED_READ,
      });
      return doc ? fromDriver(doc) : null;
    });
  }

  insertOne(doc: Document): Promise<InsertOneResult> {
    return call(async () => {
      const result = await this.collection.insertOne(withId(doc));
      return { insertedId: toStorable(result.insertedId) };
    });
  }

  insertMany(docs: Document[]): Promise<InsertManyResult> {
    return call(async () => {
      if (!Array.isArray(docs)) throw StoreError.badValue('insertMany expects an array of documents');
      const prepared = docs.map(withId);
      if (prepared.length === 0) return { insertedIds: [] };
      await this.collection.insertMany(prepared, { ordered: true });
      return { insertedIds: prepared.map((d) => toStorable(d._id)) };
    });
  }

  updateOne(filter: Filter, update: Document, options: UpsertOptions = {}): Promise<UpdateResult> {
    return call(async () => shapeUpdate(await this.collection.updateOne(requireQuery(filter, 'A query filter'), requireQuery(update, 'An update'), { upsert: options.upsert })));
  }

  updateMany(filter: Filter, update: Document, options: UpsertOptions = {}): Promise<UpdateResult> {
    return call(async () => shapeUpdate(await this.collection.updateMany(requireQuery(filter, 'A query filter'), requireQuery(update, 'An update'), { upsert: options.upsert })));
  }

  replaceOne(filter: Filter, replacement: Document, options: UpsertOptions = {}): Promise<UpdateResult> {
    return call(async () => shapeUpdate(await this.collection.replaceOne(requireQuery(filter, 'A query filter'), requireDocument(replacement, 'A replacement'), { upsert: options.upsert })));
  }

  deleteOne(filter: Filter): Promise<DeleteResult> {
    return call(async () => ({ deletedCount: (await this.collection.deleteOne(requireQuery(filter, 'A query filter'))).deletedCount }));
  }

  deleteMany(filter?: Filter): Promise<DeleteResult> {
    return call(async () => ({ deletedCount: (await this.collection.deleteMany(requireQuery(filter, 'A query filter'))).deletedCount }));
  }

  findOneAndUpdate(filter: Filter, update: Document, options: FindOneAndModifyOptions = {}): Promise<Document | null> {
    return call(async () => {
      const doc = await this.collection.findOneAndUpdate(requireQuery(filter, 'A query filter'), requireQuery(update, 'An update'), {
        sort: options.sort, projection: options.projection, upsert: options.upsert,
        returnDocument: options.returnNewDocument ? 'after' : 'before', includeResultMetadata: false, ...TYPED_READ,
      });
      return doc ? fromDriver(doc) : null;
    });
  }

  findOneAndReplace(filter: Filter, replacement: Document, options: FindOneAndModifyOptions = {}): Promise<Document | null> {
    return call(async () => {
      const doc = await this.collection.findOneAndReplace(requireQuery(filter, 'A query filter'), requireDocument(replacement, 'A replacement'), {
        sort: options.sort, projection: options.projection, upsert: options.upsert,
        returnDocument: options.returnNewDocument ? 'after' : 'before', includeResultMetadata: false, ...TYPED_READ,
      });
      return doc ? fromDriver(doc) : null;
    });
  }

  findOneAndDelete(filter: Filter, options: FindOneAndDeleteOptions = {}): Promise<Document | null> {
    return call(async () => {
      const doc = await this.collection.findOneAndDelete(requireQuery(filter, 'A query filter'), {
        sort: options.sort, projection: options.projection, includeResultMetadata: false, ...TYPED_READ,
      });
      return doc ? fromDriver(doc) : null;
    });
  }

  aggregate(pipeline: Document[]): Promise<Document[]> {
    return call(async () => {
      if (!Array.isArray(pipeline)) throw StoreError.badValue('A pipeline must be an array of stage documents');
      checked(pipeline, 'pipeline');
      return (await this.collection.aggregate(pipeline, TYPED_READ).toArray()).map(fromDriver);
    });
  }

  countDocuments(filter?: Filter, options: CountOptions = {}): Promise<number> {
    return call(() => this.collection.countDocuments(requireQuery(filter, 'A query filter'), { limit: options.limit || undefined, skip: options.skip || undefined }));
  }

  createIndex(field: string): Promise<string> {
    return call(() => this.collection.createIndex({ [field]: 1 }));
  }
}

function shapeUpdate(result: { matchedCount: number; modifiedCount: number; upsertedId: unknown }): UpdateResult {
  const shaped: UpdateResult = { matchedCount: result.matchedCount, modifiedCount: result.modifiedCount };
  if (result.upsertedId !== null && result.upsertedId !== undefined) shaped.upsertedId = toStorable(result.upsertedId);
  return shaped;
}

/** Loads the driver on first use; `require` keeps it an ordinary external module in the bundle. */
function loadDriver(): typeof import('mongodb') {
  try {
    return require('mongodb') as typeof import('mongodb');
  } catch (error) {
    throw new StoreError(`The MongoDB driver could not be loaded: ${(error as Error).message}`, StoreErrorCode.InternalError, 'InternalError');
  }
}

export class MongoStore implements DocumentStore {
  private constructor(private readonly client: MongoClient) {}

  static async connect(options: MongoStoreOptions): Promise<MongoStore> {
    const { MongoClient } = loadDriver();
    return call(async () => {
      // promoteLongs=false keeps int64 values as Long, as the embedded store does.
      const client = new MongoClient(options.uri, {
        promoteLongs: false,
        serverSelectionTimeoutMS: options.serverSelectionTimeoutMS ?? 10_000,
      });
      await client.connect();
      return new MongoStore(client);
    });
  }

  collection(database: string, name: string): StoreCollection {
    return new MongoCollection(this.client.db(database).collection<Document>(name), database, name);
  }

  async listCollections(): Promise<CollectionName[]> {
    return call(async () => {
      const { databases } = await this.client.db('admin').admin().listDatabases({ nameOnly: true });
      const out: CollectionName[] = [];
      for (const { name: database } of databases) {
        if (SYSTEM_DATABASES.has(database)) continue;
        const collections = await this.client.db(database).listCollections({}, { nameOnly: true }).toArray();
        for (const { name } of collections) if (!name.startsWith('system.')) out.push({ database, name });
      }
      return out;
    });
  }

  /** Drops a whole database; used by tests to clean up after themselves. */
  async dropDatabase(database: string): Promise<void> {
    await call(() => this.client.db(database).dropDatabase());
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

export function openMongoStore(options: MongoStoreOptions): Promise<MongoStore> {
  return MongoStore.connect(options);
}
