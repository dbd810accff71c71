// The client API's push notification registration (the native SDKs' PushClient):
//   PUT    /api/client/v2.0/app/<appId>/push/providers/<service>/registration  {"registrationToken": "…"}
//   DELETE /api/client/v2.0/app/<appId>/push/providers/<service>/registration
// with the user's access token. As on the platform the registration belongs to the device of the caller's
// session (the login's device id) and names a push service of the app (`services/<name>/config.json` of
// type `gcm`, which the Admin API's POST services writes). Registrations are kept with the auth records;
// nothing is ever sent to the push provider. A request acts only for the user its token names: no user or
// device in the path or body is read, so one user cannot register or remove another's device.
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isObject } from '../../core/json';
import { ApiError } from '../http/errors';
import { CLIENT_API } from '../../core/apiRoutes';
import type { Router } from '../http/router';
import type { HttpRequest } from '../http/server';
import type { AuthService } from './service';

/** The service types the platform sends push notifications through. */
export const PUSH_SERVICE_TYPES: readonly string[] = ['gcm'];

/** Registration tokens are provider-issued (FCM: ~160 characters); longer values are refused. */
export const MAX_REGISTRATION_TOKEN_CHARS = 4096;

export interface PushRouteOptions {
  /** The app's third-party services by name, with their types. */
  services(): Promise<ReadonlyMap<string, string>>;
}

export function registerPushRoutes(router: Router, auth: AuthService, options: PushRouteOptions): void {
  const route = `${CLIENT_API}/app/:appId/push/providers/:service/registration`;
  /** The caller (401 first, so no service name is revealed without a token) and the push service named. */
  const prepare = async (req: HttpRequest) => {
    if (req.params.appId !== auth.appId) throw new ApiError(404, 'AppNotFound', `cannot find app using Client App ID '${req.params.appId}'`);
    const caller = await auth.requireAccessToken(req.headers);
    const name = req.params.service!;
    const type = (await options.services()).get(name);
    // A service of another kind is not a push provider: answered as the platform answers an unknown name.
    if (type === undefined || !PUSH_SERVICE_TYPES.includes(type)) {
      throw new ApiError(404, 'ServiceNotFound', `service not found: '${name.length > 200 ? `${name.slice(0, 200)}…` : name}'`);
    }
    return { caller, service: name };
  };

  router.put(route, async (req) => {
    const { caller, service } = await prepare(req);
    const body = await req.json();
    const token = isObject(body) ? body.registrationToken : undefined;
    if (typeof token !== 'string' || token.trim() === '') throw new ApiError(400, 'InvalidParameter', "'registrationToken' must be a non-empty string");
    if (token.length > MAX_REGISTRATION_TOKEN_CHARS) throw new ApiError(400, 'InvalidParameter', `'registrationToken' is longer than ${MAX_REGISTRATION_TOKEN_CHARS} characters`);
    await auth.registerPushDevice(caller, service, token);
  });

  router.delete(route, async (req) => {
    const { caller, service } = await prepare(req);
    await auth.deregisterPushDevice(caller, service);
  });
}

/**
 * The third-party services of the app folder (`services/<folder>/config.json` with a `type`), by their
 * `name` (the folder's name when the file names none). Folders and files that are symbolic links, and
 * files that do not parse, are passed over.
 */
export async function thirdPartyServicesIn(appDir: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const dir = path.join(appDir, 'services');
  let entries: import('node:fs').Dirent[];
  try { entries = await fsp.readdir(dir, { withFileTypes: true }); } catch { return found; }
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const file = path.join(dir, entry.name, 'config.json');
    try {
      if (!(await fsp.lstat(file)).isFile()) continue;
      const value: unknown = JSON.parse(await fsp.readFile(file, 'utf8'));
      if (isObject(value) && typeof value.type === 'string') found.set(typeof value.name === 'string' && value.name !== '' ? value.name : entry.name, value.type);
    } catch { /* not a service folder */ }
  }
  return found;
}
