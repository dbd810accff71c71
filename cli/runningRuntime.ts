// A command beside a running runtime: the runtime that holds a data folder leaves a record there
// (runtime/record.ts); the command asks it over its local admin routes with the record's session, refreshing
// the access token once when it has expired, instead of refusing the locked folder.
import { isObject } from '../core/json';
import type { RuntimeRecord } from '../core/runtime-protocol';
import { readRuntimeRecord } from '../runtime/record';
import { ADMIN_PREFIX } from './adminClient';

export { readRuntimeRecord };

export interface RuntimeAnswer { status: number; text: string }

/** Thrown when the recorded runtime does not answer (it stopped between the check and the request). */
export class RuntimeGone extends Error {}

/** GETs a local route, or POSTs `body` (JSON text) to it. */
export async function askRuntime(record: Pick<RuntimeRecord, 'url' | 'appId' | 'admin'>, localPath: string, body?: string): Promise<RuntimeAnswer> {
  const url = `${record.url}${ADMIN_PREFIX}/local/app/${encodeURIComponent(record.appId)}${localPath}`;
  const method = body === undefined ? 'GET' : 'POST';
  let answer = await send(url, method, record.admin.accessToken, body);
  if (answer.status === 401 && isInvalidSession(answer.text)) {
    const refreshed = await send(`${record.url}${ADMIN_PREFIX}/auth/session`, 'POST', record.admin.refreshToken);
    const token = refreshed.status === 201 ? accessTokenOf(refreshed.text) : undefined;
    if (!token) throw new Error(`the running runtime at ${record.url} refused its own session (${refreshed.status}); restart it`);
    answer = await send(url, method, token, body);
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

async function send(url: string, method: string, token: string, body?: string): Promise<RuntimeAnswer> {
  let response: Response;
  try {
    response = await fetch(url, {
      method, headers: { Authorization: `Bearer ${token}`, 'X-BAAS-Request-Origin': 'asl', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body }),
    });
  } catch (e) {
    throw new RuntimeGone(`the runtime at ${url} does not answer: ${(e as Error & { cause?: Error }).cause?.message ?? (e as Error).message}`);
  }
  return { status: response.status, text: await response.text() };
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
