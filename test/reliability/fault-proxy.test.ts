// The reliability suite's fault proxy (test/helpers/fault-proxy.ts) does each fault it claims, measured
// against a TCP echo server on 127.0.0.1. Times are checked as lower bounds only (a loaded box is slower,
// never faster).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { FaultProxy, type ConnectionFaults } from '../helpers/fault-proxy';

/** Sends `bytes` through the proxy and collects the echo until `expect` bytes came, the connection closed, or `waitMs`. */
function exchange(port: number, bytes: Buffer, expect: number, waitMs = 5000): Promise<{ received: Buffer; closed: boolean; ms: number }> {
  return new Promise((resolve) => {
    const begin = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closed = false;
    const finish = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ received: Buffer.concat(chunks), closed, ms: Date.now() - begin });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (d: Buffer) => { chunks.push(d); if (Buffer.concat(chunks).length >= expect) finish(); });
    socket.on('error', () => undefined);
    socket.on('close', () => { closed = true; finish(); });
  });
}

describe('fault proxy', () => {
  let echo: net.Server;
  let proxy: FaultProxy;
  const open = new Set<net.Socket>();

  before(async () => {
    echo = net.createServer((socket) => { open.add(socket); socket.on('error', () => undefined); socket.on('close', () => open.delete(socket)); socket.pipe(socket); });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    proxy = await FaultProxy.start((echo.address() as net.AddressInfo).port);
  });
  after(async () => {
    await proxy.close();
    for (const socket of open) socket.destroy();
    await new Promise<void>((resolve) => echo.close(() => resolve()));
  });

  const withFaults = (faults: ConnectionFaults) => { proxy.choose = () => faults; };
  const payload = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => i % 251));

  test('without faults, bytes pass both ways unchanged', async () => {
    withFaults({});
    const sent = payload(100_000);
    const { received } = await exchange(proxy.port, sent, sent.length);
    assert.ok(received.equals(sent));
  });

  test('latency delays each way, and the bandwidth cap slows a transfer', async () => {
    withFaults({ latencyMs: 150 });
    const slow = await exchange(proxy.port, payload(10), 10);
    assert.equal(slow.received.length, 10);
    assert.ok(slow.ms >= 290, `a round trip through 150 ms each way took ${slow.ms} ms`);
    withFaults({ bytesPerSecond: 50_000 });
    const capped = await exchange(proxy.port, payload(20_000), 20_000);
    assert.ok(capped.received.equals(payload(20_000)));
    // 20 KB up and 20 KB back at 50 KB/s each way: at least 0.4 s each way, overlapping.
    assert.ok(capped.ms >= 390, `20 KB at 50 KB/s took ${capped.ms} ms`);
  });

  test('a cut after N bytes passes exactly N bytes in all, then closes the connection', async () => {
    withFaults({ cutAfterBytes: 1500 });
    const { received, closed } = await exchange(proxy.port, payload(1000), 2000);
    // 1000 bytes up, so 500 of the echo come back before the cut.
    assert.equal(received.length, 500);
    assert.ok(received.equals(payload(1000).subarray(0, 500)));
    assert.equal(closed, true);
    withFaults({ cutAfterBytes: 10, reset: true });
    const reset = await exchange(proxy.port, payload(100), 100);
    assert.equal(reset.received.length, 0);
    assert.equal(reset.closed, true);
  });

  test('a stalled connection stays open and passes nothing, until its hold ends', async () => {
    withFaults({ stallAfterBytes: 0, holdMs: 1200 });
    const stalled = await exchange(proxy.port, payload(100), 100, 5000);
    assert.equal(stalled.received.length, 0);
    assert.equal(stalled.closed, true);
    assert.ok(stalled.ms >= 1100, `held ${stalled.ms} ms`);
    withFaults({ stallAfterBytes: 40, holdMs: 800 });
    const partly = await exchange(proxy.port, payload(100), 100, 5000);
    assert.ok(partly.received.length <= 40, `${partly.received.length} bytes passed a stall after 40`);
  });

  test('refused reconnects: connections are refused for a while, then accepted again on the same port', async () => {
    withFaults({});
    proxy.refuseFor(800);
    const refused = await new Promise<string>((resolve) => {
      const socket = net.connect(proxy.port, '127.0.0.1');
      socket.on('connect', () => { socket.destroy(); resolve('connected'); });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(String(error.code)));
    });
    assert.equal(refused, 'ECONNREFUSED');
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const { received } = await exchange(proxy.port, payload(10), 10);
    assert.equal(received.length, 10);
    assert.ok(proxy.stats.refusals >= 1);
  });
});
