// A flexible sync session's view: its active subscription set (one RQL query per object type, compiled with
// the app's queryable fields) and the objects the client holds because of it. The documents come through
// the user's rule-checked data access, so a document the user may not read is never in the view and
// unreadable fields are never sent. What the client holds is journaled (objects entering and leaving) for
// its client file's record, so a resuming client's view is known exactly. Pure of the wire: it turns
// documents and history instructions into the instructions a client of this view must get.
import { compileSubscription, type QueryableFieldSettings } from '../../../core/rql';
import type { RuleCheckedCollection } from '../../data/access';
import type { Document, StoreCollection } from '../../store/types';
import type { ClientViews, ViewChange } from '../history/views';
import type { SyncedCollection } from '../service';
import { changeInstructions, documentInstructions } from '../translate/documents';
import { reachableTables, schemaInstructions, type RealmSchema } from '../translate/schema';
import { primaryKeyOf, primaryKeyText, primaryKeyValue } from '../translate/values';
import { encodeChangeset, parseChangeset } from '../wire/changeset';
import type { Instruction, PathElement, PrimaryKey } from '../wire/instructions';

/** The user's rule-checked collections (the runtime's data access for this user). */
export type UserCollections = (collection: SyncedCollection) => RuleCheckedCollection;
/** The synced collections as stored, rules aside. */
export type StoredCollections = (collection: SyncedCollection) => StoreCollection;

/** A rule-checked collection that decides in memory what the user may read of a document (the runtime's data access). */
interface ReadViewCollection extends StoreCollection {
  readView(doc: Document): Promise<Document | null>;
}

const hasReadView = (collection: StoreCollection): collection is ReadViewCollection => typeof (collection as Partial<ReadViewCollection>).readView === 'function';

/** An object a client holds. */
export interface HeldObject { table: string; object: PrimaryKey }

/** The documents a history changeset left behind, by `heldKey` (null: erased), as the engine wrote them. */
export type ChangedDocuments = ReadonlyMap<string, Document | null>;

/** Held objects as stored bytes: a changeset of their erasures (the sync codec knows every primary key type). */
export function encodeHeld(objects: Iterable<HeldObject>): Uint8Array {
  return encodeChangeset([...objects].map(({ table, object }): Instruction => ({ type: 'EraseObject', table, object })));
}

export function decodeHeld(bytes: Uint8Array): HeldObject[] {
  if (bytes.length === 0) return [];
  return parseChangeset(bytes).flatMap((i) => (i.type === 'EraseObject' ? [{ table: i.table, object: i.object }] : []));
}

interface TableQuery {
  collection: SyncedCollection;
  matches: (doc: Document) => boolean;
  filter?: Record<string, unknown>;
}

/** Fields a table's queries read that the settings do not list as queryable (development mode may add them). */
export interface NotQueryableFields {
  collection: SyncedCollection;
  fields: string[];
}

export type CompiledQueries =
  | { ok: true; tables: Map<string, TableQuery> }
  | { ok: false; message: string; notQueryable?: NotQueryableFields[] };

// The platform documents no bound on a subscription set beyond its message size and each query's 256 kB
// (`core/rql`'s parser); these keep one client's set from costing the server more than any real app needs.
/** Bytes of a QUERY or IDENT body (every table's queries, JSON). */
export const MAX_QUERY_BODY_BYTES = 1024 * 1024;
/** Object types one subscription set may query. */
export const MAX_QUERY_TABLES = 1000;

export interface CompileOptions {
  /** Whether the type is asymmetric (data ingest): clients write it and never subscribe to it. */
  asymmetric?(table: string): boolean;
}

/**
 * A QUERY or IDENT body (`{"Task": "<rql>", …}`) compiled against the synced types and the queryable fields.
 * When a table's only problems are fields that are not queryable, the failure names them per collection.
 */
export function compileQueryBody(body: string, collectionOfType: (type: string) => SyncedCollection | undefined, settings: QueryableFieldSettings, options: CompileOptions = {}): CompiledQueries {
  const tables = new Map<string, TableQuery>();
  if (body.trim() === '') return { ok: true, tables };
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes > MAX_QUERY_BODY_BYTES) return { ok: false, message: `subscription set too large: its queries are ${bytes} bytes; the limit is ${MAX_QUERY_BODY_BYTES}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ok: false, message: 'invalid query body: not JSON' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { ok: false, message: 'invalid query body: expected an object of object types to queries' };
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.length > MAX_QUERY_TABLES) return { ok: false, message: `subscription set too large: it queries ${entries.length} object types; the limit is ${MAX_QUERY_TABLES}` };
  const notQueryable: NotQueryableFields[] = [];
  const messages: string[] = [];
  for (const [table, text] of entries) {
    if (typeof text !== 'string') return { ok: false, message: `invalid query for table "${table}": the query must be a string` };
    const collection = collectionOfType(table);
    if (!collection) return { ok: false, message: `Invalid query: table "${table}" is not a synced object type (no collection schema titled so)` };
    if (options.asymmetric?.(table)) return { ok: false, message: `Invalid query: table "${table}" is an asymmetric (data ingest) object type: clients write its objects and cannot subscribe to it` };
    const compiled = compileSubscription(table, text, settings, collection.collection);
    if (!compiled.ok) {
      const fields = compiled.problems.every((p) => p.kind === 'not-queryable' && p.field !== undefined) ? compiled.problems.map((p) => p.field!) : [];
      if (fields.length === 0) return { ok: false, message: compiled.message };
      notQueryable.push({ collection, fields: [...new Set(fields)] });
      messages.push(compiled.message);
      continue;
    }
    const { matches, filter } = compiled.subscription;
    tables.set(table, { collection, matches, ...(filter ? { filter: filter as Record<string, unknown> } : {}) });
  }
  if (notQueryable.length > 0) return { ok: false, message: `Invalid query: ${messages.join('; ')}`, notQueryable };
  return { ok: true, tables };
}

/** The document a changeset left behind (null: erased), or undefined when it is not known (read the store). */
function writtenDocument(documents: ChangedDocuments | undefined, key: string): Document | null | undefined {
  return documents?.has(key) ? documents.get(key) ?? null : undefined;
}

/** The key of an object in a view and in `ChangedDocuments`. */
export const heldKey = (table: string, key: PrimaryKey) => `${table}\u0000${primaryKeyText(key)}`;

/** A history changeset's instructions by the object they touch (by `heldKey`), and whether it changes the schema too. */
export interface ObjectChanges {
  objects: ReadonlyMap<string, { table: string; object: PrimaryKey; instructions: Instruction[] }>;
  schemaChanges: boolean;
}

export function changesByObject(instructions: readonly Instruction[]): ObjectChanges {
  const objects = new Map<string, { table: string; object: PrimaryKey; instructions: Instruction[] }>();
  let schemaChanges = false;
  for (const instruction of instructions) {
    if (!('object' in instruction)) {
      schemaChanges = true;
      continue;
    }
    const key = heldKey(instruction.table, instruction.object);
    let group = objects.get(key);
    if (!group) objects.set(key, (group = { table: instruction.table, object: instruction.object, instructions: [] }));
    group.instructions.push(instruction);
  }
  return { objects, schemaChanges };
}

export class FlexibleView {
  queryVersion = 0;
  private tables = new Map<string, TableQuery>();
  /** Objects the client holds through this view, by table and primary key. */
  private readonly held = new Map<string, HeldObject>();
  /** Objects that entered (true) or left (false) the view since the journal was last taken, to be recorded. */
  private journal = new Map<string, { object: HeldObject; entered: boolean }>();
  /** The next sequence number of this client file's view records. */
  recordSequence = 1;

  /**
   * `collections`: the user's rule-checked collections, replaced when the user's rules change (custom user
   * data, the app's rules); uploads are then checked with the new role. `stored`: the same collections
   * unchecked, where the view reads a document whole to tell which of its fields the user may not read.
   */
  constructor(public collections: UserCollections, private readonly stored: StoredCollections) {}

  setQueries(version: number, tables: Map<string, TableQuery>): void {
    this.queryVersion = version;
    this.tables = tables;
  }

  /** Whether a document (as the server holds it) is selected by the active queries. */
  selects(table: string, doc: Document): boolean {
    return this.tables.get(table)?.matches(doc) ?? false;
  }

  private hold(key: string, object: HeldObject): void {
    this.held.set(key, object);
    this.journal.set(key, { object, entered: true });
  }

  private release(key: string, object: HeldObject): void {
    this.held.delete(key);
    this.journal.set(key, { object, entered: false });
  }

  /** Objects entered and left per server version, noted for the client file's record and not written yet. */
  private unrecorded: ViewChange[] = [];

  /** What entered and left the view since the last call is what a DOWNLOAD at `version` changes of what the client holds. */
  noteChanges(version: number): void {
    const journal = this.takeJournal();
    if (journal) this.unrecorded.push({ version, ...journal });
  }

  /** Whether changes were noted that `record` has not written yet. */
  get changesNoted(): boolean {
    return this.unrecorded.length > 0;
  }

  /**
   * The rule of every flexible DOWNLOAD: what it changes of what the client holds is recorded for the client
   * file before it leaves, so the record is never behind what the client may have (its IDENT resumes from
   * it). `snapshotAt`: a bootstrap at that version, recorded as the whole view (earlier notes are in it).
   */
  async record(views: ClientViews, ident: number, snapshotAt?: number): Promise<void> {
    if (snapshotAt !== undefined) {
      this.takeJournal();
      this.unrecorded = [];
      return views.saveSnapshot(ident, this.recordSequence++, this.queryVersion, snapshotAt, this.heldBytes());
    }
    if (this.unrecorded.length === 0) return;
    const changes = this.unrecorded;
    this.unrecorded = [];
    await views.saveChanges(ident, this.recordSequence++, this.queryVersion, changes);
  }

  /** The objects that entered and left the view since the last call (undefined: none), for the client file's record. */
  private takeJournal(): { entered: Uint8Array; left: Uint8Array } | undefined {
    if (this.journal.size === 0) return undefined;
    const changes = [...this.journal.values()];
    this.journal = new Map();
    return { entered: encodeHeld(changes.filter((c) => c.entered).map((c) => c.object)), left: encodeHeld(changes.filter((c) => !c.entered).map((c) => c.object)) };
  }

  /** What the client holds, as stored bytes. */
  heldBytes(): Uint8Array {
    return encodeHeld(this.held.values());
  }

  /** Whether the client holds no object through this view. */
  holdsNothing(): boolean {
    return this.held.size === 0;
  }

  /** The client also holds these (a shared bootstrap's objects). */
  holdAlso(snapshot: Uint8Array): void {
    for (const object of decodeHeld(snapshot)) this.held.set(heldKey(object.table, object.object), object);
  }

  /** What the client holds, as its client file's record says (a snapshot, then the changes it integrated). */
  restore(snapshot: Uint8Array, changes: readonly { entered: Uint8Array; left: Uint8Array }[]): void {
    this.held.clear();
    this.journal.clear();
    for (const object of decodeHeld(snapshot)) this.held.set(heldKey(object.table, object.object), object);
    for (const change of changes) {
      for (const object of decodeHeld(change.left)) this.held.delete(heldKey(object.table, object.object));
      for (const object of decodeHeld(change.entered)) this.held.set(heldKey(object.table, object.object), object);
    }
  }

  /** The document as the user may read it, when the active queries select it (the store's current state). */
  private async visible(table: string, id: unknown): Promise<Document | undefined> {
    const query = this.tables.get(table);
    if (!query) return undefined;
    const doc = await this.collections(query.collection).findOne({ _id: id as never });
    return doc && query.matches(doc) ? doc : undefined;
  }

  /**
   * A document whole (as the engine wrote it, or the store's current one) and as the user may read it, when
   * the active queries select the readable one.
   */
  private async visibleWhole(table: string, id: unknown, written: Document | null | undefined): Promise<{ whole: Document; view: Document } | undefined> {
    const query = this.tables.get(table);
    if (!query) return undefined;
    const whole = written !== undefined ? written : await this.stored(query.collection).findOne({ _id: id as never });
    if (!whole) return undefined;
    const collection = this.collections(query.collection);
    const view = hasReadView(collection) ? await collection.readView(whole)
      : await collection.findOne({ _id: id as never });
    return view && query.matches(view) ? { whole, view } : undefined;
  }

  /** Whether the user may read what `path` points to in a document they see (asked with a probe when the document cannot tell). */
  private async mayRead(table: string, found: { whole: Document; view: Document }, path: readonly PathElement[]): Promise<boolean> {
    const reading = readPath(found.whole, found.view, path);
    if (reading !== 'hidden' && reading !== 'readable') {
      const query = this.tables.get(table);
      const collection = query && this.collections(query.collection);
      if (!collection || !hasReadView(collection)) return false;
      const probe = probeDocument(found.whole, path, reading.missingAt);
      return readPath(probe, await collection.readView(probe), path) === 'readable';
    }
    return reading === 'readable';
  }

  /** Every document the active queries select that the user may read. */
  private async current(): Promise<Map<string, { table: string; doc: Document }>> {
    const out = new Map<string, { table: string; doc: Document }>();
    for (const [table, query] of this.tables) {
      const docs = await this.collections(query.collection).find(query.filter ?? {});
      for (const doc of docs) {
        const key = primaryKeyOf(doc._id);
        if (key && query.matches(doc)) out.set(heldKey(table, key), { table, doc });
      }
    }
    return out;
  }

  /** Takes what the client holds to be what the active queries select now (a client file with no recorded view). */
  async adopt(): Promise<void> {
    this.held.clear();
    for (const [key, { table, doc }] of await this.current()) this.held.set(key, { table, object: primaryKeyOf(doc._id)! });
  }

  /**
   * The bootstrap of the active query version, for a client that has every change up to now of what it
   * holds: the app's sync schema, each newly selected object whole, and an erasure of each
   * object held before that the view no longer selects.
   */
  async bootstrap(schema: RealmSchema): Promise<Instruction[]> {
    const now = await this.current();
    // The whole sync schema, as the platform sent it, not only the subscribed types: a client reset's fresh
    // realm is compared with the local one, and a type missing from it reads as a removed class.
    const out: Instruction[] = schemaInstructions(reachableTables(schema, schema.keys()));
    for (const [key, object] of [...this.held]) {
      if (now.has(key)) continue;
      out.push({ type: 'EraseObject', table: object.table, object: object.object });
      this.release(key, object);
    }
    for (const [key, { table, doc }] of now) {
      const realmTable = schema.get(table);
      if (!realmTable || realmTable.asymmetric || this.held.has(key)) continue;
      out.push(...documentInstructions(schema, realmTable, doc));
      this.hold(key, { table, object: primaryKeyOf(doc._id)! });
    }
    return out;
  }

  /**
   * A history changeset (its instructions by object) as this view's client gets it: an object still in view keeps its instructions, one
   * entering the view comes whole, one leaving it is erased; schema changes and objects outside are dropped.
   * `documents`: the objects' documents as that changeset left them (else the store's current ones are read).
   * `unchanged`: every instruction is kept as it was.
   */
  async filter(changes: ObjectChanges, schema: RealmSchema, documents?: ChangedDocuments): Promise<{ instructions: Instruction[]; unchanged: boolean }> {
    let unchanged = !changes.schemaChanges;
    const out: Instruction[] = [];
    for (const [key, group] of changes.objects) {
      const table = schema.get(group.table);
      if (!table || table.embedded || table.asymmetric) {
        unchanged = false;
        continue;
      }
      const found = await this.visibleWhole(group.table, primaryKeyValue(group.object, table.primaryKey?.bsonType), writtenDocument(documents, key));
      const doc = found?.view;
      const wasHeld = this.held.has(key);
      if (found && wasHeld) {
        // What the user may not read of the document, at any depth, is not in the view: changes to it are not sent.
        const readable: Instruction[] = [];
        for (const i of group.instructions) {
          // A field the session's schema (an older version's) does not have is not sent either.
          if (!('field' in i) || (table.columns.has(i.field) && await this.mayRead(group.table, found, [i.field, ...('path' in i ? i.path : [])]))) readable.push(i);
        }
        if (readable.length < group.instructions.length) unchanged = false;
        out.push(...readable);
        continue;
      }
      unchanged = false;
      if (doc) {
        out.push(...documentInstructions(schema, table, doc));
        this.hold(key, { table: group.table, object: group.object });
      } else if (wasHeld) {
        out.push({ type: 'EraseObject', table: group.table, object: group.object });
        this.release(key, { table: group.table, object: group.object });
      }
    }
    return { instructions: out, unchanged };
  }

  /**
   * This client's own integrated changeset: the objects it created or changed are on it, those it erased are
   * not. Returns the erasures of those it changed out of the view (no longer selected, or no longer readable):
   * the client drops them, as it drops what others' changes take out of its view.
   */
  async uploaded(changes: ObjectChanges, schema: RealmSchema, documents?: ChangedDocuments): Promise<Instruction[]> {
    const out: Instruction[] = [];
    for (const [key, group] of changes.objects) {
      const table = schema.get(group.table);
      if (!table || table.embedded || table.asymmetric) continue;
      const object = { table: group.table, object: group.object };
      if (group.instructions[group.instructions.length - 1]!.type === 'EraseObject') {
        if (this.held.has(key)) this.release(key, object);
        continue;
      }
      const found = await this.visibleWhole(group.table, primaryKeyValue(group.object, table.primaryKey?.bsonType), writtenDocument(documents, key));
      if (found) {
        if (!this.held.has(key)) this.hold(key, object);
        continue;
      }
      out.push({ type: 'EraseObject', table: group.table, object: group.object });
      if (this.held.has(key)) this.release(key, object);
    }
    return out;
  }

  /**
   * The user's rules changed: from now on the view reads through `collections`. Returns what brings the client
   * there: each held object the user may no longer read erased, each newly readable selected object whole,
   * and, of each object held before and after, the fields the user may now read that it could not (a field
   * the user may no longer read stays as the client has it: it was readable, and clearing it could break a
   * required property).
   */
  async regrant(collections: UserCollections, schema: RealmSchema): Promise<Instruction[]> {
    const before = this.collections;
    this.collections = collections;
    const now = await this.current();
    const out: Instruction[] = [];
    const kept = new Map<string, { table: string; doc: Document }[]>();
    for (const [key, held] of [...this.held]) {
      const visible = now.get(key);
      if (visible) {
        let list = kept.get(visible.table);
        if (!list) kept.set(visible.table, (list = []));
        list.push(visible);
        continue;
      }
      out.push({ type: 'EraseObject', table: held.table, object: held.object });
      this.release(key, held);
    }
    for (const [table, visible] of kept) {
      const realmTable = schema.get(table);
      const query = this.tables.get(table);
      if (!realmTable || !query) continue;
      const previously = before(query.collection);
      if (!hasReadView(previously)) continue;
      const wholes = await this.stored(query.collection).find({ _id: { $in: visible.map((v) => v.doc._id) } as never });
      const wholeById = new Map(wholes.map((doc) => [primaryKeyText(primaryKeyOf(doc._id)!), doc]));
      for (const { doc } of visible) {
        const whole = wholeById.get(primaryKeyText(primaryKeyOf(doc._id)!));
        if (!whole) continue;
        const old = (await previously.readView(whole)) ?? { _id: doc._id };
        out.push(...changeInstructions(schema, realmTable, old, doc).filter((i) => !('field' in i) || Object.hasOwn(doc, i.field)));
      }
    }
    for (const [key, { table, doc }] of now) {
      const realmTable = schema.get(table);
      if (this.held.has(key) || !realmTable || realmTable.asymmetric) continue;
      out.push(...documentInstructions(schema, realmTable, doc));
      this.hold(key, { table, object: primaryKeyOf(doc._id)! });
    }
    return out;
  }

  /** What reverts a rejected object on the client: erased, then the server's readable state in view, if any. */
  async revert(schema: RealmSchema, table: string, object: PrimaryKey): Promise<Instruction[]> {
    const realmTable = schema.get(table);
    const out: Instruction[] = [{ type: 'EraseObject', table, object }];
    const key = heldKey(table, object);
    this.release(key, { table, object });
    if (!realmTable) return out;
    const doc = await this.visible(table, primaryKeyValue(object, realmTable.primaryKey?.bsonType));
    if (doc) {
      out.push(...documentInstructions(schema, realmTable, doc));
      this.hold(key, { table, object });
    }
    return out;
  }
}

/** Where a path of an instruction lies in a document and the user's view of it. */
export type PathReading = 'readable' | 'hidden' | { missingAt: number };

/**
 * Whether the user's view of a document shows what `path` (a field, then embedded fields, dictionary keys
 * and list indexes) points to in the whole document: a step the whole document has and the view lacks is
 * hidden. Where the whole document lacks a step (the instruction's target is gone since), the document
 * cannot tell, and the step's index is returned to be asked with a probe. Where the view dropped list items
 * the user may not read, indexes no longer line up: hidden, as a change not sent is safer than a hidden
 * value sent.
 */
export function readPath(whole: unknown, view: unknown, path: readonly PathElement[]): PathReading {
  let w = whole, v = view;
  for (const [index, step] of path.entries()) {
    if (typeof step === 'number') {
      if (!Array.isArray(w) || !Array.isArray(v)) return 'hidden';
      if (w.length !== v.length) return 'hidden';
      if (step >= w.length) return { missingAt: index };
    } else {
      if (!isRecord(w) || !isRecord(v)) return 'hidden';
      if (!Object.hasOwn(w, step)) return { missingAt: index };
      if (!Object.hasOwn(v, step)) return 'hidden';
    }
    w = (w as Record<string | number, unknown>)[step];
    v = (v as Record<string | number, unknown>)[step];
  }
  return 'readable';
}

/** A copy of `doc` with a placeholder where `path` points from its step `from` on (objects and lists made as needed). */
export function probeDocument(doc: Document, path: readonly PathElement[], from: number): Document {
  const probe = copyContainers(doc);
  let container: Record<string | number, unknown> = probe;
  for (let i = 0; i < from; i++) container = container[path[i]!] as Record<string | number, unknown>;
  let value: unknown = 'probe';
  for (let i = path.length - 1; i > from; i--) {
    const step = path[i]!;
    value = typeof step === 'number' ? Array.from({ length: step + 1 }, () => value) : { [step]: value };
  }
  const step = path[from]!;
  if (Array.isArray(container)) while (container.length <= (step as number)) container.push(value);
  else container[step] = value;
  return probe;
}

/** Copies the objects and lists of a document (its values are immutable and shared). */
function copyContainers<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyContainers) as T;
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copyContainers(v)])) as T;
  return value;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
