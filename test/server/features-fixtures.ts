// In-memory apps and `|` cursor markers for the pure language feature functions.
import path from 'node:path';
import { CheckCache, checkApp } from '../../core/check';
import { JsonFile, type Position } from '../../core/json';
import { loadApp } from '../../core/load';
import type { LoadedApp } from '../../server/workspace';
import { APP_ROOT, appFs } from '../helpers/app';

export async function loadedApp(files: Record<string, unknown>): Promise<LoadedApp> {
  const model = await loadApp(appFs(files), APP_ROOT);
  const cache = new CheckCache();
  return { model, diagnostics: checkApp(model, cache), cache };
}

/** The document `rel` of the app with the text `marked`, and the position of its single `|`. */
export function cursor(rel: string, marked: string): { file: JsonFile; position: Position } {
  const offset = marked.indexOf('|');
  if (offset < 0 || marked.indexOf('|', offset + 1) >= 0) throw new Error('mark the cursor with exactly one |');
  const file = new JsonFile(path.join(APP_ROOT, rel), rel, marked.slice(0, offset) + marked.slice(offset + 1));
  return { file, position: file.positionAt(offset) };
}
