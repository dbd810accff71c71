// The local platform, assembled: one HTTP server speaking the client API for one app directory.
// Long-lived parts (HTTP server, data store, user records, function workers) live as long as the runtime;
// everything derived from the app's files is an `AppState` that a reload rebuilds and swaps in one step,
// so a request sees either the old app or the new one, never a mix. A reload whose files have errors
// keeps serving the last good state.
import { createHash } from 'node:crypto';
import chokidar from 'chokidar';
import fs from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { checkApp } from '../core/check';
import { sortDiagnostics, type Diagnostic } from '../core/diagnostics';
import { nodeFileSystem, type AppFileSystem } from '../core/fs';
import { generateSchema, type GeneratedSchema } from '../core/graphql';
import { findAppRoots, loadApp } from '../core/load';
import { isObject } from '../core/json';
import { isClusterSource, type AppModel } from '../core/model';
import { canEvaluate } from '../core/rules';
import { openAuth, type OpenedAuth } from './auth';
import { customUserDataLookup } from './auth/customUserData';
import { registerAuthRoutes } from './auth/routes';
import { registerPushRoutes, thirdPartyServicesIn } from './auth/push';
import type { AuthenticatedRequest, AuthService, AuthUser } from './auth/service';
import type { WatchedLogin } from './auth/account-events';
import type { Clock } from './auth/tokens';
import { createDataAccess, type DataAccess } from './data';
import { registerEndpointRoutes, withEndpointSources } from './endpoints';
import { createFunctionRunner, DEFAULT_FUNCTION_TIMEOUT_MS, type FunctionCallContext, type FunctionInspectorEvent, type FunctionNode, type FunctionRunner, type FunctionUser } from './functions';
import { createGraphqlEndpoint, registerGraphqlRoute, type GraphqlEndpoint } from './graphql';
import { ApiError } from './http/errors';
import { createHostingHandler, hostingUrl } from './http/hosting';
import { FirstMatchRouter, Router } from './http/router';
import { answerUpgrade, createHttpServer, type RunningHttpServer } from './http/server';
import { certificateWarnings, loadTlsPair, watchTlsPair, type TlsFiles, type TlsPair, type TlsWatch } from './http/tls';
import { homePage } from './http/home';
import { recordingLogger, RequestLog, type Logger } from './log';
import { residentBytes, RuntimeMetrics } from './ops/metrics';
import { healthRoutes, worstOf, type CheckOutcome } from './ops/health';
import { METRICS_PATH, metricsRoutes, scraperAuthorization, startMetricsServer } from './ops/metrics-routes';
import type { SyncError } from '../core/sync';
import { SYNC_METADATA_DATABASE } from './store/types';
import { RUNTIME_PROTOCOL_VERSION } from '../core/runtime-protocol';
import { removeRuntimeRecord, writeRuntimeRecord } from './record';
import type { AdminUserCredentials } from './admin/admin-users';
import { AdminAuth, type AdminSessionTokens } from './admin/auth';
import type { AdminKeyPair } from './admin/keys';
import { ADMIN_PATH, appOfPath, HostedApps, internalAppId, RuntimeRouter, upgradeHandlerFor, type HostedAppHandle, type OpenedApp, type UpgradeHandler } from './admin/apps';
import {
  answerOtherKind, createPartitionFeed, createRealmSyncEndpoint, developmentModeWrites, FEED_ENDPOINT, RealmSyncEngine, REALM_SYNC_ENDPOINT, registerSyncLocalRoutes,
  simulatePartition, SyncMigration, SyncSchemaVersions, SyncService, transitionError, type RuntimeSync, type SimulatedUser,
} from './sync';
import { registerAdminRoutes } from './admin/routes';
import { registerLocalRoutes, type LocalAppAccess } from './admin/local';
import { AdminRouteTable } from './admin/table';
import { ADMIN_API } from '../core/apiRoutes';
import type { CorsPolicy } from './http/cors';
import { appDataFolderName, legacyAppDataFolderName, preparePrivateFolder } from './data-folder';
import { loadSecrets, type SecretStore } from './secrets';
import { runServiceAction } from './service-actions';
import { registerDataRoutes } from './data-io/routes';
import { openStore } from './store';
import { withChangeEvents } from './store/changes';
import { createTriggerDispatcher, type TriggerDispatcher } from './triggers';
import type { DocumentStore, StoreCollection } from './store/types';

export interface RuntimeOptions {
  /** One app folder. Give this or `rootDir`. */
  appDir?: string;
  /** A folder holding several apps (found as `asl check` finds them), each served under its own client app id; new apps are created in it. */
  rootDir?: string;
  /**
   * Where data, users and the token secret live; default `<appDir>/.asl`. With `rootDir`: the runtime's
   * own data (admin key, sessions, group id), default `<rootDir>/.asl`; each app keeps its data in
   * `<app>/.asl`, or in `<dataDir>/apps/<app folder>` when `dataDir` is given.
   */
  dataDir?: string;
  /** Answer Admin API requests from other machines too (default: loopback only). */
  adminRemote?: boolean;
  /** Admin users to create or update (email and password logins to the Admin API); only their hashes are kept. */
  adminUsers?: readonly AdminUserCredentials[];
  host?: string;
  /**
   * The base URLs devices reach this runtime at (`scheme://host[:port]`, checked with `checkPublicUrl`):
   * the location answer and links name them, and their hosts pass the Host check.
   */
  publicUrls?: readonly string[];
  /** Serve HTTPS and WSS with this certificate and key (reloaded when the files change). */
  tls?: TlsFiles;
  /** Addresses of the reverse proxy in front, whose X-Forwarded-Proto/-Host/-For are believed. */
  trustedProxies?: readonly string[];
  /** 0 picks a free port. */
  port?: number;
  /** Overrides the app id of the app's metadata. */
  appId?: string;
  functionTimeoutMs?: number;
  /** Lifetime of the access tokens logins and refreshes issue, in seconds (default 1,800, as on the platform). */
  accessTokenSeconds?: number;
  /** Memory functions together may hold beyond their idle level, in MiB (see FunctionRunnerOptions.memoryLimitMb). */
  functionMemoryLimitMb?: number;
  /** `NAME=VALUE` secret values; they win over `secrets.json`. */
  secrets?: readonly string[];
  /** Serve data from a MongoDB server instead of the embedded store. */
  mongodbUri?: string;
  /** Reload when the app's files change on disk. */
  watch?: boolean;
  log: Logger;
  /** Refuse to start (throwing `AppHasErrors`) when an app's files have errors. */
  failOnErrors?: boolean;
  /** Where the runtime's metrics go (default: a registry of its own); `/metrics` serves them. */
  metrics?: RuntimeMetrics;
  /**
   * Also serve `/metrics` (and `/healthz`, `/readyz`) without credentials on this port of 127.0.0.1 only
   * (0 picks a free one). `/metrics` on the main port always needs admin credentials.
   */
  metricsPort?: number;
  /** Start each app's function process at once rather than at its first call (readiness waits for it). */
  startFunctionProcesses?: boolean;
  /** Told after every reload from a file change: whether the new files were taken, and their diagnostics. */
  onReloaded?: (applied: boolean, diagnostics: Diagnostic[]) => void;
  fs?: AppFileSystem;
  clock?: Clock;
  /**
   * Wraps how GraphQL requests are authenticated (`authenticate` is the runtime's own way). Never set by
   * `asl serve`; a benchmark sets it to measure what authentication costs, by letting some requests skip it.
   */
  authenticateGraphql?: (headers: IncomingHttpHeaders, authenticate: (headers: IncomingHttpHeaders) => Promise<AuthenticatedRequest>) => Promise<AuthenticatedRequest>;
  /**
   * Runs functions on this process's threads instead of their own process: no boundary between function
   * code and the runtime. Never set by `asl serve`; a benchmark sets it to measure what the boundary costs.
   */
  functionsUnisolatedForBenchmarks?: boolean;
  /**
   * Debug functions (`asl serve --inspect-functions`): each app's function process runs with Node's
   * inspector on 127.0.0.1 (the first app on `port`, 0 for a free one; later apps on free ones) and calls
   * have no time limit. `onInspector` hears where each app's inspector listens, on every start of its
   * function process (its URL holds the inspector's secret: show it to the developer, never log it).
   * `node` runs the function processes (one with --allow-inspector; default this process's Node).
   */
  inspectFunctions?: { port: number; onInspector?(app: { clientAppId: string; dir: string }, event: FunctionInspectorEvent): void; node?: FunctionNode };
}

export interface RunningRuntime {
  /** The address bound, `http(s)://<host>:<port>`. */
  readonly url: string;
  /** The `publicUrls` given, what devices use. */
  readonly publicUrls: readonly string[];
  readonly port: number;
  /** The client app id of the (first) app. */
  readonly appId: string;
  /** The (first) app's data folder. */
  readonly dataDir: string;
  /** `http://<app id>.localhost:<port>/` when the (first) app has `hosting/files`. */
  readonly hostingUrl?: string;
  /** Diagnostics of the (first) app's state being served. */
  readonly diagnostics: Diagnostic[];
  /** Reloads the (first) app's files now; resolves with whether the new state was taken. */
  reload(): Promise<{ applied: boolean; diagnostics: Diagnostic[] }>;
  /** Every app served, in folder order (apps created through the Admin API included). */
  readonly apps: readonly HostedAppHandle[];
  /** The Admin API's base URL, `<url>/api/admin/v3.0`. */
  readonly adminUrl: string;
  /** The runtime's group (project) id, stable across restarts. */
  readonly groupId: string;
  /** The admin public key of the runtime's data folder. */
  readonly adminPublicKey: string;
  /** The admin key pair, only when this start created it (shown once, then only its hash is kept). */
  readonly createdAdminKey: AdminKeyPair | undefined;
  /**
   * A new admin session for the process that started this runtime (the editor passes it on in its
   * child-process handshake): the same tokens a login with the admin key pair gives.
   */
  mintAdminSession(): Promise<AdminSessionTokens>;
  /** The (first) app's partition-based sync: the state machine, live sessions, admin functions, simulator. */
  readonly sync: RuntimeSync;
  /** `http://127.0.0.1:<port>/metrics` when `metricsPort` was given. */
  readonly metricsUrl?: string;
  /** What `/readyz` checks, by name (`ok` or a word saying what is not ready). */
  readiness(): Record<string, CheckOutcome>;
  /**
   * The first half of a graceful stop (SIGTERM): the port is released (new connections are refused),
   * readiness turns `draining`, every Realm sync session gets a try-again error (201, Transient: the SDK
   * keeps the realm and reconnects after its backoff) and its connection closes, and the requests in
   * flight are waited for up to `timeoutMs`. `close()` does the rest.
   */
  drain(timeoutMs: number): Promise<{ requestsFinished: boolean; syncConnections: number }>;
  close(): Promise<void>;
}

/** The try-again error sync sessions end with when the runtime stops (see RunningRuntime.drain). */
export const SHUTTING_DOWN: SyncError = { code: 201, name: 'ErrorOtherSessionError', message: 'the server is shutting down; try again later', action: 'retry-later', tryAgain: true };

/** What an app gives the runtime's readiness checks and drain (kept beside OpenedApp, which the Admin API's registry holds). */
interface AppOperations {
  storeOutcome(): CheckOutcome;
  functionsOutcome(): CheckOutcome;
  /** Ends the app's sync connections with SHUTTING_DOWN and refuses new ones; how many were told. */
  drainSync(): number;
}
const appOperations = new WeakMap<OpenedApp, AppOperations>();

/** Deeper selections are refused: deep relationship chains multiply store reads per request. */
const MAX_QUERY_DEPTH = 32;
const MAX_GRAPHQL_BODY_BYTES = 4 * 1024 * 1024;

/** What one load of the app's files gives; replaced as a whole on reload. */
interface AppState {
  app: AppModel;
  diagnostics: Diagnostic[];
  generated: GeneratedSchema;
  secrets: SecretStore;
  /** `%%values` / `context.values`: every app value, secrets resolved. */
  values: Record<string, unknown>;
  auth: AuthService;
  data: DataAccess;
  graphql: GraphqlEndpoint<FunctionUser>;
  router: Router;
  triggers: TriggerDispatcher;
  findCustomUserData?: (user: AuthUser) => Promise<Record<string, unknown> | undefined>;
}

/** A stable client app id for an app whose export carries none: `<name>-<5 letters>`, like the platform's. */
export function deriveAppId(name: string): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '') || 'app';
  const digest = createHash('sha256').update(name).digest();
  const suffix = Array.from(digest.subarray(0, 5), (b) => String.fromCharCode(97 + (b % 26))).join('');
  return `${slug}-${suffix}`;
}

export async function startRuntime(options: RuntimeOptions): Promise<RunningRuntime> {
  const fsys = options.fs ?? nodeFileSystem;
  const log = options.log;
  if ((options.appDir === undefined) === (options.rootDir === undefined)) throw new Error('startRuntime needs either appDir or rootDir');
  const rootDir = path.resolve(options.rootDir ?? options.appDir!);
  const runtimeDataDir = path.resolve(options.dataDir ?? path.join(rootDir, '.asl'));
  const appDirs = options.appDir !== undefined ? [rootDir] : await findAppRoots(fsys, rootDir);
  const dataDirOf = (appDir: string) => options.appDir !== undefined
    ? runtimeDataDir
    : options.dataDir !== undefined ? appDataDirUnder(runtimeDataDir, rootDir, path.relative(rootDir, appDir)) : path.join(appDir, '.asl');
  preparePrivateFolder(runtimeDataDir);
  const admin = await AdminAuth.open({ adminDir: path.join(runtimeDataDir, 'admin'), clock: options.clock, users: options.adminUsers });
  const hosted: OpenedApp[] = [];
  let inspectPort = options.inspectFunctions?.port;
  /** The options of the next app opened: only the first gets the given inspector port. */
  const appOptions = (appId: string | undefined): RuntimeOptions => {
    const inspect = options.inspectFunctions && { ...options.inspectFunctions, port: inspectPort ?? 0 };
    inspectPort = 0;
    return { ...options, appId, ...(inspect ? { inspectFunctions: inspect } : {}) };
  };
  const bindHost = options.host ?? '127.0.0.1';
  const publicUrls = options.publicUrls ?? [];
  let http: RunningHttpServer | undefined;
  /**
   * Each app's origins for its own paths; admin routes and the runtime's own pages (`/`, `/logs`) only the
   * runtime's own origin (its port on a loopback name or the bound host; never a hosted site); paths naming
   * no app (session refresh, profile, which the bearer token ties to its app) every app's.
   */
  const corsFor = (pathname: string): CorsPolicy => {
    // Decided on the path the router matches (`/logs/` and `/%6Cogs` reach `/logs`; `//logs` parses as `/`); one it cannot decode reaches no route.
    const routed = routedPath(pathname);
    if (routed === undefined || ADMIN_PATH.test(routed) || routed === '/logs' || routed === '/' || routed === METRICS_PATH) return { allowedOrigins: [...runtimeOrigins(bindHost, http?.port ?? options.port ?? 0, options.tls ? 'https' : 'http'), ...publicUrls], allowLocalhost: false };
    const app = appOfPath(pathname, hosted);
    if (app) return { allowedOrigins: app.allowedOrigins(), allowLocalhost: true };
    return { allowedOrigins: hosted.flatMap((h) => h.allowedOrigins()), allowLocalhost: true };
  };
  const closeAll = () => Promise.allSettled(hosted.map((h) => h.close()));
  // A bad pair fails the start before any app is opened, with the files named.
  const tlsPair = options.tls ? loadTlsPair(options.tls) : undefined;
  const metrics = options.metrics ?? new RuntimeMetrics();
  options = { ...options, metrics };
  try {
    for (const appDir of appDirs) {
      hosted.push(await openHostedApp(appOptions(options.appDir !== undefined ? options.appId : undefined), appDir, dataDirOf(appDir), admin));
    }
  } catch (e) {
    await closeAll();
    throw e;
  }
  /** Writes an app's runtime record once the runtime listens (apps created later get theirs when opened). */
  let announce: ((app: OpenedApp) => void) | undefined;
  const registry = new HostedApps(hosted, {
    rootDir: options.appDir === undefined ? rootDir : undefined,
    open: async (appDir) => {
      const app = await openHostedApp(appOptions(undefined), appDir, dataDirOf(appDir), admin);
      announce?.(app);
      return app;
    },
    groupId: admin.groupId,
    adminDir: path.join(runtimeDataDir, 'admin'),
    log,
    fs: fsys,
  });
  const adminRouter = new Router();
  const adminTable = new AdminRouteTable(adminRouter, admin, { allowRemote: options.adminRemote === true });
  registerAdminRoutes(adminTable, { auth: admin, apps: registry, log });
  registerLocalRoutes(adminTable, (clientAppId) => registry.byClientId(clientAppId)?.local);
  registerSyncLocalRoutes(adminTable, (clientAppId) => registry.byClientId(clientAppId)?.sync);
  registerDataRoutes(adminTable, (clientAppId) => registry.byClientId(clientAppId));
  /** Recent requests, served at `/logs?co_id=…` (the link of every error body). */
  const requestLog = new RequestLog();
  const upgraded = new Set<Duplex>();
  let draining = false;
  const readiness = (): Record<string, CheckOutcome> => {
    const operations = registry.list().map((app) => appOperations.get(app)).filter((o) => o !== undefined);
    return {
      // Every app found was loaded before the runtime listened (a start that cannot load one fails); a folder
      // of apps may hold none yet (--allow-no-apps), and serves the Admin API that creates them.
      apps: registry.list().length > 0 || options.rootDir !== undefined ? 'ok' : 'none',
      store: worstOf(operations.map((o) => o.storeOutcome())),
      functions: worstOf(operations.map((o) => o.functionsOutcome())),
      draining: draining ? 'draining' : 'ok',
    };
  };
  const scrapers = scraperAuthorization((req, gone) => admin.authenticateScraper(req.headers, req.clientAddress, gone), options.adminRemote === true);
  try {
    http = await createHttpServer({
      host: bindHost, port: options.port ?? 0, log, cors: corsFor, requestLog, onAnswered: metrics.httpAnswered,
      publicUrls, tls: tlsPair, trustedProxies: options.trustedProxies,
      router: new FirstMatchRouter([healthRoutes(readiness), metricsRoutes(metrics, scrapers), runtimePages(registry, requestLog, admin), new RuntimeRouter(adminRouter, registry)]),
      hosting: createHostingHandler(() => hosted.flatMap((h) => h.hostedSites())),
      userOf: (headers) => {
        for (const app of registry.list()) {
          const id = app.verifiedUserOf(headers);
          if (id) return id;
        }
        return undefined;
      },
      // WebSocket upgrades (Host already checked): each to the endpoint of the app its path names.
      upgrade: (req, socket, head) => {
        // Upgraded sockets leave the HTTP server's hands but still hold its close: they end with the runtime.
        upgraded.add(socket);
        socket.once('close', () => upgraded.delete(socket));
        const handler = upgradeHandlerFor(registry.list(), req.url);
        if (handler instanceof ApiError) answerUpgrade(socket, handler, '');
        else handler(req, socket, head);
      },
    });
  } catch (e) {
    await closeAll();
    throw (e as NodeJS.ErrnoException).code === 'EADDRINUSE'
      ? new Error(`port ${options.port} on ${options.host ?? '127.0.0.1'} is already in use; pick another with --port`)
      : e;
  }
  let metricsServer: RunningHttpServer | undefined;
  if (options.metricsPort !== undefined) {
    try {
      metricsServer = await startMetricsServer({ port: options.metricsPort, metrics, readiness, log });
    } catch (e) {
      await http.close();
      await closeAll();
      throw (e as NodeJS.ErrnoException).code === 'EADDRINUSE' ? new Error(`metrics port ${options.metricsPort} on 127.0.0.1 is already in use; pick another with --metrics-port`) : e;
    }
  }
  // Local tools (the `asl` CLI) find this runtime through a record in each data folder it holds, with a
  // session of their own, and ask it instead of refusing the locked folder.
  const toolSession = await admin.mintSession();
  let servedFingerprint = tlsPair?.fingerprint256;
  announce = (app) => writeRuntimeRecord(app.dataDir, {
    version: RUNTIME_PROTOCOL_VERSION, pid: process.pid, url: http.url, appId: app.clientAppId,
    admin: { accessToken: toolSession.access_token, refreshToken: toolSession.refresh_token },
    ...(servedFingerprint ? { tlsCertificateSha256: servedFingerprint } : {}),
  });
  for (const app of registry.list()) announce(app);
  const first = () => registry.list()[0];
  const server = http;
  let tlsWatch: TlsWatch | undefined;
  if (options.tls && tlsPair) {
    const warn = (pair: TlsPair) => { for (const w of certificateWarnings(pair, publicUrls, options.clock?.now() ?? Date.now())) log.warn(w); };
    log.info(`TLS certificate for ${tlsPair.names}, valid until ${tlsPair.validTo.toISOString()}`);
    warn(tlsPair);
    tlsWatch = watchTlsPair(options.tls, (pair) => {
      server.setTls(pair);
      servedFingerprint = pair.fingerprint256;
      for (const app of registry.list()) announce?.(app);
      log.info(`TLS certificate reloaded: ${pair.names}, valid until ${pair.validTo.toISOString()}`);
      warn(pair);
    }, (problem) => log.error(`TLS certificate not reloaded, the previous one is still served: ${problem}`));
  }
  const localUrl = server.url.replace(/\/\/(?:0\.0\.0\.0|\[::\]):/, '//127.0.0.1:');
  return {
    url: server.url,
    publicUrls,
    port: server.port,
    get appId() { return first()?.clientAppId ?? ''; },
    get dataDir() { return first()?.dataDir ?? runtimeDataDir; },
    get hostingUrl() { const site = hosted[0]?.hostedSites()[0]; return site ? hostingUrl(site.appId, server.port, options.tls ? 'https' : 'http') : undefined; },
    get diagnostics() { return first()?.current().diagnostics ?? []; },
    reload: () => first()?.reload() ?? Promise.resolve({ applied: false, diagnostics: [] }),
    get apps() { return registry.list(); },
    // Loopback-only unless told otherwise, so announced at the address this machine reaches it at.
    adminUrl: `${options.adminRemote && publicUrls[0] ? publicUrls[0] : localUrl}${ADMIN_API}`,
    groupId: admin.groupId,
    adminPublicKey: admin.publicKey,
    createdAdminKey: admin.createdKey,
    mintAdminSession: () => admin.mintSession(),
    get sync() { return first()!.sync; },
    ...(metricsServer ? { metricsUrl: `${metricsServer.url}${METRICS_PATH}` } : {}),
    readiness,
    async drain(timeoutMs) {
      draining = true;
      metrics.draining = true;
      // The listening socket closes first, so nothing new arrives while sync sessions are told to go.
      const requests = server.drain(timeoutMs);
      let syncConnections = 0;
      for (const app of registry.list()) syncConnections += appOperations.get(app)?.drainSync() ?? 0;
      return { requestsFinished: await requests, syncConnections };
    },
    async close() {
      announce = undefined;
      tlsWatch?.close();
      for (const app of registry.list()) removeRuntimeRecord(app.dataDir);
      await admin.logout({ authorization: `Bearer ${toolSession.refresh_token}` }).catch(() => undefined);
      const closed = server.close();
      for (const socket of upgraded) socket.destroy();
      await closed;
      await metricsServer?.close();
      await Promise.allSettled(registry.list().map((h) => h.close()));
    },
  };
}

async function openHostedApp(options: RuntimeOptions, appDirIn: string, dataDirIn: string, admin: AdminAuth): Promise<OpenedApp> {
  const groupId = admin.groupId;
  const fsys = options.fs ?? nodeFileSystem;
  const appDir = path.resolve(appDirIn);
  const appLog = recordingLogger(options.log);
  const log = appLog.logger;
  const first = await loadChecked(fsys, appDir);
  if (!first.app.rootFile || first.app.loadDiagnostics.some((d) => d.code === 'app/no-root-file')) {
    throw new Error(`no app in ${appDir}: expected root_config.json, realm_config.json, stitch.json or a legacy config.json`);
  }
  logDiagnostics(log, appDir, first.diagnostics);
  const errors = first.diagnostics.filter((d) => d.severity === 'error');
  // Before anything is opened or recorded in the data folder (sync state, indexes): a refused start leaves no trace.
  if (options.failOnErrors && errors.length > 0) throw new AppHasErrors(appDir, errors);
  const appId = options.appId ?? first.app.appId ?? deriveAppId(first.app.name);
  const dataDir = path.resolve(dataDirIn);
  preparePrivateFolder(dataDir);

  const clock = options.clock;
  const now = clock ? () => new Date(clock.now()) : undefined;
  let state!: AppState;
  let sync!: SyncService;
  // Every write reaches the current app's DATABASE triggers and sync (the engine fans it out to every session); collections
  // neither watches skip the extra reads.
  const store: DocumentStore = withChangeEvents(
    await openStore({ dir: path.join(dataDir, 'data'), mongodbUri: options.mongodbUri, clock: now }),
    (change) => {
      state.triggers.onChange(change);
      realmSync.onChange(change);
    },
    {
      wants: (database, collection, operationType) => state.triggers.wants(database, collection, operationType) || realmSync.wants(database, collection),
      now,
    },
  );
  sync = new SyncService({ dataDir, store, log, ...(clock ? { now: () => clock.now() } : {}) });
  const devMode = developmentModeWrites(appDir, () => sync.runtimeState.running?.settings, () => reload());
  const realmSync: RealmSyncEngine = new RealmSyncEngine({
    service: sync, store, log, ...(clock ? { now: () => clock.now() } : {}),
    dataFor: (user) => state.data.forSyncSession(user as FunctionUser),
    rulesReadUser: () => state.data.rulesReadUser,
    ...devMode,
  });
  // Breaking changes of the synced schema while flexible sync runs make numbered versions (looked at after each reload).
  const schemaVersions = new SyncSchemaVersions({
    dataDir, store, log, ...(clock ? { now: () => clock.now() } : {}),
    current: async () => ({ schema: await realmSync.realmSchema(), versioning: sync.flexible && (sync.runtimeState.status === 'enabled' || sync.runtimeState.status === 'paused') }),
  });
  const opened: OpenedAuth = await openAuth({
    dataDir, appId, providers: first.app.authProviders, secrets: loadSecrets({ file: first.app.secretsFile, flags: options.secrets }).store, log, clock: options.clock,
    ...(options.accessTokenSeconds !== undefined ? { accessTokenSeconds: options.accessTokenSeconds } : {}),
  });
  const cors: { allowedOrigins: readonly string[] } = { allowedOrigins: [] };

  // The same caller object (a remembered bearer token) yields the same user object, which lets the data
  // access keep the user's rule decisions between requests.
  const usersOfCallers = new WeakMap<AuthenticatedRequest, FunctionUser>();
  const userOf = (caller: AuthenticatedRequest): FunctionUser => {
    let user = usersOfCallers.get(caller);
    if (!user) {
      user = {
        id: caller.user.id, type: caller.user.type, data: caller.user.data, custom_data: caller.customData ?? {},
        identities: caller.user.identities.map((i) => ({ ...i })),
      };
      usersOfCallers.set(caller, user);
    }
    return user;
  };
  const collectionsFor = (ctx: FunctionCallContext) => (service: string, database: string, collection: string): StoreCollection =>
    state.data.forUser(ctx.runAsSystem || !ctx.user ? 'system' : ctx.user, ctx.request).collection(service, database, collection);

  const inspectFunctions = options.inspectFunctions;
  let functionInspector: FunctionInspectorEvent | undefined;
  /** Resolves on the first start of the function process while debugging: the runtime announces its address with the others. */
  let inspectorStarted: (event: FunctionInspectorEvent) => void = () => undefined;
  const firstInspector = new Promise<FunctionInspectorEvent>((resolve) => {
    inspectorStarted = (event) => {
      resolve(event);
      functionInspector = event;
      if ('error' in event) log.error(event.error);
      else log.info(`function inspector listening on 127.0.0.1:${event.port} (its address, which holds its secret, is printed once on the runtime's output)`);
      inspectFunctions?.onInspector?.({ clientAppId: appId, dir: appDir }, event);
    };
  });
  const functions: FunctionRunner = createFunctionRunner({
    // Endpoint functions get their request/response objects built inside the worker from a wrapped source.
    loadSource: withEndpointSources(() => state.app, (name) => {
      const file = state.app.functions.get(name)?.sourceFile;
      return file ? { source: file.text, path: file.path } : undefined;
    }),
    host: {
      serviceAction: (service, action, args, ctx) => runServiceAction(collectionsFor(ctx), service, action, args),
      storedOriginals: (found) => store.storedOriginals?.(found),
      values: { get: (name) => (Object.hasOwn(state.values, name) ? state.values[name] : undefined) },
      get environment() { return environmentOf(state.app); },
      executeFunction: (name, args, ctx) => runFunction(name, args, { ...ctx, runAsSystem: ctx.runAsSystem || state.app.functions.get(name)?.runAsSystem }),
    },
    timeoutMs: options.functionTimeoutMs ?? DEFAULT_FUNCTION_TIMEOUT_MS,
    ...(options.functionMemoryLimitMb ? { memoryLimitMb: options.functionMemoryLimitMb } : {}),
    ...(options.functionsUnisolatedForBenchmarks ? { unisolatedForBenchmarks: true } : {}),
    log: (fn, level, text) => (level === 'error' ? log.error : level === 'warn' ? log.warn : log.info)(`[function ${fn}] ${text}`),
    packagesDir: path.join(appDir, 'functions', 'node_modules'),
    ...(inspectFunctions ? { inspect: { port: inspectFunctions.port, onInspector: (event: FunctionInspectorEvent) => inspectorStarted(event), ...(inspectFunctions.node ? { node: inspectFunctions.node } : {}) } } : {}),
  });
  const metrics = options.metrics ?? new RuntimeMetrics({ defaultMetrics: false });
  const runFunction = (name: string, args: unknown[], ctx: FunctionCallContext) => metrics.timeFunction(appId, () => functions.run(name, args, ctx));

  /** A call on behalf of a user (client call, resolver): the function's `can_evaluate` must hold for that user first. */
  async function callAsUser(name: string, args: unknown[], user: FunctionUser): Promise<unknown> {
    const fn = state.app.functions.get(name);
    const allowed = await canEvaluate(fn?.canEvaluate, {
      user, args, values: state.values, environment: environmentOf(state.app),
      callFunction: (fnName, fnArgs) => runFunction(fnName, fnArgs, { runAsSystem: true }),
    });
    if (!allowed) throw new CallNotAllowedError(`rule not matched for function "${name}": its can_evaluate expression is false for this user`);
    return runFunction(name, args, { user, runAsSystem: fn?.runAsSystem });
  }

  function buildState(app: AppModel, diagnostics: Diagnostic[]): AppState {
    const secrets = loadSecrets({ file: app.secretsFile, flags: options.secrets }).store;
    const values = Object.fromEntries(app.values.map((v) => [v.name, valueOfIn(app, secrets, v.name)]));
    const generated = generateSchema(app);
    const data = createDataAccess({
      app, store,
      callFunction: (name, args, user) => runFunction(name, args, { user }),
      now,
      onWarning: (message) => log.warn(message),
      values,
      environment: environmentOf(app),
    });
    const systemCollection = (service: string, database: string, collection: string) => data.forUser('system').collection(service, database, collection);
    const findCustomUserData = customUserDataLookup(app.customUserData, systemCollection);
    const triggers = createTriggerDispatcher({ app, log, clock: options.clock, runFunction: (name, args) => runFunction(name, args, { runAsSystem: true }) });
    const auth = opened.serviceFor({
      appId, providers: app.authProviders, secrets, log,
      onAuthEvent: (event) => triggers.onAuthEvent({ ...event, user: userOf({ user: event.user }) }),
      runFunction: (name, args) => runFunction(name, args, { runAsSystem: true }),
      findCustomUserData,
      onUserCreated: app.customUserData?.enabled && app.customUserData.onUserCreationFunctionName
        ? async (user: AuthUser) => { await runFunction(app.customUserData!.onUserCreationFunctionName!, [userOf({ user })], { runAsSystem: true }); }
        : undefined,
    });
    const graphql = createGraphqlEndpoint<FunctionUser>({
      generated,
      collectionFor: (user, service, database, collection) => data.forUser(user).collection(service, database, collection),
      runFunction: (name, args, user) => callAsUser(name, args, user),
      disableIntrospection: app.graphql.disableSchemaIntrospection,
      limits: { maxQueryDepth: MAX_QUERY_DEPTH, maxBodyBytes: MAX_GRAPHQL_BODY_BYTES },
    });
    const authenticate = (headers: IncomingHttpHeaders): Promise<AuthenticatedRequest> => auth.authenticateRequest(headers);
    const router = new Router();
    registerAuthRoutes(router, auth, {
      // A page of the runtime's own public origin may log in like a loopback one.
      allowedOrigins: () => [...app.allowedRequestOrigins, ...(options.publicUrls ?? [])],
      location: { deploymentModel: app.deploymentModel, location: app.location },
      functions: {
        functions: app.functions,
        callFunction: (name, args, caller) => callAsUser(name, args, userOf(caller)),
        serviceAction: (service, action, args, caller) => runServiceAction(
          (s, d, c) => data.forUser(userOf(caller)).collection(s, d, c), service, action, args[0]),
      },
    });
    // Read once per version of the app: a change to services/ reloads it.
    let thirdPartyServices: Promise<Map<string, string>> | undefined;
    registerPushRoutes(router, auth, { services: () => (thirdPartyServices ??= thirdPartyServicesIn(app.rootDir)) });
    registerEndpointRoutes(router, {
      app, appId, secrets, log, values,
      environment: environmentOf(app),
      authenticate,
      findUser: async (userId) => {
        const user = auth.user(userId);
        if (!user) return undefined;
        const customData = await findCustomUserData?.(user);
        return { user, ...(customData ? { customData } : {}) };
      },
      runFunction: (name, args, ctx) => runFunction(name, args, ctx),
      collectionFor: (principal, service, database, collection) => data.forUser(principal).collection(service, database, collection),
    });
    registerGraphqlRoute(router, {
      appId, endpoint: graphql, userOf,
      authenticate: (req) => (options.authenticateGraphql ? options.authenticateGraphql(req.headers, authenticate) : authenticate(req.headers)),
    });
    return { app, diagnostics, generated, secrets, values, auth, data, graphql, router, triggers, ...(findCustomUserData ? { findCustomUserData } : {}) };
  }

  /** Hands the current app to sync: its sync/config.json goes through the state machine. */
  function loadSyncOf(current: AppState): void {
    sync.load({
      app: current.app,
      values: current.values,
      secretValues: current.secrets.names.filter((n) => current.secrets.has(n)).map((n) => current.secrets.resolve(n, 'redaction of permission traces')),
      environment: environmentOf(current.app),
      customUserData: async (userId) => {
        const user = current.auth.user(userId);
        return user && current.findCustomUserData ? current.findCustomUserData(user) : undefined;
      },
      callFunction: (name, args, user) => runFunction(name, args, { user: user as FunctionUser, runAsSystem: current.app.functions.get(name)?.runAsSystem }),
    });
  }

  /** A user by id, or by the email of an email/password account. */
  function findUser(ref: string): SimulatedUser | undefined {
    const byId = state.auth.user(ref);
    if (byId) return { user: byId, ...(emailOf(byId) ? { email: emailOf(byId) } : {}) };
    const account = opened.repository.accountByEmail(ref);
    if (!account) return undefined;
    const record = opened.repository.users().find((u) => u.identities.some((i) => i.id === account._id));
    const user = record ? state.auth.user(record._id) : undefined;
    return user ? { user, email: account.email } : undefined;
  }

  function emailOf(user: AuthUser): string | undefined {
    for (const identity of user.identities) {
      const account = opened.repository.account(identity.id);
      if (account) return account.email;
    }
    return undefined;
  }

  state = buildState(first.app, first.diagnostics);
  loadSyncOf(state);
  state.triggers.start();
  await createDeclaredIndexes(store, first.app);
  cors.allowedOrigins = first.app.allowedRequestOrigins;
  const frontRouter = new SwappableRouter(() => state.router);
  const hostingFiles = path.join(appDir, 'hosting', 'files');
  const hostedSites = fs.existsSync(hostingFiles) ? [{ appId, filesDir: hostingFiles }] : [];

  async function reload(): Promise<{ applied: boolean; diagnostics: Diagnostic[] }> {
    const next = await loadChecked(fsys, appDir);
    const errors = next.diagnostics.filter((d) => d.severity === 'error');
    if (errors.length > 0) {
      log.warn(`reload: ${errors.length} error(s) in the app's files; still serving the last good version`);
      logDiagnostics(log, appDir, errors);
      return { applied: false, diagnostics: next.diagnostics };
    }
    const previous = state;
    state = buildState(next.app, next.diagnostics);
    loadSyncOf(state);
    state.triggers.start();
    void previous.triggers.dispose();
    await createDeclaredIndexes(store, next.app);
    cors.allowedOrigins = next.app.allowedRequestOrigins;
    functions.reload();
    log.info(`reloaded ${path.relative(process.cwd(), appDir) || '.'}`);
    // Live flexible sessions follow the new rules (objects leave and arrive without a client reset).
    if (rulesFingerprint(previous.app) !== rulesFingerprint(next.app)) realmSync.rulesChanged();
    await schemaVersions.observe();
    return { applied: true, diagnostics: next.diagnostics };
  }

  /** A bearer access token's caller and the login a long-lived connection rests on (see AccountEvents.watch). */
  const authenticateLogin = async (headers: IncomingHttpHeaders): Promise<{ caller: AuthenticatedRequest; login: WatchedLogin }> => {
    const caller = await state.auth.requireAccessToken(headers);
    const token = /^Bearer\s+(\S+)/i.exec(String(headers.authorization))![1]!;
    return { caller, login: { userId: caller.user.id, sessionId: caller.sessionId!, expiresAt: opened.tokens.check(token, 'access').exp! } };
  };
  const feed = createPartitionFeed({
    service: sync,
    engine: realmSync,
    appId,
    authenticate: async (headers) => {
      const { caller, login } = await authenticateLogin(headers);
      return { user: { id: caller.user.id, type: caller.user.type, data: caller.user.data, identities: caller.user.identities.map((i) => ({ ...i })) }, login };
    },
    watchAccount: (login, onEnd) => opened.repository.events.watch(login, onEnd),
    tracesAllowed: (headers) => isAdminSession(admin, headers['x-admin-authorization']),
    applySchema: devMode.applySchema,
    log,
  });

  const syncMode = () => (sync.flexible ? 'flexible' as const : 'partition' as const);
  const realmEndpoint = createRealmSyncEndpoint({
    appId,
    engine: realmSync,
    authenticate: async (token) => {
      const caller = await state.auth.requireAccessToken({ authorization: `Bearer ${token}` });
      return {
        user: { id: caller.user.id, type: caller.user.type, data: caller.user.data, identities: caller.user.identities.map((i) => ({ ...i })) },
        ...expiryOf(token),
        ...(caller.sessionId ? { loginSessionId: caller.sessionId } : {}),
      };
    },
    log,
    ...(clock ? { now: () => clock.now() } : {}),
    observer: metrics.syncObserver(appId, syncMode),
    schemaVersions,
    answerOtherKind: (ws, protocol, user) => {
      const plan = migration.otherKindPlan(protocol.flexible);
      if (plan) answerOtherKind(ws, protocol, plan, log, user.id);
      return plan !== undefined;
    },
  });
  const migration = new SyncMigration({
    appDir, dataDir, service: sync, reload, log,
    app: () => state.app,
    diagnostics: () => state.diagnostics,
    sessions: () => realmEndpoint.sessions(),
    endSessions: (match, error) => realmEndpoint.endSessions(match, error),
    now: () => (clock ? clock.now() : Date.now()),
  });
  await schemaVersions.observe();
  // A migration step the last run left halfway is finished before clients are served.
  await migration.resume();
  const removeMetrics = metrics.addApp({
    appId, syncMode,
    syncCounts: () => realmEndpoint.counts(),
    historyEntries: () => store.collection(SYNC_METADATA_DATABASE, 'history').countDocuments({}),
    storeStats: () => store.stats?.(),
    functionProcessUp: () => functions.state() === 'up',
    functionProcessMemory: () => residentBytes(functions.processId()),
  });
  // The account ends Realm protocol sessions as it ends the feed's: a disabled or deleted user's at once, a
  // revoked login's (logout) those of the connections whose token rests on it (each connection's token
  // expiry is its own timer).
  opened.repository.events.subscribe((change) => {
    if (change.kind === 'session-revoked') realmEndpoint.endForAccount({ loginSessionId: change.sessionId }, 'the session was revoked (logged out): log in again');
    else realmEndpoint.endForAccount({ userId: change.userId }, change.kind === 'user-disabled' ? 'user disabled' : 'user deleted');
  });
  // A transition ends the Realm protocol sessions as it ends the feed's: pause (213, retry later), terminate (client reset).
  sync.onUpdate((event) => {
    const ended = event.transition ? transitionError(event.transition) : undefined;
    if (ended) realmEndpoint.endSessions(() => true, ended);
    realmSync.invalidateSchema();
  });

  const watcher = options.watch
    ? await watchApp(appDir, dataDir, log, () => reload().then(
      (result) => options.onReloaded?.(result.applied, result.diagnostics),
      (e) => log.error(`reload failed: ${(e as Error).stack ?? e}`),
    )).catch((e: Error) => { log.warn(`not reloading on file changes: watching ${appDir} failed: ${e.message}`); return undefined; })
    : undefined;

  // GraphQL as system (the editor's "run as system"): its own endpoint over the current schema, built on first use.
  let systemGraphql: { generated: GeneratedSchema; endpoint: GraphqlEndpoint<'system'> } | undefined;
  const systemCollection = (service: string, database: string, collection: string) => state.data.forUser('system').collection(service, database, collection);
  const local: LocalAppAccess = {
    sessionForUser: (userId) => state.auth.sessionForUser(userId),
    async graphqlAsSystem(body, clientGone) {
      if (systemGraphql?.generated !== state.generated) {
        systemGraphql = {
          generated: state.generated,
          endpoint: createGraphqlEndpoint<'system'>({
            generated: state.generated,
            collectionFor: (_system, service, database, collection) => systemCollection(service, database, collection),
            runFunction: (name, args) => runFunction(name, args, { runAsSystem: true }),
            disableIntrospection: false,
            limits: { maxQueryDepth: MAX_QUERY_DEPTH, maxBodyBytes: MAX_GRAPHQL_BODY_BYTES },
          }),
        };
      }
      const result = await systemGraphql.endpoint.executeRaw(body, 'system', clientGone);
      return { status: result.status, body: result.body };
    },
    async callAsUser(call) {
      const id = findUser(call.user)?.user.id;
      const user = id === undefined ? undefined : state.auth.user(String(id));
      if (!user) throw new ApiError(404, 'UserNotFound', `no user with id or email "${call.user}"`);
      const customData = await state.findCustomUserData?.(user);
      return callAsUser(call.name, call.arguments, userOf({ user, ...(customData ? { customData } : {}) }));
    },
    callAsSystem: (call) => (call.service
      ? runServiceAction(systemCollection, call.service, call.name, call.arguments[0])
      : runFunction(call.name, call.arguments, { runAsSystem: true })),
    async countDocuments() {
      const counts = [];
      for (const ds of state.app.dataSources) {
        if (!isClusterSource(ds)) continue;
        for (const c of ds.collections) {
          counts.push({ dataSource: ds.name, database: c.database, collection: c.collection, count: await store.collection(c.database, c.collection).countDocuments({}) });
        }
      }
      return counts;
    },
  };

  if (inspectFunctions) {
    log.warn('function debugging is on (--inspect-functions): function calls have no time limit, and the function process\'s inspector listens on 127.0.0.1 only');
    void functions.warmUp();
    functionInspector = await Promise.race([firstInspector, new Promise<FunctionInspectorEvent>((resolve) => {
      setTimeout(() => resolve({ error: 'the function process did not open its inspector within 15 s' }), 15_000).unref();
    })]);
  } else if (options.startFunctionProcesses && state.app.functions.size > 0) {
    void functions.warmUp();
  }
  const hostedApp: OpenedApp = {
    local,
    get functionInspector() { return functionInspector; },
    id: internalAppId(groupId, appId),
    clientAppId: appId,
    dir: appDir,
    dataDir,
    router: frontRouter,
    store,
    current: () => ({ app: state.app, diagnostics: state.diagnostics, auth: state.auth, data: state.data }),
    allowedOrigins: () => cors.allowedOrigins,
    hostedSites: () => hostedSites,
    verifiedUserOf: (headers) => opened.tokens.verifiedSubject(headers.authorization),
    ownsToken: (headers) => {
      const m = typeof headers.authorization === 'string' ? /^Bearer\s+(\S+)/i.exec(headers.authorization) : null;
      if (!m) return false;
      for (const kind of ['access', 'refresh'] as const) {
        try { opened.tokens.check(m[1]!, kind); return true; } catch { /* another kind, or another app's token */ }
      }
      return false;
    },
    reload,
    recentLogs: appLog.recent,
    sync: {
      service: sync,
      admin: {
        appDir, service: sync, reload,
        app: () => state.app,
        now: () => Math.floor((clock ? clock.now() : Date.now()) / 1000),
      },
      simulate: (userRef, partitionText) => simulatePartition(sync, findUser(userRef), userRef, partitionText),
      sessions: () => realmEndpoint.sessions(),
      traffic: (connection, session) => realmEndpoint.traffic(connection, session),
      forceClientReset: (fileIdent) => realmSync.history.forgetClientFile(fileIdent),
      migration,
      recorded: () => realmSync.recorded(),
      schemaVersions,
    },
    upgrades: new Map<string, UpgradeHandler>([
      [FEED_ENDPOINT, (req, socket, head) => feed.handleUpgrade(req, socket, head)],
      [REALM_SYNC_ENDPOINT, (req, socket, head) => {
        if (!realmEndpoint.handleUpgrade(req, socket, head)) answerUpgrade(socket, new ApiError(404, 'NotFound', 'no WebSocket endpoint at this path'), '');
      }],
    ]),
    accountEvents: opened.repository.events,
    authenticateLogin,
    async close() {
      removeMetrics();
      feed.close();
      realmEndpoint.close();
      await watcher?.close();
      // Trigger runs still in progress end with the function runner; they are not waited for.
      const draining = state.triggers.dispose();
      await Promise.allSettled([functions.close(), store.close(), opened.close()]);
      await draining;
    },
  };
  appOperations.set(hostedApp, {
    storeOutcome: () => (store.stats?.().open === false ? 'closed' : 'ok'),
    functionsOutcome: () => {
      const functionsState = functions.state();
      return functionsState === 'up' || functionsState === 'idle' ? 'ok' : functionsState;
    },
    drainSync: () => realmEndpoint.drain(SHUTTING_DOWN),
  });
  return hostedApp;
}

/**
 * `<data>/apps/<name>` of an app folder (see appDataFolderName); a nested app's data left by an older
 * version under the name it shared with others (`a_b` for `a/b`) moves to its own name, unless a folder
 * `a_b` of the root may own it.
 */
function appDataDirUnder(runtimeDataDir: string, rootDir: string, relativeAppDir: string): string {
  const dir = path.join(runtimeDataDir, 'apps', appDataFolderName(relativeAppDir));
  const legacyName = legacyAppDataFolderName(relativeAppDir);
  const legacy = path.join(runtimeDataDir, 'apps', legacyName);
  if (legacy !== dir && !fs.existsSync(path.join(rootDir, legacyName)) && fs.existsSync(legacy) && !fs.existsSync(dir)) fs.renameSync(legacy, dir);
  return dir;
}

/** When an access token (a JWT the runtime signed) expires, from its `exp` claim. */
function expiryOf(token: string): { expiresAt?: number } {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof payload.exp === 'number' ? { expiresAt: payload.exp * 1000 } : {};
  } catch {
    return {};
  }
}

/** A start refused because the app's files have errors (with `failOnErrors`). */
export class AppHasErrors extends Error {
  constructor(readonly appDir: string, readonly errors: Diagnostic[]) {
    super(`the app in ${appDir} has ${errors.length} error${errors.length === 1 ? '' : 's'} in its files`);
  }
}

/** A function's `can_evaluate` refused the caller. */
class CallNotAllowedError extends Error {
  readonly errorCode = 'FunctionExecutionError';
}

/** The origins of the runtime's own pages: its port on the loopback names and on the bound host. */
function runtimeOrigins(bindHost: string, port: number, scheme: 'http' | 'https'): string[] {
  const names = ['localhost', '127.0.0.1', '[::1]'];
  const bound = bindHost.includes(':') ? `[${bindHost}]` : bindHost;
  if (!['0.0.0.0', '[::]', ''].includes(bound) && !names.includes(bound)) names.push(bound);
  return names.map((n) => `${scheme}://${n}:${port}`);
}

/** Whether a header value is `Bearer <admin access token>` of a live admin session (the editor's, a developer tool's). */
function isAdminSession(admin: AdminAuth, value: string | string[] | undefined): boolean {
  if (typeof value !== 'string') return false;
  try {
    admin.authenticate({ authorization: value });
    return true;
  } catch {
    return false;
  }
}

/**
 * The runtime's own pages: `GET /` (what it serves, for a person) and `GET /logs` (recent requests, behind
 * the admin session: paths and user ids are the developer's business, not a web page's).
 */
function runtimePages(registry: HostedApps, requestLog: RequestLog, admin: AdminAuth): Router {
  return new Router()
    .get('/', (req) => homePage({ baseUrl: req.baseUrl, apps: registry.list().map((h) => ({ name: h.current().app.name, appId: h.clientAppId })) }))
    .get('/logs', (req) => {
      admin.authenticate(req.headers);
      const coId = req.query.get('co_id');
      if (coId === null) return { body: { requests: requestLog.recent(100) }, encoding: 'json' };
      const entry = requestLog.find(coId);
      if (!entry) throw new ApiError(404, 'NotFound', `no recent request has co_id '${coId}' (the last ${requestLog.capacity} requests are kept)`);
      return { body: entry, encoding: 'json' };
    });
}

class SwappableRouter extends Router {
  constructor(private readonly current: () => Router) { super(); }
  override match(method: string, path: string) { return this.current().match(method, path); }
}

/**
 * Fields the app looks documents up by get an index (`_id` always has one): the sync partition key or
 * flexible sync's queryable fields, the foreign keys relationships resolve through, and the custom user
 * data id field.
 */
export async function createDeclaredIndexes(store: DocumentStore, app: AppModel): Promise<void> {
  const wanted = new Set<string>();
  const add = (service: string | undefined, database: string | undefined, collection: string | undefined, field: string | undefined) => {
    if (service && database && collection && field && field !== '_id') wanted.add(JSON.stringify([service, database, collection, field]));
  };
  // Flexible sync: the queryable fields (a subscription's equality on one is then answered from the index).
  const syncFile = isObject(app.sync?.file.value) ? app.sync!.file.value : {};
  const names = (value: unknown) => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);
  const queryable = app.sync?.type === 'flexible' ? [...names(syncFile.queryable_fields_names), ...names(syncFile.indexed_queryable_fields_names)] : [];
  const queryableOf = (collection: string) => (app.sync?.type === 'flexible' && isObject(syncFile.collection_queryable_fields_names) ? names(syncFile.collection_queryable_fields_names[collection]) : []);
  for (const ds of app.dataSources) {
    if (!isClusterSource(ds)) continue;
    for (const coll of ds.collections) {
      const properties = isObject(coll.schema?.value) && isObject(coll.schema.value.properties) ? coll.schema.value.properties : {};
      if (app.sync?.partition?.key && app.sync.partition.key in properties) add(ds.name, coll.database, coll.collection, app.sync.partition.key);
      if (ds.name === app.sync?.serviceName) for (const field of [...queryable, ...queryableOf(coll.collection)]) if (field in properties) add(ds.name, coll.database, coll.collection, field);
      const relationships = isObject(coll.relationships?.value) ? coll.relationships.value : {};
      for (const rel of Object.values(relationships)) {
        const m = isObject(rel) && typeof rel.ref === 'string' ? /^#\/relationship\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(rel.ref) : null;
        if (m && isObject(rel) && typeof rel.foreign_key === 'string') add(m[1], m[2], m[3], rel.foreign_key);
      }
    }
  }
  const cud = app.customUserData;
  if (cud?.enabled) add(cud.serviceName, cud.databaseName, cud.collectionName, cud.userIdField);
  for (const key of wanted) {
    const [, database, collection, field] = JSON.parse(key) as string[];
    await store.collection(database, collection).createIndex(field);
  }
}

async function loadChecked(fsys: AppFileSystem, appDir: string): Promise<{ app: AppModel; diagnostics: Diagnostic[] }> {
  const app = await loadApp(fsys, appDir);
  return { app, diagnostics: checkApp(app) };
}

function logDiagnostics(log: Logger, appDir: string, diagnostics: Diagnostic[]): void {
  for (const d of sortDiagnostics(diagnostics)) {
    if (d.severity !== 'error' && d.severity !== 'warning') continue;
    const where = `${path.relative(appDir, d.file)}:${d.range.start.line + 1}:${d.range.start.character + 1}`;
    (d.severity === 'error' ? log.error : log.warn)(`${where} ${d.code} ${d.message}`);
  }
}

/** `%%values.<name>` / `context.values.get(name)`: the value, or the secret's value for `from_secret` values. */
function valueOfIn(app: AppModel, secrets: SecretStore, name: string): unknown {
  const value = app.values.find((v) => v.name === name);
  if (!value) return undefined;
  if (value.fromSecret && typeof value.value === 'string') return secrets.has(value.value) ? secrets.resolve(value.value, `value "${name}"`) : undefined;
  return value.value;
}

/** `%%environment` / `context.environment`: the tag from the root config and that environment's values. */
function environmentOf(app: AppModel): { tag: string; values: Record<string, unknown> } {
  const tag = app.environment ?? '';
  const file = app.environments.find((e) => e.name === (tag || 'no-environment'));
  return { tag, values: file?.values ?? {} };
}

/**
 * Reloads on changes below the app folder, except in the runtime's own data and in installed packages.
 * chokidar rather than `fs.watch`: a file saved by replacement (written to a temporary file, then renamed
 * over the old one: `sed -i`, many editors, git checkout) is a new inode, which Node's recursive watch
 * loses, so later edits went unseen. Resolves once the initial scan is done, so no edit after start-up is missed.
 * Reloads run one at a time; changes during a reload start one more afterwards.
 */
async function watchApp(appDir: string, dataDir: string, log: Logger, reload: () => Promise<void>): Promise<{ close(): Promise<void> }> {
  const ignored = (file: string) => {
    const abs = path.resolve(file);
    if (abs === dataDir || abs.startsWith(dataDir + path.sep)) return true;
    const parts = path.relative(appDir, abs).split(path.sep);
    return parts.includes('node_modules') || parts.includes('.git');
  };
  // Symbolic links are not followed: one pointing outside would watch foreign files, a loop would fail the scan.
  const watcher = chokidar.watch(appDir, { ignored, ignoreInitial: true, atomic: true, followSymlinks: false });
  watcher.on('error', (error) => log.warn(`watching ${appDir}: ${(error as Error).message}`));
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let pending = false;
  const run = () => {
    if (running) { pending = true; return; }
    running = reload().finally(() => {
      running = undefined;
      if (pending) { pending = false; run(); }
    });
  };
  watcher.on('all', (event, file) => {
    log.debug?.(`file ${event}: ${path.relative(appDir, file)}`);
    clearTimeout(timer);
    timer = setTimeout(run, 150);
  });
  await new Promise<void>((resolve, reject) => {
    watcher.once('ready', resolve);
    watcher.once('error', reject);
  });
  return {
    async close() {
      clearTimeout(timer);
      await watcher.close();
      await running;
    },
  };
}

/** A path as the router matches it: empty segments dropped, each segment decoded; undefined when one does not decode. */
function routedPath(pathname: string): string | undefined {
  try {
    return `/${pathname.split('/').filter((segment) => segment.length > 0).map(decodeURIComponent).join('/')}`;
  } catch {
    return undefined;
  }
}

/** What the data access rules of an app are made of (every rule file and the custom user data they may read), to tell a change. */
function rulesFingerprint(app: AppModel): string {
  const custom = app.customUserData;
  return JSON.stringify([
    custom && [custom.enabled, custom.serviceName, custom.databaseName, custom.collectionName, custom.userIdField],
    app.dataSources.map((d) => [d.name, d.defaultRule?.value, d.collections.map((c) => [c.database, c.collection, c.rules?.value])]),
  ]);
}
