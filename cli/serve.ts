// `asl serve`: the local runtime for one app, until SIGINT/SIGTERM.
import { isIP } from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Diagnostic } from '../core/diagnostics';
import { RUNTIME_PROTOCOL_VERSION, type ParentChannel, type RuntimeProblem } from '../core/runtime-protocol';
import { AppHasErrors, startRuntime } from '../runtime';
import { findDebugNode, type FunctionInspectorEvent } from '../runtime/functions';
import { checkAdminUserCredentials } from '../runtime/admin/admin-users';
import { ADMIN_API } from '../core/apiRoutes';
import { checkPublicUrl } from '../runtime/http/addresses';
import { createLogger, formatLogRecord, isLogFormat, isLogLevel, LOG_FORMATS, LOG_LEVELS } from '../runtime/log';
import { findAppRootUpwards, findAppRoots, rootFileOf } from '../core/load';
import { EXIT_OK, EXIT_USAGE, UsageError, type CliIO } from './io';

export const SERVE_HELP = `Usage: asl serve [dir] [options]

Runs apps locally: the platform's client API (login, functions, GraphQL, service calls) and its Admin
API (/api/admin/v3.0) on one HTTP (with --tls-cert, HTTPS) address, with each app's own rules and
functions. dir is one app folder, or a folder holding several apps (each served under its own client app
id; apps created with "asl apps create" land there). Changes to an app's files reload it; a change with
errors keeps the last good version running and prints the problems.

Options:
  --port N                 port to listen on (default 8080; 0 picks a free one)
  --host ADDRESS           address to bind (default 127.0.0.1; 0.0.0.0 or :: for every interface)
  --public-url URL         the base URL devices reach the runtime at, e.g. http://192.168.1.20:8080 or
                           https://sync.example.com (repeatable, one per name); the location answer and
                           links use it, and its host passes the Host check (other names still get 421)
  --tls-cert FILE          serve HTTPS and WSS on the port with this PEM certificate (chain) and
  --tls-key FILE           its PEM private key (no passphrase); both files are reloaded when they change
  --trust-proxy ADDRESS    a reverse proxy's address (repeatable, e.g. 127.0.0.1): from it only, the
                           X-Forwarded-Proto, -Host and -For headers name the scheme, host and client
  --data DIR               data folder: documents, users, token secret, admin key (default <dir>/.asl)
  --allow-no-apps          serve a folder holding no app yet (apps are then created with "asl apps create")
  --admin-remote           let the Admin API answer requests from other machines (default: loopback only;
                           a request a proxy forwards for another machine is not a loopback one)
  --admin-user EMAIL       create or update an admin user (with --admin-password) who logs in to the Admin API with
  --admin-password PASS    email and password, as the SDKs' test harnesses do; only a hash of the password is kept
                           (also ASL_ADMIN_USER and ASL_ADMIN_PASSWORD in the environment)
  --app-id ID              client app id to serve under (default: the app's metadata, else derived from its name)
  --secret NAME=VALUE      a secret's value (repeatable); wins over secrets.json at the app root
  --function-timeout SEC   function execution time limit in seconds (default 300, as on the platform)
  --access-token-lifetime SEC
                           how long access tokens last, in seconds (default 1800, as on the platform; at least 1):
                           clients refresh them and reconnect sync when one ends
  --inspect-functions[=PORT]
                           debug functions: each app's function process runs with Node's inspector on
                           127.0.0.1 (whatever --host says; the first app on PORT, else a free port) and
                           calls have no time limit. Prints "functions inspector: <ws url> (app <id>)"
                           once per start of a function process: attach a debugger to that URL (it holds
                           the inspector's secret). Needs Node 24 or later (its permission model's
                           --allow-inspector); the sandbox stays as it is. On an older Node the function
                           processes run on the first Node 24+ on PATH, or on --functions-node's
  --functions-node PATH    with --inspect-functions: the Node (24 or later) to run function processes on
  --mongodb-uri URI        keep data in a MongoDB server instead of the embedded store
  --no-watch               do not reload on file changes
  --fail-on-errors         refuse to start when the app's files have errors
  --log-level LEVEL        error, warn, info (default: one line per request) or debug
  --log-format FORMAT      text (default) or json: one JSON object per line on stderr, for log collectors
                           ({"time","level","msg"}, and "request" for a request's line); no secrets, as in text
  --metrics-port N         also serve /metrics, /healthz and /readyz without credentials on 127.0.0.1:N only
                           (0 picks a free one); /metrics on the main port needs admin credentials
  --drain-timeout SEC      on SIGTERM or Ctrl-C, how long requests in flight may take to finish (default 30)
  -h, --help               show this help

Operations: GET /healthz answers 200 while the process serves; GET /readyz 200 once apps are loaded, stores
open and function processes started, 503 otherwise (and while stopping). GET /metrics is in Prometheus'
format; it needs an admin access token (Authorization: Bearer) or Basic authentication with the admin key
pair (public key as user name, private key as password) or an admin user, from this machine unless
--admin-remote. SIGTERM (or Ctrl-C) stops gracefully: the port is released, Realm sync sessions end with a
try-again error (SDKs reconnect later), requests in flight finish (up to --drain-timeout), then the process
exits 0; a second signal stops at once.

Prints "listening on <url>", "app id: <id>" for each app, "hosting: <url>" when the app has hosting/files
(served at http://<app id>.localhost:<port>/), "public url: <url>" for each --public-url, "admin api: <url>" and,
with --metrics-port, "metrics: <url>"
on their own lines once ready. The first start in a data folder also prints its admin API key pair, once: the private key
is kept only as a hash ("asl admin-keys --rotate" makes a new pair). Started with an IPC
channel (by the editor extension), it also sends that, its log lines and reloads as typed messages
(core/runtime-protocol.ts) and stops when the parent asks or goes away.`;

export interface ServeHooks {
  /** Resolves when the runtime should stop (signals in the CLI process; tests pass their own). */
  untilStopped(): Promise<void>;
  /** Resolves on a second stop request while draining (the CLI: another SIGINT/SIGTERM): stop at once. */
  untilStoppedAgain?(): Promise<void>;
  /** The spawning process's IPC channel, when there is one. */
  parent?: ParentChannel;
}

export async function runServe(argv: string[], io: CliIO, hooks: ServeHooks = { untilStopped: waitForSignal, untilStoppedAgain: waitForSignal }): Promise<number> {
  const { values, positionals } = parseArgs({
    // `--inspect-functions` takes its port only as `=PORT` (as Node's --inspect): alone, a free port.
    args: argv.map((arg) => (arg === '--inspect-functions' ? '--inspect-functions=0' : arg)),
    options: {
      port: { type: 'string' }, host: { type: 'string' }, data: { type: 'string' }, 'app-id': { type: 'string' },
      secret: { type: 'string', multiple: true }, 'function-timeout': { type: 'string' }, 'mongodb-uri': { type: 'string' },
      'access-token-lifetime': { type: 'string' },
      'no-watch': { type: 'boolean' }, 'fail-on-errors': { type: 'boolean' }, 'admin-remote': { type: 'boolean' }, 'admin-user': { type: 'string' }, 'admin-password': { type: 'string' }, 'allow-no-apps': { type: 'boolean' },
      'public-url': { type: 'string', multiple: true }, 'tls-cert': { type: 'string' }, 'tls-key': { type: 'string' }, 'trust-proxy': { type: 'string', multiple: true }, 'log-level': { type: 'string' }, 'log-format': { type: 'string' },
      'metrics-port': { type: 'string' }, 'drain-timeout': { type: 'string' }, 'inspect-functions': { type: 'string' }, 'functions-node': { type: 'string' }, help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) { io.out(SERVE_HELP + '\n'); return EXIT_OK; }
  if (positionals.length > 1) throw new UsageError('asl serve takes at most one folder');
  const port = values.port === undefined ? 8080 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a whole number from 0 to 65535, got "${values.port}"`);
  const level = values['log-level'] ?? 'info';
  if (!isLogLevel(level)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  const format = values['log-format'] ?? 'text';
  if (!isLogFormat(format)) throw new UsageError(`--log-format must be one of ${LOG_FORMATS.join(', ')}, got "${format}"`);
  const metricsPort = values['metrics-port'] === undefined ? undefined : Number(values['metrics-port']);
  if (metricsPort !== undefined && (!Number.isInteger(metricsPort) || metricsPort < 0 || metricsPort > 65535)) throw new UsageError(`--metrics-port must be a whole number from 0 to 65535, got "${values['metrics-port']}"`);
  const drainSeconds = values['drain-timeout'] === undefined ? DEFAULT_DRAIN_SECONDS : Number(values['drain-timeout']);
  if (!(drainSeconds >= 0 && drainSeconds <= 3600)) throw new UsageError(`--drain-timeout must be a number of seconds from 0 to 3600, got "${values['drain-timeout']}"`);
  const timeout = values['function-timeout'] === undefined ? undefined : Number(values['function-timeout']);
  if (timeout !== undefined && !(timeout > 0)) throw new UsageError(`--function-timeout must be a positive number of seconds, got "${values['function-timeout']}"`);
  const tokenLifetime = values['access-token-lifetime'] === undefined ? undefined : Number(values['access-token-lifetime']);
  if (tokenLifetime !== undefined && !(Number.isInteger(tokenLifetime) && tokenLifetime >= 1)) throw new UsageError(`--access-token-lifetime must be a whole number of seconds, at least 1, got "${values['access-token-lifetime']}"`);
  const inspectValue = values['inspect-functions'];
  const inspectPort = inspectValue === undefined ? undefined : Number(inspectValue);
  if (inspectPort !== undefined && !(/^\d+$/.test(inspectValue!) && inspectPort <= 65535)) throw new UsageError(`--inspect-functions=PORT takes a port from 0 to 65535, got "${inspectValue}"`);
  if (values['functions-node'] !== undefined && inspectPort === undefined) throw new UsageError('--functions-node goes with --inspect-functions');
  const functionNode = inspectPort === undefined ? undefined
    : findDebugNode({ named: values['functions-node'] && path.resolve(io.cwd, values['functions-node']), pathValue: io.env.PATH });
  for (const s of values.secret ?? []) if (s.indexOf('=') <= 0) throw new UsageError(`--secret expects NAME=VALUE, got "${s}"`);
  const publicUrls = (values['public-url'] ?? []).map((text) => {
    const checked = checkPublicUrl(text);
    if ('problem' in checked) throw new UsageError(checked.problem);
    return checked.url;
  });
  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) throw new UsageError('--tls-cert and --tls-key go together');
  const tls = values['tls-cert'] === undefined ? undefined : { certFile: path.resolve(io.cwd, values['tls-cert']), keyFile: path.resolve(io.cwd, values['tls-key']!) };
  for (const a of values['trust-proxy'] ?? []) if (isIP(a) === 0) throw new UsageError(`--trust-proxy expects the proxy's IP address (such as 127.0.0.1), got "${a}"`);
  const adminEmail = values['admin-user'] ?? io.env.ASL_ADMIN_USER;
  const adminPassword = values['admin-password'] ?? io.env.ASL_ADMIN_PASSWORD;
  if ((adminEmail === undefined) !== (adminPassword === undefined)) throw new UsageError('--admin-user and --admin-password go together');
  const adminUser = adminEmail === undefined ? undefined : { email: adminEmail, password: adminPassword! };
  const adminUserProblem = adminUser && checkAdminUserCredentials(adminUser);
  if (adminUserProblem) throw new UsageError(adminUserProblem);
  const parent = hooks.parent;
  const fail = (reason: 'app-errors' | 'usage' | 'start', message: string, problems: RuntimeProblem[] = []) => {
    io.err(`asl serve: ${message}\n`);
    parent?.send({ type: 'failed', version: RUNTIME_PROTOCOL_VERSION, reason, message, problems });
  };
  if (functionNode && 'error' in functionNode) {
    fail('usage', `--inspect-functions: ${functionNode.error}`);
    return EXIT_USAGE;
  }
  const target = await resolveServeTarget(io, positionals[0]);
  if (!target || ('rootDir' in target && !values['allow-no-apps'] && (await findAppRoots(io.fs, target.rootDir)).length === 0)) {
    fail('usage', `no app found ${positionals[0] ? `in ${positionals[0]}` : 'here or in the parent folders'}; name an app folder or a folder holding apps (--allow-no-apps serves an empty one, to create apps in)`);
    return EXIT_USAGE;
  }
  // With a parent, log records go to it with their level (it shows them); a terminal gets them on stderr.
  const log = createLogger(level, parent
    ? (record) => parent.send({ type: 'log', level: record.level, message: record.message })
    : (record) => io.err(`${formatLogRecord(record, format)}\n`));
  // Listen for signals before announcing the address: a client that stops us right after reading it must
  // get a clean shutdown, not the default kill.
  // The editor's stop waits at most PARENT_STOP_DRAIN_MS for requests in flight: it kills a runtime that
  // has not exited a few seconds after asking, and a developer who stops it wants it stopped.
  let drainMs = drainSeconds * 1000;
  const stopped = parent
    ? Promise.race([hooks.untilStopped(), new Promise<void>((resolve) => parent.onStop(() => { drainMs = Math.min(drainMs, PARENT_STOP_DRAIN_MS); resolve(); }))])
    : hooks.untilStopped();
  /** Inspector addresses heard before the runtime's own lines are printed go after them. */
  let inspectorsHeard: string[] | undefined = [];
  const announceInspector = (app: { clientAppId: string }, event: FunctionInspectorEvent) => {
    if ('error' in event) return; // logged by the runtime
    // A parent (the editor) gets the address as data, in the handshake or a message; its log shows stdout.
    if (parent) {
      if (!inspectorsHeard) parent.send({ type: 'functionsInspector', appId: app.clientAppId, url: event.url });
      return;
    }
    const line = `functions inspector: ${event.url} (app ${app.clientAppId})\n`;
    if (inspectorsHeard) inspectorsHeard.push(line);
    else io.out(line);
  };
  if (functionNode && functionNode.execPath !== process.execPath) {
    log.info(`debugging functions: the function processes run on ${functionNode.execPath} (Node ${functionNode.version}, whose permission model has --allow-inspector); the runtime on Node ${process.versions.node}`);
  }
  let runtime;
  try {
    runtime = await startRuntime({
      ...target, dataDir: values.data, adminRemote: values['admin-remote'], adminUsers: adminUser ? [adminUser] : [], host: values.host ?? '127.0.0.1', port, publicUrls, tls, trustedProxies: values['trust-proxy'], appId: values['app-id'],
      functionTimeoutMs: timeout === undefined ? undefined : timeout * 1000, secrets: values.secret ?? [],
      ...(tokenLifetime !== undefined ? { accessTokenSeconds: tokenLifetime } : {}),
      mongodbUri: values['mongodb-uri'] ?? io.env.ASL_MONGODB_URI, watch: !values['no-watch'], log,
      metricsPort, startFunctionProcesses: true,
      onReloaded: (applied, diagnostics) => parent?.send({ type: 'reloaded', applied, errors: countOf(diagnostics, 'error') }),
      failOnErrors: values['fail-on-errors'] === true,
      ...(inspectPort !== undefined ? { inspectFunctions: { port: inspectPort, onInspector: announceInspector, ...(functionNode ? { node: functionNode } : {}) } } : {}),
    });
  } catch (e) {
    if (e instanceof AppHasErrors) {
      fail('app-errors', `the app has ${e.errors.length} error${e.errors.length === 1 ? '' : 's'} in its files; fix them and start again`, e.errors.map(problemOf));
    } else {
      fail('start', (e as Error).message);
    }
    return 1;
  }
  const errors = runtime.diagnostics.filter((d) => d.severity === 'error');
  io.out(`listening on ${runtime.url}\n`);
  for (const app of runtime.apps) io.out(`app id: ${app.clientAppId}\n`);
  if (runtime.hostingUrl) io.out(`hosting: ${runtime.hostingUrl}\n`);
  if (runtime.apps.length === 0 && 'rootDir' in target) io.out(`no apps in ${target.rootDir} yet: create one with "asl apps create -n <name>"\n`);
  for (const url of runtime.publicUrls) io.out(`public url: ${url}\n`);
  io.out(`admin api: ${runtime.adminUrl}\n`);
  if (runtime.metricsUrl) io.out(`metrics: ${runtime.metricsUrl}\n`);
  for (const line of inspectorsHeard) io.out(line);
  inspectorsHeard = undefined;
  const created = runtime.createdAdminKey;
  if (created) {
    io.out(`admin public key: ${created.publicKey}\nadmin private key: ${created.privateKey}\n`
      + `This key pair is shown once (only a hash of the private key is kept). Log in with:\n  asl login --api-key ${created.publicKey} --private-api-key <private key> --url ${runtime.adminUrl.slice(0, -ADMIN_API.length)}\n`);
  } else {
    io.out(`admin public key: ${runtime.adminPublicKey} ("asl admin-keys --rotate" makes a new pair)\n`);
  }
  const adminSession = parent ? await runtime.mintAdminSession() : undefined;
  parent?.send({
    type: 'ready', version: RUNTIME_PROTOCOL_VERSION, url: runtime.url, port: runtime.port,
    apps: runtime.apps.map((app) => ({
      appId: app.clientAppId, name: path.basename(app.dir), appDir: app.dir, dataDir: app.dataDir, url: runtime.url,
      adminAppPath: `${new URL(runtime.adminUrl).pathname}/groups/${runtime.groupId}/apps/${app.id}`,
      ...(app.functionInspector && 'url' in app.functionInspector ? { functionsInspector: app.functionInspector.url } : {}),
    })),
    ...(adminSession ? { admin: { accessToken: adminSession.access_token, refreshToken: adminSession.refresh_token } } : {}),
    errors: errors.length, warnings: countOf(runtime.diagnostics, 'warning'),
  });
  await stopped;
  // A second signal while draining stops at once.
  const again = hooks.untilStoppedAgain?.() ?? new Promise<void>(() => undefined);
  log.info(`stopping: refusing new connections, ending sync sessions (try again), waiting up to ${drainMs / 1000} s for requests in flight`);
  const drained = await Promise.race([runtime.drain(drainMs), again.then(() => undefined)]);
  if (!drained) log.warn('stopping at once (second signal)');
  else if (!drained.requestsFinished) log.warn(`stopping: requests still in flight after ${drainMs / 1000} s are cut`);
  await runtime.close();
  log.info(`stopped${drained ? ` (${drained.syncConnections} sync connection${drained.syncConnections === 1 ? '' : 's'} told to try again)` : ''}`);
  return EXIT_OK;
}

/** How long requests in flight may take to finish once a stop is asked for (`--drain-timeout`). */
const DEFAULT_DRAIN_SECONDS = 30;
const PARENT_STOP_DRAIN_MS = 2000;

function countOf(diagnostics: readonly Diagnostic[], severity: Diagnostic['severity']): number {
  return diagnostics.filter((d) => d.severity === severity).length;
}

function problemOf(d: Diagnostic): RuntimeProblem {
  return { file: d.file, line: d.range.start.line, character: d.range.start.character, code: d.code, message: d.message };
}

/** An app folder is served alone; any other folder is a root holding apps (found below it, created in it). */
export async function resolveServeTarget(io: CliIO, dir: string | undefined): Promise<{ appDir: string } | { rootDir: string } | undefined> {
  if (dir === undefined) {
    const up = await findAppRootUpwards(io.fs, io.cwd);
    if (up) return { appDir: up };
    return (await findAppRoots(io.fs, io.cwd)).length > 0 ? { rootDir: io.cwd } : undefined;
  }
  const abs = path.resolve(io.cwd, dir);
  return (await rootFileOf(io.fs, abs)) ? { appDir: abs } : { rootDir: abs };
}

export function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => { process.off('SIGINT', stop); process.off('SIGTERM', stop); resolve(); };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
