// What an import would change in an app's files, and the per-file unified diffs the Admin API answers to
// `import?diff=true` (and `asl push` shows). Only files the import body can carry are compared; JSON
// files are compared as values, so formatting alone is never a difference.
import { createTwoFilesPatch } from 'diff';
import { formatJson, isTransferredPath, sameJson, type FileMap } from './appJson';

export interface FileChange {
  path: string;
  kind: 'added' | 'deleted' | 'modified';
  /** Text now (absent for an added file). */
  before?: string;
  /** Text after the import (absent for a deleted file). */
  after?: string;
}

export function changedFiles(current: FileMap, next: FileMap): FileChange[] {
  const changes: FileChange[] = [];
  const paths = new Set([...current.keys(), ...next.keys()].filter(isTransferredPath));
  for (const path of [...paths].sort()) {
    const before = current.get(path);
    const after = next.get(path);
    if (before === undefined && after !== undefined) changes.push({ path, kind: 'added', after });
    else if (before !== undefined && after === undefined) changes.push({ path, kind: 'deleted', before });
    else if (before !== undefined && after !== undefined && !sameText(path, before, after)) changes.push({ path, kind: 'modified', before, after });
  }
  return changes;
}

/** One unified diff per changed file (`--- path` / `+++ path` / hunks), JSON shown in one formatting. */
export function unifiedDiffs(changes: readonly FileChange[]): string[] {
  return changes.map((c) => {
    const patch = createTwoFilesPatch(c.path, c.path, shown(c.path, c.before), shown(c.path, c.after), '', '', { context: 3 });
    return patch.replace(/^Index: [^\n]*\n=+\n/, '').replace(/\t\n/g, '\n');
  });
}

function sameText(path: string, a: string, b: string): boolean {
  if (a === b) return true;
  if (!path.endsWith('.json')) return a.replace(/\r\n/g, '\n') === b.replace(/\r\n/g, '\n');
  try { return sameJson(JSON.parse(a), JSON.parse(b)); } catch { return false; }
}

function shown(path: string, text: string | undefined): string {
  if (text === undefined) return '';
  if (!path.endsWith('.json')) return text;
  try { return formatJson(JSON.parse(text)); } catch { return text; }
}
