// Rule-checked data access (config-format §7.4, rules-and-sync §1): a `StoreCollection` per user and
// request that enforces the collection's roles, document filters, field permissions and filters, and
// validates writes against the collection's schema. The system user gets the store itself.
//
// Decisions that follow the platform's documentation of roles without Device Sync:
// - A role is chosen per document: the first whose `apply_when` holds, with `%%root` the document
//   (for writes the document after the change, `%%prevRoot` the one before). No role → the document is
//   invisible to reads and a write is refused with NoMatchingRuleFound.
// - `document_filters.read` / `.write` are queries: they are pushed into the store query and checked
//   again per document. A document matching only the write filter is readable too (write implies read).
//   Writes affect only documents inside the chosen role's write filter, and may not move a document
//   out of it.
// - Document-level `read` / `write` true grant every field; otherwise `fields` / `additional_fields`
//   decide field by field (a writable field is readable). Unreadable fields are left out of results.
// - `filters[]` whose `apply_when` holds add their `query` to every operation and their `projection`
//   to every result.
// - A query (read or write) sees each document as the caller may read it: when its filter or sort names
//   a field some role may hide, it runs in memory on the readable views, not in the store.
import { BSON, ObjectId } from 'bson';
import { Query } from '../store/regex';
import { aggregateDocuments, evaluateAggregation } from '../store/evaluator';
import { EvaluationTooLong } from '../store/evaluation-limits';
import { evaluateExpression, expandExpressionToQuery, syncIncompatibilities, type EvaluationEnv } from '../../core/rules';
import { queryableFieldsOf } from '../../core/rql';
import type { AppModel, DataSource } from '../../core/model';
import { cloneStored, toComparable, toStorable, valueKey } from '../store/bson-values';
import {
  RUNTIME_DATABASES, StoreError, StoreErrorCode,
  type CountOptions, type DeleteResult, type Document, type DocumentStore, type Filter, type FindOneAndDeleteOptions,
  type FindOneAndModifyOptions, type FindOptions, type InsertManyResult, type InsertOneResult, type Projection,
  type SortSpec, type StoreCollection, type UpdateResult, type UpdateSpec, type UpsertOptions,
} from '../store/types';
import { applyUpdate, prepareUpdate, seedFromFilter } from '../store/update';
import { byId } from '../store/types';
import { describeViolation, findPipelineViolation, MAX_PIPELINE_DEPTH } from '../store/pipeline-check';
import { DataAccessError, noMatchingRole, notPermitted } from './errors';
import { compileRules, isRecord, NO_RULES, TRUE, type CollectionRules, type CompiledRole, type FieldRule, type Permission } from './rules';
import { compileSchema, writeValidationSettings, type SchemaValidator, type WriteValidationSettings } from './schema';
import type { FunctionUser } from '../functions';
import { updateBetween } from '../store/changes';
import { compiledQuery } from '../store/query-cache';

/** `%%user` (rules-and-sync §1.2): the same user functions see as `context.user`. */
export type DataAccessUser = FunctionUser;

/** `'system'`: system functions and the runtime itself, which bypass rules and schema validation. */
export type DataPrincipal = DataAccessUser | 'system';

export interface DataAccessOptions {
  app: AppModel;
  store: DocumentStore;
  /** Runs an app function for `%function` in rules, on behalf of the user. */
  callFunction?(name: string, args: unknown[], user: DataAccessUser): Promise<unknown>;
  /** App values by name, secrets resolved (`%%values`). */
  values?: Record<string, unknown>;
  /** `%%environment`. */
  environment?: { tag?: string; values?: Record<string, unknown> };
  /** Clock for `$currentDate` in updates; defaults to the system clock. */
  now?: () => Date;
  /** Told about writes that fail schema validation while `write_validation_action` is `WARN`. */
  onWarning?(message: string): void;
}

/** A collection as a caller may use it: the store's interface, and a question about a write put without writing it. */
export interface RuleCheckedCollection extends StoreCollection {
  /** Whether the rules let the caller turn `prev` into `next` (null: no document), without writing. */
  permits(prev: Document | null, next: Document | null): Promise<boolean>;
}

export interface DataScope {
  /** A collection of a data source as this user may use it. */
  collection(dataSource: string, database: string, collection: string): RuleCheckedCollection;
}

export interface DataAccess {
  forUser(user: DataPrincipal, request?: Record<string, unknown>): DataScope;
  /**
   * A flexible sync session's collections: roles assigned as the platform assigns them to a session (the
   * first whose apply_when holds with no document; none when that one is not Sync compatible); a document
   * read in part is read with its `_id`.
   */
  forSyncSession(user: DataAccessUser): DataScope;
  /** Whether some collection's rules read `%%user` (or call a function): if not, every user gets the same outcome. */
  readonly rulesReadUser: boolean;
}

/** Everything about one collection that does not depend on the user, compiled once. */
interface CollectionPolicy {
  readonly rules: CollectionRules;
  readonly validator?: SchemaValidator;
  /**
   * Flexible sync sessions: the collection's queryable fields. The session's role is assigned once, with no
   * document, and must be Sync compatible (prepareSyncRules).
   */
  readonly syncQueryable?: ReadonlySet<string>;
}

export function createDataAccess(options: DataAccessOptions): DataAccess {
  const settings = writeValidationSettings(options.app.graphql.validationSettings?.value);
  const policies = new Map<string, CollectionPolicy>();
  const defaultPolicies = new Map<string, CollectionPolicy>();
  for (const source of options.app.dataSources) {
    const fallback: CollectionPolicy = { rules: source.defaultRule ? compileRules(source.defaultRule.value, 'default') : NO_RULES };
    defaultPolicies.set(source.name, fallback);
    for (const coll of source.collections) {
      const rules = coll.rules ? compileRules(coll.rules.value, 'collection') : fallback.rules;
      const validator = compileSchema(coll.schema?.value);
      policies.set(policyKey(source.name, coll.database, coll.collection), { rules, ...(validator ? { validator } : {}) });
    }
  }
  const sources = new Map<string, DataSource>(options.app.dataSources.map((d) => [d.name, d]));
  const userScopes = new WeakMap<DataAccessUser, DataScope>();
  const someRulesCallFunctions = [...policies.values(), ...defaultPolicies.values()].some((policy) => policy.rules.callsFunctions);
  /** A DataScope whose collections share one RequestScope, made when first needed. */
  const scopeOf = (makeScope: () => RequestScope, policyOf = policyFor): DataScope => {
    let scope: RequestScope | undefined;
    const collections = new Map<string, RuledCollection>();
    return {
      collection(dataSource, database, collection) {
        const key = policyKey(dataSource, database, collection);
        let ruled = collections.get(key);
        if (!ruled) {
          const policy = policyOf(dataSource, database, collection);
          ruled = new RuledCollection((scope ??= makeScope()), policy, options.store.collection(database, collection));
          collections.set(key, ruled);
        }
        return ruled;
      },
    };
  };

  const policyFor = (dataSource: string, database: string, collection: string): CollectionPolicy => {
    if (!sources.has(dataSource)) {
      throw new DataAccessError('ServiceNotFound', `data source '${dataSource}' is not defined in this app (defined: ${[...sources.keys()].join(', ') || 'none'})`);
    }
    // Not even a rule the app writes for it opens the runtime's own data to users.
    if (RUNTIME_DATABASES.has(database)) return INTERNAL_POLICY;
    return policies.get(policyKey(dataSource, database, collection)) ?? defaultPolicies.get(dataSource)!;
  };

  const syncPolicies = new Map<string, CollectionPolicy>();
  const syncSettings = options.app.sync?.type === 'flexible' && isRecord(options.app.sync.file.value) ? options.app.sync.file.value : {};
  const syncPolicyFor = (dataSource: string, database: string, collection: string): CollectionPolicy => {
    const key = policyKey(dataSource, database, collection);
    let policy = syncPolicies.get(key);
    if (!policy) {
      const title = sources.get(dataSource)?.collections.find((c) => c.database === database && c.collection === collection)?.schema?.value;
      const table = isRecord(title) && typeof title.title === 'string' ? title.title : collection;
      policy = { ...policyFor(dataSource, database, collection), syncQueryable: queryableFieldsOf(syncSettings, table, collection) };
      syncPolicies.set(key, policy);
    }
    return policy;
  };
  const syncScopes = new WeakMap<DataAccessUser, DataScope>();

  return {
    rulesReadUser: [...policies.values(), ...defaultPolicies.values()].some((policy) => policy.rules.readsUser),
    forSyncSession(user) {
      let scope = syncScopes.get(user);
      if (!scope) syncScopes.set(user, (scope = scopeOf(() => new RequestScope(options, user, undefined, settings), syncPolicyFor)));
      return scope;
    },
    forUser(principal, request) {
      if (principal === 'system') {
        return {
          collection(dataSource, database, collection) {
            policyFor(dataSource, database, collection);
            // The platform offers app code no way into sync's private history either; only the runtime's
            // own code (sync, auth) reaches these databases, through the store itself.
            if (RUNTIME_DATABASES.has(database)) {
              throw notPermitted('access', `database '${database}' holds the runtime's own records and is not reachable from app code`);
            }
            return withPipelineTargetsChecked(options.store.collection(database, collection));
          },
        };
      }
      const requestScope = (): RequestScope => new RequestScope(options, principal, request, settings);
      if (request !== undefined) return scopeOf(requestScope);
      // Without a request (whose details rules may read), decisions that depend only on the user, the
      // values and the environment outlive the request: one scope per user object serves every request
      // for collections whose rules call no function; those get a scope of this request's own.
      let lasting = userScopes.get(principal);
      if (!lasting) userScopes.set(principal, (lasting = scopeOf(requestScope)));
      if (!someRulesCallFunctions) return lasting;
      const own = scopeOf(requestScope);
      return {
        collection(dataSource, database, collection) {
          const policy = policyFor(dataSource, database, collection);
          return (policy.rules.callsFunctions ? own : lasting).collection(dataSource, database, collection);
        },
      };
    },
  };
}

/** The runtime's own databases (RUNTIME_DATABASES): users get them as a namespace without rules (reads find nothing, writes NoMatchingRuleFound); system code is refused. */
const INTERNAL_POLICY: CollectionPolicy = { rules: NO_RULES };

/** A system collection whose pipelines may not name an internal database as a `$lookup`/`$out`/`$merge`/… target. */
function withPipelineTargetsChecked(collection: StoreCollection): RuleCheckedCollection {
  const aggregate = (pipeline: Document[]): Promise<Document[]> => {
    const violation = findPipelineViolation(pipeline, { allowCrossCollection: true, refusedDatabases: RUNTIME_DATABASES });
    if (violation) return Promise.reject(notPermitted('aggregate', describeViolation(violation)));
    return collection.aggregate(pipeline);
  };
  return new Proxy(collection as RuleCheckedCollection, {
    get(target, key) {
      if (key === 'aggregate') return aggregate;
      // The system bypasses rules: every write is permitted.
      if (key === 'permits') return () => Promise.resolve(true);
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function policyKey(dataSource: string, database: string, collection: string): string {
  return `${dataSource}\u0000${database}\u0000${collection}`;
}

// ---------------------------------------------------------------------------------------------------
// Per request: user-only decisions, made once per collection policy.

type DocumentTest = (doc: Document) => boolean;

interface Candidate {
  readonly role: CompiledRole;
  /** `apply_when` is known to hold for this user whatever the document. */
  readonly decided: boolean;
  readonly readQuery?: Document;
  readonly writeQuery?: Document;
  readonly inReadFilter: DocumentTest;
  readonly inWriteFilter: DocumentTest;
  /** Read and write filters are the same query (the common case), so one test answers both. */
  readonly sameFilters: boolean;
}

interface Prepared {
  /** Roles that may apply to some document, in order; empty → no role for this user. */
  readonly candidates: readonly Candidate[];
  readonly userValues: ReadonlyMap<Permission, boolean>;
  /** Store query every readable document matches (`{}` = no restriction). */
  readonly readScope: Document;
  /** Store query every writable document matches. */
  readonly writeScope: Document;
  /** The queries of the filters that apply, combined. */
  readonly filterQuery: Document;
  /** `filterQuery` tested on a document in memory. */
  readonly inFilterQuery: DocumentTest;
  readonly projections: readonly Projection[];
  /** Every document the store query returns is readable, so skip/limit can be left to the store. */
  readonly exactRead: boolean;
  /** The first document in the write scope is the one a single-document write changes. */
  readonly exactWrite: boolean;
  /** One role applies whatever the document and reads whole documents: every document in the read scope is readable as it is. */
  readonly wholeDocumentsInScope: boolean;
  /**
   * Flexible sync: the `_id` of a document with anything readable is readable too (the object's identity on
   * the client; a Sync-compatible role has no field rule for it).
   */
  readonly syncIdentity?: boolean;
}

/**
 * The user's rule decisions per collection policy, made once: for one request, or, for policies whose
 * rules call no function and without request details, for every request of the same user object (the
 * authentication layer hands out the same object for the same session and user record): such
 * decisions depend only on the user, the values and the environment, fixed for that object and this
 * app version.
 */
class RequestScope {
  readonly env: EvaluationEnv;
  private readonly prepared = new Map<CollectionPolicy, Promise<Prepared>>();

  constructor(
    readonly options: DataAccessOptions,
    readonly user: DataAccessUser,
    request: Record<string, unknown> | undefined,
    readonly settings: WriteValidationSettings,
  ) {
    const call = options.callFunction;
    this.env = {
      user,
      values: options.values ?? {},
      environment: options.environment ?? { tag: '', values: {} },
      ...(request ? { request } : {}),
      ...(call ? { callFunction: (name: string, args: unknown[]) => call(name, args, user) } : {}),
    };
  }

  prepare(policy: CollectionPolicy): Promise<Prepared> {
    let prepared = this.prepared.get(policy);
    if (!prepared) {
      prepared = policy.syncQueryable ? prepareSyncRules(policy.rules, this.env, policy.syncQueryable) : prepareRules(policy.rules, this.env);
      this.prepared.set(policy, prepared);
      // A failed evaluation is reported to the requests waiting for it; the next one tries again.
      prepared.catch(() => { if (this.prepared.get(policy) === prepared) this.prepared.delete(policy); });
    }
    return prepared;
  }
}

/**
 * A flexible sync session's rule decisions: its role is the first whose apply_when holds when the session
 * starts, with no document (a field it names reads as missing), as the platform assigns it; other roles
 * are never considered, and when that role is not Sync compatible the session gets no access at all.
 */
async function prepareSyncRules(rules: CollectionRules, env: EvaluationEnv, queryable: ReadonlySet<string>): Promise<Prepared> {
  for (const role of rules.roles) {
    const applies = role.applyWhen.kind === 'const' ? role.applyWhen.value : await evaluateExpression(role.applyWhen.expr, { ...env, root: {} });
    if (!applies) continue;
    const assigned = syncIncompatibilities(role.config, queryable).length === 0 ? [{ ...role, applyWhen: TRUE }] : [];
    return { ...(await prepareRules({ ...rules, roles: assigned }, env)), syncIdentity: true };
  }
  return { ...(await prepareRules({ ...rules, roles: [] }, env)), syncIdentity: true };
}

async function prepareRules(rules: CollectionRules, env: EvaluationEnv): Promise<Prepared> {
  const userValues = new Map<Permission, boolean>();
  const decide = async (p: Permission): Promise<boolean> => {
    if (p.kind === 'const') return p.value;
    let value = userValues.get(p);
    if (value === undefined) {
      value = await evaluateExpression(p.expr, env);
      userValues.set(p, value);
    }
    return value;
  };
  const candidates: Candidate[] = [];
  for (const role of rules.roles) {
    const applyWhen = role.applyWhen;
    const decided = applyWhen.kind === 'const' || !applyWhen.usesDocument;
    if (decided && !(await decide(applyWhen))) continue;
    for (const p of role.userPermissions) await decide(p);
    const readQuery = role.readFilter === undefined ? undefined : await expandExpressionToQuery(role.readFilter, env);
    const writeQuery = role.writeFilter === undefined ? undefined : await expandExpressionToQuery(role.writeFilter, env);
    candidates.push({
      role, decided, readQuery, writeQuery, inReadFilter: documentTest(readQuery), inWriteFilter: documentTest(writeQuery),
      sameFilters: sameValue(readQuery ?? {}, writeQuery ?? {}),
    });
    // Later roles can never be chosen once one applies whatever the document.
    if (decided) break;
  }
  const filterQueries: Document[] = [];
  const projections: Projection[] = [];
  for (const filter of rules.filters) {
    if (!(await decide(filter.applyWhen))) continue;
    filterQueries.push(await expandExpressionToQuery(filter.query, env));
    if (filter.projection) projections.push(filter.projection);
  }
  const single = candidates.length === 1 && candidates[0].decided ? candidates[0] : undefined;
  const knownTrue = (p: Permission): boolean => known(p, userValues) === true;
  const idRule = single ? (single.role.fields.get('_id') ?? single.role.additional) : undefined;
  return {
    candidates,
    userValues,
    readScope: union(candidates.map((c) => (c.readQuery && c.writeQuery ? union([c.readQuery, c.writeQuery]) : {}))),
    writeScope: union(candidates.map((c) => c.writeQuery ?? {})),
    filterQuery: and(filterQueries),
    inFilterQuery: documentTest(filterQueries.length > 0 ? and(filterQueries) : undefined),
    projections,
    exactRead: single !== undefined
      && (knownTrue(single.role.read) || (idRule !== undefined && (knownTrue(idRule.read) || knownTrue(idRule.write)))),
    exactWrite: single !== undefined,
    wholeDocumentsInScope: single !== undefined && knownTrue(single.role.read),
  };
}

/** An in-memory test of a (pushed-down) query, for checking each document again. */
function documentTest(query: Document | undefined): DocumentTest {
  if (query === undefined || Object.keys(query).length === 0) return () => true;
  let compiled: Query;
  try {
    compiled = compiledQuery(toComparable(toStorable(query)) as Document);
  } catch {
    return () => false;
  }
  return (doc) => {
    try {
      return compiled.test(toComparable(doc) as Document);
    } catch {
      return false;
    }
  };
}

function isEmptyQuery(query: Document): boolean {
  return Object.keys(query).length === 0;
}

function and(parts: Document[]): Document {
  const nonEmpty = parts.filter((part) => !isEmptyQuery(part));
  if (nonEmpty.length === 0) return {};
  return nonEmpty.length === 1 ? nonEmpty[0] : { $and: nonEmpty };
}

/** Queries matching documents any of the parts matches; no parts → nothing matches. */
function union(parts: Document[]): Document {
  if (parts.length === 0) return { $nor: [{}] };
  if (parts.some(isEmptyQuery)) return {};
  // Roles usually give the same query for read and write; one copy keeps the store query an equality.
  const distinct = parts.filter((part, i) => parts.findIndex((other) => sameValue(other, part)) === i);
  return distinct.length === 1 ? distinct[0] : { $or: distinct };
}

// ---------------------------------------------------------------------------------------------------
// Per-document decisions, written once as generators: they yield each document-dependent expression
// they need. Run synchronously while every answer is known, asynchronously from the first that is not.

interface DocumentEnv {
  root?: unknown;
  prevRoot?: unknown;
  this?: unknown;
  prev?: unknown;
}

interface Need { expr: Record<string, unknown>; env: DocumentEnv }

type Decision<T> = Generator<Need, T, boolean>;

/** The value of a permission when it does not depend on the document; undefined otherwise. */
function known(p: Permission, userValues: ReadonlyMap<Permission, boolean>): boolean | undefined {
  if (p.kind === 'const') return p.value;
  if (!p.usesDocument) return userValues.get(p) ?? false;
  return undefined;
}

function* holds(p: Permission, userValues: ReadonlyMap<Permission, boolean>, env: DocumentEnv): Decision<boolean> {
  const value = known(p, userValues);
  if (value !== undefined) return value;
  return yield { expr: (p as { expr: Record<string, unknown> }).expr, env };
}

/** Like `holds` for a field rule: the field's env (`%%this`, `%%prev`) is built only when it is needed. */
function* fieldHolds(
  p: Permission, userValues: ReadonlyMap<Permission, boolean>, env: DocumentEnv, value: unknown, previous?: unknown,
): Decision<boolean> {
  const decided = known(p, userValues);
  if (decided !== undefined) return decided;
  return yield { expr: (p as { expr: Record<string, unknown> }).expr, env: { ...env, this: value, prev: previous } };
}

function* selectRole(prepared: Prepared, env: DocumentEnv): Decision<Candidate | undefined> {
  for (const candidate of prepared.candidates) {
    if (candidate.decided || (yield* holds(candidate.role.applyWhen, prepared.userValues, env))) return candidate;
  }
  return undefined;
}

/**
 * The document as the user may read it, or undefined when it is invisible to them. `fromReadScope`: the
 * store found the document with a query that included `readScope`; with a single candidate role that
 * already proves it lies in the role's read or write filter, so the filters are not tested again.
 */
function* readView(prepared: Prepared, doc: Document, fromReadScope: boolean): Decision<Document | undefined> {
  const env: DocumentEnv = { root: doc };
  const candidate = yield* selectRole(prepared, env);
  if (!candidate) return undefined;
  let inRead: boolean | undefined;
  let inWrite: boolean | undefined;
  const inReadFilter = (): boolean => (inRead ??= candidate.inReadFilter(doc));
  const inWriteFilter = (): boolean => (inWrite ??= candidate.sameFilters ? inReadFilter() : candidate.inWriteFilter(doc));
  const inScope = fromReadScope && prepared.candidates.length === 1;
  if (!inScope && !inReadFilter() && !inWriteFilter()) return undefined;
  const { role } = candidate;
  const values = prepared.userValues;
  if (yield* holds(role.read, values, env)) return doc;
  if (known(role.write, values) !== false && inWriteFilter() && (yield* holds(role.write, values, env))) return doc;
  const view = yield* readableFields(role.fields, role.additional, doc, env, values);
  if (Object.keys(view).length === 0) return undefined;
  return prepared.syncIdentity && !Object.hasOwn(view, '_id') ? { _id: doc._id, ...view } : view;
}

function* readableFields(
  fields: ReadonlyMap<string, FieldRule> | undefined, additional: FieldRule | undefined, object: Document,
  env: DocumentEnv, values: ReadonlyMap<Permission, boolean>,
): Decision<Document> {
  const out: Document = {};
  for (const key of Object.keys(object)) {
    const value = object[key];
    const rule = fields?.get(key) ?? additional;
    if (!rule) continue;
    if ((yield* fieldHolds(rule.read, values, env, value)) || (yield* fieldHolds(rule.write, values, env, value))) {
      out[key] = value;
    } else if (rule.fields || rule.additional) {
      const nested = yield* readableNested(rule, value, env, values);
      if (nested !== undefined) out[key] = nested;
    }
  }
  return out;
}

/** The readable part of an embedded object (or of each object of an array) under a field's sub-rules. */
function* readableNested(rule: FieldRule, value: unknown, env: DocumentEnv, values: ReadonlyMap<Permission, boolean>): Decision<unknown> {
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (const item of value) {
      const readable = yield* readableNested(rule, item, env, values);
      if (readable !== undefined) items.push(readable);
    }
    return items.length > 0 ? items : undefined;
  }
  if (!isRecord(value)) return undefined;
  const readable = yield* readableFields(rule.fields, rule.additional, value, env, values);
  return Object.keys(readable).length > 0 ? readable : undefined;
}

/**
 * Checks a write of `next` (replacing `prev`, or inserting when `prev` is undefined). Returns false
 * when `prev` lies outside the chosen role's write filter, so the write leaves it alone.
 */
function* checkWrite(prepared: Prepared, prev: Document | undefined, next: Document, namespace: string): Decision<boolean> {
  const action = prev === undefined ? 'insert' : 'update';
  const env: DocumentEnv = prev === undefined ? { root: next } : { root: next, prevRoot: prev };
  const candidate = yield* selectRole(prepared, env);
  if (!candidate) throw noMatchingRole(action, namespace);
  const { role } = candidate;
  const values = prepared.userValues;
  if (prev === undefined) {
    if (!(yield* holds(role.insert, values, env))) throw notPermitted('insert', `role '${role.name}' may not insert documents`);
    if (!candidate.inWriteFilter(next)) throw notPermitted('insert', `the document does not match the write filter of role '${role.name}'`);
  } else {
    if (!candidate.inWriteFilter(prev)) return false;
    if (!candidate.inWriteFilter(next)) throw notPermitted('update', `the change would move the document out of the write filter of role '${role.name}'`);
  }
  if (yield* holds(role.write, values, env)) return true;
  yield* checkFieldWrites(role.fields, role.additional, prev, next, '', env, values, action);
  return true;
}

function* checkFieldWrites(
  fields: ReadonlyMap<string, FieldRule> | undefined, additional: FieldRule | undefined,
  prev: Document | undefined, next: Document | undefined, path: string, env: DocumentEnv,
  values: ReadonlyMap<Permission, boolean>, action: string,
): Decision<void> {
  const keys = new Set([...Object.keys(prev ?? {}), ...Object.keys(next ?? {})]);
  for (const key of keys) {
    // `_id` is the document's identity, fixed at insert and immutable after.
    if (path === '' && key === '_id') continue;
    const before = prev?.[key];
    const after = next?.[key];
    if (sameValue(before, after)) continue;
    const fieldPath = path ? `${path}.${key}` : key;
    const rule = fields?.get(key) ?? additional;
    if (rule) {
      if (yield* fieldHolds(rule.write, values, env, after, before)) continue;
      const nestable = (v: unknown): v is Document | undefined => v === undefined || isRecord(v);
      if ((rule.fields || rule.additional) && nestable(before) && nestable(after)) {
        yield* checkFieldWrites(rule.fields, rule.additional, before, after, fieldPath, env, values, action);
        continue;
      }
    }
    throw notPermitted(action, `field "${fieldPath}" is not writable`);
  }
}

function* checkDelete(prepared: Prepared, doc: Document, namespace: string): Decision<boolean> {
  const env: DocumentEnv = { root: doc };
  const candidate = yield* selectRole(prepared, env);
  if (!candidate) throw noMatchingRole('delete', namespace);
  if (!candidate.inWriteFilter(doc)) return false;
  if (!(yield* holds(candidate.role.delete, prepared.userValues, env))) {
    throw notPermitted('delete', `role '${candidate.role.name}' may not delete documents`);
  }
  return true;
}

/** Equality for change detection: bson-typed, key order ignored, no array-contains rule. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  }
  if (isRecord(a) || isRecord(b)) {
    if (!isRecord(a) || !isRecord(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && sameValue(a[key], b[key]));
  }
  if (typeof a === 'object' || typeof b === 'object' || typeof a === typeof b) return valueKey(a) === valueKey(b) && typeOf(a) === typeOf(b);
  return false;
}

/** Keeps `true` and `1` (equal as MongoDB keys) apart for change detection. */
function typeOf(value: unknown): string {
  if (typeof value !== 'object' || value === null) return typeof value === 'bigint' ? 'number' : typeof value;
  const tag = (value as { _bsontype?: string })._bsontype;
  return tag === 'Int32' || tag === 'Double' || tag === 'Long' || tag === 'Decimal128' ? 'number' : tag ?? 'object';
}

// ---------------------------------------------------------------------------------------------------

const SEARCH_STAGES = new Set(['$search', '$searchMeta']);

/** How a write turns each matched document into its new version, and what an upsert inserts. */
interface WritePlan {
  kind: 'update' | 'replace';
  change: (prev: Document) => Document;
  seed: () => Document;
  /** Why the update is invalid: refused without an upsert, and for each document it matches. */
  invalid?: unknown;
}

interface Change { prev: Document; next: Document }

class RuledCollection implements RuleCheckedCollection {
  private readonly namespace: string;

  constructor(private readonly scope: RequestScope, private readonly policy: CollectionPolicy, private readonly inner: StoreCollection) {
    this.namespace = `${inner.database}.${inner.name}`;
  }

  get database(): string {
    return this.inner.database;
  }

  get name(): string {
    return this.inner.name;
  }

  private run<T>(decision: Decision<T>): T | Promise<T> {
    const step = decision.next();
    if (step.done) return step.value;
    return this.continueAsync(decision, step.value);
  }

  private async continueAsync<T>(decision: Decision<T>, first: Need): Promise<T> {
    let need = first;
    for (;;) {
      const answer = await evaluateExpression(need.expr, { ...this.scope.env, ...need.env });
      const step = decision.next(answer);
      if (step.done) return step.value;
      need = step.value;
    }
  }

  /**
   * Readable views of documents in order, invisible ones left out, projections applied. `fromReadScope`:
   * the documents come from a store query that included `prepared.readScope`.
   */
  private async views(prepared: Prepared, docs: Document[], fromReadScope: boolean, projection?: Projection): Promise<Document[]> {
    // The common case decided once: the only role applies to every document, which the read scope
    // places in its filters, and it reads whole documents. (readView would return each as it is.)
    if (fromReadScope && prepared.wholeDocumentsInScope) return project(docs, prepared.projections, projection);
    const out: Document[] = [];
    for (const doc of docs) {
      const result = this.run(readView(prepared, doc, fromReadScope));
      const view = result instanceof Promise ? await result : result;
      if (view) out.push(view);
    }
    return project(out, prepared.projections, projection);
  }

  async find(filter: Filter = {}, options: FindOptions = {}): Promise<Document[]> {
    const prepared = await this.scope.prepare(this.policy);
    if (prepared.candidates.length === 0) return [];
    if (!queriesReadableFieldsOnly(prepared, filter, options.sort)) {
      const matching = await this.matchingViews(prepared, and([prepared.readScope, prepared.filterQuery]), true, filter, options.sort);
      return project(page(matching, options).map((m) => m.view), [], options.projection);
    }
    const query = and([filter, prepared.readScope, prepared.filterQuery]);
    if (prepared.exactRead) {
      const docs = await this.inner.find(query, withoutProjection(options));
      return this.views(prepared, docs, true, options.projection);
    }
    const docs = await this.inner.find(query, options.sort ? { sort: options.sort } : {});
    return page(await this.views(prepared, docs, true, options.projection), options);
  }

  async findOne(filter: Filter = {}, options: Omit<FindOptions, 'limit'> = {}): Promise<Document | null> {
    return (await this.find(filter, { ...options, limit: 1 }))[0] ?? null;
  }

  async countDocuments(filter: Filter = {}, options: CountOptions = {}): Promise<number> {
    const prepared = await this.scope.prepare(this.policy);
    if (prepared.candidates.length === 0) return 0;
    if (!queriesReadableFieldsOnly(prepared, filter)) {
      return page(await this.matchingViews(prepared, and([prepared.readScope, prepared.filterQuery]), true, filter), options).length;
    }
    const query = and([filter, prepared.readScope, prepared.filterQuery]);
    if (prepared.exactRead) return this.inner.countDocuments(query, options);
    return page(await this.views(prepared, await this.inner.find(query), true), options).length;
  }

  /**
   * The documents of `scope` whose readable views match `filter`, in `sort` order, with their views: for
   * a query that names a field the caller may not read for some document, which must not match, order or
   * count by a value the caller cannot see. Views have the filters' projections applied.
   */
  private async matchingViews(prepared: Prepared, scope: Document, fromReadScope: boolean, filter: Filter, sort?: SortSpec): Promise<ReadableDocument[]> {
    const readable: ReadableDocument[] = [];
    for (const stored of await this.inner.find(scope)) {
      const result = this.run(readView(prepared, stored, fromReadScope));
      const view = result instanceof Promise ? await result : result;
      if (view) readable.push({ stored, view });
    }
    const views = project(readable.map((r) => r.view), prepared.projections, undefined);
    views.forEach((view, i) => { readable[i]!.view = view; });
    return selectInMemory(readable, filter, sort);
  }

  async aggregate(pipeline: Document[]): Promise<Document[]> {
    if (!Array.isArray(pipeline) || !pipeline.every(isRecord)) throw new DataAccessError('InvalidParameter', 'aggregate expects a pipeline: an array of stage documents');
    const stageNames = pipeline.map((stage) => Object.keys(stage)[0] ?? '');
    // At every depth: a $lookup inside $facet or a $unionWith pipeline reads another collection all the same.
    const violation = findPipelineViolation(pipeline, { allowCrossCollection: false });
    if (violation) throw notPermitted('aggregate', describeViolation(violation));
    const prepared = await this.scope.prepare(this.policy);
    if (prepared.candidates.length === 0) return [];
    const scope = and([prepared.readScope, prepared.filterQuery]);
    if (SEARCH_STAGES.has(stageNames[0])) {
      if (!prepared.candidates.some((c) => known(c.role.search, prepared.userValues) !== false)) throw notPermitted('search');
      return this.inner.aggregate([pipeline[0], ...(isEmptyQuery(scope) ? [] : [{ $match: scope }]), ...pipeline.slice(1)]);
    }
    const single = prepared.candidates[0];
    const wholeDocuments = prepared.exactRead && known(single.role.read, prepared.userValues) === true && prepared.projections.length === 0;
    if (wholeDocuments) return this.inner.aggregate([...(isEmptyQuery(scope) ? [] : [{ $match: scope }]), ...pipeline]);
    const readable = await this.views(prepared, await this.inner.find(scope), true);
    return aggregateDocuments(pipeline, readable);
  }

  async insertOne(doc: Document): Promise<InsertOneResult> {
    const [checked] = await this.checkInserts([doc]);
    return this.inner.insertOne(checked);
  }

  async insertMany(docs: Document[]): Promise<InsertManyResult> {
    if (!Array.isArray(docs)) throw new DataAccessError('InvalidParameter', 'insertMany expects an array of documents');
    return this.inner.insertMany(await this.checkInserts(docs));
  }

  /** The documents as they will be inserted (with an `_id`, as drivers add one), each checked. */
  private async checkInserts(docs: unknown[]): Promise<Document[]> {
    const prepared = await this.scope.prepare(this.policy);
    const checked: Document[] = [];
    for (const doc of docs) {
      if (!isRecord(doc)) throw new DataAccessError('InvalidParameter', 'a document to insert must be an object');
      const withId = doc._id === undefined ? { _id: new ObjectId(), ...doc } : doc;
      await this.run(checkWrite(prepared, undefined, withId, this.namespace));
      this.validate(undefined, withId, 'insert');
      checked.push(withId);
    }
    return checked;
  }

  private validate(prev: Document | undefined, next: Document, action: string): void {
    const validator = this.policy.validator;
    const { level, action: onFailure } = this.scope.settings;
    if (!validator || level === 'OFF') return;
    // MODERATE leaves documents that were already invalid alone, as MongoDB's validation level does.
    if (prev !== undefined && level === 'MODERATE' && validator(prev) !== undefined) return;
    const violation = validator(next);
    if (!violation) return;
    const message = `could not validate document for ${action} in ${this.namespace}: ${violation.message}`;
    if (onFailure === 'WARN') {
      this.scope.options.onWarning?.(message);
      return;
    }
    throw new DataAccessError('SchemaValidationFailedWrite', message, { field: violation.path });
  }

  /**
   * The stored documents in the write scope that `filter` selects, in `sort` order. A write's filter sees
   * documents as the caller may read them too: a matched count must not tell what a hidden field holds.
   */
  private async writeCandidates(prepared: Prepared, filter: Filter, many: boolean, sort?: SortSpec): Promise<Document[]> {
    const scope = and([prepared.writeScope, prepared.filterQuery]);
    if (!queriesReadableFieldsOnly(prepared, filter, sort)) {
      return (await this.matchingViews(prepared, scope, false, filter, sort)).map((m) => m.stored);
    }
    return this.inner.find(and([filter, scope]), { ...(sort ? { sort } : {}), ...(!many && prepared.exactWrite ? { limit: 1 } : {}) });
  }

  /** The documents a write changes, each checked; at most one unless `many`. */
  private async planChanges(filter: Filter, change: (prev: Document) => Document, many: boolean, sort?: SortSpec): Promise<Change[]> {
    const prepared = await this.scope.prepare(this.policy);
    if (prepared.candidates.length === 0) throw noMatchingRole('update', this.namespace);
    const docs = await this.writeCandidates(prepared, filter, many, sort);
    const changes: Change[] = [];
    for (const prev of docs) {
      const next = change(prev);
      if (!(await this.run(checkWrite(prepared, prev, next, this.namespace)))) continue;
      this.validate(prev, next, 'update');
      changes.push({ prev, next });
      if (!many) break;
    }
    return changes;
  }

  /** Writes checked changes; updates stay updates (not replacements) so change events and triggers see what the caller did. */
  private async applyChanges(changes: Change[], kind: WritePlan['kind']): Promise<number> {
    let modified = 0;
    for (const { prev, next } of changes) {
      if (sameValue(prev, next)) continue;
      if (kind === 'update') await this.inner.updateOne(byId(prev._id), updateBetween(prev, next));
      else await this.inner.replaceOne(byId(prev._id), next);
      modified++;
    }
    return modified;
  }

  /** Inserts the document an upsert creates, after the checks an insert gets. */
  private async upsert(doc: Document): Promise<Document> {
    const [checked] = await this.checkInserts([doc]);
    await this.inner.insertOne(checked);
    return checked;
  }

  /**
   * An update as a plan. An invalid update (an empty field path, an unknown operator) fails as the
   * database fails it, except for an upsert that matches nothing: the document it would insert cannot be
   * made, so there is nothing the rules could allow to be inserted, and the platform answered "insert not
   * permitted" (realm-core's `app: remote mongo client`, findOneAndUpdate with `{"": null}` and upsert).
   */
  private updated(filter: Filter, update: UpdateSpec): WritePlan {
    let prepared: ReturnType<typeof prepareUpdate>;
    try {
      prepared = prepareUpdate(update);
    } catch (invalid) {
      if (!(invalid instanceof StoreError)) throw invalid;
      return {
        kind: 'update', invalid,
        change: () => { throw invalid; },
        seed: () => { throw notPermitted('insert'); },
      };
    }
    const now = (this.scope.options.now ?? (() => new Date()))();
    return {
      kind: 'update',
      change: (prev) => {
        const next = cloneStored(prev);
        applyUpdate(next, prepared, { isInsert: false, now, filter });
        return next;
      },
      seed: () => {
        const doc = seedFromFilter(filter);
        applyUpdate(doc, prepared, { isInsert: true, now, filter });
        return doc;
      },
    };
  }

  private replaced(filter: Filter, replacement: Document): WritePlan {
    if (!isRecord(replacement) || Object.keys(replacement).some((key) => key.startsWith('$'))) {
      throw StoreError.badValue('Replacement must be a document without update operators');
    }
    const { _id: id, ...rest } = replacement;
    return {
      kind: 'replace',
      change: (prev) => {
        if (id !== undefined && valueKey(toStorable(id)) !== valueKey(prev._id)) {
          throw new StoreError('The _id field cannot be changed by a replacement', StoreErrorCode.ImmutableField, 'ImmutableField');
        }
        return { _id: prev._id, ...rest };
      },
      seed: () => {
        const seededId = id ?? seedFromFilter(filter)._id;
        return seededId === undefined ? { ...rest } : { _id: seededId, ...rest };
      },
    };
  }

  private async modify(
    filter: Filter, plan: WritePlan, many: boolean, upsert: boolean | undefined,
  ): Promise<UpdateResult> {
    if (plan.invalid !== undefined && !upsert) throw plan.invalid;
    const changes = await this.planChanges(filter, plan.change, many);
    if (changes.length === 0 && upsert) {
      const inserted = await this.upsert(plan.seed());
      return { matchedCount: 0, modifiedCount: 0, upsertedId: inserted._id };
    }
    return { matchedCount: changes.length, modifiedCount: await this.applyChanges(changes, plan.kind) };
  }

  updateOne(filter: Filter, update: UpdateSpec, options: UpsertOptions = {}): Promise<UpdateResult> {
    return this.modify(filter ?? {}, this.updated(filter ?? {}, update), false, options.upsert);
  }

  updateMany(filter: Filter, update: UpdateSpec, options: UpsertOptions = {}): Promise<UpdateResult> {
    return this.modify(filter ?? {}, this.updated(filter ?? {}, update), true, options.upsert);
  }

  replaceOne(filter: Filter, replacement: Document, options: UpsertOptions = {}): Promise<UpdateResult> {
    return this.modify(filter ?? {}, this.replaced(filter ?? {}, replacement), false, options.upsert);
  }

  private async findOneAndModify(
    filter: Filter, plan: WritePlan, options: FindOneAndModifyOptions,
  ): Promise<Document | null> {
    if (plan.invalid !== undefined && !options.upsert) throw plan.invalid;
    const [change] = await this.planChanges(filter, plan.change, false, options.sort);
    let result: Document | undefined;
    if (change) {
      await this.applyChanges([change], plan.kind);
      result = options.returnNewDocument ? change.next : change.prev;
    } else if (options.upsert) {
      const inserted = await this.upsert(plan.seed());
      if (options.returnNewDocument) result = inserted;
    }
    return result ? this.readable(result, options.projection) : null;
  }

  findOneAndUpdate(filter: Filter, update: UpdateSpec, options: FindOneAndModifyOptions = {}): Promise<Document | null> {
    return this.findOneAndModify(filter ?? {}, this.updated(filter ?? {}, update), options);
  }

  findOneAndReplace(filter: Filter, replacement: Document, options: FindOneAndModifyOptions = {}): Promise<Document | null> {
    return this.findOneAndModify(filter ?? {}, this.replaced(filter ?? {}, replacement), options);
  }

  /**
   * A document of this collection as the user may read it, decided in memory without a store query (what
   * `find` would return for it; flexible sync filters every change for each session so); null when hidden.
   */
  async readView(doc: Document): Promise<Document | null> {
    const prepared = await this.scope.prepare(this.policy);
    if (prepared.candidates.length === 0) return null;
    const stored = toStorable(doc) as Document;
    if (!prepared.inFilterQuery(stored)) return null;
    return (await this.views(prepared, [stored], false))[0] ?? null;
  }

  /** A document the caller just wrote, as they may read it back. */
  private async readable(doc: Document, projection?: Projection): Promise<Document | null> {
    const prepared = await this.scope.prepare(this.policy);
    const stored = toStorable(doc) as Document;
    return (await this.views(prepared, [stored], false, projection))[0] ?? null;
  }

  private async planDeletes(filter: Filter, many: boolean, sort?: SortSpec): Promise<Document[]> {
    const prepared = await this.scope.prepare(this.policy);
    if (prepared.candidates.length === 0) throw noMatchingRole('delete', this.namespace);
    const docs = await this.writeCandidates(prepared, filter ?? {}, many, sort);
    const doomed: Document[] = [];
    for (const doc of docs) {
      if (!(await this.run(checkDelete(prepared, doc, this.namespace)))) continue;
      doomed.push(doc);
      if (!many) break;
    }
    return doomed;
  }

  private async deleteAll(docs: Document[]): Promise<number> {
    if (docs.length === 0) return 0;
    const result = await this.inner.deleteMany({ _id: { $in: docs.map((doc) => doc._id) } });
    return result.deletedCount;
  }

  async deleteOne(filter: Filter): Promise<DeleteResult> {
    return { deletedCount: await this.deleteAll(await this.planDeletes(filter, false)) };
  }

  async deleteMany(filter: Filter = {}): Promise<DeleteResult> {
    return { deletedCount: await this.deleteAll(await this.planDeletes(filter, true)) };
  }

  async findOneAndDelete(filter: Filter, options: FindOneAndDeleteOptions = {}): Promise<Document | null> {
    const [doc] = await this.planDeletes(filter, false, options.sort);
    if (!doc) return null;
    await this.deleteAll([doc]);
    return this.readable(doc, options.projection);
  }

  createIndex(field: string): Promise<string> {
    return this.inner.createIndex(field);
  }

  async permits(prev: Document | null, next: Document | null): Promise<boolean> {
    const prepared = await this.scope.prepare(this.policy);
    if (prepared.candidates.length === 0) return false;
    try {
      if (next) return await this.run(checkWrite(prepared, prev ?? undefined, next, this.namespace));
      return prev === null || await this.run(checkDelete(prepared, prev, this.namespace));
    } catch (e) {
      if (e instanceof DataAccessError) return false;
      throw e;
    }
  }
}

/** A stored document with its view as the caller may read it. */
interface ReadableDocument { readonly stored: Document; view: Document }

/**
 * Whether every field `filter` and `sort` name is readable whole in every document the caller can see
 * (each candidate role reads it whatever the document, and no filter projection hides fields), so the
 * store can match and order stored documents as it would their views.
 */
function queriesReadableFieldsOnly(prepared: Prepared, filter: Filter, sort?: SortSpec): boolean {
  if (prepared.wholeDocumentsInScope && prepared.projections.length === 0) return true;
  const fields = new Set<string>();
  if (!collectFilterFields(filter, fields, 0)) return false;
  if (sort && isRecord(sort)) for (const key of Object.keys(sort)) fields.add(topLevelField(key));
  if (fields.size === 0) return true;
  if (prepared.projections.length > 0) return false;
  const values = prepared.userValues;
  return prepared.candidates.every(({ role }) => known(role.read, values) === true || [...fields].every((field) => {
    const rule = role.fields.get(field) ?? role.additional;
    return known(rule.read, values) === true || known(rule.write, values) === true;
  }));
}

/**
 * Adds the top-level fields a filter names; false when it may read fields it does not name (`$expr`,
 * `$where`, `$text`, any other top-level operator) or nests beyond the pipeline check's depth.
 */
function collectFilterFields(filter: unknown, fields: Set<string>, depth: number): boolean {
  if (!isRecord(filter) || depth > MAX_PIPELINE_DEPTH) return false;
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value) || !value.every((part) => collectFilterFields(part, fields, depth + 1))) return false;
    } else if (key.startsWith('$')) {
      return false;
    } else {
      fields.add(topLevelField(key));
    }
  }
  return true;
}

function topLevelField(path: string): string {
  const dot = path.indexOf('.');
  return dot < 0 ? path : path.slice(0, dot);
}

/**
 * Matches and orders documents by their views in memory, with the store's semantics (views in comparable
 * form, mingo): on this thread within the serving thread's budget, else on the evaluation worker.
 */
function selectInMemory(docs: ReadableDocument[], filter: Filter, sort?: SortSpec): Promise<ReadableDocument[]> {
  const violation = findPipelineViolation(filter, { allowCrossCollection: false }, 'filter');
  if (violation) throw notPermitted('find', describeViolation(violation));
  if (!isRecord(filter)) throw StoreError.badValue('A query filter must be a document');
  const stored = toStorable(filter, 'filter') as Document;
  const sorted = sort !== undefined && Object.keys(sort).length > 0;
  const failed = (error: unknown): Error => (error instanceof StoreError || error instanceof EvaluationTooLong
    ? error : StoreError.badValue(`Invalid query: ${(error as Error)?.message ?? String(error)}`));
  return evaluateAggregation(
    () => {
      const byComparable = new Map<Document, ReadableDocument>();
      const comparable = docs.map((doc) => {
        const view = toComparable(doc.view) as Document;
        // toComparable returns the view itself when nothing maps; two documents never share a view.
        byComparable.set(view, doc);
        return view;
      });
      try {
        let cursor = compiledQuery(toComparable(stored) as Document).find(comparable);
        if (sorted) cursor = cursor.sort(sort as Record<string, 1 | -1>);
        return (cursor.all() as Document[]).map((view) => byComparable.get(view)!);
      } catch (error) {
        throw failed(error);
      }
    },
    () => ({ pipeline: BSON.serialize({ p: [{ $match: stored }, ...(sorted ? [{ $sort: sort }] : [])] }), input: docs.map((doc) => BSON.serialize(doc.view)), collections: {}, selecting: true }),
    (outcome) => ('indices' in outcome ? outcome.indices.flatMap((i) => (docs[i] ? [docs[i]!] : [])) : []),
    failed,
  );
}

/** `skip` and `limit` applied to documents already matched and ordered. */
function page<T>(docs: T[], options: { skip?: number; limit?: number }): T[] {
  const skip = options.skip ?? 0;
  return options.limit ? docs.slice(skip, skip + options.limit) : docs.slice(skip);
}

function withoutProjection(options: FindOptions): FindOptions {
  if (options.projection === undefined) return options;
  const { projection: _projection, ...rest } = options;
  return rest;
}

/**
 * Applies the filters' projections, then the caller's. The store cannot apply the caller's projection
 * itself: roles and field rules must see whole documents.
 */
function project(docs: Document[], filterProjections: readonly Projection[], projection: Projection | undefined): Document[] {
  const all = [...filterProjections, ...(projection && Object.keys(projection).length > 0 ? [projection] : [])];
  if (all.length === 0 || docs.length === 0) return docs;
  let out = docs;
  try {
    for (const p of all) out = new Query({}).find(out, p).all() as Document[];
  } catch (error) {
    throw StoreError.badValue(`Invalid projection: ${(error as Error).message}`);
  }
  return out;
}
