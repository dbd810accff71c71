// Per client file: the forms of concurrent server changesets as transformed through that client's later
// uploads (the "reciprocal history" realm-core's server keeps in its file, per client file, trimmed to the
// client's last integrated server version on each upload). A later upload from the same client based on
// an old version must be merged with these forms, not the history entries: with the entries, a list insert
// after the client's own earlier insert was a bad changeset (212, prior size mismatch) once a restart had
// lost them. So they are kept in memory for the files in use and in `__realm_sync.reciprocal`, one document
// per form, written (or deleted) as each upload changes them: the writes follow the merge work, not the
// number of forms held. Bounded: past MAX_STORED_BYTES of a file's forms, the newer ones stay in memory
// only and the store records the version below which forms are missing; after a restart an upload of that
// file that would need them is a client reset (222) instead of a wrong merge.
import { Binary, Long } from 'bson';
import { SYNC_METADATA_DATABASE, type DocumentStore, type StoreCollection } from '../../store/types';
import { toBigInt } from '../history/history';
import type { TimedChangeset } from '../merge/transform';
import { encodeChangeset, parseChangeset } from '../wire/changeset';

const MAX_STORED_BYTES = 8 * 1024 * 1024;

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

export class ReciprocalForms {
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
    const collection = this.collection();
    const key = this.key(ident);
    // -1: the client's uploads are based past the stored marker, so the forms it speaks of are never needed.
    let missingThrough = changed[0] === -1 ? 0 : file.storedMissingThrough;
    for (const version of changed) {
      if (version < 0) continue;
      const form = file.forms.get(version);
      const size = file.stored.get(version);
      if (!form) {
        if (size === undefined) continue;
        await collection.deleteOne({ _id: `${key}|${version}` });
        file.stored.delete(version);
        file.storedBytes -= size;
        continue;
      }
      const encoded = encodeChangeset(form.instructions);
      if (file.storedBytes - (size ?? 0) + encoded.length > MAX_STORED_BYTES) {
        missingThrough = Math.max(missingThrough, version);
        continue;
      }
      await collection.replaceOne({ _id: `${key}|${version}` }, { f: key, v: version, cs: new Binary(encoded), ts: Long.fromBigInt(form.originTimestamp), o: Long.fromBigInt(form.originFileIdent) }, { upsert: true });
      file.stored.set(version, encoded.length);
      file.storedBytes += encoded.length - (size ?? 0);
    }
    if (missingThrough !== file.storedMissingThrough) {
      if (missingThrough === 0) await collection.deleteOne({ _id: `${key}|missing` });
      else await collection.replaceOne({ _id: `${key}|missing` }, { f: key, missingThrough }, { upsert: true });
      file.storedMissingThrough = missingThrough;
    }
  }
}
