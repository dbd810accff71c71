// The data routes of a running runtime (core/runtime-protocol.ts DATA_ROUTES), on the admin route table
// (admin session, loopback unless --admin-remote): the export and the backup stream a snapshot taken at one
// instant; the import reads its whole body (bounded: frames, collections, bytes), checking every document,
// before it writes anything, then writes through the app's store as every other write goes (sync, triggers).
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  DATA_ROUTES, DataFrameKind, type DataEndFrame, type DataImportEvent,
} from '../../core/runtime-protocol';
import { localAppPattern } from '../../core/apiRoutes';
import { isObject } from '../../core/json';
import { ApiError, badRequest } from '../http/errors';
import type { HttpRequest } from '../http/server';
import type { AdminRouteTable } from '../admin/table';
import type { DocumentStore } from '../store/types';
import { BackupRefused, captureDataFolder } from './backup';
import { decodeDocuments, MalformedDump } from './bson-file';
import { exportFrames, exportSnapshot, ExportRefused } from './export';
import { BadFrames, encodeFrame, jsonFrame, parseJsonFrame, readFrames } from './frames';
import { importCollections, ImportRefused, type ImportCollection } from './import';

/**
 * The most an import sent to a running runtime may hold: its documents are decoded and held twice (the body,
 * the store) within the runtime's heap, which must keep room for everything else.
 */
export const MAX_IMPORT_BYTES = 256 * 1024 * 1024;
const MAX_COLLECTIONS = 10_000;
const MAX_INDEXES = 64;
const MAX_NAME_LENGTH = 1024;

export interface DataRoutesApp { readonly store: DocumentStore; readonly dataDir: string }

export function registerDataRoutes(table: AdminRouteTable, appOf: (clientAppId: string) => DataRoutesApp | undefined): void {
  const app = (req: HttpRequest): DataRoutesApp => {
    const found = appOf(req.params.appId!);
    if (!found) throw new ApiError(404, 'AppNotFound', `cannot find app using Client App ID '${req.params.appId}'`);
    return found;
  };
  /** One import at a time in the whole runtime: its documents are held in memory until written. */
  let importing = false;

  table.get(localAppPattern(DATA_ROUTES.export), async (req) => {
    const { store } = app(req);
    let snapshot;
    try {
      snapshot = exportSnapshot(store, req.query.get('db') ?? undefined);
    } catch (error) {
      if (error instanceof ExportRefused) throw badRequest(error.message);
      throw error;
    }
    await streamFrames(req.raw, req.response, exportFrames(snapshot));
    return 'handled' as const;
  });

  table.get(localAppPattern(DATA_ROUTES.backup), async (req) => {
    const { store, dataDir } = app(req);
    let entries;
    try {
      entries = captureDataFolder(dataDir, store);
    } catch (error) {
      if (error instanceof BackupRefused) throw badRequest(error.message);
      throw error;
    }
    await streamFrames(req.raw, req.response, backupFrames(entries));
    return 'handled' as const;
  });

  table.post(localAppPattern(DATA_ROUTES.import), async (req) => {
    const { store } = app(req);
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > MAX_IMPORT_BYTES) throw tooLarge();
    if (importing) throw new ApiError(409, 'ImportInProgress', 'another import is running on this runtime; try again once it is done');
    importing = true;
    try {
      let collections: ImportCollection[];
      try {
        collections = await readImportBody(req.raw);
      } catch (error) {
        req.raw.resume();
        if (error instanceof MalformedDump) {
          return { status: 400, encoding: 'json', body: { error: error.message, error_code: 'InvalidDump', namespace: error.where, ...(error.offset !== undefined ? { offset: error.offset } : {}) } };
        }
        if (error instanceof BadFrames) throw error.tooLarge ? tooLarge() : badRequest(`the import body is not a stream of data frames: ${error.message}`);
        throw error;
      }
      await writeImport(req.response, store, collections, req.query.get('drop') === 'true');
      return 'handled' as const;
    } finally {
      importing = false;
    }
  });
}

function tooLarge(): ApiError {
  return new ApiError(413, 'BadRequest', `an import sent to a running runtime holds at most ${MAX_IMPORT_BYTES} bytes; stop the runtime and import into its data folder directly`);
}

function* backupFrames(entries: Iterable<Uint8Array | { path: string }>): Generator<Buffer> {
  let files = 0;
  for (const entry of entries) {
    if (entry instanceof Uint8Array) yield encodeFrame(DataFrameKind.content, entry);
    else { files++; yield jsonFrame(DataFrameKind.file, { path: entry.path }); }
  }
  yield jsonFrame(DataFrameKind.end, { collections: 0, documents: 0, files } satisfies DataEndFrame);
}

/** Writes frames with backpressure; stops when the client goes away. */
async function streamFrames(req: IncomingMessage, res: ServerResponse, frames: Iterable<Buffer>): Promise<void> {
  req.resume();
  res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
  try {
    for (const frame of frames) {
      if (res.destroyed) return;
      if (!res.write(frame)) await new Promise<void>((resolve) => { res.once('drain', resolve); res.once('close', resolve); });
    }
  } catch (error) {
    if (!res.destroyed) res.write(jsonFrame(DataFrameKind.failed, { error: (error as Error).message }));
  }
  res.end();
}

function checkedName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_NAME_LENGTH) throw new BadFrames(`a collection frame's ${what} is not a name`);
  return value;
}

/** The import body into collections, every document decoded and checked; throws MalformedDump or BadFrames. */
async function readImportBody(body: IncomingMessage): Promise<ImportCollection[]> {
  const collections: ImportCollection[] = [];
  let current: (ImportCollection & { docs: unknown[]; sizes: number[]; offset: number }) | undefined;
  let ended = false;
  for await (const frame of readFrames(body, { maxTotalBytes: MAX_IMPORT_BYTES })) {
    if (ended) throw new BadFrames('frames after the end frame');
    if (frame.kind === DataFrameKind.collection) {
      const value = parseJsonFrame(frame);
      if (!isObject(value)) throw new BadFrames('a collection frame is not an object');
      const indexes = value.indexes;
      if (!Array.isArray(indexes) || indexes.length > MAX_INDEXES || !indexes.every((f) => typeof f === 'string' && f !== '' && f.length <= MAX_NAME_LENGTH && !f.startsWith('$'))) {
        throw new BadFrames(`a collection frame's indexes are not up to ${MAX_INDEXES} field names`);
      }
      if (collections.length >= MAX_COLLECTIONS) throw new BadFrames(`an import holds at most ${MAX_COLLECTIONS} collections`);
      const database = checkedName(value.database, 'database');
      const collection = checkedName(value.collection, 'collection');
      current = { database, collection, indexes: indexes as string[], docs: [], sizes: [], offset: 0, source: `${database}.${collection}` };
      collections.push(current);
    } else if (frame.kind === DataFrameKind.documents) {
      if (!current) throw new BadFrames('documents before any collection frame');
      const { docs, sizes } = decodeDocuments(frame.payload, current.source, current.offset);
      for (const doc of docs) current.docs.push(doc);
      for (const size of sizes) current.sizes.push(size);
      current.offset += frame.payload.length;
    } else if (frame.kind === DataFrameKind.end) {
      ended = true;
    } else {
      throw new BadFrames(`a frame of kind ${frame.kind} has no place in an import`);
    }
  }
  if (!ended) throw new BadFrames('the import body ends without its end frame (cut off)');
  return collections;
}

async function writeImport(res: ServerResponse, store: DocumentStore, collections: ImportCollection[], drop: boolean): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
  const send = (event: DataImportEvent) => { if (!res.destroyed) res.write(`${JSON.stringify(event)}\n`); };
  try {
    const outcome = await importCollections(store, collections, { drop, onProgress: (written, total) => send({ kind: 'progress', written, total }) });
    send({ kind: 'done', collections: outcome.collections });
  } catch (error) {
    // The answer has begun: a failure of any kind is its last line.
    send({ kind: 'failed', error: error instanceof ImportRefused ? error.message : `the import failed: ${(error as Error).message}` });
  } finally {
    res.end();
  }
}
