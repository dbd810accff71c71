// Admin API routes that build an app's code and settings piece by piece, as the SDKs' test harnesses do
// (`baas_admin_api.cpp`): functions (functions/config.json and functions/<name>.js), secrets (the app's
// local secrets.json, never exported, values never answered) and values (values/<name>.json).
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isObject } from '../../core/json';
import { formatJson, type FileMap } from '../../core/transfer/appJson';
import { ApiError, badRequest } from '../http/errors';
import type { HttpRequest } from '../http/server';
import type { OpenedApp } from './apps';
import { editAppFiles, workOf } from './appRoutes';
import { idOf } from './ids';
import { parseBody, optionalBoolean, requiredString } from './bodies';
import type { AdminContext } from './routes';
import { json, type AdminRouteTable } from './table';

const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_-]*(\/[A-Za-z0-9_-]+)*$/;
const SECRET_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const VALUE_NAME = SECRET_NAME;
/** A function's source, as the platform bounds it. */
const MAX_SOURCE = 2 * 1024 * 1024;
const MAX_SECRET = 64 * 1024;

type FunctionEntry = Record<string, unknown> & { name: string };

const FUNCTION_FIELDS = ['can_evaluate', 'run_as_system', 'run_as_user_id', 'run_as_user_id_script_source', 'disable_arg_logs'] as const;

export function registerFunctionRoutes(table: AdminRouteTable, ctx: AdminContext): void {
  const { apps } = ctx;
  const appOf = (req: HttpRequest) => apps.get(req.params.groupId!, req.params.appId!);
  const base = '/groups/:groupId/apps/:appId';

  // ---- functions ----
  const readManifest = (files: FileMap): FunctionEntry[] => {
    const text = files.get('functions/config.json');
    if (text === undefined) return [];
    const value: unknown = JSON.parse(text);
    if (!Array.isArray(value)) throw badRequest('functions/config.json is not an array of functions');
    return value.filter((f): f is FunctionEntry => isObject(f) && typeof f.name === 'string');
  };
  const currentManifest = async (app: OpenedApp): Promise<FunctionEntry[]> => {
    try { return readManifest(new Map([['functions/config.json', await fsp.readFile(path.join(app.dir, 'functions', 'config.json'), 'utf8')]])); } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
  };
  const functionNamed = async (req: HttpRequest) => {
    const app = appOf(req);
    const found = (await currentManifest(app)).find((f) => idOf(app, 'function', f.name) === req.params.functionId);
    if (!found) throw new ApiError(404, 'FunctionNotFound', `function not found: '${req.params.functionId}'`);
    return { app, entry: found };
  };
  /** The manifest entry and source a function constructor describes. */
  const functionOf = (body: unknown): { entry: FunctionEntry; source: string } => {
    if (!isObject(body)) throw badRequest('expected a JSON function {name, source, private, can_evaluate, run_as_system}');
    const name = requiredString(body, 'name');
    if (!FUNCTION_NAME.test(name) || name.length > 256) throw badRequest(`invalid function name "${name}": letters, digits, _ and -, in /-separated parts`);
    const source = requiredString(body, 'source');
    if (source.length > MAX_SOURCE) throw badRequest(`"source" is over ${MAX_SOURCE} characters`);
    const entry: FunctionEntry = { name, private: optionalBoolean(body, 'private') ?? false };
    if (body.can_evaluate !== undefined && !isObject(body.can_evaluate)) throw badRequest('"can_evaluate" must be a rule expression (an object)');
    for (const key of FUNCTION_FIELDS) if (body[key] !== undefined) entry[key] = body[key];
    for (const key of ['run_as_system', 'disable_arg_logs'] as const) optionalBoolean(body, key);
    for (const key of ['run_as_user_id', 'run_as_user_id_script_source'] as const) if (body[key] !== undefined && typeof body[key] !== 'string') throw badRequest(`"${key}" must be a string`);
    return { entry, source };
  };
  const sourceFile = (name: string) => `functions/${name}.js`;
  const functionView = (app: OpenedApp, entry: FunctionEntry, source?: string) => ({
    _id: idOf(app, 'function', entry.name), ...entry, ...(source !== undefined ? { source } : {}),
  });

  table.get(`${base}/functions`, async (req) => {
    const app = appOf(req);
    return json((await currentManifest(app)).map((f) => ({ _id: idOf(app, 'function', f.name), name: f.name, private: f.private === true })));
  });
  table.post(`${base}/functions`, async (req) => {
    const app = appOf(req);
    const { entry, source } = functionOf(await parseBody(req));
    await editAppFiles(ctx, app, (files) => {
      const manifest = readManifest(files);
      if (manifest.some((f) => f.name === entry.name)) throw new ApiError(409, 'FunctionDuplicateName', `a function named "${entry.name}" already exists`);
      files.set('functions/config.json', formatJson([...manifest, entry]));
      files.set(sourceFile(entry.name), source);
    });
    return json(functionView(app, entry), 201);
  });
  table.get(`${base}/functions/:functionId`, async (req) => {
    const { app, entry } = await functionNamed(req);
    let source = '';
    try { source = await fsp.readFile(path.join(app.dir, ...sourceFile(entry.name).split('/')), 'utf8'); } catch { /* no source file yet */ }
    return json(functionView(app, entry, source));
  });
  table.put(`${base}/functions/:functionId`, async (req) => {
    const { app, entry: old } = await functionNamed(req);
    const { entry, source } = functionOf(await parseBody(req));
    await editAppFiles(ctx, app, (files) => {
      const manifest = readManifest(files);
      if (entry.name !== old.name && manifest.some((f) => f.name === entry.name)) throw new ApiError(409, 'FunctionDuplicateName', `a function named "${entry.name}" already exists`);
      files.set('functions/config.json', formatJson(manifest.map((f) => (f.name === old.name ? entry : f))));
      if (entry.name !== old.name) files.delete(sourceFile(old.name));
      files.set(sourceFile(entry.name), source);
    });
  });
  table.delete(`${base}/functions/:functionId`, async (req) => {
    const { app, entry } = await functionNamed(req);
    await editAppFiles(ctx, app, (files) => {
      files.set('functions/config.json', formatJson(readManifest(files).filter((f) => f.name !== entry.name)));
      files.delete(sourceFile(entry.name));
    });
  });

  // ---- secrets (secrets.json at the app root: local, never exported; a value is never answered) ----
  const secretsFile = (app: OpenedApp) => path.join(app.dir, 'secrets.json');
  const readSecrets = async (app: OpenedApp): Promise<Record<string, string>> => {
    try {
      const value: unknown = JSON.parse(await fsp.readFile(secretsFile(app), 'utf8'));
      if (!isObject(value)) return {};
      return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw e;
    }
  };
  const writeSecrets = (app: OpenedApp, change: (all: Record<string, string>) => void) => workOf(app).serial(async () => {
    const all = await readSecrets(app);
    change(all);
    const file = secretsFile(app);
    const tmp = `${file}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(all, null, 2) + '\n', { mode: 0o600 });
    await fsp.rename(tmp, file);
    await app.reload();
  });
  const secretOf = (body: unknown): { name: string; value: string } => {
    if (!isObject(body)) throw badRequest('expected a JSON secret {name, value}');
    const name = requiredString(body, 'name');
    if (!SECRET_NAME.test(name)) throw badRequest(`invalid secret name "${name}": a letter, then letters, digits, _ or - (at most 64)`);
    const value = requiredString(body, 'value');
    if (value.length > MAX_SECRET) throw badRequest(`"value" is over ${MAX_SECRET} characters`);
    return { name, value };
  };
  const secretNamed = async (req: HttpRequest) => {
    const app = appOf(req);
    const name = Object.keys(await readSecrets(app)).find((n) => idOf(app, 'secret', n) === req.params.secretId);
    if (name === undefined) throw new ApiError(404, 'SecretNotFound', `secret not found: '${req.params.secretId}'`);
    return { app, name };
  };

  table.get(`${base}/secrets`, async (req) => {
    const app = appOf(req);
    return json(Object.keys(await readSecrets(app)).map((name) => ({ _id: idOf(app, 'secret', name), name })));
  });
  table.post(`${base}/secrets`, async (req) => {
    const app = appOf(req);
    const secret = secretOf(await parseBody(req));
    await writeSecrets(app, (all) => {
      if (Object.hasOwn(all, secret.name)) throw new ApiError(409, 'SecretAlreadyExists', `a secret named "${secret.name}" already exists`);
      all[secret.name] = secret.value;
    });
    return json({ _id: idOf(app, 'secret', secret.name), name: secret.name }, 201);
  });
  table.put(`${base}/secrets/:secretId`, async (req) => {
    const { app, name } = await secretNamed(req);
    const body = await parseBody(req);
    const secret = secretOf(isObject(body) && body.name === undefined ? { ...body, name } : body);
    await writeSecrets(app, (all) => {
      if (secret.name !== name && Object.hasOwn(all, secret.name)) throw new ApiError(409, 'SecretAlreadyExists', `a secret named "${secret.name}" already exists`);
      delete all[name];
      all[secret.name] = secret.value;
    });
  });
  table.delete(`${base}/secrets/:secretId`, async (req) => {
    const { app, name } = await secretNamed(req);
    await writeSecrets(app, (all) => { delete all[name]; });
  });

  // ---- values (values/<name>.json) ----
  const valueOf = (body: unknown): Record<string, unknown> & { name: string } => {
    if (!isObject(body)) throw badRequest('expected a JSON value {name, value, from_secret}');
    const name = requiredString(body, 'name');
    if (!VALUE_NAME.test(name)) throw badRequest(`invalid value name "${name}": a letter, then letters, digits, _ or - (at most 64)`);
    const fromSecret = optionalBoolean(body, 'from_secret') ?? false;
    if (fromSecret && typeof body.value !== 'string') throw badRequest('a value from a secret names the secret: "value" must be a string');
    if (body.value === undefined) throw badRequest('"value" is required');
    return { name, from_secret: fromSecret, value: body.value };
  };
  const valueFiles = (files: FileMap) => [...files.keys()].filter((k) => /^values\/[^/]+\.json$/.test(k));
  const valuesIn = (files: FileMap) => valueFiles(files).map((file) => {
    const value: unknown = JSON.parse(files.get(file)!);
    return { file, value: isObject(value) && typeof value.name === 'string' ? value as Record<string, unknown> & { name: string } : undefined };
  }).filter((v): v is { file: string; value: Record<string, unknown> & { name: string } } => v.value !== undefined);
  const currentValues = async (app: OpenedApp) => {
    const files: FileMap = new Map();
    let names: string[] = [];
    try { names = await fsp.readdir(path.join(app.dir, 'values')); } catch { /* no values yet */ }
    for (const n of names) if (n.endsWith('.json')) files.set(`values/${n}`, await fsp.readFile(path.join(app.dir, 'values', n), 'utf8'));
    return valuesIn(files);
  };
  const valueNamed = async (req: HttpRequest) => {
    const app = appOf(req);
    const found = (await currentValues(app)).find((v) => idOf(app, 'value', v.value.name) === req.params.valueId);
    if (!found) throw new ApiError(404, 'ValueNotFound', `value not found: '${req.params.valueId}'`);
    return { app, found };
  };
  /** A value from a secret shows the secret's name, never its value (that is what the file holds). */
  const valueView = (app: OpenedApp, v: Record<string, unknown> & { name: string }) => ({ _id: idOf(app, 'value', v.name), ...v });

  table.get(`${base}/values`, async (req) => {
    const app = appOf(req);
    return json((await currentValues(app)).map((v) => ({ _id: idOf(app, 'value', v.value.name), name: v.value.name, from_secret: v.value.from_secret === true })));
  });
  table.post(`${base}/values`, async (req) => {
    const app = appOf(req);
    const value = valueOf(await parseBody(req));
    await editAppFiles(ctx, app, (files) => {
      if (valuesIn(files).some((v) => v.value.name === value.name)) throw new ApiError(409, 'ValueDuplicateName', `a value named "${value.name}" already exists`);
      files.set(`values/${value.name}.json`, formatJson(value));
    });
    return json(valueView(app, value), 201);
  });
  table.get(`${base}/values/:valueId`, async (req) => {
    const { app, found } = await valueNamed(req);
    return json(valueView(app, found.value));
  });
  table.put(`${base}/values/:valueId`, async (req) => {
    const { app, found } = await valueNamed(req);
    const value = valueOf(await parseBody(req));
    await editAppFiles(ctx, app, (files) => {
      if (value.name !== found.value.name && valuesIn(files).some((v) => v.value.name === value.name)) throw new ApiError(409, 'ValueDuplicateName', `a value named "${value.name}" already exists`);
      files.delete(found.file);
      files.set(`values/${value.name}.json`, formatJson(value));
    });
  });
  table.delete(`${base}/values/:valueId`, async (req) => {
    const { app, found } = await valueNamed(req);
    await editAppFiles(ctx, app, (files) => { files.delete(found.file); });
  });
}
