// The runtime's HTTP API as its clients reach it, declared once: the API prefixes, and every route that the
// runtime registers and a client of it (the editor, `asl`, core's runner and sync clients) also asks.
// Patterns use `:name` parameters; the runtime registers the pattern, a client fills it with `routePath`.

export const CLIENT_API = '/api/client/v2.0';
export const ADMIN_API = '/api/admin/v3.0';
/** The editor's and local tools' routes, behind the admin session, below the Admin API. */
export const LOCAL_API = `${ADMIN_API}/local`;

const PROVIDER = '/app/:appId/auth/providers/:provider';

/** Routes of the client API, below `CLIENT_API`. */
export const CLIENT_ROUTES = {
  /** Refresh (POST) and log out (DELETE) with the refresh token. */
  session: '/auth/session',
  location: '/app/:appId/location',
  /** An auth provider; its actions (`local-userpass` `confirm`, `reset/send`, …) are below it. */
  provider: PROVIDER,
  login: `${PROVIDER}/login`,
  register: `${PROVIDER}/register`,
  graphql: '/app/:appId/graphql',
  functionsCall: '/app/:appId/functions/call',
} as const;

/**
 * A WebSocket endpoint of an app (the JSON feed's `sync/feed`, the Realm protocol's): upgrades, not routes of
 * the router. `APP_ENDPOINT_PATH` reads the client app id and the endpoint back from a path.
 */
export function appEndpointPath(appId: string, endpoint: string): string {
  return `${CLIENT_API}/app/${encodeURIComponent(appId)}/${endpoint}`;
}
export const APP_ENDPOINT_PATH = new RegExp(`^${CLIENT_API.replace(/[.]/g, '\\.')}/app/([^/]+)/(.+)$`);

/** Routes of the Admin API the local tools use, below `ADMIN_API`. */
export const ADMIN_ROUTES = {
  session: '/auth/session',
} as const;

/** The local-only routes of one app, below `LOCAL_API`. */
export const LOCAL_APP = '/app/:appId';
export const LOCAL_APP_ROUTES = {
  userSession: '/users/:userId/session',
  graphql: '/graphql',
  functionsCall: '/functions/call',
  collections: '/collections',
  /** `?user=<id or email>&partition=<EJSON text>`: the simulator's report. */
  syncSimulate: '/sync/simulate',
  syncStatus: '/sync/status',
  syncSessions: '/sync/sessions',
  syncTraffic: '/sync/sessions/:connection/:session/traffic',
  syncSchemaVersions: '/sync/schema-versions',
  syncMigration: '/sync/migration',
} as const;

/** One collection's document count, as `…/collections` lists them. */
export interface CollectionCount { dataSource: string; database: string; collection: string; count: number }

/** A function call's failure, as `…/functions/call` answers it (400): the function's own stack with it, which the client API never shows. */
export interface FunctionCallFailure { error: string; error_code: string; function_stack?: string }

/** The pattern of a local route of an app, relative to `ADMIN_API` (as the admin route table registers it). */
export function localAppPattern(route: string): string {
  return `${LOCAL_API.slice(ADMIN_API.length)}${LOCAL_APP}${route}`;
}

/** A pattern with its `:name` parameters filled (each URI-encoded); a parameter without a value is an error. */
export function routePath(pattern: string, params: Readonly<Record<string, string | number>> = {}): string {
  return pattern.replace(/:(\w+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`route ${pattern} needs "${name}"`);
    return encodeURIComponent(String(value));
  });
}

/** The path of an app's local route (`/api/admin/v3.0/local/app/<app id>/…`). */
export function localAppPath(appId: string, route: string, params: Readonly<Record<string, string | number>> = {}): string {
  return `${LOCAL_API}${routePath(LOCAL_APP, { appId })}${routePath(route, params)}`;
}
