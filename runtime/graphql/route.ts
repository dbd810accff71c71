// The client API's GraphQL route, `POST /api/client/v2.0/app/<client app id>/graphql`: the caller
// authenticated, the raw body executed as the caller's user, the endpoint's envelope answered as JSON.
import { CLIENT_API, CLIENT_ROUTES } from '../../core/apiRoutes';
import { ApiError } from '../http/errors';
import type { Router } from '../http/router';
import type { HttpRequest } from '../http/server';
import type { GraphqlEndpoint } from './endpoint';

export interface GraphqlRouteOptions<Caller, User> {
  appId: string;
  endpoint: GraphqlEndpoint<User>;
  /** The request's caller; throws (401) without a valid token. */
  authenticate(req: HttpRequest): Promise<Caller>;
  userOf(caller: Caller): User;
}

export function registerGraphqlRoute<Caller, User>(router: Router, options: GraphqlRouteOptions<Caller, User>): void {
  router.post(`${CLIENT_API}${CLIENT_ROUTES.graphql}`, async (req) => {
    if (req.params.appId !== options.appId) throw new ApiError(404, 'AppNotFound', `cannot find app using Client App ID '${req.params.appId}'`);
    const caller = await options.authenticate(req);
    const result = await options.endpoint.executeRaw(await req.text(), options.userOf(caller), req.clientGone);
    return { status: result.status, body: result.body, encoding: 'json' };
  });
}
