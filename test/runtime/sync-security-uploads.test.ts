// Hostile Realm sync clients against the runtime over real WebSocket on 127.0.0.1 (the example app): what
// a client uploads cannot change the schema other clients sync, cannot move a write onto another user's
// document through its primary key, is no longer taken once its login ends, and cannot stall the runtime.
// Each test asserts the safe outcome by its side effect (the documents and the schema as others see them).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { startRuntime, type RunningRuntime } from '../../runtime';
import type { Instruction, Payload } from '../../runtime/sync/wire/instructions';
import { encodeClientMessage, parseServerMessage, type ClientMessage, type ServerMessage } from '../../runtime/sync/wire/messages';
import { REPO_ROOT } from '../helpers/disk';
import { FeedClient, type FeedMessage } from '../helpers/feed';
import { connectRawSync, messageText, type RawSyncClient } from '../helpers/realm-raw-client';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const PROTOCOL = 'com.mongodb.realm-sync#14';
/** Everyone may read this partition; nobody may write it. */
const PUBLIC = 'public';

const oid = (hex: string) => ({ type: 'objectId' as const, value: new ObjectId(hex) });
const set = (id: string, field: string, value: Payload): Instruction => ({ type: 'Update', table: 'Task', object: oid(id), field, path: [], value, isDefault: false, priorSize: 0 });
const createTask = (id: string, name: string): Instruction[] => [
  { type: 'CreateObject', table: 'Task', object: oid(id) },
  set(id, 'name', { type: 'string', value: name }), set(id, 'status', { type: 'string', value: 'open' }), set(id, 'isComplete', { type: 'bool', value: false }),
];
const uploadMessage = (session: number, clientVersion: number, base: bigint, instructions: Instruction[], compressed?: boolean): ClientMessage => ({
  type: 'upload', session, progressClientVersion: BigInt(clientVersion), progressServerVersion: base, lockedServerVersion: base, ...(compressed ? { compressed } : {}),
  changesets: [{ version: BigInt(clientVersion), lastIntegratedRemoteVersion: base, originTimestamp: 1000n, originFileIdent: 0n, instructions }],
});
/** The integration of client version `clientVersion` (a DOWNLOAD acknowledging it) or the session's error. */
const uploadResult = (client: RawSyncClient, session: number, clientVersion: number) => client.next((m) =>
  ((m.type === 'json_error' || m.type === 'error') && m.session === session) || (m.type === 'download' && m.session === session && m.uploadClientVersion >= BigInt(clientVersion)));

describe('hostile Realm sync uploads', { timeout: 120_000 }, () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let app: string;
  let syncUrl: string;
  let feedUrl: string;
  let users = 0;

  const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const login = async (email: string) => {
    const body = await (await post(`${app}/auth/providers/local-userpass/login`, { username: email, password: 'correct horse' })).json() as Record<string, string>;
    return { email, id: body.user_id!, token: body.access_token!, refresh: body.refresh_token! };
  };
  const newUser = async () => {
    const email = `user${++users}@example.com`;
    await post(`${app}/auth/providers/local-userpass/register`, { email, password: 'correct horse' });
    return login(email);
  };
  const connect = (token: string) => connectRawSync(`${syncUrl}?baas_at=${token}`, [PROTOCOL], false);
  /** BIND (new client file) and IDENT on `partition`; resolves with the server version of the first DOWNLOAD. */
  const identified = async (client: RawSyncClient, session: number, partition: string) => {
    client.send({ type: 'bind', session, serverPath: JSON.stringify(partition), signedUserToken: '', needClientFileIdent: true, isSubserver: false });
    const ident = await client.next((m) => (m.type === 'ident' || m.type === 'json_error') && m.session === session);
    if (ident.type !== 'ident') throw new Error(messageText(ident));
    client.send({ type: 'ident', session, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n });
    const download = await client.next((m) => m.type === 'download' && m.session === session);
    if (download.type !== 'download') throw new Error('unreachable');
    return { download, ident };
  };
  /** The partition's Tasks as the JSON feed shows them. */
  const tasks = async (token: string, partition: string) => {
    const feed = await FeedClient.connect(feedUrl, token);
    const snapshot = await feed.open(1, JSON.stringify(partition));
    feed.close();
    assert.equal(snapshot.type, 'snapshot', JSON.stringify(snapshot));
    return ((snapshot.collections as Record<string, FeedMessage[]>).Task ?? []).map((t) => ({ id: (t._id as ObjectId).toHexString(), name: t.name }));
  };

  before(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-sync-security-'));
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    const configFile = path.join(appDir, 'sync/config.json');
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8'));
    config.partition.permissions.read.$or.push({ '%%partition': PUBLIC });
    fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
    runtime = await startRuntime({ appDir, port: 0, log: quiet, functionTimeoutMs: 5000 });
    app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    syncUrl = `${app.replace('http://', 'ws://')}/realm-sync`;
    feedUrl = `${app.replace('http://', 'ws://')}/sync/feed`;
  });
  after(async () => {
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('a schema that differs from the server\'s is refused (225) and changes nothing; the same schema is a no-op, even read-only', async () => {
    const attacker = await newUser();
    const client = await connect(attacker.token);
    const { download } = await identified(client, 1, PUBLIC);
    const serverSchema = download.changesets.flatMap((c) => c.instructions).filter((i) => i.type === 'AddTable' || i.type === 'AddColumn');
    assert.ok(serverSchema.some((i) => i.type === 'AddTable' && i.table === 'Task'), 'the bootstrap declares Task');
    // A new client's first upload: its whole schema, as the server has it; a read-only session may send it.
    client.send(uploadMessage(1, 1, download.downloadServerVersion, serverSchema));
    const same = await uploadResult(client, 1, 1);
    assert.equal(same.type, 'download', messageText(same));
    // Task redeclared as embedded, with another primary key, or with a new column: each refused.
    const poisons: Instruction[][] = [
      [{ type: 'AddTable', table: 'Task', spec: { kind: 'embedded' } }],
      [{ type: 'AddTable', table: 'Task', spec: { kind: 'topLevel', pkField: '_id', pkType: 'string', pkNullable: false, asymmetric: false } }],
      [{ type: 'AddColumn', table: 'Task', field: 'owner', valueType: 'string', keyType: 'null', nullable: true, collectionType: 'single' }],
    ];
    for (const [i, poison] of poisons.entries()) {
      const session = 10 + i;
      const { download: d } = await identified(client, session, PUBLIC);
      client.send(uploadMessage(session, 1, d.downloadServerVersion, poison));
      const refused = await uploadResult(client, session, 1);
      assert.equal(refused.type === 'json_error' && refused.errorCode, 225, messageText(refused));
    }
    client.close();
    // Another user still syncs Tasks, and a new client still gets Task as the top-level table it is.
    const victim = await newUser();
    const own = await connect(victim.token);
    const { download: fresh } = await identified(own, 1, victim.id);
    const task = fresh.changesets.flatMap((c) => c.instructions).filter((i) => i.table === 'Task' && (i.type === 'AddTable' || i.type === 'AddColumn'));
    assert.deepEqual(messageText(task), messageText(serverSchema.filter((i) => i.table === 'Task')));
    own.send(uploadMessage(1, 1, fresh.downloadServerVersion, createTask('65a000000000000000000001', 'after the attack')));
    const accepted = await uploadResult(own, 1, 1);
    assert.equal(accepted.type, 'download', messageText(accepted));
    own.close();
    assert.deepEqual(await tasks(victim.token, victim.id), [{ id: '65a000000000000000000001', name: 'after the attack' }]);
  });

  test('an upload that sets an object\'s primary key is a bad changeset (212); the other user\'s document is untouched', async () => {
    const victim = await newUser();
    const attacker = await newUser();
    const VICTIM_TASK = '65b0000000000000000000aa';
    const ATTACKER_TASK = '65b0000000000000000000bb';
    const v = await connect(victim.token);
    const { download: vd } = await identified(v, 1, victim.id);
    v.send(uploadMessage(1, 1, vd.downloadServerVersion, createTask(VICTIM_TASK, 'the victim\'s task')));
    assert.equal((await uploadResult(v, 1, 1)).type, 'download');
    v.close();

    const a = await connect(attacker.token);
    const { download: ad } = await identified(a, 1, attacker.id);
    a.send(uploadMessage(1, 1, ad.downloadServerVersion, createTask(ATTACKER_TASK, 'the attacker\'s task')));
    const created = await uploadResult(a, 1, 1);
    assert.equal(created.type, 'download', messageText(created));
    if (created.type !== 'download') return;
    a.send(uploadMessage(1, 2, created.downloadServerVersion, [set(ATTACKER_TASK, '_id', oid(VICTIM_TASK)), set(ATTACKER_TASK, 'name', { type: 'string', value: 'overwritten' })]));
    const refused = await uploadResult(a, 1, 2);
    assert.equal(refused.type === 'json_error' && refused.errorCode, 212, messageText(refused));
    a.close();

    assert.deepEqual(await tasks(victim.token, victim.id), [{ id: VICTIM_TASK, name: 'the victim\'s task' }]);
    assert.deepEqual(await tasks(attacker.token, attacker.id), [{ id: ATTACKER_TASK, name: 'the attacker\'s task' }]);
  });

  test('after logout the connection takes nothing more, even from a client that never answers the close frame', async () => {
    const user = await newUser();
    const client = await rawSocketClient(new URL(runtime.url), `/api/client/v2.0/app/${runtime.appId}/realm-sync?baas_at=${user.token}`);
    client.send({ type: 'bind', session: 1, serverPath: JSON.stringify(user.id), signedUserToken: '', needClientFileIdent: true, isSubserver: false });
    const ident = await client.next((m) => m.type === 'ident');
    if (ident.type !== 'ident') throw new Error('unreachable');
    client.send({ type: 'ident', session: 1, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n });
    const download = await client.next((m) => m.type === 'download');
    if (download.type !== 'download') throw new Error('unreachable');
    client.send(uploadMessage(1, 1, download.downloadServerVersion, createTask('65d000000000000000000001', 'before logout')));
    await client.next((m) => m.type === 'download' && m.uploadClientVersion === 1n);

    const logout = await fetch(`${runtime.url}/api/client/v2.0/auth/session`, { method: 'DELETE', headers: { authorization: `Bearer ${user.refresh}` } });
    assert.equal(logout.status, 204);
    const close = await client.next((m) => m.type === '__close_frame');
    assert.equal(close.type === '__close_frame' && close.code, 4002);
    // Not answering the close frame: the same client file binds again and uploads.
    client.send({ type: 'bind', session: 2, serverPath: JSON.stringify(user.id), signedUserToken: '', needClientFileIdent: false, isSubserver: false });
    client.send({ type: 'ident', session: 2, clientFileIdent: ident.clientFileIdent, clientFileIdentSalt: ident.clientFileIdentSalt, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n });
    client.send(uploadMessage(2, 2, download.downloadServerVersion, createTask('65d000000000000000000002', 'after logout')));
    // The server cuts the socket soon after its close frame (it did not before: ws waits 30 s for the answer).
    await client.ended;
    const again = await login(user.email);
    assert.deepEqual(await tasks(again.token, user.id), [{ id: '65d000000000000000000001', name: 'before logout' }]);
  });

  test('an instruction bomb gets an error for its client while another request is answered promptly', async () => {
    const attacker = await newUser();
    const client = await connect(attacker.token);
    const { download } = await identified(client, 1, attacker.id);
    await identified(client, 2, attacker.id);
    const id = '65e000000000000000000001';
    const bomb = (count: number) => [{ type: 'CreateObject', table: 'Task', object: oid(id) } as Instruction, ...Array.from({ length: count }, () => set(id, 'name', { type: 'string', value: 'x' }))];
    // Within the body limit but over the instructions one: that session's bad changeset.
    const overInstructions = encodeClientMessage(uploadMessage(1, 1, download.downloadServerVersion, bomb(300_000), true), 14);
    // A million instructions (about 110 KB compressed) inflate past the body limit: the connection's error.
    const overBody = encodeClientMessage(uploadMessage(2, 1, download.downloadServerVersion, bomb(1_000_000), true), 14);
    assert.ok(overBody.length < 200_000, `${overBody.length} bytes`);
    client.ws.send(overInstructions);
    const sessionError = await client.next((m) => m.type === 'json_error' && m.session === 1);
    assert.equal(sessionError.type === 'json_error' && sessionError.errorCode, 212, messageText(sessionError));
    assert.match(messageText(sessionError), /more than 200000 instructions/);
    // Parsed whole, as before the fix, these held the runtime: the request below waited 2.4 s. Refused as
    // they inflate past the body limit they cost milliseconds (23 ms for all eight), so the bound leaves
    // room for a loaded machine (a stall test in another file once made a 2 s bound fail).
    const started = Date.now();
    for (let i = 0; i < 8; i++) client.ws.send(overBody);
    const location = await fetch(`${app}/location`);
    const answeredIn = Date.now() - started;
    assert.equal(location.status, 200);
    assert.ok(answeredIn < 750, `another request waited ${answeredIn} ms`);
    const connectionError = await client.next((m) => m.type === 'error');
    assert.match(messageText(connectionError), /Limits exceeded/);
    await client.closed;
    assert.deepEqual(await tasks(attacker.token, attacker.id), []);
  });
});

type RawFrame = ServerMessage | { type: '__close_frame'; code: number };

/** A WebSocket client over a plain TCP socket that never answers the server's close frame (ws would). */
async function rawSocketClient(base: URL, pathAndQuery: string): Promise<{ send(m: ClientMessage): void; next(match: (m: RawFrame) => boolean): Promise<RawFrame>; ended: Promise<void> }> {
  const socket = net.connect(Number(base.port), base.hostname);
  const frames: RawFrame[] = [];
  const waiters = new Set<() => void>();
  let buffer = Buffer.alloc(0);
  let upgraded = false;
  const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('connect', () => socket.write(`GET ${pathAndQuery} HTTP/1.1\r\nHost: ${base.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ${PROTOCOL}\r\n\r\n`));
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!upgraded) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffer.subarray(0, end).toString();
        buffer = buffer.subarray(end + 4);
        if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(head));
        upgraded = true;
        resolve();
      }
      for (;;) {
        if (buffer.length < 2) break;
        const opcode = buffer[0]! & 0x0f;
        let length = buffer[1]! & 0x7f;
        let at = 2;
        if (length === 126) { if (buffer.length < 4) break; length = buffer.readUInt16BE(2); at = 4; }
        else if (length === 127) { if (buffer.length < 10) break; length = Number(buffer.readBigUInt64BE(2)); at = 10; }
        if (buffer.length < at + length) break;
        const payload = buffer.subarray(at, at + length);
        buffer = buffer.subarray(at + length);
        frames.push(opcode === 8 ? { type: '__close_frame', code: payload.length >= 2 ? payload.readUInt16BE(0) : 0 } : parseServerMessage(payload, { protocolVersion: 14, flexible: false }));
      }
      for (const waiter of [...waiters]) waiter();
    });
  });
  return {
    ended,
    send(message) {
      const payload = Buffer.from(encodeClientMessage(message, 14));
      const mask = randomBytes(4);
      const head = payload.length < 126 ? Buffer.from([0x82, 0x80 | payload.length])
        : payload.length < 65536 ? Buffer.from([0x82, 0x80 | 126, payload.length >> 8, payload.length & 255])
          : Buffer.concat([Buffer.from([0x82, 0x80 | 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(payload.length)); return b; })()]);
      for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i & 3]!;
      if (!socket.destroyed) socket.write(Buffer.concat([head, mask, payload]));
    },
    next(match) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = frames.find(match);
          if (!found) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`no such frame; received ${messageText(frames)}`)); }, 10_000);
        waiters.add(check);
        check();
      });
    },
  };
}
