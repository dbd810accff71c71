// The text of a result document: a JSONC header (status, time, identity, operation) and the answer,
// pretty-printed when it is JSON. No `vscode` imports: plain Node tests check it (and time it on 10 MB).
import type { RunResult } from '../core/runner/run';

/** Answers larger than this are shown as received (one line): indenting them costs more than it helps. */
const PRETTY_LIMIT_BYTES = 50 * 1024 * 1024;

export function resultDocumentText(result: RunResult, operationLabel: string, when: Date): string {
  const header = [
    `// ${operationLabel}`,
    `// as ${result.identity}`,
    `// HTTP ${result.status} · ${formatMs(result.timeMs)} · ${formatBytes(result.text.length)} · ${when.toISOString()}`,
    ...(result.errors.length ? [`// ${result.errors.length} error${result.errors.length === 1 ? '' : 's'}: ${oneLine(result.errors[0]!.message)}`] : []),
  ];
  const body = result.value !== undefined && result.text.length <= PRETTY_LIMIT_BYTES ? JSON.stringify(result.value, null, 2) : prettyJson(result.text);
  return `${header.join('\n')}\n${body}\n`;
}

export function prettyJson(text: string): string {
  if (text.length > PRETTY_LIMIT_BYTES) return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** A name for the result document: the operation, or `result`, made safe for a path segment. */
export function resultFileName(operationName: string | undefined, sequence: number): string {
  const base = (operationName ?? 'result').replace(/[^A-Za-z0-9_-]+/g, '_') || 'result';
  return `${base}-${sequence}.jsonc`;
}
