// The frames of the data routes' streams (core/runtime-protocol.ts DataFrameKind): `[u32 LE payload
// length][u8 kind][payload]`, read from a stream with every length bounded before anything is buffered.
import type { Readable } from 'node:stream';
import { DataFrameKind } from '../../core/runtime-protocol';
import { MAX_DOCUMENT_BYTES } from './bson-file';

export const FRAME_HEADER_BYTES = 5;
/** A frame holds at most one largest document beyond its 1 MiB of smaller ones. */
export const MAX_FRAME_PAYLOAD_BYTES = MAX_DOCUMENT_BYTES + 2 * 1024 * 1024;

const KINDS: ReadonlySet<number> = new Set(Object.values(DataFrameKind));

export interface Frame { kind: DataFrameKind; payload: Buffer }

export function encodeFrame(kind: DataFrameKind, payload: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  frame.writeUInt32LE(payload.length, 0);
  frame.writeUInt8(kind, 4);
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

export function jsonFrame(kind: DataFrameKind, value: unknown): Buffer {
  return encodeFrame(kind, Buffer.from(JSON.stringify(value), 'utf8'));
}

export class BadFrames extends Error {
  /** Set when the stream outgrew its limit (a 413 rather than a 400). */
  constructor(message: string, readonly tooLarge = false) {
    super(message);
    this.name = 'BadFrames';
  }
}

export interface FrameLimits {
  /** Bytes the whole stream may hold. */
  maxTotalBytes: number;
}

/** The frames of a stream, in order; throws BadFrames on an unknown kind, an oversized frame or a stream cut mid-frame. */
export async function* readFrames(stream: Readable | AsyncIterable<Uint8Array>, limits: FrameLimits): AsyncGenerator<Frame> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let total = 0;
  let needed = FRAME_HEADER_BYTES;
  let header: { length: number; kind: DataFrameKind } | undefined;
  const take = (n: number): Buffer => {
    const all = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    pending = rest.length ? [rest] : [];
    pendingBytes = rest.length;
    return out;
  };
  for await (const chunk of stream) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    total += bytes.length;
    if (total > limits.maxTotalBytes) throw new BadFrames(`the stream exceeds the limit of ${limits.maxTotalBytes} bytes`, true);
    pending.push(bytes);
    pendingBytes += bytes.length;
    while (pendingBytes >= needed) {
      if (!header) {
        const head = take(FRAME_HEADER_BYTES);
        const length = head.readUInt32LE(0);
        const kind = head.readUInt8(4);
        if (!KINDS.has(kind)) throw new BadFrames(`unknown frame kind ${kind}`);
        if (length > MAX_FRAME_PAYLOAD_BYTES) throw new BadFrames(`a frame of ${length} bytes exceeds the limit of ${MAX_FRAME_PAYLOAD_BYTES}`);
        header = { length, kind: kind as DataFrameKind };
        needed = length;
        continue;
      }
      // Copied out of the chunk it shares, so holding the payload holds nothing more.
      const payload = Buffer.from(take(header.length));
      yield { kind: header.kind, payload };
      header = undefined;
      needed = FRAME_HEADER_BYTES;
    }
  }
  if (header || pendingBytes > 0) throw new BadFrames('the stream ends inside a frame (cut off)');
}

export function parseJsonFrame(frame: Frame): unknown {
  try {
    return JSON.parse(frame.payload.toString('utf8'));
  } catch {
    throw new BadFrames(`frame of kind ${frame.kind} does not hold JSON`);
  }
}
