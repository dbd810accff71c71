// The apps of an editor workspace: which apps exist, their loaded models, and their diagnostics.
// Pure logic over an injected file system; the connection wiring lives in server.ts.
import path from 'node:path';
import { CheckCache, checkApp } from '../core/check';
import type { Diagnostic } from '../core/diagnostics';
import { CachingFileSystem, overlayFileSystem, type AppFileSystem } from '../core/fs';
import { findAppRoots, loadApp, ParseCache, ROOT_FILE_NAMES } from '../core/load';
import type { AppModel } from '../core/model';
import type { GraphqlAppReason } from '../core/protocol';

export interface LoadedApp {
  model: AppModel;
  /** Diagnostics of the whole app, all files. */
  diagnostics: Diagnostic[];
  /** Per-app results kept between reloads (per-file diagnostics, the generated GraphQL schema). */
  cache: CheckCache;
}

export class AppWorkspace {
  private folders: string[] = [];
  private readonly apps = new Map<string, LoadedApp>();
  /** Unsaved editor buffers: absolute path → text. They win over the disk. */
  private readonly openTexts = new Map<string, string>();
  private readonly cache = new ParseCache();
  private readonly fs: AppFileSystem;
  /** Present when disk reads are cached; then every change on disk must be reported through fileChanged. */
  private readonly disk?: CachingFileSystem;

  /** `cacheDisk`: only when the client reports file changes (watched files), or edits on disk would go unseen. */
  constructor(diskFs: AppFileSystem, options: { cacheDisk?: boolean } = {}) {
    if (options.cacheDisk) this.disk = new CachingFileSystem(diskFs);
    this.fs = overlayFileSystem(this.disk ?? diskFs, this.openTexts);
  }

  get appCount(): number { return this.apps.size; }
  allApps(): LoadedApp[] { return [...this.apps.values()]; }

  /** Finds and loads every app in these folders (replacing what was known). */
  async setFolders(folders: string[]): Promise<void> {
    this.folders = folders.map((f) => path.resolve(f));
    await this.rescan();
  }

  async rescan(): Promise<void> {
    this.disk?.clear();
    const roots = new Set<string>();
    for (const folder of this.folders) for (const root of await findAppRoots(this.fs, folder)) roots.add(root);
    for (const known of [...this.apps.keys()]) if (!roots.has(known)) this.apps.delete(known);
    for (const root of roots) await this.reload(root);
  }

  async reload(root: string): Promise<LoadedApp> {
    const model = await loadApp(this.fs, root, { cache: this.cache });
    const cache = this.apps.get(root)?.cache ?? new CheckCache();
    const loaded = { model, diagnostics: checkApp(model, cache), cache };
    this.apps.set(root, loaded);
    return loaded;
  }

  /** The root of the app that owns this file, if any. */
  appRootOf(file: string): string | undefined {
    let best: string | undefined;
    for (const root of this.apps.keys()) {
      if ((file === root || file.startsWith(root + path.sep)) && (!best || root.length > best.length)) best = root;
    }
    return best;
  }

  appOf(file: string): LoadedApp | undefined {
    const root = this.appRootOf(file);
    return root ? this.apps.get(root) : undefined;
  }

  /**
   * The app whose generated schema GraphQL in this file is checked against: the app whose folder holds the
   * file, else the only app, else the preferred one (an app root or name from the settings).
   */
  graphqlAppOf(file: string, preferred?: string): { app: LoadedApp; reason: GraphqlAppReason } | undefined {
    const own = this.appOf(file);
    if (own) return { app: own, reason: 'folder' };
    const apps = this.allApps();
    if (apps.length === 1) return { app: apps[0], reason: 'only' };
    if (!preferred) return undefined;
    const chosen = apps.find((a) => a.model.rootDir === path.resolve(preferred))
      ?? apps.find((a) => a.model.name === preferred || a.model.appId === preferred);
    return chosen && { app: chosen, reason: 'setting' };
  }

  setOpenText(file: string, text: string): void { this.openTexts.set(file, text); }
  closeText(file: string): void { this.openTexts.delete(file); }
  openText(file: string): string | undefined { return this.openTexts.get(file); }

  /**
   * A file changed (edited, saved, created or deleted). Returns the roots whose model was rebuilt.
   * Root files appearing or vanishing change which apps exist, so those trigger a rescan.
   */
  async fileChanged(file: string, kind: 'changed' | 'created' | 'deleted'): Promise<string[]> {
    if (kind === 'deleted') this.cache.delete(file);
    this.disk?.invalidate(file);
    if (kind !== 'changed' && (ROOT_FILE_NAMES as readonly string[]).includes(path.basename(file))) {
      const before = new Set(this.apps.keys());
      await this.rescan();
      return [...new Set([...before, ...this.apps.keys()])];
    }
    const root = this.appRootOf(file);
    if (!root) return [];
    await this.reload(root);
    return [root];
  }

  /** Diagnostics grouped by file for one app (files without problems are absent). */
  static byFile(diagnostics: Diagnostic[]): Map<string, Diagnostic[]> {
    const map = new Map<string, Diagnostic[]>();
    for (const d of diagnostics) {
      const list = map.get(d.file);
      if (list) list.push(d); else map.set(d.file, [d]);
    }
    return map;
  }
}
