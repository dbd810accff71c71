// The data channel between the runtime's pool (pool.ts) and one function worker (worker.ts): batches of
// messages, either over a MessagePort (functions on the runtime's own threads, for benchmarks only) or
// over a local socket from the worker straight to the runtime, which skips the function process's main
// thread: relaying each message there cost more than the rest of the boundary together. On the socket,
// a batch is one frame: its length (4 bytes, little-endian), then the batch in V8's serialization, the
// same that posting it to a thread would use. The worker's first frame is the token the runtime gave for
// it: a connection that does not open with a token the runtime is waiting for is closed.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import type { MessagePort } from 'node:worker_threads';
import { processRuns } from '../processes';

/**
 * The largest frame either side accepts. A worker keeps every message under it (values crossing are at
 * most 16 MiB, texts are cut to 1 MiB) and splits a larger batch; a frame announcing more ends the link.
 */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;
const HEADER_BYTES = 4;
/** A worker's read buffer: a read fills at most this much, and a larger frame arrives over several. */
const READ_BUFFER_BYTES = 64 * 1024;

/** One side's end of a data channel. */
export interface BatchLink<Out> {
  send(batch: Out[]): void;
  /** Whether the link keeps this thread's event loop going (while the worker has calls). */
  hold(busy: boolean): void;
  close(): void;
  /**
   * Who gets the other side's batches (whatever it sent, to be checked before use) and hears that it went
   * away or broke the framing (`why`). What arrived before (a worker's first batch can come in the same
   * read as its token) is handed over at once.
   */
  listen(onBatch: (batch: unknown) => void, onClose: (why?: string) => void): void;
}

/** Holds what arrives on a link until someone listens. */
function listeners(): { deliver(batch: unknown): void; closed(why?: string): void; listen: BatchLink<unknown>['listen'] } {
  let onBatch: ((batch: unknown) => void) | undefined;
  let onClose: ((why?: string) => void) | undefined;
  let early: unknown[] = [];
  let closedEarly: { why?: string } | undefined;
  return {
    deliver(batch) {
      if (onBatch) onBatch(batch);
      else early.push(batch);
    },
    closed(why) {
      if (onClose) onClose(why);
      else closedEarly = { why };
    },
    listen(batches, close) {
      onBatch = batches;
      onClose = close;
      const arrived = early;
      early = [];
      for (const batch of arrived) batches(batch);
      if (closedEarly) close(closedEarly.why);
    },
  };
}

/** Room for a frame's length at the start of its serialization, filled in once the length is known. */
const LENGTH_PLACEHOLDER = Buffer.alloc(HEADER_BYTES);

/**
 * A frame in one buffer, without a copy. V8's own serializer, not `v8.serialize`: that one's subclass
 * serializes typed arrays through JavaScript callbacks (to give Buffers back as Buffers), posting between
 * threads does not; neither side sends any.
 */
export function frameOf(batch: unknown): Buffer {
  const serializer = new v8.Serializer();
  serializer.writeRawBytes(LENGTH_PLACEHOLDER);
  serializer.writeHeader();
  serializer.writeValue(batch);
  const frame = serializer.releaseBuffer();
  frame.writeUInt32LE(frame.length - HEADER_BYTES, 0);
  return frame;
}

/** What one frame's body holds; throws when it is not V8's serialization. */
export function valueOf(body: Buffer): unknown {
  const deserializer = new v8.Deserializer(body);
  deserializer.readHeader();
  return deserializer.readValue();
}

/**
 * Reads frames from a byte stream; `onFrame` gets each one deserialized. A frame over `limit()` bytes, or
 * one that does not deserialize, calls `onBroken` and ends the reading. `transient`: each chunk's memory
 * is reused once the reader returns (a socket's own read buffer).
 */
export function createFrameReader(onFrame: (value: unknown) => void, onBroken: (why: string) => void, limit: () => number = () => MAX_FRAME_BYTES, transient = false): (chunk: Buffer) => void {
  let chunks: Buffer[] = [];
  let buffered = 0;
  let needed = -1;
  let broken = false;
  const breakOff = (why: string): void => {
    broken = true;
    chunks = [];
    onBroken(why);
  };
  const consume = (): void => {
    for (;;) {
      if (needed < 0) {
        if (buffered < HEADER_BYTES) return;
        if (chunks[0]!.length < HEADER_BYTES) chunks = [Buffer.concat(chunks, buffered)];
        needed = chunks[0]!.readUInt32LE(0);
        if (needed > limit()) {
          breakOff(`a frame of ${needed} bytes, above the limit of ${limit()}`);
          return;
        }
      }
      if (buffered < HEADER_BYTES + needed) return;
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, buffered);
      const end = HEADER_BYTES + needed;
      let value: unknown;
      try {
        value = valueOf(all.subarray(HEADER_BYTES, end));
      } catch (error) {
        breakOff(`a frame that does not deserialize (${error instanceof Error ? error.message : String(error)})`);
        return;
      }
      buffered -= end;
      chunks = buffered > 0 ? [all.subarray(end)] : [];
      needed = -1;
      onFrame(value);
      if (broken) return;
    }
  };
  return (chunk) => {
    if (broken) return;
    chunks.push(chunk);
    buffered += chunk.length;
    consume();
    // A transient chunk's memory is read into again once this returns: what is kept of it is copied.
    if (transient) chunks = chunks.map((kept) => (kept.buffer === chunk.buffer ? Buffer.from(kept) : kept));
  };
}

/** A link over a connected socket; the socket's frames go to `deliver`, a broken framing to `broken`. */
function socketLink<Out>(socket: net.Socket): { link: BatchLink<Out>; deliver(batch: unknown): void; broken(why: string): void } {
  let closed = false;
  let ended = false;
  const heard = listeners();
  const link: BatchLink<Out> = {
    listen: heard.listen,
    send(batch) {
      if (!closed && batch.length > 0) socket.write(frameOf(batch));
    },
    hold(busy) {
      if (busy) socket.ref();
      else socket.unref();
    },
    close() {
      if (closed) return;
      closed = true;
      socket.destroy();
    },
  };
  const end = (why?: string): void => {
    closed = true;
    if (ended) return;
    ended = true;
    heard.closed(why);
  };
  socket.on('close', () => end());
  socket.on('error', () => undefined);
  return {
    link,
    deliver: heard.deliver,
    broken(why) {
      end(why);
      socket.destroy();
    },
  };
}

/** A link over a MessagePort (functions on this process's own threads). */
export function portLink<Out>(port: MessagePort): BatchLink<Out> {
  const heard = listeners();
  const link: BatchLink<Out> = {
    listen: heard.listen,
    send(batch) {
      if (batch.length > 0) port.postMessage(batch);
    },
    hold(busy) {
      if (busy) port.ref();
      else port.unref();
    },
    close() {
      port.close();
    },
  };
  port.on('message', heard.deliver);
  port.on('close', () => heard.closed());
  port.unref();
  return link;
}

/** Where the runtime waits for its function workers to connect, one token per worker it starts. */
export interface LinkServer {
  /** The socket's path (a named pipe's name on Windows), for the workers. */
  readonly address: string;
  /** A new token, and the link of the worker that connects with it. */
  expect<Out>(): { token: string; link: Promise<BatchLink<Out>> };
  /** The worker the token was for will not connect (it stopped). */
  cancel(token: string): void;
  close(): Promise<void>;
}

/** The workers' socket folder: the prefix, the runtime's process id, a dash, then mkdtemp's random part. */
const SOCKET_FOLDER_PREFIX = 'asl-functions-';
const SOCKET_FOLDER = new RegExp(`^${SOCKET_FOLDER_PREFIX}(\\d+)-[A-Za-z0-9]+$`);

/**
 * Removes the socket folders of runtimes that ended without removing them (killed with SIGKILL): this
 * user's own folders (never a symbolic link) named for a process that no longer exists.
 */
export function removeAbandonedSocketFolders(temporary: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(temporary);
  } catch {
    return;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    const pid = SOCKET_FOLDER.exec(name)?.[1];
    if (!pid || Number(pid) === process.pid || processRuns(Number(pid))) continue;
    const folder = path.join(temporary, name);
    try {
      const stat = fs.lstatSync(folder);
      if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue;
      fs.rmSync(folder, { recursive: true, force: true });
    } catch {
      // Gone already, or not ours to remove.
    }
  }
}

/** A connection has this long to present its token. */
const TOKEN_WAIT_MS = 10_000;
const TOKEN_FRAME_MAX_BYTES = 256;

/**
 * Listens at once (binding a local socket completes synchronously), so workers may connect as soon as
 * they are started; a failure to listen shows as workers that cannot connect.
 */
export function createLinkServer(onError: (error: Error) => void): LinkServer {
  if (process.platform !== 'win32') removeAbandonedSocketFolders(os.tmpdir());
  const directory = process.platform === 'win32' ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), `${SOCKET_FOLDER_PREFIX}${process.pid}-`));
  const address = directory ? path.join(directory, 'workers') : `\\\\.\\pipe\\${SOCKET_FOLDER_PREFIX}${crypto.randomBytes(16).toString('hex')}`;
  const waiting = new Map<string, (link: BatchLink<never>) => void>();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.unref();
    // The first frame is the token; until it is read, a frame may be no larger than a token's.
    let opened: ReturnType<typeof socketLink> | undefined;
    const timer = setTimeout(() => socket.destroy(), TOKEN_WAIT_MS);
    timer.unref();
    socket.on('data', createFrameReader((frame) => {
      if (opened) {
        opened.deliver(frame);
        return;
      }
      clearTimeout(timer);
      const accept = typeof frame === 'string' ? waiting.get(frame) : undefined;
      if (!accept) {
        socket.destroy();
        return;
      }
      waiting.delete(frame as string);
      opened = socketLink(socket);
      accept(opened.link);
    }, (why) => {
      if (opened) opened.broken(why);
      else socket.destroy();
    }, () => (opened ? MAX_FRAME_BYTES : TOKEN_FRAME_MAX_BYTES)));
  });
  server.on('error', onError);
  server.listen(address);
  server.unref();
  if (directory) {
    try {
      fs.chmodSync(address, 0o600);
    } catch (error) {
      onError(error as Error);
    }
  }
  return {
    address,
    expect<Out>() {
      const token = crypto.randomBytes(24).toString('hex');
      const link = new Promise<BatchLink<Out>>((resolve) => waiting.set(token, resolve as (link: BatchLink<never>) => void));
      return { token, link };
    },
    cancel(token) {
      waiting.delete(token);
    },
    async close() {
      waiting.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (directory) fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** The worker's side: connects to the runtime and presents its token. */
export function connectLink<Out>(address: string, token: string): Promise<BatchLink<Out>> {
  return new Promise((resolve, reject) => {
    let read: (chunk: Buffer) => void = () => undefined;
    // Reads land in one buffer of the worker's, not a new one per read: fewer allocations for its heap to collect.
    const readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    const onread = { buffer: readBuffer, callback: (bytes: number) => { read(readBuffer.subarray(0, bytes)); return true; } };
    const socket = net.connect({ path: address, onread });
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.write(frameOf(token));
      const opened = socketLink<Out>(socket);
      read = createFrameReader(opened.deliver, opened.broken, undefined, true);
      resolve(opened.link);
    });
  });
}
