// The example app as the fuzzer's seed corpus: every file of examples/todo-tracker, read from disk.
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../helpers/disk';

export const EXAMPLE_APP_DIR = path.join(REPO_ROOT, 'examples', 'todo-tracker');

/** Relative path (forward slashes) → text, for every file of the example app. */
export function readExampleApp(dir = EXAMPLE_APP_DIR): Map<string, string> {
  const files = new Map<string, string>();
  (function walk(current: string, rel: string): void {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const childRel = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path.join(current, entry.name), childRel);
      else files.set(childRel, fs.readFileSync(path.join(current, entry.name), 'utf8'));
    }
  })(dir, '');
  return files;
}

/** The JSON files of an app: what the mutators rewrite. */
export function jsonFilesOf(files: Map<string, string>): string[] {
  return [...files.keys()].filter((rel) => rel.endsWith('.json')).sort();
}
