// `asl sync sessions [--follow] [--json]`: the live Realm sync sessions of the runtime that holds the data
// folder (found through its runtime record), and with --follow their traffic as it arrives, decoded by the
// same formatter as the editor's sync sessions view (core/sync/sessionsClient.ts).
import type { RuntimeRecord } from '../core/runtime-protocol';
import {
  describeSession, fetchSyncSessions, fetchSyncTraffic, newTraffic, sessionKey, sessionProgress, trafficEntryLines,
  type LocalGet,
} from '../core/sync/sessionsClient';
import type { SyncSessionInfo, SyncTrafficEntry } from '../core/sync/messages';
import { EXIT_OK, EXIT_PROBLEMS, type CliIO } from './io';
import { askRuntime, errorOf, readRuntimeRecord, RuntimeGone } from './runningRuntime';

const FOLLOW_POLL_MS = 1000;

function noRuntime(io: CliIO, dataDir: string, why?: string): number {
  io.err(`asl sync sessions: no runtime is running on ${dataDir}${why ? ` (${why})` : ''}; start one with "asl serve" or the editor's "App Services: Start Runtime"\n`);
  return EXIT_PROBLEMS;
}

function localGet(record: RuntimeRecord): LocalGet {
  return async (localPath) => {
    const answer = await askRuntime(record, localPath);
    if (answer.status !== 200) throw new Error(`the running runtime at ${record.url} answered: ${errorOf(answer)}`);
    return JSON.parse(answer.text) as unknown;
  };
}

function sessionText(info: SyncSessionInfo): string {
  return `${sessionKey(info)}  ${describeSession(info)}\n    ${sessionProgress(info)}\n`;
}

export async function listSessions(io: CliIO, dataDir: string, json: boolean): Promise<number> {
  const record = readRuntimeRecord(dataDir);
  if (!record) return noRuntime(io, dataDir);
  let sessions: SyncSessionInfo[];
  try {
    sessions = await fetchSyncSessions(localGet(record));
  } catch (e) {
    if (e instanceof RuntimeGone) return noRuntime(io, dataDir, e.message);
    io.err(`asl sync sessions: ${(e as Error).message}\n`);
    return EXIT_PROBLEMS;
  }
  if (json) for (const info of sessions) io.out(`${JSON.stringify({ kind: 'session', ...info })}\n`);
  else io.out(sessions.length === 0 ? `no live sync sessions (runtime at ${record.url})\n` : `${sessions.length} live sync session(s) (runtime at ${record.url}):\n${sessions.map(sessionText).join('')}`);
  return EXIT_OK;
}

/** Prints sessions as they appear and end and their traffic as it arrives, until SIGINT or the runtime stops. */
export async function followSessions(io: CliIO, dataDir: string, json: boolean, stopSignal?: AbortSignal): Promise<number> {
  const record = readRuntimeRecord(dataDir);
  if (!record) return noRuntime(io, dataDir);
  const get = localGet(record);
  const stopped = new AbortController();
  const stop = () => stopped.abort();
  process.once('SIGINT', stop);
  stopSignal?.addEventListener('abort', stop);
  const shown = new Map<string, { info: SyncSessionInfo; traffic: SyncTrafficEntry[] }>();
  const printTraffic = (info: SyncSessionInfo, entries: SyncTrafficEntry[]) => {
    for (const entry of entries) {
      if (json) io.out(`${JSON.stringify({ kind: 'traffic', connection: info.connection, session: info.session, ...entry })}\n`);
      else io.out(`[${sessionKey(info)}] ${trafficEntryLines(entry).join(`\n[${sessionKey(info)}] `)}\n`);
    }
  };
  if (!json) io.out(`following the live sync sessions of the runtime at ${record.url} (Ctrl-C stops)\n`);
  try {
    while (!stopped.signal.aborted) {
      const sessions = await fetchSyncSessions(get);
      const live = new Set(sessions.map(sessionKey));
      for (const [key, seen] of shown) {
        if (live.has(key)) continue;
        const last = await fetchSyncTraffic(get, seen.info.connection, seen.info.session).catch(() => []);
        printTraffic(seen.info, newTraffic(seen.traffic, last));
        io.out(json ? `${JSON.stringify({ kind: 'ended', connection: seen.info.connection, session: seen.info.session })}\n` : `[${key}] session ended\n`);
        shown.delete(key);
      }
      for (const info of sessions) {
        const key = sessionKey(info);
        let seen = shown.get(key);
        if (!seen) {
          io.out(json ? `${JSON.stringify({ kind: 'session', ...info })}\n` : `[${key}] session: ${describeSession(info)}\n`);
          seen = { info, traffic: [] };
          shown.set(key, seen);
        }
        const traffic = await fetchSyncTraffic(get, info.connection, info.session).catch(() => seen.traffic);
        printTraffic(info, newTraffic(seen.traffic, traffic));
        seen.info = info;
        seen.traffic = traffic;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FOLLOW_POLL_MS);
        stopped.signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
      });
    }
    return EXIT_OK;
  } catch (e) {
    if (e instanceof RuntimeGone) {
      io.err(`asl sync sessions: the runtime stopped (${e.message})\n`);
      return EXIT_PROBLEMS;
    }
    io.err(`asl sync sessions: ${(e as Error).message}\n`);
    return EXIT_PROBLEMS;
  } finally {
    process.off('SIGINT', stop);
  }
}
