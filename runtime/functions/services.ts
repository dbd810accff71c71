// The `context.services.get(name)` client a function sees. Every collection method becomes one service
// action with the argument shapes of the client API's data actions (client-api.md §8), sent to the host.
import { Long } from 'bson';

export type HostRequest = (request:
  | { kind: 'service'; service: string; action: string; args: Record<string, unknown> }
  | { kind: 'execute'; name: string; args: unknown[] }) => Promise<unknown>;

type Document = Record<string, unknown>;

interface FindOptions { sort?: unknown; limit?: unknown; skip?: unknown }
interface ModifyOptions { projection?: unknown; sort?: unknown; upsert?: unknown; returnNewDocument?: unknown }

/** Only the options that are set: the data actions omit unset keys. */
function defined(args: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) if (value !== undefined) out[key] = value;
  return out;
}

/** The platform's find/aggregate result: a cursor read with `toArray()` or `next()`, shaped by sort/limit/skip before the first read. */
class Cursor {
  private results: Promise<unknown[]> | undefined;
  private position = 0;

  constructor(private readonly fetch: (options: FindOptions) => Promise<unknown>, private readonly options: FindOptions = {}) {}

  sort(sort: unknown): this { return this.modify('sort', sort); }
  limit(limit: unknown): this { return this.modify('limit', limit); }
  skip(skip: unknown): this { return this.modify('skip', skip); }

  toArray(): Promise<unknown[]> {
    this.results ??= this.fetch(this.options).then((value) => (Array.isArray(value) ? value : []));
    return this.results;
  }

  async next(): Promise<unknown> {
    const results = await this.toArray();
    return this.position < results.length ? results[this.position++] : null;
  }

  async hasNext(): Promise<boolean> {
    return this.position < (await this.toArray()).length;
  }

  private modify(key: keyof FindOptions, value: unknown): this {
    if (this.results) throw new Error(`cannot call ${key}() on a cursor that has already been read`);
    this.options[key] = value;
    return this;
  }
}

function toCount(value: unknown): unknown {
  if (value instanceof Long) return value.toNumber();
  if (typeof value === 'bigint') return Number(value);
  return value;
}

function collectionClient(service: string, database: string, collection: string, hostRequest: HostRequest) {
  const act = (action: string, args: Record<string, unknown>) =>
    hostRequest({ kind: 'service', service, action, args: { database, collection, ...defined(args) } });
  return {
    find: (query: Document = {}, project?: Document, options: FindOptions = {}) =>
      new Cursor((o) => act('find', { query, project, sort: o.sort, limit: o.limit, skip: o.skip }), { ...options }),
    findOne: (query: Document = {}, project?: Document, options: { sort?: unknown } = {}) =>
      act('findOne', { query, project, sort: options.sort }),
    findOneAndUpdate: (filter: Document, update: Document, options: ModifyOptions = {}) =>
      act('findOneAndUpdate', { filter, update, ...options }),
    findOneAndReplace: (filter: Document, replacement: Document, options: ModifyOptions = {}) =>
      act('findOneAndReplace', { filter, update: replacement, ...options }),
    findOneAndDelete: (filter: Document, options: { projection?: unknown; sort?: unknown } = {}) =>
      act('findOneAndDelete', { filter, projection: options.projection, sort: options.sort }),
    insertOne: (document: Document) => act('insertOne', { document }),
    insertMany: (documents: Document[]) => act('insertMany', { documents }),
    updateOne: (query: Document, update: unknown, options: { upsert?: unknown } = {}) =>
      act('updateOne', { query, update, upsert: options.upsert }),
    updateMany: (query: Document, update: unknown, options: { upsert?: unknown } = {}) =>
      act('updateMany', { query, update, upsert: options.upsert }),
    deleteOne: (query: Document = {}) => act('deleteOne', { query }),
    deleteMany: (query: Document = {}) => act('deleteMany', { query }),
    aggregate: (pipeline: Document[] = []) => new Cursor(() => act('aggregate', { pipeline })),
    count: (query: Document = {}, options: { limit?: unknown } = {}) =>
      act('count', { query, limit: options.limit }).then(toCount),
    countDocuments: (query: Document = {}, options: { limit?: unknown; skip?: unknown } = {}) =>
      act('count', { query, limit: options.limit, skip: options.skip }).then(toCount),
  };
}

export function createServiceClient(service: string, hostRequest: HostRequest) {
  return {
    db: (database: string) => ({
      collection: (collection: string) => collectionClient(service, String(database), String(collection), hostRequest),
    }),
  };
}
