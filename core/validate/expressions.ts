// Finds every rule expression of an app (sync permissions, data-access roles and filters, function
// can_evaluate) and runs the expression analysis on it with the facts the app provides.
import { DiagnosticSink } from '../diagnostics';
import { isObject, type JsonFile, type JSONPath } from '../json';
import type { AppModel } from '../model';
import { analyzeExpression, type ExpressionContext, type ExpressionFacts, type PartitionKeyType } from '../rules';

const PARTITION_TYPES = new Set(['string', 'objectId', 'long', 'uuid']);

/**
 * Analyses every expression of the app. `perFile` lets a caller reuse the diagnostics of files whose
 * expressions and facts did not change: it receives each file with a function that analyses all of it.
 */
export function validateExpressions(
  app: AppModel,
  sink: DiagnosticSink,
  perFile: (file: JsonFile, analyse: (sink: DiagnosticSink) => void) => void = (_file, analyse) => analyse(sink),
  facts: ExpressionFacts = appFacts(app),
): void {
  const pending = new Map<JsonFile, Array<[JSONPath, ExpressionContext]>>();
  const check = (file: JsonFile, path: JSONPath, context: ExpressionContext) => {
    const list = pending.get(file);
    if (list) list.push([path, context]); else pending.set(file, [[path, context]]);
  };

  const sync = app.sync;
  if (sync?.type === 'partition' && sync.partition) {
    for (const which of ['read', 'write'] as const) {
      if (sync.partition.permissions[which] !== undefined) check(sync.file, ['partition', 'permissions', which], 'partition-sync');
    }
  }
  for (const ds of app.dataSources) {
    if (ds.defaultRule) checkRuleFile(ds.defaultRule, check);
    for (const coll of ds.collections) if (coll.rules) checkRuleFile(coll.rules, check);
  }
  const manifest = app.functionsManifest;
  if (manifest && Array.isArray(manifest.value)) {
    manifest.value.forEach((entry, i) => {
      if (isObject(entry) && entry.can_evaluate !== undefined) check(manifest, [i, 'can_evaluate'], 'can-evaluate');
    });
  }
  for (const [file, expressions] of pending) {
    perFile(file, (fileSink) => {
      for (const [path, context] of expressions) {
        if (context === 'partition-sync') analyzeSyncPermission(file, path, facts, fileSink);
        else analyzeExpression(file, path, context, facts, fileSink);
      }
    });
  }
}

/**
 * A sync permission is analysed like any expression, except that what cannot migrate to flexible sync is
 * told once per permission (at its key, listing each use) instead of once per use.
 */
function analyzeSyncPermission(file: JsonFile, path: JSONPath, facts: ExpressionFacts, sink: DiagnosticSink): void {
  const local = new DiagnosticSink();
  analyzeExpression(file, path, 'partition-sync', facts, local);
  const blockers = local.items.filter((d) => d.code === MIGRATION_BLOCKER);
  for (const d of local.items) if (d.code !== MIGRATION_BLOCKER) sink.add(d);
  if (blockers.length === 0) return;
  const uses = new Map<string, number[]>();
  for (const d of blockers) {
    const what = /'([^']+)'/.exec(d.message)?.[1] ?? 'this expression';
    uses.set(what, [...(uses.get(what) ?? []), d.range.start.line + 1]);
  }
  const list = [...uses].map(([what, lines]) => `${what} (line${lines.length > 1 ? 's' : ''} ${lines.join(', ')})`).join(' and ');
  sink.at(file, path, 'information', MIGRATION_BLOCKER,
    `The ${String(path[path.length - 1])} permission cannot migrate to flexible sync as written: ${list} ${uses.size > 1 ? 'have' : 'has'} no flexible sync equivalent`,
    { target: 'key' });
}

const MIGRATION_BLOCKER = 'rule/migration-blocker';

function checkRuleFile(file: JsonFile, check: (file: JsonFile, path: JSONPath, context: ExpressionContext) => void): void {
  const rules = file.value;
  if (!isObject(rules)) return;
  const roles = Array.isArray(rules.roles) ? rules.roles : [];
  roles.forEach((role, i) => {
    if (!isObject(role)) return;
    if (role.apply_when !== undefined) check(file, ['roles', i, 'apply_when'], 'data-rule');
    for (const access of ['read', 'write'] as const) {
      if (isObject(role[access])) check(file, ['roles', i, access], 'data-rule');
      if (isObject(role.document_filters) && role.document_filters[access] !== undefined) check(file, ['roles', i, 'document_filters', access], 'filter');
      if (isObject(role.additional_fields) && isObject(role.additional_fields[access])) check(file, ['roles', i, 'additional_fields', access], 'data-rule');
    }
    if (isObject(role.fields)) checkFieldRules(file, ['roles', i, 'fields'], role.fields, check);
  });
  const filters = Array.isArray(rules.filters) ? rules.filters : [];
  filters.forEach((filter, i) => {
    if (!isObject(filter)) return;
    if (filter.apply_when !== undefined) check(file, ['filters', i, 'apply_when'], 'data-rule');
    if (filter.query !== undefined) check(file, ['filters', i, 'query'], 'filter');
  });
}

function checkFieldRules(file: JsonFile, at: JSONPath, fields: Record<string, unknown>, check: (file: JsonFile, path: JSONPath, context: ExpressionContext) => void): void {
  for (const [name, rule] of Object.entries(fields)) {
    if (!isObject(rule)) continue;
    for (const access of ['read', 'write'] as const) if (isObject(rule[access])) check(file, [...at, name, access], 'data-rule');
    if (isObject(rule.fields)) checkFieldRules(file, [...at, name, 'fields'], rule.fields, check);
  }
}

/** What expression analysis needs to know about the app. */
export function appFacts(app: AppModel): ExpressionFacts {
  const partitionType = app.sync?.partition?.type;
  const cud = app.customUserData;
  const cudSchema = cud?.enabled
    ? app.dataSources.find((d) => d.name === cud.serviceName)?.collections.find((c) => c.database === cud.databaseName && c.collection === cud.collectionName)?.schema?.value
    : undefined;
  return {
    functionNames: [...app.functions.keys()],
    partitionType: partitionType && PARTITION_TYPES.has(partitionType) ? (partitionType as PartitionKeyType) : undefined,
    customDataFields: isObject(cudSchema) && isObject(cudSchema.properties) ? Object.keys(cudSchema.properties) : undefined,
    valueNames: app.values.map((v) => v.name),
    environmentValueNames: [...new Set(app.environments.flatMap((e) => Object.keys(e.values)))],
  };
}
