// Creating an app from a template, as the platform does: the template's backend with the new app's name,
// id and cluster, and its client with the app id and URLs written into the client's metadata file. Pure:
// templates are read through an injected file system, results are file maps the caller writes or zips.
import path from 'node:path';
import type { AppFileSystem } from '../fs';
import { findTemplate, type TemplateInfo } from './catalogue';
import { localMetadataValues, renderMetadata, type MetadataValues } from './metadata';

/** Relative POSIX path → text. Every template file is text. */
export type FileMap = Map<string, string>;

/** Where templates are read from: the `templates/` folder (found next to the bundle) through a file system. */
export interface TemplateSource {
  readonly fs: AppFileSystem;
  /** Absolute path of the `templates/` folder. */
  readonly root: string;
}

/** A refused request, with a message meant for the user (the platform's wording where it has one). */
export class TemplateError extends Error {
  constructor(message: string, readonly code: 'TemplateNotFound' | 'InvalidName' | 'NoClient' | 'NotDownloadable' | 'TemplateMissing' | 'TargetNotEmpty') {
    super(message);
  }
}

/** The data source template apps link; the platform forces this service name for template apps. */
export const TEMPLATE_DATA_SOURCE = 'mongodb-atlas';
/** The data source of an app created without a template (the product's default). */
export const BLANK_APP_DATA_SOURCE = 'cluster-source';
export const DEFAULT_CLUSTER_NAME = 'Cluster0';

const NAME = /^[A-Za-z][A-Za-z0-9_-]*$/;
export const MAX_APP_NAME_LENGTH = 64;

/** Why `name` cannot name an app, or undefined when it can: ASCII letters, digits, `_`, `-`, starting with a letter. */
export function validateAppName(name: string): string | undefined {
  if (name.length === 0) return 'app name must not be empty';
  if (name.length > MAX_APP_NAME_LENGTH) return `app name must be at most ${MAX_APP_NAME_LENGTH} characters long`;
  if (!/^[A-Za-z]/.test(name)) return `app name "${name}" must start with a letter`;
  if (!NAME.test(name)) return `app name "${name}" may only contain ASCII letters, digits, underscores and hyphens`;
  return undefined;
}

/** A new client app id like the platform's: `<lower-cased name>-<5 lowercase letters>`. */
export function newClientAppId(name: string, random: () => number = Math.random): string {
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += String.fromCharCode(97 + Math.min(25, Math.floor(random() * 26)));
  return `${name.toLowerCase()}-${suffix}`;
}

export function requireTemplate(id: string): TemplateInfo {
  const template = findTemplate(id);
  if (!template) throw new TemplateError(`template '${id}' not found`, 'TemplateNotFound');
  return template;
}

export interface NewAppOptions {
  name: string;
  /** The new client app id (see `newClientAppId`). */
  appId: string;
  /** The linked cluster; default `Cluster0`. */
  clusterName?: string;
  /** The data source's service name; template apps default to `mongodb-atlas`, blank apps to `cluster-source`. */
  dataSourceName?: string;
  location?: string;
  deploymentModel?: 'GLOBAL' | 'LOCAL';
  providerRegion?: string;
  environment?: string;
}

/**
 * The backend of a new app: the template's exported app (or, without a template, the platform's minimal
 * app with one data source), its `realm_config.json` naming the new app, its data source linked to the
 * requested cluster under the requested service name. A web template's hosted site gets its
 * `atlasConfig.json` written from `client` values (see `clientMetadataValues`).
 */
export async function backendFiles(source: TemplateSource, templateId: string | undefined, options: NewAppOptions, hostedClient?: MetadataValues): Promise<FileMap> {
  const invalid = validateAppName(options.name);
  if (invalid) throw new TemplateError(invalid, 'InvalidName');
  if (templateId === undefined) return blankApp(options);
  const template = requireTemplate(templateId);
  const files = await readTree(source, template.backend);
  const dataSource = options.dataSourceName ?? TEMPLATE_DATA_SOURCE;
  const rootConfig = parse(files, 'realm_config.json');
  files.set('realm_config.json', json({
    ...rootConfig,
    app_id: options.appId,
    name: options.name,
    ...(options.location ? { location: options.location } : {}),
    ...(options.deploymentModel ? { deployment_model: options.deploymentModel } : {}),
    ...(options.providerRegion ? { provider_region: options.providerRegion } : {}),
    ...(options.environment !== undefined ? { environment: options.environment } : {}),
  }));
  relinkDataSource(files, dataSource, options.clusterName ?? DEFAULT_CLUSTER_NAME);
  if (files.has('hosting/files/index.html') && template.client) {
    files.set('hosting/files/atlasConfig.json', renderMetadata('json-full', { ...(hostedClient ?? localMetadataValues(options.appId, 'http://localhost:8080')), appId: options.appId, dataSourceName: dataSource }));
  }
  return files;
}

export type ClientForm =
  /** What `apps create --template` and `pull --template` write: the app id and the runtime's URLs filled in. */
  | { kind: 'cli'; values: MetadataValues }
  /** The UI's download: the app id blank (the README says where it goes), URLs of the runtime if known. */
  | { kind: 'download'; baseUrl?: string };

/**
 * The client code of a template, its metadata file written for `form`; undefined when the template has
 * no client (the Admin API answers 204). The C++ client has no download form, as on the platform.
 */
export async function clientFiles(source: TemplateSource, templateId: string, form: ClientForm): Promise<FileMap | undefined> {
  const template = requireTemplate(templateId);
  const client = template.client;
  if (!client) return undefined;
  if (form.kind === 'download' && !client.downloadable) {
    throw new TemplateError(`template '${templateId}' cannot be downloaded; create or pull it with the CLI (asl apps create --template ${templateId}) to get its client code`, 'NotDownloadable');
  }
  const files = await readTree(source, client.dir);
  const values = form.kind === 'cli' ? form.values : { ...localMetadataValues('', form.baseUrl ?? 'http://localhost:8080'), appId: '' };
  files.set(metadataFilePath(template)!, renderMetadata(client.metadataKind, values));
  return files;
}

/** `<metadata_path>/<metadata_filename>.<file_format>` of a template's client, relative to the client's root. */
export function metadataFilePath(template: TemplateInfo): string | undefined {
  const c = template.client;
  if (!c) return undefined;
  return path.posix.join(c.metadataPath, `${c.metadataFilename}.${c.fileFormat}`);
}

export interface CreatedApp {
  appId: string;
  /** `backend/…` and, with a client, `frontend/<templateId>/…`: the platform CLI's layout (§3.5). */
  files: FileMap;
}

/**
 * Everything `apps create --template` writes: `backend/` and `frontend/<id>/` (the client with the
 * new app id and `baseUrl`'s URLs). Without a template: the minimal app, flat.
 */
export async function createAppFiles(source: TemplateSource, templateId: string | undefined, options: NewAppOptions & { baseUrl: string }): Promise<CreatedApp> {
  const dataSourceName = options.dataSourceName ?? (templateId === undefined ? BLANK_APP_DATA_SOURCE : TEMPLATE_DATA_SOURCE);
  const values = localMetadataValues(options.appId, options.baseUrl, dataSourceName);
  const backend = await backendFiles(source, templateId, options, values);
  if (templateId === undefined) return { appId: options.appId, files: backend };
  const files: FileMap = new Map();
  for (const [p, text] of backend) files.set(`backend/${p}`, text);
  const client = await clientFiles(source, templateId, { kind: 'cli', values });
  for (const [p, text] of client ?? []) files.set(`frontend/${templateId}/${p}`, text);
  return { appId: options.appId, files };
}

/** Writes a file map below `dir` (folders created as needed). */
export interface FileWriter {
  writeFile(absPath: string, text: string): Promise<void>;
}

export async function writeFileMap(writer: FileWriter, dir: string, files: FileMap): Promise<void> {
  await Promise.all([...files].map(([p, text]) => writer.writeFile(path.join(dir, ...p.split('/')), text)));
}

/** The platform CLI's minimal app (§3.2) plus the one data source a blank app gets. */
function blankApp(options: NewAppOptions): FileMap {
  const ds = options.dataSourceName ?? BLANK_APP_DATA_SOURCE;
  const files: FileMap = new Map();
  files.set('realm_config.json', json({
    config_version: 20210101,
    app_id: options.appId,
    name: options.name,
    location: options.location ?? 'US-VA',
    deployment_model: options.deploymentModel ?? 'GLOBAL',
    ...(options.providerRegion ? { provider_region: options.providerRegion } : {}),
    ...(options.environment ? { environment: options.environment } : {}),
  }));
  files.set('auth/providers.json', json({ 'api-key': { name: 'api-key', type: 'api-key', disabled: true } }));
  files.set('auth/custom_user_data.json', json({ enabled: false }));
  files.set('sync/config.json', json({ development_mode_enabled: false }));
  files.set('functions/config.json', json([]));
  files.set('graphql/config.json', json({ use_natural_pluralization: true }));
  files.set('graphql/custom_resolvers/.gitkeep', '');
  for (const env of ['no-environment', 'development', 'testing', 'qa', 'production']) files.set(`environments/${env}.json`, json({ values: {} }));
  files.set(`data_sources/${ds}/config.json`, json({
    name: ds, type: 'mongodb-atlas',
    config: { clusterName: options.clusterName ?? DEFAULT_CLUSTER_NAME, readPreference: 'primary', wireProtocolEnabled: false },
    version: 1,
  }));
  return files;
}

/**
 * Points the template's data source at the requested cluster and, when the service is renamed, moves its
 * folder and rewrites the references our templates make to it (triggers, custom user data, functions).
 */
function relinkDataSource(files: FileMap, name: string, clusterName: string): void {
  const from = TEMPLATE_DATA_SOURCE;
  const config = parse(files, `data_sources/${from}/config.json`);
  files.set(`data_sources/${from}/config.json`, json({ ...config, name, config: { ...(config.config as object), clusterName } }));
  if (name === from) return;
  for (const [p, text] of [...files]) {
    let next = text;
    let target = p;
    if (p.startsWith(`data_sources/${from}/`)) target = `data_sources/${name}/${p.slice(`data_sources/${from}/`.length)}`;
    if (p.startsWith('triggers/') && p.endsWith('.json')) {
      const trigger = JSON.parse(text) as { config?: { service_name?: string } };
      if (trigger.config?.service_name === from) { trigger.config.service_name = name; next = json(trigger); }
    } else if (p === 'auth/custom_user_data.json') {
      const cud = JSON.parse(text) as { mongo_service_name?: string };
      if (cud.mongo_service_name === from) { cud.mongo_service_name = name; next = json(cud); }
    } else if (p.startsWith('functions/') && p.endsWith('.js')) {
      next = text.replace(/services\.get\((['"])mongodb-atlas\1\)/g, `services.get(${JSON.stringify(name)})`);
    }
    if (target !== p) files.delete(p);
    files.set(target, next);
  }
}

async function readTree(source: TemplateSource, relDir: string): Promise<FileMap> {
  const files: FileMap = new Map();
  const rootDir = path.join(source.root, relDir);
  const top = await source.fs.readDir(rootDir);
  if (!top) throw new TemplateError(`template files not found at ${rootDir}; the templates folder is missing or incomplete`, 'TemplateMissing');
  const walk = async (dir: string, rel: string, entries: { name: string; isDirectory: boolean }[]): Promise<void> => {
    await Promise.all(entries.map(async (e) => {
      const abs = path.join(dir, e.name);
      const relPath = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) {
        if (e.name === 'node_modules') return;
        await walk(abs, relPath, (await source.fs.readDir(abs)) ?? []);
      } else {
        const text = await source.fs.readFile(abs);
        if (text !== undefined) files.set(relPath, text);
      }
    }));
  };
  await walk(rootDir, '', top);
  return files;
}

function parse(files: FileMap, p: string): Record<string, unknown> {
  const text = files.get(p);
  if (text === undefined) throw new TemplateError(`template file ${p} is missing`, 'TemplateMissing');
  return JSON.parse(text) as Record<string, unknown>;
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 4) + '\n';
}
