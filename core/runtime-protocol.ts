// The handshake between a runtime (`asl serve`) and the process that spawned it with an IPC channel
// (the editor extension), declared once: the runtime sends `RuntimeMessage`s with `process.send`, the parent
// sends `ParentMessage`s. No text scraping: the URL, the app ids and the admin session arrive as data.

/** Bumped when a message changes shape; a parent refuses a runtime speaking another version. */
export const RUNTIME_PROTOCOL_VERSION = 1;

export type RuntimeLogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

export interface RuntimeAppInfo {
  appId: string;
  name: string;
  /** Absolute folder of the app's files. */
  appDir: string;
  /** Absolute data folder (documents, users, secrets of the runtime). */
  dataDir: string;
  /** Base URL of the client API for this app (`{url}/api/client/v2.0/app/{appId}/…`). */
  url: string;
  /** The app's Admin API path (`/api/admin/v3.0/groups/{groupId}/apps/{id}`), when the runtime has one. */
  adminAppPath?: string;
  /**
   * With `--inspect-functions`: the WebSocket address of the app's function inspector (it holds the
   * inspector's secret: for the parent's debugger only, never for a log).
   */
  functionsInspector?: string;
}

/** An admin session the runtime minted for its parent: bearer tokens for the admin and local-only routes. */
export interface AdminSessionGrant {
  accessToken: string;
  refreshToken: string;
}

export interface RuntimeProblem {
  /** Absolute path of the file. */
  file: string;
  /** 0-based. */
  line: number;
  character: number;
  code: string;
  message: string;
}

export type RuntimeMessage =
  | {
      type: 'ready';
      version: number;
      url: string;
      port: number;
      apps: RuntimeAppInfo[];
      /** Absent when the runtime cannot mint one (then admin-only features are unavailable). */
      admin?: AdminSessionGrant;
      errors: number;
      warnings: number;
    }
  | { type: 'failed'; version: number; reason: 'app-errors' | 'usage' | 'start'; message: string; problems: RuntimeProblem[] }
  | { type: 'log'; level: RuntimeLogLevel; message: string }
  | { type: 'reloaded'; applied: boolean; errors: number }
  /** With `--inspect-functions`: an app's function process started again, its inspector at a new address. */
  | { type: 'functionsInspector'; appId: string; url: string };

export type ParentMessage = { type: 'stop' };

const LOG_LEVELS: readonly string[] = ['trace', 'debug', 'info', 'warn', 'error'];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A function inspector's address: a WebSocket on loopback only (a debugger attaches to nothing else). */
export function isInspectorAddress(value: unknown): value is string {
  return typeof value === 'string' && /^ws:\/\/127\.0\.0\.1:\d{1,5}\/[0-9a-f-]{36}$/.test(value);
}

/** Checks the shape of a message from a runtime (a parent must not trust a child blindly). */
export function isRuntimeMessage(value: unknown): value is RuntimeMessage {
  if (!isRecord(value)) return false;
  switch (value.type) {
    case 'ready':
      return typeof value.version === 'number' && typeof value.url === 'string' && typeof value.port === 'number'
        && Array.isArray(value.apps) && value.apps.every((a) => isRecord(a) && typeof a.appId === 'string' && typeof a.url === 'string'
          && typeof a.appDir === 'string' && typeof a.dataDir === 'string' && typeof a.name === 'string'
          && (a.functionsInspector === undefined || isInspectorAddress(a.functionsInspector)))
        && (value.admin === undefined || (isRecord(value.admin) && typeof value.admin.accessToken === 'string' && typeof value.admin.refreshToken === 'string'))
        && typeof value.errors === 'number' && typeof value.warnings === 'number';
    case 'failed':
      return typeof value.message === 'string' && typeof value.reason === 'string' && Array.isArray(value.problems);
    case 'log':
      return typeof value.message === 'string' && LOG_LEVELS.includes(value.level as string);
    case 'reloaded':
      return typeof value.applied === 'boolean' && typeof value.errors === 'number';
    case 'functionsInspector':
      return typeof value.appId === 'string' && isInspectorAddress(value.url);
    default:
      return false;
  }
}

export function isParentMessage(value: unknown): value is ParentMessage {
  return isRecord(value) && value.type === 'stop';
}

/** The runtime's side of the channel: what `process.send` offers when the process has an IPC channel. */
export interface ParentChannel {
  send(message: RuntimeMessage): void;
  /** Called once when the parent asks to stop or goes away (channel closed). */
  onStop(listener: () => void): void;
}

/** The channel of a Node process started with an IPC channel, or undefined for a process started from a terminal. */
export function parentChannelOf(proc: NodeJS.Process): ParentChannel | undefined {
  if (typeof proc.send !== 'function' || !proc.connected) return undefined;
  return {
    send(message) {
      if (proc.connected) proc.send!(message, undefined, undefined, () => undefined);
    },
    onStop(listener) {
      let called = false;
      const once = () => { if (!called) { called = true; listener(); } };
      proc.on('message', (m) => { if (isParentMessage(m)) once(); });
      proc.on('disconnect', once);
    },
  };
}

/** The file a running runtime keeps in each app's data folder: `<data folder>/runtime.json` (mode 0600). */
export const RUNTIME_RECORD_FILE = 'runtime.json';

/**
 * What a runtime leaves in each data folder it holds, so a local tool (`asl sync simulate` beside
 * `asl serve`) asks it over its local admin routes instead of refusing the locked folder. Written once the
 * runtime listens, removed when it stops; a record whose process no longer runs is stale.
 */
export interface RuntimeRecord {
  version: number;
  pid: number;
  /** Base URL of the runtime (`{url}/api/admin/v3.0/local/app/{appId}/…`). */
  url: string;
  appId: string;
  /** A session the runtime minted for local tools; anyone who can read the data folder can already act as its admin. */
  admin: AdminSessionGrant;
  /**
   * With `url` https: the SHA-256 fingerprint (`AB:CD:…`) of the certificate served now, which local tools
   * accept instead of checking a name (the certificate names the public host, not 127.0.0.1).
   */
  tlsCertificateSha256?: string;
}

export function isRuntimeRecord(value: unknown): value is RuntimeRecord {
  return isRecord(value) && value.version === RUNTIME_PROTOCOL_VERSION && typeof value.pid === 'number' && Number.isInteger(value.pid) && value.pid > 0
    && typeof value.url === 'string' && typeof value.appId === 'string'
    && isRecord(value.admin) && typeof value.admin.accessToken === 'string' && typeof value.admin.refreshToken === 'string'
    && (value.tlsCertificateSha256 === undefined || typeof value.tlsCertificateSha256 === 'string');
}

/**
 * The data routes of a running runtime, for `asl data export|import|backup` beside it, under
 * `{url}/api/admin/v3.0/local/app/{appId}` (admin session). The export and backup answers and the import
 * body are streams of frames `[u32 LE payload length][u8 kind][payload]`; JSON payloads are UTF-8.
 * Export takes `?db=NAME`; import takes `?drop=true` (replace each collection it names).
 */
export const DATA_ROUTES = { export: '/data/export', import: '/data/import', backup: '/data/backup' } as const;

export const DataFrameKind = {
  /** JSON `DataCollectionFrame`: the collection whose `documents` frames follow. */
  collection: 1,
  /** Whole BSON documents of the current collection, concatenated, in order. */
  documents: 2,
  /** JSON `DataFileFrame` (backup): a file of the data folder whose `content` frames follow. */
  file: 3,
  /** Bytes of the current file. */
  content: 4,
  /** JSON `DataEndFrame`: a stream without it was cut off. */
  end: 5,
  /** JSON `DataFailedFrame` (answers only): the runtime could not finish the stream. */
  failed: 6,
} as const;
export type DataFrameKind = (typeof DataFrameKind)[keyof typeof DataFrameKind];

export interface DataCollectionFrame { database: string; collection: string; indexes: string[] }
/** `path` relative to the data folder, `/`-separated. */
export interface DataFileFrame { path: string }
export interface DataEndFrame { collections: number; documents: number; files?: number }
export interface DataFailedFrame { error: string }

/** The import answer: one JSON object per line, progress as batches become durable, then the outcome. */
export type DataImportEvent =
  | { kind: 'progress'; written: number; total: number }
  | { kind: 'done'; collections: { database: string; collection: string; documents: number }[] }
  | { kind: 'failed'; error: string; namespace?: string; offset?: number };
