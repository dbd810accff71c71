// An app folder as the Admin API reads and writes it: its files (without the runtime's data, packages,
// git and local secret values), the export zip, and an import's changes written back to disk.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { zipSync, type Zippable } from 'fflate';
import { isTransferredPath, type FileMap } from '../../core/transfer/appJson';
import type { FileChange } from '../../core/transfer/diff';

/** Never exported nor touched by an import: runtime data, installed packages, git, and local secret values. */
function skipped(rel: string): boolean {
  const first = rel.split('/')[0];
  return first === '.asl' || first === '.git' || first === 'node_modules' || rel === 'secrets.json' || rel.split('/').includes('node_modules');
}

/**
 * Files that hold keys wherever they are: a data folder's token secret and auth records, the admin key,
 * sessions and project, the runtime record (an admin session for local tools). Never exported, even outside a recognised data folder.
 */
const KEY_MATERIAL = new Set(['token-secret', 'api-key.json', 'sessions.json', 'project.json', 'records.jsonl', 'runtime.json']);

/**
 * A runtime data folder (the default `.asl`, or wherever `--data` points, even inside the app folder) is
 * recognised by what only a data folder holds: `auth/token-secret` (an app's) or `admin/api-key.json` (the runtime's).
 */
const DATA_FOLDER_MARKERS = ['auth/token-secret', 'admin/api-key.json'];

/** Every file of the app folder, by relative POSIX path; symbolic links are not followed, data folders and key files are left out. */
export async function readAppFiles(dir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const entries = await fsp.readdir(dir, { recursive: true, withFileTypes: true });
  const files = new Set(entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/')));
  const dataFolders: string[] = [];
  for (const rel of files) {
    for (const marker of DATA_FOLDER_MARKERS) {
      if (rel === marker) dataFolders.push('');
      else if (rel.endsWith(`/${marker}`)) dataFolders.push(rel.slice(0, -marker.length));
    }
  }
  const inDataFolder = (rel: string) => dataFolders.some((folder) => folder === '' || rel.startsWith(folder));
  await Promise.all([...files].map(async (rel) => {
    if (skipped(rel) || inDataFolder(rel) || KEY_MATERIAL.has(rel.slice(rel.lastIndexOf('/') + 1))) return;
    out.set(rel, await fsp.readFile(path.join(dir, rel)));
  }));
  return out;
}

/** The files an import body can carry, as text. */
export async function readTransferredFiles(dir: string): Promise<FileMap> {
  const all = await readAppFiles(dir);
  return new Map([...all].filter(([rel]) => isTransferredPath(rel)).map(([rel, bytes]) => [rel, bytes.toString('utf8')]));
}

/** A zip with the files at its root, each a regular file of mode 0644 made on Unix (so extractors give sane modes). */
export function zipFiles(files: ReadonlyMap<string, Uint8Array>): Uint8Array {
  const zippable: Zippable = {};
  for (const [rel, bytes] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) zippable[rel] = [bytes, { os: 3, attrs: (0o100644 << 16) >>> 0 }];
  return zipSync(zippable, { level: 6 });
}

/** Writes an import's changes into the app folder (the watcher and reload then take them up). */
export async function writeChanges(dir: string, changes: readonly FileChange[]): Promise<void> {
  for (const c of changes) {
    const abs = path.join(dir, ...c.path.split('/'));
    if (c.after === undefined) {
      await fsp.rm(abs, { force: true });
      await removeEmptyParents(dir, path.dirname(abs));
    } else {
      await fsp.mkdir(path.dirname(abs), { recursive: true });
      const tmp = `${abs}.${process.pid}.asl-tmp`;
      await fsp.writeFile(tmp, c.after);
      await fsp.rename(tmp, abs);
    }
  }
}

async function removeEmptyParents(root: string, dir: string): Promise<void> {
  while (dir.startsWith(root + path.sep)) {
    try { await fsp.rmdir(dir); } catch { return; }
    dir = path.dirname(dir);
  }
}

/** The non-transferred text files an app's check needs besides the transferred ones (hosting metadata, legacy folders…). */
export function otherConfigFiles(all: ReadonlyMap<string, Buffer>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [rel, bytes] of all) {
    if (isTransferredPath(rel) || rel.startsWith('hosting/files/')) continue;
    if (rel.endsWith('.json') || rel.endsWith('.js')) out.set(rel, bytes.toString('utf8'));
  }
  return out;
}

export function exists(p: string): boolean {
  return fs.existsSync(p);
}
