// Certificates made by the test itself with the `openssl` CLI (self-signed, for the names given), and
// HTTPS requests that trust exactly the CA they are told to (or nothing beyond the system's CAs).
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { LookupFunction } from 'node:net';

export interface MadeCertificate {
  certFile: string;
  keyFile: string;
  /** The certificate's PEM: what a client that trusts it passes as `ca`. */
  pem: string;
  fingerprint: string;
}

/** A self-signed P-256 certificate for `names` (DNS names or IP addresses), valid for two days, in `dir/<stem>.{crt,key}`. */
export function makeCertificate(dir: string, stem: string, names: readonly string[]): MadeCertificate {
  const certFile = path.join(dir, `${stem}.crt`);
  const keyFile = path.join(dir, `${stem}.key`);
  const san = names.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', `/CN=${names[0]}`, '-addext', `subjectAltName=${san}`, '-keyout', keyFile, '-out', certFile,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  const pem = fs.readFileSync(certFile, 'utf8');
  return { certFile, keyFile, pem, fingerprint: new X509Certificate(pem).fingerprint256 };
}

export const opensslAvailable = (() => {
  try { execFileSync('openssl', ['version'], { stdio: 'ignore' }); return true; } catch { return false; }
})();

export interface HttpsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** SHA-256 fingerprint of the certificate the server presented. */
  fingerprint: string;
}

export interface HttpsOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** PEM the client trusts; without it only the system's CAs (which never include a test's certificate). */
  ca?: string;
  /** Where names resolve (a name only the test knows, such as `sync.test`). */
  lookup?: LookupFunction;
  /** The name the certificate is checked against (by default the URL's host, or a Host header given). */
  servername?: string;
}

/** One HTTPS request with a fresh connection (so each sees the certificate served now). */
export function httpsRequest(url: string, options: HttpsOptions = {}): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, {
      method: options.method ?? 'GET', headers: options.headers, ca: options.ca, lookup: options.lookup, servername: options.servername, agent: false,
    }, (res) => {
      const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), fingerprint }));
      res.on('error', reject);
    });
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer from ${url} within 15 s`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Resolves every name to 127.0.0.1 (a name the test's certificate and public URL use). */
export const toLoopback: LookupFunction = (_hostname, options, callback) => {
  if (typeof options === 'object' && options.all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
};
