// Admin API routes over an app's configuration and users: auth providers (auth/providers.json), services
// (data sources) with their configuration and the `sync` object (through runtime/sync's admin functions),
// `sync/data`, users (list, create email/password, delete, revoke sessions), and the Atlas routes the
// platform CLI calls before some commands (the runtime's group; a cluster per data source).
import { createHash } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isObject } from '../../core/json';
import { isClusterSource, type DataSource } from '../../core/model';
import { formatJson, type FileMap } from '../../core/transfer/appJson';
import type { UserRecord } from '../auth/repository';
import { ApiError, badRequest } from '../http/errors';
import type { HttpRequest } from '../http/server';
import { getServiceFlexibleSyncConfig, getServiceSyncConfig, patchServiceSyncConfig, syncData, SyncAdminError } from '../sync';
import type { OpenedApp } from './apps';
import { editAppFiles, workOf } from './appRoutes';
import { parseBody } from './bodies';
import { idOf } from './ids';
import { thirdPartyServices } from './serviceRoutes';
import type { AdminContext } from './routes';
import { json, type AdminRouteTable } from './table';

const PROVIDER_TYPES = ['anon-user', 'local-userpass', 'api-key', 'oauth2-apple', 'oauth2-google', 'oauth2-facebook', 'custom-token', 'custom-function'];
/** Providers whose name is their type on the platform. */
const NAMED_BY_TYPE = new Set(['anon-user', 'local-userpass', 'api-key', 'oauth2-apple', 'oauth2-google', 'oauth2-facebook']);
const PROVIDER_FIELDS = ['name', 'type', 'disabled', 'config', 'secret_config', 'metadata_fields', 'domain_restrictions', 'redirect_uris'];


export function registerConfigRoutes(table: AdminRouteTable, ctx: AdminContext): void {
  const { apps } = ctx;
  const appOf = (req: HttpRequest) => apps.get(req.params.groupId!, req.params.appId!);
  const base = '/groups/:groupId/apps/:appId';

  // ---- auth providers (auth/providers.json, keyed by name) ----
  const readProviders = (files: FileMap): Record<string, Record<string, unknown>> => {
    const text = files.get('auth/providers.json');
    if (text === undefined) return {};
    const value: unknown = JSON.parse(text);
    if (!isObject(value)) throw badRequest('auth/providers.json is not an object of providers by name');
    return value as Record<string, Record<string, unknown>>;
  };
  const providerView = (app: OpenedApp, p: Record<string, unknown>, full: boolean) => {
    const name = String(p.name);
    const summary = { _id: idOf(app, 'provider', name), name, type: p.type, disabled: p.disabled === true };
    return full ? { ...p, ...summary } : summary;
  };
  const currentProviders = async (app: OpenedApp) => {
    const file = path.join(app.dir, 'auth', 'providers.json');
    try { return readProviders(new Map([['auth/providers.json', await fsp.readFile(file, 'utf8')]])); } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw e;
    }
  };
  const providerNamed = async (req: HttpRequest) => {
    const app = appOf(req);
    const all = await currentProviders(app);
    const found = Object.values(all).find((p) => idOf(app, 'provider', String(p.name)) === req.params.providerId);
    if (!found) throw new ApiError(404, 'AuthProviderNotFound', `auth provider not found: '${req.params.providerId}'`);
    return { app, provider: found };
  };
  /** The record a provider constructor describes, refused with the platform's reasons. */
  const providerRecord = (body: unknown, others: Record<string, unknown>[]): Record<string, unknown> => {
    if (!isObject(body)) throw badRequest('expected a JSON auth provider {name, type, disabled, config, secret_config, metadata_fields}');
    const type = body.type;
    if (typeof type !== 'string' || !PROVIDER_TYPES.includes(type)) throw badRequest(`invalid auth provider type ${JSON.stringify(type)}: expected one of ${PROVIDER_TYPES.join(', ')}`);
    const name = body.name === undefined ? type : body.name;
    if (typeof name !== 'string' || name === '') throw badRequest('"name" must be a non-empty string');
    // auth/providers.json is keyed by name, and that key would set the object's prototype rather than hold the provider.
    if (name === '__proto__') throw badRequest('"name" cannot be "__proto__"');
    if (NAMED_BY_TYPE.has(type) && name !== type) throw badRequest(`the name of a ${type} provider must be "${type}"`);
    if (body.disabled !== undefined && typeof body.disabled !== 'boolean') throw badRequest('"disabled" must be a boolean');
    if (others.some((o) => o.name === name)) throw new ApiError(409, 'DuplicateAuthProviderName', `an auth provider named "${name}" already exists`);
    if (others.some((o) => o.type === type) && (NAMED_BY_TYPE.has(type) || type === 'custom-token')) {
      throw badRequest(type === 'custom-token'
        ? 'the app already has a custom JWT provider; an app can have only one (delete or change the other first)'
        : `the app already has a ${type} provider`);
    }
    const record: Record<string, unknown> = { name, type, disabled: body.disabled === true };
    for (const key of PROVIDER_FIELDS) if (key !== 'name' && key !== 'type' && key !== 'disabled' && body[key] !== undefined) record[key] = body[key];
    return record;
  };
  const writeProviders = (app: OpenedApp, change: (all: Record<string, Record<string, unknown>>) => void) =>
    editAppFiles(ctx, app, (files) => {
      const all = readProviders(files);
      change(all);
      files.set('auth/providers.json', formatJson(all));
    });

  table.get(`${base}/auth_providers`, async (req) => {
    const app = appOf(req);
    return json(Object.values(await currentProviders(app)).map((p) => providerView(app, p, false)));
  });
  table.post(`${base}/auth_providers`, async (req) => {
    const app = appOf(req);
    const body = await req.json();
    let created: Record<string, unknown> | undefined;
    await writeProviders(app, (all) => {
      created = providerRecord(body, Object.values(all));
      all[String(created.name)] = created;
    });
    return json(providerView(app, created!, true), 201);
  });
  table.get(`${base}/auth_providers/:providerId`, async (req) => {
    const { app, provider } = await providerNamed(req);
    return json(providerView(app, provider, true));
  });
  table.patch(`${base}/auth_providers/:providerId`, async (req) => {
    const { app, provider } = await providerNamed(req);
    const body = await req.json();
    if (!isObject(body)) throw badRequest('expected a JSON auth provider');
    const { _id: _ignored, ...fields } = body;
    await writeProviders(app, (all) => {
      const name = String(provider.name);
      const others = Object.values(all).filter((p) => p.name !== name);
      const merged = providerRecord({ ...provider, ...fields }, others);
      delete all[name];
      all[String(merged.name)] = merged;
    });
  });
  table.delete(`${base}/auth_providers/:providerId`, async (req) => {
    const { app, provider } = await providerNamed(req);
    await writeProviders(app, (all) => { delete all[String(provider.name)]; });
  });
  for (const action of ['enable', 'disable'] as const) {
    table.put(`${base}/auth_providers/:providerId/${action}`, async (req) => {
      const { app, provider } = await providerNamed(req);
      await writeProviders(app, (all) => { all[String(provider.name)] = { ...all[String(provider.name)], disabled: action === 'disable' }; });
    });
  }

  // ---- services (data sources) ----
  const serviceOf = (req: HttpRequest): { app: OpenedApp; service: DataSource } => {
    const app = appOf(req);
    const service = app.current().app.dataSources.find((d) => idOf(app, 'service', d.name) === req.params.serviceId);
    if (!service) throw new ApiError(404, 'ServiceNotFound', `service not found: '${req.params.serviceId}'`);
    return { app, service };
  };
  const lastModified = async (file: string) => { try { return Math.floor((await fsp.stat(file)).mtimeMs / 1000); } catch { return 0; } };
  const syncCall = async <T>(work: () => Promise<T> | T): Promise<T> => {
    try { return await work(); } catch (e) {
      if (e instanceof SyncAdminError) throw new ApiError(e.status, e.errorCode, e.message);
      throw e;
    }
  };

  table.get(`${base}/services`, async (req) => {
    const app = appOf(req);
    const sources = await Promise.all(app.current().app.dataSources.map(async (d) => ({
      _id: idOf(app, 'service', d.name), name: d.name, type: d.type, version: 1, last_modified: await lastModified(d.file.path),
    })));
    const others = await Promise.all((await thirdPartyServices(app)).map(async (s) => ({
      _id: idOf(app, 'service', s.name), name: s.name, type: s.type, version: 1, last_modified: await lastModified(s.file),
    })));
    return json([...sources, ...others]);
  });
  table.get(`${base}/services/:serviceId`, (req) => {
    const { app, service } = serviceOf(req);
    return json({ _id: idOf(app, 'service', service.name), name: service.name, type: service.type, config: service.config, version: 1 });
  });
  table.get(`${base}/services/:serviceId/config`, (req) => {
    const { app, service } = serviceOf(req);
    const sync = getServiceSyncConfig(app.sync.admin, service.name);
    const flexible = sync ? undefined : getServiceFlexibleSyncConfig(app.sync.admin, service.name);
    return json({
      ...(isClusterSource(service) ? { readPreference: 'primary', wireProtocolEnabled: false } : {}),
      ...service.config,
      ...(isClusterSource(service) ? { clusterId: idOf(app, 'cluster', String(service.config.clusterName ?? service.name)), groupName: 'App Services Local', orgName: 'local' } : {}),
      ...(sync ? { sync } : {}),
      ...(flexible ? { flexible_sync: flexible } : {}),
    });
  });
  table.patch(`${base}/services/:serviceId/config`, async (req) => {
    const { app, service } = serviceOf(req);
    const body = await parseBody(req);
    if (!isObject(body)) throw badRequest('expected a JSON object: the service configuration fields to change');
    const { sync, flexible_sync: flexible, ...clusterFields } = body;
    const fileRel = path.relative(app.dir, service.file.path).split(path.sep).join('/');
    if (Object.keys(clusterFields).length > 0) {
      await editAppFiles(ctx, app, (files) => {
        const current: unknown = JSON.parse(files.get(fileRel) ?? '{}');
        const record = isObject(current) ? current : {};
        files.set(fileRel, formatJson({ ...record, config: { ...(isObject(record.config) ? record.config : {}), ...clusterFields } }));
      });
    }
    // Serialised with the app's other edits: sync/config.json is also what `PUT sync/config` edits.
    if (sync !== undefined || flexible !== undefined) await syncCall(() => workOf(app).serial(() => patchServiceSyncConfig(app.sync.admin, service.name, { sync, flexible_sync: flexible })));
  });
  table.get(`${base}/sync/data`, (req) => {
    const app = appOf(req);
    const serviceId = req.query.get('service_id');
    if (!serviceId) throw badRequest('the query parameter service_id is required');
    const service = app.current().app.dataSources.find((d) => idOf(app, 'service', d.name) === serviceId);
    if (!service) throw new ApiError(404, 'ServiceNotFound', `service not found: '${serviceId}'`);
    return syncCall(() => json(syncData(app.sync.admin, serviceId, service.name)));
  });

  // ---- users ----
  const userView = (u: UserRecord) => ({
    _id: u._id,
    identities: u.identities.map((i) => ({ id: i.id, provider_type: i.provider_type, provider_id: i.provider_id })),
    type: u.type,
    creation_date: Math.floor(u.createdAt / 1000),
    disabled: u.disabled,
    data: u.data,
  });
  table.get(`${base}/users`, (req) => json(appOf(req).current().auth.userRecords().map(userView)));
  table.post(`${base}/users`, async (req) => {
    const body = await req.json();
    if (!isObject(body)) throw badRequest('expected a JSON body {"email", "password"}');
    const auth = appOf(req).current().auth;
    const created = await auth.createEmailPasswordUser(body.email, body.password);
    return json(userView(auth.userRecords().find((u) => u._id === created.id)!), 201);
  });
  table.get(`${base}/users/:userId`, (req) => {
    const user = appOf(req).current().auth.userRecords().find((u) => u._id === req.params.userId);
    if (!user) throw new ApiError(404, 'UserNotFound', `user not found: '${req.params.userId}'`);
    return json(userView(user));
  });
  table.delete(`${base}/users/:userId`, async (req) => { await appOf(req).current().auth.deleteUserById(req.params.userId!); });
  table.put(`${base}/users/:userId/logout`, async (req) => { await appOf(req).current().auth.revokeSessions(req.params.userId!); });
  for (const action of ['enable', 'disable'] as const) {
    table.put(`${base}/users/:userId/${action}`, async (req) => { await appOf(req).current().auth.setUserDisabled(req.params.userId!, action === 'disable'); });
  }

  // ---- Atlas (answered locally; the platform CLI's digest auth needs no challenge) ----
  table.open('GET', '/api/public/v1.0/groups', (req) => json({
    results: [{ id: ctx.auth.groupId, name: 'App Services Local', orgId: ctx.auth.project.domain_id }],
    links: [{ href: `${req.baseUrl}/api/public/v1.0/groups`, rel: 'self' }],
    totalCount: 1,
  }));
  table.open('GET', '/api/public/v1.0/groups/:groupId', (req) => {
    apps.checkGroup(req.params.groupId!);
    return json({ id: ctx.auth.groupId, name: 'App Services Local', orgId: ctx.auth.project.domain_id });
  });
  const clusters = (req: HttpRequest) => {
    apps.checkGroup(req.params.groupId!);
    const names = new Set<string>();
    for (const app of apps.list()) {
      for (const d of app.current().app.dataSources) if (isClusterSource(d)) names.add(typeof d.config.clusterName === 'string' ? d.config.clusterName : d.name);
    }
    if (names.size === 0) names.add('Cluster0');
    return json({ results: [...names].map((name) => ({ id: createHash('sha256').update(`cluster\u0000${name}`).digest('hex').slice(0, 24), name, stateName: 'IDLE' })), totalCount: names.size });
  };
  table.open('GET', '/api/atlas/v1.0/groups/:groupId/clusters', clusters);
  table.open('GET', '/api/public/v1.0/groups/:groupId/clusters', clusters);
  table.open('GET', '/api/atlas/v1.0/groups/:groupId/serverless', () => json({ results: [], totalCount: 0 }));
  table.open('GET', '/api/atlas/v1.0/groups/:groupId/dataLakes', () => json([]));
}
