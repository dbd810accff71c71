// The flexible sync part of a Realm sync connection: BIND (the user's rule-checked collections), IDENT (the
// active subscription set; a new client file's bootstrap, a known one's view resumed from its record), QUERY
// (a new subscription set compiled, then its bootstrap), uploads through the user's rules (compensating
// writes and their reverts) and the rules evaluated again when custom user data or the app's rules change.
// The connection (`../sessions/connection.ts`) owns the socket, the sessions' order and the DOWNLOAD pump;
// this room owns what a flexible session holds and sends because of its subscriptions.
import type { EvaluationUser } from '../../../core/rules';
import type { SyncError } from '../../../core/sync';
import type { Logger } from '../../http/server';
import type { PendingCompensation } from '../history/history';
import { SERVER_FILE_IDENT } from '../history/history';
import { SYNC_ERRORS } from '../service';
import { FLEXIBLE_HISTORY, type EngineError, type RealmSyncEngine, type UploadedChangeset } from '../sessions/engine';
import type { SyncActivityObserver } from '../sessions/connection';
import { isFlexible, markBound, type FlexibleSession, type IdentifiedSession, type Session } from '../sessions/session';
import { syncTimestamp } from '../translate/values';
import { encodeBase64PrimaryKey, encodeChangesetBatches } from '../wire/changeset';
import { ErrorCode } from '../wire/errors';
import type { ChangesetEntry, Instruction } from '../wire/instructions';
import type { ServerMessage } from '../wire/messages';
import { projectQueryBody, projectUpload, restrictMatchers } from '../schema-versions/projection';
import type { SessionVersioning } from '../schema-versions/sessions';
import { compileQueryBody, decodeHeld, FlexibleView, type CompiledQueries, type UserCollections } from './view';

/** For each user's rule-checked collections, what their rules' outcome depends on (`RealmSyncEngine.ruleOutcomeKey`). */
const rulesOutcomeKeys = new WeakMap<UserCollections, string>();
/**
 * A flexible bootstrap's changesets (one per DOWNLOAD): closed at this many instructions or bytes, so a large
 * bootstrap comes in several messages as the platform's did (realm-core's bootstrap tests count on it).
 */
const BOOTSTRAP_CHANGESET_LIMITS = { maxInstructions: 20_000, maxBytes: 1_000_000 };

/** What the flexible room uses of its connection. */
export interface FlexibleHost {
  readonly engine: RealmSyncEngine;
  readonly log: Logger;
  readonly observer?: SyncActivityObserver;
  readonly user: EvaluationUser;
  readonly protocolVersion: number;
  /** The app's sync schema versions as this connection's sessions use them (`../schema-versions/`). */
  readonly versioning: SessionVersioning;
  describe(session: Session): string;
  /** After an await: the session may have ended meanwhile. */
  isLive(session: Session): session is IdentifiedSession;
  send(message: ServerMessage): void;
  sendDownload(session: IdentifiedSession, changesets: ChangesetEntry[], batchState?: 'moreToCome' | 'lastInBatch' | 'steadyState', progressEstimate?: number, started?: number): void;
  sessionError(session: Session, error: SyncError | EngineError, details?: Record<string, unknown>): void;
  /** Sends what the session has not had of the history (DOWNLOADs), then answers its MARKs. */
  pump(session: Session): Promise<void>;
  /** Runs a task after the session's earlier ones. */
  enqueue(session: Session, task: () => Promise<void>): void;
  /** Ends the connection with a protocol error. */
  fail(code: number, message: string): void;
}

export class FlexibleFlow {
  constructor(private readonly host: FlexibleHost) {}

  /** Flexible sync BIND: sync must run; the user's custom data is read now, and again whenever it changes. */
  async bind(session: Session, needClientFileIdent: boolean): Promise<void> {
    const engine = this.host.engine;
    const service = engine.service;
    if (service.runtimeState.status === 'paused') return this.host.sessionError(session, SYNC_ERRORS.disabledSession('sync is paused (disabled session); try again after it resumes'));
    if (service.runtimeState.status !== 'enabled' || !service.flexible) return this.host.sessionError(session, SYNC_ERRORS.disabledSession('flexible sync is not enabled for this app'));
    const view = new FlexibleView(await this.userCollections(), engine.storedCollections());
    const history = await engine.history.partition(FLEXIBLE_HISTORY);
    if (session.state === 'ended') return;
    markBound(session, { view, partitionId: FLEXIBLE_HISTORY, canWrite: true, history });
    this.host.log.info(`${this.host.describe(session)}: bound (flexible sync, protocol ${this.host.protocolVersion})`);
    if (needClientFileIdent) {
      session.clientFile = await engine.history.allocateClientFile(FLEXIBLE_HISTORY, this.host.user.id);
      await this.host.versioning.newClientFile(session.clientFile.ident, session.schemaVersion!);
      this.host.send({ type: 'ident', session: session.ident, clientFileIdent: BigInt(session.clientFile.ident), clientFileIdentSalt: session.clientFile.salt });
    }
  }

  /** The synced collections as the user's rules let this session use them, with the user's custom data as it is now. */
  async userCollections(): Promise<UserCollections> {
    const engine = this.host.engine;
    const customData = await engine.service.appContext?.customUserData(this.host.user.id);
    const user = { ...this.host.user, custom_data: customData ?? {} };
    const collections = engine.userCollections(user);
    // What the rules' outcome depends on: clients with the same one and the same queries share a bootstrap.
    rulesOutcomeKeys.set(collections, engine.ruleOutcomeKey(user));
    return collections;
  }

  /**
   * The user's custom user data changed: the session's rules are evaluated again. The client first gets the
   * history as the old rules show it, then one changeset at that version erasing what it may no longer read
   * and bringing what it now may; later uploads are checked with the new rules.
   */
  async reevaluateRules(session: FlexibleSession): Promise<void> {
    session.rulesQueued = false;
    const why = [...session.rulesChanges].join('; ');
    session.rulesChanges.clear();
    if (!this.host.isLive(session)) return;
    const engine = this.host.engine;
    const collections = await this.userCollections();
    await engine.run(FLEXIBLE_HISTORY, async () => {
      await this.host.pump(session);
      if (!this.host.isLive(session)) return;
      const view = session.view;
      const changes = await view.regrant(collections, await this.host.versioning.viewSchema(session.schemaVersion));
      if (!this.host.isLive(session) || changes.length === 0) return;
      view.noteChanges(session.downloadServerVersion);
      await view.record(engine.history.views, session.clientFile.ident);
      if (!this.host.isLive(session)) return;
      this.host.log.info(`${this.host.describe(session)}: ${why}; rules evaluated again (${changes.filter((i) => i.type === 'EraseObject').length} objects erased, ${changes.filter((i) => i.type === 'CreateObject').length} brought or updated)`);
      this.host.sendDownload(session, [{
        version: BigInt(session.downloadServerVersion), lastIntegratedRemoteVersion: BigInt(session.downloadClientVersion), originTimestamp: syncTimestamp(Date.now()),
        originFileIdent: BigInt(SERVER_FILE_IDENT), originalChangesetSize: 0, instructions: changes,
      }]);
    }, this.host.user.id);
  }

  /**
   * Compiles a subscription set; a refusal is a QUERY_ERROR for that version, the session keeps its set.
   * In development mode, fields the queries read that are not queryable become queryable first.
   */
  async compileQueries(session: Session, version: number, clientBody: string): Promise<CompiledQueries> {
    const engine = this.host.engine;
    const service = engine.service;
    const schema = await engine.realmSchema();
    // An older schema version's queries, in the newest schema's terms.
    const versioned = await this.host.versioning.schemas(session.schemaVersion);
    const projected = versioned ? projectQueryBody(clientBody, versioned) : { ok: true as const, body: clientBody };
    if (!projected.ok) {
      this.host.send({ type: 'query_error', errorCode: ErrorCode.bad_query, session: session.ident, queryVersion: BigInt(version), message: projected.message });
      return { ok: false, message: projected.message };
    }
    const body = projected.body;
    const compile = () => compileQueryBody(body, (type) => service.collectionOfType(type), service.runtimeState.running?.settings.queryable ?? {}, {
      asymmetric: (table) => schema.get(table)?.asymmetric === true,
    });
    let compiled = compile();
    if (!compiled.ok && compiled.notQueryable) {
      const added = await engine.developQueryableFields(compiled.notQueryable);
      if (added.length > 0) compiled = compile();
    }
    if (!compiled.ok && this.host.isLive(session)) {
      this.host.log.warn(`${this.host.describe(session)}: query version ${version} refused: ${compiled.message}`);
      this.host.send({ type: 'query_error', errorCode: ErrorCode.bad_query, session: session.ident, queryVersion: BigInt(version), message: compiled.message });
    }
    if (compiled.ok && versioned) restrictMatchers(compiled.tables, versioned);
    return compiled;
  }

  /** QUERY: a new subscription set; what the client has is brought up to date, then the new view is bootstrapped. */
  async query(session: Session, version: number, body: string): Promise<void> {
    if (session.state !== 'identified') return this.host.fail(ErrorCode.bad_message_order, 'Bad input message order: QUERY before IDENT');
    // Only a flexible connection's sessions are sent QUERY by a client; the others are told so as any internal error.
    if (!isFlexible(session)) throw new Error('QUERY on a session that is not flexible sync');
    const view = session.view;
    if (version <= view.queryVersion) return this.host.sessionError(session, { code: ErrorCode.bad_query, name: 'ErrorBadQuery', message: `Bad query (QUERY): query version ${version} is not after the active version ${view.queryVersion}`, action: 'fix-client', tryAgain: false });
    session.traffic.add({ at: Date.now(), direction: 'in', type: 'query', fields: { queryVersion: version }, detail: body.slice(0, 2000) });
    const compiled = await this.compileQueries(session, version, body);
    if (!compiled.ok || !this.host.isLive(session)) return;
    await this.bootstrapView(session, { version, tables: compiled.tables, body });
  }

  /**
   * Sends the active query version's bootstrap at the server version the client has reached: changesets
   * within BOOTSTRAP_CHANGESET_LIMITS, one per DOWNLOAD, `moreToCome` until the `lastInBatch`
   * one (the client applies them together).
   */
  async bootstrapView(session: FlexibleSession, next?: { version: number; tables: Parameters<FlexibleView['setQueries']>[1]; body: string }): Promise<void> {
    const engine = this.host.engine;
    const view = session.view;
    if (session.downloadsPaused) await session.downloadsPaused.resumed;
    if (!this.host.isLive(session)) return;
    // A subscription change's bootstrap brings the session's router back (TEST_COMMAND PAUSE_ROUTER_SESSION).
    session.routerPaused = false;
    // Timed from here, the wait for the history's queue included, as a partition's bootstrap and an upload are.
    const started = performance.now();
    let sent = false;
    await engine.run(FLEXIBLE_HISTORY, async () => {
      // A client with no subscription yet (a new client file, or a first QUERY) gets what any client with the
      // same queries and rule outcome gets: such a bootstrap is built once and shared.
      const fromNothing = (view.queryVersion === 0 || session.downloadServerVersion === 0) && view.holdsNothing();
      const queryVersion = next ? next.version : view.queryVersion;
      const body = next ? next.body : session.initialQueryBody;
      const sharedKey = fromNothing && body !== undefined && rulesOutcomeKeys.has(view.collections)
        ? `${rulesOutcomeKeys.get(view.collections)}\u0000${queryVersion}\u0000${session.schemaVersion?.serving ?? 0}\u0000${body}` : undefined;
      const history = session.history;
      const cached = sharedKey === undefined ? undefined : engine.sharedFlexibleBootstrap(sharedKey, history);
      // A client never goes back to an older server version: a bootstrap older than the client's version
      // serves when the history between them changed no object (a new client's schema upload, empty ones).
      // Like the platform's cached snapshots, it may be older than the latest version: the history after it
      // follows as for any client catching up, before the MARK that completes the query version.
      const shared = cached && history.since(cached.version).every((e) => e.version > session.downloadServerVersion || engine.entryChanges(e).objects.size === 0) ? cached : undefined;
      if (next) {
        // In the history's queue nothing is appended meanwhile: what the client holds is brought up to the
        // latest version under the old queries, so the bootstrap only adds and erases objects (a client
        // that was not bootstrapped yet gets this version's bootstrap alone; one that holds nothing needs
        // nothing brought up before a shared bootstrap).
        if (!shared) await this.host.pump(session);
        if (!this.host.isLive(session)) return;
        view.setQueries(next.version, next.tables);
      }
      session.bootstrapPending = false;
      if (shared) {
        sent = true;
        return this.sendBootstrap(session, shared.changesets, Math.max(shared.version, session.downloadServerVersion), shared.held);
      }
      const instructions = await view.bootstrap(await this.host.versioning.viewSchema(session.schemaVersion));
      if (!this.host.isLive(session)) return;
      const changesets = encodeChangesetBatches(instructions, BOOTSTRAP_CHANGESET_LIMITS);
      // The documents the bootstrap read hold everything up to the latest version, this client's uploads included.
      const version = session.history.latest;
      // Encoded once, sent to this client and to the next ones with the same queries and rule outcome.
      if (sharedKey !== undefined) engine.keepFlexibleBootstrap(sharedKey, { version, held: view.heldBytes(), changesets });
      sent = true;
      return this.sendBootstrap(session, changesets, version);
    }, this.host.user.id);
    if (sent) this.host.observer?.bootstrap((performance.now() - started) / 1000);
  }

  /**
   * Sends a bootstrap of the session's view (`held`: the objects a shared one brings, which the view takes
   * on) at `version` (its own, or the client's when no object changed since), then the history after it
   * through the view, as any client catches up.
   */
  async sendBootstrap(session: FlexibleSession, changesets: readonly Uint8Array[], atVersion: number, held?: Uint8Array): Promise<void> {
    const engine = this.host.engine;
    const view = session.view;
    if (held) view.holdAlso(held);
    // Later than any version the client has: its uploads made before it integrated the bootstrap are based
    // on an earlier one, so the engine knows to transform them against the bootstrap as the client did.
    const version = atVersion > session.downloadServerVersion ? atVersion : await engine.newServerVersion(session.history);
    session.downloadServerVersion = version;
    session.downloadClientVersion = Math.max(session.downloadClientVersion, session.clientFile.uploadClientVersion);
    // Once the client applies it, its IDENT names this query version.
    await view.record(engine.history.views, session.clientFile.ident, version);
    if (!this.host.isLive(session)) return;
    const timestamp = syncTimestamp(Date.now());
    engine.sentBootstraps.sent(session.clientFile.ident, {
      version, clientVersion: session.downloadClientVersion, originTimestamp: timestamp, originFileIdent: BigInt(SERVER_FILE_IDENT), changesets,
    });
    changesets.forEach((bytes, i) => {
      this.host.sendDownload(session, [{
        version: BigInt(version), lastIntegratedRemoteVersion: BigInt(session.downloadClientVersion), originTimestamp: timestamp,
        originFileIdent: BigInt(SERVER_FILE_IDENT), originalChangesetSize: bytes.length, instructions: [], bytes,
      }], i === changesets.length - 1 ? 'lastInBatch' : 'moreToCome', (i + 1) / changesets.length);
    });
    await this.host.pump(session);
  }

  /** Flexible IDENT: the active subscription set; a new client file gets its bootstrap, a known one resumes with its view. */
  async ident(session: FlexibleSession, query: { version: bigint; body: string } | undefined): Promise<void> {
    const view = session.view;
    const version = Number(query?.version ?? 0n);
    // A known file opened with another schema version than it last used: told to migrate, it syncs at the old one until then.
    const migrate = await this.host.versioning.knownClientFile(session.clientFile.ident, session.schemaVersion!);
    if (!this.host.isLive(session)) return;
    if (migrate) {
      this.host.log.info(`${this.host.describe(session)}: schema version ${session.schemaVersion!.bound} opened on a file of version ${session.schemaVersion!.serving}: the client migrates`);
      this.host.send({ type: 'json_error', errorCode: ErrorCode.schema_version_changed, session: session.ident, body: migrate });
    }
    // A client file may have records whatever its IDENT says (a bootstrap interrupted before it completed,
    // a resume at query version 0): the next ones follow them.
    view.recordSequence = await this.host.engine.history.views.nextSequence(session.clientFile.ident);
    if (!this.host.isLive(session)) return;
    if (version > 0) {
      const compiled = await this.compileQueries(session, version, query!.body);
      if (!this.host.isLive(session)) return;
      if (compiled.ok) {
        view.setQueries(version, compiled.tables);
        session.initialQueryBody = query!.body;
      }
    }
    if (session.downloadServerVersion === 0) {
      // As for partition sync: the client's first UPLOAD (its schema, offline writes) is integrated before
      // the bootstrap, which then says so, and the client need not transform it against every object.
      // Query version 0 (no subscription yet) is bootstrapped too, empty: its lastInBatch DOWNLOAD is what
      // moves the client's subscription set 0 to complete once the MARK comes back.
      session.bootstrapPending = true;
      setImmediate(() => this.host.enqueue(session, async () => {
        if (session.bootstrapPending) await this.bootstrapView(session);
      }));
      return;
    }
    if (session.downloadServerVersion > 0 && view.queryVersion > 0) await this.resumeView(session);
    await this.host.pump(session);
  }

  /**
   * A known client file resumes: it holds what its record says for the query version and server version its
   * IDENT names, so the history it has not seen erases what left its view meanwhile. The record is folded
   * into one snapshot at that point. Without a record (a file from before records were kept), the client is
   * taken to hold what its queries select now.
   */
  async resumeView(session: FlexibleSession): Promise<void> {
    const views = this.host.engine.history.views;
    const view = session.view;
    const ident = session.clientFile.ident;
    const recorded = await views.recorded(ident, view.queryVersion, session.downloadServerVersion);
    if (!recorded) {
      this.host.log.warn(`${this.host.describe(session)}: no record of what client file ${ident} holds at query version ${view.queryVersion}; taking it to hold what its queries select now`);
      await view.adopt();
      return;
    }
    view.restore(recorded.snapshot, recorded.changes);
    view.recordSequence = recorded.nextSequence;
    if (recorded.compactable) await views.compact(ident, view.recordSequence++, view.queryVersion, session.downloadServerVersion, view.heldBytes());
  }

  /**
   * A flexible upload: what the rules and the session's queries allow is applied; each rejected object is a
   * compensating write (JSON_ERROR 231 naming it, sent by the pump next to its revert's server version).
   */
  async integrate(session: FlexibleSession, changesets: UploadedChangeset[]): Promise<{ ok: true } | { ok: false; error: EngineError }> {
    const view = session.view;
    // An older schema version's upload, in the newest schema's terms (what only its version has is left out).
    const versioned = await this.host.versioning.schemas(session.schemaVersion);
    const projected = versioned ? projectUpload(changesets, versioned) : { ok: true as const, changesets };
    if (!projected.ok) return projected;
    const result = await this.host.engine.integrateFlexible(
      { clientFile: session.clientFile, userId: this.host.user.id, collections: view.collections, selects: (table, doc) => view.selects(table, doc), reverted: session.reverted },
      projected.changesets,
    );
    if (result.ok && result.rejected.length > 0) this.host.log.warn(`${this.host.describe(session)}: compensating write: ${result.rejected.map((r) => r.reason).join('; ')}`);
    return result;
  }

  /**
   * A compensating write, next to the server version of its revert: JSON_ERROR 231 naming the refused
   * objects, then a DOWNLOAD at that version that erases each on the client and brings back the server's
   * readable state when it is in view (the client reports the error once it integrated that version).
   */
  async sendCompensation(session: FlexibleSession, compensation: PendingCompensation): Promise<void> {
    const engine = this.host.engine;
    const view = session.view;
    const schema = await this.host.versioning.viewSchema(session.schemaVersion);
    const objects = decodeHeld(compensation.objects);
    const revert: Instruction[] = [];
    // The client keeps no asymmetric object once uploaded: there is nothing to put back.
    for (const o of objects) if (!schema.get(o.table)?.asymmetric) revert.push(...await view.revert(schema, o.table, o.object));
    if (!this.host.isLive(session)) return;
    const version = compensation.serverVersion;
    const rejected = {
      rejectedUpdates: objects.map((o, i) => ({ table: o.table, pk: encodeBase64PrimaryKey(o.object), reason: compensation.reasons[i] ?? '' })),
      rejectedClientVersion: compensation.clientVersion,
    };
    view.noteChanges(version);
    await view.record(engine.history.views, session.clientFile.ident);
    if (!this.host.isLive(session)) return;
    session.downloadServerVersion = version;
    const revertDownload: ChangesetEntry = {
      version: BigInt(version), lastIntegratedRemoteVersion: BigInt(session.downloadClientVersion), originTimestamp: syncTimestamp(Date.now()),
      originFileIdent: BigInt(SERVER_FILE_IDENT), originalChangesetSize: 0, instructions: revert,
    };
    if (objects.every((o) => schema.get(o.table)?.asymmetric)) {
      // Nothing can be put back, so the write is refused outright (write_not_allowed, no server version), which
      // ends the session. The DOWNLOAD goes first: it acknowledges the upload, so a reset does not send it again.
      this.host.sendDownload(session, [revertDownload]);
      return this.host.sessionError(session, SYNC_ERRORS.writeNotAllowed(compensation.reasons.join('; ')), rejected);
    }
    this.host.send({
      type: 'json_error', errorCode: ErrorCode.compensating_write, session: session.ident,
      body: {
        message: `Client attempted a write that is not allowed; it has been reverted: ${compensation.reasons.join('; ')}`,
        tryAgain: true, action: 'Warning', shouldClientReset: false, isRecoveryModeDisabled: engine.service.runtimeState.running?.settings.isRecoveryModeDisabled ?? false, logURL: '',
        ...rejected,
        compensatingWriteServerVersion: version,
      },
    });
    // Sent even with nothing to revert: the client reports the compensating write once it integrates a changeset of that version.
    this.host.sendDownload(session, [revertDownload]);
  }
}
