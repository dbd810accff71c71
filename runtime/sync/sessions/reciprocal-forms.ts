// Per client file: the forms of concurrent server changesets as transformed through that client's later
// uploads (the "reciprocal history" realm-core's server keeps in its file, per client file, trimmed to the
// client's last integrated server version on each upload). A later upload from the same client based on
// an old version must be merged with these forms, not the history entries: with the entries, a list insert
// after the client's own earlier insert was a bad changeset (212, prior size mismatch) once a restart had
// lost them. So they are kept in memory for the files in use and in `__realm_sync.reciprocal` (one
// document per client file, written after each upload that changed them). Bounded: a file whose forms
// would take more than MAX_STORED_BYTES keeps them in memory only and stores the version below which they
// are missing; after a restart, an upload of that file that would need them is a client reset (222)
// instead of a wrong merge.
import { Binary, Long } from 'bson';
import { SYNC_METADATA_DATABASE, type Document, type DocumentStore } from '../../store/types';
import { toBigInt } from '../history/history';
import type { TimedChangeset } from '../merge/transform';
import { encodeChangeset, parseChangeset } from '../wire/changeset';

const MAX_STORED_BYTES = 8 * 1024 * 1024;

interface FileForms {
  forms: Map<number, TimedChangeset>;
  /** Whether the store holds a document for the file. */
  stored: boolean;
  dirty: boolean;
  /** Forms of versions above this one's base and up to it were not kept (lost, or too large to store). */
  missingThrough: number;
}

export class ReciprocalForms {
  /** Files loaded in this process (their forms emptied once not needed, the rest of the record kept: a few numbers). */
  private readonly files = new Map<number, FileForms>();

  constructor(private readonly store: DocumentStore, private readonly epoch: () => number) {}

  private key(ident: number): string {
    return `${this.epoch()}|${ident}`;
  }

  /** Reads a client file's forms from the store the first time it uploads in this process. */
  async load(ident: number): Promise<void> {
    if (this.files.has(ident)) return;
    const doc = await this.store.collection(SYNC_METADATA_DATABASE, 'reciprocal').findOne({ _id: this.key(ident) });
    const forms = new Map<number, TimedChangeset>();
    for (const f of (doc?.forms as Document[] | undefined) ?? []) {
      forms.set(Number(f.v), { instructions: parseChangeset((f.cs as Binary).buffer), originTimestamp: toBigInt(f.ts), originFileIdent: toBigInt(f.o) });
    }
    if (!this.files.has(ident)) this.files.set(ident, { forms, stored: doc !== null && doc !== undefined, dirty: false, missingThrough: Number(doc?.missingThrough ?? 0) });
  }

  private file(ident: number): FileForms {
    let file = this.files.get(ident);
    if (!file) this.files.set(ident, (file = { forms: new Map(), stored: false, dirty: false, missingThrough: 0 }));
    return file;
  }

  /** The forms an upload based on `baseVersion` meets, those of versions up to it dropped (the client has them). */
  forUpload(ident: number, baseVersion: number): ReadonlyMap<number, TimedChangeset> {
    const file = this.file(ident);
    if (file.missingThrough > 0 && baseVersion >= file.missingThrough) {
      file.missingThrough = 0;
      file.dirty = true;
    }
    for (const version of file.forms.keys()) {
      if (version <= baseVersion) {
        file.forms.delete(version);
        file.dirty = true;
      }
    }
    return file.forms;
  }

  /** Whether an upload based on `baseVersion` would need forms that were not kept. */
  missing(ident: number, baseVersion: number): boolean {
    return baseVersion < this.file(ident).missingThrough;
  }

  keep(ident: number, version: number, form: TimedChangeset): void {
    const file = this.file(ident);
    file.forms.set(version, form);
    file.dirty = true;
  }

  /** Stores a file's forms when an integrated upload changed them. */
  async save(ident: number): Promise<void> {
    const file = this.files.get(ident);
    if (!file?.dirty) return;
    file.dirty = false;
    const collection = this.store.collection(SYNC_METADATA_DATABASE, 'reciprocal');
    if (file.forms.size === 0 && file.missingThrough === 0) {
      if (file.stored) await collection.deleteOne({ _id: this.key(ident) });
      file.stored = false;
      return;
    }
    const forms: Document[] = [];
    let bytes = 0;
    for (const [version, form] of file.forms) {
      const encoded = encodeChangeset(form.instructions);
      bytes += encoded.length;
      forms.push({ v: version, cs: new Binary(encoded), ts: Long.fromBigInt(form.originTimestamp), o: Long.fromBigInt(form.originFileIdent) });
    }
    let missingThrough = file.missingThrough;
    if (bytes > MAX_STORED_BYTES) for (const version of file.forms.keys()) missingThrough = Math.max(missingThrough, version);
    await collection.replaceOne({ _id: this.key(ident) }, bytes > MAX_STORED_BYTES ? { forms: [], missingThrough } : { forms, missingThrough }, { upsert: true });
    file.stored = true;
  }
}
