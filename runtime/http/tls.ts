// The certificate and key of `--tls-cert`/`--tls-key`: read, checked as a pair (a clear error naming the
// files instead of a handshake that fails for every client), and watched, so a renewed certificate
// (certbot replaces the files) is served without a restart. A renewal that does not check out keeps the
// pair being served.
import fs from 'node:fs';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface TlsPair {
  cert: Buffer;
  key: Buffer;
  /** The certificate's subject alternative names (or subject), for the log. */
  names: string;
  /** When the certificate expires. */
  validTo: Date;
  /** SHA-256 fingerprint, `AB:CD:…` (what local tools pin, through the runtime record). */
  fingerprint256: string;
  certificate: X509Certificate;
}

export class TlsPairError extends Error {}

/** Reads and checks the pair; throws `TlsPairError` saying which file is wrong and how. */
export function loadTlsPair(files: TlsFiles): TlsPair {
  const cert = readPem(files.certFile, 'certificate');
  const key = readPem(files.keyFile, 'private key');
  let x509: X509Certificate;
  try { x509 = new X509Certificate(cert); } catch {
    throw new TlsPairError(`${files.certFile} holds no PEM certificate (expected "-----BEGIN CERTIFICATE-----")`);
  }
  let privateKey: KeyObject;
  try { privateKey = createPrivateKey(key); } catch (e) {
    const encrypted = /encrypted|passphrase/i.test(key.toString('latin1', 0, 200)) || /passphrase/i.test((e as Error).message);
    throw new TlsPairError(encrypted
      ? `${files.keyFile} holds a passphrase-protected key; give the key without a passphrase (readable by this user only)`
      : `${files.keyFile} holds no PEM private key (expected "-----BEGIN PRIVATE KEY-----" or similar)`);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new TlsPairError(`the key in ${files.keyFile} does not belong to the certificate in ${files.certFile}`);
  }
  try { tls.createSecureContext({ cert, key }); } catch (e) {
    throw new TlsPairError(`the certificate in ${files.certFile} and key in ${files.keyFile} cannot serve TLS: ${(e as Error).message}`);
  }
  return { cert, key, names: x509.subjectAltName ?? x509.subject, validTo: new Date(x509.validTo), fingerprint256: x509.fingerprint256, certificate: x509 };
}

/** How soon before expiry a certificate is worth a warning at start and on reload. */
const EXPIRY_WARNING_MS = 14 * 24 * 3600 * 1000;

/**
 * What clients that verify the certificate will refuse, said before they do: an expired (or nearly
 * expired, or not yet valid) certificate, and public URLs whose host it does not name.
 */
export function certificateWarnings(pair: TlsPair, publicUrls: readonly string[], now: number): string[] {
  const warnings: string[] = [];
  const from = new Date(pair.certificate.validFrom).getTime();
  const to = pair.validTo.getTime();
  if (to <= now) warnings.push(`the TLS certificate expired on ${pair.validTo.toISOString()}: clients that verify it refuse it`);
  else if (to - now < EXPIRY_WARNING_MS) warnings.push(`the TLS certificate expires on ${pair.validTo.toISOString()}`);
  if (from > now) warnings.push(`the TLS certificate is not valid before ${new Date(from).toISOString()}`);
  for (const url of publicUrls) {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    const named = isIP(host) ? pair.certificate.checkIP(host) !== undefined : pair.certificate.checkHost(host) !== undefined;
    if (!named) warnings.push(`the TLS certificate does not name ${host} (--public-url ${url}); it names ${pair.names}`);
  }
  return warnings;
}

function readPem(file: string, what: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new TlsPairError(`cannot read the TLS ${what} ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (e as Error).message}`);
  }
}

export interface TlsWatch {
  close(): void;
}

/**
 * Calls `onPair` with the pair each time either file changes and the new pair checks out, `onProblem` when
 * it does not (the caller keeps serving the pair it has). Files are polled by path, so a file replaced by
 * rename or a symbolic link moved to a new target (how certificates are renewed) is seen.
 */
export function watchTlsPair(files: TlsFiles, onPair: (pair: TlsPair) => void, onProblem: (message: string) => void, intervalMs = 1000): TlsWatch {
  let pending: NodeJS.Timeout | undefined;
  const changed = (now: fs.Stats, before: fs.Stats) => {
    if (now.mtimeMs === before.mtimeMs && now.ino === before.ino && now.size === before.size) return;
    // The two files are usually written one after the other: check them once both have settled.
    clearTimeout(pending);
    pending = setTimeout(() => {
      try { onPair(loadTlsPair(files)); } catch (e) { onProblem(e instanceof TlsPairError ? e.message : String(e)); }
    }, Math.min(intervalMs, 500));
    pending.unref();
  };
  const options = { interval: intervalMs, persistent: false };
  fs.watchFile(files.certFile, options, changed);
  fs.watchFile(files.keyFile, options, changed);
  return {
    close() {
      clearTimeout(pending);
      fs.unwatchFile(files.certFile, changed);
      fs.unwatchFile(files.keyFile, changed);
    },
  };
}
