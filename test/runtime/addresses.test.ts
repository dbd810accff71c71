// Which address a request called and who sent it (runtime/http/addresses.ts): the cases the end-to-end
// tests do not reach (IPv6, IPv4 peers on a dual-stack socket, header lists, odd public URLs).
import assert from 'node:assert/strict';
import type http from 'node:http';
import { describe, test } from 'node:test';
import { baseUrlFor, calledAddress, checkPublicUrl, isTrustedProxy, type AddressOptions } from '../../runtime/http/addresses';

function request(peer: string, headers: http.IncomingHttpHeaders): http.IncomingMessage {
  return { socket: { remoteAddress: peer }, headers } as unknown as http.IncomingMessage;
}

describe('calledAddress', () => {
  const options: AddressOptions = { tls: false, trustedProxies: ['127.0.0.1', 'fd00::1'], publicUrls: ['https://sync.example.com'] };

  test('an IPv4 proxy seen on a dual-stack socket is still the proxy', () => {
    assert.equal(isTrustedProxy('::ffff:127.0.0.1', ['127.0.0.1']), true);
    assert.equal(isTrustedProxy('::ffff:127.0.0.2', ['127.0.0.1']), false);
    const called = calledAddress(request('::ffff:127.0.0.1', { host: '127.0.0.1:8080', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'sync.example.com', 'x-forwarded-for': '198.51.100.7' }), options);
    assert.deepEqual(called, { scheme: 'https', authority: 'sync.example.com', clientAddress: '198.51.100.7', local: false, viaProxy: true });
  });

  test('from the proxy, the last value of each header is the one it wrote', () => {
    const called = calledAddress(request('fd00::1', { host: 'x', 'x-forwarded-proto': 'http, https', 'x-forwarded-host': 'attacker.example, sync.example.com', 'x-forwarded-for': '127.0.0.1, 2001:db8::5' }), options);
    assert.equal(called.scheme, 'https');
    assert.equal(called.authority, 'sync.example.com');
    assert.equal(called.clientAddress, '2001:db8::5');
    assert.equal(called.local, false);
  });

  test('from the proxy, an unknown scheme keeps the connection\'s, and a malformed client address is no address', () => {
    const called = calledAddress(request('127.0.0.1', { host: 'h', 'x-forwarded-proto': 'gopher', 'x-forwarded-for': '127.0.0.1 ; drop' }), { ...options, tls: true });
    assert.equal(called.scheme, 'https');
    assert.equal(called.clientAddress, undefined);
    assert.equal(called.local, false);
  });

  test('from anyone else, forwarding headers are ignored, and make a loopback peer not local', () => {
    const called = calledAddress(request('::1', { host: 'localhost:8080', 'x-forwarded-host': 'attacker.example', forwarded: 'for=127.0.0.1' }), options);
    assert.deepEqual(called, { scheme: 'http', authority: 'localhost:8080', clientAddress: '::1', local: false, viaProxy: false });
    assert.equal(calledAddress(request('::1', { host: 'localhost:8080' }), options).local, true);
  });
});

describe('baseUrlFor', () => {
  const options: AddressOptions = { tls: false, publicUrls: ['http://[fd00::20]:8080', 'http://buildbox.lan:8080'] };
  const direct = (authority: string) => ({ scheme: 'http' as const, authority, clientAddress: '::1', local: true, viaProxy: false });

  test('the public URL naming the host called (IPv6 in brackets), else the first', () => {
    assert.equal(baseUrlFor(direct('buildbox.lan:8080'), options, 'x'), 'http://buildbox.lan:8080');
    assert.equal(baseUrlFor(direct('[FD00::20]:8080'), options, 'x'), 'http://[fd00::20]:8080');
    assert.equal(baseUrlFor(direct('127.0.0.1:8080'), options, 'x'), 'http://[fd00::20]:8080');
  });

  test('without public URLs the address called, unless it is not a plain authority', () => {
    assert.equal(baseUrlFor({ ...direct('LOCALHOST:9'), scheme: 'https' }, { tls: true }, 'fallback'), 'https://localhost:9');
    assert.equal(baseUrlFor(direct('a"b<script>'), { tls: false }, 'fallback'), 'fallback');
  });
});

describe('checkPublicUrl', () => {
  test('keeps scheme://host[:port] and refuses the rest', () => {
    assert.deepEqual(checkPublicUrl('HTTPS://Sync.Example.com:443/'), { url: 'https://sync.example.com' });
    assert.deepEqual(checkPublicUrl('http://[fd00::20]:8080'), { url: 'http://[fd00::20]:8080' });
    assert.deepEqual(checkPublicUrl('http://buildbox.lan.:8080'), { url: 'http://buildbox.lan:8080' });
    for (const bad of ['sync.example.com', 'ws://sync.example.com', 'https://sync.example.com/app', 'https://sync.example.com/?a=1', 'https://sync.example.com/#x', 'https://u:p@sync.example.com']) {
      assert.ok('problem' in checkPublicUrl(bad), bad);
    }
  });
});
