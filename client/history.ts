// Past runs of the query runner: kept per workspace, newest first, capped. No `vscode` imports.
import { formatMs } from './results';

export interface HistoryEntry {
  id: string;
  /** Milliseconds since the epoch. */
  at: number;
  operationName?: string;
  operationKind: string;
  identityLabel: string;
  /** Finds the identity again (its secrets are kept elsewhere). */
  identityKey: string;
  /** HTTP status, or absent when the request failed before an answer. */
  status?: number;
  errorCount: number;
  /** Why the run failed without an answer. */
  failure?: string;
  timeMs?: number;
  query: string;
  variables?: Record<string, unknown>;
  /** The file the operation came from (a URI string). */
  source?: string;
  /** The result document, while this editor session still holds it. */
  resultUri?: string;
}

export const DEFAULT_HISTORY_SIZE = 50;

export function addToHistory(entries: readonly HistoryEntry[], entry: HistoryEntry, cap = DEFAULT_HISTORY_SIZE): HistoryEntry[] {
  return [entry, ...entries].slice(0, Math.max(1, cap));
}

export function describeHistoryEntry(entry: HistoryEntry): { label: string; description: string; tooltip: string; failed: boolean } {
  const name = entry.operationName ?? `anonymous ${entry.operationKind}`;
  const outcome = entry.failure
    ? `failed: ${entry.failure}`
    : `HTTP ${entry.status}${entry.errorCount ? `, ${entry.errorCount} error${entry.errorCount === 1 ? '' : 's'}` : ''}`;
  const time = entry.timeMs === undefined ? '' : ` · ${formatMs(entry.timeMs)}`;
  return {
    label: name,
    description: `${entry.identityLabel} · ${outcome}${time}`,
    tooltip: `${entry.operationKind} ${name}\nas ${entry.identityLabel}\n${outcome}${time}\n${new Date(entry.at).toLocaleString()}`,
    failed: entry.failure !== undefined || (entry.status ?? 0) >= 400 || entry.errorCount > 0,
  };
}

/** Keeps only well-formed entries from stored state (it may come from an older version). */
export function historyFromState(value: unknown): HistoryEntry[] {
  if (!Array.isArray(value)) return [];
  return value.filter((e): e is HistoryEntry => typeof e === 'object' && e !== null && typeof (e as HistoryEntry).id === 'string'
    && typeof (e as HistoryEntry).query === 'string' && typeof (e as HistoryEntry).at === 'number' && typeof (e as HistoryEntry).identityKey === 'string')
    .map((e) => ({ ...e, resultUri: undefined }));
}
