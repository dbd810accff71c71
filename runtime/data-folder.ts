// The data folders hold password hashes, token secrets and every document: readable by their owner only,
// whoever created them (this version or an older one, one app or a root of several).
import fs from 'node:fs';
import path from 'node:path';

/** Creates the folder with mode 0700, and tightens what is already there: folders 0700, files 0600 (symlinks are left alone). */
export function preparePrivateFolder(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  tighten(dir, 0);
}

/**
 * Writes `text` to `file` in a data folder, readable by its owner only, whole through a temporary file (so a
 * crash leaves the old file or the new one); the folder is made 0700 if it is missing.
 */
export function writePrivateFile(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, text, { mode: 0o600 });
  fs.renameSync(temp, file);
}

/** Below this depth nothing is walked (the runtime's own folders are a few levels deep). */
const MAX_DEPTH = 8;

function tighten(dir: string, depth: number): void {
  fs.chmodSync(dir, 0o700);
  if (depth >= MAX_DEPTH) return;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) tighten(p, depth + 1);
    else if (entry.isFile()) fs.chmodSync(p, 0o600);
  }
}

/**
 * The name of an app's data folder under `<data>/apps/` for its folder relative to the root: path
 * segments joined by `%2F` (and `%` written `%25`), so that `a/b` and `a_b` never share one. The root
 * itself is `_root`.
 */
export function appDataFolderName(relativeAppDir: string): string {
  const segments = relativeAppDir.split(path.sep).filter((s) => s.length > 0);
  if (segments.length === 0) return '_root';
  return segments.map((s) => s.replace(/%/g, '%25')).join('%2F');
}

/** The name older versions gave (segments joined by `_`), which `a/b` and `a_b` shared. */
export function legacyAppDataFolderName(relativeAppDir: string): string {
  return relativeAppDir.split(path.sep).join('_') || '_root';
}
