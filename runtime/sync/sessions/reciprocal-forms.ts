// Per client file: the forms of concurrent server changesets as transformed through that client's later
// uploads (the "reciprocal history" realm-core's server keeps in its file, per client file, trimmed to the
// client's last integrated server version on each upload). A later upload from the same client based on
// an old version must be merged with these forms, not the history entries: with the entries, a list insert
// after the client's own earlier insert was a bad changeset (212, prior size mismatch) once a restart had
// lost them. So they are kept in `__realm_sync.reciprocal`, one document per form, written (or deleted) as
// each upload changes them: the writes follow the merge work, not the number of forms held. The newest 16
// files keep theirs in memory too; an upload of another reads them back. Bounded: past MAX_STORED_BYTES of
// a file's forms, the newer ones stay in memory only and the store records the version below which forms
// are missing; after a restart an upload of that file that would need them is a client reset (222)
// instead of a wrong merge.
import { Binary, Long } from 'bson';
import { SYNC_METADATA_DATABASE, type CommitWrite, type Document, type DocumentStore, type StoreCollection } from '../../store/types';
import { toBigInt } from '../history/history';
import type { TimedChangeset } from '../merge/transform';
import type { ReciprocalFormStore } from '../merge/rebase';
import { encodeChangeset, parseChangeset } from '../wire/changeset';

const MAX_STORED_BYTES = 8 * 1024 * 1024;
/** Client files whose forms stay in memory after their upload (the newest; see `evict`). */
const MAX_FILES_IN_MEMORY = 16;
/** A commit is one journal record, one BSON document (at most 16 MiB). */
const COMMIT_BYTES = 4 * 1024 * 1024;

interface FileForms {
  forms: Map<number, TimedChangeset>;
  /** The stored forms' sizes, by version. */
  stored: Map<number, number>;
  storedBytes: number;
  /** Versions whose form changed (kept or dropped) since the last save. */
  changed: Set<number>;
  /** Forms of versions up to this one are missing (read from the store: lost to this process). */
  missingThrough: number;
  /** What the store says is missing (this process may still hold those forms). */
  storedMissingThrough: number;
}

export class ReciprocalForms implements ReciprocalFormStore {
  /** Files loaded in this process (their forms emptied once not needed, the rest of the record kept: a few numbers). */
  private readonly files = new Map<number, FileForms>();

  constructor(private readonly store: DocumentStore, private readonly epoch: () => number) {}

  private collection(): StoreCollection {
    return this.store.collection(SYNC_METADATA_DATABASE, 'reciprocal');
  }

  private key(ident: number): string {
    return `${this.epoch()}|${ident}`;
  }

  /** Reads a client file's forms from the store the first time it uploads in this process. */
  async load(ident: number): Promise<void> {
    if (this.files.has(ident)) return;
    const docs = await this.collection().find({ f: this.key(ident) });
    const file: FileForms = { forms: new Map(), stored: new Map(), storedBytes: 0, changed: new Set(), missingThrough: 0, storedMissingThrough: 0 };
    for (const doc of docs) {
      if (doc.missingThrough !== undefined) {
        file.missingThrough = file.storedMissingThrough = Number(doc.missingThrough);
        continue;
      }
      const bytes = (doc.cs as Binary).buffer;
      file.forms.set(Number(doc.v), { instructions: parseChangeset(bytes), originTimestamp: toBigInt(doc.ts), originFileIdent: toBigInt(doc.o) });
      file.stored.set(Number(doc.v), bytes.length);
      file.storedBytes += bytes.length;
    }
    if (!this.files.has(ident)) this.files.set(ident, file);
  }

  private file(ident: number): FileForms {
    let file = this.files.get(ident);
    if (!file) this.files.set(ident, (file = { forms: new Map(), stored: new Map(), storedBytes: 0, changed: new Set(), missingThrough: 0, storedMissingThrough: 0 }));
    return file;
  }

  /** The forms an upload based on `baseVersion` meets, those of versions up to it dropped (the client has them). */
  forUpload(ident: number, baseVersion: number): ReadonlyMap<number, TimedChangeset> {
    const file = this.file(ident);
    if (baseVersion >= file.missingThrough) file.missingThrough = 0;
    for (const version of file.forms.keys()) {
      if (version <= baseVersion) {
        file.forms.delete(version);
        file.changed.add(version);
      }
    }
    if (file.storedMissingThrough > 0 && baseVersion >= file.storedMissingThrough) file.changed.add(-1);
    return file.forms;
  }

  /** Whether an upload based on `baseVersion` would need forms that were not kept. */
  missing(ident: number, baseVersion: number): boolean {
    return baseVersion < this.file(ident).missingThrough;
  }

  keep(ident: number, version: number, form: TimedChangeset): void {
    const file = this.file(ident);
    file.forms.set(version, form);
    file.changed.add(version);
  }

  /** Stores what an integrated upload changed of a file's forms. */
  async save(ident: number): Promise<void> {
    const file = this.files.get(ident);
    if (!file || file.changed.size === 0) return;
    const changed = [...file.changed].sort((a, b) => a - b);
    file.changed.clear();
    const key = this.key(ident);
    const writes: CommitWrite[] = [];
    const write = (w: { insert: Document } | { replace: Document } | { delete: unknown }) => writes.push({ database: SYNC_METADATA_DATABASE, collection: 'reciprocal', ...w });
    // -1: the client's uploads are based past the stored marker, so the forms it speaks of are never needed.
    let missingThrough = changed[0] === -1 ? 0 : file.storedMissingThrough;
    for (const version of changed) {
      if (version < 0) continue;
      const form = file.forms.get(version);
      const size = file.stored.get(version);
      if (!form) {
        if (size === undefined) continue;
        write({ delete: `${key}|${version}` });
        file.stored.delete(version);
        file.storedBytes -= size;
        continue;
      }
      const encoded = encodeChangeset(form.instructions);
      if (file.storedBytes - (size ?? 0) + encoded.length > MAX_STORED_BYTES) {
        missingThrough = Math.max(missingThrough, version);
        continue;
      }
      const doc = { _id: `${key}|${version}`, f: key, v: version, cs: new Binary(encoded), ts: Long.fromBigInt(form.originTimestamp), o: Long.fromBigInt(form.originFileIdent) };
      write(size === undefined ? { insert: doc } : { replace: doc });
      file.stored.set(version, encoded.length);
      file.storedBytes += encoded.length - (size ?? 0);
    }
    if (missingThrough !== file.storedMissingThrough) {
      const marker = { _id: `${key}|missing`, f: key, missingThrough };
      write(missingThrough === 0 ? { delete: marker._id } : file.storedMissingThrough === 0 ? { insert: marker } : { replace: marker });
      file.storedMissingThrough = missingThrough;
    }
    await this.commit(writes);
    this.evict(ident, file);
  }

  /**
   * The file becomes the newest in memory; past MAX_FILES_IN_MEMORY the oldest whose forms are all stored
   * leave memory (read again at their next upload): a client file that never comes back costs the store, not the heap too.
   */
  private evict(ident: number, file: FileForms): void {
    this.files.delete(ident);
    this.files.set(ident, file);
    for (const [other, held] of this.files) {
      if (this.files.size <= MAX_FILES_IN_MEMORY) break;
      if (other !== ident && held.changed.size === 0 && held.stored.size === held.forms.size) this.files.delete(other);
    }
  }

  /** The writes as commits of at most COMMIT_BYTES where the store offers them (one journal record each), else issued together. */
  private async commit(writes: CommitWrite[]): Promise<void> {
    if (writes.length === 0) return;
    if (this.store.commit) {
      let batch: CommitWrite[] = [];
      let bytes = 0;
      for (const w of writes) {
        const size = 'delete' in w ? 64 : ((('insert' in w ? w.insert : w.replace).cs as Binary | undefined)?.length() ?? 0) + 128;
        if (batch.length > 0 && bytes + size > COMMIT_BYTES) {
          await this.store.commit(batch);
          batch = [];
          bytes = 0;
        }
        batch.push(w);
        bytes += size;
      }
      return this.store.commit(batch);
    }
    const collection = this.collection();
    await Promise.all(writes.map((w) => ('insert' in w ? collection.insertOne(w.insert)
      : 'replace' in w ? collection.replaceOne({ _id: w.replace._id as never }, w.replace, { upsert: true })
        : collection.deleteOne({ _id: w.delete as never }))));
  }
}
