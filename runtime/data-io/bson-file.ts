// Concatenated BSON documents, as a mongodump `.bson` file holds them: split and decoded with every document
// checked whole, so a malformed or cut-off file is refused naming the byte offset of the document at fault.
import { BSON } from 'bson';
import { deserializeStored } from '../../core/bsonDecode';
import type { Document } from '../store/types';
import { BsonWriter, NoRoom } from './bson-writer';

/** mongod's largest document (16 MiB) plus the room it allows its own fields; a larger length is damage. */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024 + 16 * 1024;
const MIN_DOCUMENT_BYTES = 5;

/** A dump that cannot be read: `where` names the file (or the namespace in a stream), `offset` the document's first byte. */
export class MalformedDump extends Error {
  constructor(readonly where: string, readonly why: string, readonly offset?: number) {
    super(offset === undefined ? `${where}: ${why}` : `${where}: the document at byte ${offset}: ${why}`);
    this.name = 'MalformedDump';
  }
}

export interface DecodedDocuments {
  docs: Document[];
  /** Each document's BSON length, in the same order. */
  sizes: number[];
}

/**
 * Decodes every document of `bytes` into the store's form (core/bsonDecode: every number keeps its type).
 * `base` is the offset of `bytes` within the whole file, for messages.
 */
export function decodeDocuments(bytes: Uint8Array, where: string, base = 0): DecodedDocuments {
  const docs: Document[] = [];
  const sizes: number[] = [];
  forEachDocument(bytes, where, base, (doc, offset) => {
    try {
      docs.push(deserializeStored(doc, { keepRegExps: true }));
    } catch (error) {
      throw new MalformedDump(where, `not a valid BSON document: ${describe(error)}`, offset);
    }
    sizes.push(doc.length);
  });
  return { docs, sizes };
}

function forEachDocument(bytes: Uint8Array, where: string, base: number, visit: (doc: Uint8Array, offset: number) => void): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at < bytes.length) {
    const offset = base + at;
    if (bytes.length - at < 4) throw new MalformedDump(where, `truncated: ${bytes.length - at} byte(s) where a document's length should be`, offset);
    const length = view.getInt32(at, true);
    if (length < MIN_DOCUMENT_BYTES || length > MAX_DOCUMENT_BYTES) throw new MalformedDump(where, `impossible document length ${length}`, offset);
    if (length > bytes.length - at) throw new MalformedDump(where, `truncated: the document claims ${length} bytes, only ${bytes.length - at} remain`, offset);
    if (bytes[at + length - 1] !== 0) throw new MalformedDump(where, 'the document does not end with its 0 byte', offset);
    visit(bytes.subarray(at, at + length), offset);
    at += length;
  }
}

function describe(error: unknown): string {
  return error instanceof RangeError ? `${error.message} (nested too deeply?)` : (error as Error)?.message ?? String(error);
}

/** Room for the largest document after a chunk's flush threshold, so one always fits. */
const CHUNK_BUFFER_BYTES = MAX_DOCUMENT_BYTES + 2 * 1024 * 1024;
const CHUNK_FLUSH_BYTES = 1024 * 1024;

/**
 * The documents as concatenated BSON in chunks of about 1 MiB. Each chunk is a view of a buffer reused for
 * the next one: use it (write it, copy it) before asking for the next.
 */
export function* bsonChunks(docs: Iterable<Document>): Generator<Uint8Array> {
  const buffer = Buffer.allocUnsafe(CHUNK_BUFFER_BYTES);
  const writer = new BsonWriter(buffer);
  for (const doc of docs) {
    try {
      writer.document(doc);
    } catch (error) {
      if (!(error instanceof NoRoom)) throw error;
      // Larger than any document mongod keeps: the bson library says whether it can be written at all.
      if (writer.length > 0) yield buffer.subarray(0, writer.length);
      writer.reset();
      yield BSON.serialize(doc);
      continue;
    }
    if (writer.length >= CHUNK_FLUSH_BYTES) {
      yield buffer.subarray(0, writer.length);
      writer.reset();
    }
  }
  if (writer.length > 0) yield buffer.subarray(0, writer.length);
}
