// The file system is injected so that the loader runs the same on disk (CLI, runtime), over the
// editor's open buffers (language server) and in memory (tests).
import fs from 'node:fs/promises';
import path from 'node:path';

export interface DirEntry { name: string; isDirectory: boolean }

export interface AppFileSystem {
  /** The file's text, or undefined when there is no such file. */
  readFile(absPath: string): Promise<string | undefined>;
  /** The folder's entries, or undefined when there is no such folder. */
  readDir(absPath: string): Promise<DirEntry[] | undefined>;
}

export const nodeFileSystem: AppFileSystem = {
  async readFile(p) {
    try { return await fs.readFile(p, 'utf8'); } catch (e) { if (isMissing(e)) return undefined; throw e; }
  },
  async readDir(p) {
    try {
      const entries = await fs.readdir(p, { withFileTypes: true });
      return entries.map((e) => ({ name: e.name, isDirectory: e.isDirectory() }));
    } catch (e) { if (isMissing(e)) return undefined; throw e; }
  },
};

function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
}

/** An in-memory file system from a map of absolute path → text. Folders are implied by the paths. */
export function memoryFileSystem(files: Record<string, string>): AppFileSystem {
  const norm = (p: string) => path.resolve(p);
  const map = new Map(Object.entries(files).map(([p, t]) => [norm(p), t]));
  return {
    async readFile(p) { return map.get(norm(p)); },
    async readDir(p) {
      const dir = norm(p) + path.sep;
      const seen = new Map<string, boolean>();
      for (const file of map.keys()) {
        if (!file.startsWith(dir)) continue;
        const rest = file.slice(dir.length);
        const sep = rest.indexOf(path.sep);
        seen.set(sep < 0 ? rest : rest.slice(0, sep), sep >= 0 || seen.get(rest) === true);
      }
      return seen.size ? [...seen].map(([name, isDirectory]) => ({ name, isDirectory })) : undefined;
    },
  };
}

/** Overlays in-memory texts (the editor's unsaved buffers) on another file system. */
export function overlayFileSystem(base: AppFileSystem, overlay: ReadonlyMap<string, string>): AppFileSystem {
  return {
    // Not async: the base's (cached) promise is handed on as it is, with no promise and turns added per file.
    readFile(p) {
      const text = overlay.get(p);
      return text !== undefined ? Promise.resolve(text) : base.readFile(p);
    },
    readDir: (p) => base.readDir(p),
  };
}

/**
 * Remembers what it read until told a path changed. The language server uses it so that reloading an
 * app after one edit does not read every file from disk again; file-watcher events invalidate entries.
 */
export class CachingFileSystem implements AppFileSystem {
  private readonly files = new Map<string, Promise<string | undefined>>();
  private readonly dirs = new Map<string, Promise<DirEntry[] | undefined>>();
  constructor(private readonly base: AppFileSystem) {}

  readFile(p: string): Promise<string | undefined> {
    let hit = this.files.get(p);
    if (!hit) this.files.set(p, (hit = this.base.readFile(p)));
    return hit;
  }

  readDir(p: string): Promise<DirEntry[] | undefined> {
    let hit = this.dirs.get(p);
    if (!hit) this.dirs.set(p, (hit = this.base.readDir(p)));
    return hit;
  }

  /** Forget a changed, created or deleted path: its content, its listing, and its parent's listing. */
  invalidate(p: string): void {
    this.files.delete(p);
    this.dirs.delete(p);
    this.dirs.delete(path.dirname(p));
    const prefix = p + path.sep;
    for (const key of this.dirs.keys()) if (key.startsWith(prefix)) this.dirs.delete(key);
    for (const key of this.files.keys()) if (key.startsWith(prefix)) this.files.delete(key);
  }

  clear(): void { this.files.clear(); this.dirs.clear(); }
}

/** Writes text files on disk, creating their folders (the template engine's `FileWriter`). */
export const nodeFileWriter = {
  async writeFile(absPath: string, text: string): Promise<void> {
    await fs.mkdir(path.dirname(absPath), { recursive: true });
    await fs.writeFile(absPath, text);
  },
};
