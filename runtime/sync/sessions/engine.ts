// The partition sync engine under the Realm protocol sessions: per partition, one FIFO of work (uploads,
// store changes, bootstraps) over its history, so versions, documents and downloads never interleave.
// An upload is transformed against what its client had not seen (`merge/`), applied to the documents
// (`translate/`, checked against the partition and the collection schema) and appended to the history;
// a store write from anywhere else (GraphQL, functions, the Data API, the JSON feed) becomes a server
// changeset in the history of each partition it touches. Sessions listening on a partition are told.
import { AsyncLocalStorage } from 'node:async_hooks';
import { BSON, EJSON, Long } from 'bson';
import { membershipOf, partitionId, partitionText, type PartitionSettings, type SyncError } from '../../../core/sync';
import type { Logger } from '../../http/server';
import type { ChangeEvent } from '../../store/changes';
import { byId, StoreError, StoreErrorCode, type CommitWrite, type Document, type DocumentStore } from '../../store/types';
import type { EvaluationUser } from '../../../core/rules';
import { SERVER_FILE_IDENT, SyncHistory, type ClientFileRecord, type HistoryEntry, type PartitionHistory } from '../history/history';
import { rebaseUpload, type RebaseEntry } from '../merge/rebase';
import type { TimedChangeset } from '../merge/transform';
import { SYNC_ERRORS, type SyncedCollection, type SyncService } from '../service';
import { applyToDocument, changeInstructions, documentInstructions, InstructionError, StoredStateError } from '../translate/documents';
import { reachableTables, schemaInstructions, type RealmSchema, type RealmTable } from '../translate/schema';
import { primaryKeyForClients, primaryKeyOf, primaryKeyText, primaryKeyValue, requiredDefaults, syncTimestamp } from '../translate/values';
import { encodeChangeset, parseChangeset } from '../wire/changeset';
import { ErrorCode } from '../wire/errors';
import { type Instruction, type PrimaryKey } from '../wire/instructions';
import type { RuleCheckedCollection } from '../../data/access';
import { DataAccessError } from '../../data/errors';
import type { QueriedFields } from '../devmode';
import { ReciprocalForms } from './reciprocal-forms';
import { SchemaNegotiation } from './schema-negotiation';
import { SentBootstraps } from '../flexible/sent-bootstraps';
import { FairQueue } from './fair-queue';
import { ObjectChangeGroups, PendingStoreChanges, type ObjectChange } from './store-changes';
import { changesByObject, encodeHeld, heldKey, type ChangedDocuments, type NotQueryableFields, type ObjectChanges, type StoredCollections, type UserCollections } from '../flexible/view';

/** An uploaded changeset as the session hands it over. */
export interface UploadedChangeset {
  clientVersion: number;
  /** The last server version the client had integrated when it made the changeset. */
  baseVersion: number;
  timestamp: bigint;
  instructions: Instruction[];
  /** Its size as uploaded. */
  size: number;
}

/** Who uploads: the session's client file, user, partition and write verdict. */
export interface Uploader {
  clientFile: ClientFileRecord;
  partition: unknown;
  userId: string;
  canWrite: boolean;
}

export type EngineError = SyncError & { protocolCode?: number };

export interface RealmSyncEngineOptions {
  service: SyncService;
  store: DocumentStore;
  log: Logger;
  now?: () => number;
  /** Development mode: a client's new object types become collection schemas (then the app reloads). */
  applySchema?(types: unknown[]): Promise<{ written: string[] }>;
  /** Development mode, flexible sync: queried fields become collection queryable fields (then the app reloads). */
  addQueryableFields?(queried: QueriedFields[]): Promise<{ added: { collection: string; field: string }[] }>;
  /** Development mode, flexible sync: object types a client declared asymmetric join `asymmetric_tables` (then the app reloads). */
  addAsymmetricTables?(tables: string[]): Promise<void>;
  /** Flexible sync: a data source's collections as the user may use them (the runtime's rule-checked data access). */
  dataFor?(user: EvaluationUser): { collection(dataSource: string, database: string, collection: string): RuleCheckedCollection };
  /** Whether the running rules read `%%user` (or call functions); unknown counts as yes. */
  rulesReadUser?(): boolean;
}

/** The owner of flexible queue tasks that record store writes (not a user's): they go first. */
const STORE_WRITES = '\u0000store writes';

/** Flexible sync keeps one history for the whole app under this partition id. */
export const FLEXIBLE_HISTORY = '__flexible';

/** An object of a flexible upload that was not applied (a compensating write). */
export interface RejectedObject { table: string; object: PrimaryKey; reason: string; clientVersion: number }

/** Who uploads in flexible sync: the client file, the user's rule-checked collections and the session's view. */
export interface FlexibleUploader {
  clientFile: ClientFileRecord;
  userId: string;
  collections: UserCollections;
  /** Whether the session's active queries select the document. */
  selects(table: string, doc: Document): boolean;
  /**
   * Objects of compensating writes (by `heldKey`) and the server version after the upload that was refused:
   * a later changeset based on an earlier version was written before the client had the revert, so its
   * writes to the object are left out too (the revert undoes them on the client).
   */
  reverted: Map<string, number>;
}

/** An object an upload touches: its collection and table, and its document before and after the upload's instructions. */
/** A store write to a synced collection, as a history records it: the document before and after (none when inserted or deleted). */
interface StoreChange {
  type: string;
  before: Document | undefined;
  after: Document | undefined;
}

interface TouchedObject {
  collection: SyncedCollection;
  table: RealmTable;
  object: PrimaryKey;
  id: unknown;
  before: Document | null;
  after: Document | null;
  instructions: Instruction[];
  /**
   * Flexible sync: why the instructions do not apply to the stored document (an object that does not
   * exist, a list shorter than an index): refused like any write the rules refuse, since the reason
   * depends on what the user may not read.
   */
  unappliable?: string;
}

/** Marks store writes made by an upload: the upload's changeset is their history entry. */
const uploadWrites = new AsyncLocalStorage<string>();
const MAX_OBJECTS_PER_UPLOAD = 100_000;
/** History entries a new client may download after a cached bootstrap before it is built anew. */
const MAX_BOOTSTRAP_REPLAY = 256;
/** Flexible bootstraps kept (the oldest goes first). */
const MAX_SHARED_FLEXIBLE_BOOTSTRAPS = 16;

/** A flexible bootstrap shared by new client files with the same queries and rule outcome. */
export interface SharedFlexibleBootstrap {
  /** The server version it shows. */
  version: number;
  /** What a client holds after it (the view's encoded objects). */
  held: Uint8Array;
  /** Its changesets, encoded (one DOWNLOAD each). */
  changesets: Uint8Array[];
}
/** An upload committed as one is one journal record, one BSON document (at most 16 MiB): larger ones are written one by one. */
const MAX_COMMIT_BYTES = 8 * 1024 * 1024;
/** Compensating writes kept per client file until it downloads their reverts (realm clients have a few at most). */
const MAX_PENDING_COMPENSATIONS = 256;
/** Flexible history entries whose documents are kept for the sessions' filtering (the newest ones). */
const ENTRIES_WITH_DOCUMENTS = 1_000;

export class RealmSyncEngine {
  readonly history: SyncHistory;
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly listeners = new Map<string, Set<() => void>>();
  /** Flexible sync: by user id, the sessions to tell when that user's custom user data changes. */
  private readonly customDataListeners = new Map<string, Set<() => void>>();
  private readonly rulesListeners = new Set<() => void>();
  /** Per client file: the forms of concurrent server changesets transformed through that client's later uploads. */
  private readonly reciprocal: ReciprocalForms;
  /** Flexible sync: per client file, the bootstraps it was sent that its uploads may not have seen. */
  readonly sentBootstraps = new SentBootstraps();
  /** The Realm schema the server syncs, what clients may change of it, and development mode. */
  readonly schemas: SchemaNegotiation;
  private readonly bootstraps = new Map<string, { version: number; changeset: Uint8Array; instructionCount: number }>();
  private readonly flexibleBootstraps = new Map<string, SharedFlexibleBootstrap>();
  private readonly flexibleQueue = new FairQueue(STORE_WRITES);
  /** Store writes waiting to be recorded, per history: each batch is one queued task (a bulk write is not n tasks). */
  private readonly storeChanges = new PendingStoreChanges<StoreChange>((partition, take) => {
    // A turn of the event loop first: the writes of one burst (a loop of inserts, concurrent requests) join the batch.
    void this.run(partition, async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return this.recordStoreChanges(partition, take());
    })
      .catch((e) => this.options.log.error(`sync: recording store writes in ${partition === FLEXIBLE_HISTORY ? 'the flexible sync history' : `partition ${partition}`} failed: ${(e as Error).message}`));
  });
  private readonly now: () => number;
  /**
   * The documents each recent flexible history entry left behind, so that every session filters it without
   * reading the store (the oldest forgotten past ENTRIES_WITH_DOCUMENTS; sessions then read the store).
   */
  private readonly entryDocs = new WeakMap<HistoryEntry, ChangedDocuments>();
  private readonly entriesWithDocs: HistoryEntry[] = [];

  constructor(private readonly options: RealmSyncEngineOptions) {
    this.now = options.now ?? Date.now;
    this.reciprocal = new ReciprocalForms(options.store, () => options.service.runtimeState.epoch);
    this.schemas = new SchemaNegotiation({
      service: options.service, store: options.store, log: options.log,
      ...(options.applySchema ? { applySchema: options.applySchema } : {}),
      ...(options.addQueryableFields ? { addQueryableFields: options.addQueryableFields } : {}),
      ...(options.addAsymmetricTables ? { addAsymmetricTables: options.addAsymmetricTables } : {}),
      run: (queue, task) => this.run(queue, task),
      changed: () => {
        // Bootstraps show the schema.
        this.bootstraps.clear();
        this.flexibleBootstraps.clear();
      },
    });
    this.history = new SyncHistory({
      store: options.store, epoch: () => options.service.runtimeState.epoch, now: this.now,
      maxAgeMs: () => {
        const days = options.service.runtimeState.running?.settings.clientMaxOfflineDays;
        return days !== undefined && days > 0 ? days * 86_400_000 : undefined;
      },
    });
  }

  get service(): SyncService {
    return this.options.service;
  }

  /** Flexible sync: the synced collections as `user` may use them; without a data access, none. */
  userCollections(user: EvaluationUser): UserCollections {
    const scope = this.options.dataFor?.(user);
    const dataSource = this.options.service.runtimeState.running?.settings.serviceName ?? '';
    return (collection) => {
      if (!scope) throw new Error('flexible sync needs the runtime\'s data access');
      return scope.collection(dataSource, collection.database, collection.collection);
    };
  }

  /**
   * What a user's rule outcome depends on, as a key: the user with custom data when the rules read `%%user`
   * (or call a function), else one key for every user (their sessions may share a bootstrap, as the platform's did).
   */
  ruleOutcomeKey(user: EvaluationUser): string {
    return this.options.rulesReadUser?.() === false ? 'every user' : `user ${EJSON.stringify(user as never, { relaxed: false })}`;
  }

  /** Flexible sync: the synced collections unchecked (what a view reads to tell what of a document the user may not read). */
  storedCollections(): StoredCollections {
    return (collection) => this.options.store.collection(collection.database, collection.collection);
  }

  /** A history entry's instructions by object, worked out once for every flexible session. */
  entryChanges(entry: HistoryEntry): ObjectChanges {
    let changes = entryObjectChanges.get(entry);
    if (!changes) entryObjectChanges.set(entry, (changes = changesByObject(timed(entry).instructions)));
    return changes;
  }

  /** The documents a recent flexible history entry left behind, by object (undefined when no longer kept). */
  entryDocuments(entry: HistoryEntry): ChangedDocuments | undefined {
    return this.entryDocs.get(entry);
  }

  private keepDocuments(entry: HistoryEntry, documents: ChangedDocuments): void {
    this.entryDocs.set(entry, documents);
    this.entriesWithDocs.push(entry);
    if (this.entriesWithDocs.length > ENTRIES_WITH_DOCUMENTS) this.entryDocs.delete(this.entriesWithDocs.shift()!);
  }

  /**
   * Runs `task` after every earlier task of the partition. In flexible sync's one app-wide queue, `owner`
   * (a user id) takes turns with the other owners waiting, store writes first (FairQueue): one user's
   * backlog of costly uploads does not stall everyone else's bootstraps and uploads.
   */
  run<T>(partition: string, task: () => Promise<T>, owner = STORE_WRITES): Promise<T> {
    if (partition === FLEXIBLE_HISTORY) return this.flexibleQueue.run(owner, task);
    const previous = this.queues.get(partition) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.catch(() => undefined);
    this.queues.set(partition, settled);
    void settled.then(() => { if (this.queues.get(partition) === settled) this.queues.delete(partition); });
    return next;
  }

  /** Resolves once every store write made before the call is in its sync history (each history's queue has passed it). */
  async recorded(): Promise<void> {
    const idle = async () => undefined;
    await Promise.all([...[...this.queues.keys()].map((partition) => this.run(partition, idle)), this.flexibleQueue.run(STORE_WRITES, idle)]);
  }

  listen(partition: string, listener: () => void): () => void {
    let set = this.listeners.get(partition);
    if (!set) this.listeners.set(partition, (set = new Set()));
    set.add(listener);
    return () => {
      set!.delete(listener);
      if (set!.size === 0 && this.listeners.get(partition) === set) this.listeners.delete(partition);
    };
  }

  /** Flexible sync: `listener` runs after every store write to the custom user data of `userId` (its rules may change). */
  watchCustomData(userId: string, listener: () => void): () => void {
    let set = this.customDataListeners.get(userId);
    if (!set) this.customDataListeners.set(userId, (set = new Set()));
    set.add(listener);
    return () => {
      set!.delete(listener);
      if (set!.size === 0 && this.customDataListeners.get(userId) === set) this.customDataListeners.delete(userId);
    };
  }

  /** Flexible sync: `listener` runs after the app's rules changed (a reload); every session evaluates its user's rules again. */
  watchRules(listener: () => void): () => void {
    this.rulesListeners.add(listener);
    return () => void this.rulesListeners.delete(listener);
  }

  /** The app's data access rules changed: every flexible session is told. */
  rulesChanged(): void {
    for (const listener of [...this.rulesListeners]) listener();
  }

  /** A write to custom user data: the sessions of the users whose document it was (before or after) are told. */
  private customDataChanged(change: ChangeEvent): void {
    for (const owner of this.options.service.customDataOwners(change)) {
      for (const listener of this.customDataListeners.get(owner) ?? []) listener();
    }
  }

  private notify(partition: string): void {
    for (const listener of this.listeners.get(partition) ?? []) listener();
  }

  /** The app changed (reload): the Realm schema is derived again. */
  invalidateSchema(): void {
    this.schemas.invalidate();
  }

  /** The Realm tables of the synced collections, with what clients declared on top. */
  realmSchema(): Promise<RealmSchema> {
    return this.schemas.realmSchema();
  }

  /** Development mode, flexible sync: the fields a subscription queried that are not queryable become queryable (`SchemaNegotiation.addQueryableFields`). */
  developQueryableFields(notQueryable: readonly NotQueryableFields[]): Promise<{ collection: string; field: string }[]> {
    return this.schemas.addQueryableFields(notQueryable);
  }

  /** A flexible bootstrap kept for new client files with the same queries and rule outcome, while the history after it stays short. */
  sharedFlexibleBootstrap(key: string, history: PartitionHistory): SharedFlexibleBootstrap | undefined {
    const shared = this.flexibleBootstraps.get(key);
    if (!shared) return undefined;
    if (shared.version < history.base || shared.version > history.latest || history.latest - shared.version > MAX_BOOTSTRAP_REPLAY) {
      this.flexibleBootstraps.delete(key);
      return undefined;
    }
    return shared;
  }

  /** A new server version that changes nothing (in the history's queue): what a bootstrap shows when the client has the latest. */
  async newServerVersion(history: PartitionHistory): Promise<number> {
    const entry = await this.history.append(history, {
      originFileIdent: SERVER_FILE_IDENT, clientVersion: 0, baseVersion: 0, timestamp: syncTimestamp(this.now()), changeset: new Uint8Array(0), originalSize: 0,
    });
    this.notify(history.partition);
    return entry.version;
  }

  keepFlexibleBootstrap(key: string, bootstrap: SharedFlexibleBootstrap): void {
    if (this.flexibleBootstraps.size >= MAX_SHARED_FLEXIBLE_BOOTSTRAPS) this.flexibleBootstraps.delete(this.flexibleBootstraps.keys().next().value!);
    this.flexibleBootstraps.set(key, bootstrap);
  }

  // ---------------------------------------------------------------- store changes

  /**
   * Whether a store write must be seen: every write to a synced collection while sync is enabled, and to
   * custom user data a session watches (a Realm session, or a JSON feed session: `SyncService.wants`).
   */
  wants(database: string, collection: string): boolean {
    const service = this.options.service;
    if (service.wants(database, collection)) return true;
    if (this.customDataListeners.size > 0 && service.isCustomUserData(database, collection)) return true;
    return service.runtimeState.status === 'enabled' && service.collectionOfNamespace(database, collection) !== undefined;
  }

  /**
   * The one fan-out of store writes to sync: the JSON feed's sessions get the change (`SyncService.onChange`),
   * and a committed write becomes part of a server changeset in the histories of the partitions it touches.
   */
  onChange(change: ChangeEvent): void {
    const service = this.options.service;
    service.onChange(change);
    if (this.customDataListeners.size > 0 && service.isCustomUserData(change.ns.db, change.ns.coll)) this.customDataChanged(change);
    const settings = service.partitionSettings;
    const synced = service.collectionOfNamespace(change.ns.db, change.ns.coll);
    if (!synced || service.runtimeState.status !== 'enabled') return;
    const before = change.operationType === 'insert' ? undefined : change.fullDocumentBeforeChange;
    const after = change.operationType === 'delete' ? undefined : change.fullDocument;
    if (service.flexible) {
      // Asymmetric (data ingest) collections are never downloaded; the engine's own upload writes are in the history already.
      if (uploadWrites.getStore() !== FLEXIBLE_HISTORY) this.storeChanges.add(FLEXIBLE_HISTORY, { type: synced.type, before, after });
      return;
    }
    if (!settings) return;
    const fromUpload = uploadWrites.getStore();
    const partitionOf = (doc: Document | undefined): string | undefined => {
      if (!doc) return undefined;
      const m = membershipOf(doc, settings);
      return 'partition' in m ? partitionId(m.partition) : undefined;
    };
    const record = (partition: string, beforeDoc: Document | undefined, afterDoc: Document | undefined) => {
      if (partition !== fromUpload) this.storeChanges.add(partition, { type: synced.type, before: beforeDoc, after: afterDoc });
    };
    const was = partitionOf(before);
    const is = partitionOf(after);
    if (was !== undefined && was === is) return record(was, before, after);
    if (was !== undefined) record(was, before, undefined);
    if (is !== undefined) record(is, undefined, after);
  }

  /**
   * Records a batch of store writes to one history (a partition's, or flexible sync's app-wide one) as server
   * changesets of at most STORE_CHANGE_ENTRY_LIMITS each. Flexible entries keep the documents written, which
   * sessions filter them by; asymmetric tables are not recorded.
   */
  private async recordStoreChanges(partition: string, changes: readonly StoreChange[]): Promise<void> {
    const schema = await this.realmSchema();
    const flexible = partition === FLEXIBLE_HISTORY;
    // Each entry is encoded once it is complete: its instruction objects are garbage before the next one's are made.
    const grouper = new ObjectChangeGroups<[string, Document | null] | undefined>();
    const entries: { changeset: Uint8Array; group: ObjectChange<[string, Document | null] | undefined>[] }[] = [];
    const close = (group: ObjectChange<[string, Document | null] | undefined>[] | undefined) => {
      if (group) entries.push({ changeset: encodeChangeset(group.flatMap((o) => o.instructions)), group: flexible ? group : [] });
    };
    for (const change of changes) {
      const table = schema.get(change.type);
      if (!table || (flexible && table.asymmetric)) continue;
      const instructions = changeInstructions(schema, table, change.before, change.after);
      const object = flexible ? instructions.find((i) => 'object' in i) : undefined;
      const held: [string, Document | null] | undefined = object && 'object' in object ? [heldKey(table.name, object.object), change.after ?? null] : undefined;
      close(grouper.add({ instructions, bytes: change.after ? BSON.calculateObjectSize(change.after) : 0, detail: held }));
    }
    close(grouper.finish());
    if (entries.length === 0) return;
    const history = await this.history.partition(partition);
    for (const { changeset, group } of entries) {
      const entry = await this.history.append(history, {
        originFileIdent: SERVER_FILE_IDENT, clientVersion: 0, baseVersion: 0, timestamp: syncTimestamp(this.now()), changeset, originalSize: 0,
      });
      if (flexible) this.keepDocuments(entry, new Map(group.flatMap((o) => (o.detail ? [o.detail] : []))));
    }
    this.notify(partition);
  }

  /**
   * Integrates a flexible sync upload: each changeset is transformed as in partition sync, then each object
   * it touches is written through the user's rule-checked collections. An object the rules refuse, or that
   * leaves the session's queries, is not applied (a compensating write) and its instructions are left out of
   * the history entry; the rest of the changeset is applied.
   */
  async integrateFlexible(uploader: FlexibleUploader, changesets: readonly UploadedChangeset[]): Promise<{ ok: true; rejected: RejectedObject[] } | { ok: false; error: EngineError }> {
    return this.run(FLEXIBLE_HISTORY, async () => {
      const history = await this.history.partition(FLEXIBLE_HISTORY);
      const file = uploader.clientFile;
      await this.reciprocal.load(file.ident);
      const rejected: RejectedObject[] = [];
      let integrated = 0;
      const finish = async () => {
        if (integrated > 0) await this.history.saveClientFile(file);
      };
      for (const changeset of changesets) {
        if (changeset.clientVersion <= file.uploadClientVersion) continue;
        if (changeset.baseVersion > history.latest) {
          await finish();
          return { ok: false as const, error: { code: ErrorCode.bad_server_version, name: 'ErrorBadServerVersion', message: `Bad server version (UPLOAD): the changeset of client version ${changeset.clientVersion} is based on server version ${changeset.baseVersion}, but the server's latest is ${history.latest}`, action: 'client-reset' as const, tryAgain: false } };
        }
        const transformed = this.transform(history, file, changeset, changeset.instructions);
        if (!transformed.ok) {
          await finish();
          return { ok: false as const, error: transformed.error };
        }
        const applied = await this.applyFlexible(uploader, transformed.instructions, changeset);
        if (!applied.ok) {
          await finish();
          return { ok: false as const, error: applied.error };
        }
        rejected.push(...applied.rejected);
        // A changeset based on a revert's version or later was made after the client had that revert.
        if (file.compensations) file.compensations = file.compensations.filter((c) => c.serverVersion > changeset.baseVersion);
        const entry = await this.history.append(history, {
          originFileIdent: file.ident, clientVersion: changeset.clientVersion, baseVersion: changeset.baseVersion, timestamp: changeset.timestamp,
          changeset: applied.kept.length > 0 ? encodeChangeset(applied.kept) : new Uint8Array(0), originalSize: changeset.size,
        });
        this.keepDocuments(entry, applied.documents);
        await this.reciprocal.save(file.ident);
        file.uploadClientVersion = changeset.clientVersion;
        file.uploadServerVersion = changeset.baseVersion;
        integrated++;
        if (applied.rejected.length > 0) {
          // The revert is a server version of its own, which the client has once it downloaded the revert:
          // until then the compensating write is sent again (next to that version) in each session.
          const version = await this.newServerVersion(history);
          const pending = (file.compensations ??= []);
          pending.push({ serverVersion: version, clientVersion: changeset.clientVersion, objects: encodeHeld(applied.rejected), reasons: applied.rejected.map((r) => r.reason) });
          // A client that never downloads its reverts cannot grow its record without bound: the oldest go.
          if (pending.length > MAX_PENDING_COMPENSATIONS) pending.splice(0, pending.length - MAX_PENDING_COMPENSATIONS);
          for (const r of applied.rejected) uploader.reverted.set(heldKey(r.table, r.object), version);
        }
        // Durable in the history: other sessions may have it now (an IDENT after a crash recovers this
        // client's progress from the history, so its record can follow).
        this.notify(FLEXIBLE_HISTORY);
      }
      await finish();
      return { ok: true as const, rejected };
    }, uploader.userId);
  }

  private async applyFlexible(uploader: FlexibleUploader, instructions: Instruction[], changeset: UploadedChangeset): Promise<{ ok: true; kept: Instruction[]; rejected: RejectedObject[]; documents: ChangedDocuments } | { ok: false; error: EngineError }> {
    // Each object is checked against the user's rules below; a schema change needs development mode.
    const declared = await this.schemas.after(instructions, true);
    if (!declared.ok) return declared;
    const { schema } = declared;
    const touchedOrError = await this.touchObjects(schema, instructions, 'perObject');
    if (!touchedOrError.ok) return touchedOrError;
    const touched = touchedOrError.touched;
    // Left out of the history: asymmetric objects (never downloaded) and rejected ones.
    const omitted = new Set<TouchedObject>();
    const rejected: RejectedObject[] = [];
    // The reasons a client gets say what the platform's did and nothing more: not which rule refused, nor
    // whether a document it may not read exists. The runtime's log keeps the detail.
    const notAllowed = (entry: TouchedObject) => `write to ${primaryKeyForClients(entry.object)} in table ${JSON.stringify(entry.table.name)} not allowed`;
    const clientVersion = changeset.clientVersion;
    const reject = (entry: TouchedObject, reason: string, detail?: string) => {
      omitted.add(entry);
      uploader.reverted.set(heldKey(entry.table.name, entry.object), Number.MAX_SAFE_INTEGER);
      rejected.push({ table: entry.table.name, object: entry.object, reason, clientVersion });
      if (detail) this.options.log.warn(`flexible sync upload of user ${uploader.userId}: ${reason} (${detail})`);
    };
    await uploadWrites.run(FLEXIBLE_HISTORY, async () => {
      for (const entry of touched.values()) {
        const type = entry.table.name;
        if (entry.table.asymmetric) omitted.add(entry);
        const revertedAt = uploader.reverted.get(heldKey(type, entry.object));
        if (revertedAt !== undefined && changeset.baseVersion < revertedAt) {
          // Written on top of a refused write the client had not seen reverted: refused with it, reported once.
          omitted.add(entry);
          continue;
        }
        if (revertedAt !== undefined) uploader.reverted.delete(heldKey(type, entry.object));
        if (entry.unappliable !== undefined) {
          // The reason must not tell an object that does not exist, or a list's length, from a refusal.
          reject(entry, notAllowed(entry), `its instructions do not apply to the stored document: ${entry.unappliable}`);
          continue;
        }
        // In view before or after: a client may change an object out of its view (the object then leaves
        // the client), not write one it never had in view.
        const outside = entry.after
          ? !entry.table.asymmetric && !uploader.selects(type, entry.after) && !(entry.before && uploader.selects(type, entry.before))
          : entry.before !== null && !uploader.selects(type, entry.before);
        const store = uploader.collections(entry.collection);
        if (outside) {
          // A write the rules refuse is refused for that, whether in view or not (the reason says which).
          if (await store.permits(entry.before, entry.after)) reject(entry, `${notAllowed(entry)}; object is outside of the current query view`);
          else reject(entry, notAllowed(entry), 'no role lets the user write it, and it is outside of the current query view');
          continue;
        }
        try {
          // The rules' write filter narrows what a write matches: nothing matched is a refusal.
          let matched = true;
          if (!entry.after) {
            if (entry.before) matched = (await store.deleteOne({ _id: entry.id as never })).deletedCount === 1;
          } else if (!entry.before) await store.insertOne(entry.after);
          else matched = (await store.replaceOne({ _id: entry.id as never }, entry.after)).matchedCount === 1;
          if (!matched) reject(entry, notAllowed(entry), `no role lets the user ${entry.after ? 'update' : 'delete'} it`);
        } catch (e) {
          // Data ingest only creates: an object whose primary key was ingested before is dropped, as the platform did.
          if (e instanceof StoreError && e.code === StoreErrorCode.DuplicateKey && entry.table.asymmetric) continue;
          // Checked before the store sees the key: dropped all the same (not read up front: ingest stays lookup-free).
          if (e instanceof DataAccessError && entry.table.asymmetric && await this.options.store.collection(entry.collection.database, entry.collection.collection).findOne({ _id: entry.id as never })) continue;
          if (e instanceof StoreError && e.code === StoreErrorCode.DuplicateKey) {
            reject(entry, notAllowed(entry), 'a document the user may not read has this primary key');
            continue;
          }
          if (!(e instanceof DataAccessError)) throw e;
          reject(entry, notAllowed(entry), e.message);
        }
      }
    });
    const omittedKeys = new Set([...omitted].map((entry) => `${entry.table.name}\u0000${primaryKeyText(entry.object)}`));
    const kept = instructions.filter((i) => !('object' in i) || !omittedKeys.has(`${i.table}\u0000${primaryKeyText(i.object)}`));
    const documents = new Map<string, Document | null>();
    for (const entry of touched.values()) if (!omitted.has(entry)) documents.set(heldKey(entry.table.name, entry.object), entry.after);
    return { ok: true, kept, rejected, documents };
  }

  // ---------------------------------------------------------------- bootstrap

  /**
   * A new client file's first download: the partition's current state as one server changeset at the
   * latest version (schema, then every object), instead of the whole history. Runs in the partition's queue.
   */
  async bootstrap(partition: unknown, file: ClientFileRecord): Promise<{ version: number; clientVersion: number; timestamp: bigint; changeset: Uint8Array; instructionCount: number }> {
    const id = partitionId(partition);
    return this.run(id, async () => {
      const history = await this.history.partition(id);
      const version = history.latest;
      const clientVersion = file.uploadClientVersion;
      // A bootstrap stays good for later clients: each downloads the entries after it, as any client
      // catches up. Rebuilt once that replay grows long, or its entries are no longer kept.
      const cached = this.bootstraps.get(id);
      if (cached && cached.version >= history.base && cached.version <= version && version - cached.version <= MAX_BOOTSTRAP_REPLAY) return { ...cached, clientVersion, timestamp: syncTimestamp(this.now()) };
      const schema = await this.realmSchema();
      const service = this.options.service;
      const synced = service.collections.map((c) => c.type);
      const tables = reachableTables(schema, synced);
      const instructions: Instruction[] = schemaInstructions(tables);
      const snapshot = await service.snapshot(partition);
      for (const [collection, docs] of snapshot) {
        const table = schema.get(collection.type);
        if (!table || table.asymmetric) continue;
        for (const doc of docs) instructions.push(...documentInstructions(schema, table, doc));
      }
      const built = { version, changeset: encodeChangeset(instructions), instructionCount: instructions.length };
      // The same state is the bootstrap of every new client until the partition's next version.
      this.bootstraps.set(id, built);
      return { ...built, clientVersion, timestamp: syncTimestamp(this.now()) };
    });
  }

  // ---------------------------------------------------------------- uploads

  /**
   * Integrates uploaded changesets in order: each one already integrated (a resent one) is skipped; each
   * new one is transformed, checked and applied whole, or the upload stops with the error for the session
   * (nothing of the failing changeset is applied).
   */
  async integrate(uploader: Uploader, changesets: readonly UploadedChangeset[]): Promise<{ ok: true; integrated: number } | { ok: false; error: EngineError }> {
    const id = partitionId(uploader.partition);
    return this.run(id, async () => {
      const history = await this.history.partition(id);
      const file = uploader.clientFile;
      await this.reciprocal.load(file.ident);
      let integrated = 0;
      const stop = async (error: EngineError) => {
        // What was integrated before the failing changeset stays integrated: remember it for the next session.
        if (integrated > 0) {
          await this.history.saveClientFile(file);
          this.notify(id);
        }
        return { ok: false as const, error };
      };
      for (const changeset of changesets) {
        if (changeset.clientVersion <= file.uploadClientVersion) continue;
        if (changeset.baseVersion > history.latest) {
          return stop({ code: ErrorCode.bad_server_version, name: 'ErrorBadServerVersion', message: `Bad server version (UPLOAD): the changeset of client version ${changeset.clientVersion} is based on server version ${changeset.baseVersion}, but the server's latest is ${history.latest}`, action: 'client-reset', tryAgain: false });
        }
        const transformed = this.transform(history, file, changeset, changeset.instructions);
        if (!transformed.ok) return stop(transformed.error);
        const planned = await this.documentWrites(uploader, id, transformed.instructions);
        if (!planned.ok) return stop(planned.error);
        // Recorded even when empty: the entry tells this client's later downloads which of its versions were integrated.
        await this.record(id, history, planned.writes, {
          originFileIdent: file.ident, clientVersion: changeset.clientVersion, baseVersion: changeset.baseVersion, timestamp: changeset.timestamp,
          changeset: transformed.instructions.length > 0 ? encodeChangeset(transformed.instructions) : new Uint8Array(0), originalSize: changeset.size,
        });
        await this.reciprocal.save(file.ident);
        file.uploadClientVersion = changeset.clientVersion;
        file.uploadServerVersion = changeset.baseVersion;
        integrated++;
        // Durable in the history: other clients may have it now (and an IDENT after a crash recovers this
        // client's progress from the history, so its record can follow).
        this.notify(id);
      }
      if (integrated > 0) await this.history.saveClientFile(file);
      return { ok: true as const, integrated };
    });
  }

  /** The upload rebased onto the server changesets its client had not integrated. */
  private transform(history: PartitionHistory, file: ClientFileRecord, changeset: UploadedChangeset, instructions: Instruction[]):
    { ok: true; instructions: Instruction[] } | { ok: false; error: EngineError } {
    const bootstraps = history.partition === FLEXIBLE_HISTORY ? this.sentBootstraps.concurrentWith(file.ident, { ...changeset, instructions }) : [];
    const upload: TimedChangeset = { instructions, originTimestamp: changeset.timestamp, originFileIdent: BigInt(file.ident) };
    const unseen: RebaseEntry[] = history.since(Math.max(changeset.baseVersion, 0)).map((entry) => ({
      version: entry.version, originFileIdent: entry.originFileIdent, changeset: () => timed(entry), index: () => this.entryChanges(entry),
    }));
    // Flexible sync: the bootstraps the client integrated before this changeset reached the server, each
    // where the client met it (after the history entries of its version).
    const interleaved = bootstraps.map((bootstrap) => ({ version: bootstrap.version, changeset: bootstrap.form, keep: (form: TimedChangeset) => bootstrap.keep(form) }));
    const merged = rebaseUpload(this.reciprocal, file.ident, changeset.baseVersion, upload, changesByObject(instructions), unseen, interleaved);
    if (!merged.ok && 'formsMissing' in merged) {
      return { ok: false, error: { code: ErrorCode.client_file_expired, name: 'ErrorClientFileExpired', message: `Client file expired (UPLOAD): the changeset of client version ${changeset.clientVersion} is based on server version ${changeset.baseVersion}, older than the server still has this client's merge state for; the client must reset`, action: 'client-reset', tryAgain: false } };
    }
    if (!merged.ok) {
      const error = merged.error;
      return { ok: false, error: error.kind === 'schemaMismatch'
        ? { code: ErrorCode.invalid_schema_change, name: 'ErrorInvalidSchemaChange', message: `Invalid schema change (UPLOAD): ${error.message}`, action: 'none', tryAgain: false }
        : SYNC_ERRORS.badChangeset(`Bad changeset (UPLOAD): ${error.message}`) };
    }
    return { ok: true, instructions: merged.changeset.instructions };
  }

  /**
   * An upload's document writes and its history entry, durable before the entry counts. Where the store
   * commits several writes as one (the embedded store), they are one commit: one sync, and after a crash
   * both or neither. Otherwise the documents are written first, so an entry never outlives its documents.
   */
  private async record(partition: string, history: PartitionHistory, writes: CommitWrite[], entry: Omit<HistoryEntry, 'version' | 'integratedAt'>): Promise<void> {
    const store = this.options.service.store;
    const next = this.history.nextEntry(history, entry);
    const all = [...writes, next.write];
    if (store.commit && store === this.options.store && BSON.calculateObjectSize({ all }) <= MAX_COMMIT_BYTES) {
      await uploadWrites.run(partition, () => store.commit!(all));
      await this.history.appended(history, next.stored);
      return;
    }
    // The writes touch distinct documents: issued together, the store makes them durable together.
    await uploadWrites.run(partition, () => Promise.all(writes.map((write) => {
      const collection = store.collection(write.database, write.collection);
      if ('insert' in write) return collection.insertOne(write.insert);
      if ('replace' in write) return collection.replaceOne(byId(write.replace._id), write.replace);
      return collection.deleteOne(byId(write.delete));
    })));
    await this.history.append(history, entry);
  }

  /** The document writes of an upload's instructions: all are checked here, none is made. */
  private async documentWrites(uploader: Uploader, partition: string, instructions: Instruction[]): Promise<{ ok: true; writes: CommitWrite[] } | { ok: false; error: EngineError }> {
    if (!this.options.service.partitionSettings) return { ok: false, error: SYNC_ERRORS.disabledSession('sync is not enabled') };
    const objects = instructions.filter((i) => 'object' in i);
    if (objects.length > 0 && !uploader.canWrite) {
      return { ok: false, error: SYNC_ERRORS.permissionDenied('UPLOAD', `user ${uploader.userId} may not write partition ${partitionText(uploader.partition)}: the write expression is false`) };
    }
    const declared = await this.schemas.after(instructions, uploader.canWrite);
    if (!declared.ok) return declared;
    const { schema } = declared;
    const touchedOrError = await this.touchObjects(schema, objects);
    if (!touchedOrError.ok) return touchedOrError;
    return this.partitionWrites(uploader, partition, touchedOrError.touched);
  }

  /**
   * What a user may write in a partition, for every writer (a Realm client's upload, a JSON feed write): each
   * object must be of the partition before and after (its key filled in when absent), match its collection's
   * schema and link only to objects of the partition. Returns the document writes; none is made here.
   */
  private async partitionWrites(writer: Pick<Uploader, 'partition'>, partition: string, touched: ReadonlyMap<string, TouchedObject>): Promise<{ ok: true; writes: CommitWrite[] } | { ok: false; error: EngineError }> {
    const settings = this.options.service.partitionSettings;
    if (!settings) return { ok: false, error: SYNC_ERRORS.disabledSession('sync is not enabled') };
    const inPartition = (doc: Document) => {
      const m = membershipOf(doc, settings);
      return 'partition' in m && partitionId(m.partition) === partition;
    };
    for (const entry of touched.values()) {
      if (entry.before && !inPartition(entry.before)) {
        return { ok: false, error: SYNC_ERRORS.badChangeset(`failed to validate upload changesets: ${entry.collection.type} ${EJSON.stringify(entry.id as never)} belongs to another partition than ${partitionText(writer.partition)}`) };
      }
      if (!entry.after) continue;
      if (!Object.hasOwn(entry.after, settings.key) || entry.after[settings.key] === null) entry.after[settings.key] = partitionValueFor(writer.partition, entry.collection, settings);
      if (!inPartition(entry.after)) {
        return { ok: false, error: SYNC_ERRORS.badChangeset(`failed to validate upload changesets: SET instruction had incorrect partition value for key "${settings.key}" { expectedPartition: ${partitionText(writer.partition)}, foundPartition: ${EJSON.stringify((entry.after[settings.key] ?? null) as never, { relaxed: false })} }`) };
      }
      // A Realm optional property set to null is an absent value to the collection schema.
      const violation = entry.collection.validate?.(withoutNulls(entry.after));
      if (violation) return { ok: false, error: SYNC_ERRORS.badChangeset(`failed to validate upload changesets: ${entry.collection.type} ${EJSON.stringify(entry.id as never)} does not match its schema: ${violation.message}`) };
      const crossing = await this.crossPartitionLink(entry.collection, entry.after, partition, inPartition);
      if (crossing) return { ok: false, error: SYNC_ERRORS.badChangeset(`failed to validate upload changesets: ${crossing}`) };
    }
    const writes: CommitWrite[] = [];
    for (const entry of touched.values()) {
      const where = { database: entry.collection.database, collection: entry.collection.collection };
      if (!entry.after) {
        if (entry.before) writes.push({ ...where, delete: entry.id });
      } else writes.push(entry.before ? { ...where, replace: entry.after } : { ...where, insert: entry.after });
    }
    return { ok: true, writes };
  }

  /**
   * The writes of a JSON feed client (`../feed.ts`), each a document's new state (null: deleted): checked as
   * an upload's objects are (`partitionWrites`) in the partition's queue, and committed with their history
   * entry, a server changeset that Realm clients download. Nothing is written when one is refused.
   */
  async writeDocuments(writer: Omit<Uploader, 'clientFile'>, changes: readonly { collection: SyncedCollection; id: unknown; after: Document | null }[]): Promise<{ ok: true } | { ok: false; error: EngineError }> {
    const id = partitionId(writer.partition);
    return this.run(id, async () => {
      if (!writer.canWrite) {
        return { ok: false as const, error: SYNC_ERRORS.permissionDenied('UPLOAD', `user ${writer.userId} may not write partition ${partitionText(writer.partition)}: the write expression is false`) };
      }
      const schema = await this.realmSchema();
      const touched = new Map<string, TouchedObject>();
      for (const change of changes) {
        const table = schema.get(change.collection.type);
        const object = primaryKeyOf(change.id);
        if (!table || table.embedded || !object) {
          return { ok: false as const, error: SYNC_ERRORS.badChangeset(`failed to validate upload changesets: ${change.collection.type} ${EJSON.stringify(change.id as never)} is not an object a Realm client can hold`) };
        }
        const before = await this.options.store.collection(change.collection.database, change.collection.collection).findOne({ _id: change.id as never });
        touched.set(heldKey(table.name, object), { collection: change.collection, table, object, id: change.id, before, after: change.after ? cloneDocument(change.after) : null, instructions: [] });
      }
      const checked = await this.partitionWrites(writer, id, touched);
      if (!checked.ok) return checked;
      const instructions = [...touched.values()].flatMap((entry) => changeInstructions(schema, entry.table, entry.before ?? undefined, entry.after ?? undefined));
      const history = await this.history.partition(id);
      await this.record(id, history, checked.writes, {
        originFileIdent: SERVER_FILE_IDENT, clientVersion: 0, baseVersion: 0, timestamp: syncTimestamp(this.now()), changeset: encodeChangeset(instructions), originalSize: 0,
      });
      this.notify(id);
      return { ok: true as const };
    });
  }

  /**
   * The objects an upload's instructions touch, each with its document before and after them (applied to a
   * copy), or the bad-changeset error of the first instruction that does not apply. `perObject`: an
   * instruction that does not apply to the stored document marks its object `unappliable` instead (the
   * changeset's own faults, whatever the store holds, are still bad changesets). Nothing is written here.
   */
  private async touchObjects(schema: RealmSchema, instructions: readonly Instruction[], failures: 'whole' | 'perObject' = 'whole'): Promise<{ ok: true; touched: Map<string, TouchedObject> } | { ok: false; error: EngineError }> {
    const service = this.options.service;
    const touched = new Map<string, TouchedObject>();
    try {
      for (const instruction of instructions) {
        if (!('object' in instruction)) continue;
        const key = `${instruction.table}\u0000${primaryKeyText(instruction.object)}`;
        let entry = touched.get(key);
        if (!entry) {
          const collection = service.collectionOfType(instruction.table);
          const table = schema.get(instruction.table);
          if (!collection || !table || table.embedded) {
            throw new InstructionError(`${instruction.type} on table "${instruction.table}", which is not a synced object type (synced: ${service.collections.map((c) => c.type).join(', ') || 'none'})`);
          }
          if (touched.size >= MAX_OBJECTS_PER_UPLOAD) throw new InstructionError(`an upload may touch at most ${MAX_OBJECTS_PER_UPLOAD} objects`);
          const id = primaryKeyValue(instruction.object, table.primaryKey?.bsonType);
          const before = table.asymmetric ? null : await service.store.collection(collection.database, collection.collection).findOne({ _id: id as never });
          entry = { collection, table, object: instruction.object, id, before, after: before ? cloneDocument(before) : null, instructions: [] };
          touched.set(key, entry);
        }
        entry.instructions.push(instruction);
        // Data ingest is insert-only: the client creates an asymmetric object and never sees it again.
        if (entry.table.asymmetric && (instruction.type === 'EraseObject' || (instruction.type !== 'CreateObject' && !entry.after))) {
          throw new InstructionError(`${instruction.type} on ${instruction.table} ${primaryKeyText(instruction.object)}, an asymmetric (data ingest) object: a changeset may only create it, not change or erase it`);
        }
        if (entry.unappliable !== undefined) continue;
        if (instruction.type === 'CreateObject') entry.after ??= { ...requiredDefaults(entry.table), _id: entry.id };
        else if (instruction.type === 'EraseObject') entry.after = null;
        else {
          try {
            if (!entry.after) throw new StoredStateError(`${instruction.type} on ${instruction.table} ${primaryKeyText(instruction.object)}, which does not exist`);
            applyToDocument(entry.after, instruction, entry.table, schema);
          } catch (e) {
            if (failures === 'whole' || !(e instanceof StoredStateError)) throw e;
            entry.unappliable = e.message;
          }
        }
      }
      // The checks above and the write below address the object by the id the instructions named: the document must keep it.
      for (const entry of touched.values()) {
        const written = entry.after ? primaryKeyOf(entry.after._id) : entry.object;
        if (!written || primaryKeyText(written) !== primaryKeyText(entry.object)) {
          throw new InstructionError(`${entry.table.name} ${primaryKeyText(entry.object)}: the upload would write it under another primary key`);
        }
      }
    } catch (e) {
      if (e instanceof InstructionError) return { ok: false, error: SYNC_ERRORS.badChangeset(`Bad changeset (UPLOAD): ${e.message}`) };
      throw e;
    }
    return { ok: true, touched };
  }

  /** A relationship of the document whose target lives in another partition: relationships never cross partitions. */
  private async crossPartitionLink(collection: SyncedCollection, doc: Document, partition: string, inPartition: (doc: Document) => boolean): Promise<string | undefined> {
    for (const rel of collection.relationships) {
      const value = doc[rel.field];
      if (value === undefined || value === null) continue;
      const keys = Array.isArray(value) ? value : [value];
      if (keys.length === 0) continue;
      const targets = await this.options.store.collection(rel.database, rel.collection).find({ [rel.foreignKey]: { $in: keys } });
      const outside = targets.find((target) => !inPartition(target));
      if (outside) {
        return `relationship "${rel.field}" of ${collection.type} ${EJSON.stringify(doc._id as never)} points to ${rel.collection} ${EJSON.stringify(outside._id as never)}, which is not in partition ${partition}: relationships cannot cross partitions`;
      }
    }
    return undefined;
  }

}

/** Parsed history entries, kept while the entry lives (transforms meet the same entries again). */
const parsedEntries = new WeakMap<HistoryEntry, Instruction[]>();
const entryObjectChanges = new WeakMap<HistoryEntry, ObjectChanges>();

function timed(entry: HistoryEntry): TimedChangeset {
  let instructions = parsedEntries.get(entry);
  if (!instructions) parsedEntries.set(entry, (instructions = parseChangeset(entry.changeset)));
  return { instructions, originTimestamp: entry.timestamp, originFileIdent: BigInt(entry.originFileIdent) };
}

/** The partition value as the collection's schema stores the key (a long partition is an Int64 unless the schema says int). */
function partitionValueFor(partition: unknown, collection: SyncedCollection, settings: PartitionSettings): unknown {
  if (settings.type !== 'long' || typeof partition !== 'number') return partition;
  const property = (collection.schema.properties as Record<string, { bsonType?: unknown }> | undefined)?.[settings.key];
  return property?.bsonType === 'int' ? partition : Long.fromNumber(partition);
}

/** The document without its null-valued fields (at every depth of embedded objects). */
function withoutNulls(doc: Document): Document {
  const out: Document = {};
  for (const [k, v] of Object.entries(doc)) {
    if (v === null) continue;
    out[k] = v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype ? withoutNulls(v as Document)
      : Array.isArray(v) ? v.map((e) => (e !== null && typeof e === 'object' && Object.getPrototypeOf(e) === Object.prototype ? withoutNulls(e as Document) : e))
        : v;
  }
  return out;
}

/** Copies the containers of a document (bson values are immutable and shared). */
function cloneDocument<T>(value: T): T {
  if (Array.isArray(value)) return value.map(cloneDocument) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = cloneDocument(v);
    return out as T;
  }
  return value;
}
