// The JSON form of an app that the platform CLI sends to `POST …/import` (admin-api-wire.md §6, config
// 20210101), both ways: from an app's files (what `asl push` and the platform CLI send) and back to files
// (what the Admin API writes). Files are a map of relative POSIX path → text. Going back, each item keeps
// the file it already has (matched by name, as `strategy=replace-by-name` does), so a pull followed by a
// push of unchanged files changes nothing. Pure: no file system.
import { parse as parseJsonc, type ParseError } from 'jsonc-parser';

export type FileMap = Map<string, string>;

/** A file the JSON form cannot hold (hosting files, secrets, packages, README…): never diffed, never deleted by an import. */
export function isTransferredPath(rel: string): boolean {
  const p = rel.split('/');
  if (rel === 'realm_config.json' || rel === 'auth/providers.json' || rel === 'auth/custom_user_data.json' || rel === 'sync/config.json') return true;
  if (p.length === 2 && ['environments', 'values', 'triggers', 'log_forwarders'].includes(p[0]!) && p[1]!.endsWith('.json')) return true;
  if (p[0] === 'functions') return rel === 'functions/config.json' || (rel.endsWith('.js') && !p.includes('node_modules'));
  if (p[0] === 'graphql') return rel === 'graphql/config.json' || (p.length === 3 && p[1] === 'custom_resolvers' && p[2]!.endsWith('.json'));
  if (p[0] === 'http_endpoints' || p[0] === 'https_endpoints') return p.length === 2 && (p[1] === 'config.json' || p[1] === 'data_api_config.json');
  if (p[0] === 'data_sources') {
    if (p.length === 3) return p[2] === 'config.json' || p[2] === 'default_rule.json';
    if (p.length === 5) return ['rules.json', 'schema.json', 'relationships.json'].includes(p[4]!);
  }
  return false;
}

export class AppJsonError extends Error {
  constructor(readonly file: string, message: string) { super(`${file}: ${message}`); }
}

function read(files: FileMap, rel: string): unknown {
  const text = files.get(rel);
  if (text === undefined) return undefined;
  const errors: ParseError[] = [];
  const value = parseJsonc(text, errors, { allowTrailingComma: true });
  if (errors.length) throw new AppJsonError(rel, `is not valid JSON (at offset ${errors[0]!.offset})`);
  return value;
}

const byPath = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The import body of an app's files (the shape `realm-cli push` sends). */
export function filesToAppJson(files: FileMap): Record<string, unknown> {
  const paths = [...files.keys()].filter(isTransferredPath).sort(byPath);
  const under = (dir: string) => paths.filter((p) => p.startsWith(dir + '/') && p.split('/').length === 2 && p.endsWith('.json'));
  const root = read(files, 'realm_config.json');
  if (!isRecord(root)) throw new AppJsonError('realm_config.json', 'missing or not an object');
  const out: Record<string, unknown> = { ...root };

  out.environments = Object.fromEntries(under('environments').map((p) => [p.slice('environments/'.length), read(files, p)]));
  out.values = under('values').map((p) => read(files, p));

  const auth: Record<string, unknown> = {};
  if (files.has('auth/custom_user_data.json')) auth.custom_user_data = read(files, 'auth/custom_user_data.json');
  if (files.has('auth/providers.json')) auth.providers = read(files, 'auth/providers.json');
  out.auth = auth;

  const functions: Record<string, unknown> = {};
  if (files.has('functions/config.json')) functions.config = read(files, 'functions/config.json');
  const sources = paths.filter((p) => p.startsWith('functions/') && p.endsWith('.js'));
  if (sources.length) functions.sources = Object.fromEntries(sources.map((p) => [p.slice('functions/'.length), files.get(p)!]));
  out.functions = functions;

  out.triggers = under('triggers').map((p) => read(files, p));

  const dataSources: unknown[] = [];
  for (const configPath of paths.filter((p) => /^data_sources\/[^/]+\/config\.json$/.test(p))) {
    const dir = configPath.slice(0, -'/config.json'.length);
    const source: Record<string, unknown> = { config: read(files, configPath) };
    if (files.has(`${dir}/default_rule.json`)) source.default_rule = read(files, `${dir}/default_rule.json`);
    const collections = new Set(paths.filter((p) => p.startsWith(dir + '/') && p.split('/').length === 5).map((p) => p.split('/').slice(2, 4).join('/')));
    source.rules = [...collections].sort(byPath).map((dbColl) => {
      const [database, collection] = dbColl.split('/');
      const base = `${dir}/${dbColl}`;
      const rule = read(files, `${base}/rules.json`);
      const entry: Record<string, unknown> = isRecord(rule) ? { ...rule } : { database, collection };
      if (files.has(`${base}/schema.json`)) entry.schema = read(files, `${base}/schema.json`);
      if (files.has(`${base}/relationships.json`)) entry.relationships = read(files, `${base}/relationships.json`);
      return entry;
    });
    dataSources.push(source);
  }
  out.data_sources = dataSources;

  const endpointsDir = paths.find((p) => /^https?_endpoints\//.test(p))?.split('/')[0] ?? 'http_endpoints';
  out.endpoints = files.has(`${endpointsDir}/config.json`) ? { config: read(files, `${endpointsDir}/config.json`) } : {};
  if (files.has(`${endpointsDir}/data_api_config.json`)) out.data_api_config = read(files, `${endpointsDir}/data_api_config.json`);

  const graphql: Record<string, unknown> = {};
  if (files.has('graphql/config.json')) graphql.config = read(files, 'graphql/config.json');
  const resolvers = paths.filter((p) => p.startsWith('graphql/custom_resolvers/'));
  if (resolvers.length) graphql.custom_resolvers = resolvers.map((p) => read(files, p));
  out.graphql = graphql;

  out.sync = files.has('sync/config.json') ? { config: read(files, 'sync/config.json') } : {};
  out.log_forwarders = under('log_forwarders').map((p) => read(files, p));
  out.secrets = {};
  return out;
}

/** Top-level keys of the import body that are not `realm_config.json` fields. */
const SECTION_KEYS = new Set(['environments', 'values', 'auth', 'functions', 'triggers', 'data_sources', 'http_endpoints', 'endpoints', 'data_api_config', 'services', 'graphql', 'sync', 'secrets', 'log_forwarders', 'hosting', 'dependencies']);

/**
 * The transferred files an import body describes. `existing` (the app's files now) decides file names:
 * an item whose name matches an existing file's item keeps that file, and a file whose content means
 * the same keeps its text.
 */
export function appJsonToFiles(body: unknown, existing: FileMap): FileMap {
  if (!isRecord(body)) throw new AppJsonError('(import body)', 'expected a JSON object describing the app');
  const out: FileMap = new Map();
  const put = (rel: string, value: unknown) => {
    if (!isSafeRelativePath(rel)) throw new AppJsonError(rel, 'is not a relative path inside the app');
    const old = existing.get(rel);
    if (old !== undefined && !rel.endsWith('.js')) {
      try { if (sameJson(JSON.parse(old), value)) { out.set(rel, old); return; } } catch { /* rewritten below */ }
    }
    out.set(rel, typeof value === 'string' && rel.endsWith('.js') ? value : formatJson(value));
  };
  const existingNames = (dir: string, key: (v: Record<string, unknown>) => string | undefined) => {
    const names = new Map<string, string>();
    for (const [rel, text] of existing) {
      if (!rel.startsWith(dir + '/') || rel.split('/').length !== dir.split('/').length + 1 || !rel.endsWith('.json')) continue;
      try { const v: unknown = JSON.parse(text); const k = isRecord(v) ? key(v) : undefined; if (k !== undefined) names.set(k, rel); } catch { /* not matched by name */ }
    }
    return names;
  };
  const listInto = (dir: string, items: unknown, key: (v: Record<string, unknown>) => string | undefined, fileName: (v: Record<string, unknown>, i: number) => string) => {
    if (items === undefined) return;
    if (!Array.isArray(items)) throw new AppJsonError(dir, 'expected an array');
    const names = existingNames(dir, key);
    items.forEach((item, i) => {
      if (!isRecord(item)) throw new AppJsonError(`${dir}[${i}]`, 'expected an object');
      const k = key(item);
      put((k !== undefined && names.get(k)) || `${dir}/${fileName(item, i)}`, item);
    });
  };
  const nameOf = (v: Record<string, unknown>) => (typeof v.name === 'string' ? v.name : undefined);
  const fileSafe = (s: string) => s.replace(/[^A-Za-z0-9_.-]+/g, '_');

  const rootConfig = Object.fromEntries(Object.entries(body).filter(([k]) => !SECTION_KEYS.has(k)));
  put('realm_config.json', rootConfig);

  if (body.environments !== undefined) {
    if (!isRecord(body.environments)) throw new AppJsonError('environments', 'expected an object keyed by file name');
    for (const [file, value] of Object.entries(body.environments)) put(`environments/${file.endsWith('.json') ? file : `${file}.json`}`, value);
  }
  listInto('values', body.values, nameOf, (v, i) => `${fileSafe(nameOf(v) ?? `value${i}`)}.json`);

  const auth = body.auth;
  if (isRecord(auth)) {
    if (auth.custom_user_data !== undefined) put('auth/custom_user_data.json', auth.custom_user_data);
    if (auth.providers !== undefined) put('auth/providers.json', auth.providers);
  }

  const functions = body.functions;
  if (isRecord(functions)) {
    if (functions.config !== undefined) put('functions/config.json', functions.config);
    if (functions.sources !== undefined) {
      if (!isRecord(functions.sources)) throw new AppJsonError('functions.sources', 'expected an object of path → source');
      for (const [file, source] of Object.entries(functions.sources)) {
        if (typeof source !== 'string') throw new AppJsonError(`functions/${file}`, 'the source must be a string');
        put(`functions/${file}`, source);
      }
    }
  }

  listInto('triggers', body.triggers, nameOf, (v, i) => `${fileSafe(nameOf(v) ?? `trigger${i}`)}.json`);

  if (body.data_sources !== undefined) {
    if (!Array.isArray(body.data_sources)) throw new AppJsonError('data_sources', 'expected an array');
    const folderOfName = new Map<string, string>();
    for (const [rel, text] of existing) {
      const m = /^data_sources\/([^/]+)\/config\.json$/.exec(rel);
      if (!m) continue;
      try { const v: unknown = JSON.parse(text); if (isRecord(v) && typeof v.name === 'string') folderOfName.set(v.name, m[1]!); } catch { /* not matched by name */ }
    }
    body.data_sources.forEach((source, i) => {
      if (!isRecord(source) || !isRecord(source.config) || typeof source.config.name !== 'string') throw new AppJsonError(`data_sources[${i}]`, 'expected {config: {name, type, config}, rules}');
      const dir = `data_sources/${folderOfName.get(source.config.name) ?? fileSafe(source.config.name)}`;
      put(`${dir}/config.json`, source.config);
      if (source.default_rule !== undefined) put(`${dir}/default_rule.json`, source.default_rule);
      const rules = source.rules ?? [];
      if (!Array.isArray(rules)) throw new AppJsonError(`data_sources[${i}].rules`, 'expected an array');
      rules.forEach((rule, j) => {
        if (!isRecord(rule) || typeof rule.database !== 'string' || typeof rule.collection !== 'string') {
          throw new AppJsonError(`data_sources[${i}].rules[${j}]`, 'expected an object with "database" and "collection"');
        }
        const base = `${dir}/${rule.database}/${rule.collection}`;
        const { schema, relationships, ...rest } = rule;
        if (schema !== undefined) put(`${base}/schema.json`, schema);
        if (relationships !== undefined) put(`${base}/relationships.json`, relationships);
        const onlyNames = Object.keys(rest).every((k) => k === 'database' || k === 'collection');
        if (!onlyNames || existing.has(`${base}/rules.json`)) put(`${base}/rules.json`, rest);
      });
    });
  }

  const endpointsDir = [...existing.keys()].find((p) => /^https?_endpoints\//.test(p))?.split('/')[0] ?? 'http_endpoints';
  if (isRecord(body.endpoints) && body.endpoints.config !== undefined) put(`${endpointsDir}/config.json`, body.endpoints.config);
  if (body.data_api_config !== undefined) put(`${endpointsDir}/data_api_config.json`, body.data_api_config);

  const graphql = body.graphql;
  if (isRecord(graphql)) {
    if (graphql.config !== undefined) put('graphql/config.json', graphql.config);
    const resolverKey = (v: Record<string, unknown>) => (typeof v.on_type === 'string' && typeof v.field_name === 'string' ? `${v.on_type}.${v.field_name}` : undefined);
    listInto('graphql/custom_resolvers', graphql.custom_resolvers, resolverKey,
      (v, i) => `${fileSafe(resolverKey(v) ? `${String(v.on_type).toLowerCase()}_${String(v.field_name)}` : `resolver${i}`)}.json`);
  }
  if (isRecord(body.sync) && body.sync.config !== undefined) put('sync/config.json', body.sync.config);
  listInto('log_forwarders', body.log_forwarders, nameOf, (v, i) => `${fileSafe(nameOf(v) ?? `forwarder${i}`)}.json`);
  return out;
}

export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** Equal as JSON values: object key order does not matter, array order does. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
  if (isRecord(a) && isRecord(b) && !Array.isArray(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJson(a[k], b[k]));
  }
  return false;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isSafeRelativePath(rel: string): boolean {
  return rel.length > 0 && !rel.startsWith('/') && !rel.includes('\\') && !rel.includes('\0') && rel.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}
