// How two sync schemas differ, as the platform sorted schema changes: adding a table or a column is
// additive (every client on every version keeps syncing); removing a table or a column, or changing what
// a table is (embedded, asymmetric, its primary key) or a column's type, collection, link target or
// optionality, is breaking. Also the stored form of a schema (a version's snapshot).
import type { RealmColumn, RealmSchema, RealmTable } from '../translate/schema';

/** A table as a version's snapshot stores it (JSON). */
export interface StoredTable {
  name: string;
  embedded: boolean;
  asymmetric: boolean;
  primaryKey?: RealmTable['primaryKey'];
  columns: RealmColumn[];
}

export function storeSchema(schema: RealmSchema): StoredTable[] {
  return [...schema.values()].map((t) => ({
    name: t.name, embedded: t.embedded, asymmetric: t.asymmetric, ...(t.primaryKey ? { primaryKey: t.primaryKey } : {}), columns: [...t.columns.values()],
  }));
}

export function loadSchema(tables: readonly StoredTable[]): RealmSchema {
  return new Map(tables.map((t) => [t.name, {
    name: t.name, embedded: t.embedded, asymmetric: t.asymmetric, ...(t.primaryKey ? { primaryKey: t.primaryKey } : {}),
    columns: new Map(t.columns.map((c) => [c.name, c])),
  }]));
}

const tableKind = (t: RealmTable) => (t.embedded || !t.primaryKey ? 'embedded' : `${t.asymmetric ? 'asymmetric' : 'top-level'} with primary key "${t.primaryKey.field}" ${t.primaryKey.type}${t.primaryKey.nullable ? '?' : ''}`);
const columnKind = (c: RealmColumn) => `${c.collection === 'single' ? '' : `${c.collection} of `}${c.type === 'null' ? 'mixed' : c.type}${c.linkTarget ? ` -> ${c.linkTarget}` : ''}${c.nullable ? ' (optional)' : ' (required)'}`;

export interface SchemaDiff {
  /** Each breaking change, in words (`field "x" of table "T" removed`). */
  breaking: string[];
  additive: string[];
}

/** What changed from `from` to `to`. */
export function diffSchemas(from: RealmSchema, to: RealmSchema): SchemaDiff {
  const breaking: string[] = [];
  const additive: string[] = [];
  for (const [name, old] of from) {
    const now = to.get(name);
    if (!now) {
      breaking.push(`table "${name}" removed`);
      continue;
    }
    if (tableKind(old) !== tableKind(now)) breaking.push(`table "${name}" changed from ${tableKind(old)} to ${tableKind(now)}`);
    for (const [field, column] of old.columns) {
      const next = now.columns.get(field);
      if (!next) breaking.push(`field "${field}" of table "${name}" removed`);
      else if (columnKind(column) !== columnKind(next)) breaking.push(`field "${field}" of table "${name}" changed from ${columnKind(column)} to ${columnKind(next)}`);
    }
    for (const field of now.columns.keys()) if (!old.columns.has(field)) additive.push(`field "${field}" added to table "${name}"`);
  }
  for (const name of to.keys()) if (!from.has(name)) additive.push(`table "${name}" added`);
  return { breaking, additive };
}

/** Whether a column means the same on both sides (type, collection and link target; optionality aside). */
export function sameColumnType(a: RealmColumn, b: RealmColumn): boolean {
  return a.type === b.type && a.collection === b.collection && a.linkTarget === b.linkTarget;
}
