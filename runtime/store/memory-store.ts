// The in-memory document store the embedded store builds on: collections keyed by canonical `_id`,
// field indexes for equality lookups, and MongoDB query/update/aggregation semantics through mingo.
// Stored documents are never mutated in place (updates replace them), so a compaction snapshot can
// hold references while writes continue. Every mutation happens synchronously before the first
// `await`, which makes each operation atomic; only the journal acknowledgement is awaited.
import { AsyncLocalStorage } from 'node:async_hooks';
import { BSON, EJSON, ObjectId } from 'bson';
// Projections and sorts too run with the linear, bounded operators (regex.ts, evaluation-limits.ts).
import { Query } from './regex';
import { collectionsRead, runAggregation, selectsOnly } from './aggregation';
import { EvaluationTooLong } from './evaluation-limits';
import { evaluateAggregation } from './evaluator';
import { bsonType, cloneStored, fromComparable, toComparable, toStorable, typedValueKey, valueKey } from './bson-values';
import { applyUpdate, prepareReplacement, prepareUpdate, seedFromFilter, type PreparedUpdate } from './update';
import { compiledQuery } from './query-cache';
import {
  StoreError, StoreErrorCode,
  type CollectionName, type CountOptions, type DeleteResult, type Document, type DocumentStore, type Filter,
  type CommitWrite, type FindOneAndDeleteOptions, type FindOneAndModifyOptions, type FindOptions, type InsertManyResult,
  type InsertOneResult, type Projection, type SortSpec, type StoreCollection, type StoreSnapshotCollection, type UpdateResult, type UpsertOptions,
} from './types';

/** Inside `untilApplied`'s work, writes resolve once applied in memory; their journal promises are collected here. */
const deferredDurability = new AsyncLocalStorage<Promise<void>[]>();

/**
 * Where the engine reports each change so it can be made durable; resolves once it is. A change that
 * cannot be recorded is rejected after its `undo` has taken it back out of memory.
 */
export interface Journal {
  put(namespace: string, doc: Document, undo: () => void): Promise<void>;
  remove(namespace: string, id: unknown, undo: () => void): Promise<void>;
  declareIndex(namespace: string, field: string): Promise<void>;
  /** Several puts and removes as one record: after a crash, all of them or none. */
  commit(changes: readonly JournalChange[], undo: () => void): Promise<void>;
}

export type JournalChange = { put: string; doc: Document } | { remove: string; id: unknown };

export interface StoredDoc {
  /** Insertion sequence: the natural order MongoDB returns unsorted results in. */
  readonly seq: number;
  readonly key: string;
  doc: Document;
  /** The document as mingo should see it (see toComparable); the same object when no mapping is needed. */
  view: Document;
}

const INDEXABLE_BSON = new Set(['ObjectId', 'Long', 'Decimal128', 'Binary', 'Int32', 'Double']);

function isIndexableScalar(value: unknown): boolean {
  if (value === null) return true;
  switch (typeof value) {
    case 'string': case 'number': case 'boolean': return true;
    case 'object': return value instanceof Date || INDEXABLE_BSON.has(bsonType(value) ?? '');
    default: return false;
  }
}

function isPlainObject(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const NO_ENTRIES: ReadonlySet<StoredDoc> = new Set();

/** Equality index on one dotted field. Documents whose path crosses an array are always candidates. */
class FieldIndex {
  private readonly segments: string[];
  private readonly buckets = new Map<string, Set<StoredDoc>>();
  private readonly unkeyed = new Set<StoredDoc>();

  constructor(readonly field: string) {
    this.segments = field.split('.');
  }

  private keysOf(doc: Document): string[] | undefined {
    let current: unknown = doc;
    for (const segment of this.segments) {
      if (Array.isArray(current)) return undefined;
      if (!isPlainObject(current)) return ['z'];
      current = current[segment];
    }
    if (!Array.isArray(current)) return [valueKey(current)];
    return [...new Set([valueKey(current), ...current.map(valueKey)])];
  }

  add(entry: StoredDoc): void {
    const keys = this.keysOf(entry.doc);
    if (!keys) {
      this.unkeyed.add(entry);
      return;
    }
    for (const key of keys) {
      let bucket = this.buckets.get(key);
      if (!bucket) this.buckets.set(key, (bucket = new Set()));
      bucket.add(entry);
    }
  }

  remove(entry: StoredDoc): void {
    if (this.unkeyed.delete(entry)) return;
    for (const key of this.keysOf(entry.doc) ?? []) {
      const bucket = this.buckets.get(key);
      if (!bucket) continue;
      bucket.delete(entry);
      if (bucket.size === 0) this.buckets.delete(key);
    }
  }

  /** The entries whose value at the field equals one of `values`, and the entries the index cannot key. */
  lookup(values: unknown[]): { keyed: ReadonlySet<StoredDoc>; unkeyed: ReadonlySet<StoredDoc> } {
    if (values.length === 1) return { keyed: this.buckets.get(valueKey(values[0])) ?? NO_ENTRIES, unkeyed: this.unkeyed };
    const keyed = new Set<StoredDoc>();
    for (const value of values) for (const entry of this.buckets.get(valueKey(value)) ?? []) keyed.add(entry);
    return { keyed, unkeyed: this.unkeyed };
  }
}

class CollectionState {
  readonly docs = new Map<string, StoredDoc>();
  readonly indexes = new Map<string, FieldIndex>();
  /** Maps a view object back to its stored entry, for results that come out of mingo cursors. */
  readonly owners = new WeakMap<object, StoredDoc>();

  constructor(readonly database: string, readonly name: string) {}

  get namespace(): string {
    return `${this.database}.${this.name}`;
  }

  add(entry: StoredDoc): void {
    this.docs.set(entry.key, entry);
    this.owners.set(entry.view, entry);
    for (const index of this.indexes.values()) index.add(entry);
  }

  remove(entry: StoredDoc): void {
    this.docs.delete(entry.key);
    for (const index of this.indexes.values()) index.remove(entry);
  }

  replaceDoc(entry: StoredDoc, doc: Document): void {
    for (const index of this.indexes.values()) index.remove(entry);
    entry.doc = doc;
    entry.view = toComparable(doc) as Document;
    this.owners.set(entry.view, entry);
    for (const index of this.indexes.values()) index.add(entry);
  }

  ensureIndex(field: string): boolean {
    if (field === '_id' || this.indexes.has(field)) return false;
    const index = new FieldIndex(field);
    for (const entry of this.docs.values()) index.add(entry);
    this.indexes.set(field, index);
    return true;
  }
}

/** How a filter is answered: by `_id`, by a declared field index, or by scanning the collection. */
export type QueryPlan = { kind: 'id' } | { kind: 'index'; field: string } | { kind: 'scan' };

interface CompiledFilter {
  readonly filter: Filter;
  readonly test: (view: Document) => boolean;
  readonly equalities: Map<string, unknown[]>;
  /**
   * Set when the whole filter asks for one field to equal one scalar (possibly repeated, as a rule's
   * document filter repeats the query's condition): the documents an equality index files under that
   * value match it without a test.
   */
  readonly soleEqualityField?: string;
}

function mingoError(context: string, error: unknown): Error {
  if (error instanceof StoreError || error instanceof EvaluationTooLong) return error;
  return StoreError.badValue(`${context}: ${(error as Error)?.message ?? String(error)}`);
}

function compileFilter(filter: unknown): CompiledFilter {
  if (filter === undefined || filter === null) filter = {};
  if (!isPlainObject(filter)) throw StoreError.badValue('A query filter must be a document');
  const stored = toStorable(filter, 'filter') as Filter;
  const equalities = new Map<string, unknown[]>();
  collectEqualities(stored, equalities);
  // Index buckets and the `_id` map are keyed canonically (valueKey follows MongoDB equality), so a sole
  // equality needs no mingo query: `_id` lookups are exact, and index lookups test only unkeyed entries.
  const soleEqualityField = soleEquality(stored);
  if (Object.keys(stored).length === 0 || soleEqualityField === '_id' || isSoleIdIn(stored)) return { filter: stored, test: () => true, equalities };
  if (soleEqualityField !== undefined) {
    let lazy: ((view: Document) => boolean) | undefined;
    const test = (view: Document): boolean => (lazy ??= mingoTest(stored))(view);
    return { filter: stored, test, equalities, soleEqualityField };
  }
  return { filter: stored, test: mingoTest(stored), equalities };
}

function mingoTest(stored: Filter): (view: Document) => boolean {
  let query: Query;
  try {
    query = compiledQuery(toComparable(stored) as Filter);
  } catch (error) {
    throw mingoError('Invalid query', error);
  }
  return (view: Document): boolean => {
    try {
      return query.test(view);
    } catch (error) {
      throw mingoError('Invalid query', error);
    }
  };
}

/**
 * The field, when every condition of the filter (through `$and`) is `field: v` or `field: {$eq: v}` on the
 * same field with the same non-null scalar `v` (by MongoDB equality).
 */
function soleEquality(filter: Filter): string | undefined {
  let field: string | undefined;
  let key: string | undefined;
  const visit = (part: Filter): boolean => {
    for (const [name, condition] of Object.entries(part)) {
      if (name === '$and') {
        if (!Array.isArray(condition) || condition.length === 0 || !condition.every(isPlainObject)) return false;
        if (!condition.every(visit)) return false;
        continue;
      }
      if (name.startsWith('$')) return false;
      const value = isPlainObject(condition) ? equalityOperand(condition) : condition;
      if (value === undefined || value === null || !isIndexableScalar(value)) return false;
      const valueKeyed = valueKey(value);
      if (field === undefined) {
        field = name;
        key = valueKeyed;
      } else if (field !== name || key !== valueKeyed) {
        return false;
      }
    }
    return true;
  };
  return visit(filter) ? field : undefined;
}

/**
 * Whether the whole filter is `{_id: {$in: [scalars]}}`: the `_id` map answers it exactly (how a bulk write's
 * documents are read back), so no document is tested against the list, which would cost its length each.
 */
function isSoleIdIn(filter: Filter): boolean {
  const keys = Object.keys(filter);
  if (keys.length !== 1 || keys[0] !== '_id' || !isPlainObject(filter._id)) return false;
  const condition = filter._id as Document;
  return Object.keys(condition).length === 1 && Array.isArray(condition.$in) && condition.$in.every(isIndexableScalar);
}

/** `v` of `{$eq: v}`; undefined for any other condition document. */
function equalityOperand(condition: Document): unknown {
  const keys = Object.keys(condition);
  return keys.length === 1 && keys[0] === '$eq' ? condition.$eq : undefined;
}

function collectEqualities(filter: Filter, out: Map<string, unknown[]>): void {
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) {
      for (const part of value) if (isPlainObject(part)) collectEqualities(part, out);
      continue;
    }
    if (key.startsWith('$') || out.has(key)) continue;
    if (isPlainObject(value) && Object.keys(value).some((k) => k.startsWith('$'))) {
      if ('$eq' in value && isIndexableScalar(value.$eq)) out.set(key, [value.$eq]);
      else if (Array.isArray(value.$in) && value.$in.every(isIndexableScalar)) out.set(key, value.$in);
    } else if (isIndexableScalar(value)) {
      out.set(key, [value]);
    }
  }
}

function validateSort(sort: unknown): SortSpec | undefined {
  if (sort === undefined || sort === null) return undefined;
  if (!isPlainObject(sort)) throw StoreError.badValue('sort must be a document');
  const out: SortSpec = {};
  for (const [field, direction] of Object.entries(sort)) {
    const n = Number(typeof direction === 'object' && direction !== null ? NaN : direction);
    if (n !== 1 && n !== -1) throw StoreError.badValue(`$sort key ordering must be 1 (for ascending) or -1 (for descending); got ${JSON.stringify(direction)} for '${field}'`);
    out[field] = n;
  }
  return Object.keys(out).length ? out : undefined;
}

function validateCount(value: unknown, name: string): number {
  if (value === undefined || value === null) return 0;
  const n = typeof value === 'number' ? value : Number((value as { valueOf(): unknown }).valueOf());
  if (!Number.isFinite(n) || !Number.isInteger(n)) throw StoreError.badValue(`${name} must be an integer`);
  if (name === 'skip' && n < 0) throw StoreError.badValue('skip must be non-negative');
  return Math.abs(n);
}

function projectsNothing(projection: Projection | undefined): boolean {
  return projection === undefined || projection === null || Object.keys(projection).length === 0;
}

function project(docs: Document[], projection: Projection | undefined): Document[] {
  if (projectsNothing(projection)) return docs;
  if (!isPlainObject(projection)) throw StoreError.badValue('projection must be a document');
  try {
    return new Query({}).find(docs, projection).all() as Document[];
  } catch (error) {
    throw mingoError('Invalid projection', error);
  }
}

function idRepr(id: unknown): string {
  if (id instanceof ObjectId) return `ObjectId('${id.toHexString()}')`;
  try {
    return EJSON.stringify(id as never, { relaxed: true });
  } catch {
    return String(id);
  }
}

function validateNames(database: string, name: string): void {
  if (typeof database !== 'string' || database === '' || /[/\\. "$\0]/.test(database)) {
    throw new StoreError(`Invalid database name: '${String(database)}'`, StoreErrorCode.BadValue, 'InvalidNamespace');
  }
  if (typeof name !== 'string' || name === '' || name.includes('$') || name.includes('\0') || name.startsWith('system.')) {
    throw new StoreError(`Invalid collection name: '${String(name)}'`, StoreErrorCode.BadValue, 'InvalidNamespace');
  }
}

export interface MemoryStoreOptions {
  journal?: Journal;
  clock?: () => Date;
}

/** The engine's collections and the write path shared by the in-memory and persistent stores. */
export class MemoryStore implements DocumentStore {
  private readonly states = new Map<string, CollectionState>();
  /** Results of `find` without a projection, with the stored documents they copy (see storedOriginals). */
  private readonly originals = new WeakMap<readonly unknown[], readonly Document[]>();
  private seq = 0;
  private closed = false;
  private readonly clock: () => Date;
  protected journal: Journal | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    this.clock = options.clock ?? (() => new Date());
    this.journal = options.journal;
  }

  async untilApplied<T>(work: () => Promise<T>): Promise<{ result: PromiseSettledResult<T>; durable: Promise<void> }> {
    const pending: Promise<void>[] = [];
    // A failed write may have applied some of its changes first (an ordered insertMany's first documents).
    const [result] = await Promise.allSettled([deferredDurability.run(pending, work)]);
    return { result: result!, durable: Promise.all(pending).then(() => undefined) };
  }

  /** A journal promise, or an already settled one when the write runs inside `untilApplied` (which awaits it). */
  private durably(journaled: Promise<void>): Promise<void> {
    const deferred = deferredDurability.getStore();
    if (!deferred) return journaled;
    deferred.push(journaled);
    return Promise.resolve();
  }

  collection(database: string, name: string): EmbeddedCollection {
    validateNames(database, name);
    return new EmbeddedCollection(this, database, name);
  }

  async listCollections(): Promise<CollectionName[]> {
    this.assertOpen();
    return [...this.states.values()]
      .filter((s) => s.docs.size > 0 || s.indexes.size > 0)
      .map((s) => ({ database: s.database, name: s.name }));
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  protected get isClosed(): boolean {
    return this.closed;
  }

  assertOpen(): void {
    if (this.closed) throw new StoreError('The store is closed', StoreErrorCode.IllegalOperation, 'IllegalOperation');
  }

  /** The state of a collection; created only when `create` is set, so reads do not create collections. */
  state(database: string, name: string, create: true): CollectionState;
  state(database: string, name: string, create?: boolean): CollectionState | undefined;
  state(database: string, name: string, create = false): CollectionState | undefined {
    this.assertOpen();
    const ns = `${database}.${name}`;
    let state = this.states.get(ns);
    if (!state && create) this.states.set(ns, (state = new CollectionState(database, name)));
    return state;
  }

  now(): Date {
    return this.clock();
  }

  storedOriginals(found: readonly unknown[]): readonly Document[] | undefined {
    return this.originals.get(found);
  }

  /** Copies of stored documents for a caller, remembered with what they copy (stored documents are never changed in place). */
  copiesOf(entries: readonly StoredDoc[]): Document[] {
    const originals = entries.map((e) => e.doc);
    const copies = originals.map(cloneStored);
    this.originals.set(copies, originals);
    return copies;
  }

  /** Every collection with its declared indexes and current documents, for a snapshot. */
  contents(): { namespace: string; indexes: string[]; docs: Document[] }[] {
    return [...this.states.values()].map((s) => ({
      namespace: s.namespace,
      indexes: [...s.indexes.keys()],
      docs: [...s.docs.values()].map((e) => e.doc),
    }));
  }

  /** See DocumentStore.snapshot: taken synchronously, so no write falls inside it. */
  snapshot(): StoreSnapshotCollection[] {
    this.assertOpen();
    return [...this.states.values()]
      .filter((s) => s.docs.size > 0 || s.indexes.size > 0)
      .map((s) => ({ database: s.database, name: s.name, indexes: [...s.indexes.keys()], docs: [...s.docs.values()].map((e) => e.doc) }));
  }

  // Replay entry points: apply recovered changes without journaling them again.
  restorePut(namespace: string, doc: Document): void {
    const state = this.stateForNamespace(namespace);
    const key = valueKey(doc._id);
    const existing = state.docs.get(key);
    if (existing) state.replaceDoc(existing, doc);
    else state.add({ seq: this.seq++, key, doc, view: toComparable(doc) as Document });
  }

  restoreRemove(namespace: string, id: unknown): void {
    const state = this.stateForNamespace(namespace);
    const entry = state.docs.get(valueKey(id));
    if (entry) state.remove(entry);
  }

  restoreIndex(namespace: string, field: string): void {
    this.stateForNamespace(namespace).ensureIndex(field);
  }

  private stateForNamespace(namespace: string): CollectionState {
    const dot = namespace.indexOf('.');
    if (dot <= 0) throw new StoreError(`Invalid namespace in store data: '${namespace}'`, StoreErrorCode.InternalError, 'InternalError');
    return this.state(namespace.slice(0, dot), namespace.slice(dot + 1), true);
  }

  /** See DocumentStore.commit: every write is checked, then all are applied, then journaled as one record. */
  commit(writes: readonly CommitWrite[]): Promise<void> {
    try {
      return this.applyCommit(writes);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Applies a commit synchronously (so nothing else runs in between); returns its durability. */
  private applyCommit(writes: readonly CommitWrite[]): Promise<void> {
    const staged: ({ state: CollectionState; insert: StoredDoc } | { state: CollectionState; replace: StoredDoc; doc: Document } | { state: CollectionState; remove: StoredDoc })[] = [];
    const written = new Set<string>();
    for (const write of writes) {
      validateNames(write.database, write.collection);
      const state = this.state(write.database, write.collection, true);
      if ('insert' in write) {
        const doc = storableWithId(write.insert);
        const key = valueKey(doc._id);
        if (state.docs.has(key) || written.has(`${state.namespace}\u0000${key}`)) throw duplicateKey(state, doc._id);
        written.add(`${state.namespace}\u0000${key}`);
        staged.push({ state, insert: { seq: 0, key, doc, view: toComparable(doc) as Document } });
        continue;
      }
      const id = 'replace' in write ? (isPlainObject(write.replace) ? write.replace._id : undefined) : write.delete;
      if (id === undefined) throw StoreError.badValue(`A commit's ${'replace' in write ? 'replacement' : 'delete'} in ${state.namespace} names no _id`);
      const key = valueKey(id);
      if (written.has(`${state.namespace}\u0000${key}`)) throw StoreError.badValue(`A commit writes the document ${idRepr(id)} of ${state.namespace} twice`);
      written.add(`${state.namespace}\u0000${key}`);
      const entry = state.docs.get(key);
      if (!entry) continue;
      if ('replace' in write) {
        const { _id: _same, ...rest } = prepareReplacement(write.replace);
        staged.push({ state, replace: entry, doc: { _id: entry.doc._id, ...rest } });
      } else staged.push({ state, remove: entry });
    }
    const changes: JournalChange[] = [];
    const undo: (() => void)[] = [];
    for (const change of staged) {
      const { state } = change;
      if ('insert' in change) {
        const entry = { ...change.insert, seq: this.seq++ };
        state.add(entry);
        undo.push(() => state.remove(entry));
        changes.push({ put: state.namespace, doc: entry.doc });
      } else if ('replace' in change) {
        const previous = change.replace.doc;
        state.replaceDoc(change.replace, change.doc);
        undo.push(() => state.replaceDoc(change.replace, previous));
        changes.push({ put: state.namespace, doc: change.doc });
      } else {
        state.remove(change.remove);
        undo.push(() => state.add(change.remove));
        changes.push({ remove: state.namespace, id: change.remove.doc._id });
      }
    }
    if (changes.length === 0 || !this.journal) return Promise.resolve();
    // Memory first (a compaction started by this record snapshots it), back out if the record cannot be made.
    try {
      return this.durably(this.journal.commit(changes, () => { for (const step of [...undo].reverse()) step(); }));
    } catch (error) {
      for (const step of undo.reverse()) step();
      throw error;
    }
  }

  // Write path: change memory, then journal. The returned promise resolves once durable.
  insert(state: CollectionState, input: unknown): { id: unknown; durable: Promise<void> } {
    const doc = storableWithId(input);
    const id = doc._id;
    const key = valueKey(id);
    if (state.docs.has(key)) throw duplicateKey(state, id);
    const entry = { seq: this.seq++, key, doc, view: toComparable(doc) as Document };
    state.add(entry);
    return { id, durable: this.journalPut(state, doc, () => state.remove(entry)) };
  }

  replace(state: CollectionState, entry: StoredDoc, doc: Document): Promise<void> {
    const previous = entry.doc;
    state.replaceDoc(entry, doc);
    return this.journalPut(state, doc, () => state.replaceDoc(entry, previous));
  }

  remove(state: CollectionState, entry: StoredDoc): Promise<void> {
    state.remove(entry);
    return this.journal ? this.durably(this.journal.remove(state.namespace, entry.doc._id, () => state.add(entry))) : Promise.resolve();
  }

  declareIndex(state: CollectionState, field: string): Promise<void> {
    if (!state.ensureIndex(field)) return Promise.resolve();
    return this.journal?.declareIndex(state.namespace, field) ?? Promise.resolve();
  }

  private journalPut(state: CollectionState, doc: Document, undo: () => void): Promise<void> {
    return this.journal ? this.durably(this.journal.put(state.namespace, doc, undo)) : Promise.resolve();
  }
}

/** A document to insert as the store keeps it: a missing or null `_id` gets an ObjectId (as the driver does), stored first. */
function storableWithId(input: unknown): Document {
  if (!isPlainObject(input)) throw StoreError.badValue('A document to insert must be an object');
  const { _id: given, ...fields } = toStorable(input) as Document;
  const id = given ?? new ObjectId();
  if (Array.isArray(id)) throw StoreError.badValue("The '_id' value cannot be of type array");
  if (id instanceof RegExp || bsonType(id) === 'BSONRegExp') throw StoreError.badValue("The '_id' value cannot be of type regex");
  return { _id: id, ...fields };
}

function duplicateKey(state: CollectionState, id: unknown): StoreError {
  return new StoreError(
    `E11000 duplicate key error collection: ${state.namespace} index: _id_ dup key: { _id: ${idRepr(id)} }`,
    StoreErrorCode.DuplicateKey, 'DuplicateKey',
  );
}

interface MatchOptions {
  sort?: SortSpec;
  skip?: number;
  limit?: number;
}

export class EmbeddedCollection implements StoreCollection {
  constructor(private readonly engine: MemoryStore, readonly database: string, readonly name: string) {}

  /** How this filter would be answered; lets tests and diagnostics see index use. */
  explain(filter: Filter = {}): QueryPlan {
    const compiled = compileFilter(filter);
    return this.plan(this.engine.state(this.database, this.name), compiled).plan;
  }

  /** The plan, its candidate entries in natural order, and those among them known to match (`exact`). */
  private plan(state: CollectionState | undefined, compiled: CompiledFilter): { plan: QueryPlan; entries?: StoredDoc[]; exact?: ReadonlySet<StoredDoc> } {
    if (!state) return { plan: { kind: 'scan' } };
    const ids = compiled.equalities.get('_id');
    if (ids) {
      const seen = new Set<StoredDoc>();
      const entries: StoredDoc[] = [];
      // Ids listed in insertion order (a bulk write's documents read back) need no sort.
      let ordered = true;
      for (const id of ids) {
        const entry = state.docs.get(valueKey(id));
        if (!entry || seen.has(entry)) continue;
        seen.add(entry);
        if (entries.length > 0 && entries[entries.length - 1]!.seq > entry.seq) ordered = false;
        entries.push(entry);
      }
      return { plan: { kind: 'id' }, entries: ordered ? entries : entries.sort((a, b) => a.seq - b.seq) };
    }
    let best: { field: string; keyed: ReadonlySet<StoredDoc>; unkeyed: ReadonlySet<StoredDoc>; size: number } | undefined;
    for (const [field, values] of compiled.equalities) {
      const index = state.indexes.get(field);
      if (!index) continue;
      const { keyed, unkeyed } = index.lookup(values);
      const size = keyed.size + unkeyed.size;
      if (!best || size < best.size) best = { field, keyed, unkeyed, size };
    }
    if (!best) return { plan: { kind: 'scan' } };
    const entries = [...best.keyed, ...best.unkeyed].sort((a, b) => a.seq - b.seq);
    return { plan: { kind: 'index', field: best.field }, entries, ...(compiled.soleEqualityField === best.field ? { exact: best.keyed } : {}) };
  }

  /** The stored entries matching a filter, in sort (or natural) order, after skip and limit. */
  private match(state: CollectionState | undefined, compiled: CompiledFilter, options: MatchOptions = {}): StoredDoc[] {
    if (!state) return [];
    const { entries, exact } = this.plan(state, compiled);
    const source: Iterable<StoredDoc> = entries ?? state.docs.values();
    const matches = exact ? (entry: StoredDoc) => exact.has(entry) || compiled.test(entry.view) : (entry: StoredDoc) => compiled.test(entry.view);
    const skip = options.skip ?? 0;
    const limit = options.limit ?? 0;
    const matched: StoredDoc[] = [];
    if (!options.sort) {
      let skipped = 0;
      for (const entry of source) {
        if (!matches(entry)) continue;
        if (skipped < skip) { skipped++; continue; }
        matched.push(entry);
        if (limit && matched.length >= limit) break;
      }
      return matched;
    }
    for (const entry of source) if (matches(entry)) matched.push(entry);
    return this.ordered(state, matched, options);
  }

  /**
   * `match` for a read: past the serving thread's budget the filter is tested on the evaluation worker, over
   * the entries the plan gives (writes keep `match`: they must happen before their first await).
   */
  private async matchToRead(state: CollectionState | undefined, compiled: CompiledFilter, options: MatchOptions = {}): Promise<StoredDoc[]> {
    if (!state) return [];
    let candidates: StoredDoc[] = [];
    return evaluateAggregation(
      () => this.match(state, compiled, options),
      () => {
        candidates = [...(this.plan(state, compiled).entries ?? state.docs.values())];
        return { pipeline: BSON.serialize({ p: [{ $match: compiled.filter }] }), input: candidates.map((e) => BSON.serialize(e.doc)), collections: {}, selecting: true };
      },
      (outcome) => {
        const matched = 'indices' in outcome ? outcome.indices.flatMap((i) => (candidates[i] ? [candidates[i]!] : [])) : [];
        if (options.sort) return this.ordered(state, matched, options);
        const skip = options.skip ?? 0;
        return matched.slice(skip, options.limit ? skip + options.limit : undefined);
      },
      (error) => mingoError('Invalid query', error),
    );
  }

  /** Matched entries in sort order, after skip and limit. */
  private ordered(state: CollectionState, matched: StoredDoc[], options: MatchOptions): StoredDoc[] {
    const skip = options.skip ?? 0;
    const limit = options.limit ?? 0;
    let cursor;
    try {
      cursor = new Query({}).find(matched.map((e) => e.view)).sort(options.sort!);
      if (skip) cursor = cursor.skip(skip);
      if (limit) cursor = cursor.limit(limit);
      return (cursor.all() as Document[]).map((view) => state.owners.get(view)!);
    } catch (error) {
      throw mingoError('Invalid sort', error);
    }
  }

  private output(entries: StoredDoc[], projection?: Projection): Document[] {
    return project(entries.map((e) => e.doc), projection).map(cloneStored);
  }

  async find(filter?: Filter, options: FindOptions = {}): Promise<Document[]> {
    const compiled = compileFilter(filter);
    const state = this.engine.state(this.database, this.name);
    const entries = await this.matchToRead(state, compiled, {
      sort: validateSort(options.sort), skip: validateCount(options.skip, 'skip'), limit: validateCount(options.limit, 'limit'),
    });
    return projectsNothing(options.projection) ? this.engine.copiesOf(entries) : this.output(entries, options.projection);
  }

  async findOne(filter?: Filter, options: Omit<FindOptions, 'limit'> = {}): Promise<Document | null> {
    const compiled = compileFilter(filter);
    const state = this.engine.state(this.database, this.name);
    const entries = await this.matchToRead(state, compiled, {
      sort: validateSort(options.sort), skip: validateCount(options.skip, 'skip'), limit: 1,
    });
    return this.output(entries, options.projection)[0] ?? null;
  }

  async countDocuments(filter?: Filter, options: CountOptions = {}): Promise<number> {
    const compiled = compileFilter(filter);
    const state = this.engine.state(this.database, this.name);
    return (await this.matchToRead(state, compiled, { skip: validateCount(options.skip, 'skip'), limit: validateCount(options.limit, 'limit') })).length;
  }

  async insertOne(doc: Document): Promise<InsertOneResult> {
    const state = this.engine.state(this.database, this.name, true);
    const { id, durable } = this.engine.insert(state, doc);
    await durable;
    return { insertedId: id };
  }

  async insertMany(docs: Document[]): Promise<InsertManyResult> {
    if (!Array.isArray(docs)) throw StoreError.badValue('insertMany expects an array of documents');
    const state = this.engine.state(this.database, this.name, true);
    const insertedIds: unknown[] = [];
    let durable: Promise<void> = Promise.resolve();
    try {
      for (const doc of docs) {
        const inserted = this.engine.insert(state, doc);
        insertedIds.push(inserted.id);
        durable = inserted.durable;
      }
    } catch (error) {
      // Ordered semantics: the documents before the failing one stay inserted.
      await durable;
      throw error;
    }
    await durable;
    return { insertedIds };
  }

  async updateOne(filter: Filter, update: Document, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    return this.updateMatching(filter, prepareUpdate(update), options, 1);
  }

  async updateMany(filter: Filter, update: Document, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    return this.updateMatching(filter, prepareUpdate(update), options, 0);
  }

  private async updateMatching(filter: Filter, prepared: PreparedUpdate, options: UpsertOptions, limit: number): Promise<UpdateResult> {
    const compiled = compileFilter(filter);
    const state = this.engine.state(this.database, this.name, true);
    const entries = this.match(state, compiled, { limit });
    if (entries.length === 0 && options.upsert) {
      const { id, durable } = this.upsertWithUpdate(state, compiled, prepared);
      await durable;
      return { matchedCount: 0, modifiedCount: 0, upsertedId: id };
    }
    const now = this.engine.now();
    const changes: { entry: StoredDoc; doc: Document }[] = [];
    // Apply every change to private copies first, so a failing document leaves none half-applied.
    for (const entry of entries) {
      const doc = cloneStored(entry.doc);
      if (applyUpdate(doc, prepared, { isInsert: false, now, filter: compiled.filter })) changes.push({ entry, doc });
    }
    let durable: Promise<void> = Promise.resolve();
    for (const { entry, doc } of changes) durable = this.engine.replace(state, entry, doc);
    await durable;
    return { matchedCount: entries.length, modifiedCount: changes.length };
  }

  private upsertWithUpdate(state: CollectionState, compiled: CompiledFilter, prepared: PreparedUpdate): { id: unknown; doc: Document; durable: Promise<void> } {
    const doc = seedFromFilter(compiled.filter);
    applyUpdate(doc, prepared, { isInsert: true, now: this.engine.now(), filter: compiled.filter });
    const { id, durable } = this.engine.insert(state, doc);
    return { id, doc: withId(doc, id), durable };
  }

  private upsertWithReplacement(state: CollectionState, compiled: CompiledFilter, replacement: Document): { id: unknown; doc: Document; durable: Promise<void> } {
    const seed = seedFromFilter(compiled.filter);
    const doc = '_id' in replacement || !('_id' in seed) ? replacement : { _id: seed._id, ...replacement };
    const { id, durable } = this.engine.insert(state, doc);
    return { id, doc: withId(doc, id), durable };
  }

  /** The replacement as it will be stored: it keeps the matched document's `_id`, placed first. */
  private replacementFor(entry: StoredDoc, replacement: Document): Document {
    if ('_id' in replacement && valueKey(replacement._id) !== entry.key) {
      throw new StoreError("The _id field cannot be changed by a replacement", StoreErrorCode.ImmutableField, 'ImmutableField');
    }
    const { _id: _ignored, ...rest } = replacement;
    return { _id: entry.doc._id, ...rest };
  }

  async replaceOne(filter: Filter, replacement: Document, options: UpsertOptions = {}): Promise<UpdateResult> {
    const prepared = prepareReplacement(replacement);
    const compiled = compileFilter(filter);
    const state = this.engine.state(this.database, this.name, true);
    const [entry] = this.match(state, compiled, { limit: 1 });
    if (!entry) {
      if (!options.upsert) return { matchedCount: 0, modifiedCount: 0 };
      const { id, durable } = this.upsertWithReplacement(state, compiled, prepared);
      await durable;
      return { matchedCount: 0, modifiedCount: 0, upsertedId: id };
    }
    const doc = this.replacementFor(entry, prepared);
    if (typedValueKey(doc) === typedValueKey(entry.doc)) return { matchedCount: 1, modifiedCount: 0 };
    await this.engine.replace(state, entry, doc);
    return { matchedCount: 1, modifiedCount: 1 };
  }

  async deleteOne(filter: Filter): Promise<DeleteResult> {
    return this.deleteMatching(filter, 1);
  }

  async deleteMany(filter?: Filter): Promise<DeleteResult> {
    return this.deleteMatching(filter, 0);
  }

  private async deleteMatching(filter: Filter | undefined, limit: number): Promise<DeleteResult> {
    const compiled = compileFilter(filter);
    const state = this.engine.state(this.database, this.name);
    const entries = this.match(state, compiled, { limit });
    let durable: Promise<void> = Promise.resolve();
    for (const entry of entries) durable = this.engine.remove(state!, entry);
    await durable;
    return { deletedCount: entries.length };
  }

  async findOneAndUpdate(filter: Filter, update: Document, options: FindOneAndModifyOptions = {}): Promise<Document | null> {
    const prepared = prepareUpdate(update);
    const compiled = compileFilter(filter);
    const sort = validateSort(options.sort);
    const state = this.engine.state(this.database, this.name, true);
    const [entry] = this.match(state, compiled, { sort, limit: 1 });
    if (!entry) {
      if (!options.upsert) return null;
      const { doc, durable } = this.upsertWithUpdate(state, compiled, prepared);
      await durable;
      return options.returnNewDocument ? this.outputDoc(doc, options.projection) : null;
    }
    const before = entry.doc;
    const doc = cloneStored(before);
    const changed = applyUpdate(doc, prepared, { isInsert: false, now: this.engine.now(), filter: compiled.filter });
    if (changed) await this.engine.replace(state, entry, doc);
    // `entry.doc` may hold a later write by the time the journal answered: this call's own result is `doc`.
    return this.outputDoc(options.returnNewDocument ? (changed ? doc : before) : before, options.projection);
  }

  async findOneAndReplace(filter: Filter, replacement: Document, options: FindOneAndModifyOptions = {}): Promise<Document | null> {
    const prepared = prepareReplacement(replacement);
    const compiled = compileFilter(filter);
    const sort = validateSort(options.sort);
    const state = this.engine.state(this.database, this.name, true);
    const [entry] = this.match(state, compiled, { sort, limit: 1 });
    if (!entry) {
      if (!options.upsert) return null;
      const { doc, durable } = this.upsertWithReplacement(state, compiled, prepared);
      await durable;
      return options.returnNewDocument ? this.outputDoc(doc, options.projection) : null;
    }
    const before = entry.doc;
    const doc = this.replacementFor(entry, prepared);
    await this.engine.replace(state, entry, doc);
    return this.outputDoc(options.returnNewDocument ? doc : before, options.projection);
  }

  async findOneAndDelete(filter: Filter, options: FindOneAndDeleteOptions = {}): Promise<Document | null> {
    const compiled = compileFilter(filter);
    const sort = validateSort(options.sort);
    const state = this.engine.state(this.database, this.name);
    const [entry] = this.match(state, compiled, { sort, limit: 1 });
    if (!entry) return null;
    await this.engine.remove(state!, entry);
    return this.outputDoc(entry.doc, options.projection);
  }

  private outputDoc(doc: Document, projection?: Projection): Document {
    return cloneStored(project([doc], projection)[0]);
  }

  async aggregate(pipeline: Document[]): Promise<Document[]> {
    if (!Array.isArray(pipeline) || !pipeline.every(isPlainObject)) throw StoreError.badValue('A pipeline must be an array of stage documents');
    for (const stage of pipeline) {
      const [name] = Object.keys(stage);
      if (name === '$out' || name === '$merge') throw StoreError.badValue(`${name} is not supported by the embedded store`);
    }
    const storable = toStorable(pipeline, 'pipeline') as Document[];
    const stages = toComparable(storable) as Document[];
    const entriesOf = (database: string, name: string): StoredDoc[] => {
      const state = this.engine.state(database, name);
      return state ? [...state.docs.values()] : [];
    };
    // Views hold numbers where documents hold Long, Double or Decimal128 (see toComparable), so documents a
    // pipeline computes come out with plain numbers; a pipeline that only selects and orders documents hands
    // on the views themselves, which lead back to the stored documents with every type as written.
    const selecting = selectsOnly(pipeline);
    const entries = entriesOf(this.database, this.name);
    // Stored documents are replaced, never changed in place: these are the documents as they are now,
    // whenever the evaluation worker gets them.
    const docs = entries.map((e) => e.doc);
    return evaluateAggregation(
      () => {
        const output = runAggregation(stages, entries.map((e) => e.view), (name) => entriesOf(this.database, name).map((e) => e.view), selecting);
        const state = selecting ? this.engine.state(this.database, this.name) : undefined;
        return output.map((d) => {
          const owner = state?.owners.get(d);
          return owner ? cloneStored(owner.doc) : fromComparable(d) as Document;
        });
      },
      () => {
        const collections: Record<string, Uint8Array[]> = {};
        for (const name of collectionsRead(storable)) collections[name] = entriesOf(this.database, name).map((e) => BSON.serialize(e.doc));
        return { pipeline: BSON.serialize({ p: storable }), input: docs.map((doc) => BSON.serialize(doc)), collections, selecting };
      },
      (outcome) => ('indices' in outcome
        ? outcome.indices.flatMap((i) => (docs[i] ? [cloneStored(docs[i]!)] : []))
        : outcome.docs.map((bytes) => BSON.deserialize(bytes) as Document)),
      (error) => mingoError('Invalid pipeline', error),
    );
  }

  async createIndex(field: string): Promise<string> {
    if (typeof field !== 'string' || field === '' || field.startsWith('$')) throw StoreError.badValue(`Invalid index field: '${String(field)}'`);
    const state = this.engine.state(this.database, this.name, true);
    await this.engine.declareIndex(state, field);
    return field === '_id' ? '_id_' : `${field}_1`;
  }
}

/** An upserted document as the driver returns it: with the `_id` the insert assigned, first. */
function withId(doc: Document, id: unknown): Document {
  return '_id' in doc ? doc : { _id: id, ...doc };
}
