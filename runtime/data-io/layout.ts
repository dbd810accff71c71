// mongodump's layout on disk: `<dir>/<db>/<collection>.bson` (concatenated BSON documents) beside
// `<collection>.metadata.json` (canonical Extended JSON: indexes, uuid, collection name, type), each `.gz`
// with `--gzip`. Reading checks every file whole before anything is handed on; writing replaces each file
// by rename, so a reader never sees half of one.
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { EJSON } from 'bson';
import { isObject } from '../../core/json';
import { decodeDocuments, MalformedDump } from './bson-file';
import type { Document } from '../store/types';

const gunzip = promisify(zlib.gunzip);
/** Decompressed size at which a `.gz` file is refused (the embedded store keeps every document in memory). */
const MAX_GUNZIPPED_BYTES = 2 * 1024 * 1024 * 1024 - 1;

/** Characters a file name cannot hold on some system, written `%XX` as mongodump escapes them. */
const UNSAFE_IN_FILE_NAME = /[%/\\:*?"<>|\u0000-\u001f]/g;

export function fileStemOf(name: string): string {
  return name.replace(UNSAFE_IN_FILE_NAME, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

export function nameOfFileStem(stem: string): string {
  try {
    return decodeURIComponent(stem);
  } catch {
    return stem;
  }
}

/** One collection of a dump as read: its documents checked, its indexes as the store can keep them. */
export interface DumpCollection {
  database: string;
  collection: string;
  /** The `.bson` (or `.bson.gz`) file, for messages; the metadata file when the collection has no documents file. */
  file: string;
  /** Single-field indexes (the store's kind), `_id` left out. */
  indexes: string[];
  /** The documents as concatenated BSON (decompressed). */
  bson: Buffer;
  /** The documents in the store's form, and their BSON sizes. */
  docs: Document[];
  sizes: number[];
}

export interface ReadDump {
  collections: DumpCollection[];
  /** What was left out or cannot be kept exactly, one line each (skipped indexes, views, system collections). */
  notes: string[];
}

export interface ReadDumpOptions {
  /** Only this database's folder. */
  database?: string;
}

/** Reads and checks a whole dump folder; throws MalformedDump naming the file (and byte offset) at fault. */
export async function readDump(dir: string, options: ReadDumpOptions = {}): Promise<ReadDump> {
  const notes: string[] = [];
  const collections: DumpCollection[] = [];
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    throw new MalformedDump(dir, `cannot read the dump folder: ${(error as Error).message}`);
  }
  const databases = entries.filter((e) => e.isDirectory()).map((e) => ({ folder: path.join(dir, e.name), name: nameOfFileStem(e.name) }));
  for (const e of entries) if (!e.isDirectory()) notes.push(`${path.join(dir, e.name)}: not a database folder, ignored`);
  for (const { folder, name: database } of databases.sort((a, b) => a.name.localeCompare(b.name))) {
    if (options.database !== undefined && database !== options.database) continue;
    collections.push(...await readDatabase(folder, database, notes));
  }
  if (options.database !== undefined && !databases.some((d) => d.name === options.database)) {
    throw new MalformedDump(dir, `the dump holds no database "${options.database}"`);
  }
  return { collections, notes };
}

const DOCUMENTS_FILE = /^(.*)\.bson(\.gz)?$/;
const METADATA_FILE = /^(.*)\.metadata\.json(\.gz)?$/;

async function readDatabase(folder: string, database: string, notes: string[]): Promise<DumpCollection[]> {
  const byStem = new Map<string, { bson?: string; metadata?: string }>();
  for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
    const file = path.join(folder, entry.name);
    const documents = DOCUMENTS_FILE.exec(entry.name);
    const metadata = METADATA_FILE.exec(entry.name);
    const stem = documents?.[1] ?? metadata?.[1];
    if (!entry.isFile() || stem === undefined) { notes.push(`${file}: not a dump file, ignored`); continue; }
    const slot = byStem.get(stem) ?? {};
    const kind = documents ? 'bson' : 'metadata';
    if (slot[kind]) throw new MalformedDump(file, `both ${path.basename(slot[kind]!)} and ${entry.name} hold the same collection`);
    slot[kind] = file;
    byStem.set(stem, slot);
  }
  const out: DumpCollection[] = [];
  for (const [stem, files] of [...byStem].sort(([a], [b]) => a.localeCompare(b))) {
    const metadata = files.metadata ? parseMetadata(files.metadata, await readMaybeGzipped(files.metadata)) : undefined;
    // The metadata's name first: mongodump shortens a long name in the file name, never there.
    const collection = metadata?.collectionName ?? nameOfFileStem(stem);
    if (collection.startsWith('system.')) { notes.push(`${files.bson ?? files.metadata}: the system collection ${database}.${collection} is not imported`); continue; }
    if (metadata && metadata.type !== 'collection') { notes.push(`${files.metadata}: ${database}.${collection} is a ${metadata.type}, not imported (the embedded store keeps collections only)`); continue; }
    const indexes = metadata ? storeIndexes(metadata.indexes, files.metadata!, notes) : [];
    if (metadata && metadata.options.length > 0) notes.push(`${files.metadata}: the collection options ${metadata.options.join(', ')} are not kept (the embedded store has none)`);
    const file = files.bson ?? files.metadata!;
    const bson = files.bson ? await readMaybeGzipped(files.bson) : Buffer.alloc(0);
    const where = files.bson?.endsWith('.gz') ? `${files.bson} (decompressed)` : file;
    out.push({ database, collection, file, indexes, bson, ...decodeDocuments(bson, where) });
  }
  return out;
}

async function readMaybeGzipped(file: string): Promise<Buffer> {
  const bytes = fs.readFileSync(file);
  if (!file.endsWith('.gz')) return bytes;
  try {
    return await gunzip(bytes, { maxOutputLength: MAX_GUNZIPPED_BYTES });
  } catch (error) {
    throw new MalformedDump(file, `not a whole gzip file: ${(error as Error).message}`);
  }
}

interface Metadata { type: string; indexes: unknown[]; collectionName?: string; options: string[] }

function parseMetadata(file: string, bytes: Buffer): Metadata {
  let value: unknown;
  try {
    value = EJSON.parse(bytes.toString('utf8'), { relaxed: false });
  } catch (error) {
    throw new MalformedDump(file, `not Extended JSON: ${(error as Error).message}`);
  }
  if (!isObject(value)) throw new MalformedDump(file, 'the metadata is not a JSON object');
  const indexes = value.indexes ?? [];
  if (!Array.isArray(indexes)) throw new MalformedDump(file, '"indexes" is not an array');
  const type = value.type ?? 'collection';
  if (typeof type !== 'string') throw new MalformedDump(file, '"type" is not a string');
  const options = isObject(value.options) ? Object.keys(value.options) : [];
  return { type, indexes, options, ...(typeof value.collectionName === 'string' && value.collectionName !== '' ? { collectionName: value.collectionName } : {}) };
}

function numericValue(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (value !== null && typeof value === 'object' && typeof (value as { valueOf(): unknown }).valueOf() === 'number') return (value as { valueOf(): number }).valueOf();
  if (value !== null && typeof value === 'object' && typeof (value as { toNumber?: unknown }).toNumber === 'function') return (value as { toNumber(): number }).toNumber();
  return undefined;
}

/** The index fields the store can keep (single field, ascending or descending); the others are noted. */
function storeIndexes(specs: unknown[], file: string, notes: string[]): string[] {
  const fields: string[] = [];
  for (const spec of specs) {
    if (!isObject(spec) || !isObject(spec.key)) throw new MalformedDump(file, 'an index has no "key" document');
    const keys = Object.keys(spec.key);
    const name = typeof spec.name === 'string' ? spec.name : JSON.stringify(keys);
    const direction = keys.length === 1 ? numericValue(spec.key[keys[0]!]) : undefined;
    if (keys.length !== 1 || (direction !== 1 && direction !== -1)) {
      notes.push(`${file}: index ${name} is not a single-field index, which is all the embedded store keeps; not created`);
      continue;
    }
    if (spec.expireAfterSeconds !== undefined) notes.push(`${file}: index ${name} expires documents (TTL); the embedded store indexes ${keys[0]} but never expires them`);
    if (spec.unique === true && keys[0] !== '_id') notes.push(`${file}: index ${name} is unique; the embedded store indexes ${keys[0]} without enforcing uniqueness`);
    if (keys[0] !== '_id' && !fields.includes(keys[0]!)) fields.push(keys[0]!);
  }
  return fields;
}

/** The metadata file's text for a collection with these store indexes, as mongodump writes it. */
export function metadataText(collection: string, indexes: readonly string[]): string {
  const specs = [{ v: 2, key: { _id: 1 }, name: '_id_' }, ...indexes.map((field) => ({ v: 2, key: { [field]: 1 }, name: `${field}_1` }))];
  return EJSON.stringify({ indexes: specs, uuid: randomUUID().replace(/-/g, ''), collectionName: collection, type: 'collection' }, { relaxed: false });
}

/** Writes one collection's pair of files: the documents arrive in chunks, each file appears whole (by rename). */
export class DumpFileWriter {
  private readonly temp: string;
  private readonly fd: number;
  private readonly gzipped: Buffer[] = [];
  private readonly final: string;

  constructor(private readonly dir: string, private readonly database: string, private readonly collection: string, private readonly indexes: readonly string[], private readonly gzip: boolean) {
    const folder = path.join(dir, fileStemOf(database));
    fs.mkdirSync(folder, { recursive: true });
    this.final = path.join(folder, `${fileStemOf(collection)}.bson${gzip ? '.gz' : ''}`);
    this.temp = `${this.final}.${process.pid}.tmp`;
    this.fd = fs.openSync(this.temp, 'w', 0o600);
  }

  write(chunk: Uint8Array): void {
    if (this.gzip) { this.gzipped.push(Buffer.from(chunk)); return; }
    let written = 0;
    while (written < chunk.length) written += fs.writeSync(this.fd, chunk, written, chunk.length - written);
  }

  finish(): void {
    if (this.gzip) fs.writeSync(this.fd, zlib.gzipSync(Buffer.concat(this.gzipped)));
    fs.closeSync(this.fd);
    fs.renameSync(this.temp, this.final);
    const metadata = Buffer.from(metadataText(this.collection, this.indexes));
    const metadataFile = path.join(this.dir, fileStemOf(this.database), `${fileStemOf(this.collection)}.metadata.json${this.gzip ? '.gz' : ''}`);
    fs.writeFileSync(`${metadataFile}.tmp`, this.gzip ? zlib.gzipSync(metadata) : metadata, { mode: 0o600 });
    fs.renameSync(`${metadataFile}.tmp`, metadataFile);
  }

  abandon(): void {
    try { fs.closeSync(this.fd); } catch { /* already closed */ }
    fs.rmSync(this.temp, { force: true });
  }
}
