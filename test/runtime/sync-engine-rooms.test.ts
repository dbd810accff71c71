// The sync engine's rooms without a socket or a runtime: a RealmSyncConnection over an in-memory WebSocket
// on a RealmSyncEngine, a SyncService and an in-memory store, with the app loaded from its files. A BIND and
// its verdict, an IDENT and the bootstrap, uploads refused by the partition's write permission and by a
// relationship into another partition (the same check the JSON feed's writes get), and a flexible session
// whose role changes with the user's custom data.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ObjectId } from 'bson';
import type { WebSocket } from 'ws';
import { nodeFileSystem } from '../../core/fs';
import { loadApp } from '../../core/load';
import type { EvaluationUser } from '../../core/rules';
import { createDataAccess } from '../../runtime/data/access';
import { withChangeEvents } from '../../runtime/store/changes';
import { openStore } from '../../runtime/store';
import type { DocumentStore } from '../../runtime/store/types';
import { SyncService } from '../../runtime/sync/service';
import { RealmSyncConnection } from '../../runtime/sync/sessions/connection';
import { RealmSyncEngine } from '../../runtime/sync/sessions/engine';
import { parseChangeset } from '../../runtime/sync/wire/changeset';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { parseServerMessage, type ClientMessage, type ServerMessage, encodeClientMessage } from '../../runtime/sync/wire/messages';
import { REPO_ROOT } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const PROTOCOL = 14;
const temporary: string[] = [];
after(() => {
  for (const dir of temporary) fs.rmSync(dir, { recursive: true, force: true });
});

/** The engine's rooms on an app's files: service, engine and an in-memory store whose writes reach the engine's one fan-out. */
async function rooms(appDir: string, customData: Map<string, Record<string, unknown>>, callFunction: (name: string, args: unknown[]) => unknown = () => false) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-engine-rooms-'));
  temporary.push(dataDir);
  const app = await loadApp(nodeFileSystem, appDir);
  let engine!: RealmSyncEngine;
  const store: DocumentStore = withChangeEvents(await openStore({}), (change) => engine.onChange(change), { wants: (database, collection) => engine.wants(database, collection) });
  const service = new SyncService({ dataDir, store, log: quiet });
  service.load({
    app, values: {}, environment: { tag: '', values: {} },
    customUserData: async (userId) => customData.get(userId),
    callFunction: async (name, args) => callFunction(name, args),
  });
  const data = createDataAccess({ app, store });
  engine = new RealmSyncEngine({ service, store, log: quiet, dataFor: (user) => data.forSyncSession(user as never), rulesReadUser: () => data.rulesReadUser });
  return { service, engine, store };
}

/** An in-memory WebSocket: what the connection sends, parsed; what the test sends, encoded as a client would. */
class MemorySocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  closedWith?: number;
  readonly received: ServerMessage[] = [];
  private waiters: (() => void)[] = [];
  constructor(private readonly flexible: boolean) {
    super();
  }
  send(data: Uint8Array): void {
    this.received.push(parseServerMessage(data, { protocolVersion: PROTOCOL, flexible: this.flexible }));
    for (const wake of this.waiters.splice(0)) wake();
  }
  close(code?: number): void {
    this.closedWith = code;
    this.readyState = 3;
  }
  terminate(): void {
    this.readyState = 3;
  }
  fromClient(message: ClientMessage): void {
    this.emit('message', Buffer.from(encodeClientMessage(message, PROTOCOL)), true);
  }
  /** The first message received that `match` accepts (waiting for it). */
  async next<T extends ServerMessage>(match: (m: ServerMessage) => m is T, what: string, timeoutMs = 5000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no ${what}; received ${JSON.stringify(this.received.map((m) => m.type))}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }
}

function connect(engine: RealmSyncEngine, user: EvaluationUser, flexible = false): MemorySocket {
  const socket = new MemorySocket(flexible);
  new RealmSyncConnection(socket as unknown as WebSocket, { user, protocolVersion: PROTOCOL, flexible, remote: 'memory' }, { engine, log: quiet }, () => undefined);
  return socket;
}

const user = (id: string, email = `${id}@example.com`): EvaluationUser => ({ id, type: 'normal', data: { email }, identities: [] });
const isIdent = (m: ServerMessage): m is Extract<ServerMessage, { type: 'ident' }> => m.type === 'ident';
const isDownload = (m: ServerMessage): m is Extract<ServerMessage, { type: 'download' }> => m.type === 'download';
const isJsonError = (m: ServerMessage): m is Extract<ServerMessage, { type: 'json_error' }> => m.type === 'json_error';
const instructionsOf = (download: Extract<ServerMessage, { type: 'download' }>): Instruction[] =>
  download.changesets.flatMap((c) => (c.bytes ? parseChangeset(c.bytes) : c.instructions));

/** BIND with a new client file, then IDENT with it: the session's client file. */
async function bindAndIdent(socket: MemorySocket, session: number, serverPath: string, query?: { version: bigint; body: string }) {
  socket.fromClient({ type: 'bind', session, serverPath, signedUserToken: '', needClientFileIdent: true, isSubserver: false, ...(query ? { bindJson: {} } : {}) });
  const ident = await socket.next((m): m is Extract<ServerMessage, { type: 'ident' }> => isIdent(m) && m.session === session, 'IDENT from the server');
  socket.fromClient({
    type: 'ident', session, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt,
    downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n, ...(query ? { query } : {}),
  });
  return ident;
}

const taskInstructions = (id: ObjectId, partition: string, extra: Instruction[] = []): Instruction[] => {
  const object = { type: 'objectId' as const, value: id };
  const set = (field: string, value: Extract<Instruction, { type: 'Update' }>['value']): Instruction => ({ type: 'Update', table: 'Task', object, field, path: [], value, isDefault: false, priorSize: 0 });
  return [
    { type: 'CreateObject', table: 'Task', object },
    set('_partition', { type: 'string', value: partition }), set('name', { type: 'string', value: 'from the test' }),
    set('status', { type: 'string', value: 'open' }), set('isComplete', { type: 'bool', value: false }),
    ...extra,
  ];
};

function upload(socket: MemorySocket, session: number, instructions: Instruction[]): void {
  socket.fromClient({
    type: 'upload', session, progressClientVersion: 1n, progressServerVersion: 0n, lockedServerVersion: 0n,
    changesets: [{ version: 1n, lastIntegratedRemoteVersion: 0n, originTimestamp: 1000n, originFileIdent: 0n, originalChangesetSize: 0, instructions }],
  });
}

describe('sync engine rooms (partition sync on the example app, no socket)', async () => {
  const customData = new Map<string, Record<string, unknown>>();
  // canReadPartition: read-only partitions.
  const { engine, store } = await rooms(path.join(REPO_ROOT, 'examples/todo-tracker'), customData, (name, args) => name === 'canReadPartition' && args[0] === 'read-only');
  const tasks = store.collection('tracker', 'Task');
  const ada = user('ada-id');

  test('BIND of a partition the user may not read: JSON_ERROR 206, the verdict in the session\'s traffic', async () => {
    const socket = connect(engine, ada);
    socket.fromClient({ type: 'bind', session: 1, serverPath: '"someone-else"', signedUserToken: '', needClientFileIdent: true, isSubserver: false });
    const error = await socket.next(isJsonError, 'JSON_ERROR');
    assert.equal(error.errorCode, 206);
    assert.match(String(error.body.message), /Permission denied \(BIND\): user ada-id may not read partition "someone-else"/);
  });

  test('BIND, IDENT and the bootstrap: the partition\'s documents, nothing of another partition', async () => {
    const mine = new ObjectId();
    await tasks.insertOne({ _id: mine, _partition: ada.id, name: 'mine', status: 'open', isComplete: false });
    await tasks.insertOne({ _id: new ObjectId(), _partition: 'elsewhere', name: 'not mine', status: 'open', isComplete: false });
    await engine.recorded();
    const socket = connect(engine, ada);
    await bindAndIdent(socket, 1, JSON.stringify(ada.id));
    const bootstrap = await socket.next(isDownload, 'the bootstrap DOWNLOAD');
    const created = instructionsOf(bootstrap).filter((i) => i.type === 'CreateObject' && i.table === 'Task');
    assert.deepEqual(created.map((i) => String((i as { object: { value: unknown } }).object.value)), [mine.toHexString()]);
    assert.ok(instructionsOf(bootstrap).some((i) => i.type === 'AddTable' && i.table === 'Task'), 'the schema comes first');
  });

  test('an upload to a partition the user may only read is refused (206) and writes nothing', async () => {
    const socket = connect(engine, ada);
    await bindAndIdent(socket, 1, '"read-only"');
    await socket.next(isDownload, 'the bootstrap');
    const id = new ObjectId();
    upload(socket, 1, taskInstructions(id, 'read-only'));
    const error = await socket.next(isJsonError, 'JSON_ERROR');
    assert.equal(error.errorCode, 206);
    assert.match(String(error.body.message), /Permission denied \(UPLOAD\).*the write expression is false/);
    assert.equal(await tasks.findOne({ _id: id }), null);
  });

  test('an upload linking into another partition is refused (212), as the JSON feed\'s write is', async () => {
    const project = new ObjectId();
    await store.collection('tracker', 'Project').insertOne({ _id: project, _partition: 'project-x', name: 'X' });
    const socket = connect(engine, ada);
    await bindAndIdent(socket, 1, JSON.stringify(ada.id));
    await socket.next(isDownload, 'the bootstrap');
    const id = new ObjectId();
    upload(socket, 1, taskInstructions(id, ada.id, [{ type: 'Update', table: 'Task', object: { type: 'objectId', value: id }, field: 'project', path: [], value: { type: 'link', table: 'Project', target: { type: 'objectId', value: project } }, isDefault: false, priorSize: 0 }]));
    const error = await socket.next(isJsonError, 'JSON_ERROR');
    assert.equal(error.errorCode, 212);
    assert.match(String(error.body.message), /relationship "project" of Task .* points to Project .*relationships cannot cross partitions/);
    assert.equal(await tasks.findOne({ _id: id }), null);
    // The JSON feed's writes take the same path.
    const fed = await engine.writeDocuments({ partition: ada.id, userId: ada.id, canWrite: true }, [{ collection: engine.service.collectionOfType('Task')!, id, after: { _id: id, _partition: ada.id, name: 'fed', status: 'open', isComplete: false, project } }]);
    assert.ok(!fed.ok);
    assert.equal(fed.error.code, 212);
  });
});

describe('sync engine rooms (flexible sync, a role that changes with custom user data, no socket)', async () => {
  const appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-engine-rooms-app-'));
  temporary.push(appDir);
  fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(appDir, file)), { recursive: true });
    fs.writeFileSync(path.join(appDir, file), JSON.stringify(value, null, 2));
  };
  write('sync/config.json', { type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'rulesdb', is_recovery_mode_disabled: false, queryable_fields_names: ['owner_id'] });
  write('data_sources/mongodb-atlas/rulesdb/Item/schema.json', {
    title: 'Item', bsonType: 'object', required: ['_id', 'owner_id', 'name'],
    properties: { _id: { bsonType: 'objectId' }, owner_id: { bsonType: 'string' }, name: { bsonType: 'string' } },
  });
  // Readers (custom data says so) read every item; everyone else only their own.
  write('data_sources/mongodb-atlas/rulesdb/Item/rules.json', {
    collection: 'Item', database: 'rulesdb', roles: [
      { name: 'reader', apply_when: { '%%user.custom_data.reader': true }, document_filters: { read: true, write: false }, read: true, write: false, insert: false, delete: false, search: true },
      { name: 'owner', apply_when: {}, document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } }, read: true, write: true, insert: true, delete: true, search: true },
    ],
  });
  const customData = new Map<string, Record<string, unknown>>();
  const { engine, store } = await rooms(appDir, customData);
  const items = store.collection('rulesdb', 'Item');
  const bob = user('bob-id');
  const theirs = new ObjectId();
  const own = new ObjectId();

  test('the bootstrap holds what the role reads; a role change brings and takes objects without a new session', async () => {
    await items.insertOne({ _id: own, owner_id: bob.id, name: 'own' });
    await items.insertOne({ _id: theirs, owner_id: 'someone', name: 'theirs' });
    const socket = connect(engine, bob, true);
    await bindAndIdent(socket, 1, '', { version: 1n, body: JSON.stringify({ Item: '(TRUEPREDICATE)' }) });
    const created = async (from: number) => {
      const downloads = socket.received.slice(from).filter(isDownload);
      return downloads.flatMap(instructionsOf).filter((i) => i.type === 'CreateObject' || i.type === 'EraseObject').map((i) => `${i.type} ${String((i as { object: { value: unknown } }).object.value)}`);
    };
    await socket.next((m): m is Extract<ServerMessage, { type: 'download' }> => isDownload(m) && m.flexible?.batchState === 'lastInBatch', 'the bootstrap');
    assert.deepEqual(await created(0), [`CreateObject ${own.toHexString()}`], 'as owner, bob reads his own item only');

    // Custom data makes bob a reader: the engine's fan-out tells his session, whose rules are evaluated again.
    const before = socket.received.length;
    customData.set(bob.id, { reader: true });
    await store.collection('tracker', 'User').insertOne({ _id: new ObjectId(), userId: bob.id, reader: true });
    await socket.next((m): m is Extract<ServerMessage, { type: 'download' }> => isDownload(m) && socket.received.indexOf(m) >= before && instructionsOf(m).length > 0, 'the regrant DOWNLOAD');
    assert.deepEqual(await created(before), [`CreateObject ${theirs.toHexString()}`]);
  });
});
