// Per-request state: the authenticated user, the user's view of each collection (rules are applied by
// whoever implements `collectionFor`), and relationship loaders that batch the lookups of one request.
import type { RelationshipInfo } from '../../core/graphql';
import type { Document, StoreCollection } from '../store/types';
import type { RuntimeModel } from './model';
import { valueAtPath } from './model';
import { linkKey, markUndefined, toBson } from './values';

export interface CollectionRef { dataSource: string; database: string; collection: string }

/** The data access of one user: documents pass through that user's rules. */
export type CollectionFor<User> = (user: User, dataSource: string, database: string, collection: string) => StoreCollection;

/** Runs an app function as `user` (`context.user` inside the function). */
export type RunFunction<User> = (name: string, args: unknown[], user: User) => Promise<unknown>;

export interface ExecutionEnvironment<User> {
  model: RuntimeModel;
  collectionFor: CollectionFor<User>;
  runFunction: RunFunction<User>;
}

/** Bounds on the work one request may start, and whether its client has left. */
export interface RequestBounds {
  /** Function calls (custom resolvers) one request may start. */
  maxFunctionCalls: number;
  /** True once the client has disconnected: no further data access or function call starts. */
  clientGone?: () => boolean;
}

/** A request's work stopped: its client left, or it asked for more function calls than one request may make. */
export class RequestStopped extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RequestStopped';
  }
}

export class RequestContext<User> {
  private readonly collections = new Map<string, StoreCollection>();
  private loaders: Map<string, RelationLoader> | undefined;
  private functionCalls = 0;

  constructor(readonly user: User, readonly env: ExecutionEnvironment<User>, readonly bounds?: RequestBounds) {}

  /** Runs a function for this request, within the request's bound on function calls. */
  runFunction(name: string, args: unknown[]): Promise<unknown> {
    this.checkNotStopped();
    const max = this.bounds?.maxFunctionCalls;
    if (max !== undefined && ++this.functionCalls > max) {
      throw new RequestStopped(`the request asks for more than ${max} function calls (custom resolvers); split it into several requests`);
    }
    return this.env.runFunction(name, args, this.user);
  }

  private checkNotStopped(): void {
    if (this.bounds?.clientGone?.()) throw new RequestStopped('the client closed the connection; the request was stopped');
  }

  collection(ref: CollectionRef): StoreCollection {
    this.checkNotStopped();
    const key = `${ref.dataSource}\u0000${ref.database}\u0000${ref.collection}`;
    let collection = this.collections.get(key);
    if (!collection) {
      collection = this.env.collectionFor(this.user, ref.dataSource, ref.database, ref.collection);
      this.collections.set(key, collection);
    }
    return collection;
  }

  /** The loader of foreign documents for one relationship, shared by every parent document of the request. */
  loader(relationship: RelationshipInfo, sourceBsonType: string): RelationLoader {
    const { target, foreignKey } = relationship;
    const key = `${target.dataSource}\u0000${target.database}\u0000${target.collection}\u0000${foreignKey}`;
    this.loaders ??= new Map();
    let loader = this.loaders.get(key);
    if (!loader) {
      loader = new RelationLoader(this.collection(target), foreignKey, sourceBsonType);
      this.loaders.set(key, loader);
    }
    return loader;
  }

  /** After a write, later reads of the same request must see it. */
  forgetLoadedDocuments(): void {
    this.loaders = undefined;
  }
}

interface PendingLoad { key: string; value: unknown }

const settled = Promise.resolve();

/**
 * Collects the link values requested while one batch of sibling resolvers runs, then fetches every
 * matching foreign document with a single `$in` query. Results are cached by link value for the request.
 */
export class RelationLoader {
  private readonly results = new Map<string, Promise<Document[]>>();
  private pending: PendingLoad[] = [];
  private batch: Promise<Map<string, Document[]>> | undefined;

  constructor(private readonly collection: StoreCollection, private readonly foreignKey: string, private readonly sourceBsonType: string) {}

  /** The foreign documents whose foreign key equals (or, for an array foreign key, contains) `value`. */
  load(value: unknown): Promise<Document[]> {
    const key = linkKey(value);
    let result = this.results.get(key);
    if (!result) {
      this.pending.push({ key, value });
      const batch = (this.batch ??= this.scheduleBatch());
      result = batch.then((groups) => groups.get(key) ?? []);
      this.results.set(key, result);
    }
    return result;
  }

  private scheduleBatch(): Promise<Map<string, Document[]>> {
    // Waits until the resolvers already queued have run, as DataLoader does, so siblings join the batch.
    return settled.then(() => new Promise<void>((resolve) => process.nextTick(resolve))).then(() => {
      const pending = this.pending;
      this.pending = [];
      this.batch = undefined;
      return this.fetch(pending);
    });
  }

  private async fetch(pending: PendingLoad[]): Promise<Map<string, Document[]>> {
    const values = [...new Map(pending.map((p) => [p.key, toBson(p.value, this.sourceBsonType)])).values()];
    const filter = { [this.foreignKey]: values.length === 1 ? values[0] : { $in: values } };
    const docs = markUndefined(await this.collection.find(filter));
    const groups = new Map<string, Document[]>();
    for (const doc of docs) {
      const foreign = valueAtPath(doc, this.foreignKey);
      const keys = new Set(Array.isArray(foreign) ? foreign.map(linkKey) : [linkKey(foreign)]);
      for (const key of keys) {
        const group = groups.get(key);
        if (group) group.push(doc);
        else groups.set(key, [doc]);
      }
    }
    return groups;
  }
}
