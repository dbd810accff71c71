// Realm sync messages (realm-core doc/protocol.md; realm-core 14.x's protocol codec is the reference for what
// the doc leaves out): one WebSocket binary frame = an ASCII head line of space-separated fields ending in "\n",
// then a body whose size the head declares. Both directions, so tests and tools can play either side.
//
// Heads are parsed strictly: exactly the fields of the message type, single spaces, plain decimal numbers
// (no sign unless the field is signed, no leading zeros), each number within its field's range, and the
// declared sizes adding up to the body exactly. Compressed bodies (zlib) are inflated only up to the size the
// head declares, after checking it against the body limit.
import { deflateSync, inflateSync } from 'node:zlib';
import { DEFAULT_CHANGESET_LIMITS, parseChangeset, encodeChangeset, type ChangesetLimits } from './changeset';
import { ErrorCode, WireError } from './errors';
import type { ChangesetEntry } from './instructions';

/** The newest protocol version realm-core 14.x speaks, and the one this codec is written against. */
export const CURRENT_PROTOCOL_VERSION = 14;
/** The oldest one realm-core 14.x still offers; message formats 2..14 differ only as listed in the README. */
export const OLDEST_PROTOCOL_VERSION = 2;

export interface MessageLimits {
  /** Bytes of a message head, newline excluded. */
  maxHeadSize: number;
  /** Bytes of an UPLOAD/DOWNLOAD body once uncompressed. */
  maxBodySize: number;
  /** Bytes of BIND's server path (partition) or JSON (flexible). */
  maxPathSize: number;
  /** Bytes of BIND's signed user token (realm-core 14 sends none: the token travels in the URL). */
  maxTokenSize: number;
  /** Bytes of a JSON_ERROR, QUERY, IDENT query or TEST_COMMAND body. */
  maxTextBodySize: number;
  /** Changesets in one UPLOAD/DOWNLOAD. */
  maxChangesets: number;
  /** Limits of each changeset; `maxInstructions` counts over all changesets of one message. */
  changeset: Partial<ChangesetLimits>;
}

export const DEFAULT_MESSAGE_LIMITS: Readonly<MessageLimits> = Object.freeze({
  maxHeadSize: 512,
  maxBodySize: 64 * 1024 * 1024,
  maxPathSize: 4096,
  maxTokenSize: 16 * 1024,
  maxTextBodySize: 16 * 1024 * 1024,
  maxChangesets: 100_000,
  changeset: {},
});

export interface ParseOptions {
  protocolVersion: number;
  /** Flexible sync (com.mongodb.realm-query-sync) rather than partition-based. */
  flexible: boolean;
  limits?: Partial<MessageLimits>;
}

/** DOWNLOAD's batch state (flexible sync). */
export const DOWNLOAD_BATCH_STATE = { moreToCome: 0, lastInBatch: 1, steadyState: 2 } as const;
export type DownloadBatchState = keyof typeof DOWNLOAD_BATCH_STATE;

/** Client -> server. */
export type ClientMessage =
  | {
      type: 'bind';
      session: number;
      /** Partition: the partition value as JSON text (`"p1"`). Flexible: the BIND JSON text ("" when none). */
      serverPath: string;
      /** Flexible: `serverPath` parsed (`sessionReason`, `schemaVersion`, `migratedPartition`); {} when empty. */
      bindJson?: Record<string, unknown>;
      signedUserToken: string;
      needClientFileIdent: boolean;
      isSubserver: boolean;
    }
  | {
      type: 'ident';
      session: number;
      clientFileIdent: bigint;
      clientFileIdentSalt: bigint;
      downloadServerVersion: bigint;
      downloadClientVersion: bigint;
      latestServerVersion: bigint;
      latestServerVersionSalt: bigint;
      /** Flexible only: the client's active subscription set. */
      query?: { version: bigint; body: string };
    }
  | {
      type: 'upload';
      session: number;
      progressClientVersion: bigint;
      progressServerVersion: bigint;
      lockedServerVersion: bigint;
      changesets: ChangesetEntry[];
      /** As received; when encoding, true/false forces compression, absent compresses bodies over 1 KiB. */
      compressed?: boolean;
    }
  | { type: 'mark'; session: number; requestIdent: bigint }
  | { type: 'unbind'; session: number }
  | { type: 'ping'; timestamp: bigint; rtt: bigint }
  | { type: 'query'; session: number; queryVersion: bigint; body: string }
  | { type: 'json_error'; session: number; errorCode: number; body: string }
  | { type: 'test_command'; session: number; requestIdent: bigint; body: string };

/** Server -> client. */
export type ServerMessage =
  | { type: 'ident'; session: number; clientFileIdent: bigint; clientFileIdentSalt: bigint }
  | {
      type: 'download';
      session: number;
      downloadServerVersion: bigint;
      downloadClientVersion: bigint;
      latestServerVersion: bigint;
      latestServerVersionSalt: bigint;
      uploadClientVersion: bigint;
      uploadServerVersion: bigint;
      /** Partition-based sync: bytes left to download (realm's server sends 0). */
      downloadableBytes?: bigint;
      /** Flexible sync: present instead of downloadableBytes. */
      flexible?: { queryVersion: bigint; batchState: DownloadBatchState; progressEstimate: number };
      changesets: ChangesetEntry[];
      compressed?: boolean;
    }
  | { type: 'mark'; session: number; requestIdent: bigint }
  | { type: 'unbound'; session: number }
  /** `session` 0: a connection-level error (codes 100..199). */
  | { type: 'error'; errorCode: number; message: string; tryAgain: boolean; session: number }
  | { type: 'json_error'; errorCode: number; session: number; body: Record<string, unknown> }
  | { type: 'pong'; timestamp: bigint }
  /** Protocol 10+. Encoded as realm's server does: JSON keys co_id, level, msg. */
  | { type: 'log_message'; session: number; level?: string; message?: string; coId?: string }
  | { type: 'query_error'; errorCode: number; session: number; queryVersion: bigint; message: string }
  | { type: 'test_command'; session: number; requestIdent: bigint; body: string };

const MAX_I63 = 2n ** 63n - 1n;
const MIN_I64 = -(2n ** 63n);
const MAX_I32 = 2 ** 31 - 1;
const COMPRESS_OVER = 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });
const utf8Encoder = new TextEncoder();
const utf8Bytes = (value: string): Uint8Array => utf8Encoder.encode(value);

class Head {
  private index = 1;
  constructor(
    readonly type: string,
    private readonly fields: string[],
  ) {}

  expectCount(count: number): void {
    if (this.fields.length - 1 !== count) {
      throw new WireError(ErrorCode.bad_syntax, `${this.type} message head has ${this.fields.length - 1} fields, expected ${count}`);
    }
  }

  private next(what: string): string {
    const token = this.fields[this.index++];
    if (token === undefined) throw new WireError(ErrorCode.bad_syntax, `${this.type} message head ends before ${what}`);
    return token;
  }

  unsigned(what: string, max: bigint = MAX_I63): bigint {
    return parseUnsigned(this.next(what), max, `${this.type} ${what}`, ErrorCode.bad_syntax);
  }

  signed(what: string, min: bigint = MIN_I64, max: bigint = MAX_I63): bigint {
    const token = this.next(what);
    const negative = token.startsWith('-');
    const magnitude = parseUnsigned(negative ? token.slice(1) : token, 2n ** 63n, `${this.type} ${what}`, ErrorCode.bad_syntax);
    if (negative && magnitude === 0n) throw new WireError(ErrorCode.bad_syntax, `${this.type} ${what}: "-0" is not a number`);
    const value = negative ? -magnitude : magnitude;
    if (value < min || value > max) throw new WireError(ErrorCode.bad_syntax, `${this.type} ${what}: ${value} is out of range`);
    return value;
  }

  size(what: string, limit: number): number {
    const value = this.unsigned(what, 2n ** 64n - 1n);
    if (value > BigInt(limit)) {
      throw new WireError(ErrorCode.limits_exceeded, `${this.type} ${what}: ${value} bytes is over the limit of ${limit}`);
    }
    return Number(value);
  }

  errorCode(): number {
    return Number(this.signed('error code', 0n, BigInt(MAX_I32)));
  }

  session(allowZero = false): number {
    const value = this.unsigned('session ident');
    if ((value === 0n && !allowZero) || value > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new WireError(ErrorCode.bad_session_ident, `${this.type}: bad session ident ${value}`);
    }
    return Number(value);
  }

  bool(what: string): boolean {
    const token = this.next(what);
    if (token !== '0' && token !== '1') throw new WireError(ErrorCode.bad_syntax, `${this.type} ${what}: "${clip(token)}" is not 0 or 1`);
    return token === '1';
  }

  double(what: string): number {
    const token = this.next(what);
    if (!/^-?\d{1,30}(\.\d{1,30})?([eE][-+]?\d{1,4})?$/.test(token)) {
      throw new WireError(ErrorCode.bad_syntax, `${this.type} ${what}: "${clip(token)}" is not a number`);
    }
    return Number(token);
  }
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

function parseUnsigned(token: string, max: bigint, what: string, code: number): bigint {
  if (!/^(0|[1-9]\d{0,19})$/.test(token)) throw new WireError(code, `${what}: "${clip(token)}" is not a decimal number`);
  const value = BigInt(token);
  if (value > max) throw new WireError(code, `${what}: ${value} is out of range`);
  return value;
}

/** Splits a frame into its head (validated ASCII, split on single spaces) and its body. */
function splitFrame(frame: Uint8Array, limits: MessageLimits): { head: Head; body: Uint8Array } {
  const scan = Math.min(frame.length, limits.maxHeadSize + 1);
  let newline = -1;
  for (let i = 0; i < scan; i++) {
    const byte = frame[i];
    if (byte === 0x0a) {
      newline = i;
      break;
    }
    if (byte < 0x20 || byte > 0x7e) throw new WireError(ErrorCode.bad_syntax, `message head holds byte 0x${byte.toString(16).padStart(2, '0')} at ${i}`);
  }
  if (newline < 0) {
    if (frame.length > limits.maxHeadSize) throw new WireError(ErrorCode.limits_exceeded, `message head longer than ${limits.maxHeadSize} bytes`);
    throw new WireError(ErrorCode.bad_syntax, 'message head does not end with a newline');
  }
  const line = String.fromCharCode(...frame.subarray(0, newline));
  const fields = line.split(' ');
  if (fields.some((field) => field === '')) throw new WireError(ErrorCode.bad_syntax, `message head "${clip(line)}" has empty fields`);
  return { head: new Head(fields[0], fields), body: frame.subarray(newline + 1) };
}

function text(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new WireError(ErrorCode.bad_syntax, `${what} is not valid UTF-8`);
  }
}

function expectBodySize(head: Head, body: Uint8Array, declared: number): void {
  if (body.length !== declared) {
    throw new WireError(ErrorCode.bad_syntax, `${head.type} message declares a body of ${declared} bytes, the frame has ${body.length}`);
  }
}

function parseJsonObject(raw: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new WireError(ErrorCode.bad_syntax, `${what} is not valid JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WireError(ErrorCode.bad_syntax, `${what} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** The (possibly compressed) body of UPLOAD/DOWNLOAD, inflated within the declared size. */
function changesetBody(head: Head, body: Uint8Array, compressed: boolean, uncompressedSize: number, compressedSize: number): Uint8Array {
  if (!compressed) {
    if (compressedSize !== 0) throw new WireError(ErrorCode.bad_syntax, `${head.type}: uncompressed body with a compressed size of ${compressedSize}`);
    expectBodySize(head, body, uncompressedSize);
    return body;
  }
  expectBodySize(head, body, compressedSize);
  let inflated: Buffer;
  try {
    inflated = inflateSync(body, { maxOutputLength: Math.max(uncompressedSize, 1) });
  } catch (error) {
    throw new WireError(ErrorCode.bad_decompression, `${head.type}: body does not inflate to its declared ${uncompressedSize} bytes (${(error as Error).message})`);
  }
  if (inflated.length !== uncompressedSize) {
    throw new WireError(ErrorCode.bad_decompression, `${head.type}: body inflates to ${inflated.length} bytes, the head declares ${uncompressedSize}`);
  }
  return inflated;
}

/** Reads one space-terminated decimal field of a changeset entry header inside a body. */
function bodyNumber(body: Uint8Array, at: { pos: number }, what: string, max: bigint): bigint {
  const start = at.pos;
  while (at.pos < body.length && at.pos - start <= 20 && body[at.pos] !== 0x20) at.pos++;
  if (at.pos >= body.length || body[at.pos] !== 0x20) {
    throw new WireError(ErrorCode.bad_changeset_header_syntax, `changeset header: ${what} is not followed by a space`);
  }
  const token = String.fromCharCode(...body.subarray(start, at.pos));
  at.pos++;
  return parseUnsigned(token, max, `changeset header ${what}`, ErrorCode.bad_changeset_header_syntax);
}

function parseEntries(
  kind: 'upload' | 'download',
  body: Uint8Array,
  limits: MessageLimits,
): ChangesetEntry[] {
  const entries: ChangesetEntry[] = [];
  const at = { pos: 0 };
  let instructionBudget = limits.changeset.maxInstructions ?? DEFAULT_CHANGESET_LIMITS.maxInstructions;
  while (at.pos < body.length) {
    if (entries.length >= limits.maxChangesets) throw new WireError(ErrorCode.limits_exceeded, `more than ${limits.maxChangesets} changesets in one ${kind} message`);
    const version = bodyNumber(body, at, kind === 'upload' ? 'client version' : 'server version', MAX_I63);
    const lastIntegratedRemoteVersion = bodyNumber(body, at, kind === 'upload' ? 'server version' : 'client version', MAX_I63);
    const originTimestamp = bodyNumber(body, at, 'origin timestamp', MAX_I63);
    const originFileIdent = bodyNumber(body, at, 'origin file ident', MAX_I63);
    const originalSize = kind === 'download' ? bodyNumber(body, at, 'original changeset size', 2n ** 64n - 1n) : undefined;
    const size = bodyNumber(body, at, 'changeset size', 2n ** 64n - 1n);
    if (size > BigInt(body.length - at.pos)) {
      throw new WireError(ErrorCode.bad_changeset_size, `changeset of ${size} bytes declared, ${body.length - at.pos} left in the body`);
    }
    if (kind === 'download' && version === 0n) throw new WireError(ErrorCode.bad_changeset_header_syntax, 'a downloaded changeset cannot have server version 0');
    // A copy (Buffer#slice would not be one): a stored changeset must not keep the whole frame alive.
    const bytes = new Uint8Array(body.subarray(at.pos, at.pos + Number(size)));
    at.pos += Number(size);
    let instructions;
    try {
      instructions = parseChangeset(bytes, { ...limits.changeset, maxInstructions: instructionBudget });
      instructionBudget -= instructions.length;
    } catch (error) {
      if (error instanceof WireError) {
        throw new WireError(error.code, `changeset ${entries.length + 1} (version ${version}): ${error.message}`);
      }
      throw error;
    }
    const entry: ChangesetEntry = { version, lastIntegratedRemoteVersion, originTimestamp, originFileIdent, instructions, bytes };
    if (originalSize !== undefined) {
      if (originalSize > BigInt(Number.MAX_SAFE_INTEGER)) throw new WireError(ErrorCode.bad_changeset_header_syntax, `original changeset size ${originalSize} is out of range`);
      entry.originalChangesetSize = Number(originalSize);
    }
    entries.push(entry);
  }
  return entries;
}

function resolveLimits(limits?: Partial<MessageLimits>): MessageLimits {
  return { ...DEFAULT_MESSAGE_LIMITS, ...limits };
}

function ensureFrame(frame: Uint8Array): void {
  if (!(frame instanceof Uint8Array)) throw new WireError(ErrorCode.bad_syntax, 'a sync message must be a binary frame');
  if (frame.length === 0) throw new WireError(ErrorCode.bad_syntax, 'empty message');
}

/** Parses a frame a client sent. Throws a WireError whose code is the protocol error to answer with. */
export function parseClientMessage(frame: Uint8Array, options: ParseOptions): ClientMessage {
  ensureFrame(frame);
  const limits = resolveLimits(options.limits);
  const { head, body } = splitFrame(frame, limits);
  switch (head.type) {
    case 'bind': {
      head.expectCount(5);
      const session = head.session();
      const pathSize = head.size('server path size', limits.maxPathSize);
      const tokenSize = head.size('signed user token size', limits.maxTokenSize);
      const needClientFileIdent = head.bool('need client file ident');
      const isSubserver = head.bool('is subserver');
      expectBodySize(head, body, pathSize + tokenSize);
      const serverPath = text(body.subarray(0, pathSize), 'BIND server path');
      const signedUserToken = text(body.subarray(pathSize), 'BIND signed user token');
      const message: ClientMessage = { type: 'bind', session, serverPath, signedUserToken, needClientFileIdent, isSubserver };
      if (options.flexible && options.protocolVersion >= 8) {
        message.bindJson = serverPath === '' ? {} : parseJsonObject(serverPath, 'BIND JSON');
      } else if (!options.flexible && pathSize === 0) {
        throw new WireError(ErrorCode.bad_syntax, 'BIND server path is empty');
      }
      return message;
    }
    case 'ident': {
      head.expectCount(options.flexible ? 9 : 7);
      const message: ClientMessage = {
        type: 'ident',
        session: head.session(),
        clientFileIdent: head.unsigned('client file ident'),
        clientFileIdentSalt: head.signed('client file ident salt'),
        downloadServerVersion: head.unsigned('download server version'),
        downloadClientVersion: head.unsigned('download client version'),
        latestServerVersion: head.unsigned('latest server version'),
        latestServerVersionSalt: head.signed('latest server version salt'),
      };
      if (options.flexible) {
        const version = head.unsigned('query version');
        const size = head.size('query body size', limits.maxTextBodySize);
        expectBodySize(head, body, size);
        message.query = { version, body: text(body, 'IDENT query body') };
      } else {
        expectBodySize(head, body, 0);
      }
      return message;
    }
    case 'upload': {
      head.expectCount(7);
      const session = head.session();
      const compressed = head.bool('is body compressed');
      const uncompressedSize = head.size('uncompressed body size', limits.maxBodySize);
      const compressedSize = head.size('compressed body size', limits.maxBodySize);
      const progressClientVersion = head.unsigned('progress client version');
      const progressServerVersion = head.unsigned('progress server version');
      const lockedServerVersion = head.unsigned('locked server version');
      const content = changesetBody(head, body, compressed, uncompressedSize, compressedSize);
      const changesets = parseEntries('upload', content, limits);
      return { type: 'upload', session, progressClientVersion, progressServerVersion, lockedServerVersion, changesets, compressed };
    }
    case 'mark': {
      head.expectCount(2);
      const session = head.session();
      const requestIdent = head.unsigned('request ident');
      expectBodySize(head, body, 0);
      return { type: 'mark', session, requestIdent };
    }
    case 'unbind': {
      head.expectCount(1);
      const session = head.session();
      expectBodySize(head, body, 0);
      return { type: 'unbind', session };
    }
    case 'ping': {
      head.expectCount(2);
      const timestamp = head.unsigned('timestamp');
      const rtt = head.unsigned('rtt');
      expectBodySize(head, body, 0);
      return { type: 'ping', timestamp, rtt };
    }
    case 'query': {
      if (!options.flexible) throw new WireError(ErrorCode.unknown_message, 'QUERY is a flexible sync message');
      head.expectCount(3);
      const session = head.session();
      const queryVersion = head.unsigned('query version');
      const size = head.size('query body size', limits.maxTextBodySize);
      expectBodySize(head, body, size);
      return { type: 'query', session, queryVersion, body: text(body, 'QUERY body') };
    }
    case 'json_error': {
      head.expectCount(3);
      const errorCode = head.errorCode();
      const size = head.size('message size', limits.maxTextBodySize);
      const session = head.session(true);
      expectBodySize(head, body, size);
      return { type: 'json_error', session, errorCode, body: text(body, 'JSON_ERROR body') };
    }
    case 'test_command': {
      head.expectCount(3);
      const session = head.session();
      const requestIdent = head.unsigned('request ident');
      const size = head.size('body size', limits.maxTextBodySize);
      expectBodySize(head, body, size);
      return { type: 'test_command', session, requestIdent, body: text(body, 'TEST_COMMAND body') };
    }
    default:
      throw new WireError(ErrorCode.unknown_message, `unknown message type "${clip(head.type)}"`);
  }
}

/** Parses a frame a server sent (for tests and tools playing the client). */
export function parseServerMessage(frame: Uint8Array, options: ParseOptions): ServerMessage {
  ensureFrame(frame);
  const limits = resolveLimits(options.limits);
  const { head, body } = splitFrame(frame, limits);
  switch (head.type) {
    case 'ident': {
      head.expectCount(3);
      const message: ServerMessage = {
        type: 'ident',
        session: head.session(),
        clientFileIdent: head.unsigned('client file ident'),
        clientFileIdentSalt: head.signed('client file ident salt'),
      };
      expectBodySize(head, body, 0);
      return message;
    }
    case 'download': {
      head.expectCount(options.flexible ? 13 : 11);
      const session = head.session();
      const downloadServerVersion = head.unsigned('download server version');
      const downloadClientVersion = head.unsigned('download client version');
      const latestServerVersion = head.unsigned('latest server version');
      const latestServerVersionSalt = head.signed('latest server version salt');
      const uploadClientVersion = head.unsigned('upload client version');
      const uploadServerVersion = head.unsigned('upload server version');
      let downloadableBytes: bigint | undefined;
      let flexible: { queryVersion: bigint; batchState: DownloadBatchState; progressEstimate: number } | undefined;
      if (options.flexible) {
        const queryVersion = head.unsigned('query version');
        const stateCode = Number(head.unsigned('batch state', 2n));
        const batchState = (Object.keys(DOWNLOAD_BATCH_STATE) as DownloadBatchState[]).find((k) => DOWNLOAD_BATCH_STATE[k] === stateCode)!;
        const progressEstimate = head.double('progress estimate');
        if (!(progressEstimate >= 0 && progressEstimate <= 1)) throw new WireError(ErrorCode.bad_syntax, `download progress estimate ${progressEstimate} is not within 0..1`);
        flexible = { queryVersion, batchState, progressEstimate };
      } else {
        downloadableBytes = head.unsigned('downloadable bytes');
      }
      const compressed = head.bool('is body compressed');
      const uncompressedSize = head.size('uncompressed body size', limits.maxBodySize);
      const compressedSize = head.size('compressed body size', limits.maxBodySize);
      const content = changesetBody(head, body, compressed, uncompressedSize, compressedSize);
      const message: ServerMessage = {
        type: 'download', session, downloadServerVersion, downloadClientVersion, latestServerVersion, latestServerVersionSalt,
        uploadClientVersion, uploadServerVersion, changesets: parseEntries('download', content, limits), compressed,
      };
      if (flexible) message.flexible = flexible;
      else message.downloadableBytes = downloadableBytes;
      return message;
    }
    case 'mark': {
      head.expectCount(2);
      const session = head.session();
      const requestIdent = head.unsigned('request ident');
      expectBodySize(head, body, 0);
      return { type: 'mark', session, requestIdent };
    }
    case 'unbound': {
      head.expectCount(1);
      const session = head.session();
      expectBodySize(head, body, 0);
      return { type: 'unbound', session };
    }
    case 'error': {
      head.expectCount(4);
      const errorCode = head.errorCode();
      const size = head.size('message size', limits.maxTextBodySize);
      const tryAgain = head.bool('try again');
      const session = head.session(true);
      expectBodySize(head, body, size);
      return { type: 'error', errorCode, message: text(body, 'ERROR message'), tryAgain, session };
    }
    case 'json_error': {
      head.expectCount(3);
      const errorCode = head.errorCode();
      const size = head.size('message size', limits.maxTextBodySize);
      const session = head.session(true);
      expectBodySize(head, body, size);
      return { type: 'json_error', errorCode, session, body: parseJsonObject(text(body, 'JSON_ERROR body'), 'JSON_ERROR body') };
    }
    case 'pong': {
      head.expectCount(1);
      const timestamp = head.unsigned('timestamp');
      expectBodySize(head, body, 0);
      return { type: 'pong', timestamp };
    }
    case 'log_message': {
      head.expectCount(2);
      const session = head.session(true);
      const size = head.size('message size', limits.maxTextBodySize);
      expectBodySize(head, body, size);
      const json = parseJsonObject(text(body, 'LOG_MESSAGE body'), 'LOG_MESSAGE body');
      const message: ServerMessage = { type: 'log_message', session };
      if (typeof json.level === 'string') message.level = json.level;
      if (typeof json.msg === 'string') message.message = json.msg;
      if (typeof json.co_id === 'string') message.coId = json.co_id;
      return message;
    }
    case 'query_error': {
      head.expectCount(4);
      const errorCode = head.errorCode();
      const size = head.size('message size', limits.maxTextBodySize);
      const session = head.session();
      const queryVersion = head.unsigned('query version');
      expectBodySize(head, body, size);
      return { type: 'query_error', errorCode, session, queryVersion, message: text(body, 'QUERY_ERROR message') };
    }
    case 'test_command': {
      head.expectCount(3);
      const session = head.session();
      const requestIdent = head.unsigned('request ident');
      const size = head.size('body size', limits.maxTextBodySize);
      expectBodySize(head, body, size);
      return { type: 'test_command', session, requestIdent, body: text(body, 'TEST_COMMAND body') };
    }
    default:
      throw new WireError(ErrorCode.unknown_message, `unknown message type "${clip(head.type)}"`);
  }
}

function frame(headFields: (string | number | bigint | boolean)[], ...bodyParts: Uint8Array[]): Uint8Array {
  const line = headFields.map((field) => (typeof field === 'boolean' ? (field ? '1' : '0') : String(field))).join(' ') + '\n';
  const headBytes = utf8Encoder.encode(line);
  const size = bodyParts.reduce((sum, part) => sum + part.length, headBytes.length);
  const out = new Uint8Array(size);
  out.set(headBytes, 0);
  let at = headBytes.length;
  for (const part of bodyParts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function entryBytes(entry: ChangesetEntry): Uint8Array {
  return entry.bytes ?? encodeChangeset(entry.instructions);
}

function entriesBody(kind: 'upload' | 'download', entries: readonly ChangesetEntry[]): Uint8Array {
  const parts = entries.map((entry) => {
    const bytes = entryBytes(entry);
    const fields: (bigint | number)[] = [entry.version, entry.lastIntegratedRemoteVersion, entry.originTimestamp, entry.originFileIdent];
    if (kind === 'download') fields.push(entry.originalChangesetSize ?? bytes.length);
    fields.push(bytes.length);
    return concat(utf8Encoder.encode(fields.join(' ') + ' '), bytes);
  });
  return concat(...parts);
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The body as sent and the three head fields describing it (compressed flag, uncompressed size, compressed size). */
function packBody(body: Uint8Array, compress: boolean | undefined): { fields: [boolean, number, number]; bytes: Uint8Array } {
  if (compress === false || (compress === undefined && body.length <= COMPRESS_OVER)) {
    return { fields: [false, body.length, 0], bytes: body };
  }
  // Level 1, as realm's own compressor: a server compresses often, and speed matters more than size here.
  const deflated = deflateSync(body, { level: 1 });
  if (compress === undefined && deflated.length >= body.length) return { fields: [false, body.length, 0], bytes: body };
  return { fields: [true, body.length, deflated.length], bytes: deflated };
}

function requireVersion(protocolVersion: number, minimum: number, what: string): void {
  if (protocolVersion < minimum) throw new Error(`${what} needs protocol version ${minimum} or later (the connection speaks ${protocolVersion})`);
}

/** Encodes a message for a client speaking `protocolVersion`. Throws a plain Error for messages that version lacks. */
export function encodeServerMessage(message: ServerMessage, protocolVersion: number): Uint8Array {
  switch (message.type) {
    case 'ident':
      return frame(['ident', message.session, message.clientFileIdent, message.clientFileIdentSalt]);
    case 'download': {
      const packed = packBody(entriesBody('download', message.changesets), message.compressed);
      const progress = message.flexible
        ? [message.flexible.queryVersion, DOWNLOAD_BATCH_STATE[message.flexible.batchState], formatDouble(message.flexible.progressEstimate)]
        : [message.downloadableBytes ?? 0n];
      return frame(
        ['download', message.session, message.downloadServerVersion, message.downloadClientVersion, message.latestServerVersion,
          message.latestServerVersionSalt, message.uploadClientVersion, message.uploadServerVersion, ...progress, ...packed.fields],
        packed.bytes,
      );
    }
    case 'mark':
      return frame(['mark', message.session, message.requestIdent]);
    case 'unbound':
      return frame(['unbound', message.session]);
    case 'error': {
      const body = utf8Bytes(message.message);
      return frame(['error', message.errorCode, body.length, message.tryAgain, message.session], body);
    }
    case 'json_error': {
      requireVersion(protocolVersion, 4, 'JSON_ERROR');
      const body = utf8Bytes(JSON.stringify(message.body));
      return frame(['json_error', message.errorCode, body.length, message.session], body);
    }
    case 'pong':
      return frame(['pong', message.timestamp]);
    case 'log_message': {
      requireVersion(protocolVersion, 10, 'LOG_MESSAGE');
      const json: Record<string, string> = {};
      if (message.coId !== undefined) json.co_id = message.coId;
      if (message.level !== undefined) json.level = message.level;
      if (message.message !== undefined) json.msg = message.message;
      const body = utf8Bytes(JSON.stringify(json));
      return frame(['log_message', message.session, body.length], body);
    }
    case 'query_error': {
      const body = utf8Bytes(message.message);
      return frame(['query_error', message.errorCode, body.length, message.session, message.queryVersion], body);
    }
    case 'test_command': {
      const body = utf8Bytes(message.body);
      return frame(['test_command', message.session, message.requestIdent, body.length], body);
    }
  }
}

function formatDouble(value: number): string {
  if (!(value >= 0 && value <= 1)) throw new Error(`download progress estimate ${value} is not within 0..1`);
  return String(value);
}

/** Encodes a client message (for tests and tools playing the client). */
export function encodeClientMessage(message: ClientMessage, protocolVersion: number): Uint8Array {
  switch (message.type) {
    case 'bind': {
      const path = utf8Bytes(message.serverPath);
      const token = utf8Bytes(message.signedUserToken);
      return frame(['bind', message.session, path.length, token.length, message.needClientFileIdent, message.isSubserver], path, token);
    }
    case 'ident': {
      const fields = ['ident', message.session, message.clientFileIdent, message.clientFileIdentSalt, message.downloadServerVersion,
        message.downloadClientVersion, message.latestServerVersion, message.latestServerVersionSalt];
      if (!message.query) return frame(fields);
      const body = utf8Bytes(message.query.body);
      return frame([...fields, message.query.version, body.length], body);
    }
    case 'upload': {
      const packed = packBody(entriesBody('upload', message.changesets), message.compressed);
      return frame(
        ['upload', message.session, ...packed.fields, message.progressClientVersion, message.progressServerVersion, message.lockedServerVersion],
        packed.bytes,
      );
    }
    case 'mark':
      return frame(['mark', message.session, message.requestIdent]);
    case 'unbind':
      return frame(['unbind', message.session]);
    case 'ping':
      return frame(['ping', message.timestamp, message.rtt]);
    case 'query': {
      const body = utf8Bytes(message.body);
      return frame(['query', message.session, message.queryVersion, body.length], body);
    }
    case 'json_error': {
      requireVersion(protocolVersion, 7, 'a client JSON_ERROR');
      const body = utf8Bytes(message.body);
      return frame(['json_error', message.errorCode, body.length, message.session], body);
    }
    case 'test_command': {
      const body = utf8Bytes(message.body);
      return frame(['test_command', message.session, message.requestIdent, body.length], body);
    }
  }
}
