// What custom endpoints and the Data API share before any work is done: request validation by secret
// (`SECRET_AS_QUERY_PARAM`, `VERIFY_PAYLOAD`), the caller the request runs as (application authentication,
// system, a fixed user id or a user id script), the `can_evaluate` check, and the mapping of failures to the
// client API's error body.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canEvaluate } from '../../core/rules';
import { isObject } from '../../core/json';
import { ApiError } from '../http/errors';
import type { HttpRequest } from '../http/server';
import { MissingSecretError } from '../secrets';
import type { FunctionUser } from '../functions';
import type { EndpointDeps } from './types';

/** How a request is checked against a secret before it is authenticated. */
export interface ValidationSettings {
  method?: string;
  secretName?: string;
  /** Who needs the secret, for the error that names a secret without a value. */
  owner: string;
}

const authFailed = (message: string) => new ApiError(401, 'IncomingWebhookAuthFailed', message);

/** Throws a 401 unless the request carries the secret (query parameter) or a valid body signature. */
export function validateRequest(deps: EndpointDeps, settings: ValidationSettings, req: HttpRequest, body: string): void {
  const method = settings.method ?? 'NO_VALIDATION';
  if (method === 'NO_VALIDATION' || method === '') return;
  if (method !== 'SECRET_AS_QUERY_PARAM' && method !== 'VERIFY_PAYLOAD') {
    throw new ApiError(500, 'InternalServerError', `${settings.owner} has an unknown validation_method '${method}'`);
  }
  if (!settings.secretName) throw new ApiError(500, 'InternalServerError', `${settings.owner} uses ${method} but names no secret_name`);
  let secret: string;
  try {
    secret = deps.secrets.resolve(settings.secretName, settings.owner);
  } catch (e) {
    if (e instanceof MissingSecretError) throw new ApiError(500, 'InternalServerError', e.message);
    throw e;
  }
  if (method === 'SECRET_AS_QUERY_PARAM') {
    const given = req.query.get('secret');
    if (given === null) throw authFailed("this endpoint requires the secret as the 'secret' query parameter");
    if (!sameText(given, secret)) throw authFailed("the 'secret' query parameter does not match the endpoint's secret");
    return;
  }
  const header = req.headers['endpoint-signature'];
  const signature = Array.isArray(header) ? header[0] : header;
  const match = signature === undefined ? null : /^\s*sha256=([0-9a-f]{64})\s*$/i.exec(signature);
  if (!match) throw authFailed('this endpoint requires an Endpoint-Signature header: sha256=<hex HMAC-SHA256 of the body with the secret>');
  const expected = createHmac('sha256', secret).update(body, 'utf8').digest();
  if (!timingSafeEqual(Buffer.from(match[1]!, 'hex'), expected)) throw authFailed('the Endpoint-Signature header does not match the request body');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Who a request runs as, from the function's (or the Data API's) authentication settings. */
export interface AuthenticationSettings {
  runAsSystem: boolean;
  runAsUserId?: string;
  /** Reserved function name under which the runner finds the user id script, when there is one. */
  userIdScript?: string;
  fetchCustomUserData: boolean;
}

export type Caller = { kind: 'system' } | { kind: 'user'; user: FunctionUser };

/**
 * System authentication needs no credentials; a fixed user id or a script's user id runs as that user;
 * otherwise the request must authenticate as an application user (access token or credential headers).
 */
export async function resolveCaller(
  deps: EndpointDeps, settings: AuthenticationSettings, req: HttpRequest, scriptArgs: unknown[], request: Record<string, unknown>,
): Promise<Caller> {
  if (settings.runAsSystem) return { kind: 'system' };
  let userId = settings.runAsUserId;
  if (!userId && settings.userIdScript) {
    const returned = await deps.runFunction(settings.userIdScript, scriptArgs, { runAsSystem: true, request }).catch((e: unknown) => {
      throw new ApiError(401, 'AuthError', `the user id script failed: ${(e as Error).message}`);
    });
    userId = userIdOf(returned);
    if (!userId) throw new ApiError(401, 'AuthError', 'the user id script must return a user id string');
  }
  const caller = userId !== undefined && userId !== ''
    ? await deps.findUser(userId)
    : await deps.authenticate(req.headers);
  if (!caller) throw new ApiError(401, 'AuthError', `the request runs as user '${userId}', which does not exist`);
  const customData = settings.fetchCustomUserData ? caller.customData ?? {} : {};
  return {
    kind: 'user',
    user: { id: caller.user.id, type: caller.user.type, data: caller.user.data, custom_data: customData, identities: caller.user.identities.map((i) => ({ ...i })) },
  };
}

function userIdOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (isObject(value) && typeof value.toHexString === 'function') return (value.toHexString as () => string)();
  return undefined;
}

/** Throws a 403 unless the `can_evaluate` expression holds (core/rules/canEvaluate.ts). */
export async function checkCanEvaluate(
  deps: EndpointDeps, rule: unknown, what: string, caller: Caller, args: unknown[], request: Record<string, unknown>,
): Promise<void> {
  const allowed = await canEvaluate(rule, {
    ...(caller.kind === 'user' ? { user: caller.user } : {}),
    args, request, values: deps.values, environment: deps.environment,
    callFunction: (name, fnArgs) => deps.runFunction(name, fnArgs, { runAsSystem: true, request }),
  });
  if (!allowed) throw new ApiError(403, 'FunctionExecutionError', `rule not matched for ${what}: its can_evaluate expression is false for this request`);
}

/** `context.request` of a function run by an endpoint. */
export function contextRequest(req: HttpRequest, headers: Record<string, string[]>): Record<string, unknown> {
  const url = new URL(req.raw.url ?? '/', req.baseUrl);
  const header = (name: string) => headers[name]?.[0];
  return {
    httpMethod: req.method,
    rawQueryString: url.search.replace(/^\?/, ''),
    requestHeaders: headers,
    remoteIPAddress: req.clientAddress ?? '',
    webhookUrl: `${req.baseUrl}${req.path}`,
    ...(header('User-Agent') !== undefined ? { httpUserAgent: header('User-Agent') } : {}),
    ...(header('Referer') !== undefined ? { httpReferrer: header('Referer') } : {}),
  };
}

/** Header names in their canonical form (`content-type` → `Content-Type`), each with all its values. */
export function canonicalHeaders(req: HttpRequest): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const raw = req.raw.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, letter: string) => dash + letter.toUpperCase());
    (out[name] ??= []).push(raw[i + 1]!);
  }
  return out;
}

/** Statuses of the typed errors functions, data access and service actions throw (client-api.md §10). */
const STATUS_BY_CODE: Record<string, number> = {
  FunctionNotFound: 404,
  ServiceNotFound: 404,
  ServiceCommandNotFound: 404,
  NoMatchingRuleFound: 403,
  PermissionDenied: 403,
};

/** A thrown failure as the client API's error; `rename` replaces reserved function names in messages. */
export function toApiError(e: unknown, rename?: { from: string; to: string }): unknown {
  if (e instanceof ApiError) return e;
  const code = (e as { errorCode?: unknown } | undefined)?.errorCode;
  if (typeof code !== 'string') return e;
  const status = (e as { httpStatus?: unknown }).httpStatus;
  let message = (e as Error).message;
  if (rename) message = message.split(rename.from).join(rename.to);
  return new ApiError(typeof status === 'number' ? status : STATUS_BY_CODE[code] ?? 400, code, message);
}
