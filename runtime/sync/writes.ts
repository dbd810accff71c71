// Client writes of a JSON feed session (create, modify, delete): their form checked here (ids, existing
// objects, the collection schema: a refusal keeps the session), then written through the engine's upload
// path (`sessions/engine.ts` `writeDocuments`), which checks them as a Realm client's upload: the write
// permission (206), the partition key and relationships into another partition (212 "bad changeset").
import { EJSON, ObjectId } from 'bson';
import { isPlainObject } from '../../core/rules/bsonValues';
import { membershipOf, partitionId, partitionText, type PartitionSettings, type SyncError } from '../../core/sync';
import { byId, type Document } from '../store/types';
import { SYNC_ERRORS, type SyncedCollection, type SyncService, type SyncSession } from './service';
import type { RealmSyncEngine } from './sessions/engine';

export type ClientChange =
  | { op: 'create'; collection: string; document: Document }
  | { op: 'modify'; collection: string; _id: unknown; set?: Document; unset?: string[] }
  | { op: 'delete'; collection: string; _id: unknown };

export type WriteOutcome =
  | { ok: true; version: number }
  /** The write was refused without ending the session (a schema violation, an unknown object). */
  | { ok: false; rejected: string }
  /** A protocol error: the session ends. */
  | { ok: false; error: SyncError };

/**
 * Checks every change's form first (a refusal keeps the session), then hands the documents to the engine,
 * which checks them as it checks a Realm client's upload and commits them with their history entry.
 */
export async function applyClientWrite(service: SyncService, engine: RealmSyncEngine, session: Pick<SyncSession, 'partition' | 'canWrite' | 'userId'>, changes: unknown): Promise<WriteOutcome> {
  const settings = service.partitionSettings;
  if (!settings) return { ok: false, error: SYNC_ERRORS.disabledSession('sync is not enabled') };
  if (!session.canWrite) return { ok: false, error: SYNC_ERRORS.permissionDenied('UPLOAD', `the write expression is false for this user in partition ${partitionText(session.partition)}`) };
  if (!Array.isArray(changes) || changes.length === 0) return { ok: false, rejected: '"changes" must be a non-empty list of {op, collection, …}' };
  const planned: { collection: SyncedCollection; id: unknown; after: Document | null }[] = [];
  for (const [i, raw] of changes.entries()) {
    const checked = await check(service, settings, session.partition, raw, i);
    if ('error' in checked || 'rejected' in checked) return { ok: false, ...checked } as WriteOutcome;
    const { change, collection, next } = checked;
    if (change.op === 'create') {
      // The id the store would have given it, given here: the history entry names the object.
      const id = next!._id ?? new ObjectId();
      planned.push({ collection, id, after: { ...next!, _id: id } });
    } else planned.push({ collection, id: change._id, after: next ?? null });
  }
  const written = await engine.writeDocuments({ partition: session.partition, userId: session.userId, canWrite: session.canWrite }, planned);
  if (!written.ok) return { ok: false, error: written.error };
  return { ok: true, version: service.nextVersion() };
}

async function check(service: SyncService, settings: PartitionSettings, partition: unknown, raw: unknown, index: number):
  Promise<{ change: ClientChange; collection: SyncedCollection; next?: Document } | { error: SyncError } | { rejected: string }> {
  const where = `changes[${index}]`;
  if (!isPlainObject(raw) || typeof raw.op !== 'string' || typeof raw.collection !== 'string') return { rejected: `${where} must be {op, collection, …}` };
  const collection = service.collectionOfType(raw.collection);
  if (!collection) return { rejected: `${where}: "${raw.collection}" is not a synced object type (synced: ${service.collections.map((c) => c.type).join(', ') || 'none'})` };
  const store = service.store.collection(collection.database, collection.collection);
  const inPartition = (doc: Document) => {
    const m = membershipOf(doc, settings);
    return 'partition' in m && partitionId(m.partition) === partitionId(partition);
  };
  const wrongPartition = (found: unknown) => ({
    error: SYNC_ERRORS.badChangeset(`failed to validate upload changesets: SET instruction had incorrect partition value for key "${settings.key}" { expectedPartition: ${partitionText(partition)}, foundPartition: ${found === undefined ? 'null' : EJSON.stringify(found as never, { relaxed: false })} }`),
  });
  switch (raw.op) {
    case 'create': {
      if (!isPlainObject(raw.document)) return { rejected: `${where}.document must be an object` };
      const document = raw.document as Document;
      if (document._id !== undefined && !isIdValue(document._id)) return { rejected: `${where}.document._id must be a primary key value (string, number, ObjectId, UUID), not ${describeId(document._id)}` };
      if (!inPartition(document)) return wrongPartition(document[settings.key]);
      const violation = collection.validate?.(document);
      if (violation) return { rejected: `${where}: ${collection.type} does not match its schema: ${violation.message}` };
      if (document._id !== undefined && (await store.findOne(byId(document._id)))) return { rejected: `${where}: ${collection.type} ${EJSON.stringify(document._id as never)} already exists` };
      return { change: { op: 'create', collection: raw.collection, document }, collection, next: document };
    }
    case 'modify': case 'delete': {
      if (raw._id === undefined) return { rejected: `${where}._id is required` };
      if (!isIdValue(raw._id)) return { rejected: `${where}._id must be a primary key value (string, number, ObjectId, UUID), not ${describeId(raw._id)}` };
      const current = await store.findOne(byId(raw._id));
      if (!current || !inPartition(current)) return { rejected: `${where}: no ${collection.type} ${EJSON.stringify(raw._id as never)} in this partition` };
      if (raw.op === 'delete') return { change: { op: 'delete', collection: raw.collection, _id: raw._id }, collection };
      const set = isPlainObject(raw.set) ? raw.set as Document : {};
      const unset = Array.isArray(raw.unset) ? raw.unset.filter((f): f is string => typeof f === 'string') : [];
      if (Object.hasOwn(set, '_id') || unset.includes('_id')) return { rejected: `${where}: _id cannot change` };
      const next: Document = { ...current, ...set };
      for (const field of unset) delete next[field];
      if (!inPartition(next)) return wrongPartition(next[settings.key]);
      const violation = collection.validate?.(next);
      if (violation) return { rejected: `${where}: ${collection.type} does not match its schema: ${violation.message}` };
      return { change: { op: 'modify', collection: raw.collection, _id: raw._id, set, unset }, collection, next };
    }
    default:
      return { rejected: `${where}.op must be create, modify or delete, not ${JSON.stringify(raw.op)}` };
  }
}

/** A primary key as Realm objects have them: a scalar, never a document or list (which a filter would read as operators). */
function isIdValue(id: unknown): boolean {
  if (id === null || typeof id === 'string' || typeof id === 'number' || typeof id === 'bigint') return true;
  if (typeof id !== 'object' || Array.isArray(id) || id instanceof Date) return false;
  return typeof (id as { _bsontype?: unknown })._bsontype === 'string';
}

function describeId(id: unknown): string {
  return Array.isArray(id) ? 'a list' : id instanceof Date ? 'a date' : typeof id === 'object' ? 'a document' : typeof id;
}
