// The client API routes of authentication and function calls (client-api.md §1–§8). GraphQL is routed by
// the runtime, which authenticates with `AuthService.authenticateRequest`.
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError, badRequest } from '../http/errors';
import { CLIENT_API, CLIENT_ROUTES } from '../../core/apiRoutes';
import type { Router } from '../http/router';
import { isTrustedRequestOrigin } from '../http/origin';
import type { HttpHandler, HttpRequest, HttpResult } from '../http/server';
import type { AuthenticatedRequest, AuthService } from './service';

export interface LocationInfo {
  /** `LOCAL` or `GLOBAL`, from the app's root config. */
  deploymentModel?: string;
  location?: string;
}

export interface FunctionCallDependencies {
  /** Function names and whether each is private (`AppModel.functions` fits). */
  functions: ReadonlyMap<string, { private: boolean }>;
  /** Runs a function for the user; throws errors with an `errorCode` (FunctionNotFound, …) or an ApiError. */
  callFunction(name: string, args: unknown[], caller: AuthenticatedRequest): Promise<unknown>;
  /** Runs a service action (`mongodb-atlas` `find`, …) for the user. */
  serviceAction(service: string, action: string, args: unknown[], caller: AuthenticatedRequest): Promise<unknown>;
}

export interface AuthRouteOptions {
  location?: LocationInfo;
  functions?: FunctionCallDependencies;
  /**
   * The app's `allowed_request_origins`: besides loopback origins, the only web pages whose requests the
   * unauthenticated state-changing routes (login, register, confirm, reset) take. Default: none.
   */
  allowedOrigins?: () => readonly string[];
}

/** Error codes a function failure may carry through to the client, with their statuses (client-api.md §10). */
const FUNCTION_ERROR_STATUS: Record<string, number> = {
  FunctionNotFound: 404,
  FunctionExecutionError: 400,
  ExecutionTimeLimitExceeded: 400,
  ArgumentsNotAllowed: 400,
  NotCallable: 400,
  FunctionSyntaxError: 400,
  ServiceNotFound: 404,
  ServiceCommandNotFound: 404,
  NoMatchingRuleFound: 403,
  MongoDBError: 400,
  SchemaValidationFailedWrite: 400,
};

export function registerAuthRoutes(router: Router, auth: AuthService, options: AuthRouteOptions = {}): void {
  const forApp = (handler: HttpHandler) => (req: HttpRequest) => {
    if (req.params.appId !== auth.appId) throw new ApiError(404, 'AppNotFound', `cannot find app using Client App ID '${req.params.appId}'`);
    return handler(req);
  };
  /**
   * A page elsewhere can post a form or a simple `fetch` here without any preflight (CSRF): refused unless
   * its Origin is loopback or one of the app's, whatever the content type.
   */
  const fromTrustedOrigin = (req: HttpRequest) => {
    const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
    const site = typeof req.headers['sec-fetch-site'] === 'string' ? req.headers['sec-fetch-site'] : undefined;
    if (!isTrustedRequestOrigin(origin, site, options.allowedOrigins?.() ?? [])) {
      throw new ApiError(403, 'Forbidden', `requests from origin ${JSON.stringify(String(origin ?? site).slice(0, 200))} are not allowed: add it to allowed_request_origins in the app's config`);
    }
  };
  const userpass = (req: HttpRequest) => {
    const provider = auth.provider(req.params.provider!);
    if (provider.type !== 'local-userpass') throw new ApiError(404, 'AuthProviderNotFound', `provider '${provider.name}' has no ${req.path.split('/providers/')[1]?.split('/').slice(1).join('/')} route`);
  };
  /** `route`: below `CLIENT_API`. */
  const userpassRoute = (route: string, run: (body: unknown) => Promise<void>, status: number) =>
    router.post(`${CLIENT_API}${route}`, forApp(async (req) => {
      fromTrustedOrigin(req);
      userpass(req);
      await run(await req.json());
      return status === 204 ? undefined : { status };
    }));

  router.get(`${CLIENT_API}${CLIENT_ROUTES.location}`, forApp((req) => ({
    body: {
      deployment_model: options.location?.deploymentModel ?? 'LOCAL',
      location: options.location?.location ?? 'US-VA',
      hostname: req.baseUrl,
      ws_hostname: req.baseUrl.replace(/^http/, 'ws'),
    },
  })));

  router.post(`${CLIENT_API}${CLIENT_ROUTES.login}`, forApp(async (req) => {
    fromTrustedOrigin(req);
    const linking = req.query.get('link') === 'true';
    const body = await req.json();
    return { body: await auth.login(req.params.provider!, body, linking ? bearer(req.headers) ?? '' : undefined) };
  }));

  const provider = CLIENT_ROUTES.provider;
  userpassRoute(CLIENT_ROUTES.register, (b) => auth.register(b), 201);
  userpassRoute(`${provider}/confirm`, (b) => auth.confirm(b), 204);
  userpassRoute(`${provider}/confirm/send`, (b) => auth.resendConfirmation(b), 204);
  userpassRoute(`${provider}/confirm/call`, (b) => auth.rerunConfirmation(b), 204);
  userpassRoute(`${provider}/reset`, (b) => auth.resetPassword(b), 204);
  userpassRoute(`${provider}/reset/send`, (b) => auth.sendResetEmail(b), 204);
  userpassRoute(`${provider}/reset/call`, (b) => auth.callResetFunction(b), 204);

  const api = CLIENT_API;
  router.post(`${api}${CLIENT_ROUTES.session}`, async (req) => ({ status: 201, body: await auth.refresh(bearer(req.headers)) }));
  router.delete(`${api}${CLIENT_ROUTES.session}`, async (req) => { await auth.logout(bearer(req.headers)); });
  router.get(`${api}/auth/profile`, async (req) => ({ body: await auth.profile(bearer(req.headers)) }));
  router.delete(`${api}/auth/delete`, async (req) => { await auth.deleteCurrentUser(bearer(req.headers)); });

  router.post(`${api}/auth/api_keys`, async (req) => ({ status: 201, body: await auth.createApiKey(bearer(req.headers), await req.json()) }));
  router.get(`${api}/auth/api_keys`, async (req) => ({ body: await auth.listApiKeys(bearer(req.headers)) }));
  router.get(`${api}/auth/api_keys/:id`, async (req) => ({ body: await auth.getApiKey(bearer(req.headers), req.params.id!) }));
  router.delete(`${api}/auth/api_keys/:id`, async (req) => { await auth.deleteApiKey(bearer(req.headers), req.params.id!); });
  router.put(`${api}/auth/api_keys/:id/enable`, async (req) => { await auth.setApiKeyDisabled(bearer(req.headers), req.params.id!, false); });
  router.put(`${api}/auth/api_keys/:id/disable`, async (req) => { await auth.setApiKeyDisabled(bearer(req.headers), req.params.id!, true); });

  const fn = options.functions;
  if (fn) router.post(`${CLIENT_API}${CLIENT_ROUTES.functionsCall}`, forApp(async (req) => callFunctionRoute(req, auth, fn)));
}

async function callFunctionRoute(req: HttpRequest, auth: AuthService, fn: FunctionCallDependencies): Promise<HttpResult> {
  const caller = await auth.requireAccessToken(req.headers);
  const body = await req.json();
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('the request body must be a JSON object');
  const { name, arguments: args, service } = body as Record<string, unknown>;
  if (typeof name !== 'string' || name === '') throw new ApiError(400, 'InvalidParameter', "'name' must be a non-empty string");
  if (args !== undefined && !Array.isArray(args)) throw new ApiError(400, 'ArgumentsNotAllowed', "'arguments' must be an array");
  const list = (args ?? []) as unknown[];
  let result: unknown;
  try {
    if (service !== undefined) {
      if (typeof service !== 'string' || service === '') throw new ApiError(400, 'InvalidParameter', "'service' must be a non-empty string");
      result = await fn.serviceAction(service, name, list, caller);
    } else {
      // A private function is indistinguishable from a missing one to clients, as on the platform.
      if (fn.functions.get(name)?.private !== false) throw new ApiError(404, 'FunctionNotFound', `function not found: '${name}'`);
      result = await fn.callFunction(name, list, caller);
    }
  } catch (e) {
    throw toApiError(e);
  }
  return { body: result };
}

function toApiError(e: unknown): unknown {
  if (e instanceof ApiError) return e;
  const code = (e as { errorCode?: unknown })?.errorCode;
  if (typeof code === 'string') {
    const status = (e as { httpStatus?: unknown }).httpStatus;
    return new ApiError(typeof status === 'number' ? status : (Object.hasOwn(FUNCTION_ERROR_STATUS, code) ? FUNCTION_ERROR_STATUS[code]! : 400), code, (e as Error).message);
  }
  return e;
}

/**
 * The token of `Authorization: Bearer <token>`; undefined when there is none (no header, or `Bearer` alone:
 * "must authenticate first"); any other header value as it is, which no token check accepts (InvalidSession).
 */
function bearer(headers: IncomingHttpHeaders): string | undefined {
  const value = headers.authorization;
  if (typeof value !== 'string' || /^\s*(?:Bearer\s*)?$/i.test(value)) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return match ? match[1] : value;
}
