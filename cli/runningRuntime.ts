// A command beside a running runtime: the runtime that holds a data folder leaves a record there
// (runtime/record.ts); the command asks it over its local admin routes with the record's session, refreshing
// the access token once when it has expired, instead of refusing the locked folder. A runtime serving TLS
// is asked over TLS, accepting exactly the certificate its record names: the record is as private as the
// session it holds, and the certificate names the public host, not the loopback address asked.
import http from 'node:http';
import tls from 'node:tls';
import { isObject } from '../core/json';
import type { RuntimeRecord } from '../core/runtime-protocol';
import { readRuntimeRecord } from '../runtime/record';
import { ADMIN_PREFIX } from './adminClient';

export { readRuntimeRecord };

export interface RuntimeAnswer { status: number; text: string }

/** Thrown when the recorded runtime does not answer (it stopped between the check and the request). */
export class RuntimeGone extends Error {}

export async function askRuntime(record: RuntimeRecord, localPath: string): Promise<RuntimeAnswer> {
  const url = `${record.url}${ADMIN_PREFIX}/local/app/${encodeURIComponent(record.appId)}${localPath}`;
  const send = (target: string, method: string, token: string) => (target.startsWith('https:') ? sendPinned(target, method, token, record.tlsCertificateSha256) : sendPlain(target, method, token));
  let answer = await send(url, 'GET', record.admin.accessToken);
  if (answer.status === 401 && isInvalidSession(answer.text)) {
    const refreshed = await send(`${record.url}${ADMIN_PREFIX}/auth/session`, 'POST', record.admin.refreshToken);
    const token = refreshed.status === 201 ? accessTokenOf(refreshed.text) : undefined;
    if (!token) throw new Error(`the running runtime at ${record.url} refused its own session (${refreshed.status}); restart it`);
    answer = await send(url, 'GET', token);
  }
  return answer;
}

/** The `error` of an error body, or the status. */
export function errorOf(answer: RuntimeAnswer): string {
  try {
    const body: unknown = JSON.parse(answer.text);
    if (isObject(body) && typeof body.error === 'string') return body.error;
  } catch { /* not JSON */ }
  return `status ${answer.status}`;
}

const HEADERS = (token: string) => ({ Authorization: `Bearer ${token}`, 'X-BAAS-Request-Origin': 'asl' });

async function sendPlain(url: string, method: string, token: string): Promise<RuntimeAnswer> {
  let response: Response;
  try {
    response = await fetch(url, { method, headers: HEADERS(token) });
  } catch (e) {
    throw new RuntimeGone(`the runtime at ${url} does not answer: ${(e as Error & { cause?: Error }).cause?.message ?? (e as Error).message}`);
  }
  return { status: response.status, text: await response.text() };
}

/**
 * One request over a TLS connection whose certificate has the recorded fingerprint; checked once the
 * handshake is done and before anything (the token) is sent.
 */
function sendPinned(url: string, method: string, token: string, fingerprint: string | undefined): Promise<RuntimeAnswer> {
  const target = new URL(url);
  const gone = (why: string) => new RuntimeGone(`the runtime at ${url} does not answer: ${why}`);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: target.hostname.replace(/^\[|\]$/g, ''), port: Number(target.port), rejectUnauthorized: false, servername: 'localhost' });
    socket.once('error', (e) => reject(gone(e.message)));
    socket.once('secureConnect', () => {
      const served = socket.getPeerCertificate().fingerprint256;
      if (!fingerprint || served !== fingerprint) {
        socket.destroy();
        reject(new Error(`the runtime at ${url} presented a certificate (${served}) other than the one its record names; not sending its session`));
        return;
      }
      const req = http.request({ createConnection: () => socket, method, path: target.pathname + target.search, headers: { ...HEADERS(token), Host: target.host } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => { text += d; });
        res.on('end', () => { socket.destroy(); resolve({ status: res.statusCode ?? 0, text }); });
        res.on('error', (e) => reject(gone(e.message)));
      });
      req.on('error', (e) => reject(gone(e.message)));
      req.end();
    });
  });
}

function isInvalidSession(text: string): boolean {
  try {
    const body: unknown = JSON.parse(text);
    return isObject(body) && body.error_code === 'InvalidSession';
  } catch {
    return false;
  }
}

function accessTokenOf(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    return isObject(body) && typeof body.access_token === 'string' ? body.access_token : undefined;
  } catch {
    return undefined;
  }
}
