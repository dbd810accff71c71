// Compiles a collection's rules.json (or the data source's default_rule.json) once, into roles whose
// permissions know whether they depend on the document. Permissions that depend only on the user,
// values and request are decided once per request; the others are evaluated per document.
import { isExpansion, parseExpansion } from '../../core/rules';

/** A boolean permission: fixed in the config, or a rule expression. */
export type Permission =
  | { readonly kind: 'const'; readonly value: boolean }
  | { readonly kind: 'expr'; readonly expr: Record<string, unknown>; readonly usesDocument: boolean };

export interface FieldRule {
  readonly read: Permission;
  readonly write: Permission;
  /** Rules of sub-fields of an embedded object (or of the objects of an array). */
  readonly fields?: ReadonlyMap<string, FieldRule>;
  /** Rule of sub-fields not listed in `fields`; absent → those sub-fields follow only this field's own rule. */
  readonly additional?: FieldRule;
}

export interface CompiledRole {
  readonly name: string;
  /** The role as written (what Sync compatibility is judged on). */
  readonly config: Record<string, unknown>;
  readonly applyWhen: Permission;
  /** `document_filters.read` / `.write` as written; undefined when the role sets none (every document). */
  readonly readFilter?: unknown;
  readonly writeFilter?: unknown;
  readonly read: Permission;
  readonly write: Permission;
  readonly insert: Permission;
  readonly delete: Permission;
  readonly search: Permission;
  readonly fields: ReadonlyMap<string, FieldRule>;
  readonly additional: FieldRule;
  /** Every expression of the role that does not depend on the document, to decide once per request. */
  readonly userPermissions: readonly Permission[];
}

export interface CompiledFilter {
  readonly name: string;
  readonly applyWhen: Permission;
  readonly query: unknown;
  readonly projection?: Record<string, unknown>;
}

export interface CollectionRules {
  /** Where the roles came from; `none` denies every request. */
  readonly source: 'collection' | 'default' | 'none';
  readonly roles: readonly CompiledRole[];
  readonly filters: readonly CompiledFilter[];
  /** Some expression calls an app function (`%function`), so its outcome may change between requests. */
  readonly callsFunctions: boolean;
  /** Some expression reads `%%user` or calls a function (which may read it): users may get different outcomes. */
  readonly readsUser: boolean;
}

export const TRUE: Permission = { kind: 'const', value: true };
export const FALSE: Permission = { kind: 'const', value: false };
const DENY_FIELD: FieldRule = { read: FALSE, write: FALSE };

export function compileRules(value: unknown, source: 'collection' | 'default'): CollectionRules {
  const config = isRecord(value) ? value : {};
  const roles = Array.isArray(config.roles) ? config.roles.filter(isRecord).map((role, i) => compileRole(role, i)) : [];
  const filters = Array.isArray(config.filters) ? config.filters.filter(isRecord).map(compileFilter) : [];
  const callsFunctions = containsKey(config, '%function');
  return { source, roles, filters, callsFunctions, readsUser: callsFunctions || mentionsUser(config) };
}

export const NO_RULES: CollectionRules = { source: 'none', roles: [], filters: [], callsFunctions: false, readsUser: false };

/** A `%%user…` expansion as a key or a value anywhere in the rules (deeper than 64 levels counts as one). */
function mentionsUser(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.startsWith('%%user');
  if (typeof value !== 'object' || value === null) return false;
  if (depth > 64) return true;
  if (Array.isArray(value)) return value.some((item) => mentionsUser(item, depth + 1));
  return Object.entries(value).some(([k, v]) => k.startsWith('%%user') || mentionsUser(v, depth + 1));
}

function containsKey(value: unknown, key: string, depth = 0): boolean {
  if (depth > 64 || typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some((item) => containsKey(item, key, depth + 1));
  return Object.entries(value).some(([k, v]) => k === key || containsKey(v, key, depth + 1));
}

function compileRole(role: Record<string, unknown>, index: number): CompiledRole {
  const filters = isRecord(role.document_filters) ? role.document_filters : {};
  const fields = compileFields(role.fields);
  const additional = compileFieldRule(role.additional_fields) ?? DENY_FIELD;
  const compiled = {
    name: typeof role.name === 'string' ? role.name : `role ${index + 1}`,
    config: role,
    applyWhen: permission(role.apply_when, true),
    readFilter: filters.read,
    writeFilter: filters.write,
    read: permission(role.read, false),
    write: permission(role.write, false),
    insert: permission(role.insert, true),
    delete: permission(role.delete, true),
    search: permission(role.search, true),
    fields,
    additional,
  };
  const userPermissions: Permission[] = [];
  const collect = (p: Permission): void => {
    if (p.kind === 'expr' && !p.usesDocument) userPermissions.push(p);
  };
  for (const p of [compiled.read, compiled.write, compiled.insert, compiled.delete, compiled.search]) collect(p);
  const walk = (rule: FieldRule): void => {
    collect(rule.read);
    collect(rule.write);
    for (const child of rule.fields?.values() ?? []) walk(child);
    if (rule.additional) walk(rule.additional);
  };
  for (const rule of fields.values()) walk(rule);
  walk(additional);
  return { ...compiled, userPermissions };
}

function compileFields(value: unknown): ReadonlyMap<string, FieldRule> {
  const map = new Map<string, FieldRule>();
  if (!isRecord(value)) return map;
  for (const [name, rule] of Object.entries(value)) {
    const compiled = compileFieldRule(rule);
    if (compiled) map.set(name, compiled);
  }
  return map;
}

function compileFieldRule(value: unknown): FieldRule | undefined {
  if (!isRecord(value)) return undefined;
  const fields = isRecord(value.fields) ? compileFields(value.fields) : undefined;
  return {
    read: permission(value.read, false),
    write: permission(value.write, false),
    ...(fields && fields.size > 0 ? { fields } : {}),
    ...(isRecord(value.additional_fields) ? { additional: compileFieldRule(value.additional_fields) } : {}),
  };
}

function compileFilter(filter: Record<string, unknown>, index: number): CompiledFilter {
  return {
    name: typeof filter.name === 'string' ? filter.name : `filter ${index + 1}`,
    applyWhen: permission(filter.apply_when, true),
    query: filter.query ?? {},
    ...(isRecord(filter.projection) && Object.keys(filter.projection).length > 0 ? { projection: filter.projection } : {}),
  };
}

/** A permission from its config value: absent → the default; `{}` → true; anything malformed denies. */
export function permission(value: unknown, absent: boolean): Permission {
  if (value === undefined) return absent ? TRUE : FALSE;
  if (typeof value === 'boolean') return value ? TRUE : FALSE;
  // The platform stores "true"/"false" strings it was given; `asl check` warns, and they read as what they spell.
  if (value === 'true' || value === 'false') return value === 'true' ? TRUE : FALSE;
  if (!isRecord(value)) return FALSE;
  if (Object.keys(value).length === 0) return TRUE;
  return { kind: 'expr', expr: value, usesDocument: expressionUsesDocument(value) };
}

const LOGICAL = new Set(['%and', '$and', '%or', '$or', '%nor', '$nor']);
const NEGATION = new Set(['%not', '$not']);
const DOCUMENT_EXPANSIONS = new Set(['root', 'prevRoot', 'this', 'prev']);

function isDocumentExpansion(text: unknown): boolean {
  return isExpansion(text) && DOCUMENT_EXPANSIONS.has(parseExpansion(text).name);
}

/**
 * Whether an expression reads the document: a `%%root`-style expansion anywhere, or a bare field-name
 * key where a condition belongs (rules-and-sync §1.4 rule 6: it means `%%root.<field>`).
 */
export function expressionUsesDocument(expr: unknown, depth = 0): boolean {
  if (!isRecord(expr) || depth > 64) return false;
  for (const [key, value] of Object.entries(expr)) {
    if (LOGICAL.has(key)) {
      if (Array.isArray(value) && value.some((element) => expressionUsesDocument(element, depth + 1))) return true;
    } else if (NEGATION.has(key)) {
      if (expressionUsesDocument(value, depth + 1)) return true;
    } else if (isExpansion(key)) {
      if (isDocumentExpansion(key) || valueUsesDocument(value, depth + 1)) return true;
    } else if (!key.startsWith('%') && !key.startsWith('$')) {
      return true;
    }
  }
  return false;
}

function valueUsesDocument(value: unknown, depth: number): boolean {
  if (depth > 64) return false;
  if (typeof value === 'string') return isDocumentExpansion(value);
  if (Array.isArray(value)) return value.some((element) => valueUsesDocument(element, depth + 1));
  if (!isRecord(value)) return false;
  if (Object.keys(value).some(isExpansion)) return expressionUsesDocument(value, depth + 1);
  return Object.values(value).some((element) => valueUsesDocument(element, depth + 1));
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
