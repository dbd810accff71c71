// The editor's "Open Partition as User…", without VS Code: ask the running runtime for the simulator's
// report (local admin route), render it as a read-only JSONC document (a readable summary with the
// evaluation traces as comments, then the report), and follow the partition live over the sync feed so
// the view refreshes when documents, custom user data or the app's rules change.
import { EJSON } from 'bson';
import WebSocket from 'ws';
import { LOCAL_APP_ROUTES, appEndpointPath, localAppPath } from '../apiRoutes';
import { traceLines } from '../rules/trace';
import { errorOf, type SessionPool } from '../runner/identities';
import { FEED_ENDPOINT, type FeedOpenMessage, type FeedServerMessageType, type SimulationReport } from './messages';

/** The runtime's simulator report, as it arrives (canonical EJSON, parsed). */
export type SimulationView = SimulationReport;

export async function fetchSimulation(pool: SessionPool, user: string, partition: string, signal?: AbortSignal): Promise<SimulationView> {
  const query = new URLSearchParams({ user, partition });
  const path = `${localAppPath(pool.target.appId, LOCAL_APP_ROUTES.syncSimulate)}?${query}`;
  return pool.asAdmin(async (headers) => {
    const response = await pool.fetchImpl(`${pool.target.baseUrl}${path}`, { headers: { Accept: 'application/json', ...headers }, signal });
    if (!response.ok) throw await errorOf(response, 'Opening the partition');
    return EJSON.parse(await response.text()) as SimulationView;
  }, signal);
}

/** The report as a JSONC document: the summary and traces as `//` lines, then the report itself. */
export function renderSimulation(view: SimulationView): string {
  const lines: string[] = [];
  const who = view.user ? `${view.user.email ?? view.user.id}` : 'unknown user';
  lines.push(`Partition ${view.partition.text}${view.partition.type ? ` (${view.partition.type})` : ''} as ${who}; sync ${view.status.status}`);
  const p = view.permissions;
  if (p) {
    lines.push(`write: ${p.write ? 'ALLOWED' : 'denied'}`);
    if (p.writeTrace) lines.push(...traceLines(p.writeTrace));
    lines.push(`read: ${p.read ? 'ALLOWED' : 'denied'}${p.readGrantedByWrite ? ' (granted by write)' : ''}`);
    if (p.readTrace) lines.push(...traceLines(p.readTrace));
    for (const problem of p.problems) lines.push(`problem: ${problem}`);
  }
  lines.push(view.error ? `client error: ${view.error.code} ${view.error.name}: ${view.error.message}` : 'client error: none (the partition opens)');
  for (const c of view.collections) lines.push(`${c.type} (${c.namespace}): ${c.count} document(s)`);
  for (const c of view.ignored) for (const [reason, count] of Object.entries(c.reasons)) lines.push(`ignored in ${c.type}: ${count} × ${reason}`);
  const header = lines.map((line) => `// ${line.replace(/\r?\n/g, ' ')}`).join('\n');
  return `${header}\n${EJSON.stringify(view as never, { relaxed: true }, 2)}\n`;
}

export interface PartitionWatch { close(): void }

/** The `type` of a feed message (canonical EJSON text), or undefined for a message that is not one. */
function feedMessageType(text: string): FeedServerMessageType | undefined {
  try {
    const message: unknown = JSON.parse(text);
    const type = typeof message === 'object' && message !== null ? (message as { type?: unknown }).type : undefined;
    return typeof type === 'string' ? type as FeedServerMessageType : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Follows the partition as the user over the live feed: `onChange` is called (at most every `settleMs`)
 * after a document change, a custom user data change or an app reload. A partition the user cannot open
 * has no feed; the caller refreshes on file saves only.
 */
export async function watchPartition(pool: SessionPool, userId: string, partition: string, onChange: (why: string) => void, settleMs = 150): Promise<PartitionWatch> {
  const headers = await pool.headersFor({ kind: 'existing-user', userId });
  const url = `${pool.target.baseUrl.replace(/^http/, 'ws')}${appEndpointPath(pool.target.appId, FEED_ENDPOINT)}`;
  const ws = new WebSocket(url, { headers });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const later = (why: string) => {
    clearTimeout(timer);
    timer = setTimeout(() => onChange(why), settleMs);
  };
  const open: FeedOpenMessage = { type: 'open', session: 1, partition };
  ws.on('open', () => ws.send(JSON.stringify(open)));
  ws.on('message', (data) => {
    const type = feedMessageType(data.toString());
    if (type === 'change') later('a document changed');
    else if (type === 'reevaluate') later('the rules or the user\'s custom data changed');
    else if (type === 'error') later('the session ended');
  });
  ws.on('error', () => undefined);
  return {
    close() {
      clearTimeout(timer);
      ws.close();
    },
  };
}
