// Whether a role can serve a flexible sync session: the platform's "Sync-compatible roles". A session is
// given its role once, when it starts and before it reads any document, so a role whose document filters
// read fields the server cannot query, use document expansions or call functions, or whose read/write
// permissions are not plain booleans, cannot be enforced per object; the platform denies access to a
// session whose first applying role is such a role. Pure: used by `asl check` and by the runtime.
import { isObject as isPlainObject } from '../json';

export interface SyncIncompatibility {
  /** Where in the role (JSON path from the role object). */
  path: (string | number)[];
  message: string;
}

/** Expansions a document filter, insert or delete expression may use in flexible sync. */
const ALLOWED_EXPANSIONS = ['%%true', '%%false', '%%values', '%%environment', '%%user'];

function allowedExpansion(text: string): boolean {
  return ALLOWED_EXPANSIONS.some((prefix) => text === prefix || text.startsWith(`${prefix}.`));
}

/** The ways `role` is not Sync compatible, given the fields its collection's subscriptions may query. */
export function syncIncompatibilities(role: unknown, queryable: ReadonlySet<string>): SyncIncompatibility[] {
  const found: SyncIncompatibility[] = [];
  if (!isPlainObject(role)) return [{ path: [], message: 'a role must be an object' }];
  const filters = role.document_filters;
  if (!isPlainObject(filters) || filters.read === undefined || filters.write === undefined) {
    found.push({ path: ['document_filters'], message: 'document_filters.read and document_filters.write must both be defined' });
  }
  const expressions: [(string | number)[], unknown][] = [
    [['document_filters', 'read'], isPlainObject(filters) ? filters.read : undefined],
    [['document_filters', 'write'], isPlainObject(filters) ? filters.write : undefined],
    [['insert'], role.insert],
    [['delete'], role.delete],
  ];
  for (const [path, expression] of expressions) checkExpression(expression, path, queryable, found, 0);
  for (const key of ['read', 'write'] as const) {
    if (role[key] !== undefined && typeof role[key] !== 'boolean') found.push({ path: [key], message: `the top-level "${key}" must be true or false` });
  }
  if (isPlainObject(role.fields)) {
    if (Object.hasOwn(role.fields, '_id')) found.push({ path: ['fields', '_id'], message: 'field-level permissions may not be given for "_id"' });
    checkFieldRules(role.fields, ['fields'], found, 0);
  }
  if (isPlainObject(role.additional_fields)) checkFieldRule(role.additional_fields, ['additional_fields'], found, 0);
  return found;
}

function checkFieldRules(fields: Record<string, unknown>, path: (string | number)[], found: SyncIncompatibility[], depth: number): void {
  for (const [name, rule] of Object.entries(fields)) if (isPlainObject(rule)) checkFieldRule(rule, [...path, name], found, depth + 1);
}

function checkFieldRule(rule: Record<string, unknown>, path: (string | number)[], found: SyncIncompatibility[], depth: number): void {
  if (depth > 32) return;
  for (const key of ['read', 'write'] as const) {
    if (rule[key] !== undefined && typeof rule[key] !== 'boolean') found.push({ path: [...path, key], message: `the field-level "${key}" must be true or false` });
  }
  if (isPlainObject(rule.fields)) checkFieldRules(rule.fields, [...path, 'fields'], found, depth + 1);
  if (isPlainObject(rule.additional_fields)) checkFieldRule(rule.additional_fields, [...path, 'additional_fields'], found, depth + 1);
}

/**
 * An expression's field references (keys that are neither operators nor expansions; a dotted key names
 * its first segment) must be queryable; its expansions must be the allowed ones; `%function` is refused.
 */
function checkExpression(expression: unknown, path: (string | number)[], queryable: ReadonlySet<string>, found: SyncIncompatibility[], depth: number): void {
  if (depth > 64) return;
  if (typeof expression === 'string') {
    if (expression.startsWith('%%') && !allowedExpansion(expression)) found.push({ path, message: `the expansion "${expression}" cannot be evaluated for a sync session (only %%true, %%false, %%values, %%environment and %%user)` });
    return;
  }
  if (Array.isArray(expression)) {
    expression.forEach((item, i) => checkExpression(item, [...path, i], queryable, found, depth + 1));
    return;
  }
  if (!isPlainObject(expression)) return;
  for (const [key, value] of Object.entries(expression)) {
    const at = [...path, key];
    if (key === '%function') {
      found.push({ path: at, message: '%function cannot be used: a sync session\'s permissions are decided once, not per document' });
      continue;
    }
    if (key.startsWith('%%')) {
      if (!allowedExpansion(key)) found.push({ path: at, message: `the expansion "${key}" cannot be evaluated for a sync session (only %%true, %%false, %%values, %%environment and %%user)` });
    } else if (!key.startsWith('%') && !key.startsWith('$')) {
      const field = key.split('.')[0]!;
      if (!queryable.has(field)) found.push({ path: at, message: `"${field}" is not a queryable field: sync can only test queryable fields on the server` });
      // An equality to an object value is a value, not an expression.
      if (isPlainObject(value) && !Object.keys(value).every((k) => k.startsWith('$') || k.startsWith('%'))) continue;
    }
    checkExpression(value, at, queryable, found, depth + 1);
  }
}
