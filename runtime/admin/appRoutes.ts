// Admin API routes of apps: list/create/get/delete, export and import, drafts and deployments, templates
// (admin-api-wire.md §4–§5, templates-admin-cli.md §2.2–2.3). Every write goes to the app's files first
// and is then taken up by the app's normal reload; a pushed app is checked before any file is written.
import fs from 'node:fs';
import path from 'node:path';
import fsp from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { checkApp } from '../../core/check';
import { memoryFileSystem } from '../../core/fs';
import { loadApp } from '../../core/load';
import { sortDiagnostics } from '../../core/diagnostics';
import { appJsonToFiles, AppJsonError, type FileMap } from '../../core/transfer/appJson';
import { changedFiles, unifiedDiffs, type FileChange } from '../../core/transfer/diff';
import {
  backendFiles, clientFiles, compatibleTemplates, findTemplate, localMetadataValues, newClientAppId, TEMPLATES, TemplateError, validateAppName,
} from '../../core/templates';
import { bundledTemplates } from '../templates';
import { ApiError, badRequest } from '../http/errors';
import type { HttpRequest, HttpResult } from '../http/server';
import { isObject } from '../../core/json';
import { objectIdHex } from './auth';
import type { OpenedApp } from './apps';
import { otherConfigFiles, readAppFiles, readTransferredFiles, writeChanges, zipFiles } from './files';
import type { AdminContext } from './routes';
import { json, type AdminRouteTable } from './table';

export const LOCATIONS = ['US-VA', 'US-OR', 'DE-FF', 'IE', 'AU', 'IN-MB', 'SG', 'BR-SP'];
const DEPLOYMENT_MODELS = ['GLOBAL', 'LOCAL'];
const ENVIRONMENTS = ['', 'development', 'testing', 'qa', 'production'];
const PRODUCTS = ['standard', 'atlas', 'data-api', 'device-sync'];

interface Draft { _id: string; user_id: string; app: { _id: string }; staged?: unknown }
interface Deployment {
  _id: string; name: string; app_id: string; draft_id: string; user_id: string; deployed_at: number; origin: string;
  commit: string; status: 'created' | 'pending' | 'successful' | 'failed'; status_error_message: string; diff_url: string; remote_location: string;
}

/** The deployments an app keeps (newest), as the platform lists a bounded history. */
const KEPT_DEPLOYMENTS = 100;

/**
 * Drafts, deployments and a write lock per app. Drafts and deployments are kept in the app's data folder
 * (`admin-work.json`, mode 0600), so a restart of the runtime keeps a draft being edited and the history;
 * a deployment the runtime stopped in the middle of is recorded as failed when it starts again.
 */
export class AppWork {
  draft: Draft | undefined;
  readonly deployments = new Map<string, Deployment>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly file: string) {
    let saved: unknown;
    try {
      saved = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch {
      return;
    }
    if (!isObject(saved)) return;
    if (isObject(saved.draft) && typeof saved.draft._id === 'string') this.draft = saved.draft as unknown as Draft;
    for (const d of Array.isArray(saved.deployments) ? saved.deployments : []) {
      if (!isObject(d) || typeof d._id !== 'string') continue;
      const deployment = d as unknown as Deployment;
      if (deployment.status === 'created' || deployment.status === 'pending') {
        deployment.status = 'failed';
        deployment.status_error_message = 'the runtime stopped before this deployment finished';
      }
      this.deployments.set(deployment._id, deployment);
    }
  }

  serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Writes the draft and the newest deployments; called after every change of either. */
  save(): void {
    const deployments = [...this.deployments.values()];
    for (const old of deployments.slice(0, Math.max(0, deployments.length - KEPT_DEPLOYMENTS))) this.deployments.delete(old._id);
    const text = JSON.stringify({ draft: this.draft ?? null, deployments: [...this.deployments.values()] }) + '\n';
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text, { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }
}

const work = new WeakMap<OpenedApp, AppWork>();

export function workOf(app: OpenedApp): AppWork {
  let w = work.get(app);
  if (!w) { w = new AppWork(path.join(app.dataDir, 'admin-work.json')); work.set(app, w); }
  return w;
}

/**
 * An admin edit of an app's files: `edit` gets the transferred files and changes the copy; the result is
 * checked (errors refuse it with 400 naming the file and problem), written, and reloaded. Serialised per app.
 */
export function editAppFiles(ctx: AdminContext, app: OpenedApp, edit: (files: FileMap) => void | Promise<void>): Promise<void> {
  return workOf(app).serial(async () => {
    const current = await readTransferredFiles(app.dir);
    const next = new Map(current);
    await edit(next);
    const problem = await problemsOf(app, next);
    if (problem) throw new ApiError(400, 'InvalidConfig', problem);
    await applyChanges(ctx, app, changedFiles(current, next));
  });
}

/** Writes the changes, then has the app reload them now (rather than waiting for the watcher). */
async function applyChanges(ctx: AdminContext, app: OpenedApp, changes: FileChange[]): Promise<void> {
  if (changes.length === 0) return;
  await writeChanges(app.dir, changes);
  const result = await app.reload();
  if (!result.applied) ctx.log.warn(`${app.clientAppId}: the imported files were written but did not load; still serving the last good version`);
  ctx.log.info(`${app.clientAppId}: wrote ${changes.length} changed file(s)`);
}

export function registerAppRoutes(table: AdminRouteTable, ctx: AdminContext): void {
  const { apps } = ctx;
  const appOf = (req: HttpRequest) => apps.get(req.params.groupId!, req.params.appId!);
  const templates = bundledTemplates();

  const view = async (app: OpenedApp, withTemplate: boolean) => {
    const model = app.current().app;
    const record = await apps.record(app.clientAppId);
    let modified = record.created ?? 0;
    try { modified = Math.floor((await fsp.stat(model.rootFile.path)).mtimeMs / 1000); } catch { /* the record's time */ }
    return {
      _id: app.id,
      client_app_id: app.clientAppId,
      name: model.name,
      location: model.location ?? 'US-VA',
      deployment_model: model.deploymentModel ?? 'GLOBAL',
      environment: model.environment ?? '',
      provider_region: 'local',
      domain_id: ctx.auth.project.domain_id,
      group_id: ctx.auth.groupId,
      last_used: Math.floor(Date.now() / 1000),
      last_modified: modified,
      product: record.product ?? 'standard',
      ...(withTemplate && record.template_id ? { template_id: record.template_id } : {}),
    };
  };

  table.get('/groups/:groupId/apps', async (req) => {
    apps.checkGroup(req.params.groupId!);
    const wanted = (req.query.get('product') ?? 'standard').split(',').map((p) => p.trim()).filter(Boolean);
    const out = [];
    for (const app of apps.list()) {
      const v = await view(app, false);
      if (wanted.includes(v.product)) out.push(v);
    }
    return json(out);
  });

  table.post('/groups/:groupId/apps', async (req) => {
    apps.checkGroup(req.params.groupId!);
    const body = await req.json();
    if (!isObject(body)) throw badRequest('expected a JSON body with at least "name"');
    const name = body.name;
    if (typeof name !== 'string') throw badRequest('"name" is required');
    const invalid = validateAppName(name);
    if (invalid) throw badRequest(invalid);
    const str = (key: string) => {
      const v = body[key];
      if (v !== undefined && typeof v !== 'string') throw badRequest(`"${key}" must be a string`);
      return v as string | undefined;
    };
    const location = str('location');
    if (location !== undefined && location !== '' && !LOCATIONS.includes(location)) throw badRequest(`invalid location "${location}": expected one of ${LOCATIONS.join(', ')}`);
    const deploymentModel = str('deployment_model')?.toUpperCase();
    if (deploymentModel !== undefined && deploymentModel !== '' && !DEPLOYMENT_MODELS.includes(deploymentModel)) throw badRequest(`invalid deployment model "${deploymentModel}": expected GLOBAL or LOCAL`);
    const environment = str('environment');
    if (environment !== undefined && !ENVIRONMENTS.includes(environment)) throw badRequest(`invalid environment "${environment}": expected one of development, testing, qa, production`);
    const templateId = str('template_id') || undefined;
    if (templateId !== undefined && !findTemplate(templateId)) throw badRequest(`template '${templateId}' not found`);
    const product = req.query.get('product') ?? 'standard';
    if (!PRODUCTS.includes(product)) throw badRequest(`invalid product "${product}": expected one of ${PRODUCTS.join(', ')}`);
    const dataSource = body.data_source;
    if (dataSource !== undefined && !(isObject(dataSource) && typeof dataSource.name === 'string' && (dataSource.config === undefined || isObject(dataSource.config)))) {
      throw badRequest('"data_source" must be {"name", "type", "config": {"clusterName"}}');
    }
    const clusterName = isObject(dataSource) && isObject(dataSource.config) && typeof dataSource.config.clusterName === 'string' ? dataSource.config.clusterName : undefined;
    const rootDir = apps.options.rootDir;
    if (!rootDir) throw badRequest('this runtime serves one app folder; start "asl serve <folder>" on a folder holding apps to create new ones in it');
    // Names may repeat (the SDKs' test harnesses create many apps named "test"); the client app id and folder stay unique.

    const appId = uniqueClientAppId(name, apps.list().map((a) => a.clientAppId));
    let files: FileMap;
    try {
      files = await backendFiles(templates, templateId, {
        name, appId, clusterName, dataSourceName: isObject(dataSource) ? dataSource.name as string : undefined,
        location: location || 'US-VA', deploymentModel: (deploymentModel || 'GLOBAL') as 'GLOBAL' | 'LOCAL',
        ...(environment ? { environment } : {}),
      }, localMetadataValues(appId, req.baseUrl));
    } catch (e) {
      if (e instanceof TemplateError) throw badRequest(e.message);
      throw e;
    }
    const dir = await freeFolder(rootDir, name);
    await writeChanges(dir, [...files].map(([p, after]) => ({ path: p, kind: 'added', after } as FileChange)));
    let app: OpenedApp;
    try {
      app = await apps.add(dir, { ...(templateId ? { template_id: templateId } : {}), product, created: Math.floor(Date.now() / 1000) });
    } catch (e) {
      await fsp.rm(dir, { recursive: true, force: true });
      throw e;
    }
    ctx.log.info(`created app ${app.clientAppId} in ${path.relative(process.cwd(), dir) || dir}`);
    return json(await view(app, true), 201);
  });

  table.get('/groups/:groupId/apps/:appId', async (req) => json(await view(appOf(req), true)));

  table.delete('/groups/:groupId/apps/:appId', async (req) => {
    const app = appOf(req);
    if (!apps.options.rootDir) throw badRequest('this runtime serves one app folder, which the Admin API does not delete');
    await workOf(app).serial(() => apps.remove(app));
    ctx.log.info(`deleted app ${app.clientAppId} (folder ${app.dir})`);
  });

  table.get('/groups/:groupId/apps/:appId/export', async (req): Promise<HttpResult> => {
    const app = appOf(req);
    const files = await readAppFiles(app.dir);
    const zip = zipFiles(files);
    const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
    const fileName = `${app.current().app.name}_${stamp}.zip`;
    req.response.writeHead(200, {
      'Content-Type': 'application/zip',
      'Content-Disposition': `attachment; filename=${fileName}`,
      'Content-Length': String(zip.byteLength),
    }).end(zip);
    return 'handled';
  });

  table.post('/groups/:groupId/apps/:appId/import', async (req) => {
    const app = appOf(req);
    const body = await req.json();
    const w = workOf(app);
    return w.serial(async () => {
      const current = await readTransferredFiles(app.dir);
      const next = toFiles(body, current);
      const changes = changedFiles(current, next);
      if (req.query.get('diff') === 'true') return json(unifiedDiffs(changes));
      if (w.draft) { w.draft.staged = body; w.save(); return undefined; }
      const problem = await problemsOf(app, next);
      if (problem) throw new ApiError(400, 'InvalidConfig', problem);
      await applyChanges(ctx, app, changes);
      return undefined;
    });
  });

  table.post('/groups/:groupId/apps/:appId/drafts', (req) => {
    const app = appOf(req);
    const w = workOf(app);
    if (w.draft) throw new ApiError(409, 'DraftAlreadyExists', `a draft already exists for this app (draft id ${w.draft._id}); deploy or discard it first`);
    w.draft = { _id: objectIdHex(), user_id: ctx.auth.project.user_id, app: { _id: app.id } };
    w.save();
    // The draft's schema changes are one change of the sync schema: at most one new version, at its deployment.
    app.sync.schemaVersions.hold();
    return json(draftView(w.draft), 201);
  });
  table.get('/groups/:groupId/apps/:appId/drafts', (req) => {
    const w = workOf(appOf(req));
    return json(w.draft ? [draftView(w.draft)] : []);
  });
  const draftOf = (req: HttpRequest) => {
    const w = workOf(appOf(req));
    if (!w.draft || w.draft._id !== req.params.draftId) throw new ApiError(404, 'DraftNotFound', `draft not found: '${req.params.draftId}'`);
    return { w, draft: w.draft };
  };
  table.delete('/groups/:groupId/apps/:appId/drafts/:draftId', async (req) => {
    const { w } = draftOf(req);
    w.draft = undefined;
    w.save();
    await appOf(req).sync.schemaVersions.release();
  });
  table.get('/groups/:groupId/apps/:appId/drafts/:draftId/diff', async (req) => {
    const { draft } = draftOf(req);
    const app = appOf(req);
    const current = await readTransferredFiles(app.dir);
    const diffs = draft.staged === undefined ? [] : unifiedDiffs(changedFiles(current, toFiles(draft.staged, current)));
    return json({
      diffs,
      hosting_files_diff: { added: [], deleted: [], modified: [] },
      dependencies_diff: { added: [], deleted: [], modified: [] },
      graphql_config_diff: { field_diffs: [] },
      schema_options_diff: { graphql_validation_diff: [], rest_validation_diff: [] },
    });
  });
  table.post('/groups/:groupId/apps/:appId/drafts/:draftId/deployment', async (req) => {
    const app = appOf(req);
    const { w, draft } = draftOf(req);
    const body = await req.json().catch(() => undefined);
    const deployment: Deployment = {
      _id: objectIdHex(), name: isObject(body) && typeof body.name === 'string' ? body.name : '', app_id: app.id, draft_id: draft._id,
      user_id: ctx.auth.project.user_id, deployed_at: Math.floor(Date.now() / 1000), origin: 'cli', commit: '', status: 'created',
      status_error_message: '', diff_url: '', remote_location: app.current().app.location ?? 'US-VA',
    };
    w.deployments.set(deployment._id, deployment);
    w.save();
    await w.serial(async () => {
      w.draft = undefined;
      if (draft.staged === undefined) { deployment.status = 'successful'; return; }
      try {
        const current = await readTransferredFiles(app.dir);
        const next = toFiles(draft.staged, current);
        const problem = await problemsOf(app, next);
        if (problem) { deployment.status = 'failed'; deployment.status_error_message = problem; return; }
        await applyChanges(ctx, app, changedFiles(current, next));
        deployment.status = 'successful';
      } catch (e) {
        deployment.status = 'failed';
        deployment.status_error_message = e instanceof ApiError ? e.message : `deployment failed: ${(e as Error).message}`;
      }
    }).finally(() => w.save());
    await app.sync.schemaVersions.release();
    return json(deployment, 201);
  });
  table.get('/groups/:groupId/apps/:appId/deployments', (req) => json([...workOf(appOf(req)).deployments.values()].reverse()));
  table.get('/groups/:groupId/apps/:appId/deployments/:deploymentId', (req) => {
    const d = workOf(appOf(req)).deployments.get(req.params.deploymentId!);
    if (!d) throw new ApiError(404, 'DeploymentNotFound', `deployment not found: '${req.params.deploymentId}'`);
    return json(d);
  });

  table.get('/templates', () => json(TEMPLATES.map((t) => ({ id: t.id, name: t.name }))));
  // The UI's download: no app yet, so the app id stays blank (the client's README says where it goes).
  table.get('/templates/:templateId/client', async (req): Promise<HttpResult> => {
    const templateId = req.params.templateId!;
    let files;
    try {
      files = await clientFiles(templates, templateId, { kind: 'download', baseUrl: req.baseUrl });
    } catch (e) {
      if (e instanceof TemplateError) throw new ApiError(e.code === 'TemplateNotFound' ? 404 : 400, e.code, e.message);
      throw e;
    }
    if (!files) return { status: 204 };
    return zipResponse(req, `${templateId}.zip`, files);
  });
  table.get('/groups/:groupId/apps/:appId/templates', async (req) => {
    const app = appOf(req);
    const templateId = (await apps.record(app.clientAppId)).template_id;
    if (!templateId) throw badRequest('this app was not created from a template, so no template client is compatible with it');
    return json(compatibleTemplates(templateId).map((t) => ({ id: t.id, name: t.name })));
  });
  table.get('/groups/:groupId/apps/:appId/templates/:templateId/client', async (req): Promise<HttpResult> => {
    const app = appOf(req);
    const templateId = req.params.templateId!;
    const own = (await apps.record(app.clientAppId)).template_id;
    if (!own || !compatibleTemplates(own).some((t) => t.id === templateId)) throw badRequest(`frontend template '${templateId}' is not compatible with this app`);
    const dataSourceName = app.current().app.dataSources[0]?.name;
    const files = await clientFiles(templates, templateId, { kind: 'cli', values: localMetadataValues(app.clientAppId, req.baseUrl, dataSourceName) });
    if (!files) return { status: 204 };
    return zipResponse(req, `${templateId}.zip`, files);
  });
}

function zipResponse(req: HttpRequest, filename: string, files: Map<string, string>): 'handled' {
  const zip = zipFiles(new Map([...files].map(([p, text]) => [p, Buffer.from(text)])));
  req.response.writeHead(200, { 'Content-Type': 'application/zip', 'Content-Disposition': `attachment; filename=${filename}`, 'Content-Length': String(zip.byteLength) }).end(zip);
  return 'handled';
}

function toFiles(body: unknown, current: FileMap): FileMap {
  try {
    return appJsonToFiles(body, current);
  } catch (e) {
    if (e instanceof AppJsonError) throw badRequest(`invalid app: ${e.message}`);
    throw e;
  }
}

function draftView(d: Draft) {
  return { _id: d._id, user_id: d.user_id, app: d.app };
}

/**
 * The checker's verdict on the app the files would make: undefined when it has no error, else a message
 * naming each file (relative to the app) with its position and problem.
 */
async function problemsOf(app: OpenedApp, next: FileMap): Promise<string | undefined> {
  const others = otherConfigFiles(await readAppFiles(app.dir));
  const all: Record<string, string> = {};
  for (const [rel, text] of others) all[path.join(app.dir, ...rel.split('/'))] = text;
  for (const [rel, text] of next) all[path.join(app.dir, ...rel.split('/'))] = text;
  const model = await loadApp(memoryFileSystem(all), app.dir);
  const errors = sortDiagnostics(checkApp(model)).filter((d) => d.severity === 'error');
  if (errors.length === 0) return undefined;
  const shown = errors.slice(0, 10).map((d) => `${path.relative(app.dir, d.file).split(path.sep).join('/')}:${d.range.start.line + 1}:${d.range.start.character + 1}: ${d.message} (${d.code})`);
  return `the app has ${errors.length} error${errors.length === 1 ? '' : 's'}: ${shown.join('; ')}${errors.length > 10 ? '; …' : ''}`;
}

function uniqueClientAppId(name: string, taken: string[]): string {
  for (;;) {
    const id = newClientAppId(name, () => randomBytes(1)[0]! / 256);
    // No id may be a prefix of another: the platform CLI finds apps by client app id prefix.
    if (!taken.some((t) => t.startsWith(id) || id.startsWith(t))) return id;
  }
}

/** `<root>/<name>`, or `<name>-2`… when a folder of that name exists. */
async function freeFolder(rootDir: string, name: string): Promise<string> {
  await fsp.mkdir(rootDir, { recursive: true });
  for (let n = 1; ; n++) {
    const dir = path.join(rootDir, n === 1 ? name : `${name}-${n}`);
    try { await fsp.mkdir(dir); return dir; } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}
