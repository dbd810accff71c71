// Runs one GraphQL operation against a runtime app as an identity, over the real HTTP endpoint: the
// client API's `/graphql` route, or the local admin route that runs it as *system*. A 401 InvalidSession
// refreshes the identity's token and retries once, as the SDKs do. Cancellation through an AbortSignal;
// a timeout aborts too. The answer keeps its raw text (a 10 MB result is parsed once, by the caller when it
// wants the value), its status and time.
import { CLIENT_API, CLIENT_ROUTES, LOCAL_APP_ROUTES, localAppPath, routePath } from '../apiRoutes';
import { RunnerError, SessionPool, describeIdentity, type Identity } from './identities';

export interface GraphqlRequest {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
}

export interface GraphqlErrorLocation { line: number; column: number }
export interface GraphqlResultError { message: string; locations?: GraphqlErrorLocation[]; path?: Array<string | number> }

export interface RunResult {
  /** HTTP status of the final attempt. */
  status: number;
  /** Milliseconds from sending the request to the end of the body (the last attempt, after any refresh). */
  timeMs: number;
  identity: string;
  operationName?: string;
  /** The body as received. */
  text: string;
  /** GraphQL errors of the answer, when its body says so. */
  errors: GraphqlResultError[];
  /** Whether the answer had `data` that is not null. */
  hasData: boolean;
  /** The answer parsed (once, here), when it is JSON. */
  value?: unknown;
}

export interface RunOptions {
  signal?: AbortSignal;
  /** 0 or absent: no time limit. */
  timeoutMs?: number;
}

export function graphqlUrl(pool: SessionPool, identity: Identity): string {
  const { appId } = pool.target;
  return identity.kind === 'system'
    ? `${pool.target.baseUrl}${localAppPath(appId, LOCAL_APP_ROUTES.graphql)}`
    : `${pool.target.baseUrl}${CLIENT_API}${routePath(CLIENT_ROUTES.graphql, { appId })}`;
}

/** A signal that aborts with the caller's signal or after the time limit, whichever comes first. */
function withTimeout(options: RunOptions): { signal?: AbortSignal; timedOut: () => boolean; dispose: () => void } {
  if (!options.timeoutMs) return { signal: options.signal, timedOut: () => false, dispose: () => undefined };
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; controller.abort(); }, options.timeoutMs);
  const onAbort = () => controller.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) controller.abort();
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    dispose: () => { clearTimeout(timer); options.signal?.removeEventListener('abort', onAbort); },
  };
}

export async function runGraphql(pool: SessionPool, identity: Identity, request: GraphqlRequest, options: RunOptions = {}, fetchImpl: typeof fetch = fetch): Promise<RunResult> {
  const limit = withTimeout(options);
  const body = JSON.stringify({ query: request.query, ...(request.variables ? { variables: request.variables } : {}), ...(request.operationName ? { operationName: request.operationName } : {}) });
  try {
    const send = async () => {
      const headers = await pool.headersFor(identity, limit.signal);
      const started = performance.now();
      const response = await fetchImpl(graphqlUrl(pool, identity), {
        method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...headers }, body, signal: limit.signal,
      });
      const text = await response.text();
      return { response, text, timeMs: performance.now() - started };
    };
    let answer = await send();
    if (answer.response.status === 401 && /InvalidSession/.test(answer.text)) {
      if (SessionPool.hasSession(identity)) await pool.refreshed(identity, limit.signal);
      else if (identity.kind === 'system') await pool.refreshAdmin(limit.signal);
      answer = await send();
    }
    const read = errorsOf(answer.text);
    return {
      status: answer.response.status, timeMs: answer.timeMs, identity: describeIdentity(identity), operationName: request.operationName,
      text: answer.text, errors: read.errors, hasData: read.hasData, ...(read.value !== undefined ? { value: read.value } : {}),
    };
  } catch (error) {
    if (limit.timedOut()) throw new RunnerError(`the request took longer than the time limit of ${options.timeoutMs! / 1000} s (setting appServicesLocal.runner.timeoutSeconds)`);
    if (options.signal?.aborted) throw new RunnerError('cancelled');
    if (error instanceof RunnerError) throw error;
    throw new RunnerError(`the request to ${pool.target.baseUrl} failed: ${(error as Error).message ?? String(error)}. Is the runtime running?`);
  } finally {
    limit.dispose();
  }
}

/** The `errors` of a GraphQL answer, whether it has data, and the parsed answer (kept, so it is parsed once). */
export function errorsOf(text: string): { errors: GraphqlResultError[]; hasData: boolean; value?: unknown } {
  let value: unknown;
  try { value = JSON.parse(text); } catch { return { errors: [], hasData: false }; }
  if (typeof value !== 'object' || value === null) return { errors: [], hasData: false, value };
  const record = value as { data?: unknown; errors?: unknown; error?: unknown };
  const errors: GraphqlResultError[] = [];
  if (Array.isArray(record.errors)) {
    for (const e of record.errors) {
      if (typeof e !== 'object' || e === null) continue;
      const item = e as { message?: unknown; locations?: unknown; path?: unknown };
      errors.push({
        message: typeof item.message === 'string' ? item.message : JSON.stringify(e),
        ...(Array.isArray(item.locations) ? { locations: item.locations.filter(isLocation) } : {}),
        ...(Array.isArray(item.path) ? { path: item.path as Array<string | number> } : {}),
      });
    }
  } else if (typeof record.error === 'string') {
    errors.push({ message: record.error });
  }
  return { errors, hasData: record.data !== undefined && record.data !== null, value };
}

function isLocation(value: unknown): value is GraphqlErrorLocation {
  return typeof value === 'object' && value !== null && typeof (value as GraphqlErrorLocation).line === 'number' && typeof (value as GraphqlErrorLocation).column === 'number';
}

/** A shell command that repeats the request (headers included: it is for the user's own local runtime). */
export async function curlFor(pool: SessionPool, identity: Identity, request: GraphqlRequest): Promise<string> {
  const headers = await pool.headersFor(identity);
  const body = JSON.stringify({ query: request.query, ...(request.variables ? { variables: request.variables } : {}), ...(request.operationName ? { operationName: request.operationName } : {}) });
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [
    `curl -sS -X POST ${quote(graphqlUrl(pool, identity))}`,
    `-H 'Content-Type: application/json'`,
    ...Object.entries(headers).map(([k, v]) => `-H ${quote(`${k}: ${v}`)}`),
    `--data ${quote(body)}`,
  ].join(' \\\n  ');
}
