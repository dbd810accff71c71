// Where sync state lives on disk: the runtime's state in the data folder (`sync/state.json`, which the
// language server also reads as the marker of what runs), and edits of the app's `sync/config.json`
// that keep its formatting (CLI, palette and admin writes go to the file first).
import fs from 'node:fs';
import path from 'node:path';
import { applyEdits, modify, parse, type ParseError } from 'jsonc-parser';
import { isPlainObject } from '../../core/rules/bsonValues';
import { INITIAL_SYNC_STATE, syncSettingsToFile, type SyncRuntimeState, type SyncSettings } from '../../core/sync';
import { writePrivateFile } from '../data-folder';

export function syncStatePath(dataDir: string): string {
  return path.join(dataDir, 'sync', 'state.json');
}

/** The persisted state, or the initial one when there is none (or it cannot be read). */
export function readSyncState(dataDir: string): SyncRuntimeState {
  let text: string;
  try {
    text = fs.readFileSync(syncStatePath(dataDir), 'utf8');
  } catch {
    return INITIAL_SYNC_STATE;
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (isPlainObject(value) && typeof value.status === 'string' && typeof value.epoch === 'number') return value as unknown as SyncRuntimeState;
  } catch {
    // A damaged state file starts sync over rather than stopping the runtime.
  }
  return INITIAL_SYNC_STATE;
}

/** Written whole through a temporary file, so a crash leaves the old state or the new one. */
export function writeSyncState(dataDir: string, state: SyncRuntimeState): void {
  writePrivateFile(syncStatePath(dataDir), `${JSON.stringify(state, null, 2)}\n`);
}

export function syncConfigPath(appDir: string): string {
  return path.join(appDir, 'sync', 'config.json');
}

/** Reads `sync/config.json` as JSON (comments allowed); undefined when absent; throws with a location when malformed. */
export function readSyncConfigFile(appDir: string): unknown {
  const file = syncConfigPath(appDir);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true });
  if (errors.length > 0) throw new Error(`${file}: not valid JSON at offset ${errors[0].offset}`);
  return value;
}

/**
 * Writes the settings into `sync/config.json`, changing only the values that differ so the file keeps
 * its layout, key order and comments.
 */
export function writeSyncConfigFile(appDir: string, settings: SyncSettings): void {
  const file = syncConfigPath(appDir);
  let text = '';
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    text = '{}\n';
  }
  const next = syncSettingsToFile(settings);
  const current = parse(text, [], { allowTrailingComma: true }) as unknown;
  const existing = isPlainObject(current) ? current : {};
  const formatting = { formattingOptions: { insertSpaces: true, tabSize: 2 } };
  for (const [key, value] of Object.entries(next)) {
    if (JSON.stringify(existing[key]) !== JSON.stringify(value)) text = applyEdits(text, modify(text, [key], value, formatting));
  }
  for (const key of Object.keys(existing)) {
    if (!(key in next) && (key === 'last_disabled' || key === 'partition')) text = applyEdits(text, modify(text, [key], undefined, formatting));
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}
