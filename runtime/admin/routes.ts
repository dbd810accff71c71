// Every Admin API route, declared in one place over the admin route table (so each one sits behind the
// admin access token). Local-only routes of the editor are declared here the same way.
import { badRequest } from '../http/errors';
import type { Logger } from '../http/server';
import { isObject } from '../../core/json';
import type { AdminAuth } from './auth';
import type { HostedApps } from './apps';
import { json, type AdminRouteTable } from './table';
import { registerAppRoutes } from './appRoutes';
import { registerConfigRoutes } from './configRoutes';
import { registerFunctionRoutes } from './functionRoutes';
import { registerServiceRoutes } from './serviceRoutes';
import { registerSyncAdminRoutes } from './syncRoutes';

export interface AdminContext {
  auth: AdminAuth;
  apps: HostedApps;
  log: Logger;
}

export function registerAdminRoutes(table: AdminRouteTable, ctx: AdminContext): void {
  registerAdminAuthRoutes(table, ctx);
  registerAppRoutes(table, ctx);
  registerConfigRoutes(table, ctx);
  registerFunctionRoutes(table, ctx);
  registerServiceRoutes(table, ctx);
  registerSyncAdminRoutes(table, ctx);
}

/** Login (`mongodb-cloud` with the key pair; `local-userpass` with an admin user's email and password, or the same pair), refresh, logout, profile. */
function registerAdminAuthRoutes(table: AdminRouteTable, { auth }: AdminContext): void {
  table.open('POST', '/auth/providers/mongodb-cloud/login', async (req) => {
    const body = await req.json();
    if (!isObject(body) || typeof body.username !== 'string' || typeof body.apiKey !== 'string') {
      throw badRequest('expected a JSON body {"username": "<public API key>", "apiKey": "<private API key>"}');
    }
    return json(await auth.loginWithKey(body.username, body.apiKey));
  });
  table.open('POST', '/auth/providers/local-userpass/login', async (req) => {
    const body = await req.json();
    if (!isObject(body) || typeof body.username !== 'string' || typeof body.password !== 'string') {
      throw badRequest('expected a JSON body {"username": "<admin email or public API key>", "password": "<password or private API key>"}');
    }
    // The response closes early only when the client leaves: a login waiting in the throttle's line is then dropped.
    const gone = new AbortController();
    req.response.once('close', () => gone.abort());
    return json(await auth.loginWithPassword(body.username, body.password, req.clientAddress, gone.signal));
  });
  table.open('GET', '/auth/providers', () => json([
    { type: 'mongodb-cloud', name: 'mongodb-cloud' },
    { type: 'local-userpass', name: 'local-userpass' },
  ]));
  table.open('POST', '/auth/session', async (req) => json(await auth.refresh(req.headers), 201));
  table.open('DELETE', '/auth/session', async (req) => { await auth.logout(req.headers); });
  table.get('/auth/profile', (_req, caller) => json(auth.profile(caller)));
  table.open('GET', '/api/private/v1.0/version', () => json({ version: 'app-services-local' }));
}

