// HTTPS endpoints of an app: its custom endpoints and the Data API, under `/app/<appId>/endpoint/…`.
import { ApiError } from '../http/errors';
import type { Router } from '../http/router';
import type { HttpRequest } from '../http/server';
import { registerCustomEndpoints } from './custom';
import { registerDataApi } from './data-api';
import type { EndpointDeps } from './types';

export type { EndpointDeps } from './types';
export { withEndpointSources } from './sources';

/** Registers the Data API and every configured custom endpoint of `deps.app` on the router. */
export function registerEndpointRoutes(router: Router, deps: EndpointDeps): void {
  const checkApp = (req: HttpRequest) => {
    if (req.params.appId !== deps.appId) throw new ApiError(404, 'AppNotFound', `cannot find app using Client App ID '${req.params.appId}'`);
  };
  registerDataApi(router, deps, checkApp);
  registerCustomEndpoints(router, deps, checkApp);
}
