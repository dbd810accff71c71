// What the editor asks a runtime beyond GraphQL: the app's users (the platform's Admin API user routes), the
// collections with their document counts and a page of documents, function calls, under an identity or as
// *system* through the local-only admin routes (`LOCAL_API`, behind the admin session of the handshake).
import { CLIENT_API, CLIENT_ROUTES, LOCAL_APP_ROUTES, localAppPath, routePath, type CollectionCount } from '../apiRoutes';
import { RunnerError, SessionPool, errorOf, type Identity } from './identities';

export interface AppUser {
  id: string;
  email?: string;
  name?: string;
  /** Provider types of the user's identities. */
  providers: string[];
  disabled: boolean;
}

async function request(pool: SessionPool, method: string, path: string, headers: Record<string, string>, what: string, body?: unknown, signal?: AbortSignal): Promise<unknown> {
  const response = await pool.fetchImpl(`${pool.target.baseUrl}${path}`, {
    method, signal,
    headers: { Accept: 'application/json', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw await errorOf(response, what);
  const text = await response.text();
  return text ? JSON.parse(text) : undefined;
}

/** The app's users are the platform's Admin API routes (`…/groups/{groupId}/apps/{id}/users`); the runtime has no second copy. */
function usersPath(pool: SessionPool): string {
  if (!pool.target.adminAppPath) throw new RunnerError('The runtime did not give the app\'s Admin API path: its users cannot be listed or changed from here');
  return `${pool.target.adminAppPath}/users`;
}

/** The app's users (Admin API). */
export async function listUsers(pool: SessionPool, signal?: AbortSignal): Promise<AppUser[]> {
  const body = await pool.asAdmin((headers) => request(pool, 'GET', usersPath(pool), headers, 'Listing the users', undefined, signal), signal);
  if (!Array.isArray(body)) return [];
  return body.map((u: Record<string, unknown>) => {
    const data = (typeof u.data === 'object' && u.data !== null ? u.data : {}) as Record<string, unknown>;
    const identities = Array.isArray(u.identities) ? u.identities as Array<Record<string, unknown>> : [];
    return {
      id: String(u._id ?? u.id ?? ''),
      ...(typeof data.email === 'string' && data.email ? { email: data.email } : {}),
      ...(typeof data.name === 'string' && data.name ? { name: data.name } : {}),
      providers: identities.map((i) => String(i.provider_type ?? '')).filter(Boolean),
      disabled: u.disabled === true,
    };
  }).filter((u) => u.id);
}

export async function createUser(pool: SessionPool, email: string, password: string): Promise<void> {
  await pool.asAdmin((headers) => request(pool, 'POST', usersPath(pool), headers, `Creating ${email}`, { email, password }));
}

export async function deleteUser(pool: SessionPool, userId: string): Promise<void> {
  await pool.asAdmin((headers) => request(pool, 'DELETE', `${usersPath(pool)}/${encodeURIComponent(userId)}`, headers, `Deleting user ${userId}`));
}

/** Every collection of the app's data sources with its number of documents (counted as system). */
export async function collectionCounts(pool: SessionPool, signal?: AbortSignal): Promise<CollectionCount[]> {
  const body = await pool.asAdmin((headers) => request(pool, 'GET', localAppPath(pool.target.appId, LOCAL_APP_ROUTES.collections), headers, 'Counting documents', undefined, signal), signal);
  return Array.isArray(body) ? body as CollectionCount[] : [];
}

/**
 * Calls a function, or a service action (`service` set: `find`, `count`…), as an identity: through the client
 * API (`functions/call`, the user's rules and `can_evaluate` apply), or as system through the local route.
 * Answers EJSON (canonical) as the client API does.
 */
export async function callFunction(pool: SessionPool, identity: Identity, call: { name: string; arguments: unknown[]; service?: string }, signal?: AbortSignal): Promise<unknown> {
  const { appId } = pool.target;
  const path = identity.kind === 'system' ? localAppPath(appId, LOCAL_APP_ROUTES.functionsCall) : `${CLIENT_API}${routePath(CLIENT_ROUTES.functionsCall, { appId })}`;
  const what = call.service ? `${call.service} ${call.name}` : `Calling function ${call.name}`;
  if (identity.kind === 'system') return pool.asAdmin((headers) => request(pool, 'POST', path, headers, what, call, signal), signal);
  const send = async () => request(pool, 'POST', path, await pool.headersFor(identity, signal), what, call, signal);
  try {
    return await send();
  } catch (error) {
    if (error instanceof RunnerError && error.status === 401 && error.errorCode === 'InvalidSession' && SessionPool.hasSession(identity)) {
      await pool.refreshed(identity, signal);
      return send();
    }
    throw error;
  }
}

/** The first documents of a collection as an identity sees them (its rules apply; system sees all). */
export function browseDocuments(pool: SessionPool, identity: Identity, where: { dataSource: string; database: string; collection: string }, limit = 100, signal?: AbortSignal): Promise<unknown> {
  return callFunction(pool, identity, {
    name: 'find', service: where.dataSource,
    arguments: [{ database: where.database, collection: where.collection, query: {}, limit: { $numberInt: String(limit) } }],
  }, signal);
}
