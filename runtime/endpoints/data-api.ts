// The Data API (`data_api_config.json`): `POST /app/<appId>/endpoint/data/<version>/action/<action>` with
// `{dataSource, database, collection, …}`. Each action is the same store operation as the `mongodb-atlas`
// service action of that name, run through the caller's rules (or as the system user when so configured).
import { EJSON } from 'bson';
import type { AppModel } from '../../core/model';
import { isObject } from '../../core/json';
import { parseEjson } from '../http/ejson';
import { ApiError } from '../http/errors';
import type { Router } from '../http/router';
import type { HttpRequest, HttpResult } from '../http/server';
import { runServiceAction, ServiceActionError, type CollectionResolver } from '../service-actions';
import { StoreError, type Document } from '../store/types';
import { canonicalHeaders, checkCanEvaluate, contextRequest, resolveCaller, toApiError, validateRequest, type AuthenticationSettings, type Caller } from './access';
import { ENDPOINT_BASE } from './custom';
import { DATA_API_USER_ID_SCRIPT } from './sources';
import type { EndpointDeps } from './types';
import { encodeBody, negotiateReturnType, returnTypeOf, type ReturnType } from './response-formats';

const DATA_API_ROUTE = `${ENDPOINT_BASE}/data/:version/action/:action`;
/** `beta` is the API's pre-release version; it has the same actions and is always served while the API is enabled. */
const ALWAYS_SERVED_VERSIONS = ['beta'];

interface DataApiSettings {
  versions: string[];
  returnType: ReturnType;
  validationMethod?: string;
  secretName?: string;
  authentication: AuthenticationSettings;
  canEvaluate: unknown;
  logArguments: boolean;
}

type Body = Record<string, unknown>;

interface DataAction {
  /** Keys the body must carry, with their kind. */
  required: Array<[string, 'object' | 'array']>;
  run(collections: CollectionResolver, body: Body): Promise<unknown>;
}

const target = (b: Body) => ({ database: b.database, collection: b.collection });
const service = (action: string, args: (b: Body) => Record<string, unknown>, shape: (result: unknown) => unknown = (r) => r) =>
  async (collections: CollectionResolver, b: Body) => shape(await runServiceAction(collections, b.dataSource as string, action, { ...target(b), ...args(b) }));

const ACTIONS: Record<string, DataAction> = {
  findOne: { required: [], run: service('findOne', (b) => ({ query: b.filter, project: b.projection }), (document) => ({ document })) },
  find: { required: [], run: service('find', (b) => ({ query: b.filter, project: b.projection, sort: b.sort, limit: b.limit, skip: b.skip }), (documents) => ({ documents })) },
  insertOne: { required: [['document', 'object']], run: service('insertOne', (b) => ({ document: b.document })) },
  insertMany: { required: [['documents', 'array']], run: service('insertMany', (b) => ({ documents: b.documents })) },
  updateOne: { required: [['filter', 'object'], ['update', 'object']], run: service('updateOne', (b) => ({ query: b.filter, update: b.update, upsert: b.upsert })) },
  updateMany: { required: [['filter', 'object'], ['update', 'object']], run: service('updateMany', (b) => ({ query: b.filter, update: b.update, upsert: b.upsert })) },
  // The service actions have no replaceOne; it is the same store operation, called directly.
  replaceOne: {
    required: [['filter', 'object'], ['replacement', 'object']],
    async run(collections, b) {
      const collection = collections(b.dataSource as string, b.database as string, b.collection as string);
      try {
        return await collection.replaceOne(b.filter as Document, b.replacement as Document, { upsert: b.upsert === true });
      } catch (e) {
        if (e instanceof StoreError) throw new ServiceActionError('MongoDBError', e.message);
        throw e;
      }
    },
  },
  deleteOne: { required: [['filter', 'object']], run: service('deleteOne', (b) => ({ query: b.filter })) },
  deleteMany: { required: [['filter', 'object']], run: service('deleteMany', (b) => ({ query: b.filter })) },
  aggregate: { required: [['pipeline', 'array']], run: service('aggregate', (b) => ({ pipeline: b.pipeline }), (documents) => ({ documents })) },
};

export function registerDataApi(router: Router, deps: EndpointDeps, checkApp: (req: HttpRequest) => void): void {
  router.post(DATA_API_ROUTE, async (req) => {
    checkApp(req);
    const settings = dataApiSettings(deps.app);
    if (typeof settings === 'string') throw new ApiError(404, 'NotFound', settings);
    const { version, action: actionName } = req.params as { version: string; action: string };
    if (!settings.versions.includes(version) && !ALWAYS_SERVED_VERSIONS.includes(version)) {
      throw new ApiError(404, 'NotFound', `Data API version '${version}' is not enabled (enabled: ${settings.versions.join(', ') || 'none'})`);
    }
    const action = Object.hasOwn(ACTIONS, actionName) ? ACTIONS[actionName]! : undefined;
    if (!action) throw new ApiError(404, 'ServiceCommandNotFound', `'${actionName}' is not a Data API action (actions: ${Object.keys(ACTIONS).join(', ')})`);
    return serveAction(deps, settings, actionName, action, req);
  });
}

async function serveAction(deps: EndpointDeps, settings: DataApiSettings, actionName: string, action: DataAction, req: HttpRequest): Promise<HttpResult> {
  const text = await req.text();
  validateRequest(deps, { method: settings.validationMethod, secretName: settings.secretName, owner: 'the Data API' }, req, text);
  const body = parseBody(text, actionName, action);
  const request = { ...contextRequest(req, canonicalHeaders(req)), action: actionName, service: body.dataSource };
  const caller = await resolveCaller(deps, settings.authentication, req, [body], request);
  await checkCanEvaluate(deps, settings.canEvaluate, 'the Data API', caller, [body], request);
  if (settings.logArguments) deps.log.info(`[data api] ${actionName} ${EJSON.stringify(body as never, { relaxed: true })}`);
  const principal = principalOf(caller);
  let result: unknown;
  try {
    result = await action.run((s, d, c) => deps.collectionFor(principal, s, d, c), body);
  } catch (e) {
    throw toApiError(e);
  }
  return { status: 200, ...encodeBody(result, negotiateReturnType(req.headers.accept, settings.returnType)) };
}

function principalOf(caller: Caller) {
  return caller.kind === 'system' ? 'system' as const : caller.user;
}

function parseBody(text: string, actionName: string, action: DataAction): Body {
  if (text.trim() === '') throw new ApiError(400, 'InvalidParameter', `${actionName} needs a JSON body with dataSource, database and collection`);
  let body: unknown;
  try { body = parseEjson(text); } catch (e) {
    throw new ApiError(400, 'BadRequest', `invalid JSON body: ${(e as Error).message}`);
  }
  if (!isObject(body)) throw new ApiError(400, 'InvalidParameter', 'the request body must be a JSON object');
  for (const key of ['dataSource', 'database', 'collection']) {
    if (typeof body[key] !== 'string' || body[key] === '') throw new ApiError(400, 'InvalidParameter', `${actionName} needs a non-empty string '${key}'`);
  }
  for (const [key, kind] of action.required) {
    const ok = kind === 'array' ? Array.isArray(body[key]) : isObject(body[key]);
    if (!ok) throw new ApiError(400, 'InvalidParameter', `${actionName} needs '${key}' as ${kind === 'array' ? 'an array' : 'an object'}`);
  }
  return body;
}

/** The settings, or why the Data API is not served. */
function dataApiSettings(app: AppModel): DataApiSettings | string {
  const file = app.dataApiConfig;
  const where = `${app.endpointsFolder ?? 'https_endpoints'}/data_api_config.json`;
  if (!file || !isObject(file.value)) return `the Data API is not enabled for this app: add ${where} with "disabled": false`;
  const c = file.value;
  if (c.disabled === true) return `the Data API is disabled for this app: set "disabled": false in ${where}`;
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const runAsUserId = text(c.run_as_user_id);
  return {
    versions: Array.isArray(c.versions) ? c.versions.filter((v): v is string => typeof v === 'string') : ['v1'],
    returnType: returnTypeOf(c.return_type),
    ...(text(c.validation_method) ? { validationMethod: text(c.validation_method) } : {}),
    ...(text(c.secret_name) ? { secretName: text(c.secret_name) } : {}),
    authentication: {
      runAsSystem: c.run_as_system === true,
      ...(runAsUserId ? { runAsUserId } : {}),
      ...(text(c.run_as_user_id_script_source) ? { userIdScript: DATA_API_USER_ID_SCRIPT } : {}),
      fetchCustomUserData: c.fetch_custom_user_data === true,
    },
    canEvaluate: c.can_evaluate,
    logArguments: c.log_function_arguments === true,
  };
}
