// A sync client that stops reading its socket cannot make the runtime hold everything that fans out to it
// (runtime/sync/sessions/send-backpressure.ts): while its socket holds more than the mark no more DOWNLOADs
// are made for it, and once it has taken in nothing for 15 s it is disconnected; a client that reads gets
// every change meanwhile. The attacker's view: bind, identify, never read, and let a writer fan out MBs.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ObjectId } from 'bson';
import WebSocket from 'ws';
import { RawSyncClient } from '../../bench/fixtures/realm-sync-peers';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { encodeClientMessage } from '../../runtime/sync/wire/messages';
import { copyApp, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

/** Text that does not compress (bodies over 1 KiB are deflated). */
const noise = (length: number) => randomBytes(length).toString('base64').slice(0, length);

describe('a sync client that stops reading', { timeout: 240_000 }, () => {
  let served: ServedDist;
  let appDir: string;
  let url: string;
  let userId: string;
  const open: RawSyncClient[] = [];

  before(async () => {
    appDir = copyApp();
    // The example's trigger would run a function per synced write, which this test is not about.
    fs.rmSync(path.join(appDir, 'triggers'), { recursive: true, force: true });
    served = await serveDist({ appDir });
    const login = await registerAndLogIn(served.app, 'stalled@example.com', 'stalled-Passw0rd');
    userId = login.user_id;
    url = `${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${login.access_token}`;
  });
  after(async () => {
    await Promise.all(open.map((c) => c.close()));
    await served?.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('is disconnected once it took in nothing for 15 s, while a reading client gets every change', async () => {
    const stalled = new WebSocket(url, ['com.mongodb.realm-sync#14'], { perMessageDeflate: false });
    stalled.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => { stalled.once('open', () => resolve()); stalled.once('error', reject); });
    const ident = new Promise<string[]>((resolve) => stalled.on('message', (data: Buffer) => {
      const head = data.subarray(0, data.indexOf(10) < 0 ? data.length : data.indexOf(10)).toString('latin1').split(' ');
      if (head[0] === 'ident') resolve(head);
    }));
    stalled.send(encodeClientMessage({ type: 'bind', session: 1, serverPath: JSON.stringify(userId), signedUserToken: '', needClientFileIdent: true, isSubserver: false }, 14));
    const head = await ident;
    stalled.pause();
    stalled.send(encodeClientMessage({ type: 'ident', session: 1, clientFileIdent: BigInt(head[2]!), clientFileIdentSalt: BigInt(head[3]!), downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n }, 14));

    const reader = await RawSyncClient.connect(url);
    open.push(reader);
    await reader.bindAndCatchUp(userId);
    let readerVersion = 0n;
    reader.onArrival = (a) => { if (a.head[0] === 'download' && BigInt(a.head[2]!) > readerVersion) readerVersion = BigInt(a.head[2]!); };
    const writer = await RawSyncClient.connect(url);
    open.push(writer);
    await writer.bindAndCatchUp(userId);
    // One task renamed 400 times with 16 KB names: 6.4 MB fanned out, more than the kernel takes for the stalled socket.
    const id = new ObjectId();
    const create: Instruction[] = [
      { type: 'CreateObject', table: 'Task', object: { type: 'objectId', value: id } },
      ...(['name', 'status'] as const).map((field): Instruction => ({ type: 'Update', table: 'Task', object: { type: 'objectId', value: id }, field, path: [], value: { type: 'string', value: field }, isDefault: false, priorSize: 0 })),
      { type: 'Update', table: 'Task', object: { type: 'objectId', value: id }, field: 'isComplete', path: [], value: { type: 'bool', value: false }, isDefault: false, priorSize: 0 },
    ];
    await writer.upload(create).acknowledged;
    let writerVersion = 0n;
    for (let i = 0; i < 400; i += 20) {
      const acks = await Promise.all(Array.from({ length: 20 }, () => writer.upload([{ type: 'Update', table: 'Task', object: { type: 'objectId', value: id }, field: 'name', path: [], value: { type: 'string', value: noise(16_000) }, isDefault: false, priorSize: 0 }]).acknowledged));
      for (const ack of acks) if (BigInt(ack.head[2]!) > writerVersion) writerVersion = BigInt(ack.head[2]!);
    }
    const line = await served.waitForLog(/took in none of \d+ KiB for 15 s: disconnected/, { timeoutMs: 120_000 });
    assert.match(line, new RegExp(`user ${userId}`));
    // The reader had every change, and the runtime still answers it.
    await reader.mark();
    assert.ok(readerVersion >= writerVersion, `the reading client has server version ${readerVersion}, the writer's last ${writerVersion}`);
    assert.equal(served.countLog(/took in none/), 1, 'only the stalled client was disconnected');
    stalled.terminate();
  });
});
