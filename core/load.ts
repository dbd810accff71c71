// Loads an exported app (legacy, 20210101 or 20230101 generation) into one AppModel.
// Loading never throws on bad content: unreadable or broken files become diagnostics and the rest loads.
import path from 'node:path';
import type { AppFileSystem, DirEntry } from './fs';
import { DiagnosticSink } from './diagnostics';
import { JsonFile, TextFile, isObject, type JSONPath } from './json';
import type {
  AppEnvironment, AppFunction, AppModel, AppValue, AuthProvider, Collection, CustomResolver, CustomUserDataConfig,
  DataSource, Endpoint, Generation, GraphqlConfig, SyncConfig, Trigger,
} from './model';

/** Root files in lookup order (config-format §2.1); a root-level `config.json` is a legacy root file. */
export const ROOT_FILE_NAMES = ['root_config.json', 'realm_config.json', 'stitch.json', 'config.json'] as const;
const SKIPPED_FOLDERS = new Set(['node_modules', '.git', '.asl']);
/** Where a local runtime keeps its sync state in its default data folder (runtime/sync). */
export const RUNTIME_SYNC_STATE_FILE = '.asl/sync/state.json';
/** Files bigger than this are not parsed: a config file of this size is a mistake, and parsing it would stall the editor. */
export const MAX_CONFIG_FILE_BYTES = 5 * 1024 * 1024;

/**
 * Re-parsing is the main cost of reloading an app after one edit; a cache keyed by path reuses the
 * parsed file while its text is unchanged.
 */
export class ParseCache {
  private readonly files = new Map<string, TextFile>();
  json(absPath: string, relPath: string, text: string): JsonFile {
    const hit = this.files.get(absPath);
    if (hit instanceof JsonFile && hit.text === text && hit.relPath === relPath) return hit;
    const file = new JsonFile(absPath, relPath, text);
    this.files.set(absPath, file);
    return file;
  }
  text(absPath: string, relPath: string, text: string): TextFile {
    const hit = this.files.get(absPath);
    if (hit && !(hit instanceof JsonFile) && hit.text === text && hit.relPath === relPath) return hit;
    const file = new TextFile(absPath, relPath, text);
    this.files.set(absPath, file);
    return file;
  }
  delete(absPath: string): void { this.files.delete(absPath); }
}

/** Is `dir` an app root? Returns the root file's name when it is. */
export async function rootFileOf(fs: AppFileSystem, dir: string): Promise<string | undefined> {
  const entries = await fs.readDir(dir);
  if (!entries) return undefined;
  const names = new Set(entries.filter((e) => !e.isDirectory).map((e) => e.name));
  for (const name of ROOT_FILE_NAMES) {
    if (!names.has(name)) continue;
    if (name !== 'config.json') return name;
    // A `config.json` is a root only when it looks like a legacy root file; inside sub-folders it is ordinary.
    const text = await fs.readFile(path.join(dir, name));
    const value = text === undefined ? undefined : new JsonFile(path.join(dir, name), name, text).value;
    if (isObject(value) && ('config_version' in value || 'app_id' in value)) return name;
  }
  return undefined;
}

/** Every app root at or below `dir` (app roots are not searched inside). */
export async function findAppRoots(fs: AppFileSystem, dir: string, maxDepth = 6): Promise<string[]> {
  const roots: string[] = [];
  async function walk(current: string, depth: number): Promise<void> {
    if (await rootFileOf(fs, current)) { roots.push(current); return; }
    if (depth >= maxDepth) return;
    const entries = (await fs.readDir(current)) ?? [];
    for (const e of entries) {
      if (e.isDirectory && !SKIPPED_FOLDERS.has(e.name) && !e.name.startsWith('.')) await walk(path.join(current, e.name), depth + 1);
    }
  }
  await walk(path.resolve(dir), 0);
  return roots.sort();
}

/** The app root containing `start` (itself or up to 8 parents, as the platform CLI searches). */
export async function findAppRootUpwards(fs: AppFileSystem, start: string, maxParents = 8): Promise<string | undefined> {
  let dir = path.resolve(start);
  for (let i = 0; i <= maxParents; i++) {
    if (await rootFileOf(fs, dir)) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
  return undefined;
}

interface FileEntry {
  abs: string;
  rel: string;
  /** `rel` split at '/', made on first use and kept with the entry (entries outlive reloads, see folderContents). */
  segments?: string[];
}

function segmentsOf(entry: FileEntry): string[] {
  return (entry.segments ??= entry.rel.split('/'));
}

interface FolderContents { dir: string; rel: string; files: FileEntry[]; folders: FileEntry[] }

/**
 * A folder listing's entries with their paths, kept per listing array: a caching file system hands out
 * the same array while the folder is unchanged, and then the same path strings come back too, whose
 * hashes V8 keeps, so the many map lookups by path after an edit cost no string building or hashing.
 */
const folderContents = new WeakMap<DirEntry[], FolderContents>();

function contentsOf(entries: DirEntry[], dir: string, rel: string): FolderContents {
  const known = folderContents.get(entries);
  // The same folder can be listed from two app roots (one app inside another's folder): rel differs.
  if (known && known.dir === dir && known.rel === rel) return known;
  const contents: FolderContents = { dir, rel, files: [], folders: [] };
  for (const e of entries) {
    const childRel = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory) {
      // Hosted static files can be anything and are not configuration.
      if (SKIPPED_FOLDERS.has(e.name) || childRel === 'hosting/files') continue;
      contents.folders.push({ abs: path.join(dir, e.name), rel: childRel });
    } else contents.files.push({ abs: path.join(dir, e.name), rel: childRel });
  }
  folderContents.set(entries, contents);
  return contents;
}

async function listFiles(fs: AppFileSystem, rootDir: string): Promise<FileEntry[]> {
  const out: FileEntry[] = [];
  async function walk(dir: string, rel: string): Promise<void> {
    const entries = await fs.readDir(dir);
    if (!entries) return;
    const contents = contentsOf(entries, dir, rel);
    for (const file of contents.files) out.push(file);
    for (const folder of contents.folders) await walk(folder.abs, folder.rel);
  }
  await walk(rootDir, '');
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

export interface LoadOptions { cache?: ParseCache }

export async function loadApp(fs: AppFileSystem, rootDir: string, options: LoadOptions = {}): Promise<AppModel> {
  const cache = options.cache ?? new ParseCache();
  const sink = new DiagnosticSink();
  rootDir = path.resolve(rootDir);
  const files = new Map<string, JsonFile>();
  const entries = await listFiles(fs, rootDir);
  const byRel = new Map(entries.map((e) => [e.rel, e]));

  async function readText(entry: FileEntry): Promise<string | undefined> {
    const text = await fs.readFile(entry.abs);
    if (text !== undefined && text.length > MAX_CONFIG_FILE_BYTES) {
      const file = cache.text(entry.abs, entry.rel, text.slice(0, 200));
      sink.atRange(file, file.startRange, 'error', 'file/too-large', `${entry.rel} is larger than ${MAX_CONFIG_FILE_BYTES / 1024 / 1024} MiB and was not read`);
      return undefined;
    }
    return text;
  }

  async function readJson(rel: string): Promise<JsonFile | undefined> {
    const entry = byRel.get(rel);
    return entry ? readEntryJson(entry) : undefined;
  }

  async function readEntryJson(entry: FileEntry): Promise<JsonFile | undefined> {
    const { rel } = entry;
    const text = await readText(entry);
    if (text === undefined) return undefined;
    const file = cache.json(entry.abs, rel, text);
    files.set(entry.abs, file);
    if (!/\S/.test(text)) sink.atRange(file, file.startRange, 'error', 'json/empty', `${rel} is empty; it must hold a JSON value`);
    for (const e of file.syntaxErrors) sink.atRange(file, file.rangeOf(e.offset, e.length), 'error', 'json/syntax', e.message);
    for (const offset of file.trailingCommas) {
      sink.atRange(file, file.rangeOf(offset, 1), 'warning', 'json/trailing-comma', 'Trailing comma: the app reads, but the platform CLI\'s strict JSON parser refuses this file; remove the comma.');
    }
    return file;
  }

  const relsUnder = (prefix: string, predicate: (rest: string) => boolean = () => true) =>
    entries.filter((e) => e.rel.startsWith(prefix) && predicate(e.rel.slice(prefix.length))).map((e) => e.rel);
  const jsonFilesIn = (folder: string) => relsUnder(`${folder}/`, (rest) => !rest.includes('/') && rest.endsWith('.json'));

  // Root file and generation.
  let rootName: string | undefined;
  for (const name of ROOT_FILE_NAMES) if (byRel.has(name)) { rootName = name; break; }
  const rootFile = rootName ? (await readJson(rootName))! : new JsonFile(path.join(rootDir, 'root_config.json'), 'root_config.json', '{}');
  if (!rootName) sink.atRange(rootFile, rootFile.startRange, 'error', 'app/no-root-file', `No root file in ${rootDir}: expected one of ${ROOT_FILE_NAMES.join(', ')}`);
  const root = obj(rootFile.value);
  const metaFile = (await readJson('.mdb/meta.json')) ?? (await readJson('.mdb/app_meta.json'));
  const meta = obj(metaFile?.value);
  const configVersion = num(root.config_version) ?? num(meta.config_version) ?? impliedVersion(rootName);
  const generation: Generation = configVersion >= 20230101 ? '20230101' : configVersion >= 20210101 ? '20210101' : 'legacy';

  const app: AppModel = {
    rootDir, generation, configVersion, rootFile, metaFile,
    name: nonEmpty(root.name) ?? path.basename(rootDir),
    appId: nonEmpty(root.app_id) ?? nonEmpty(meta.client_app_id) ?? nonEmpty(meta.app_id),
    groupId: nonEmpty(meta.group_id),
    location: str(root.location),
    deploymentModel: str(root.deployment_model),
    environment: str(root.environment),
    allowedRequestOrigins: strings(root.allowed_request_origins),
    authProviders: [],
    functions: new Map(),
    dataSources: [],
    graphql: { useNaturalPluralization: true, disableSchemaIntrospection: false, customResolvers: [] },
    values: [], environments: [], triggers: [], endpoints: [],
    files,
    loadDiagnostics: sink.items,
  };

  await loadAuth(app);
  await loadFunctions(app);
  await loadDataSources(app);
  app.graphql = await loadGraphql();
  app.sync = await loadSync();
  await loadValuesAndEnvironments(app);
  await loadTriggers(app);
  await loadEndpoints(app);
  for (const rel of ['hosting/config.json', ...jsonFilesIn('log_forwarders')]) await readJson(rel);
  app.secretsFile = await readJson('secrets.json');
  return app;

  async function loadAuth(app: AppModel): Promise<void> {
    const providersFile = await readJson('auth/providers.json');
    if (providersFile && isObject(providersFile.value)) {
      for (const [key, entry] of Object.entries(providersFile.value)) app.authProviders.push(provider(key, entry, providersFile, [key]));
    }
    // Legacy: one file per provider.
    for (const rel of jsonFilesIn('auth_providers')) {
      const file = await readJson(rel);
      if (file && isObject(file.value)) app.authProviders.push(provider(path.basename(rel, '.json'), file.value, file, []));
    }
    const cud = await readJson('auth/custom_user_data.json');
    if (cud) app.customUserData = customUserData(cud);
  }

  async function loadFunctions(app: AppModel): Promise<void> {
    const manifest = await readJson('functions/config.json');
    app.functionsManifest = manifest;
    const entriesByName = new Map<string, { value: Record<string, unknown>; file: JsonFile; path: JSONPath }>();
    if (manifest && Array.isArray(manifest.value)) {
      manifest.value.forEach((item, i) => {
        const name = isObject(item) ? str(item.name) : undefined;
        if (name !== undefined && !entriesByName.has(name)) entriesByName.set(name, { value: item as Record<string, unknown>, file: manifest, path: [i] });
      });
    }
    // Folder per function: functions/<folder>/config.json + source.js. The function is named by its config
    // (the folder name may differ, case included) and its source is the one in the same folder.
    const folderFunctionNames = new Map<string, string>();
    for (const rel of relsUnder('functions/', (rest) => /^[^/]+\/config\.json$/.test(rest))) {
      const file = await readJson(rel);
      const folder = rel.split('/')[1]!;
      const name = (isObject(file?.value) && str(file.value.name)) || folder;
      folderFunctionNames.set(folder, name);
      if (file && isObject(file.value) && !entriesByName.has(name)) entriesByName.set(name, { value: file.value, file, path: [] });
    }
    const sources = new Map<string, TextFile>();
    for (const rel of relsUnder('functions/', (rest) => rest.endsWith('.js'))) {
      const entry = byRel.get(rel)!;
      const text = await readText(entry);
      if (text === undefined) continue;
      const folder = /^functions\/([^/]+)\/source\.js$/.exec(rel)?.[1];
      const folderName = folder === undefined ? undefined : folderFunctionNames.get(folder);
      const name = folderName ?? rel.slice('functions/'.length, -'.js'.length);
      sources.set(name, cache.text(entry.abs, rel, text));
    }
    for (const name of new Set([...entriesByName.keys(), ...sources.keys()])) {
      const m = entriesByName.get(name);
      const v = m?.value ?? {};
      const fn: AppFunction = {
        name,
        private: bool(v.private, false),
        canEvaluate: v.can_evaluate,
        disableArgLogs: bool(v.disable_arg_logs, false),
        runAsSystem: bool(v.run_as_system, false),
        runAsUserId: str(v.run_as_user_id) || undefined,
        runAsUserIdScriptSource: str(v.run_as_user_id_script_source) || undefined,
        manifest: m ? { file: m.file, path: m.path } : undefined,
        sourceFile: sources.get(name),
      };
      app.functions.set(name, fn);
    }
  }

  async function loadDataSources(app: AppModel): Promise<void> {
    // data_sources/<service>/… and, inside, data_sources/<service>/<database>/<collection>/<file>.
    const serviceFolders = new Map<string, FileEntry[]>();
    for (const e of entries) {
      const segments = segmentsOf(e);
      if (segments.length < 3 || segments[0] !== 'data_sources') continue;
      let files = serviceFolders.get(segments[1]!);
      if (!files) serviceFolders.set(segments[1]!, (files = []));
      files.push(e);
    }
    for (const [folder, folderFiles] of [...serviceFolders].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const dir = path.join(rootDir, 'data_sources', folder);
      const configRel = `data_sources/${folder}/config.json`;
      const file = (await readJson(configRel)) ?? missingFile(configRel, `Data source folder data_sources/${folder} has no config.json`);
      const v = obj(file.value);
      const ds: DataSource = {
        name: str(v.name) ?? folder,
        type: str(v.type) ?? '',
        config: obj(v.config),
        file, dir,
        defaultRule: await readJson(`data_sources/${folder}/default_rule.json`),
        collections: [],
      };
      // One pass over the files: each collection folder (<database>/<collection>/) with its files by name,
      // read through their entries (no paths built and looked up again after every edit).
      const databases = new Map<string, Map<string, Map<string, FileEntry>>>();
      for (const e of folderFiles) {
        const segments = segmentsOf(e);
        if (segments.length !== 5) continue;
        const [, , database, collection, name] = segments as [string, string, string, string, string];
        let collections = databases.get(database);
        if (!collections) databases.set(database, (collections = new Map()));
        let named = collections.get(collection);
        if (!named) collections.set(collection, (named = new Map()));
        named.set(name, e);
      }
      const collectionDirs = [...databases].flatMap(([database, collections]) =>
        [...collections].map(([collection, named]) => ({ dbColl: `${database}/${collection}`, database, collection, named })));
      for (const { dbColl, database, collection, named } of collectionDirs.sort((a, b) => (a.dbColl < b.dbColl ? -1 : a.dbColl > b.dbColl ? 1 : 0))) {
        const base = `data_sources/${folder}/${dbColl}`;
        const readNamed = async (name: string) => { const entry = named.get(name); return entry ? readEntryJson(entry) : undefined; };
        const rulesFile = await readNamed('rules.json');
        const rules = obj(rulesFile?.value);
        // A rules.json that names its namespace is authoritative over the folder names (the platform keys on it).
        const coll: Collection = {
          dataSource: ds.name,
          database: nonEmpty(rules.database) ?? database,
          collection: nonEmpty(rules.collection) ?? collection,
          dir: path.join(dir, database, collection),
          schema: await readNamed('schema.json'),
          rules: rulesFile,
          relationships: await readNamed('relationships.json'),
        };
        if (coll.rules) {
          if (isObject(coll.rules.value) && Object.keys(rules).length === 0) sink.at(coll.rules, [], 'error', 'rules/empty', `${base}/rules.json is empty; it needs at least "database" and "collection"`);
          if (isObject(coll.rules.value)) {
            if (nonEmpty(rules.database) && rules.database !== database) sink.at(coll.rules, ['database'], 'information', 'rules/database-mismatch', `"database" is "${rules.database}" while the folder says "${database}": rules.json wins, the collection lives in "${rules.database}"`);
            if (nonEmpty(rules.collection) && rules.collection !== collection) sink.at(coll.rules, ['collection'], 'information', 'rules/collection-mismatch', `"collection" is "${rules.collection}" while the folder says "${collection}": rules.json wins, the collection is "${rules.collection}"`);
          }
        } else if (!(coll.schema && coll.relationships) && (coll.schema || coll.relationships)) {
          const present = (coll.schema ?? coll.relationships)!;
          sink.atRange(present, present.startRange, 'warning', 'collection/incomplete-folder',
            `${base} must contain rules.json, or both schema.json and relationships.json; the platform CLI refuses to push it as it is`);
        }
        ds.collections.push(coll);
      }
      app.dataSources.push(ds);
    }
    // Legacy: services/<svc>/config.json with a cluster type, rules in services/<svc>/rules/*.json.
    if (app.generation === 'legacy') {
      const legacyServices = new Set(entries.map((e) => /^services\/([^/]+)\/config\.json$/.exec(e.rel)?.[1]).filter((s): s is string => !!s));
      for (const folder of [...legacyServices].sort()) {
        const file = (await readJson(`services/${folder}/config.json`))!;
        const v = obj(file.value);
        const type = str(v.type) ?? '';
        if (type !== 'mongodb-atlas' && type !== 'cluster-source' && type !== 'mongodb') continue;
        const ds: DataSource = { name: str(v.name) ?? folder, type, config: obj(v.config), file, dir: path.join(rootDir, 'services', folder), collections: [] };
        for (const rel of jsonFilesIn(`services/${folder}/rules`)) {
          const rules = (await readJson(rel))!;
          const r = obj(rules.value);
          const [database, collection] = [str(r.database), str(r.collection)];
          if (database && collection) ds.collections.push({ dataSource: ds.name, database, collection, dir: path.dirname(rules.path), rules });
        }
        app.dataSources.push(ds);
      }
    }
  }

  async function loadGraphql(): Promise<GraphqlConfig> {
    const config = await readJson('graphql/config.json');
    const c = obj(config?.value);
    const customResolvers: CustomResolver[] = [];
    for (const rel of jsonFilesIn('graphql/custom_resolvers')) {
      customResolvers.push(customResolverOf((await readJson(rel))!));
    }
    return {
      config,
      useNaturalPluralization: bool(c.use_natural_pluralization, true),
      disableSchemaIntrospection: bool(c.disable_schema_introspection, false),
      validationSettings: await readJson('graphql/validation_settings.json'),
      customResolvers,
    };
  }

  async function loadSync(): Promise<SyncConfig | undefined> {
    const file = await readJson('sync/config.json');
    if (!file) return undefined;
    const v = obj(file.value);
    const p = isObject(v.partition) ? v.partition : undefined;
    const permissions = obj(p?.permissions);
    return {
      file,
      type: str(v.type),
      state: str(v.state),
      developmentModeEnabled: bool(v.development_mode_enabled, false),
      serviceName: str(v.service_name),
      databaseName: str(v.database_name),
      partition: p ? { key: str(p.key), type: str(p.type), required: bool(p.required, false), permissions: { read: permissions.read, write: permissions.write } } : undefined,
      clientMaxOfflineDays: num(v.client_max_offline_days),
      isRecoveryModeDisabled: bool(v.is_recovery_mode_disabled, false),
      runtimeState: await readRuntimeSyncState(),
    };
  }

  async function readRuntimeSyncState(): Promise<unknown> {
    const text = await fs.readFile(path.join(rootDir, RUNTIME_SYNC_STATE_FILE));
    if (text === undefined || text.length > MAX_CONFIG_FILE_BYTES) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return undefined;
    }
  }

  async function loadValuesAndEnvironments(app: AppModel): Promise<void> {
    for (const rel of jsonFilesIn('values')) {
      const file = (await readJson(rel))!;
      const v = obj(file.value);
      const value: AppValue = { name: str(v.name) ?? path.basename(rel, '.json'), fromSecret: bool(v.from_secret, false), value: v.value, file };
      app.values.push(value);
    }
    for (const rel of jsonFilesIn('environments')) {
      const file = (await readJson(rel))!;
      const env: AppEnvironment = { name: path.basename(rel, '.json'), values: obj(obj(file.value).values), file };
      app.environments.push(env);
    }
  }

  async function loadTriggers(app: AppModel): Promise<void> {
    for (const rel of jsonFilesIn('triggers')) {
      const file = (await readJson(rel))!;
      const v = obj(file.value);
      const processor = obj(obj(obj(v.event_processors).FUNCTION).config);
      const trigger: Trigger = {
        name: str(v.name) ?? path.basename(rel, '.json'),
        type: str(v.type) ?? '',
        disabled: bool(v.disabled, false),
        config: obj(v.config),
        functionName: str(processor.function_name) ?? str(v.function_name),
        file,
      };
      app.triggers.push(trigger);
    }
  }

  async function loadEndpoints(app: AppModel): Promise<void> {
    const folder = ['https_endpoints', 'http_endpoints'].find((f) => entries.some((e) => e.rel.startsWith(`${f}/`)));
    if (!folder) return;
    app.endpointsFolder = folder;
    const file = await readJson(`${folder}/config.json`);
    if (file && Array.isArray(file.value)) {
      file.value.forEach((item, i) => {
        const v = obj(item);
        const endpoint: Endpoint = {
          route: str(v.route) ?? '',
          httpMethod: str(v.http_method) ?? '',
          functionName: str(v.function_name) ?? '',
          validationMethod: str(v.validation_method),
          secretName: str(v.secret_name),
          respondResult: bool(v.respond_result, false),
          fetchCustomUserData: bool(v.fetch_custom_user_data, false),
          createUserOnAuth: bool(v.create_user_on_auth, false),
          disabled: bool(v.disabled, false),
          source: { file, path: [i] },
        };
        app.endpoints.push(endpoint);
      });
    }
    app.dataApiConfig = await readJson(`${folder}/data_api_config.json`);
    // Deprecated per-service webhook configs are read so that their syntax is checked.
    for (const rel of relsUnder(`${folder}/`, (rest) => rest.includes('/') && rest.endsWith('.json'))) await readJson(rel);
  }

  function missingFile(rel: string, message: string): JsonFile {
    const file = new JsonFile(path.join(rootDir, rel), rel, '{}');
    const sibling = entries.find((e) => e.rel.startsWith(path.posix.dirname(rel) + '/'));
    const anchor = sibling ? new TextFile(sibling.abs, sibling.rel, '') : file;
    sink.atRange(anchor, anchor.startRange, 'error', 'file/missing', message);
    return file;
  }
}

function provider(key: string, entry: unknown, file: JsonFile, at: JSONPath): AuthProvider {
  const v = obj(entry);
  return {
    name: str(v.name) ?? key,
    type: str(v.type) ?? '',
    disabled: bool(v.disabled, false),
    config: obj(v.config),
    secretConfig: obj(v.secret_config),
    metadataFields: Array.isArray(v.metadata_fields) ? v.metadata_fields : [],
    redirectUris: Array.isArray(v.redirect_uris) ? v.redirect_uris : [],
    source: { file, path: at },
  };
}

/** A custom resolver file as the model holds it (missing or mistyped keys become empty; validation reports them). */
export function customResolverOf(file: JsonFile): CustomResolver {
  const v = obj(file.value);
  return {
    file,
    onType: str(v.on_type) ?? '',
    fieldName: str(v.field_name) ?? '',
    functionName: str(v.function_name) ?? '',
    inputType: v.input_type,
    inputTypeFormat: str(v.input_type_format) ?? '',
    payloadType: v.payload_type,
    payloadTypeFormat: str(v.payload_type_format) ?? '',
  };
}

function customUserData(file: JsonFile): CustomUserDataConfig {
  const v = obj(file.value);
  return {
    enabled: bool(v.enabled, false),
    serviceName: str(v.mongo_service_name),
    databaseName: str(v.database_name),
    collectionName: str(v.collection_name),
    userIdField: str(v.user_id_field),
    onUserCreationFunctionName: str(v.on_user_creation_function_name) || undefined,
    source: { file, path: [] },
  };
}

function impliedVersion(rootName: string | undefined): number {
  if (rootName === 'root_config.json') return 20230101;
  if (rootName === 'realm_config.json') return 20210101;
  return 20180301;
}

function obj(v: unknown): Record<string, unknown> { return isObject(v) ? v : {}; }
function str(v: unknown): string | undefined { return typeof v === 'string' ? v : undefined; }
function num(v: unknown): number | undefined { return typeof v === 'number' && Number.isFinite(v) ? v : undefined; }
/** `""` is how the exporter writes an unset boolean: false. "true"/"false" strings (stored as given; `asl check` warns) read as they spell. */
function bool(v: unknown, fallback: boolean): boolean {
  if (typeof v === 'boolean') return v;
  return v === '' || v === 'false' ? false : v === 'true' ? true : fallback;
}
/** `""` is how the exporter writes an unset string. */
function nonEmpty(v: unknown): string | undefined { return typeof v === 'string' && v !== '' ? v : undefined; }
function strings(v: unknown): string[] { return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []; }
