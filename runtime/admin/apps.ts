// The apps one runtime serves, and the HTTP front that sends each request to its app: Admin API paths to
// the admin routes, client paths by the client app id in the path, the few client paths without one
// (session refresh, profile) to the app whose secret signed the bearer token.
import { createHash } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Diagnostic } from '../../core/diagnostics';
import { APP_ENDPOINT_PATH } from '../../core/apiRoutes';
import type { AppFileSystem } from '../../core/fs';
import type { AppModel } from '../../core/model';
import type { AccountEvents, WatchedLogin } from '../auth/account-events';
import type { AuthenticatedRequest, AuthService } from '../auth/service';
import type { DataAccess } from '../data';
import { ApiError } from '../http/errors';
import { Router, type RouteMatch } from '../http/router';
import type { Logger } from '../http/server';
import type { AppLogEntry } from '../log';
import type { DocumentStore } from '../store/types';
import type { RuntimeSync } from '../sync';
import type { LocalAppAccess } from './local';

/** One served app, as admin routes (and the editor's local-only routes) see it. */
export interface HostedAppHandle {
  /** The internal `_id` (24 hex) every Admin API path uses; stable for a group and client app id. */
  readonly id: string;
  readonly clientAppId: string;
  /** The app's folder: the source of truth every admin write goes to. */
  readonly dir: string;
  readonly dataDir: string;
  readonly store: DocumentStore;
  /** What is being served now (a reload swaps it). */
  current(): { app: AppModel; diagnostics: Diagnostic[]; auth: AuthService; data: DataAccess };
  /** Reads the app's files again; a version with errors is not taken. */
  reload(): Promise<{ applied: boolean; diagnostics: Diagnostic[] }>;
  /** Partition-based sync: what the service config's `sync` object and `sync/data` routes call. */
  readonly sync: RuntimeSync;
  /** The app's newest warnings and errors (the Admin API's `logs`). */
  recentLogs(): AppLogEntry[];
  /** While debugging functions: where the app's function inspector listens now (its URL holds its secret), or why it does not. */
  readonly functionInspector?: { url: string; port: number } | { error: string };
}

/** A served app with what the runtime itself needs of it. */
export interface OpenedApp extends HostedAppHandle {
  readonly router: Router;
  /** What the editor's local-only routes (./local.ts) do with this app. */
  readonly local: LocalAppAccess;
  ownsToken(headers: IncomingHttpHeaders): boolean;
  /**
   * The app's WebSocket endpoints by their path below `/api/client/v2.0/app/<client app id>/` (the live
   * partition feed is `sync/feed`): `routeUpgrade` hands each upgrade to the app its path names.
   */
  readonly upgrades: ReadonlyMap<string, UpgradeHandler>;
  /** Sessions revoked, users disabled or deleted: `watch` a sync connection's login to end it on them or on token expiry. */
  readonly accountEvents: AccountEvents;
  /** The caller of `Authorization: Bearer <access token>` and its login (user, session, expiry) to watch; rejects with a 401 ApiError. */
  authenticateLogin(headers: IncomingHttpHeaders): Promise<{ caller: AuthenticatedRequest; login: WatchedLogin }>;
  /** The user of the request's bearer token when this app signed it and already verified it (for the request log). */
  verifiedUserOf(headers: IncomingHttpHeaders): string | undefined;
  /** The app's CORS origins and hosted site, joined into the shared HTTP front's. */
  allowedOrigins(): readonly string[];
  hostedSites(): { appId: string; filesDir: string }[];
  close(): Promise<void>;
}

/** Takes an HTTP upgrade request (the Host is already checked): answers it or completes the handshake. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** What the runtime remembers about an app beyond its files (`<admin dir>/apps.json`, by client app id). */
export interface AppRecord { template_id?: string; product?: string; created?: number }

export function internalAppId(groupId: string, clientAppId: string): string {
  return createHash('sha256').update(`app\u0000${groupId}\u0000${clientAppId}`).digest('hex').slice(0, 24);
}

export class HostedApps {
  private records: Record<string, AppRecord> | undefined;

  constructor(
    private readonly apps: OpenedApp[],
    readonly options: {
      /** Where new apps are created; undefined when the runtime serves one app folder. */
      rootDir: string | undefined;
      open(appDir: string): Promise<OpenedApp>;
      groupId: string;
      adminDir: string;
      log: Logger;
      fs: AppFileSystem;
    },
  ) {}

  list(): readonly OpenedApp[] { return this.apps; }

  byClientId(clientAppId: string): OpenedApp | undefined { return this.apps.find((a) => a.clientAppId === clientAppId); }

  /** The app of an Admin API path; 404 with the platform's body otherwise. */
  get(groupId: string, id: string): OpenedApp {
    this.checkGroup(groupId);
    const app = this.apps.find((a) => a.id === id);
    if (!app) throw new ApiError(404, 'AppNotFound', `app not found: '${id}'`);
    return app;
  }

  checkGroup(groupId: string): void {
    if (groupId !== this.options.groupId) throw new ApiError(404, 'GroupNotFound', `group not found: '${groupId}'`);
  }

  /** Starts serving an app folder just written (created or imported through the Admin API). */
  async add(appDir: string, record: AppRecord): Promise<OpenedApp> {
    const app = await this.options.open(appDir);
    if (this.byClientId(app.clientAppId)) {
      await app.close();
      throw new ApiError(409, 'AppAlreadyExists', `an app with client app id '${app.clientAppId}' already exists`);
    }
    this.apps.push(app);
    await this.setRecord(app.clientAppId, record);
    return app;
  }

  /**
   * Stops serving the app and removes its folder and its data (users, documents, sync history): an app
   * created later in the same folder (the same name) starts empty, as a new app does on the platform.
   */
  async remove(app: OpenedApp): Promise<void> {
    const i = this.apps.indexOf(app);
    if (i >= 0) this.apps.splice(i, 1);
    await app.close();
    await fsp.rm(app.dir, { recursive: true, force: true });
    // A single served app's data folder is the runtime's own (admin keys included): kept.
    const adminInside = !path.relative(app.dataDir, this.options.adminDir).startsWith('..');
    if (!adminInside) await fsp.rm(app.dataDir, { recursive: true, force: true });
    await this.setRecord(app.clientAppId, undefined);
  }

  async record(clientAppId: string): Promise<AppRecord> {
    return (await this.readRecords())[clientAppId] ?? {};
  }

  private async readRecords(): Promise<Record<string, AppRecord>> {
    if (!this.records) {
      try {
        this.records = JSON.parse(await fsp.readFile(path.join(this.options.adminDir, 'apps.json'), 'utf8')) as Record<string, AppRecord>;
      } catch {
        this.records = {};
      }
    }
    return this.records;
  }

  private async setRecord(clientAppId: string, record: AppRecord | undefined): Promise<void> {
    const records = await this.readRecords();
    if (record) records[clientAppId] = record;
    else delete records[clientAppId];
    await fsp.writeFile(path.join(this.options.adminDir, 'apps.json'), JSON.stringify(records, null, 2) + '\n', { mode: 0o600 });
  }
}

/** Admin and Atlas paths go to the admin routes; everything else to the app it names (or whose token it carries). */
export class RuntimeRouter extends Router {
  constructor(private readonly admin: Router, private readonly apps: HostedApps) { super(); }

  override match(method: string, pathname: string): RouteMatch {
    if (ADMIN_PATH.test(pathname)) return this.admin.match(method, pathname);
    const apps = this.apps.list();
    if (apps.length === 0) return { kind: 'none' };
    if (apps.length === 1) return apps[0]!.router.match(method, pathname);
    const named = appNamedIn(pathname, apps);
    if (named) return named.router.match(method, pathname);
    const first = apps[0]!.router.match(method, pathname);
    if (first.kind !== 'found') return first;
    return {
      kind: 'found',
      params: first.params,
      pattern: first.pattern,
      handler: (req) => {
        const owner = apps.find((a) => a.ownsToken(req.headers)) ?? apps[0]!;
        const m = owner.router.match(method, pathname);
        if (m.kind !== 'found') throw new ApiError(404, 'NotFound', `no route matches ${method} ${pathname}`);
        return m.handler(req);
      },
    };
  }
}

/**
 * The upgrade handler of a path `/api/client/v2.0/app/<client app id>/<endpoint>`, among every served
 * app (the first, second or a later one alike); an ApiError (404) when no app or endpoint matches.
 */
export function upgradeHandlerFor(apps: readonly Pick<OpenedApp, 'clientAppId' | 'upgrades'>[], url: string | undefined): UpgradeHandler | ApiError {
  let pathname: string;
  try { pathname = new URL(url ?? '/', 'http://localhost').pathname; } catch { return new ApiError(404, 'NotFound', 'no WebSocket endpoint at this path'); }
  const m = APP_ENDPOINT_PATH.exec(pathname);
  if (!m) return new ApiError(404, 'NotFound', 'no WebSocket endpoint at this path');
  const clientAppId = safeDecode(m[1]!);
  const app = apps.find((a) => a.clientAppId === clientAppId);
  if (!app) return new ApiError(404, 'AppNotFound', `cannot find app using Client App ID '${clientAppId}'`);
  return app.upgrades.get(m[2]!) ?? new ApiError(404, 'NotFound', `no WebSocket endpoint at this path (this app has: ${[...app.upgrades.keys()].join(', ') || 'none'})`);
}

/** The app a path names by its client app id (`/api/client/v2.0/app/<id>/…`, `/app/<id>/endpoint/…`). */
export function appOfPath(pathname: string, apps: readonly OpenedApp[]): OpenedApp | undefined {
  return appNamedIn(pathname, apps);
}

/** Paths the admin routes answer: the Admin API, the private version route and the Atlas routes the platform CLI calls. */
export const ADMIN_PATH = /^\/api\/(admin|private|atlas|public)\//;

function appNamedIn(pathname: string, apps: readonly OpenedApp[]): OpenedApp | undefined {
  const segments = pathname.split('/');
  for (let i = 0; i < segments.length - 1; i++) {
    if (segments[i] !== 'app') continue;
    const id = safeDecode(segments[i + 1]!);
    const app = apps.find((a) => a.clientAppId === id);
    if (app) return app;
  }
  return undefined;
}

function safeDecode(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}
