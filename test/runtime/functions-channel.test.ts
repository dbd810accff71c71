// The data channel between the runtime's function pool and each function worker (runtime/functions/channel.ts):
// a local socket only the runtime's own workers may use, one token each, framing that survives any split
// of the byte stream and ends the link on a frame it cannot accept. Real sockets; the "workers" here are
// this test, and the hostile ones speak raw bytes.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import {
  connectLink, createFrameReader, createLinkServer, frameOf, MAX_FRAME_BYTES, removeAbandonedSocketFolders, type BatchLink, type LinkServer,
} from '../../runtime/functions/channel';

const servers: LinkServer[] = [];
after(async () => {
  for (const server of servers) await server.close();
});

function server(): LinkServer {
  const errors: Error[] = [];
  const created = createLinkServer((error) => errors.push(error));
  servers.push(created);
  assert.deepEqual(errors, []);
  return created;
}

/** Connects raw, writes `bytes`, and reports whether the server closed the connection (within 3 s) and what it sent. */
function rawAttempt(address: string, bytes: Buffer): Promise<{ connected: boolean; closedByServer: boolean; received: number }> {
  return new Promise((resolve) => {
    const out = { connected: false, closedByServer: false, received: 0 };
    const socket = net.connect(address);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(out);
    }, 3000);
    socket.on('connect', () => {
      out.connected = true;
      socket.write(bytes);
    });
    socket.on('data', (chunk: Buffer) => { out.received += chunk.length; });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      out.closedByServer = out.connected;
      resolve(out);
    });
  });
}

function nextBatch(link: BatchLink<unknown>): Promise<unknown> {
  return new Promise((resolve) => link.listen(resolve, () => undefined));
}

describe('function worker channel', () => {
  test('a worker with its token gets a link both ways; batches arrive whole and in order', async () => {
    const links = server();
    const expected = links.expect<{ n: number }>();
    const worker = await connectLink<{ n: number }>(links.address, expected.token);
    const runtime = await expected.link;
    // As the pool does while the worker has calls: the runtime's end keeps the event loop going.
    runtime.hold(true);
    const fromWorker = nextBatch(runtime as BatchLink<unknown>);
    worker.send([{ n: 1 }, { n: 2 }]);
    assert.deepEqual(await fromWorker, [{ n: 1 }, { n: 2 }]);
    const big = 'b'.repeat(200_000);
    const toWorker = nextBatch(worker as BatchLink<unknown>);
    runtime.send([{ n: 3, big } as unknown as { n: number }]);
    assert.deepEqual(await toWorker, [{ n: 3, big }]);
    const closed = new Promise<string | undefined>((resolve) => runtime.listen(() => undefined, resolve));
    worker.close();
    assert.equal(await closed, undefined, 'the worker going away closes the runtime side');
  });

  test('the socket is the runtime user\'s alone: 0600 in a 0700 folder, removed on close', { skip: process.platform === 'win32' && 'named pipes' }, async () => {
    const links = createLinkServer(() => undefined);
    assert.equal(fs.statSync(links.address).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.dirname(links.address)).mode & 0o777, 0o700);
    await links.close();
    assert.equal(fs.existsSync(path.dirname(links.address)), false);
  });

  test('connections without a token the runtime waits for are closed, and get nothing', async () => {
    const links = server();
    const expected = links.expect();
    const worker = await connectLink(links.address, expected.token);
    await expected.link;
    const forged = frameOf([{ t: 'done', id: 1, payload: 'x' }]);
    const attempts = {
      usedToken: await rawAttempt(links.address, Buffer.concat([frameOf(expected.token), forged])),
      guessedToken: await rawAttempt(links.address, Buffer.concat([frameOf('0'.repeat(48)), forged])),
      notAString: await rawAttempt(links.address, frameOf({ token: expected.token })),
      batchFirst: await rawAttempt(links.address, forged),
      oversizedHeader: await rawAttempt(links.address, Buffer.from([0xff, 0xff, 0xff, 0x7f])),
      garbage: await rawAttempt(links.address, Buffer.from([3, 0, 0, 0, 1, 2, 3])),
    };
    for (const [name, outcome] of Object.entries(attempts)) {
      assert.deepEqual(outcome, { connected: true, closedByServer: true, received: 0 }, name);
    }
    worker.close();
  });

  test('a batch that comes in the same read as the token reaches whoever listens later', async () => {
    const links = server();
    const expected = links.expect();
    const socket = net.connect(links.address);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(Buffer.concat([frameOf(expected.token), frameOf([{ t: 'ready' }])]));
    const runtime = await expected.link;
    runtime.hold(true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(await nextBatch(runtime as BatchLink<unknown>), [{ t: 'ready' }]);
    socket.destroy();
  });

  test('a cancelled token is refused', async () => {
    const links = server();
    const expected = links.expect();
    links.cancel(expected.token);
    assert.deepEqual(await rawAttempt(links.address, frameOf(expected.token)), { connected: true, closedByServer: true, received: 0 });
  });

  test('a frame above the limit or one that does not deserialize ends the link with the reason', async () => {
    for (const bytes of [Buffer.from([0x01, 0x00, 0x00, 0x05]), Buffer.from([4, 0, 0, 0, 0xff, 0x0f, 0x99, 0x99])]) {
      const links = server();
      const expected = links.expect();
      const socket = net.connect(links.address);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.on('error', () => undefined);
      socket.write(frameOf(expected.token));
      const runtime = await expected.link;
      runtime.hold(true);
      const why = new Promise<string | undefined>((resolve) => runtime.listen(() => undefined, resolve));
      socket.write(bytes);
      assert.match(String(await why), bytes.length === 4 ? new RegExp(`above the limit of ${MAX_FRAME_BYTES}`) : /does not deserialize/);
      socket.destroy();
    }
  });

  test('frames split anywhere in the stream are read whole', () => {
    const batches = Array.from({ length: 40 }, (_, i) => [{ t: 'reply', id: i, payload: 'p'.repeat(i * 97) }]);
    const stream = Buffer.concat(batches.map(frameOf));
    for (const cut of [1, 3, 4, 5, 7, 64, 1000]) {
      const read: unknown[] = [];
      const feed = createFrameReader((value) => read.push(value), (why) => assert.fail(why));
      for (let at = 0; at < stream.length; at += cut) feed(stream.subarray(at, at + cut));
      assert.deepEqual(read, batches, `chunks of ${cut} bytes`);
    }
    assert.deepEqual(v8.deserialize(frameOf([1]).subarray(4)), [1]);
  });

  test('a reader of transient chunks (a socket read into one buffer again and again) keeps only copies', () => {
    const batches = Array.from({ length: 40 }, (_, i) => [{ t: 'reply', id: i, payload: 'q'.repeat(i * 89) }]);
    const stream = Buffer.concat(batches.map(frameOf));
    for (const cut of [1, 3, 4, 5, 7, 64, 1000, 5000]) {
      const read: unknown[] = [];
      const feed = createFrameReader((value) => read.push(value), (why) => assert.fail(why), undefined, true);
      const reused = Buffer.alloc(cut);
      for (let at = 0; at < stream.length; at += cut) {
        const length = stream.copy(reused, 0, at, at + cut);
        feed(reused.subarray(0, length));
        reused.fill(0xff);
      }
      assert.deepEqual(read, batches, `chunks of ${cut} bytes`);
    }
  });

  test('socket folders of runtimes that are gone are removed; a live runtime\'s, links and files stay', { skip: process.platform === 'win32' }, async () => {
    const temporary = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-channel-tmp-'));
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
    try {
      const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
      const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-channel-target-'));
      fs.writeFileSync(path.join(elsewhere, 'keep'), 'x');
      const abandoned = path.join(temporary, `asl-functions-${gone}-AbC123`);
      fs.mkdirSync(abandoned);
      fs.writeFileSync(path.join(abandoned, 'workers'), '');
      const running = path.join(temporary, `asl-functions-${live.pid}-XyZ789`);
      fs.mkdirSync(running);
      const link = path.join(temporary, `asl-functions-${gone}-Link01`);
      fs.symlinkSync(elsewhere, link);
      const file = path.join(temporary, `asl-functions-${gone}-File01`);
      fs.writeFileSync(file, '');
      const unrelated = path.join(temporary, `asl-functions-${gone}`);
      fs.mkdirSync(unrelated);
      removeAbandonedSocketFolders(temporary);
      assert.equal(fs.existsSync(abandoned), false, 'the folder of a runtime that is gone');
      assert.equal(fs.existsSync(running), true, 'a running runtime\'s folder');
      assert.equal(fs.lstatSync(link).isSymbolicLink(), true, 'a symbolic link');
      assert.equal(fs.readFileSync(path.join(elsewhere, 'keep'), 'utf8'), 'x', 'what a link points to');
      assert.equal(fs.existsSync(file), true, 'a file');
      assert.equal(fs.existsSync(unrelated), true, 'a name without the random part');
      fs.rmSync(elsewhere, { recursive: true, force: true });
    } finally {
      live.kill();
      fs.rmSync(temporary, { recursive: true, force: true });
    }
  });
});
