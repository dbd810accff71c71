// Messages between the runner (main thread) and its function workers, and the value encoding they share.
// Values cross as BSON rather than EJSON text: canonical EJSON read back strictly turns plain numbers into
// Int32/Double wrappers, read back relaxed it turns Long into numbers; BSON keeps numbers as numbers and
// ObjectId/Long/Decimal128/Date/Binary as themselves, and is several times faster to encode and decode.
// The bytes travel as a latin1 string (one char per byte, lossless): posting a string costs a memcpy, while
// posting a typed array costs several times more than the whole encoding.
import { BSON } from 'bson';

/** A value in BSON, one latin1 character per byte. */
export type Encoded = string;

/** Wrapped so BSON (whose top level must be a document) can carry any value; `undefined` survives at the top. */
export function encodeValue(value: unknown): Encoded {
  const bytes = BSON.serialize(value === undefined ? { u: true } : { v: value });
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

export function decodeValue(encoded: Encoded): unknown {
  const doc = BSON.deserialize(Buffer.from(encoded, 'latin1'), { promoteLongs: false });
  return doc.u === true ? undefined : doc.v;
}

export type LogLevel = 'log' | 'info' | 'warn' | 'error' | 'debug';

/** What a call carries into the worker besides the arguments. */
export interface CallPayload {
  args: unknown[];
  user: unknown;
  request: unknown;
  runAsSystem: boolean;
}

export interface WorkerInit {
  /** The app's `functions/node_modules`, from which functions may `require()` packages. */
  packagesDir: string | undefined;
  /** Shared flag the worker sleeps on while the main thread answers a synchronous request. */
  syncFlag: Int32Array;
  /**
   * The id of the call whose code the worker is running (0: none, or not known), so that the runner can
   * tell which call keeps a stuck worker busy.
   */
  runningCall: Int32Array;
  syncPort: import('node:worker_threads').MessagePort;
}

// Both directions post arrays of messages: everything one side has for the other when its event loop
// turn ends goes in one postMessage, whose fixed cost dominates small messages under load.

export type ToWorker =
  | { t: 'call'; id: number; name: string; sourceId: number; source?: string; path: string; payload: Encoded }
  | { t: 'reply'; rid: number; ok: true; payload: Encoded }
  | { t: 'reply'; rid: number; ok: false; message: string }
  /** Answered with `pong` at once: tells a worker whose event loop runs from one stuck in a loop. */
  | { t: 'ping' }
  /** The call ran out of time while the worker stayed responsive: drop it, refuse its further requests. */
  | { t: 'abandon'; id: number }
  | { t: 'reload' };

export type FromWorker =
  | { t: 'ready' }
  | { t: 'pong' }
  | { t: 'done'; id: number; payload: Encoded }
  | { t: 'failed'; id: number; message: string }
  | { t: 'syntax'; id: number; reason: string; line: number; character: number }
  | { t: 'service'; id: number; rid: number; service: string; action: string; payload: Encoded }
  | { t: 'execute'; id: number; rid: number; name: string; payload: Encoded }
  | { t: 'log'; name: string; level: LogLevel; text: string };

/** Synchronous requests (values, environment) travel on their own port so the worker can block on them. */
export type SyncRequest = { t: 'value'; name: string } | { t: 'environment' };
export interface SyncReply { ok: boolean; payload?: Encoded; message?: string }
