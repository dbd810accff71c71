// Messages between the runtime (runner, pool), the function process's agent and the function workers, and the value encoding they share.
// Values cross as BSON rather than EJSON text: canonical EJSON read back strictly turns plain numbers into
// Int32/Double wrappers, read back relaxed it turns Long into numbers; BSON read into the store's form
// (core/bsonDecode.ts) keeps each number's type (int32 and other doubles as numbers, 4.0 as a `Double`)
// and ObjectId/Long/Decimal128/Date/Binary as themselves, and is several times faster to encode and decode.
// The bytes travel as a latin1 string (one char per byte, lossless): posting a string costs a memcpy, while
// posting a typed array costs several times more than the whole encoding.
import { isProxy } from 'node:util/types';
import { BSON, Decimal128, Double, Long, ObjectId } from 'bson';
import { deserializeStored } from '../../core/bsonDecode';
import type { DecodedDocumentCache } from './decoded-documents';

/** A value in BSON, one latin1 character per byte. */
export type Encoded = string;

/**
 * The most BSON one value may take to cross between a function and the runtime (arguments, data, results):
 * MongoDB's document size limit. Above it the bson library throws an offset error or, for long strings,
 * silently truncates, so the size is checked here and a larger value is refused whole.
 */
export const MAX_CROSSING_BYTES = 16 * 1024 * 1024;

export class ValueTooLarge extends Error {
  constructor(bytes?: number) {
    super(`the value takes ${bytes === undefined ? 'more than' : ''} ${bytes ?? MAX_CROSSING_BYTES} bytes of BSON, above the limit of ${MAX_CROSSING_BYTES} bytes (16 MiB) for a value passed between functions and the runtime; return or send less data at once`.replace('  ', ' '));
    this.name = 'ValueTooLarge';
  }
}

function serializeBounded(doc: Record<string, unknown>): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = BSON.serialize(doc);
  } catch (error) {
    if (error instanceof RangeError && /offset|out of range/i.test(error.message)) throw new ValueTooLarge();
    throw error;
  }
  if (bytes.byteLength > MAX_CROSSING_BYTES) throw new ValueTooLarge(bytes.byteLength);
  return bytes;
}

/** Wrapped so BSON (whose top level must be a document) can carry any value; `undefined` survives at the top. */
export function encodeValue(value: unknown): Encoded {
  return latin1(serializeBounded(value === undefined ? { u: true } : { v: value }));
}

export function decodeValue(encoded: Encoded): unknown {
  const doc = deserializeStored(Buffer.from(encoded, 'latin1'));
  return doc.u === true ? undefined : doc.v;
}

/**
 * A value crossing from the main thread to a worker: plain data (see isPlainData) as it is, since structured
 * cloning carries it exactly as a BSON round trip would at a fraction of the cost; anything else as BSON.
 * The value is cloned when its batch of messages leaves, at the end of this turn of the event loop: the
 * runner's callers hand over values they no longer change. (Values from a worker are always BSON:
 * function code can hand over proxies and getters, which cloning would trip on after the fact, in the
 * middle of a batch of messages.)
 */
export type Carried = Encoded | { plain: unknown };

export function carry(value: unknown): Carried {
  return value !== undefined && isPlainData(value, 0) ? { plain: value } : encodeValue(value);
}

export function uncarry(carried: Carried): unknown {
  return typeof carried === 'string' ? decodeValue(carried) : carried.plain;
}

const LONE_SURROGATE = /\p{Cs}/u;
/** Deeper values, and longer arrays (whose extra properties cloning would keep and BSON drop), go as BSON. */
const MAX_PLAIN_DEPTH = 32;
const MAX_PLAIN_ARRAY = 256;

/**
 * Whether `value` is data that structured cloning and a BSON round trip give back alike: null, booleans,
 * numbers (but whole ones beyond int32), strings (UTF-8 has no lone surrogates), valid dates, arrays without holes, and plain objects
 * whose keys BSON can hold, of such data throughout. `undefined` inside is not (BSON makes null of it),
 * nor a `toBSON` method, a BSON type, a class instance or a proxy.
 */
function isPlainData(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'boolean':
      return true;
    case 'number':
      // A whole number beyond int32 (or -0) is a double in BSON, which decodes as a `Double`.
      return !Number.isInteger(value) || isInt32(value);
    case 'string':
      return !LONE_SURROGATE.test(value);
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (depth > MAX_PLAIN_DEPTH || isProxy(value) || typeof (value as { toBSON?: unknown }).toBSON === 'function') return false;
  const proto = Object.getPrototypeOf(value);
  if (Array.isArray(value)) {
    if (proto !== Array.prototype || value.length > MAX_PLAIN_ARRAY || Object.keys(value).length !== value.length) return false;
    for (let i = 0; i < value.length; i++) if (!isPlainData(value[i], depth + 1)) return false;
    return true;
  }
  if (value instanceof Date) return proto === Date.prototype && !Number.isNaN(value.getTime());
  if ((proto !== Object.prototype && proto !== null) || '_bsontype' in value) return false;
  for (const key of Object.keys(value)) {
    if (key.includes('\u0000') || LONE_SURROGATE.test(key) || !isPlainData((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/** A document's own BSON (no wrapper), one latin1 character per byte. */
export function encodeDocument(doc: Record<string, unknown>): Encoded {
  return latin1(serializeBounded(doc));
}

function latin1(bytes: Uint8Array): Encoded {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

/** A plain object (a document), as opposed to an array or a value of a class: the values that are lent. */
function isDocument(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A value whose documents (the value itself, or an array's elements) travel as lent documents. `payload`
 * holds the rest; it is left out when the lent documents are all there is (see wholeOfLent).
 */
export type LendingEncoded = { payload: Carried; lent?: undefined; docs?: undefined } | { payload?: Carried; lent: Lent; docs: Encoded };

/**
 * Encodes `value` with its documents apart: `payload` holds the rest (null in their places) and `docs`
 * their BSON, in handle order; `register` is told each document's handle. `encodeItem`, when given, gives
 * the BSON of an array element by its index (from documents whose BSON is kept, see OriginalEncodings).
 */
export function encodeLending(
  value: unknown, register: (doc: Record<string, unknown>) => number, encodeItem?: (index: number) => Encoded,
): LendingEncoded {
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
  if (!lent) return { payload: carry(value) };
  // `{v: [doc, …]}`, which decodeLending takes apart: put together from the elements' BSON when it is
  // given, else serialised in one go.
  let encodedDocs: Encoded;
  if (encodeItem && lent.items) {
    const parts: Encoded[] = [];
    for (let i = 0; i < lent.items.length; i += 2) parts.push(encodeItem(lent.items[i]));
    encodedDocs = wrapDocuments(parts);
    if (encodedDocs.length > MAX_CROSSING_BYTES) throw new ValueTooLarge(encodedDocs.length);
  } else {
    encodedDocs = latin1(serializeBounded({ v: docs }));
  }
  return isWholeOfLent(value, lent) ? { lent, docs: encodedDocs } : { payload: carry(rest), lent, docs: encodedDocs };
}

/** Whether `lent` holds all of `value`: the value is the lent document, or an array of nothing else. */
function isWholeOfLent(value: unknown, lent: Lent): boolean {
  return lent.root !== undefined || (Array.isArray(value) && lent.items !== undefined && lent.items.length === 2 * value.length);
}

/** The rest of a value that `lent` holds all of, its places left null: decoding it would give the same. */
function wholeOfLent(lent: Lent): unknown {
  return lent.root !== undefined ? null : new Array<unknown>((lent.items?.length ?? 0) / 2).fill(null);
}

/** An int32, little-endian, as four latin1 characters. */
function int32Text(n: number): string {
  return String.fromCharCode(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff);
}

/** What `BSON.serialize({v: docs})` gives, from each document's own BSON. */
export function wrapDocuments(parts: readonly Encoded[]): Encoded {
  let elements = '';
  for (let i = 0; i < parts.length; i++) elements += `\x03${i}\0${parts[i]}`;
  // The array: its size, its elements, a closing 0; the wrapper: its size, element 0x04 'v', the array, a closing 0.
  const array = int32Text(4 + elements.length + 1) + elements + '\0';
  return `${int32Text(4 + 3 + array.length + 1)}\x04v\0${array}\0`;
}

/** BSON element types of the `{v: [doc, …]}` wrapper. */
const BSON_ARRAY = 0x04;
const BSON_DOCUMENT = 0x03;

/** Where the BSON of each document in `{v: [doc, …]}` starts and ends, in order. */
function lentDocuments(bytes: Buffer): [start: number, end: number][] {
  // Wrapper: int32 size, 0x04 'v\0', the array: int32 size, then per element 0x03, its index as a
  // C string, the embedded document (int32 size first), and a closing 0x00.
  if (bytes[4] !== BSON_ARRAY || bytes[5] !== 0x76 || bytes[6] !== 0) throw new Error('malformed lent documents');
  const arrayEnd = 7 + bytes.readInt32LE(7) - 1;
  const out: [number, number][] = [];
  let offset = 11;
  while (offset < arrayEnd) {
    if (bytes[offset] !== BSON_DOCUMENT) throw new Error('malformed lent documents');
    offset = bytes.indexOf(0, offset + 1) + 1;
    const size = bytes.readInt32LE(offset);
    out.push([offset, offset + size]);
    offset += size;
  }
  return out;
}

/**
 * Whether `BSON.serialize(doc)` would give exactly `bson`, found without serializing: the document is
 * walked beside its bytes, element by element, following the serializer's choices (number as int32 or
 * double, undefined as null, `toBSON` first…). Every value that is not one of the usual document types
 * (string, number, boolean, null, ObjectId, Date, Double, Long, Decimal128, plain objects and arrays) makes it
 * answer false, and then the caller serializes: false is always safe, true only when the bytes match.
 */
export function encodesAs(doc: Record<string, unknown>, bson: Buffer): boolean {
  try {
    return sameDocument(doc, bson, 0, false) === bson.length;
  } catch {
    // Bytes that do not parse as a document (reads out of range) are no match.
    return false;
  }
}

const BSON_DOUBLE = 0x01;
const BSON_STRING = 0x02;
const BSON_OBJECT_ID = 0x07;
const BSON_BOOLEAN = 0x08;
const BSON_DATE = 0x09;
const BSON_NULL = 0x0a;
const BSON_INT32 = 0x10;
const BSON_INT64 = 0x12;
const BSON_DECIMAL128 = 0x13;
const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;
const scratchDouble = Buffer.alloc(8);

/** Where the document (or array) at `start` ends when `value` matches it, else -1. */
function sameDocument(value: unknown, bytes: Buffer, start: number, asArray: boolean): number {
  if (value === null || typeof value !== 'object' || typeof (value as { toBSON?: unknown }).toBSON === 'function') return -1;
  if (asArray ? !Array.isArray(value) : !isDocument(value) || '_bsontype' in value) return -1;
  const end = start + bytes.readInt32LE(start);
  const keys = asArray ? undefined : Object.keys(value);
  const count = asArray ? (value as unknown[]).length : keys!.length;
  let offset = start + 4;
  let index = 0;
  while (bytes[offset] !== 0) {
    if (index >= count) return -1;
    const type = bytes[offset]!;
    const nameStart = offset + 1;
    const nameEnd = bytes.indexOf(0, nameStart);
    if (nameEnd < 0) return -1;
    const key = asArray ? String(index) : keys![index]!;
    if (!sameText(key, bytes, nameStart, nameEnd)) return -1;
    offset = sameElement(type, (value as Record<string, unknown>)[key], bytes, nameEnd + 1);
    if (offset < 0) return -1;
    index++;
  }
  return index === count && offset + 1 === end ? end : -1;
}

/** Where the element value at `at` of this type ends when `value` serializes to it, else -1. */
function sameElement(type: number, value: unknown, bytes: Buffer, at: number): number {
  if (typeof (value as { toBSON?: unknown } | null | undefined)?.toBSON === 'function') return -1;
  switch (type) {
    case BSON_DOUBLE: {
      const n = value instanceof Double && value._bsontype === 'Double' ? value.value : value;
      if (typeof n !== 'number' || (n === value && isInt32(n))) return -1;
      scratchDouble.writeDoubleLE(n);
      return scratchDouble.equals(bytes.subarray(at, at + 8)) ? at + 8 : -1;
    }
    case BSON_INT32:
      return typeof value === 'number' && isInt32(value) && value === bytes.readInt32LE(at) ? at + 4 : -1;
    case BSON_STRING: {
      const size = bytes.readInt32LE(at);
      return typeof value === 'string' && sameText(value, bytes, at + 4, at + 4 + size - 1) ? at + 4 + size : -1;
    }
    case BSON_DOCUMENT:
    case BSON_ARRAY:
      return sameDocument(value, bytes, at, type === BSON_ARRAY);
    case BSON_OBJECT_ID: {
      if (!(value instanceof ObjectId) || value._bsontype !== 'ObjectId') return -1;
      const id = value.id;
      for (let i = 0; i < 12; i++) if (id[i] !== bytes[at + i]) return -1;
      return at + 12;
    }
    case BSON_BOOLEAN:
      return typeof value === 'boolean' && (bytes[at] === 1) === value && bytes[at]! <= 1 ? at + 1 : -1;
    case BSON_DATE: {
      if (!(value instanceof Date) || '_bsontype' in value) return -1;
      const millis = Long.fromNumber(value.getTime());
      return millis.low === bytes.readInt32LE(at) && millis.high === bytes.readInt32LE(at + 4) ? at + 8 : -1;
    }
    case BSON_NULL:
      return value === null ? at : -1;
    case BSON_INT64:
      return value instanceof Long && value._bsontype === 'Long' && value.low === bytes.readInt32LE(at) && value.high === bytes.readInt32LE(at + 4) ? at + 8 : -1;
    case BSON_DECIMAL128: {
      if (!(value instanceof Decimal128) || value._bsontype !== 'Decimal128') return -1;
      for (let i = 0; i < 16; i++) if (value.bytes[i] !== bytes[at + i]) return -1;
      return at + 16;
    }
    default:
      return -1;
  }
}

/** A number the serializer writes as int32 (else as a double). */
function isInt32(n: number): boolean {
  return !Object.is(n, -0) && Number.isSafeInteger(n) && n >= INT32_MIN && n <= INT32_MAX;
}

/** Whether `text` in UTF-8 is exactly bytes[start, end). */
function sameText(text: string, bytes: Buffer, start: number, end: number): boolean {
  if (text.length === end - start) {
    let ascii = true;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code >= 0x80) { ascii = false; break; }
      if (code !== bytes[start + i]) return false;
    }
    if (ascii) return true;
  }
  return Buffer.byteLength(text, 'utf8') === end - start && bytes.subarray(start, end).equals(Buffer.from(text, 'utf8'));
}

/**
 * The value `encodeLending` encoded; `receive` is told each lent document with its handle and its BSON
 * (as bytes, and as a latin1 string).
 * With `decodedDocuments`, documents seen before are copied from there instead of decoded again.
 */
export function decodeLending(
  encoded: LendingEncoded, receive: (doc: Record<string, unknown>, handle: number, bson: Buffer, key: string) => void, decodedDocuments?: DecodedDocumentCache,
): unknown {
  if (!encoded.lent) return uncarry(encoded.payload);
  const docs = encoded.docs;
  const rest = encoded.payload === undefined ? wholeOfLent(encoded.lent) : uncarry(encoded.payload);
  const bytes = Buffer.from(docs, 'latin1');
  const parts = lentDocuments(bytes);
  let position = 0;
  const next = (handle: number): Record<string, unknown> => {
    const part = parts[position++];
    if (!part) throw new Error('fewer lent documents than handles');
    const [start, end] = part;
    const bson = bytes.subarray(start, end);
    // One latin1 character per byte, so the string's offsets are the bytes'.
    const key = docs.slice(start, end);
    const doc = decodedDocuments ? decodedDocuments.decode(key, bson) : deserializeStored(bson);
    receive(doc, handle, bson, key);
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
/** A function's result as it crosses back: `payload` holds what is not a returned lent document, and is left out when nothing is. */
export type ReturnedEncoded = { payload: Encoded; returned?: undefined } | { payload?: Encoded; returned: Lent };

export function encodeReturned(value: unknown, handleOf: (doc: Record<string, unknown>) => number | undefined): ReturnedEncoded {
  if (isDocument(value)) {
    const root = handleOf(value);
    if (root !== undefined) return { returned: { root } };
  } else if (Array.isArray(value)) {
    const items: number[] = [];
    const rest = value.map((item, index) => {
      const handle = isDocument(item) ? handleOf(item) : undefined;
      if (handle === undefined) return item;
      items.push(index, handle);
      return null;
    });
    if (items.length > 0) {
      const returned = { items };
      return isWholeOfLent(value, returned) ? { returned } : { payload: encodeValue(rest), returned };
    }
  }
  return { payload: encodeValue(value) };
}

/** The result `encodeReturned` encoded, with the lent documents put back by `lentDoc(handle)`. */
export function decodeReturned(encoded: ReturnedEncoded, lentDoc: (handle: number) => unknown): unknown {
  const { payload, returned } = encoded;
  if (!returned) return decodeValue(encoded.payload);
  const rest = payload === undefined ? wholeOfLent(returned) : decodeValue(payload);
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
  /** Absent: the system user. */
  user?: unknown;
  request?: unknown;
  runAsSystem: boolean;
}

export interface WorkerInit {
  /** The app's `functions/node_modules`, from which functions may `require()` packages. */
  packagesDir: string | undefined;
  /** The data channel to the runtime's pool (channel.ts): a socket to connect to with a token, or a port. */
  link: { address: string; token: string } | { port: import('node:worker_threads').MessagePort };
  /** Shared flag the worker sleeps on while the runtime answers a synchronous request. */
  syncFlag: Int32Array;
  /**
   * The id of the call whose code the worker is running (0: none, or not known), so that the pool can
   * tell which call keeps a stuck worker busy.
   */
  runningCall: Int32Array;
  /**
   * The worker's number (`seq`) of the last call it started, with SEALED set once the pool has sealed the
   * worker: changed only by compare-and-exchange, so the worker and the pool agree on which calls it
   * started (it runs those) and which it did not (the pool runs those elsewhere).
   */
  started: Int32Array;
  /** How many messages the worker has handled: a worker stuck in code stops counting (see pool.ts). */
  handled: Int32Array;
  /** Where the worker leaves messages not sent yet before it runs function code again (see mailbox.ts). */
  mailbox: SharedArrayBuffer;
  syncPort: import('node:worker_threads').MessagePort;
}

/** The bit of WorkerInit.started that seals a worker. */
export const SEALED = 0x40000000;

// Both directions send arrays of messages (channel.ts): everything one side has for the other when its
// event loop turn ends goes in one frame, whose fixed cost dominates small messages under load.

/**
 * Documents that crossed to the worker keep a handle to the runtime's object. When a function returns
 * one of them unchanged (its encoding is the same), only the handle travels back: decoding twenty
 * documents costs the runtime more than anything else a resolver function does. `root` is the handle
 * of the value itself; `items` gives the handles of an array's elements as flat pairs (index, handle, index,
 * handle…): posting one array of numbers costs a fraction of posting an array per pair.
 */
export interface Lent { root?: number; items?: number[] }

/** The runtime's answer to a call's request for data or a nested call; `id` names the call. */
export type Reply = ({ t: 'reply'; id: number; rid: number; ok: true } & LendingEncoded) | { t: 'reply'; id: number; rid: number; ok: false; message: string };

export type ToWorker =
  /** `seq`: the call's number on this worker (see WorkerInit.started). */
  | { t: 'call'; id: number; seq: number; name: string; sourceId: number; source?: string; path: string; payload: Carried }
  | Reply
  /** Answered with `pong` at once: tells a worker whose event loop runs from one stuck in a loop. */
  | { t: 'ping' }
  /** The call ran out of time while the worker stayed responsive: drop it, refuse its further requests. */
  | { t: 'abandon'; id: number }
  | { t: 'reload' };

/** What a worker tells the pool; `done`, `failed`, `syntax`, `service`, `execute` and `log` go on to the runner. */
export type FromWorker =
  | { t: 'ready' }
  | { t: 'pong' }
  /** The worker has handled everything sent to it so far and is back in its event loop (not stuck); `sealed`: it saw its seal. */
  | { t: 'drained'; sealed: boolean }
  /** The worker was sealed before it started this call, which the pool runs elsewhere. */
  | { t: 'skipped'; id: number }
  | CallMessage
  | { t: 'log'; name: string; level: LogLevel; text: string };

/** A call's outcome, or its request to the runtime. */
export type CallMessage =
  /** `returned`: places of the payload (left null there) that hold documents lent to this call. */
  | ({ t: 'done'; id: number } & ReturnedEncoded)
  /** `stack`: the frames of the app's own code (its function file, its packages), when what it threw had any. */
  | { t: 'failed'; id: number; message: string; stack?: string }
  | { t: 'syntax'; id: number; reason: string; line: number; character: number }
  | { t: 'service'; id: number; rid: number; service: string; action: string; payload: Encoded }
  | { t: 'execute'; id: number; rid: number; name: string; payload: Encoded };

/** Synchronous requests (values, environment) travel on their own port so the worker can block on them. */
export type SyncRequest = { t: 'value'; name: string } | { t: 'environment' };
export interface SyncReply { ok: boolean; payload?: Carried; message?: string }

// Between the runner and its pool (pool.ts), both in the runtime.

/** From the runner to the pool. */
export type ToPool =
  /** `source` comes with the first call of a source the pool has not been given; `parent`: the call that executed this one. */
  | { t: 'call'; id: number; parent?: number; name: string; sourceId: number; source?: string; path: string; payload: Carried }
  | Reply
  /** Sources changed on disk: forget those given so far. */
  | { t: 'reload' };

/** From the pool to the runner: what workers sent, checked, and how the pool ended calls. */
export type FromPool =
  | CallMessage
  | { t: 'log'; name: string; level: LogLevel; text: string }
  /** The pool ended the call: it ran out of time, or failed as `message` says (its worker stopped). */
  | { t: 'ended'; id: number; timeUp: true; message?: undefined }
  | { t: 'ended'; id: number; timeUp?: undefined; message: string };

// Between the runtime's pool and the agent that owns the workers (agent.ts): in the function process,
// over the agent's own link to the runtime (channel.ts) as arrays of messages; with functions on the
// runtime's threads, by direct calls.
// The function process is untrusted: the runtime checks every message from there (runner.ts).

/** From the runtime to the agent. */
export type ToAgent =
  /** Start worker `n`; it connects to the runtime as `link` says. */
  | { t: 'start'; n: number; link: WorkerInit['link'] }
  /** Seal worker `n` (see WorkerInit.started); answered with `sealed`. */
  | { t: 'seal'; n: number }
  /** Lift worker `n`'s seal (it got through its messages); answered with `unsealed`. */
  | { t: 'unseal'; n: number }
  /** Terminate worker `n`; answered with `stopped`. */
  | { t: 'stop'; n: number }
  /** While on, the agent reports `progress` every few milliseconds and keeps the workers' memory within the limit. */
  | { t: 'watch'; on: boolean }
  | { t: 'sync'; sid: number; reply: SyncReply };

/** Why a worker stopped without being told to. */
export type StopCause = { memory: string } | { failed: string };

/** From the agent to the runtime. */
export type FromAgent =
  /** `workers`: flat triples (n, messages handled, call whose code runs); `cpu`: the agent's process's CPU time (µs). */
  | { t: 'progress'; cpu: number; workers: number[] }
  /** Messages a stuck worker had left in its mailbox (see mailbox.ts), sent on for it before `sealed` or `stopped`. */
  | { t: 'rescued'; n: number; messages: unknown[] }
  /** `started`: the worker's number of the last call it started before the seal. */
  | { t: 'sealed'; n: number; started: number }
  | { t: 'unsealed'; n: number }
  /** `running`: the call whose code it was running when it stopped; `cause` absent when told to stop. */
  | { t: 'stopped'; n: number; running: number; cause?: StopCause }
  /** A worker's synchronous request, answered with `sync` and the same `sid`. */
  | { t: 'sync'; sid: number; request: SyncRequest };
