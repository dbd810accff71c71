// What the endpoints need from the rest of the runtime; the runtime passes one per app state.
import type { IncomingHttpHeaders } from 'node:http';
import type { AppModel } from '../../core/model';
import type { AuthenticatedRequest } from '../auth/service';
import type { FunctionCallContext, FunctionUser } from '../functions';
import type { Logger } from '../http/server';
import type { SecretStore } from '../secrets';
import type { StoreCollection } from '../store/types';

export interface EndpointDeps {
  app: AppModel;
  /** The client app id the routes answer to; other ids get 404. */
  appId: string;
  /** Application authentication: `Authorization: Bearer`, or `email`/`password`, `apiKey`, `jwtTokenString` headers. Throws a 401 ApiError. */
  authenticate(headers: IncomingHttpHeaders): Promise<AuthenticatedRequest>;
  /** A user (with custom data, when enabled) by id, for `run_as_user_id` and user id scripts. */
  findUser(userId: string): Promise<AuthenticatedRequest | undefined>;
  /** Runs a function by name; the runner's `loadSource` must come from `withEndpointSources`. */
  runFunction(name: string, args: unknown[], ctx: FunctionCallContext): Promise<unknown>;
  /** A collection as the user (rules applied) or the system (no rules) may use it. */
  collectionFor(principal: FunctionUser | 'system', dataSource: string, database: string, collection: string): StoreCollection;
  secrets: SecretStore;
  /** `%%values` (secrets resolved) and `%%environment`, for `can_evaluate`. */
  values: Record<string, unknown>;
  environment: { tag: string; values: Record<string, unknown> };
  log: Logger;
}
