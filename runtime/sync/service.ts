// Partition-based sync in the runtime: the state machine over the app's `sync/config.json` and the data
// folder, opening a partition as a user (type check, permissions with their trace, membership), the
// sessions of the live feed and the change fan-out, client writes, and the simulator's report.
import { randomBytes } from 'node:crypto';
import { isObject } from '../../core/json';
import { isClusterSource, type AppModel, type Collection } from '../../core/model';
import { compileExpression, evaluateExpressionTraced, redactText, redactTrace, type CompiledExpression, type EvaluationEnv, type EvaluationUser } from '../../core/rules';
import {
  frozenPart, membershipOf, parsePartitionValue, partitionId, partitionQuery, partitionText, reconcileSync, syncSettingsFromFile,
  transitionEffect, type PartitionSettings, type Reconciled, type SyncError, type SyncRuntimeState, type SyncSettings, type SyncTransition,
} from '../../core/sync';
import { compileSchema, type SchemaValidator } from '../data/schema';
import type { Logger } from '../http/server';
import type { ChangeEvent } from '../store/changes';
import type { Document, DocumentStore } from '../store/types';
import { readSyncState, writeSyncState } from './files';
import type { PermissionVerdict, SyncStatusReport } from '../../core/sync/messages';
import { ErrorCode } from './wire/errors';

/** What the sync service needs of the current app (rebuilt on every reload). */
export interface SyncAppContext {
  app: AppModel;
  values: Record<string, unknown>;
  /** Every secret's value: traces and problems never show them. */
  secretValues?: readonly string[];
  environment: { tag: string; values: Record<string, unknown> };
  /** The custom user data document of a user, read now; undefined when off or absent. */
  customUserData(userId: string): Promise<Record<string, unknown> | undefined>;
  /** `%function`: runs an app function as the user. */
  callFunction(name: string, args: unknown[], user: EvaluationUser): Promise<unknown>;
}

export interface SyncServiceOptions {
  dataDir: string;
  store: DocumentStore;
  log: Logger;
  /** Milliseconds since the epoch. */
  now?: () => number;
}

/** One synced object type: a collection of the linked cluster whose schema holds the partition key. */
export interface SyncedCollection {
  type: string;
  database: string;
  collection: string;
  validate?: SchemaValidator;
  /** The collection's JSON Schema (its Realm object type is derived from it). */
  schema: Record<string, unknown>;
  relationships: { field: string; database: string; collection: string; foreignKey: string }[];
}

export type OpenResult =
  | { ok: true; partition: unknown; verdict: PermissionVerdict; user: EvaluationUser }
  | { ok: false; error: SyncError; partition?: unknown; verdict?: PermissionVerdict; user?: EvaluationUser };

export interface ClientFile { epoch: number; ident: string }

/** A live session: one open partition of one connection. */
export interface SyncSession {
  readonly partitionId: string;
  readonly partition: unknown;
  readonly userId: string;
  readonly canWrite: boolean;
  readonly clientFile: ClientFile;
  /** Receives an encoded change message (shared by every session of the partition). */
  send(message: SessionMessage): void;
  /** Ends the session with a protocol error. */
  end(error: SyncError): void;
}

export type SessionMessage =
  | { type: 'change'; version: number; op: 'insert' | 'update' | 'delete'; collection: string; documentKey: { _id: unknown }; document?: Document; moved?: { from?: unknown; to?: unknown } }
  | { type: 'reevaluate'; reason: string };

export const SYNC_ERRORS = {
  permissionDenied: (what: 'BIND' | 'UPLOAD', detail: string): SyncError => ({ code: ErrorCode.permission_denied, name: 'ErrorPermissionDenied', message: `Permission denied (${what}): ${detail}`, action: 'none', tryAgain: false }),
  badClientFileIdent: (detail: string): SyncError => ({ code: ErrorCode.bad_client_file_ident, name: 'ErrorBadClientFileIdent', message: `bad client file identifier: ${detail}`, action: 'client-reset', tryAgain: false }),
  badChangeset: (message: string): SyncError => ({ code: ErrorCode.bad_changeset, name: 'ErrorBadChangeset', message, action: 'none', tryAgain: false }),
  badClientFile: (detail: string): SyncError => ({ code: ErrorCode.bad_client_file, name: 'ErrorBadClientFile', message: `Synchronization no longer possible for client-side file: ${detail}`, action: 'client-reset', tryAgain: false }),
  writeNotAllowed: (detail: string): SyncError => ({ code: ErrorCode.write_not_allowed, name: 'ErrorWriteNotAllowed', message: `Client attempted a write that is not allowed: ${detail}`, action: 'client-reset', tryAgain: false }),
  disabledSession: (detail: string): SyncError => ({ code: ErrorCode.disabled_session, name: 'ErrorDisabledSession', message: detail, action: 'retry-later', tryAgain: true }),
  badAuthentication: (detail: string): SyncError => ({ code: ErrorCode.bad_authentication, name: 'ErrorBadAuthentication', message: detail, action: 'none', tryAgain: false }),
  tokenExpired: (detail: string): SyncError => ({ code: ErrorCode.token_expired, name: 'ErrorTokenExpired', message: detail, action: 'refresh-token', tryAgain: true }),
};

/** The error every live session (JSON feed and Realm protocol) ends with at a transition: pause (213, retry later), terminate (client reset). */
export function transitionError(transition: SyncTransition): SyncError | undefined {
  return transition === 'paused' ? SYNC_ERRORS.disabledSession('sync was paused (disabled session); try again after it resumes')
    : transition === 'terminated' ? SYNC_ERRORS.badClientFileIdent('sync was terminated and its metadata erased; the client must client-reset')
      : undefined;
}

const NOT_RUNNING = 'sync is not enabled for this app';
const EXACT_QUERY_TYPES = new Set(['string', 'objectId', 'uuid']);

export class SyncService {
  private state: SyncRuntimeState;
  private context?: SyncAppContext;
  private synced: SyncedCollection[] = [];
  private byNamespace = new Map<string, SyncedCollection>();
  private byType = new Map<string, SyncedCollection>();
  private readRule?: CompiledExpression;
  private writeRule?: CompiledExpression;
  private readonly sessions = new Map<string, Set<SyncSession>>();
  private sessionCount = 0;
  private lastRefused?: string;
  private lastNotice?: string;
  /** The server version: grows with every change sent to sessions and every accepted write. */
  private version: number;
  private readonly now: () => number;
  private readonly listeners = new Set<(event: { transition?: SyncTransition; reason: string }) => void>();

  constructor(private readonly options: SyncServiceOptions) {
    this.now = options.now ?? Date.now;
    this.state = readSyncState(options.dataDir);
    // Versions stay above those of earlier runs without being stored at every change.
    this.version = this.now() * 1000;
  }

  /** The state machine's state and what runs. */
  status(): SyncStatusReport {
    const running = this.state.running;
    return {
      status: this.state.status,
      epoch: this.state.epoch,
      ...(this.state.lastDisabled !== undefined ? { lastDisabled: this.state.lastDisabled } : {}),
      ...(running ? {
        running: {
          key: running.frozen.key, type: running.frozen.type, required: running.frozen.required,
          permissions: { read: running.frozen.read, write: running.frozen.write },
          developmentMode: running.settings.developmentModeEnabled,
          ...(running.settings.databaseName ? { database: running.settings.databaseName } : {}),
          ...(running.settings.serviceName ? { service: running.settings.serviceName } : {}),
        },
      } : {}),
      ...(this.lastRefused ? { refused: this.lastRefused } : {}),
      ...(this.lastNotice ? { notice: this.lastNotice } : {}),
      sessions: this.sessionCount,
    };
  }

  get runtimeState(): SyncRuntimeState {
    return this.state;
  }

  private migrated?: PartitionSettings;

  /**
   * The partition settings a migrated app ran before it moved to flexible sync (`../migration`): what a
   * flexible client's `migratedPartition` is checked against, and the key every synced collection keeps
   * holding (migrated clients subscribe every table on it). Undefined when the app was not migrated.
   */
  get migratedFrom(): PartitionSettings | undefined {
    return this.migrated;
  }

  set migratedFrom(partition: PartitionSettings | undefined) {
    this.migrated = partition;
    this.rebuild();
  }

  /**
   * A step of a partition ↔ flexible migration (`../migration`): what runs changes mode without a
   * terminate. The epoch grows, so the new mode starts from fresh histories (the store keeps every
   * document) and a client file of the old mode is not resumed; the partition feed's sessions end.
   */
  adoptMode(settings: SyncSettings, error: SyncError): void {
    if (this.state.status !== 'enabled' && this.state.status !== 'paused') throw new Error(NOT_RUNNING);
    this.state = { ...this.state, epoch: this.state.epoch + 1, running: { settings, frozen: frozenPart(settings)! } };
    writeSyncState(this.options.dataDir, this.state);
    for (const set of [...this.sessions.values()]) for (const session of [...set]) session.end(error);
    this.rebuild();
    this.notify({ reason: `sync moved to ${settings.type} sync` });
  }

  /** Told after every reload or transition (the editor's simulator re-evaluates on it). */
  onUpdate(listener: (event: { transition?: SyncTransition; reason: string }) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Takes a (re)loaded app: its `sync/config.json` goes through the state machine against the persisted
   * state. A refused change keeps what runs and is reported; a transition reaches connected sessions.
   */
  load(context: SyncAppContext): Reconciled {
    this.context = context;
    const file = context.app.sync?.file;
    let settings: SyncSettings | undefined;
    if (file) {
      const parsed = syncSettingsFromFile(file.value);
      if (parsed.ok) settings = parsed.settings;
      else {
        this.options.log.warn(`sync: ${parsed.message}; the sync state is unchanged`);
        this.rebuild();
        return { state: this.state, refused: { message: parsed.message, paths: [] } };
      }
    }
    return this.apply(settings);
  }

  /** Applies a configuration (the file's, or an admin PATCH's already written to the file). */
  apply(settings: SyncSettings | undefined): Reconciled {
    const clusters = this.context ? this.context.app.dataSources.filter(isClusterSource).map((d) => d.name) : [];
    const result = reconcileSync(this.state, settings, clusters, Math.floor(this.now() / 1000));
    this.lastRefused = result.refused?.message;
    this.lastNotice = result.notice;
    if (result.refused) this.options.log.warn(`sync: ${result.refused.message}`);
    if (result.notice) this.options.log.info(`sync: ${result.notice}`);
    if (result.state !== this.state) {
      this.state = result.state;
      writeSyncState(this.options.dataDir, this.state);
    }
    this.rebuild();
    if (result.transition) {
      this.options.log.info(`sync ${result.transition}: ${transitionEffect(result.transition)}`);
      this.endSessionsAfter(result.transition);
    }
    this.notify({ ...(result.transition ? { transition: result.transition } : {}), reason: result.transition ? `sync ${result.transition}` : 'the app was reloaded' });
    return result;
  }

  private notify(event: { transition?: SyncTransition; reason: string }): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (e) {
        this.options.log.error(`sync listener failed: ${(e as Error).message}`);
      }
    }
  }

  private endSessionsAfter(transition: SyncTransition): void {
    const error = transitionError(transition);
    if (!error) return;
    for (const set of [...this.sessions.values()]) for (const session of [...set]) session.end(error);
  }

  /** The synced object types and compiled rules of the running configuration. */
  private rebuild(): void {
    const running = this.state.running;
    this.synced = running && this.context ? syncedCollections(this.context.app, running.settings, this.migrated?.key) : [];
    this.byNamespace = new Map(this.synced.map((c) => [`${c.database}\u0000${c.collection}`, c]));
    this.byType = new Map(this.synced.map((c) => [c.type, c]));
    const partitioned = running && running.settings.type === 'partition';
    this.readRule = partitioned ? compileExpression(running.frozen.read) : undefined;
    this.writeRule = partitioned ? compileExpression(running.frozen.write) : undefined;
    const sessionsOpen = this.sessionCount > 0;
    if (sessionsOpen) for (const set of this.sessions.values()) for (const s of set) s.send({ type: 'reevaluate', reason: 'the app was reloaded: rules, schemas or functions may have changed' });
  }

  get collections(): readonly SyncedCollection[] {
    return this.synced;
  }

  collectionOfType(type: string): SyncedCollection | undefined {
    return this.byType.get(type);
  }

  collectionOfNamespace(database: string, collection: string): SyncedCollection | undefined {
    return this.byNamespace.get(`${database}\u0000${collection}`);
  }

  get partitionSettings(): PartitionSettings | undefined {
    if (this.flexible) return undefined;
    const frozen = this.state.running?.frozen;
    return frozen ? { key: frozen.key, type: frozen.type, required: frozen.required, permissions: { read: frozen.read, write: frozen.write } } : undefined;
  }

  /** Whether what runs (enabled or paused) is flexible sync. */
  get flexible(): boolean {
    return this.state.running?.settings.type === 'flexible';
  }

  /** A new client file ident of the current epoch. */
  newClientFile(): ClientFile {
    return { epoch: this.state.epoch, ident: randomBytes(8).toString('hex') };
  }

  /**
   * Opening a partition as a user (BIND, §4): sync must run, the client file must be of this epoch,
   * the value must have the key's type, then write ⇒ read. With `trace`, both expressions' traces.
   */
  async open(user: EvaluationUser, text: string, options: { trace?: boolean; clientFile?: ClientFile } = {}): Promise<OpenResult> {
    const settings = this.partitionSettings;
    if (this.state.status === 'paused') return { ok: false, error: SYNC_ERRORS.disabledSession('sync is paused (disabled session); try again after it resumes') };
    if (!settings || this.state.status !== 'enabled') {
      return { ok: false, error: SYNC_ERRORS.disabledSession(this.state.status === 'terminated' ? `${NOT_RUNNING}: it was terminated` : NOT_RUNNING) };
    }
    if (options.clientFile && options.clientFile.epoch !== this.state.epoch) {
      return { ok: false, error: SYNC_ERRORS.badClientFileIdent(`client file ${options.clientFile.ident} belongs to sync epoch ${options.clientFile.epoch}, but sync was terminated and re-enabled since (epoch ${this.state.epoch}); the client must client-reset`) };
    }
    const parsed = parsePartitionValue(text, settings);
    if (!parsed.ok) return { ok: false, error: parsed.error };
    const fullUser = await this.withCustomData(user);
    const verdict = await this.permissions(fullUser, parsed.value, options.trace ?? false);
    if (!verdict.read) {
      return { ok: false, error: SYNC_ERRORS.permissionDenied('BIND', `user ${user.id} may not read partition ${partitionText(parsed.value)}: both the read and the write expression are false`), partition: parsed.value, verdict, user: fullUser };
    }
    return { ok: true, partition: parsed.value, verdict, user: fullUser };
  }

  /** `%%user` as at open time: custom user data read from its collection now. */
  private async withCustomData(user: EvaluationUser): Promise<EvaluationUser> {
    const customData = this.context ? await this.context.customUserData(user.id) : undefined;
    return { ...user, custom_data: customData ?? {} };
  }

  /** Evaluates write, then read unless write granted it (§4); traced evaluations evaluate both. */
  async permissions(user: EvaluationUser, partition: unknown, trace: boolean): Promise<PermissionVerdict> {
    const frozen = this.state.running!.frozen;
    const problems: string[] = [];
    const context = this.context;
    const env: EvaluationEnv = {
      user, partition,
      values: context?.values ?? {},
      environment: context?.environment ?? { tag: '', values: {} },
      ...(context ? { callFunction: (name: string, args: unknown[]) => context.callFunction(name, args, user) } : {}),
      onError: (error) => problems.push(error.message),
    };
    if (trace) {
      const write = await evaluateExpressionTraced(frozen.write, env);
      const read = await evaluateExpressionTraced(frozen.read, env);
      const secrets = context?.secretValues ?? [];
      return {
        read: write.result || read.result, write: write.result, readGrantedByWrite: write.result && !read.result,
        readTrace: redactTrace(read.trace, secrets), writeTrace: redactTrace(write.trace, secrets), problems: problems.map((p) => redactText(p, secrets)),
      };
    }
    const write = await this.writeRule!(env);
    const read = write || (await this.readRule!(env));
    return { read, write, readGrantedByWrite: false, problems: problems.map((p) => redactText(p, context?.secretValues ?? [])) };
  }

  /** The documents of a partition, per synced type. */
  async snapshot(partition: unknown): Promise<Map<SyncedCollection, Document[]>> {
    const settings = this.partitionSettings!;
    const id = partitionId(partition);
    const out = new Map<SyncedCollection, Document[]>();
    for (const c of this.synced) {
      const found = await this.options.store.collection(c.database, c.collection).find(partitionQuery(settings.key, partition));
      // Equality on a string, ObjectId or UUID selects exactly the members; numbers and null also match
      // other types (a double, a missing key), which membership sorts out.
      out.set(c, EXACT_QUERY_TYPES.has(settings.type) && partition !== null ? found : found.filter((doc) => {
        const m = membershipOf(doc, settings);
        return 'partition' in m && partitionId(m.partition) === id;
      }));
    }
    return out;
  }

  /** Documents of the synced collections that sync ignores, with why (§6). */
  async ignoredDocuments(): Promise<{ collection: SyncedCollection; documents: { _id: unknown; reason: string }[] }[]> {
    const settings = this.partitionSettings!;
    const out: { collection: SyncedCollection; documents: { _id: unknown; reason: string }[] }[] = [];
    for (const c of this.synced) {
      const all = await this.options.store.collection(c.database, c.collection).find({});
      const documents: { _id: unknown; reason: string }[] = [];
      for (const doc of all) {
        const m = membershipOf(doc, settings);
        if ('ignored' in m) documents.push({ _id: doc._id, reason: m.ignored });
      }
      out.push({ collection: c, documents });
    }
    return out;
  }

  /** Registers a live session for change messages; returns its removal. */
  attach(session: SyncSession): () => void {
    let set = this.sessions.get(session.partitionId);
    if (!set) this.sessions.set(session.partitionId, (set = new Set()));
    set.add(session);
    this.sessionCount++;
    return () => {
      const current = this.sessions.get(session.partitionId);
      if (current?.delete(session)) {
        this.sessionCount--;
        if (current.size === 0) this.sessions.delete(session.partitionId);
      }
    };
  }

  /** Whether a store write to this namespace has a live session to reach. */
  wants(database: string, collection: string): boolean {
    return this.sessionCount > 0 && (this.byNamespace.has(`${database}\u0000${collection}`) || this.isCustomUserData(database, collection));
  }

  /** Whether a namespace is the app's custom user data (which `%%user.custom_data` reads). */
  isCustomUserData(database: string, collection: string): boolean {
    const cud = this.context?.app.customUserData;
    return Boolean(cud?.enabled && cud.databaseName === database && cud.collectionName === collection);
  }

  /** The users whose custom user data a write to it changed (its owner before and after). */
  customDataOwners(change: ChangeEvent): Set<string> {
    const field = this.context?.app.customUserData?.userIdField;
    if (!field) return new Set();
    return new Set([change.fullDocument?.[field], change.fullDocumentBeforeChange?.[field]].filter((v): v is string => typeof v === 'string'));
  }

  nextVersion(): number {
    return ++this.version;
  }

  currentVersion(): number {
    return this.version;
  }

  /**
   * A store change reaches the sessions of the partitions it touches: insert, update, delete, and a move
   * (a key changed in the database) as a delete in the old partition and an insert in the new one.
   */
  onChange(change: ChangeEvent): void {
    if (this.sessionCount === 0) return;
    if (this.isCustomUserData(change.ns.db, change.ns.coll)) this.customDataChanged(change);
    const synced = this.byNamespace.get(`${change.ns.db}\u0000${change.ns.coll}`);
    const settings = this.partitionSettings;
    if (!synced || !settings) return;
    const partitionOf = (doc: Document | undefined): string | undefined => {
      if (!doc) return undefined;
      const m = membershipOf(doc, settings);
      return 'partition' in m ? partitionId(m.partition) : undefined;
    };
    const before = change.operationType === 'insert' ? undefined : partitionOf(change.fullDocumentBeforeChange);
    const after = change.operationType === 'delete' ? undefined : partitionOf(change.fullDocument);
    const key = change.documentKey;
    const version = this.nextVersion();
    if (before !== undefined && before === after) {
      this.deliver(before, { type: 'change', version, op: 'update', collection: synced.type, documentKey: key, document: change.fullDocument! });
      return;
    }
    const afterValue = after !== undefined ? (membershipOf(change.fullDocument!, settings) as { partition: unknown }).partition : undefined;
    const beforeValue = before !== undefined ? (membershipOf(change.fullDocumentBeforeChange!, settings) as { partition: unknown }).partition : undefined;
    const moved = before !== undefined && after !== undefined;
    if (before !== undefined) {
      this.deliver(before, { type: 'change', version, op: 'delete', collection: synced.type, documentKey: key, ...(moved ? { moved: { to: afterValue } } : {}) });
    }
    if (after !== undefined) {
      this.deliver(after, { type: 'change', version, op: 'insert', collection: synced.type, documentKey: key, document: change.fullDocument!, ...(moved ? { moved: { from: beforeValue } } : {}) });
    }
  }

  private deliver(partition: string, message: SessionMessage): void {
    const set = this.sessions.get(partition);
    if (!set) return;
    for (const session of set) session.send(message);
  }

  /** Custom user data feeds `%%user.custom_data`: its owner's sessions are told to re-evaluate. */
  private customDataChanged(change: ChangeEvent): void {
    const owners = this.customDataOwners(change);
    if (owners.size === 0) return;
    for (const set of this.sessions.values()) {
      for (const session of set) {
        if (owners.has(session.userId)) session.send({ type: 'reevaluate', reason: 'the custom user data of this user changed; permissions hold until the partition is opened again' });
      }
    }
  }

  /** What opening a partition checks (and the feed writes with): the app's current context. */
  get appContext(): SyncAppContext | undefined {
    return this.context;
  }

  get store(): DocumentStore {
    return this.options.store;
  }
}

/**
 * The synced types of the running configuration: partition-based, the collections of its cluster whose
 * schema has the key; flexible, those whose schema has a title.
 */
/** `migratedKey`: a flexible app migrated from partition-based sync syncs the collections that hold that key. */
export function syncedCollections(app: AppModel, settings: SyncSettings, migratedKey?: string): SyncedCollection[] {
  const flexible = settings.type === 'flexible';
  const key = flexible ? migratedKey : settings.partition?.key;
  const ds = app.dataSources.find((d) => d.name === settings.serviceName && isClusterSource(d));
  if (!ds || (!key && !flexible)) return [];
  const out: SyncedCollection[] = [];
  for (const c of ds.collections) {
    const schema = c.schema?.value;
    if (!isObject(schema) || !isObject(schema.properties)) continue;
    if (flexible && (typeof schema.title !== 'string' || !schema.title)) continue;
    if (key !== undefined && !Object.hasOwn(schema.properties, key)) continue;
    // `database_name` is where development mode keeps the client's types; without it every database of the
    // cluster syncs (the sync.todo backend names a database_name its collection is not in).
    if (settings.developmentModeEnabled && settings.databaseName && c.database !== settings.databaseName) continue;
    out.push({
      type: typeof schema.title === 'string' && schema.title ? schema.title : c.collection,
      database: c.database,
      collection: c.collection,
      validate: compileSchema(schema),
      schema,
      relationships: relationshipsOf(c),
    });
  }
  return out;
}

function relationshipsOf(c: Collection): SyncedCollection['relationships'] {
  const value = c.relationships?.value;
  if (!isObject(value)) return [];
  const out: SyncedCollection['relationships'] = [];
  for (const [field, rel] of Object.entries(value)) {
    if (!isObject(rel) || typeof rel.ref !== 'string' || typeof rel.foreign_key !== 'string') continue;
    const m = /^#\/relationship\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(rel.ref);
    if (m) out.push({ field: typeof rel.source_key === 'string' ? rel.source_key : field, database: m[2], collection: m[3], foreignKey: rel.foreign_key });
  }
  return out;
}
