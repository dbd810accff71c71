// A whole data folder, copied consistently: in one synchronous step every file of the folder is read and the
// store's documents captured (nothing the runtime does can fall in between: its file writes are synchronous
// and its store changes atomic), then written out as a folder of the same shape whose store is one
// snapshot file, with a manifest of every file's size and SHA-256. A restore checks the manifest, builds
// the new folder beside the old one, checks its store opens, and swaps the two by rename.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { EmbeddedStore, SNAPSHOT_FILE, snapshotFileChunks } from '../store/embedded';
import { RUNTIME_RECORD_FILE } from '../../core/runtime-protocol';
import { isObject } from '../../core/json';
import type { DocumentStore } from '../store/types';

/** The store's folder inside a data folder (runtime.ts opens the store there). */
export const STORE_FOLDER = 'data';
export const BACKUP_MANIFEST = 'asl-backup.json';
const MANIFEST_FORMAT = 'asl-backup';
const CONTENT_CHUNK_BYTES = 1024 * 1024;

export class BackupRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupRefused';
  }
}

/** A piece of a backup as it is written out: a file's relative path (`/`-separated), then its bytes. */
export type BackupEntry = { path: string } | Uint8Array;

/**
 * Everything of the data folder at one instant, as entries: its files (the store's own folder, the runtime
 * record and temporary files left out) and the store as one snapshot file.
 */
export function captureDataFolder(dataDir: string, store: DocumentStore): Generator<BackupEntry> {
  if (!store.snapshot) throw new BackupRefused('the app\'s data is in a MongoDB deployment: back it up with mongodump');
  const files: { path: string; bytes: Buffer }[] = [];
  collectFiles(dataDir, '', files);
  const contents = store.snapshot().map((c) => ({ namespace: `${c.database}.${c.name}`, indexes: c.indexes, docs: c.docs }));
  return entries(files, contents);
}

function* entries(files: { path: string; bytes: Buffer }[], contents: Parameters<typeof snapshotFileChunks>[0]): Generator<BackupEntry> {
  for (const file of files) {
    yield { path: file.path };
    for (let at = 0; at < file.bytes.length; at += CONTENT_CHUNK_BYTES) yield file.bytes.subarray(at, at + CONTENT_CHUNK_BYTES);
  }
  yield { path: `${STORE_FOLDER}/${SNAPSHOT_FILE}` };
  yield* snapshotFileChunks(contents, 0);
}

function collectFiles(dir: string, relative: string, out: { path: string; bytes: Buffer }[]): void {
  for (const entry of fs.readdirSync(path.join(dir, relative), { withFileTypes: true })) {
    const rel = relative ? `${relative}/${entry.name}` : entry.name;
    if (rel === STORE_FOLDER || rel === RUNTIME_RECORD_FILE || entry.name.endsWith('.tmp')) continue;
    if (entry.isDirectory()) collectFiles(dir, rel, out);
    else if (entry.isFile()) out.push({ path: rel, bytes: fs.readFileSync(path.join(dir, rel)) });
  }
}

/** A path from a backup: relative, `/`-separated, no `.`/`..` or empty segments. */
export function checkedRelativePath(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > 4096 || value.includes('\\') || value.includes('\0')) throw new BackupRefused(`not a file path of a backup: ${JSON.stringify(value)}`);
  const segments = value.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..')) throw new BackupRefused(`not a file path of a backup: ${JSON.stringify(value)}`);
  return segments.join(path.sep);
}

interface ManifestFile { path: string; bytes: number; sha256: string }

/** Writes entries into a new folder `dir` (built beside it, renamed into place once whole). */
export class BackupWriter {
  private readonly partial: string;
  private readonly files: ManifestFile[] = [];
  private current: { path: string; fd: number; hash: ReturnType<typeof createHash>; bytes: number } | undefined;

  constructor(private readonly dir: string) {
    if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) throw new BackupRefused(`${dir} is not empty; back up into a new folder`);
    this.partial = `${dir.replace(/[\\/]+$/, '')}.partial-${process.pid}`;
    fs.rmSync(this.partial, { recursive: true, force: true });
    fs.mkdirSync(this.partial, { recursive: true, mode: 0o700 });
  }

  add(entry: BackupEntry): void {
    if (!(entry instanceof Uint8Array)) {
      this.closeFile();
      const relative = checkedRelativePath(entry.path);
      if (relative === BACKUP_MANIFEST || this.files.some((f) => f.path === entry.path)) throw new BackupRefused(`the backup holds ${entry.path} twice`);
      const file = path.join(this.partial, relative);
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      this.current = { path: entry.path, fd: fs.openSync(file, 'wx', 0o600), hash: createHash('sha256'), bytes: 0 };
      return;
    }
    if (!this.current) throw new BackupRefused('the backup holds bytes before naming their file');
    let written = 0;
    while (written < entry.length) written += fs.writeSync(this.current.fd, entry, written, entry.length - written);
    this.current.hash.update(entry);
    this.current.bytes += entry.length;
  }

  /** Writes the manifest and moves the folder into place. */
  finish(meta: { appId?: string }): { files: number; bytes: number } {
    this.closeFile();
    const manifest = { format: MANIFEST_FORMAT, version: 1, createdAt: new Date().toISOString(), ...meta, files: this.files };
    fs.writeFileSync(path.join(this.partial, BACKUP_MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
    if (fs.existsSync(this.dir)) fs.rmdirSync(this.dir);
    fs.renameSync(this.partial, this.dir);
    return { files: this.files.length, bytes: this.files.reduce((n, f) => n + f.bytes, 0) };
  }

  abandon(): void {
    if (this.current) fs.closeSync(this.current.fd);
    this.current = undefined;
    fs.rmSync(this.partial, { recursive: true, force: true });
  }

  private closeFile(): void {
    if (!this.current) return;
    fs.fsyncSync(this.current.fd);
    fs.closeSync(this.current.fd);
    this.files.push({ path: this.current.path, bytes: this.current.bytes, sha256: this.current.hash.digest('hex') });
    this.current = undefined;
  }
}

/** Checks a backup folder against its manifest; returns its files. */
export function checkBackup(dir: string): ManifestFile[] {
  let manifest: unknown;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(dir, BACKUP_MANIFEST), 'utf8'));
  } catch (error) {
    throw new BackupRefused(`${dir} is not a backup of "asl data backup" (${path.join(dir, BACKUP_MANIFEST)}: ${(error as Error).message})`);
  }
  if (!isObject(manifest) || manifest.format !== MANIFEST_FORMAT || manifest.version !== 1 || !Array.isArray(manifest.files)) {
    throw new BackupRefused(`${path.join(dir, BACKUP_MANIFEST)} is not a manifest this version reads`);
  }
  const files: ManifestFile[] = [];
  for (const entry of manifest.files) {
    if (!isObject(entry) || typeof entry.bytes !== 'number' || typeof entry.sha256 !== 'string') throw new BackupRefused(`${path.join(dir, BACKUP_MANIFEST)}: a file entry is malformed`);
    const relative = checkedRelativePath(entry.path);
    const file = path.join(dir, relative);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch {
      throw new BackupRefused(`${file} is missing from the backup`);
    }
    if (bytes.length !== entry.bytes || createHash('sha256').update(bytes).digest('hex') !== entry.sha256) {
      throw new BackupRefused(`${file} is not the file the backup wrote (size or SHA-256 differs): the backup is damaged`);
    }
    files.push({ path: entry.path as string, bytes: entry.bytes, sha256: entry.sha256 });
  }
  if (!files.some((f) => f.path === `${STORE_FOLDER}/${SNAPSHOT_FILE}`)) throw new BackupRefused(`${dir} holds no store snapshot (${STORE_FOLDER}/${SNAPSHOT_FILE})`);
  return files;
}

/**
 * Replaces the data folder with the backup's (no runtime may hold it: the caller checks). The new folder is
 * built and its store opened beside the old one first, so a failure leaves the old folder as it was.
 */
export async function restoreDataFolder(backupDir: string, dataDir: string): Promise<{ files: number }> {
  const files = checkBackup(backupDir);
  const target = path.resolve(dataDir);
  const staging = `${target}.restoring-${process.pid}`;
  const replaced = `${target}.replaced-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true, mode: 0o700 });
  try {
    for (const f of files) {
      const to = path.join(staging, checkedRelativePath(f.path));
      fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
      fs.copyFileSync(path.join(backupDir, checkedRelativePath(f.path)), to);
      fs.chmodSync(to, 0o600);
    }
    const store = await EmbeddedStore.open(path.join(staging, STORE_FOLDER), {});
    await store.close();
  } catch (error) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw error instanceof BackupRefused ? error : new BackupRefused(`the backup does not restore: ${(error as Error).message}`);
  }
  const hadOne = fs.existsSync(target);
  if (hadOne) fs.renameSync(target, replaced);
  fs.renameSync(staging, target);
  if (hadOne) fs.rmSync(replaced, { recursive: true, force: true });
  return { files: files.length };
}
