// Admin API routes of an app's sync and settings as the SDKs' test harnesses read and drive them
// (`baas_admin_api.cpp`): development mode (`sync/config`), whether the initial sync is complete
// (`sync/progress`), the state (`sync/state`), the sync schema versions (`sync/schemas/versions`), a client
// reset of one client file (`sync/force_reset`), the partition → flexible migration (`sync/migration`),
// the app's recent errors (`logs`), access token checks (`users/verify_token`), and the private API
// family's settings and feature flags (kept in the app's data folder: they are the platform's, not the app's).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isObject } from '../../core/json';
import { formatJson } from '../../core/transfer/appJson';
import { ApiError, badRequest } from '../http/errors';
import type { HttpRequest } from '../http/server';
import { MigrationError } from '../sync';
import type { OpenedApp } from './apps';
import { editAppFiles, workOf } from './appRoutes';
import { parseBody } from './bodies';
import { idOf } from './ids';
import type { AdminContext } from './routes';
import { json, type AdminRouteTable } from './table';

type Json = Record<string, unknown>;

export function registerSyncAdminRoutes(table: AdminRouteTable, ctx: AdminContext): void {
  const { apps } = ctx;
  const appOf = (req: HttpRequest) => apps.get(req.params.groupId!, req.params.appId!);
  const base = '/groups/:groupId/apps/:appId';
  const syncFile = (app: OpenedApp): Json => {
    try {
      const value: unknown = JSON.parse(fs.readFileSync(path.join(app.dir, 'sync', 'config.json'), 'utf8'));
      return isObject(value) ? value : {};
    } catch {
      return {};
    }
  };

  table.get(`${base}/sync/config`, (req) => json({ development_mode_enabled: syncFile(appOf(req)).development_mode_enabled === true }));
  table.put(`${base}/sync/config`, async (req) => {
    const app = appOf(req);
    const body = await parseBody(req);
    if (!isObject(body) || typeof body.development_mode_enabled !== 'boolean') throw badRequest('expected {"development_mode_enabled": true|false}');
    await editAppFiles(ctx, app, (files) => {
      const text = files.get('sync/config.json');
      const current: unknown = text === undefined ? {} : JSON.parse(text);
      files.set('sync/config.json', formatJson({ ...(isObject(current) ? current : {}), development_mode_enabled: body.development_mode_enabled }));
    });
  });

  /** The runtime translates nothing in the background: once sync is enabled, the initial sync is complete. */
  table.get(`${base}/sync/progress`, (req) => {
    const app = appOf(req);
    const status = app.sync.service.status();
    const running = status.status === 'enabled';
    const file = syncFile(app);
    if (file.type === 'flexible') return json({ accepting_clients: running });
    const service = typeof file.service_name === 'string' ? file.service_name : 'mongodb-atlas';
    return json({ progress: running ? { [service]: { complete: true, started_at: new Date().toISOString(), updated_at: new Date().toISOString() } } : {} });
  });
  table.get(`${base}/sync/schemas/versions`, (req) => json({
    versions: appOf(req).sync.schemaVersions.list().map((v) => ({ version_major: v.version })),
  }));
  table.get(`${base}/sync/state`, (req) => {
    const status = appOf(req).sync.service.status().status;
    return json({ state: status === 'enabled' ? 'enabled' : status === 'paused' ? 'disabled' : '' });
  });
  table.put(`${base}/sync/force_reset`, async (req) => {
    const app = appOf(req);
    const body = await parseBody(req);
    if (!isObject(body) || !Number.isSafeInteger(body.file_ident) || (body.file_ident as number) <= 0) throw badRequest('expected {"file_ident": <a client file identifier>}');
    if (!await app.sync.forceClientReset(body.file_ident as number)) throw new ApiError(404, 'ClientFileNotFound', `no client file ${String(body.file_ident)} syncs with this app`);
  });

  // ---- partition-based → flexible sync migration (`migrate_to_flx`, `get_migration_status` of the harness) ----
  table.get(`${base}/sync/migration`, (req) => json(appOf(req).sync.migration.status()));
  table.put(`${base}/sync/migration`, async (req) => {
    const app = appOf(req);
    const body = await parseBody(req);
    if (!isObject(body) || typeof body.serviceId !== 'string' || (body.action !== 'start' && body.action !== 'rollback')) throw badRequest('expected {"serviceId": "<the synced cluster\'s service id>", "action": "start" | "rollback"}');
    const synced = app.sync.service.runtimeState.running?.settings.serviceName;
    const service = app.current().app.dataSources.find((d) => idOf(app, 'service', d.name) === body.serviceId);
    if (!service) throw new ApiError(404, 'ServiceNotFound', `service not found: '${body.serviceId}'`);
    if (synced !== undefined && service.name !== synced) throw badRequest(`service "${service.name}" is not the synced cluster ("${synced}")`);
    try {
      // Serialised with the app's other edits: the migration rewrites sync/config.json.
      return json(await workOf(app).serial(() => (body.action === 'start' ? app.sync.migration.start() : app.sync.migration.rollback())));
    } catch (e) {
      if (e instanceof MigrationError) throw new ApiError(e.status, e.errorCode, e.message);
      throw e;
    }
  });

  // ---- the app's recent errors ----
  table.get(`${base}/logs`, (req) => {
    const app = appOf(req);
    const errorsOnly = req.query.get('errors_only') === 'true';
    const logs = app.recentLogs().filter((entry) => !errorsOnly || entry.error !== undefined);
    return json({ logs, nextEndDate: null, nextSkip: 0 });
  });

  // ---- access tokens ----
  table.post(`${base}/users/verify_token`, async (req) => {
    const app = appOf(req);
    const body = await parseBody(req);
    if (!isObject(body) || typeof body.token !== 'string') throw badRequest('expected {"token": "<access token>"}');
    const claims = app.current().auth.verifyAccessToken(body.token);
    return json({ sub: claims.sub, iat: claims.iat, exp: claims.exp, ...(claims.user_data !== undefined ? { custom_user_data: claims.user_data } : {}) });
  });

  // ---- the private API family: the platform's own settings of an app ----
  const privateBase = '/api/private/v1.0/groups/:groupId/apps/:appId';
  const settingsFile = (app: OpenedApp) => path.join(app.dataDir, 'platform-settings.json');
  const readSettings = async (app: OpenedApp): Promise<{ settings: Json; features: string[] }> => {
    try {
      const value: unknown = JSON.parse(await fsp.readFile(settingsFile(app), 'utf8'));
      if (isObject(value)) {
        return {
          settings: isObject(value.settings) ? value.settings : {},
          features: Array.isArray(value.features) ? value.features.filter((f): f is string => typeof f === 'string') : [],
        };
      }
    } catch { /* none yet */ }
    return { settings: {}, features: [] };
  };
  const writeSettings = (app: OpenedApp, change: (current: { settings: Json; features: string[] }) => void) => workOf(app).serial(async () => {
    const current = await readSettings(app);
    change(current);
    const file = settingsFile(app);
    const tmp = `${file}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(current) + '\n', { mode: 0o600 });
    await fsp.rename(tmp, file);
  });
  table.get(`${privateBase}/settings`, async (req) => json((await readSettings(appOf(req))).settings));
  table.patch(`${privateBase}/settings`, async (req) => {
    const app = appOf(req);
    const body = await parseBody(req);
    if (!isObject(body)) throw badRequest('expected a JSON object of settings');
    await writeSettings(app, (current) => { current.settings = mergeSettings(current.settings, body); });
  });
  table.get(`${privateBase}/features`, async (req) => json({ enabled: (await readSettings(appOf(req))).features }));
  table.post(`${privateBase}/features`, async (req) => {
    const app = appOf(req);
    const body = await parseBody(req);
    if (!isObject(body) || (body.action !== 'enable' && body.action !== 'disable') || !Array.isArray(body.feature_flags) || !body.feature_flags.every((f) => typeof f === 'string' && f.length <= 200)) {
      throw badRequest('expected {"action": "enable"|"disable", "feature_flags": ["<flag>", …]}');
    }
    const flags = body.feature_flags as string[];
    await writeSettings(app, (current) => {
      const set = new Set(current.features);
      for (const flag of flags) (body.action === 'enable' ? set.add(flag) : set.delete(flag));
      current.features = [...set].slice(0, 1000);
    });
  });
}

/** A settings PATCH merges objects key by key, as the platform's did. */
function mergeSettings(current: Json, patch: Json): Json {
  const out: Json = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    out[key] = isObject(value) && isObject(out[key]) ? mergeSettings(out[key] as Json, value) : value;
  }
  return out;
}
