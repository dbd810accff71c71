// The certificate and key of --tls-cert/--tls-key (runtime/http/tls.ts): what a bad pair is told, what a
// certificate that clients would refuse is warned about, and renewals seen by the watch.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { certificateWarnings, loadTlsPair, TlsPairError, watchTlsPair, type TlsPair } from '../../runtime/http/tls';
import { makeCertificate, opensslAvailable } from '../helpers/tls';

const skip = opensslAvailable ? false : 'the openssl command is not installed';
const DAY = 24 * 3600 * 1000;

describe('TLS pairs', { skip }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-tls-unit-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('a good pair loads with its names, expiry and fingerprint', () => {
    const made = makeCertificate(dir, 'good', ['sync.example.com', '192.0.2.10']);
    const pair = loadTlsPair({ certFile: made.certFile, keyFile: made.keyFile });
    assert.match(pair.names, /DNS:sync\.example\.com/);
    assert.equal(pair.fingerprint256, made.fingerprint);
    assert.ok(pair.validTo.getTime() > Date.now());
  });

  test('each bad pair says which file is wrong', () => {
    const a = makeCertificate(dir, 'a', ['a.example']);
    const b = makeCertificate(dir, 'b', ['b.example']);
    const fail = (certFile: string, keyFile: string, message: RegExp) => assert.throws(() => loadTlsPair({ certFile, keyFile }), (e: Error) => e instanceof TlsPairError && message.test(e.message));
    fail(a.certFile, b.keyFile, /the key in .*b\.key does not belong to the certificate in .*a\.crt/);
    fail(a.keyFile, a.keyFile, /a\.key holds no PEM certificate/);
    fail(a.certFile, a.certFile, /a\.crt holds no PEM private key/);
    fail(path.join(dir, 'none.crt'), a.keyFile, /cannot read the TLS certificate .*none\.crt: no such file/);
    const encrypted = path.join(dir, 'encrypted.key');
    fs.writeFileSync(encrypted, '-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n');
    fail(a.certFile, encrypted, /passphrase-protected key/);
  });

  test('warnings for what verifying clients would refuse: expiry, not yet valid, a public URL it does not name', () => {
    const made = makeCertificate(dir, 'named', ['sync.example.com', '192.0.2.10']);
    const pair: TlsPair = loadTlsPair({ certFile: made.certFile, keyFile: made.keyFile });
    const now = Date.now();
    const naming = (urls: string[]) => certificateWarnings(pair, urls, now).filter((w) => /does not name/.test(w));
    assert.deepEqual(naming(['https://sync.example.com', 'https://192.0.2.10:8443']), []);
    assert.deepEqual(naming(['https://other.example.com', 'http://192.0.2.11:8080']), [
      `the TLS certificate does not name other.example.com (--public-url https://other.example.com); it names ${pair.names}`,
      `the TLS certificate does not name 192.0.2.11 (--public-url http://192.0.2.11:8080); it names ${pair.names}`,
    ]);
    // The test's certificate is valid for two days: within the fortnight that is worth a warning.
    assert.match(certificateWarnings(pair, [], now + DAY).join('\n'), /^the TLS certificate expires on /);
    assert.match(certificateWarnings(pair, [], now + 10 * DAY).join('\n'), /^the TLS certificate expired on .*clients that verify it refuse it/);
    assert.match(certificateWarnings(pair, [], now - 10 * DAY).join('\n'), /not valid before/);
  });

  test('the watch reports a renewed pair, and a renewal that does not check out as a problem', async () => {
    const first = makeCertificate(dir, 'w1', ['localhost']);
    const certFile = path.join(dir, 'watched.crt');
    const keyFile = path.join(dir, 'watched.key');
    fs.copyFileSync(first.certFile, certFile);
    fs.copyFileSync(first.keyFile, keyFile);
    const pairs: TlsPair[] = [];
    const problems: string[] = [];
    const watch = watchTlsPair({ certFile, keyFile }, (p) => pairs.push(p), (m) => problems.push(m), 100);
    try {
      const until = async (done: () => boolean) => { for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 50)); };
      const second = makeCertificate(dir, 'w2', ['localhost']);
      fs.copyFileSync(second.keyFile, keyFile);
      fs.copyFileSync(second.certFile, certFile);
      await until(() => pairs.length > 0);
      assert.equal(pairs.at(-1)?.fingerprint256, second.fingerprint);
      fs.copyFileSync(first.keyFile, keyFile);
      await until(() => problems.length > 0);
      assert.match(problems[0]!, /does not belong to the certificate/);
    } finally {
      watch.close();
    }
  });
});
