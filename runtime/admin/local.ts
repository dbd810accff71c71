// The editor's local-only routes, behind the admin session (declared on the admin route table, so a user's
// token never reaches them): act as an existing user without a password (listing, creating and deleting users
// are the Admin API's own routes, configRoutes.ts), run GraphQL and functions as
// *system* (rules bypassed) or functions as a given user (`asl functions run --as`), and count every
// collection's documents. A function's failure answers with its own stack (`function_stack`: its file,
// line and column), which the client API never shows. Paths under `/api/admin/v3.0/local/app/
// <client app id>/…`, declared in core/apiRoutes.ts `LOCAL_APP_ROUTES` with the clients that ask them.
import { LOCAL_APP_ROUTES, localAppPattern, type CollectionCount, type FunctionCallFailure } from '../../core/apiRoutes';
import { ApiError, badRequest } from '../http/errors';
import type { HttpRequest } from '../http/server';
import { isObject } from '../../core/json';
import { FunctionError, FunctionExecutionError } from '../functions';
import type { LoginResponse } from '../auth/service';
import { json, type AdminRouteTable } from './table';

/** What the local routes need of one served app. */
export interface LocalAppAccess {
  sessionForUser(userId: string): Promise<LoginResponse>;
  /** Executes a raw GraphQL request body as system. */
  graphqlAsSystem(body: string, clientGone: () => boolean): Promise<{ status: number; body: unknown }>;
  /** A function or a service action (`service` set) as system. */
  callAsSystem(call: { name: string; arguments: unknown[]; service?: string }): Promise<unknown>;
  /** A function as the user of this id or email, as a client call of that user would run it (its can_evaluate included). */
  callAsUser(call: { name: string; arguments: unknown[]; user: string }): Promise<unknown>;
  countDocuments(): Promise<CollectionCount[]>;
}

export function registerLocalRoutes(table: AdminRouteTable, appByClientId: (clientAppId: string) => LocalAppAccess | undefined): void {
  const app = (req: HttpRequest): LocalAppAccess => {
    const found = appByClientId(req.params.appId!);
    if (!found) throw new ApiError(404, 'AppNotFound', `cannot find app using Client App ID '${req.params.appId}'`);
    return found;
  };
  table.post(localAppPattern(LOCAL_APP_ROUTES.userSession), async (req) => json(await app(req).sessionForUser(req.params.userId!), 201));
  table.post(localAppPattern(LOCAL_APP_ROUTES.graphql), async (req) => {
    const result = await app(req).graphqlAsSystem(await req.text(), req.clientGone);
    return { status: result.status, body: result.body, encoding: 'json' };
  });
  table.post(localAppPattern(LOCAL_APP_ROUTES.functionsCall), async (req) => {
    const body = await req.json();
    if (!isObject(body) || typeof body.name !== 'string' || !body.name) throw badRequest('the body must be {"name": "<function>", "arguments": [...]} (and "service" for a service action, or "user" to run as a user)');
    const args = body.arguments === undefined ? [] : body.arguments;
    if (!Array.isArray(args)) throw badRequest('"arguments" must be an array');
    const service = typeof body.service === 'string' && body.service ? body.service : undefined;
    if (body.user !== undefined && (typeof body.user !== 'string' || !body.user || service)) throw badRequest('"user" must be a user id or email, and runs a function (not a service action)');
    const user = body.user as string | undefined;
    try {
      const result = user
        ? await app(req).callAsUser({ name: body.name, arguments: args, user })
        : await app(req).callAsSystem({ name: body.name, arguments: args, ...(service ? { service } : {}) });
      return { status: 200, body: result, encoding: 'ejson' };
    } catch (e) {
      if (!(e instanceof FunctionError)) throw e;
      const stack = e instanceof FunctionExecutionError ? e.functionStack : undefined;
      const failure: FunctionCallFailure = { error: e.message, error_code: e.errorCode, ...(stack ? { function_stack: stack } : {}) };
      return json(failure, 400);
    }
  });
  table.get(localAppPattern(LOCAL_APP_ROUTES.collections), async (req) => json(await app(req).countDocuments()));
}
