// What the sync fault parts (sync-faults.ts) share: the two apps (partition sync on examples/todo-tracker,
// flexible sync on a Note app where each user owns her notes), the runtime on a fixed loopback port (so a
// restart after kill -9 comes back where the clients reconnect), and the three readings of what the server
// holds: the documents through the client API (the mongodb-atlas service) and through GraphQL, and the sync
// history read from the data folder once the runtime has stopped.
import fs from 'node:fs';
import path from 'node:path';
import { Binary, ObjectId } from 'bson';
import { openStore } from '../../runtime/store';
import { SYNC_METADATA_DATABASE } from '../../runtime/store/types';
import { parseChangeset } from '../../runtime/sync/wire/changeset';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { startInspectableRuntime, type InspectableRuntime } from '../../bench/fixtures/realm-sync-peers';

const REPO_ROOT = path.resolve(__dirname, '../..');

export type Mode = 'partition' | 'flexible';

export interface ModeSpec {
  mode: Mode;
  database: string;
  collection: string;
  /** GraphQL's query field of the collection. */
  graphqlField: string;
  /** The probe's schema. */
  schema: Record<string, unknown>[];
  /** A new object of `userId` (probe form, relaxed EJSON). */
  object(id: string, userId: string, label: string): Record<string, unknown>;
  /** The same as changeset instructions (raw clients). */
  instructions(id: string, userId: string, label: string): Instruction[];
}

const str = (value: string) => ({ type: 'string' as const, value });
const set = (table: string, id: string, field: string, value: { type: 'string'; value: string } | { type: 'bool'; value: boolean }): Instruction => ({
  type: 'Update', table, object: { type: 'objectId', value: oidValue(id) }, field, path: [], value, isDefault: false, priorSize: 0,
});
const oidValue = (hex: string) => ObjectId.createFromHexString(hex);

export const PARTITION: ModeSpec = {
  mode: 'partition', database: 'tracker', collection: 'Task', graphqlField: 'tasks',
  schema: [{ name: 'Task', primaryKey: '_id', properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool' } }],
  object: (id, userId, label) => ({ _id: { $oid: id }, _partition: userId, name: label, status: 'open', isComplete: false }),
  instructions: (id, userId, label) => [
    { type: 'CreateObject', table: 'Task', object: { type: 'objectId', value: oidValue(id) } },
    set('Task', id, '_partition', str(userId)), set('Task', id, 'name', str(label)), set('Task', id, 'status', str('open')), set('Task', id, 'isComplete', { type: 'bool', value: false }),
  ],
};

export const FLEXIBLE: ModeSpec = {
  mode: 'flexible', database: 'faultdb', collection: 'Note', graphqlField: 'notes',
  schema: [{ name: 'Note', primaryKey: '_id', properties: { _id: 'objectId', owner_id: 'string', text: 'string' } }],
  object: (id, userId, label) => ({ _id: { $oid: id }, owner_id: userId, text: label }),
  instructions: (id, userId, label) => [
    { type: 'CreateObject', table: 'Note', object: { type: 'objectId', value: oidValue(id) } },
    set('Note', id, 'owner_id', str(userId)), set('Note', id, 'text', str(label)),
  ],
};

/** A copy of examples/todo-tracker without its trigger (partition), or that app made flexible with the Note collection alone. */
export function writeApp(dir: string, spec: ModeSpec): void {
  fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), dir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  // Its database trigger would run a function per synced write: load these parts are not about.
  fs.rmSync(path.join(dir, 'triggers'), { recursive: true, force: true });
  if (spec.mode === 'partition') return;
  // The flexible app syncs its Note collection alone.
  fs.rmSync(path.join(dir, 'data_sources/mongodb-atlas/tracker'), { recursive: true, force: true });
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), JSON.stringify(value, null, 2));
  };
  write('sync/config.json', { type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'faultdb', is_recovery_mode_disabled: false, queryable_fields_names: ['owner_id'] });
  write('data_sources/mongodb-atlas/faultdb/Note/schema.json', {
    title: 'Note', bsonType: 'object', required: ['_id', 'owner_id', 'text'],
    properties: { _id: { bsonType: 'objectId' }, owner_id: { bsonType: 'string' }, text: { bsonType: 'string' } },
  });
  write('data_sources/mongodb-atlas/faultdb/Note/rules.json', {
    collection: 'Note', database: 'faultdb',
    roles: [{ name: 'owner', apply_when: {}, document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } }, read: true, write: true, insert: true, delete: true, search: true }],
  });
}

/** The runtime of one app and data folder, restartable on the port of its first start. */
export class RestartableRuntime {
  private port = 0;
  current: InspectableRuntime | undefined;

  constructor(private readonly appDir: string, readonly dataDir: string) {}

  async start(): Promise<InspectableRuntime> {
    this.current = await startInspectableRuntime(this.appDir, this.dataDir, this.port ? ['--port', String(this.port)] : []);
    this.port = Number(new URL(this.current.appUrl).port);
    return this.current;
  }

  get portNumber(): number {
    return this.port;
  }

  /** kill -9, then waits for the exit. */
  async kill(): Promise<void> {
    const runtime = this.current!;
    process.kill(runtime.pid, 'SIGKILL');
    await runtime.stop();
    this.current = undefined;
  }

  async stop(): Promise<void> {
    await this.current?.stop();
    this.current = undefined;
  }
}

/** The `_id`s (hex) of `userId`'s objects as the mongodb-atlas service finds them, with repeats kept. */
export async function documentIds(appUrl: string, token: string, spec: ModeSpec, userId: string): Promise<string[]> {
  const ownerField = spec.mode === 'partition' ? '_partition' : 'owner_id';
  const res = await fetch(`${appUrl}/functions/call`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ service: 'mongodb-atlas', name: 'find', arguments: [{ database: spec.database, collection: spec.collection, query: { [ownerField]: userId }, project: { _id: 1 } }] }),
  });
  if (res.status !== 200) throw new Error(`find answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  return ((await res.json()) as { _id: { $oid: string } }[]).map((d) => d._id.$oid);
}

/** The same through GraphQL. */
export async function graphqlIds(appUrl: string, token: string, spec: ModeSpec, userId: string): Promise<string[]> {
  const ownerField = spec.mode === 'partition' ? '_partition' : 'owner_id';
  const res = await fetch(`${appUrl}/graphql`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: `query { ${spec.graphqlField}(query: { ${ownerField}: ${JSON.stringify(userId)} }, limit: 100000) { _id } }` }),
  });
  const body = (await res.json()) as { data?: Record<string, { _id: string }[]>; errors?: unknown };
  if (!body.data) throw new Error(`GraphQL answered ${res.status}: ${JSON.stringify(body.errors).slice(0, 300)}`);
  return body.data[spec.graphqlField]!.map((d) => d._id);
}

export interface HistoryReading {
  /** Entries whose (history, origin client file, client version) another entry has too: a changeset integrated twice. */
  doubledChangesets: number;
  /** Object id (hex) → how many history entries create it. */
  creates: Map<string, number>;
  /** (origin client file ident, client version) of every entry a client made. */
  changesets: Set<string>;
}

/** Reads `__realm_sync.history` from a stopped runtime's data folder. */
export async function readHistory(dataDir: string, table: string): Promise<HistoryReading> {
  const store = await openStore({ dir: path.join(dataDir, 'data') });
  try {
    const entries = await store.collection(SYNC_METADATA_DATABASE, 'history').find({});
    const seen = new Map<string, number>();
    const creates = new Map<string, number>();
    const changesets = new Set<string>();
    for (const entry of entries) {
      if (Number(entry.o) <= 1) continue;
      const key = `${entry.p}|${entry.o}|${entry.cv}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
      changesets.add(`${entry.o}|${entry.cv}`);
      const bytes = (entry.cs as Binary).buffer;
      for (const instruction of bytes.length > 0 ? parseChangeset(bytes) : []) {
        if (instruction.type !== 'CreateObject' || instruction.table !== table || instruction.object.type !== 'objectId') continue;
        const hex = instruction.object.value.toHexString();
        creates.set(hex, (creates.get(hex) ?? 0) + 1);
      }
    }
    return { doubledChangesets: [...seen.values()].filter((n) => n > 1).length, creates, changesets };
  } finally {
    await store.close();
  }
}

/** Counts repeats in a list of ids: how many ids appear more than once. */
export function repeated(ids: string[]): number {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return [...counts.values()].filter((n) => n > 1).length;
}
