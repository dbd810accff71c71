// Admin API routes that create services and their data piece by piece, as the SDKs' test harnesses do
// (`baas_admin_api.cpp`): a `mongodb`/`mongodb-atlas` service (data_sources/<name>/config.json, its
// `sync`/`flexible_sync` into sync/config.json), third-party services such as `gcm` (services/<name>/),
// the service's default rule and per-collection rules, schemas with relationships
// (data_sources/<svc>/<db>/<coll>/), and custom user data (auth/custom_user_data.json).
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isObject } from '../../core/json';
import { CLUSTER_SOURCE_TYPES, isClusterSource, type DataSource } from '../../core/model';
import { formatJson, type FileMap } from '../../core/transfer/appJson';
import { ApiError, badRequest } from '../http/errors';
import type { HttpRequest } from '../http/server';
import { patchServiceSyncConfig, SyncAdminError } from '../sync';
import type { OpenedApp } from './apps';
import { editAppFiles, workOf } from './appRoutes';
import { parseBody, requiredString } from './bodies';
import { idOf } from './ids';
import type { AdminContext } from './routes';
import { json, type AdminRouteTable } from './table';

/** Third-party services the platform still listed (their config is kept; nothing is sent anywhere). */
const THIRD_PARTY_TYPES = ['gcm', 'http', 'aws', 'twilio', 'github'];
const SERVICE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const NAMESPACE_PART = /^[^/\\.$\s\0][^/\\$\0]{0,119}$/;

type Json = Record<string, unknown>;

export function registerServiceRoutes(table: AdminRouteTable, ctx: AdminContext): void {
  const { apps } = ctx;
  const appOf = (req: HttpRequest) => apps.get(req.params.groupId!, req.params.appId!);
  const base = '/groups/:groupId/apps/:appId';
  const syncCall = async <T>(work: () => Promise<T>): Promise<T> => {
    try { return await work(); } catch (e) {
      if (e instanceof SyncAdminError) throw new ApiError(e.status, e.errorCode, e.message);
      throw e;
    }
  };

  // ---- creating and deleting services ----
  table.post(`${base}/services`, async (req) => {
    const app = appOf(req);
    const body = await parseBody(req);
    if (!isObject(body)) throw badRequest('expected a JSON service {name, type, config}');
    const name = requiredString(body, 'name');
    if (!SERVICE_NAME.test(name)) throw badRequest(`invalid service name "${name}": letters, digits, _ and - (at most 64)`);
    const type = requiredString(body, 'type');
    const config = body.config === undefined ? {} : body.config;
    if (!isObject(config)) throw badRequest('"config" must be an object');
    // Checked where the write is serialised, so that requests at once for one name make one service.
    const refuseTaken = async (files?: FileMap) => {
      const taken = app.current().app.dataSources.some((d) => d.name === name) || files?.has(`data_sources/${name}/config.json`)
        || await exists(path.join(app.dir, 'services', name));
      if (taken) throw new ApiError(409, 'DuplicateServiceName', `a service named "${name}" already exists`);
    };
    if ((CLUSTER_SOURCE_TYPES as readonly string[]).includes(type)) {
      const { sync, flexible_sync: flexible, ...connection } = config;
      if (sync !== undefined && flexible !== undefined) throw badRequest('a service syncs in one mode: send "sync" or "flexible_sync", not both');
      if (type === 'mongodb' && connection.uri !== undefined && typeof connection.uri !== 'string') throw badRequest('"config.uri" must be a string');
      const serviceFile = `data_sources/${name}/config.json`;
      await editAppFiles(ctx, app, async (files) => {
        await refuseTaken(files);
        files.set(serviceFile, formatJson({ name, type, config: connection, version: 1 }));
      });
      if (sync !== undefined || flexible !== undefined) {
        try {
          await syncCall(() => workOf(app).serial(() => patchServiceSyncConfig(app.sync.admin, name, sync !== undefined ? { sync } : { flexible_sync: flexible })));
        } catch (e) {
          // The service was created for these sync settings: refused, they leave no service behind.
          await editAppFiles(ctx, app, (files) => { files.delete(serviceFile); });
          throw e;
        }
      }
      return json({ _id: idOf(app, 'service', name), name, type, config: connection, version: 1 }, 201);
    }
    if (!THIRD_PARTY_TYPES.includes(type)) throw badRequest(`invalid service type "${type}": expected one of ${[...CLUSTER_SOURCE_TYPES, ...THIRD_PARTY_TYPES].join(', ')}`);
    const secretConfig = body.secret_config;
    if (secretConfig !== undefined && !(isObject(secretConfig) && Object.values(secretConfig).every((v) => typeof v === 'string'))) {
      throw badRequest('"secret_config" must map config fields to secret names');
    }
    const record = { name, type, config, ...(secretConfig ? { secret_config: secretConfig } : {}), version: 1 };
    await changeThirdPartyService(app, path.join(app.dir, 'services', name), async (dir) => {
      await refuseTaken();
      await fsp.mkdir(dir, { recursive: true });
      const file = path.join(dir, 'config.json');
      const tmp = `${file}.${process.pid}.tmp`;
      await fsp.writeFile(tmp, formatJson(record));
      await fsp.rename(tmp, file);
    });
    return json({ _id: idOf(app, 'service', name), name, type, config, version: 1 }, 201);
  });
  /**
   * services/<name>/ is not among the files an import carries (editAppFiles writes only those), so a
   * third-party service's folder is written here, serialised with the app's other edits, and the app reloads.
   */
  const changeThirdPartyService = (app: OpenedApp, dir: string, change: (dir: string) => Promise<void>) => workOf(app).serial(async () => {
    await change(dir);
    const result = await app.reload();
    if (!result.applied) ctx.log.warn(`${app.clientAppId}: services/${path.basename(dir)} was written but the app did not load; still serving the last good version`);
  });

  table.delete(`${base}/services/:serviceId`, async (req) => {
    const app = appOf(req);
    const source = app.current().app.dataSources.find((d) => idOf(app, 'service', d.name) === req.params.serviceId);
    const third = source ? undefined : (await thirdPartyServices(app)).find((s) => idOf(app, 'service', s.name) === req.params.serviceId);
    if (!source && !third) throw new ApiError(404, 'ServiceNotFound', `service not found: '${req.params.serviceId}'`);
    if (third) {
      await changeThirdPartyService(app, path.dirname(third.file), (dir) => fsp.rm(dir, { recursive: true, force: true }));
      return;
    }
    const prefix = `data_sources/${path.basename(source!.dir)}/`;
    await editAppFiles(ctx, app, (files) => {
      for (const key of [...files.keys()]) if (key.startsWith(prefix)) files.delete(key);
    });
  });

  // ---- a cluster service's rules ----
  const clusterOf = (req: HttpRequest): { app: OpenedApp; service: DataSource; folder: string } => {
    const app = appOf(req);
    const service = app.current().app.dataSources.find((d) => idOf(app, 'service', d.name) === req.params.serviceId);
    if (!service) throw new ApiError(404, 'ServiceNotFound', `service not found: '${req.params.serviceId}'`);
    if (!isClusterSource(service)) throw badRequest(`service "${service.name}" is not a MongoDB service; only those have rules`);
    return { app, service, folder: `data_sources/${path.basename(service.dir)}` };
  };
  const readJsonFile = (files: FileMap, key: string): Json | undefined => {
    const text = files.get(key);
    if (text === undefined) return undefined;
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  };
  const currentFile = async (app: OpenedApp, rel: string): Promise<Json | undefined> => {
    try {
      const value: unknown = JSON.parse(await fsp.readFile(path.join(app.dir, ...rel.split('/')), 'utf8'));
      return isObject(value) ? value : undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  };
  const rolesOf = (body: Json): { roles: unknown[]; filters?: unknown[] } => {
    const roles = body.roles ?? [];
    if (!Array.isArray(roles) || !roles.every(isObject)) throw badRequest('"roles" must be an array of role objects');
    for (const [i, role] of roles.entries()) if (typeof (role as Json).name !== 'string') throw badRequest(`"roles[${i}].name" must be a string`);
    const filters = body.filters;
    if (filters !== undefined && (!Array.isArray(filters) || !filters.every(isObject))) throw badRequest('"filters" must be an array of filter objects');
    return { roles, ...(filters ? { filters } : {}) };
  };

  const defaultRuleFile = (folder: string) => `${folder}/default_rule.json`;
  table.get(`${base}/services/:serviceId/default_rule`, async (req) => {
    const { app, service, folder } = clusterOf(req);
    const rule = await currentFile(app, defaultRuleFile(folder));
    if (!rule) throw new ApiError(404, 'DefaultRuleNotFound', `service "${service.name}" has no default rule`);
    return json({ _id: idOf(app, 'default_rule', service.name), ...rule });
  });
  const writeDefaultRule = async (req: HttpRequest, mustExist: boolean) => {
    const { app, service, folder } = clusterOf(req);
    const body = await parseBody(req);
    if (!isObject(body)) throw badRequest('expected a JSON rule {roles, filters}');
    const rule = rolesOf(body);
    await editAppFiles(ctx, app, (files) => {
      const present = files.has(defaultRuleFile(folder));
      if (mustExist && !present) throw new ApiError(404, 'DefaultRuleNotFound', `service "${service.name}" has no default rule`);
      if (!mustExist && present) throw new ApiError(409, 'DefaultRuleAlreadyExists', `service "${service.name}" already has a default rule`);
      files.set(defaultRuleFile(folder), formatJson(rule));
    });
    return { _id: idOf(app, 'default_rule', service.name), ...rule };
  };
  table.post(`${base}/services/:serviceId/default_rule`, async (req) => json(await writeDefaultRule(req, false), 201));
  table.put(`${base}/services/:serviceId/default_rule`, async (req) => { await writeDefaultRule(req, true); });
  table.delete(`${base}/services/:serviceId/default_rule`, async (req) => {
    const { app, folder } = clusterOf(req);
    await editAppFiles(ctx, app, (files) => { files.delete(defaultRuleFile(folder)); });
  });

  const namespaceOf = (body: Json, where: string): { database: string; collection: string } => {
    const database = body.database;
    const collection = body.collection;
    if (typeof database !== 'string' || !NAMESPACE_PART.test(database)) throw badRequest(`"${where}database" must be a database name`);
    if (typeof collection !== 'string' || !NAMESPACE_PART.test(collection)) throw badRequest(`"${where}collection" must be a collection name`);
    return { database, collection };
  };

  table.get(`${base}/services/:serviceId/rules`, async (req) => {
    const { app, service } = clusterOf(req);
    return json(service.collections.filter((c) => c.rules).map((c) => ({
      _id: idOf(app, 'rule', `${service.name}/${c.database}/${c.collection}`), database: c.database, collection: c.collection,
    })));
  });
  table.post(`${base}/services/:serviceId/rules`, async (req) => {
    const { app, service, folder } = clusterOf(req);
    const body = await parseBody(req);
    if (!isObject(body)) throw badRequest('expected a JSON rule {database, collection, roles, filters}');
    const ns = namespaceOf(body, '');
    const rule = { ...ns, ...rolesOf(body) };
    await editAppFiles(ctx, app, (files) => {
      const key = `${folder}/${ns.database}/${ns.collection}/rules.json`;
      if (files.has(key)) throw new ApiError(409, 'RuleAlreadyExists', `a rule for ${ns.database}.${ns.collection} already exists`);
      files.set(key, formatJson(rule));
    });
    return json({ _id: idOf(app, 'rule', `${service.name}/${ns.database}/${ns.collection}`), ...rule }, 201);
  });
  const ruleNamed = async (req: HttpRequest) => {
    const { app, service, folder } = clusterOf(req);
    const found = service.collections.find((c) => c.rules && idOf(app, 'rule', `${service.name}/${c.database}/${c.collection}`) === req.params.ruleId);
    if (!found) throw new ApiError(404, 'RuleNotFound', `rule not found: '${req.params.ruleId}'`);
    return { app, service, key: `${folder}/${found.database}/${found.collection}/rules.json`, ns: { database: found.database, collection: found.collection } };
  };
  table.get(`${base}/services/:serviceId/rules/:ruleId`, async (req) => {
    const { app, key } = await ruleNamed(req);
    return json({ _id: req.params.ruleId, ...(await currentFile(app, key)) });
  });
  table.put(`${base}/services/:serviceId/rules/:ruleId`, async (req) => {
    const { app, key, ns } = await ruleNamed(req);
    const body = await parseBody(req);
    if (!isObject(body)) throw badRequest('expected a JSON rule {roles, filters}');
    await editAppFiles(ctx, app, (files) => { files.set(key, formatJson({ ...ns, ...rolesOf(body) })); });
  });
  table.delete(`${base}/services/:serviceId/rules/:ruleId`, async (req) => {
    const { app, key } = await ruleNamed(req);
    await editAppFiles(ctx, app, (files) => { files.delete(key); });
  });

  // ---- schemas (one per collection, with its relationships) ----
  const schemaId = (app: OpenedApp, service: string, database: string, collection: string) => idOf(app, 'schema', `${service}/${database}/${collection}`);
  const allSchemas = (app: OpenedApp) => app.current().app.dataSources.filter(isClusterSource).flatMap((service) => service.collections
    .filter((c) => c.schema)
    .map((c) => ({ service, collection: c })));
  const schemaView = (app: OpenedApp, entry: ReturnType<typeof allSchemas>[number], full: boolean) => {
    const { service, collection: c } = entry;
    const view: Json = {
      _id: schemaId(app, service.name, c.database, c.collection),
      metadata: { data_source: service.name, database: c.database, collection: c.collection },
    };
    if (full) {
      view.schema = c.schema?.value ?? {};
      view.relationships = c.relationships?.value ?? {};
    }
    return view;
  };
  /** The files a schema constructor writes: its schema.json and relationships.json. */
  const schemaFilesOf = (app: OpenedApp, body: unknown) => {
    if (!isObject(body)) throw badRequest('expected a JSON schema {schema, metadata: {data_source, database, collection}, relationships}');
    const metadata = body.metadata;
    if (!isObject(metadata)) throw badRequest('"metadata" must be {data_source, database, collection}');
    const ns = namespaceOf(metadata, 'metadata.');
    const serviceName = metadata.data_source;
    const service = app.current().app.dataSources.find((d) => d.name === serviceName);
    if (!service || !isClusterSource(service)) throw badRequest(`"metadata.data_source" must name a MongoDB service of the app, not ${JSON.stringify(serviceName)}`);
    const schema = body.schema;
    if (!isObject(schema)) throw badRequest('"schema" must be a JSON schema object');
    const relationships = body.relationships ?? {};
    if (!isObject(relationships) || !Object.values(relationships).every(isObject)) throw badRequest('"relationships" must map source fields to relationships');
    const withKeys = Object.fromEntries(Object.entries(relationships).map(([field, r]) => [field, { ...(r as Json), source_key: (r as Json).source_key ?? field }]));
    const folder = `data_sources/${path.basename(service.dir)}/${ns.database}/${ns.collection}`;
    return { service, ns, folder, schema: { ...schema, bsonType: schema.bsonType ?? 'object' }, relationships: withKeys };
  };

  table.get(`${base}/schemas`, (req) => {
    const app = appOf(req);
    return json(allSchemas(app).map((e) => schemaView(app, e, false)));
  });
  table.post(`${base}/schemas`, async (req) => {
    const app = appOf(req);
    const parsed = schemaFilesOf(app, await parseBody(req));
    await editAppFiles(ctx, app, (files) => {
      if (files.has(`${parsed.folder}/schema.json`)) throw new ApiError(409, 'SchemaAlreadyExists', `a schema for ${parsed.ns.database}.${parsed.ns.collection} already exists`);
      files.set(`${parsed.folder}/schema.json`, formatJson(parsed.schema));
      files.set(`${parsed.folder}/relationships.json`, formatJson(parsed.relationships));
    });
    return json({
      _id: schemaId(app, parsed.service.name, parsed.ns.database, parsed.ns.collection),
      metadata: { data_source: parsed.service.name, ...parsed.ns }, schema: parsed.schema, relationships: parsed.relationships,
    }, 201);
  });
  const schemaNamed = (req: HttpRequest) => {
    const app = appOf(req);
    const entry = allSchemas(app).find((e) => schemaId(app, e.service.name, e.collection.database, e.collection.collection) === req.params.schemaId);
    if (!entry) throw new ApiError(404, 'SchemaNotFound', `schema not found: '${req.params.schemaId}'`);
    return { app, entry, folder: `data_sources/${path.basename(entry.service.dir)}/${entry.collection.database}/${entry.collection.collection}` };
  };
  table.get(`${base}/schemas/:schemaId`, (req) => {
    const { app, entry } = schemaNamed(req);
    return json(schemaView(app, entry, true));
  });
  table.put(`${base}/schemas/:schemaId`, async (req) => {
    const { app, folder } = schemaNamed(req);
    const parsed = schemaFilesOf(app, await parseBody(req));
    await editAppFiles(ctx, app, (files) => {
      if (parsed.folder !== folder) {
        for (const leaf of ['schema.json', 'relationships.json']) files.delete(`${folder}/${leaf}`);
      }
      files.set(`${parsed.folder}/schema.json`, formatJson(parsed.schema));
      files.set(`${parsed.folder}/relationships.json`, formatJson(parsed.relationships));
    });
  });
  table.delete(`${base}/schemas/:schemaId`, async (req) => {
    const { app, folder } = schemaNamed(req);
    await editAppFiles(ctx, app, (files) => {
      for (const leaf of ['schema.json', 'relationships.json']) files.delete(`${folder}/${leaf}`);
    });
  });

  // ---- custom user data (auth/custom_user_data.json; the admin form names the service by id) ----
  table.get(`${base}/custom_user_data`, async (req) => {
    const app = appOf(req);
    const value = (await currentFile(app, 'auth/custom_user_data.json')) ?? { enabled: false };
    const { mongo_service_name: serviceName, on_user_creation_function_name: fn, ...rest } = value;
    return json({
      ...rest,
      ...(typeof serviceName === 'string' ? { mongo_service_id: idOf(app, 'service', serviceName) } : {}),
      ...(typeof fn === 'string' ? { on_user_creation_function_id: idOf(app, 'function', fn) } : {}),
    });
  });
  table.patch(`${base}/custom_user_data`, async (req) => {
    const app = appOf(req);
    const body = await parseBody(req);
    if (!isObject(body)) throw badRequest('expected a JSON body {enabled, mongo_service_id, database_name, collection_name, user_id_field}');
    await editAppFiles(ctx, app, (files) => {
      const current = readJsonFile(files, 'auth/custom_user_data.json') ?? {};
      const next: Json = { ...current };
      for (const key of ['database_name', 'collection_name', 'user_id_field'] as const) {
        if (body[key] === undefined) continue;
        if (typeof body[key] !== 'string') throw badRequest(`"${key}" must be a string`);
        next[key] = body[key];
      }
      if (body.enabled !== undefined) {
        if (typeof body.enabled !== 'boolean') throw badRequest('"enabled" must be a boolean');
        next.enabled = body.enabled;
      }
      if (body.mongo_service_id !== undefined) {
        const service = app.current().app.dataSources.find((d) => idOf(app, 'service', d.name) === body.mongo_service_id);
        if (!service) throw badRequest(`"mongo_service_id": no service with id ${JSON.stringify(body.mongo_service_id)}`);
        next.mongo_service_name = service.name;
      }
      if (body.on_user_creation_function_id !== undefined) {
        const fn = [...app.current().app.functions.keys()].find((name) => idOf(app, 'function', name) === body.on_user_creation_function_id);
        if (!fn) throw badRequest(`"on_user_creation_function_id": no function with id ${JSON.stringify(body.on_user_creation_function_id)}`);
        next.on_user_creation_function_name = fn;
      }
      files.set('auth/custom_user_data.json', formatJson(next));
    });
  });
}

/** The app's third-party services (services/<name>/config.json). */
export async function thirdPartyServices(app: OpenedApp): Promise<Array<{ name: string; type: string; file: string }>> {
  let names: string[] = [];
  try { names = await fsp.readdir(path.join(app.dir, 'services')); } catch { return []; }
  const out = [];
  for (const name of names) {
    const file = path.join(app.dir, 'services', name, 'config.json');
    try {
      const value: unknown = JSON.parse(await fsp.readFile(file, 'utf8'));
      if (isObject(value) && typeof value.type === 'string') out.push({ name: typeof value.name === 'string' ? value.name : name, type: value.type, file });
    } catch { /* not a service folder */ }
  }
  return out;
}

async function exists(file: string): Promise<boolean> {
  try { await fsp.access(file); return true; } catch { return false; }
}

