// `asl data export|import|backup|restore`: an app's documents out and in, in mongodump's layout, and its whole
// data folder copied. Beside a running runtime the commands go through it (its data routes: a snapshot for
// export and backup, the store's ordinary writes for import); with none, they open the data folder's store.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DATA_ROUTES, DataFrameKind, type DataCollectionFrame, type DataEndFrame, type DataImportEvent, type RuntimeRecord } from '../core/runtime-protocol';
import { isObject } from '../core/json';
import { preparePrivateFolder } from '../runtime/data-folder';
import { BackupRefused, BackupWriter, captureDataFolder, restoreDataFolder, STORE_FOLDER } from '../runtime/data-io/backup';
import { decodeDocuments, MalformedDump } from '../runtime/data-io/bson-file';
import { exportSnapshot, ExportRefused, writeDumpFolder } from '../runtime/data-io/export';
import { BadFrames, encodeFrame, jsonFrame, parseJsonFrame, readFrames, type Frame } from '../runtime/data-io/frames';
import { importCollections, ImportRefused } from '../runtime/data-io/import';
import { MAX_IMPORT_BYTES } from '../runtime/data-io/routes';
import { DumpFileWriter, readDump, type DumpCollection } from '../runtime/data-io/layout';
import { EmbeddedStore } from '../runtime/store/embedded';
import { bodyChunks, requestData, resolveDataTarget, storeHolder, type DataTarget } from './dataTarget';
import { EXIT_OK, EXIT_PROBLEMS, UsageError, type CliIO } from './io';
import { errorOf, RuntimeGone } from './runningRuntime';

export const DATA_HELP = `Usage: asl data <export|import|backup|restore> DIR [options]

An app's data in and out, locally.

  export DIR    write the app's collections as mongodump does: DIR/<db>/<collection>.bson (the documents,
                every BSON type as stored) and .metadata.json (indexes); a snapshot of one instant
  import DIR    read such a dump (mongodump's, with or without --gzip) into the app's store: every file
                checked whole first (a malformed or cut-off one is refused with its name and byte offset,
                and nothing is imported), indexes created, documents written in batches
  backup DIR    copy the app's whole data folder (documents, users, sync history, settings) as it is at
                one instant into the new folder DIR, with a manifest of every file's SHA-256
  restore DIR   replace the app's data folder with a backup (no runtime may be running on it)

Options:
  --local DIR      the app's folder (default: the app around the current folder)
  --app ID         the client app id, when the folder (or --data) holds several apps
  --data DIR       the data folder (default <app>/.asl), as given to "asl serve --data"
  --db NAME        export, import: only this database
  --gzip           export: write .bson.gz and .metadata.json.gz, as mongodump --gzip does
  --drop           import: replace the documents of each collection the dump holds (otherwise a document
                   whose _id is already stored refuses the import)
  --json           print the outcome as JSON
  -h, --help       show this help

While a runtime ("asl serve" or the editor's) holds the data folder, the commands ask it: an import's
documents then reach open sync sessions and database triggers as any write does (at most 256 MiB per import
that way). The runtime's own databases (__realm_sync, __asl_auth) are never exported or imported; backup and
restore carry them. A progress bar is drawn on stderr when it is a terminal.`;

export async function runData(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      local: { type: 'string' }, app: { type: 'string' }, data: { type: 'string' }, db: { type: 'string' },
      gzip: { type: 'boolean' }, drop: { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) { io.out(DATA_HELP + '\n'); return EXIT_OK; }
  const [verb, dir, ...extra] = positionals;
  if (verb !== 'export' && verb !== 'import' && verb !== 'backup' && verb !== 'restore') throw new UsageError(verb ? `unknown data command "${verb}"` : 'name a data command: export, import, backup or restore');
  if (!dir) throw new UsageError(`${verb} needs a folder: asl data ${verb} DIR`);
  if (extra.length > 0) throw new UsageError('asl data takes one folder');
  if (values.gzip && verb !== 'export') throw new UsageError('--gzip goes with "asl data export" (import reads either)');
  if (values.drop && verb !== 'import') throw new UsageError('--drop goes with "asl data import"');
  if (values.db !== undefined && verb !== 'export' && verb !== 'import') throw new UsageError('--db goes with export and import');
  const target = await resolveDataTarget(io, values);
  const folder = path.resolve(io.cwd, dir);
  const context: Context = { io, target, folder, json: values.json ?? false, db: values.db };
  try {
    if (verb === 'export') return await exportData(context, values.gzip ?? false);
    if (verb === 'import') return await importData(context, values.drop ?? false);
    if (verb === 'backup') return await backupData(context);
    return await restoreData(context);
  } catch (error) {
    if (error instanceof MalformedDump || error instanceof ImportRefused || error instanceof ExportRefused || error instanceof BackupRefused
      || error instanceof BadFrames || error instanceof RuntimeGone || error instanceof DataCommandFailed) {
      io.err(`asl data ${verb}: ${error.message}\n`);
      return EXIT_PROBLEMS;
    }
    if ((error as { name?: string }).name === 'StoreError') { io.err(`asl data ${verb}: ${(error as Error).message}\n`); return EXIT_PROBLEMS; }
    throw error;
  }
}

interface Context { io: CliIO; target: DataTarget; folder: string; json: boolean; db?: string }

class DataCommandFailed extends Error {}

type Summary = { collections: { database: string; collection: string; documents: number }[] };

function printSummary(context: Context, verb: string, summary: Summary, extra: Record<string, unknown> = {}): void {
  const documents = summary.collections.reduce((n, c) => n + c.documents, 0);
  if (context.json) { context.io.out(`${JSON.stringify({ ...summary, documents, ...extra })}\n`); return; }
  const lines = summary.collections.map((c) => `  ${c.database}.${c.collection}: ${c.documents} document(s)\n`).join('');
  context.io.out(`${verb} ${documents} document(s) in ${summary.collections.length} collection(s)${context.target.record ? ` (through the runtime at ${context.target.record.url})` : ''}\n${lines}`);
}

async function openStore(context: Context, create: boolean): Promise<EmbeddedStore> {
  const storeDir = path.join(context.target.dataDir, STORE_FOLDER);
  if (!create && !fs.existsSync(storeDir)) throw new DataCommandFailed(`${context.target.dataDir} holds no data yet (no ${STORE_FOLDER}/ folder)`);
  const holder = storeHolder(context.target.dataDir);
  if (holder !== undefined) throw new DataCommandFailed(`process ${holder} holds ${context.target.dataDir} without a runtime record (a runtime still starting?); try again once it listens`);
  if (create) preparePrivateFolder(context.target.dataDir);
  return EmbeddedStore.open(storeDir, {});
}

// --- export

async function exportData(context: Context, gzip: boolean): Promise<number> {
  const { record } = context.target;
  fs.mkdirSync(context.folder, { recursive: true });
  if (!record) {
    const store = await openStore(context, false);
    try {
      printSummary(context, 'exported', writeDumpFolder(context.folder, exportSnapshot(store, context.db), gzip), { folder: context.folder });
    } finally {
      await store.close();
    }
    return EXIT_OK;
  }
  const response = await requestData(record, `${DATA_ROUTES.export}${context.db !== undefined ? `?db=${encodeURIComponent(context.db)}` : ''}`, { method: 'GET' });
  if (response.status !== 200) throw new DataCommandFailed(`the runtime at ${record.url} answered: ${errorOf({ status: response.status, text: await response.text() })}`);
  const summary: Summary = { collections: [] };
  let writer: DumpFileWriter | undefined;
  let ended = false;
  try {
    for await (const frame of readFrames(bodyChunks(response), { maxTotalBytes: Number.MAX_SAFE_INTEGER })) {
      if (frame.kind === DataFrameKind.collection) {
        writer?.finish();
        const c = parseJsonFrame(frame) as DataCollectionFrame;
        writer = new DumpFileWriter(context.folder, c.database, c.collection, c.indexes, gzip);
        summary.collections.push({ database: c.database, collection: c.collection, documents: 0 });
      } else if (frame.kind === DataFrameKind.documents && writer) {
        writer.write(frame.payload);
        summary.collections[summary.collections.length - 1]!.documents += countFramed(frame);
      } else if (frame.kind === DataFrameKind.end) {
        ended = true;
      } else if (frame.kind === DataFrameKind.failed) {
        throw new DataCommandFailed(`the runtime could not finish the export: ${failedMessage(frame)}`);
      }
    }
    writer?.finish();
    writer = undefined;
  } finally {
    writer?.abandon();
  }
  if (!ended) throw new DataCommandFailed(`the export from the runtime at ${record.url} was cut off (the runtime stopped?)`);
  printSummary(context, 'exported', summary, { folder: context.folder });
  return EXIT_OK;
}

/** The documents of a `documents` frame, checked whole as an import checks them. */
function countFramed(frame: Frame): number {
  return decodeDocuments(frame.payload, 'the export stream').docs.length;
}

function failedMessage(frame: Frame): string {
  const value = parseJsonFrame(frame);
  return isObject(value) && typeof value.error === 'string' ? value.error : 'unknown error';
}

// --- import

async function importData(context: Context, drop: boolean): Promise<number> {
  const dump = await readDump(context.folder, { database: context.db });
  for (const note of dump.notes) context.io.err(`asl data import: note: ${note}\n`);
  const progress = progressBar(context.io, 'importing');
  const { record } = context.target;
  if (!record) {
    const store = await openStore(context, true);
    let outcome: Summary;
    try {
      outcome = await importCollections(store, dump.collections.map((c) => ({ ...c, source: c.file })), { drop, onProgress: progress.update });
    } finally {
      progress.finish();
      await store.close();
    }
    printSummary(context, 'imported', outcome);
    return EXIT_OK;
  }
  const bytes = dump.collections.reduce((n, c) => n + c.bson.length, 0);
  if (bytes > MAX_IMPORT_BYTES) {
    throw new DataCommandFailed(`the dump holds ${bytes} bytes of documents, more than the ${MAX_IMPORT_BYTES} a running runtime takes in one import; stop the runtime at ${record.url} and import again (into its data folder directly), or import one database at a time with --db`);
  }
  const response = await requestData(record, `${DATA_ROUTES.import}${drop ? '?drop=true' : ''}`, { method: 'POST', body: importFrames(dump.collections) });
  if (response.status !== 200) {
    const text = await response.text();
    throw new DataCommandFailed(fileOfRefusal(text, dump.collections) ?? `the runtime at ${record.url} refused the import: ${errorOf({ status: response.status, text })}`);
  }
  let outcome: Summary | undefined;
  let buffered = '';
  try {
    for await (const chunk of bodyChunks(response)) {
      buffered += Buffer.from(chunk).toString('utf8');
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const event = JSON.parse(buffered.slice(0, nl)) as DataImportEvent;
        buffered = buffered.slice(nl + 1);
        if (event.kind === 'progress') progress.update(event.written, event.total);
        else if (event.kind === 'done') outcome = { collections: event.collections };
        else throw new DataCommandFailed(withFileNames(event.error, dump.collections));
      }
    }
  } finally {
    progress.finish();
  }
  if (!outcome) throw new DataCommandFailed(`the import's answer from the runtime at ${record.url} was cut off (the runtime stopped?); check the data before importing again`);
  printSummary(context, 'imported', outcome);
  return EXIT_OK;
}

const FRAME_DOCUMENT_BYTES = 1024 * 1024;

/** The dump as the import route's frames: each collection, its documents in frames of whole documents, the end. */
async function* importFrames(collections: readonly DumpCollection[]): AsyncGenerator<Buffer> {
  let documents = 0;
  for (const c of collections) {
    yield jsonFrame(DataFrameKind.collection, { database: c.database, collection: c.collection, indexes: c.indexes } satisfies DataCollectionFrame);
    let start = 0;
    let end = 0;
    for (const size of c.sizes) {
      if (end > start && end - start + size > FRAME_DOCUMENT_BYTES) {
        yield encodeFrame(DataFrameKind.documents, c.bson.subarray(start, end));
        start = end;
      }
      end += size;
    }
    if (end > start) yield encodeFrame(DataFrameKind.documents, c.bson.subarray(start, end));
    documents += c.docs.length;
  }
  yield jsonFrame(DataFrameKind.end, { collections: collections.length, documents } satisfies DataEndFrame);
}

/** The runtime names a collection where its message begins: told here with the dump file it came from. */
function withFileNames(message: string, collections: readonly DumpCollection[]): string {
  const c = collections.find((x) => message.startsWith(`${x.database}.${x.collection}:`));
  return c ? `${c.file}${message.slice(`${c.database}.${c.collection}`.length)}` : message;
}

/** A refusal naming a collection and offset, told with the dump file it came from. */
function fileOfRefusal(text: string, collections: readonly DumpCollection[]): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    if (!isObject(body) || body.error_code !== 'InvalidDump' || typeof body.error !== 'string') return undefined;
    return withFileNames(body.error, collections);
  } catch {
    return undefined;
  }
}

interface Progress { update(done: number, total: number): void; finish(): void }

/** A bar on stderr when it is a terminal, redrawn at most once per percent; nothing otherwise. */
function progressBar(io: CliIO, label: string): Progress {
  if (!io.errIsTerminal) return { update() {}, finish() {} };
  let shown = -1;
  let drawn = false;
  return {
    update(done, total) {
      const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
      if (percent === shown) return;
      shown = percent;
      drawn = true;
      const width = 30;
      const filled = Math.round((percent / 100) * width);
      io.err(`\r${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(percent).padStart(3)}%  ${done}/${total} documents`);
    },
    finish() {
      if (drawn) io.err('\n');
      drawn = false;
    },
  };
}

// --- backup, restore

async function backupData(context: Context): Promise<number> {
  const { record } = context.target;
  const writer = new BackupWriter(context.folder);
  try {
    if (!record) {
      const store = await openStore(context, false);
      try {
        for (const entry of captureDataFolder(context.target.dataDir, store)) writer.add(entry);
      } finally {
        await store.close();
      }
    } else {
      await backupFromRuntime(record, writer);
    }
    const written = writer.finish({ ...(record ? { appId: record.appId } : {}) });
    if (context.json) context.io.out(`${JSON.stringify({ folder: context.folder, ...written })}\n`);
    else context.io.out(`backed up ${context.target.dataDir} into ${context.folder}: ${written.files} file(s), ${written.bytes} bytes${record ? ` (through the runtime at ${record.url})` : ''}\n`);
    return EXIT_OK;
  } catch (error) {
    writer.abandon();
    throw error;
  }
}

async function backupFromRuntime(record: RuntimeRecord, writer: BackupWriter): Promise<void> {
  const response = await requestData(record, DATA_ROUTES.backup, { method: 'GET' });
  if (response.status !== 200) throw new DataCommandFailed(`the runtime at ${record.url} answered: ${errorOf({ status: response.status, text: await response.text() })}`);
  let ended = false;
  for await (const frame of readFrames(bodyChunks(response), { maxTotalBytes: Number.MAX_SAFE_INTEGER })) {
    if (frame.kind === DataFrameKind.file) {
      const value = parseJsonFrame(frame);
      writer.add({ path: isObject(value) && typeof value.path === 'string' ? value.path : '' });
    } else if (frame.kind === DataFrameKind.content) writer.add(frame.payload);
    else if (frame.kind === DataFrameKind.end) ended = true;
    else if (frame.kind === DataFrameKind.failed) throw new DataCommandFailed(`the runtime could not finish the backup: ${failedMessage(frame)}`);
  }
  if (!ended) throw new DataCommandFailed(`the backup from the runtime at ${record.url} was cut off (the runtime stopped?)`);
}

async function restoreData(context: Context): Promise<number> {
  const { record, dataDir } = context.target;
  if (record) throw new DataCommandFailed(`the runtime at ${record.url} (process ${record.pid}) holds ${dataDir}; stop it before restoring`);
  const holder = storeHolder(dataDir);
  if (holder !== undefined) throw new DataCommandFailed(`process ${holder} holds ${dataDir}; stop it before restoring`);
  const { files } = await restoreDataFolder(context.folder, dataDir);
  if (context.json) context.io.out(`${JSON.stringify({ dataDir, files })}\n`);
  else context.io.out(`restored ${dataDir} from ${context.folder}: ${files} file(s)\n`);
  return EXIT_OK;
}
