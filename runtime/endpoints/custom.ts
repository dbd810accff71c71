// Custom HTTPS endpoints (`http_endpoints/config.json`): `/app/<appId>/endpoint/<route>` runs the endpoint's
// function as `exports = function({ query, headers, body }, response)`. The router matches whole segments
// only, so each configured route is registered on its own; the routes are rebuilt with the app state.
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { Binary } from 'bson';
import type { AppFunction, Endpoint } from '../../core/model';
import { isObject } from '../../core/json';
import { ApiError } from '../http/errors';
import type { Router } from '../http/router';
import type { HttpRequest, HttpResult } from '../http/server';
import { canonicalHeaders, checkCanEvaluate, contextRequest, resolveCaller, toApiError, validateRequest } from './access';
import { ENDPOINT_FUNCTION_PREFIX, USER_ID_SCRIPT_PREFIX, WRAPPED_RESULT_MARK } from './sources';
import type { EndpointDeps } from './types';
import { encodeBody, negotiateReturnType, returnTypeOf } from './response-formats';

export const ENDPOINT_BASE = '/app/:appId/endpoint';
const ALL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Registers one route per configured route and method; `*` endpoints answer every method not configured on its own. */
export function registerCustomEndpoints(router: Router, deps: EndpointDeps, checkApp: (req: HttpRequest) => void): void {
  const routes = new Map<string, Map<string, Endpoint>>();
  for (const endpoint of deps.app.endpoints) {
    const segments = endpoint.route.split('/').filter((s) => s !== '');
    if (segments.some((s) => s.startsWith(':'))) {
      deps.log.warn(`endpoint ${endpoint.route} is not served: a route segment may not start with ':'`);
      continue;
    }
    const method = endpoint.httpMethod.toUpperCase();
    const methods = method === '*' ? ALL_METHODS : ALL_METHODS.includes(method) ? [method] : [];
    const path = `/${segments.join('/')}`;
    const byMethod = routes.get(path) ?? new Map<string, Endpoint>();
    routes.set(path, byMethod);
    for (const m of methods) {
      const current = byMethod.get(m);
      if (!current || preferred(endpoint, current)) byMethod.set(m, endpoint);
    }
  }
  for (const [path, byMethod] of routes) {
    for (const [method, endpoint] of byMethod) {
      router.add(method, `${ENDPOINT_BASE}${path === '/' ? '' : path}`, async (req) => {
        checkApp(req);
        if (endpoint.disabled) throw new ApiError(404, 'NotFound', `endpoint ${method} ${endpoint.route} is disabled ("disabled": true in its config)`);
        return serveEndpoint(deps, endpoint, req);
      });
    }
  }
}

/** Which of two endpoints configured for the same route and method answers: an enabled one, then one for that method alone. */
function preferred(candidate: Endpoint, current: Endpoint): boolean {
  if (candidate.disabled !== current.disabled) return !candidate.disabled;
  return current.httpMethod === '*' && candidate.httpMethod !== '*';
}

async function serveEndpoint(deps: EndpointDeps, endpoint: Endpoint, req: HttpRequest): Promise<HttpResult> {
  const body = await req.text();
  const owner = `endpoint ${req.method} ${endpoint.route}`;
  validateRequest(deps, { method: endpoint.validationMethod, secretName: endpoint.secretName, owner }, req, body);
  const fn = deps.app.functions.get(endpoint.functionName);
  if (!fn?.sourceFile) throw new ApiError(404, 'FunctionNotFound', `function not found: '${endpoint.functionName}' (the function of ${owner})`);

  const headers = canonicalHeaders(req);
  const request = contextRequest(req, headers);
  const input: Record<string, unknown> = { query: firstValues(req.query), headers };
  if (body !== '') input.body = new Binary(Buffer.from(body, 'utf8'));
  const caller = await resolveCaller(deps, authenticationOf(fn, endpoint), req, [input], request);
  await checkCanEvaluate(deps, fn.canEvaluate, `function "${fn.name}"`, caller, [input], request);

  const name = ENDPOINT_FUNCTION_PREFIX + fn.name;
  let outcome: unknown;
  try {
    outcome = await deps.runFunction(name, [input], {
      ...(caller.kind === 'user' ? { user: caller.user } : {}), runAsSystem: caller.kind === 'system', request,
    });
  } catch (e) {
    throw toApiError(e, { from: name, to: fn.name });
  }
  if (!endpoint.respondResult) return undefined;
  const { result, response } = unwrap(outcome, fn.name);
  if (response.statusCode !== undefined || response.headers.length > 0 || response.body !== undefined) return writeResponse(req, response);
  return { status: 200, ...encodeBody(result, negotiateReturnType(req.headers.accept, returnTypeOf(configuredReturnType(endpoint)))) };
}

function authenticationOf(fn: AppFunction, endpoint: Endpoint) {
  return {
    runAsSystem: fn.runAsSystem,
    ...(fn.runAsUserId ? { runAsUserId: fn.runAsUserId } : {}),
    ...(fn.runAsUserIdScriptSource ? { userIdScript: USER_ID_SCRIPT_PREFIX + fn.name } : {}),
    fetchCustomUserData: endpoint.fetchCustomUserData,
  };
}

/** Repeated query parameters give the function their first value. */
function firstValues(query: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of query) if (!(key in out)) out[key] = value;
  return out;
}

/** `return_type` of the endpoint's entry in the config file; the model does not carry it. */
function configuredReturnType(endpoint: Endpoint): unknown {
  let node: unknown = endpoint.source.file.value;
  for (const key of endpoint.source.path) node = Array.isArray(node) || isObject(node) ? (node as Record<string | number, unknown>)[key] : undefined;
  return isObject(node) ? node.return_type : undefined;
}

interface BuiltResponse {
  statusCode?: unknown;
  headers: Array<[string, string[]]>;
  body?: unknown;
}

function unwrap(outcome: unknown, functionName: string): { result: unknown; response: BuiltResponse } {
  if (!isObject(outcome) || outcome[WRAPPED_RESULT_MARK] !== true || !isObject(outcome.response)) {
    throw new ApiError(500, 'FunctionExecutionError', `function '${functionName}' did not run as an endpoint function: a top-level return statement skips its export`);
  }
  const response = outcome.response;
  return {
    result: outcome.result,
    response: {
      statusCode: response.statusCode ?? undefined,
      headers: Array.isArray(response.headers) ? response.headers as Array<[string, string[]]> : [],
      body: response.body ?? undefined,
    },
  };
}

/** The response the function built with `response.set…`, checked before anything is written. */
function writeResponse(req: HttpRequest, response: BuiltResponse): 'handled' {
  const status = response.statusCode ?? 200;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) {
    throw new ApiError(500, 'FunctionExecutionError', `response.setStatusCode: ${String(status)} is not an HTTP status code (100–599)`);
  }
  for (const [name, values] of response.headers) {
    try {
      validateHeaderName(name);
      for (const value of values) validateHeaderValue(name, value);
    } catch (e) {
      throw new ApiError(500, 'FunctionExecutionError', `response header '${name}' cannot be sent: ${(e as Error).message}`);
    }
  }
  const bytes = response.body === undefined ? undefined
    : typeof response.body === 'string' ? Buffer.from(response.body, 'utf8')
      : response.body instanceof Binary ? Buffer.from(response.body.toString('base64'), 'base64')
        : Buffer.from(String(response.body), 'utf8');
  const res = req.response;
  res.statusCode = status;
  for (const [name, values] of response.headers) res.setHeader(name, values.length === 1 ? values[0]! : values);
  if (bytes) res.setHeader('Content-Length', String(bytes.length));
  res.end(bytes);
  return 'handled';
}
