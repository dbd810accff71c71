// The server side of each partition's sync history ("server file"): server versions with the changesets
// that produced them, the client files the server gave idents to, and their upload progress. Persisted
// through the document store (database `__realm_sync`, as the platform keeps its sync metadata in the
// linked cluster), so it lives in the data folder (embedded store) or MongoDB, and an acknowledged upload
// is on disk before its acknowledgement leaves.
import { randomBytes } from 'node:crypto';
import { Binary, Long } from 'bson';
import { SYNC_METADATA_DATABASE, type CommitWrite, type Document, type DocumentStore, type StoreCollection } from '../../store/types';
import { ClientViews } from './views';

/** The origin file ident of changesets the server made (writes from GraphQL, functions, the Data API, bootstraps). */
export const SERVER_FILE_IDENT = 1;
/** History entries kept per partition before the oldest are dropped (clients older than that reset). */
const DEFAULT_MAX_ENTRIES = 50_000;

export interface HistoryEntry {
  version: number;
  originFileIdent: number;
  /** The client version that produced it on its origin client (0 for the server's own). */
  clientVersion: number;
  /** The last server version its origin client had integrated when it made the changeset (0 for the server's own). */
  baseVersion: number;
  /** Milliseconds since 2015-01-01 (realm's sync epoch). */
  timestamp: bigint;
  changeset: Uint8Array;
  /** Size as uploaded (before the server's transform), for download progress. */
  originalSize: number;
  /** When the server integrated it (ms since the epoch, the server's clock: a client's timestamp is its own). */
  integratedAt: number;
}

export interface ClientFileRecord {
  ident: number;
  salt: bigint;
  partition: string;
  userId: string;
  /** The last client version integrated, and the server version its changeset was based on. */
  uploadClientVersion: number;
  uploadServerVersion: number;
  lockedServerVersion: number;
  /** Flexible sync: compensating writes the client has not downloaded yet, by the server version of their revert. */
  compensations?: PendingCompensation[];
}

/**
 * A refused changeset's compensating write, kept until the client has the server version of its revert
 * (sent again to a client that reconnects without it). `objects`: the refused objects, encoded by the engine.
 */
export interface PendingCompensation {
  serverVersion: number;
  clientVersion: number;
  objects: Uint8Array;
  reasons: string[];
}

function randomSalt(): bigint {
  return randomBytes(8).readBigUInt64BE() & 0x7fff_ffff_ffff_ffffn || 1n;
}

/** One partition's history, in memory after its first use. */
export class PartitionHistory {
  constructor(
    readonly partition: string,
    readonly salt: bigint,
    /** Versions up to `base` are no longer kept: a client that last synced before it must reset. */
    public base: number,
    public latest: number,
    readonly entries: HistoryEntry[],
  ) {}

  /** Entries with a version greater than `version`. */
  since(version: number): HistoryEntry[] {
    if (version >= this.latest) return [];
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.entries[mid]!.version <= version) lo = mid + 1;
      else hi = mid;
    }
    return this.entries.slice(lo);
  }
}

export interface SyncHistoryOptions {
  store: DocumentStore;
  /** The sync epoch (grows at each terminate): histories and client files of another epoch are not found. */
  epoch: () => number;
  maxEntries?: number;
  /** `client_max_offline_days` in milliseconds: older entries are dropped, and clients that last synced before them reset. */
  maxAgeMs?: () => number | undefined;
  /** Milliseconds since the epoch. */
  now?: () => number;
}

export class SyncHistory {
  private readonly partitions = new Map<string, Promise<PartitionHistory>>();
  private readonly maxEntries: number;
  private loadedEpoch: number;
  /** Flexible sync: what each client file holds. */
  readonly views: ClientViews;

  constructor(private readonly options: SyncHistoryOptions) {
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.loadedEpoch = options.epoch();
    this.views = new ClientViews(options.store, options.epoch);
  }

  private collection(name: string): StoreCollection {
    return this.options.store.collection(SYNC_METADATA_DATABASE, name);
  }

  private key(partition: string): string {
    return `${this.options.epoch()}|${partition}`;
  }

  /** The partition's history, created at version 1 (the partition's state when it was first synced) when new. */
  partition(partition: string): Promise<PartitionHistory> {
    if (this.loadedEpoch !== this.options.epoch()) {
      this.partitions.clear();
      this.loadedEpoch = this.options.epoch();
    }
    let found = this.partitions.get(partition);
    if (!found) {
      found = this.load(partition);
      this.partitions.set(partition, found);
      found.catch(() => this.partitions.delete(partition));
    }
    return found;
  }

  private async load(partition: string): Promise<PartitionHistory> {
    const key = this.key(partition);
    const meta = await this.collection('partitions').findOne({ _id: key });
    if (!meta) {
      const salt = randomSalt();
      await this.collection('partitions').insertOne({ _id: key, salt: Long.fromBigInt(salt), base: 1 });
      return new PartitionHistory(partition, salt, 1, 1, []);
    }
    const docs = await this.collection('history').find({ p: key }, { sort: { v: 1 } });
    const entries = docs.map((d): HistoryEntry => ({
      version: Number(d.v), originFileIdent: Number(d.o), clientVersion: Number(d.cv), baseVersion: Number(d.bv ?? 0), timestamp: toBigInt(d.ts),
      changeset: (d.cs as Binary).buffer, originalSize: Number(d.os), integratedAt: Number(d.at ?? 0),
    }));
    const base = Number(meta.base);
    const latest = entries.length > 0 ? entries[entries.length - 1]!.version : base;
    return new PartitionHistory(partition, toBigInt(meta.salt), base, latest, entries);
  }

  /** Appends a changeset as the next server version; resolves once it is stored. */
  async append(history: PartitionHistory, entry: Omit<HistoryEntry, 'version' | 'integratedAt'>): Promise<HistoryEntry> {
    const { stored, write } = this.nextEntry(history, entry);
    await this.collection('history').insertOne(write.insert);
    await this.appended(history, stored);
    return stored;
  }

  /**
   * The changeset as the partition's next server version, with the store write that records it, for a
   * caller that commits it together with the writes it depends on; then `appended` once that is durable.
   */
  nextEntry(history: PartitionHistory, entry: Omit<HistoryEntry, 'version' | 'integratedAt'>): { stored: HistoryEntry; write: CommitWrite & { insert: Document } } {
    const stored: HistoryEntry = { ...entry, version: history.latest + 1, integratedAt: (this.options.now ?? Date.now)() };
    const key = this.key(history.partition);
    return {
      stored,
      write: {
        database: SYNC_METADATA_DATABASE, collection: 'history',
        insert: {
          _id: `${key}|${stored.version}`, p: key, v: stored.version,
          o: stored.originFileIdent, cv: stored.clientVersion, bv: stored.baseVersion, ts: Long.fromBigInt(stored.timestamp),
          cs: new Binary(stored.changeset), os: stored.originalSize, at: stored.integratedAt,
        },
      },
    };
  }

  /** A stored entry (see `nextEntry`) becomes the partition's latest; entries past the limits are dropped. */
  async appended(history: PartitionHistory, stored: HistoryEntry): Promise<void> {
    history.latest = stored.version;
    history.entries.push(stored);
    if (history.entries.length > this.maxEntries) await this.compact(history, history.entries.length >> 1);
    else await this.expire(history);
  }

  /** Drops the entries older than `client_max_offline_days` (keeping the latest). */
  private async expire(history: PartitionHistory): Promise<void> {
    const maxAge = this.options.maxAgeMs?.();
    const first = history.entries[0];
    if (maxAge === undefined || !first) return;
    const cutoff = (this.options.now ?? Date.now)() - maxAge;
    if (first.integratedAt >= cutoff) return;
    let count = 0;
    while (count < history.entries.length - 1 && history.entries[count]!.integratedAt < cutoff) count++;
    if (count > 0) await this.compact(history, count);
  }

  /** Drops the oldest `count` entries: clients that last synced before the new base reset (222). */
  private async compact(history: PartitionHistory, count: number): Promise<void> {
    const drop = history.entries.splice(0, count);
    history.base = drop[drop.length - 1]!.version;
    const key = this.key(history.partition);
    await this.collection('partitions').updateOne({ _id: key }, { $set: { base: history.base } });
    await this.collection('history').deleteMany({ p: key, v: { $lte: history.base } });
  }

  /** A new client file for a partition. */
  async allocateClientFile(partition: string, userId: string): Promise<ClientFileRecord> {
    const counter = await this.collection('meta').findOneAndUpdate(
      { _id: `clientFileIdent|${this.options.epoch()}` }, { $inc: { next: 1 } }, { upsert: true, returnNewDocument: true },
    );
    // Ident 1 is the server's own origin ident.
    const ident = Number(counter!.next) + SERVER_FILE_IDENT;
    const record: ClientFileRecord = { ident, salt: randomSalt(), partition, userId, uploadClientVersion: 0, uploadServerVersion: 0, lockedServerVersion: 0 };
    await this.writeClientFile(record, true);
    return record;
  }

  /**
   * Forgets a client file (the Admin API's `sync/force_reset`): its next IDENT finds it unknown and the
   * client resets. Later saves of a live session's progress do not bring it back. Whether it was known.
   */
  async forgetClientFile(ident: number): Promise<boolean> {
    const result = await this.collection('clientFiles').deleteOne({ _id: `${this.options.epoch()}|${ident}` });
    return result.deletedCount > 0;
  }

  async clientFile(ident: number): Promise<ClientFileRecord | undefined> {
    const doc = await this.collection('clientFiles').findOne({ _id: `${this.options.epoch()}|${ident}` });
    if (!doc) return undefined;
    return {
      ident, salt: toBigInt(doc.salt), partition: String(doc.p), userId: String(doc.u),
      uploadClientVersion: Number(doc.ucv), uploadServerVersion: Number(doc.usv), lockedServerVersion: Number(doc.lsv),
      ...(Array.isArray(doc.cw) && doc.cw.length > 0 ? { compensations: (doc.cw as Document[]).map((c) => ({
        serverVersion: Number(c.v), clientVersion: Number(c.cv), objects: new Uint8Array((c.o as Binary).buffer), reasons: (c.r as unknown[]).map(String),
      })) } : {}),
    };
  }

  /** Saves a known client file's progress (a forgotten one stays forgotten). */
  saveClientFile(record: ClientFileRecord): Promise<void> {
    return this.writeClientFile(record, false);
  }

  private async writeClientFile(record: ClientFileRecord, create: boolean): Promise<void> {
    await this.collection('clientFiles').replaceOne({ _id: `${this.options.epoch()}|${record.ident}` }, {
      salt: Long.fromBigInt(record.salt), p: record.partition, u: record.userId,
      ucv: record.uploadClientVersion, usv: record.uploadServerVersion, lsv: record.lockedServerVersion,
      ...(record.compensations?.length ? { cw: record.compensations.map((c) => ({ v: c.serverVersion, cv: c.clientVersion, o: new Binary(c.objects), r: c.reasons })) } : {}),
    }, { upsert: create });
  }
}

/** A stored integer (Long, number, bigint) as a bigint. */
export function toBigInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return BigInt(value);
  if (value && typeof (value as Long).toBigInt === 'function') return (value as Long).toBigInt();
  return BigInt(String(value));
}
