// Flexible sync: what each client file holds, so a client resuming after a disconnect is brought to exactly
// what its queries select now (objects that left its view while it was away are erased). Per client file:
// snapshots (the held objects after a bootstrap of a query version, at a server version) and changes (objects
// entering or leaving the view with the server version of the changeset that carried them), each written
// before the DOWNLOAD that carries it leaves, so the record is never behind the client. The client's IDENT
// names the query version it applied and the server version it reached: records beyond those it never
// integrated are ignored. The held objects are opaque bytes here (the sessions encode them).
import { Binary } from 'bson';
import { SYNC_METADATA_DATABASE, type Document, type DocumentStore, type StoreCollection } from '../../store/types';

/** Bytes of one stored part of a snapshot (documents stay well under the 16 MB BSON limit). */
const SNAPSHOT_PART_BYTES = 8 * 1024 * 1024;

/** Objects entering and leaving a client's view in the changeset of one server version. */
export interface ViewChange {
  version: number;
  entered: Uint8Array;
  left: Uint8Array;
}

/** A client file's view as recorded: the snapshot, then the changes after it that the client integrated, in order. */
export interface RecordedView {
  snapshot: Uint8Array;
  changes: { entered: Uint8Array; left: Uint8Array }[];
  /** The next record sequence number of this client file. */
  nextSequence: number;
  /** Whether records other than that one snapshot exist (changes, older or never integrated records). */
  compactable: boolean;
}

export class ClientViews {
  private indexed?: Promise<unknown>;

  constructor(private readonly store: DocumentStore, private readonly epoch: () => number) {}

  private collection(): StoreCollection {
    return this.store.collection(SYNC_METADATA_DATABASE, 'views');
  }

  /** The records of every client file are in one collection: a resuming client's are found by index. */
  private async indexedCollection(): Promise<StoreCollection> {
    await (this.indexed ??= this.collection().createIndex('f'));
    return this.collection();
  }

  private file(ident: number): string {
    return `${this.epoch()}|${ident}`;
  }

  /** Records the objects a client file holds once it has applied the bootstrap of `queryVersion` at server version `version`. */
  async saveSnapshot(ident: number, sequence: number, queryVersion: number, version: number, held: Uint8Array): Promise<void> {
    const f = this.file(ident);
    const parts = Math.max(1, Math.ceil(held.length / SNAPSHOT_PART_BYTES));
    const docs: Document[] = [];
    for (let part = 0; part < parts; part++) {
      docs.push({
        _id: `${f}|${sequence}|${part}`, f, s: sequence, kind: 'snapshot', q: queryVersion, v: version, part, parts,
        b: new Binary(held.subarray(part * SNAPSHOT_PART_BYTES, (part + 1) * SNAPSHOT_PART_BYTES)),
      });
    }
    await this.collection().insertMany(docs);
  }

  /** Records objects entering and leaving the view of a client file (one record per DOWNLOAD). */
  async saveChanges(ident: number, sequence: number, queryVersion: number, changes: readonly ViewChange[]): Promise<void> {
    const f = this.file(ident);
    await this.collection().insertOne({
      _id: `${f}|${sequence}`, f, s: sequence, kind: 'changes', q: queryVersion,
      changes: changes.map((c) => ({ v: c.version, in: new Binary(c.entered), out: new Binary(c.left) })),
    });
  }

  /** The next record sequence number of a client file (1 for a file with no record). */
  async nextSequence(ident: number): Promise<number> {
    const [last] = await (await this.indexedCollection()).find({ f: this.file(ident) }, { sort: { s: -1 }, limit: 1, projection: { s: 1 } });
    return last ? Number(last.s) + 1 : 1;
  }

  /**
   * What a client file holds at `queryVersion` and server version `downloadVersion` (as its IDENT says): the
   * latest complete snapshot of that query version it can have applied, with the changes after it up to that
   * server version; undefined when nothing is recorded for that query version.
   */
  async recorded(ident: number, queryVersion: number, downloadVersion: number): Promise<RecordedView | undefined> {
    const docs = await (await this.indexedCollection()).find({ f: this.file(ident) }, { sort: { s: 1, part: 1 } });
    const nextSequence = docs.reduce((max, d) => Math.max(max, Number(d.s) + 1), 1);
    const snapshots = new Map<number, Document[]>();
    for (const d of docs) {
      if (d.kind !== 'snapshot' || Number(d.q) !== queryVersion || Number(d.v) > downloadVersion) continue;
      const parts = snapshots.get(Number(d.s)) ?? [];
      parts.push(d);
      snapshots.set(Number(d.s), parts);
    }
    const complete = [...snapshots.entries()].filter(([, parts]) => parts.length === Number(parts[0]!.parts)).sort(([a], [b]) => b - a)[0];
    if (!complete) return undefined;
    const [sequence, parts] = complete;
    const snapshot = Buffer.concat(parts.map((p) => (p.b as Binary).buffer));
    const changes: RecordedView['changes'] = [];
    for (const d of docs) {
      if (d.kind !== 'changes' || Number(d.q) !== queryVersion || Number(d.s) <= sequence) continue;
      for (const c of d.changes as { v: number; in: Binary; out: Binary }[]) {
        if (Number(c.v) <= downloadVersion) changes.push({ entered: c.in.buffer, left: c.out.buffer });
      }
    }
    return { snapshot, changes, nextSequence, compactable: docs.length > parts.length };
  }

  /** Replaces a client file's records by one snapshot (written first: a crash between the two keeps the newest). */
  async compact(ident: number, sequence: number, queryVersion: number, version: number, held: Uint8Array): Promise<void> {
    await this.saveSnapshot(ident, sequence, queryVersion, version, held);
    await this.collection().deleteMany({ f: this.file(ident), s: { $lt: sequence } });
  }
}
