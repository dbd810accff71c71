// A session of a client built for an older schema version syncs through that version's schema: the
// documents it downloads are translated with the version's tables and columns (what the version lacks is
// left out, flexible/view.ts and translate/ do it given the version's schema), and its subscriptions and
// uploads are taken into the newest schema here. The newest schema is what the server holds: a table or
// field only the old version has selects nothing and is not written (a subscription on it syncs nothing,
// as on the platform); a table or field the version does not have at all is the client's error.
import type { SyncError } from '../../../core/sync';
import type { Document } from '../../store/types';
import type { UploadedChangeset } from '../sessions/engine';
import type { RealmSchema, RealmTable } from '../translate/schema';
import { ErrorCode } from '../wire/errors';
import type { Instruction } from '../wire/instructions';
import { sameColumnType } from './diff';

/**
 * A session's version: its number, the version's schema and the newest (the server's); while the client
 * migrates, also the schema of the version it opened with (its realm may hold that schema already, and
 * uploads it at the old version).
 */
export interface VersionedSchemas {
  version: number;
  schema: RealmSchema;
  latest: RealmSchema;
  migratingTo?: RealmSchema;
}

/**
 * A QUERY or IDENT body of an older version's client: a table the version does not have is refused; a
 * table the newest schema no longer has is dropped (it selects nothing).
 */
export function projectQueryBody(body: string, v: VersionedSchemas): { ok: true; body: string } | { ok: false; message: string } {
  if (body.trim() === '') return { ok: true, body };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ok: true, body };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { ok: true, body };
  const kept: Record<string, unknown> = {};
  for (const [table, query] of Object.entries(parsed as Record<string, unknown>)) {
    if (!v.schema.has(table) && !v.migratingTo?.has(table)) return { ok: false, message: `Invalid query: table "${table}" is not in sync schema version ${v.version}` };
    if (v.latest.has(table)) kept[table] = query;
  }
  return { ok: true, body: JSON.stringify(kept) };
}

/** The document with only what the newest schema has (its primary key and columns): what queries see. */
function inLatest(table: RealmTable): (doc: Document) => Document {
  const fields = new Set([...table.columns.keys(), table.primaryKey?.field ?? '_id']);
  return (doc) => {
    const out: Document = {};
    for (const [k, value] of Object.entries(doc)) if (fields.has(k)) out[k] = value;
    return out;
  };
}

/** Compiled queries of an older version's client match documents as the newest schema has them: a field removed since matches nothing. */
export function restrictMatchers(tables: ReadonlyMap<string, { matches: (doc: Document) => boolean }>, v: VersionedSchemas): void {
  for (const [name, query] of tables) {
    const table = v.latest.get(name);
    if (!table) continue;
    const project = inLatest(table);
    const matches = query.matches;
    query.matches = (doc) => matches(project(doc));
  }
}

function notInVersion(v: VersionedSchemas, what: string): SyncError {
  return { code: ErrorCode.invalid_schema_change, name: 'ErrorInvalidSchemaChange', message: `Invalid schema change (UPLOAD): ${what} is not in sync schema version ${v.version}, the version this client opened with`, action: 'none', tryAgain: false };
}

const tableKind = (t: { embedded: boolean; primaryKey?: { field: string; type: string } }) => (t.embedded || !t.primaryKey ? 'embedded' : `${t.primaryKey.field}:${t.primaryKey.type}`);

/**
 * An older version's upload in the newest schema's terms: its schema instructions must agree with its
 * version (then they are dropped: the server's schema is the newest); what it writes to tables and fields the
 * newest schema no longer has, or whose type changed since, is left out; anything outside its version is an
 * error for its session.
 */
export function projectUpload(changesets: readonly UploadedChangeset[], v: VersionedSchemas): { ok: true; changesets: UploadedChangeset[] } | { ok: false; error: SyncError } {
  const out: UploadedChangeset[] = [];
  for (const changeset of changesets) {
    const kept: Instruction[] = [];
    for (const i of changeset.instructions) {
      const table = v.schema.get(i.table) ?? v.migratingTo?.get(i.table);
      if (!table) return { ok: false, error: notInVersion(v, `table "${i.table}"`) };
      const other = v.migratingTo?.get(i.table);
      const latest = v.latest.get(i.table);
      switch (i.type) {
        case 'AddTable': {
          const declared = i.spec.kind === 'embedded' ? 'embedded' : `${i.spec.pkField}:${i.spec.pkType}`;
          if (declared !== tableKind(table) && (!other || declared !== tableKind(other))) return { ok: false, error: notInVersion(v, `table "${i.table}" as ${i.spec.kind === 'embedded' ? 'an embedded table' : `a table with primary key "${i.spec.pkField}" ${i.spec.pkType}`}`) };
          continue;
        }
        case 'AddColumn': {
          const declared = { name: i.field, type: i.valueType, nullable: i.nullable, collection: i.collectionType, ...(i.linkTargetTable ? { linkTarget: i.linkTargetTable } : {}) };
          const agrees = (t: RealmTable | undefined) => { const c = t?.columns.get(i.field); return c !== undefined && sameColumnType(c, declared); };
          const column = table.columns.get(i.field);
          if (!agrees(table) && !agrees(other)) {
            return { ok: false, error: notInVersion(v, `field "${i.field}" of table "${i.table}"${column ? ' with this type' : ''}`) };
          }
          continue;
        }
        case 'EraseTable': case 'EraseColumn':
          return { ok: false, error: notInVersion(v, `erasing ${i.type === 'EraseTable' ? `table "${i.table}"` : `field "${i.field}" of table "${i.table}"`}`) };
        default:
      }
      if (!latest) continue;
      if ('field' in i) {
        const column = table.columns.get(i.field) ?? other?.columns.get(i.field);
        if (!column) return { ok: false, error: notInVersion(v, `field "${i.field}" of table "${i.table}"`) };
        const now = latest.columns.get(i.field);
        if (!now || !sameColumnType(column, now)) continue;
        if ('value' in i && typeof i.value === 'object' && i.value.type === 'link' && !v.latest.has(i.value.table)) continue;
      }
      kept.push(i);
    }
    out.push({ ...changeset, instructions: kept });
  }
  return { ok: true, changesets: out };
}
