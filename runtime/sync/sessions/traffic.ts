// The recent traffic of a sync session, decoded for people debugging a sync app (the editor's sync
// sessions view, `asl sync sessions`): each message with its head fields, and for UPLOAD/DOWNLOAD each
// changeset's instructions per object (type, primary key, field, value). Kept in a small ring per session.
import type { SyncTrafficChangeset, SyncTrafficEntry } from '../../../core/sync/messages';
import type { ChangesetEntry, Instruction, Payload, PrimaryKey } from '../wire/instructions';
import { parseChangeset } from '../wire/changeset';
import { primaryKeyText } from '../translate/values';

export const TRAFFIC_KEPT_PER_SESSION = 100;
const INSTRUCTIONS_SHOWN_PER_CHANGESET = 200;

function payloadText(payload: Payload): string {
  switch (payload.type) {
    case 'null': return 'null';
    case 'int': return payload.value.toString();
    case 'bool': return String(payload.value);
    case 'string': return JSON.stringify(payload.value.length > 80 ? `${payload.value.slice(0, 80)}…` : payload.value);
    case 'binary': return `<${payload.value.length} bytes>`;
    case 'timestamp': return new Date(Number(payload.seconds) * 1000 + Math.trunc(payload.nanoseconds / 1e6)).toISOString();
    case 'float': case 'double': return String(payload.value);
    case 'decimal': return `decimal(${payload.value.toString()})`;
    case 'link': return `→ ${payload.table} ${primaryKeyText(payload.target)}`;
    case 'objectId': return `oid(${payload.value.toHexString()})`;
    case 'uuid': return `uuid(${payload.value.toHexString()})`;
    case 'globalKey': return `gk(${payload.hi},${payload.lo})`;
    case 'objectValue': return '{embedded object}';
    case 'dictionary': return '{}';
    case 'list': return '[]';
    case 'set': return '<set>';
    case 'erased': return '<erased>';
  }
}

function target(table: string, object: PrimaryKey): string {
  return `${table} ${primaryKeyText(object)}`;
}

/** One instruction as a line: `Update Task oid(…) .name = "x"`. */
export function instructionText(i: Instruction): string {
  const at = (field: string, path: readonly (string | number)[]) => `.${[field, ...path].map((p) => (typeof p === 'number' ? `[${p}]` : p)).join('.').replace(/\.\[/g, '[')}`;
  switch (i.type) {
    case 'AddTable': return `AddTable ${i.table}${i.spec.kind === 'embedded' ? ' (embedded)' : ` (primary key ${i.spec.pkField}: ${i.spec.pkType}${i.spec.asymmetric ? ', asymmetric' : ''})`}`;
    case 'EraseTable': return `EraseTable ${i.table}`;
    case 'AddColumn': return `AddColumn ${i.table}.${i.field}: ${i.valueType === 'link' ? `→ ${i.linkTargetTable}` : i.valueType === 'null' ? 'mixed' : i.valueType}${i.collectionType !== 'single' ? ` ${i.collectionType}` : ''}${i.nullable ? '?' : ''}`;
    case 'EraseColumn': return `EraseColumn ${i.table}.${i.field}`;
    case 'CreateObject': return `CreateObject ${target(i.table, i.object)}`;
    case 'EraseObject': return `EraseObject ${target(i.table, i.object)}`;
    case 'Update': return `Update ${target(i.table, i.object)} ${at(i.field, i.path)} = ${payloadText(i.value)}${i.isDefault ? ' (default)' : ''}`;
    case 'AddInteger': return `AddInteger ${target(i.table, i.object)} ${at(i.field, i.path)} += ${i.value}`;
    case 'ArrayInsert': return `ArrayInsert ${target(i.table, i.object)} ${at(i.field, i.path)} = ${payloadText(i.value)}`;
    case 'ArrayMove': return `ArrayMove ${target(i.table, i.object)} ${at(i.field, i.path)} → [${i.ndx2}]`;
    case 'ArrayErase': return `ArrayErase ${target(i.table, i.object)} ${at(i.field, i.path)}`;
    case 'Clear': return `Clear ${target(i.table, i.object)} ${at(i.field, i.path)} (${i.collectionType})`;
    case 'SetInsert': return `SetInsert ${target(i.table, i.object)} ${at(i.field, i.path)} ${payloadText(i.value)}`;
    case 'SetErase': return `SetErase ${target(i.table, i.object)} ${at(i.field, i.path)} ${payloadText(i.value)}`;
  }
}

/** A changeset as the traffic shows it; one that does not parse says why. */
export function describeChangeset(entry: ChangesetEntry): SyncTrafficChangeset {
  let instructions = entry.instructions;
  let problem: string | undefined;
  if (instructions.length === 0 && entry.bytes && entry.bytes.length > 0) {
    try {
      instructions = parseChangeset(entry.bytes);
    } catch (e) {
      problem = `does not parse: ${(e as Error).message}`;
    }
  }
  const shown = instructions.slice(0, INSTRUCTIONS_SHOWN_PER_CHANGESET).map(instructionText);
  return {
    version: entry.version.toString(),
    origin: entry.originFileIdent.toString(),
    timestamp: new Date(Date.UTC(2015, 0, 1) + Number(entry.originTimestamp)).toISOString(),
    instructions: problem ? [problem] : shown,
    ...(instructions.length > INSTRUCTIONS_SHOWN_PER_CHANGESET ? { more: instructions.length - INSTRUCTIONS_SHOWN_PER_CHANGESET } : {}),
  };
}

/** What is recorded: changesets stay as sent (their bytes are shared with the history) until someone reads them. */
export type RecordedTraffic = Omit<SyncTrafficEntry, 'changesets'> & { raw?: readonly ChangesetEntry[] };

/** A fixed-size ring of a session's recent traffic. */
export class TrafficLog {
  private readonly entries: RecordedTraffic[] = [];

  add(entry: RecordedTraffic): void {
    this.entries.push(entry);
    if (this.entries.length > TRAFFIC_KEPT_PER_SESSION) this.entries.shift();
  }

  recent(): SyncTrafficEntry[] {
    return this.entries.map(({ raw, ...entry }) => (raw && raw.length > 0 ? { ...entry, changesets: raw.map(describeChangeset) } : entry));
  }
}
