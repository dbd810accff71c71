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
    async readFile(p) { return overlay.get(p) ?? base.readFile(p); },
    async readDir(p) { return base.readDir(p); },
  };
}
