// A command beside a running runtime: the runtime that holds a data folder leaves a record there
// (runtime/record.ts); the command asks it over its local admin routes with the record's session, refreshing
// the access token once when it has expired, instead of refusing the locked folder. A runtime serving TLS
// is asked over TLS, accepting exactly the certificate its record names: the record is as private as the
// session it holds, and the certificate names the public host, not the loopback address asked.
import http from 'node:http';
import tls from 'node:tls';
import { isObject } from '../core/json';
import type { RuntimeRecord } from '../core/runtime-protocol';
import { startRuntime, type RunningRuntime } from '../runtime';
import type { Logger } from '../runtime/http/server';
import { readRuntimeRecord } from '../runtime/record';
import type { CliIO } from './io';
import { ADMIN_API, ADMIN_ROUTES, localAppPath } from '../core/apiRoutes';

export { readRuntimeRecord };

export interface RuntimeAnswer { status: number; text: string }

/** What asking a runtime takes of its record (a runtime started in this process has no record file). */
export type AskedRuntime = Pick<RuntimeRecord, 'url' | 'appId' | 'admin' | 'tlsCertificateSha256'>;

/** Thrown when the recorded runtime does not answer (it stopped between the check and the request). */
export class RuntimeGone extends Error {}

/** GETs a local route, or POSTs `body` (JSON text) to it. */
export async function askRuntime(record: AskedRuntime, localPath: string, body?: string): Promise<RuntimeAnswer> {
  const url = localRouteUrl(record, localPath);
  const method = body === undefined ? 'GET' : 'POST';
  const answer = await sendTo(record, url, method, record.admin.accessToken, body);
  if (answer.status === 401 && isInvalidSession(answer.text)) return sendTo(record, url, method, await freshAccessToken(record), body);
  return answer;
}

/**
 * An access token of the record's session, refreshed now: for requests whose body is a stream, which a
 * refusal of an expired token could not replay.
 */
export async function freshAccessToken(record: AskedRuntime): Promise<string> {
  const refreshed = await sendTo(record, `${record.url}${ADMIN_API}${ADMIN_ROUTES.session}`, 'POST', record.admin.refreshToken);
  const token = refreshed.status === 201 ? accessTokenOf(refreshed.text) : undefined;
  if (!token) throw new Error(`the running runtime at ${record.url} refused its own session (${refreshed.status}); restart it`);
  return token;
}

/** The URL of one of the recorded app's local admin routes. */
export function localRouteUrl(record: AskedRuntime, localPath: string): string {
  return `${record.url}${localAppPath(record.appId, localPath)}`;
}

/** The `error` of an error body, or the status. */
export function errorOf(answer: RuntimeAnswer): string {
  try {
    const body: unknown = JSON.parse(answer.text);
    if (isObject(body) && typeof body.error === 'string') return body.error;
  } catch { /* not JSON */ }
  return `status ${answer.status}`;
}

/** Plain HTTP, or TLS accepting only the certificate the record names. */
function sendTo(record: AskedRuntime, url: string, method: string, token: string, body?: string): Promise<RuntimeAnswer> {
  return url.startsWith('https:') ? sendPinned(url, method, token, record.tlsCertificateSha256, body) : sendPlain(url, method, token, body);
}

const HEADERS = (token: string, body?: string) => ({ Authorization: `Bearer ${token}`, 'X-BAAS-Request-Origin': 'asl', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) });

async function sendPlain(url: string, method: string, token: string, body?: string): Promise<RuntimeAnswer> {
  let response: Response;
  try {
    response = await fetch(url, { method, headers: HEADERS(token, body), ...(body === undefined ? {} : { body }) });
  } catch (e) {
    throw new RuntimeGone(`the runtime at ${url} does not answer: ${(e as Error & { cause?: Error }).cause?.message ?? (e as Error).message}`);
  }
  return { status: response.status, text: await response.text() };
}

/**
 * One request over a TLS connection whose certificate has the recorded fingerprint; checked once the
 * handshake is done and before anything (the token) is sent.
 */
function sendPinned(url: string, method: string, token: string, fingerprint: string | undefined, body?: string): Promise<RuntimeAnswer> {
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
      const req = http.request({ createConnection: () => socket, method, path: target.pathname + target.search, headers: { ...HEADERS(token, body), Host: target.host } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => { text += d; });
        res.on('end', () => { socket.destroy(); resolve({ status: res.statusCode ?? 0, text }); });
        res.on('error', (e) => reject(gone(e.message)));
      });
      req.on('error', (e) => reject(gone(e.message)));
      req.end(body);
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

/**
 * With no runtime holding the data folder: one started in this process for the command (no port of its own
 * chosen, no watching), or undefined once the reason it cannot start is printed as `command`'s.
 */
export async function startRuntimeHere(io: CliIO, command: string, options: { appDir: string; dataDir: string; log: Logger }): Promise<RunningRuntime | undefined> {
  try {
    return await startRuntime({ ...options, port: 0, watch: false });
  } catch (e) {
    const message = (e as Error).message;
    io.err(/lock|already open/i.test(message)
      ? `${command}: the data folder ${options.dataDir} is in use by a runtime that left no record to reach it by (one still starting, or of an older version); try again once it has started\n`
      : `${command}: ${message}\n`);
    return undefined;
  }
}
