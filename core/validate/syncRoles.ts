// Flexible sync gives each session its role once, when the session starts and before any document is read
// (the platform's "Sync-compatible roles"): the first role whose apply_when holds is the session's role, and
// when that role is not Sync compatible the session gets no access to the collection. This reports, at each
// role of a synced collection's rules (or of the default rule), what makes it incompatible, and an
// apply_when that reads document fields (decided with no document, where every field is missing).
//
// Codes: sync/role-not-sync-compatible, sync/apply-when-uses-document.
import type { DiagnosticSink } from '../diagnostics';
import { isObject, type JsonFile } from '../json';
import type { AppModel } from '../model';
import { queryableFieldsOf } from '../rql/fields';
import { syncIncompatibilities } from '../rules/sync-compatibility';

const DOCUMENT_EXPANSIONS = ['%%root', '%%prevRoot', '%%this', '%%prev'];

/**
 * `migration`: checks the roles as a partition-based app would run them once migrated to flexible sync, with
 * that flexible `sync/config.json` (file form) and only the collections holding the partition key.
 */
export function validateSyncRoles(app: AppModel, sink: DiagnosticSink, migration?: { settings: Record<string, unknown>; partitionKey: string }): void {
  const sync = app.sync;
  if (!sync || (!migration && (sync.type !== 'flexible' || !isObject(sync.file.value)))) return;
  const settings = migration?.settings ?? sync.file.value as Record<string, unknown>;
  const ds = app.dataSources.find((d) => d.name === sync.serviceName) ?? (sync.serviceName ? undefined : app.dataSources[0]);
  if (!ds) return;
  const reported = new Set<string>();
  for (const collection of ds.collections) {
    const schema = collection.schema?.value;
    if (!isObject(schema)) continue;
    if (migration && !(isObject(schema.properties) && Object.hasOwn(schema.properties, migration.partitionKey))) continue;
    if (sync.developmentModeEnabled && sync.databaseName && collection.database !== sync.databaseName) continue;
    const rules = collection.rules ?? ds.defaultRule;
    if (!rules || !isObject(rules.value) || !Array.isArray(rules.value.roles)) continue;
    const table = typeof schema.title === 'string' ? schema.title : collection.collection;
    const queryable = queryableFieldsOf(settings, table, collection.collection);
    const namespace = `${collection.database}.${collection.collection}`;
    rules.value.roles.forEach((role, index) => checkRole(rules, role, index, queryable, namespace, reported, sink));
  }
}

function checkRole(rules: JsonFile, role: unknown, index: number, queryable: ReadonlySet<string>, namespace: string, reported: Set<string>, sink: DiagnosticSink): void {
  const name = isObject(role) && typeof role.name === 'string' ? role.name : `role ${index + 1}`;
  const report = (path: (string | number)[], code: string, message: string) => {
    // The default rule serves several collections: each problem once.
    const key = `${rules.path}\u0000${JSON.stringify(path)}\u0000${message}`;
    if (reported.has(key)) return;
    reported.add(key);
    sink.at(rules, ['roles', index, ...path], 'warning', code, message);
  };
  for (const problem of syncIncompatibilities(role, queryable)) {
    report(problem.path, 'sync/role-not-sync-compatible',
      `Role "${name}" is not Sync compatible (${namespace}): ${problem.message}. A flexible sync session whose first applying role is this one gets no access, and later roles are not tried`);
  }
  if (isObject(role) && isObject(role.apply_when)) {
    const field = documentReference(role.apply_when, 0);
    if (field) {
      report(['apply_when'], 'sync/apply-when-uses-document',
        `Flexible sync decides apply_when once per session, with no document: ${field} reads as missing there, so for sync this role applies as if the document had no fields (requests outside sync still choose per document)`);
    }
  }
}

/** The first document field or document expansion an expression reads, as text; undefined when none. */
function documentReference(expression: unknown, depth: number): string | undefined {
  if (depth > 64) return undefined;
  if (typeof expression === 'string') return DOCUMENT_EXPANSIONS.some((e) => expression === e || expression.startsWith(`${e}.`)) ? `"${expression}"` : undefined;
  if (Array.isArray(expression)) {
    for (const item of expression) {
      const found = documentReference(item, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  if (!isObject(expression)) return undefined;
  for (const [key, value] of Object.entries(expression)) {
    if (!key.startsWith('%') && !key.startsWith('$')) return `the field "${key}"`;
    const inKey = key.startsWith('%%') ? documentReference(key, depth + 1) : undefined;
    if (inKey) return inKey;
    // A function call's object names the function; only its arguments are expressions.
    const found = documentReference(key === '%function' && isObject(value) ? value.arguments : value, depth + 1);
    if (found) return found;
  }
  return undefined;
}
