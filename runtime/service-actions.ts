// The `mongodb-atlas` service actions (client-api.md §8): what the SDKs' remote collection API sends to
// `functions/call` and what functions' `context.services.get(...).db(...).collection(...)` forwards.
// One dispatcher for both, over a StoreCollection that already enforces the caller's rules.
import { Long } from 'bson';
import { isObject } from '../core/json';
import { StoreError, type Document, type StoreCollection } from './store/types';

/** An error a client sees with its `error_code` (mapped to a status by the HTTP layer). */
export class ServiceActionError extends Error {
  constructor(readonly errorCode: 'ServiceNotFound' | 'ServiceCommandNotFound' | 'InvalidParameter' | 'MongoDBError', message: string) {
    super(message);
    this.name = 'ServiceActionError';
  }
}

export type CollectionResolver = (service: string, database: string, collection: string) => StoreCollection;

export async function runServiceAction(collectionFor: CollectionResolver, service: string, action: string, args: unknown): Promise<unknown> {
  if (!isObject(args)) throw new ServiceActionError('InvalidParameter', `the arguments of ${action} must be an object with "database" and "collection"`);
  const { database, collection } = args;
  if (typeof database !== 'string' || typeof collection !== 'string' || !database || !collection) {
    throw new ServiceActionError('InvalidParameter', `${action} needs string "database" and "collection" arguments`);
  }
  // Own properties only: `constructor`, `__proto__` and the like are names a client can send too.
  const run = Object.hasOwn(ACTIONS, action) ? ACTIONS[action] : undefined;
  if (!run) throw new ServiceActionError('ServiceCommandNotFound', `function not found: '${action}' is not an action of the ${service} service`);
  try {
    return await run(collectionFor(service, database, collection), args);
  } catch (e) {
    if (e instanceof StoreError) throw new ServiceActionError('MongoDBError', e.message);
    throw e;
  }
}

type Action = (c: StoreCollection, a: Record<string, unknown>) => Promise<unknown>;

const doc = (v: unknown): Document => (isObject(v) ? v : {});
const optionalDoc = (v: unknown): Document | undefined => (isObject(v) ? v : undefined);
const count = (v: unknown): number | undefined => {
  const n = typeof v === 'number' ? v : v instanceof Long ? v.toNumber() : isObject(v) && typeof (v as { valueOf(): unknown }).valueOf() === 'number' ? Number(v) : undefined;
  return n !== undefined && Number.isFinite(n) && n > 0 ? Math.floor(n) : undefined;
};
const sortSpec = (v: unknown) => optionalDoc(v) as Record<string, 1 | -1> | undefined;
/**
 * The update of updateOne, updateMany and findOneAndUpdate. As on the platform, a document of plain fields
 * (no update operator: what the native SDKs' tests send) sets those fields, as `{$set: document}` would;
 * a document with operators goes as it is (mixing both is refused by the store, as by MongoDB).
 */
const updateDoc = (v: unknown): Document => {
  const update = doc(v);
  const keys = Object.keys(update);
  return keys.length > 0 && keys.every((k) => !k.startsWith('$')) ? { $set: update } : update;
};

const ACTIONS: Record<string, Action> = {
  find: (c, a) => c.find(doc(a.query), { projection: optionalDoc(a.project), sort: sortSpec(a.sort), limit: count(a.limit), skip: count(a.skip) }),
  findOne: (c, a) => c.findOne(doc(a.query), { projection: optionalDoc(a.project), sort: sortSpec(a.sort) }),
  findOneAndUpdate: (c, a) => c.findOneAndUpdate(doc(a.filter), updateDoc(a.update), {
    sort: sortSpec(a.sort), projection: optionalDoc(a.projection), upsert: a.upsert === true, returnNewDocument: a.returnNewDocument === true,
  }),
  // The Web SDK sends findOneAndDelete as findOneAndReplace without a replacement (client-api.md §8).
  findOneAndReplace: (c, a) => (a.update === undefined
    ? c.findOneAndDelete(doc(a.filter), { sort: sortSpec(a.sort), projection: optionalDoc(a.projection) })
    : c.findOneAndReplace(doc(a.filter), doc(a.update), {
      sort: sortSpec(a.sort), projection: optionalDoc(a.projection), upsert: a.upsert === true, returnNewDocument: a.returnNewDocument === true,
    })),
  findOneAndDelete: (c, a) => c.findOneAndDelete(doc(a.filter), { sort: sortSpec(a.sort), projection: optionalDoc(a.projection) }),
  aggregate: (c, a) => {
    if (!Array.isArray(a.pipeline)) throw new ServiceActionError('InvalidParameter', 'aggregate needs a "pipeline" array');
    return c.aggregate(a.pipeline as Document[]);
  },
  count: async (c, a) => Long.fromNumber(await c.countDocuments(doc(a.query), { limit: count(a.limit), skip: count(a.skip) })),
  insertOne: (c, a) => c.insertOne(doc(a.document)),
  insertMany: (c, a) => {
    if (!Array.isArray(a.documents)) throw new ServiceActionError('InvalidParameter', 'insertMany needs a "documents" array');
    return c.insertMany(a.documents.map(doc));
  },
  updateOne: (c, a) => c.updateOne(doc(a.query), updateDoc(a.update), { upsert: a.upsert === true }),
  updateMany: (c, a) => c.updateMany(doc(a.query), updateDoc(a.update), { upsert: a.upsert === true }),
  deleteOne: (c, a) => c.deleteOne(doc(a.query)),
  deleteMany: (c, a) => c.deleteMany(doc(a.query)),
};
