// The live sync sessions of a running runtime, without VS Code: what its local admin routes answer
// (`…/sync/sessions`, `…/sync/sessions/<connection>/<session>/traffic`; shapes in `messages.ts`), fetched through an injected GET so
// the editor (its admin session pool) and the CLI (the runtime record) share them, and the traffic as text:
// one line per message with its fields, each changeset's instructions indented under it, the permission
// verdicts with their evaluation traces, errors, client resets and compensating writes spelled out.
import type { EvaluationTrace } from '../rules/evaluate';
import { traceLines } from '../rules/trace';
import { ErrorCode } from './errorCodes';
import { LOCAL_APP_ROUTES, localAppPath, routePath } from '../apiRoutes';
import { errorOf, type SessionPool } from '../runner/identities';
import type { SyncSchemaVersionInfo, SyncSchemaVersionsReply, SyncSessionInfo, SyncSessionsReply, SyncTrafficEntry, SyncTrafficReply } from './messages';

/** GETs a local admin route of the app (the path after `/local/app/<app id>`) and returns its parsed JSON body. */
export type LocalGet = (localPath: string) => Promise<unknown>;

/** The local admin routes of the pool's app, with its admin session (the editor's runtime). */
export function adminLocalGet(pool: SessionPool, signal?: AbortSignal): LocalGet {
  return (localPath) => pool.asAdmin(async (headers) => {
    const response = await pool.fetchImpl(`${pool.target.baseUrl}${localAppPath(pool.target.appId, localPath)}`, { headers: { Accept: 'application/json', ...headers }, signal });
    if (!response.ok) throw await errorOf(response, 'Asking for the sync sessions');
    return response.json() as Promise<unknown>;
  }, signal);
}

export async function fetchSyncSessions(get: LocalGet): Promise<SyncSessionInfo[]> {
  const body = await get(LOCAL_APP_ROUTES.syncSessions) as Partial<SyncSessionsReply> | undefined;
  if (!Array.isArray(body?.sessions)) throw new Error('the runtime answered without a list of sessions');
  return body.sessions;
}

export async function fetchSchemaVersions(get: LocalGet): Promise<SyncSchemaVersionsReply> {
  const body = await get(LOCAL_APP_ROUTES.syncSchemaVersions) as Partial<SyncSchemaVersionsReply> | undefined;
  if (!Array.isArray(body?.versions) || typeof body.latest !== 'number') throw new Error('the runtime answered without a list of schema versions');
  return { latest: body.latest, versions: body.versions };
}

/** `version 1 (2026-12-06T…) · tables Thing, Item · field "legacy" of table "Thing" removed` */
export function describeSchemaVersion(info: SyncSchemaVersionInfo, latest: number): string {
  const when = info.createdAt ? ` (${info.createdAt})` : '';
  const what = info.changes.length > 0 ? info.changes.join('; ') : 'the schema sync started with';
  return `version ${info.version}${info.version === latest ? ' [newest]' : ''}${when} · tables ${info.tables.join(', ') || '(none yet)'} · ${what}`;
}

export async function fetchSyncTraffic(get: LocalGet, connection: string, session: number): Promise<SyncTrafficEntry[]> {
  const body = await get(routePath(LOCAL_APP_ROUTES.syncTraffic, { connection, session })) as Partial<SyncTrafficReply> | undefined;
  if (!Array.isArray(body?.traffic)) throw new Error('the runtime answered without the session\'s traffic');
  return body.traffic;
}

/** A stable key of a session across polls. */
export function sessionKey(info: Pick<SyncSessionInfo, 'connection' | 'session'>): string {
  return `${info.connection}/${info.session}`;
}

/** ` · schema version 0 (migrating to 1)` for a flexible session; '' for a partition one. */
export function schemaVersionText(info: Pick<SyncSessionInfo, 'schemaVersion'>): string {
  const v = info.schemaVersion;
  return v ? ` · schema version ${v.serving}${v.bound !== v.serving ? ` (migrating to ${v.bound})` : ''}` : '';
}

/** `user 65f… · partition "abc" · protocol 12 · identified` */
export function describeSession(info: SyncSessionInfo): string {
  return `user ${info.userId} · partition ${info.partition || '(none yet)'}${info.migratedPartition !== undefined ? ` · migrated from partition ${info.migratedPartition}` : ''} · protocol ${info.protocolVersion}${schemaVersionText(info)} · ${info.state}`;
}

/** The versions of a session: client file, last download, last upload. */
export function sessionProgress(info: SyncSessionInfo): string {
  return `${info.clientFileIdent !== undefined ? `client file ${info.clientFileIdent}, ` : ''}downloaded server version ${info.downloadedVersion}, uploaded client version ${info.uploadedClientVersion}`;
}

/** What an error means for the client, when it is worth saying. */
function errorMeaning(entry: SyncTrafficEntry, body: Record<string, unknown> | undefined): string | undefined {
  if (Number(entry.fields.errorCode) === ErrorCode.compensating_write) return 'compensating write: the server undid writes the client was not allowed to make';
  if (body?.shouldClientReset === true) return `client reset${body.isRecoveryModeDisabled === true ? ' (recovery disabled)' : ''}: the client must discard or recover its local Realm`;
  return undefined;
}

/** `name=value` pairs; a value is quoted only when it would not read as one word (versions arrive as strings). */
function fieldText(fields: SyncTrafficEntry['fields']): string {
  return Object.entries(fields).map(([name, value]) => `${name}=${typeof value === 'string' && (value === '' || /[\s=]/.test(value)) ? JSON.stringify(value) : value}`).join(' ');
}

function clock(at: number): string {
  return new Date(at).toISOString().slice(11, 23);
}

function isTrace(value: unknown): value is EvaluationTrace {
  return typeof value === 'object' && value !== null && typeof (value as EvaluationTrace).expression === 'string'
    && typeof (value as EvaluationTrace).result === 'boolean' && Array.isArray((value as EvaluationTrace).children);
}

function parseObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

const INDENT = '    ';

/** One traffic entry as lines: the head, then its changesets, verdict traces or error detail, indented. */
export function trafficEntryLines(entry: SyncTrafficEntry): string[] {
  const who = entry.direction === 'in' ? 'client' : 'server';
  const lines = [`${clock(entry.at)} ${who} ${entry.type.toUpperCase()}${Object.keys(entry.fields).length ? ` ${fieldText(entry.fields)}` : ''}`];
  for (const changeset of entry.changesets ?? []) {
    lines.push(`${INDENT}changeset version ${changeset.version} from client file ${changeset.origin} at ${changeset.timestamp}: ${changeset.instructions.length} instruction(s)`);
    for (const instruction of changeset.instructions) lines.push(`${INDENT}${INDENT}${instruction}`);
    if (changeset.more) lines.push(`${INDENT}${INDENT}… and ${changeset.more} more`);
  }
  if (entry.type === 'permissions') {
    const verdict = parseObject(entry.detail) ?? {};
    for (const side of ['read', 'write'] as const) {
      const trace = verdict[side];
      if (!isTrace(trace)) continue;
      lines.push(`${INDENT}${side} ${entry.fields[side] ? 'ALLOWED' : 'denied'}:`);
      lines.push(...traceLines(trace, `${INDENT}${INDENT}`));
    }
    if (Array.isArray(verdict.problems)) for (const problem of verdict.problems) lines.push(`${INDENT}problem: ${String(problem)}`);
    return lines;
  }
  if (entry.detail !== undefined) {
    const body = parseObject(entry.detail);
    const meaning = errorMeaning(entry, body);
    if (meaning) lines.push(`${INDENT}${meaning}`);
    if (body) lines.push(...JSON.stringify(body, null, 2).split('\n').map((line) => `${INDENT}${line}`));
    else lines.push(...entry.detail.split(/\r?\n/).map((line) => `${INDENT}${line}`));
  } else if (entry.type === 'error') {
    const meaning = errorMeaning(entry, undefined);
    if (meaning) lines.push(`${INDENT}${meaning}`);
  }
  return lines;
}

/** The read-only document of one session: who and where, then its recent traffic, oldest first. */
export function renderSessionTraffic(info: SyncSessionInfo | undefined, traffic: SyncTrafficEntry[], heading?: string): string {
  const lines: string[] = [];
  if (heading) lines.push(heading);
  if (info) {
    lines.push(`Sync session ${info.session} on connection ${info.connection}`);
    lines.push(describeSession(info));
    lines.push(sessionProgress(info));
  }
  lines.push(`Recent traffic (${traffic.length} message(s), oldest first; times in UTC; "client" = sent by the client, "server" = sent by the runtime):`);
  lines.push('');
  for (const entry of traffic) lines.push(...trafficEntryLines(entry));
  if (traffic.length === 0) lines.push('(no traffic yet)');
  return `${lines.join('\n')}\n`;
}

/** A traffic entry's identity, to tell new ones from those already shown when a session is polled again. */
function entryKey(entry: SyncTrafficEntry): string {
  return JSON.stringify([entry.at, entry.direction, entry.type, entry.fields]);
}

/** The entries of `latest` that come after the last of `shown` (all of them when it has rolled out of the ring). */
export function newTraffic(shown: SyncTrafficEntry[], latest: SyncTrafficEntry[]): SyncTrafficEntry[] {
  if (shown.length === 0) return latest;
  const last = entryKey(shown[shown.length - 1]);
  for (let i = latest.length - 1; i >= 0; i--) if (entryKey(latest[i]) === last) return latest.slice(i + 1);
  return latest;
}
