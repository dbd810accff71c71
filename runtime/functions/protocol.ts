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

/** A plain object (a document), as opposed to an array or a value of a class: the values that are lent. */
function isDocument(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A value whose documents (the value itself, or an array's elements) travel as lent documents. */
export interface LendingEncoded { payload: Encoded; lent?: Lent; docs?: Encoded }

/**
 * Encodes `value` with its documents apart: `payload` holds the rest (null in their places) and `docs`
 * their BSON, in handle order; `register` is told each document's handle.
 */
export function encodeLending(value: unknown, register: (doc: Record<string, unknown>) => number): LendingEncoded {
  const docs: Record<string, unknown>[] = [];
  const lend = (doc: Record<string, unknown>): number => {
    docs.push(doc);
    return register(doc);
  };
  let lent: Lent | undefined;
  let rest: unknown = value;
  if (isDocument(value)) {
    lent = { root: lend(value) };
    rest = null;
  } else if (Array.isArray(value) && value.some(isDocument)) {
    const items: number[] = [];
    rest = value.map((item, index) => {
      if (!isDocument(item)) return item;
      items.push(index, lend(item));
      return null;
    });
    lent = { items };
  }
  if (!lent) return { payload: encodeValue(value) };
  // One serialisation for all of them: `{v: [doc, …]}`, which decodeLending takes apart.
  const bytes = BSON.serialize({ v: docs });
  return { payload: encodeValue(rest), lent, docs: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1') };
}

/** BSON element types of the `{v: [doc, …]}` wrapper. */
const BSON_ARRAY = 0x04;
const BSON_DOCUMENT = 0x03;

/** The BSON of each document in `{v: [doc, …]}`, in order. */
function lentDocuments(bytes: Buffer): Buffer[] {
  // Wrapper: int32 size, 0x04 'v\0', the array: int32 size, then per element 0x03, its index as a
  // C string, the embedded document (int32 size first), and a closing 0x00.
  if (bytes[4] !== BSON_ARRAY || bytes[5] !== 0x76 || bytes[6] !== 0) throw new Error('malformed lent documents');
  const arrayEnd = 7 + bytes.readInt32LE(7) - 1;
  const out: Buffer[] = [];
  let offset = 11;
  while (offset < arrayEnd) {
    if (bytes[offset] !== BSON_DOCUMENT) throw new Error('malformed lent documents');
    offset = bytes.indexOf(0, offset + 1) + 1;
    const size = bytes.readInt32LE(offset);
    out.push(bytes.subarray(offset, offset + size));
    offset += size;
  }
  return out;
}

/** The value `encodeLending` encoded; `receive` is told each lent document with its handle and its BSON. */
export function decodeLending(encoded: LendingEncoded, receive: (doc: Record<string, unknown>, handle: number, bson: Buffer) => void): unknown {
  const rest = decodeValue(encoded.payload);
  if (!encoded.lent || encoded.docs === undefined) return rest;
  const parts = lentDocuments(Buffer.from(encoded.docs, 'latin1'));
  let position = 0;
  const next = (handle: number): Record<string, unknown> => {
    const bson = parts[position++];
    if (!bson) throw new Error('fewer lent documents than handles');
    const doc = BSON.deserialize(bson, { promoteLongs: false }) as Record<string, unknown>;
    receive(doc, handle, bson);
    return doc;
  };
  if (encoded.lent.root !== undefined) return next(encoded.lent.root);
  const items = rest as unknown[];
  const pairs = encoded.lent.items ?? [];
  for (let i = 0; i < pairs.length; i += 2) items[pairs[i]] = next(pairs[i + 1]);
  return items;
}

/**
 * Encodes a function's result, leaving out (as handles) the lent documents it returns unchanged:
 * `handleOf` gives a document's handle when it was lent to this call and still encodes as it came.
 */
export function encodeReturned(value: unknown, handleOf: (doc: Record<string, unknown>) => number | undefined): { payload: Encoded; returned?: Lent } {
  if (isDocument(value)) {
    const root = handleOf(value);
    if (root !== undefined) return { payload: encodeValue(null), returned: { root } };
  } else if (Array.isArray(value)) {
    const items: number[] = [];
    const rest = value.map((item, index) => {
      const handle = isDocument(item) ? handleOf(item) : undefined;
      if (handle === undefined) return item;
      items.push(index, handle);
      return null;
    });
    if (items.length > 0) return { payload: encodeValue(rest), returned: { items } };
  }
  return { payload: encodeValue(value) };
}

/** The result `encodeReturned` encoded, with the lent documents put back by `lentDoc(handle)`. */
export function decodeReturned(payload: Encoded, returned: Lent | undefined, lentDoc: (handle: number) => unknown): unknown {
  const rest = decodeValue(payload);
  if (!returned) return rest;
  if (returned.root !== undefined) return lentDoc(returned.root);
  const items = rest as unknown[];
  const pairs = returned.items ?? [];
  for (let i = 0; i < pairs.length; i += 2) items[pairs[i]] = lentDoc(pairs[i + 1]);
  return items;
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

/**
 * Documents that crossed to the worker keep a handle to the main thread's object. When a function returns
 * one of them unchanged (its encoding is the same), only the handle travels back: decoding twenty
 * documents costs the main thread more than anything else a resolver function does. `root` is the handle
 * of the value itself; `items` gives the handles of an array's elements as flat pairs (index, handle, index,
 * handle…): posting one array of numbers costs a fraction of posting an array per pair.
 */
export interface Lent { root?: number; items?: number[] }

export type ToWorker =
  | { t: 'call'; id: number; name: string; sourceId: number; source?: string; path: string; payload: Encoded }
  | ({ t: 'reply'; rid: number; ok: true } & LendingEncoded)
  | { t: 'reply'; rid: number; ok: false; message: string }
  /** Answered with `pong` at once: tells a worker whose event loop runs from one stuck in a loop. */
  | { t: 'ping' }
  /** The call ran out of time while the worker stayed responsive: drop it, refuse its further requests. */
  | { t: 'abandon'; id: number }
  | { t: 'reload' };

export type FromWorker =
  | { t: 'ready' }
  | { t: 'pong' }
  /** The worker has handled everything sent to it so far and is back in its event loop (not stuck). */
  | { t: 'drained' }
  /** `returned`: places of the payload (left null there) that hold documents lent to this call. */
  | { t: 'done'; id: number; payload: Encoded; returned?: Lent }
  | { t: 'failed'; id: number; message: string }
  | { t: 'syntax'; id: number; reason: string; line: number; character: number }
  | { t: 'service'; id: number; rid: number; service: string; action: string; payload: Encoded }
  | { t: 'execute'; id: number; rid: number; name: string; payload: Encoded }
  | { t: 'log'; name: string; level: LogLevel; text: string };

/** Synchronous requests (values, environment) travel on their own port so the worker can block on them. */
export type SyncRequest = { t: 'value'; name: string } | { t: 'environment' };
export interface SyncReply { ok: boolean; payload?: Encoded; message?: string }
