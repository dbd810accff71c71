// `asl functions run NAME`: runs one of the app's functions without a client and prints its result, or its
// error with the function's own stack (its file, line and column). It asks the runtime that holds the data
// folder when one runs (so a debugger attached to it stops there too), else starts the runtime in this
// process for the one call; either way through the local admin route the editor's "Run Function As…" uses.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { EJSON } from 'bson';
import { LOCAL_APP_ROUTES, type FunctionCallFailure } from '../core/apiRoutes';
import { isObject } from '../core/json';
import { resolveAppRoots } from './check';
import { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, UsageError, type CliIO } from './io';
import { askRuntime, readRuntimeRecord, RuntimeGone, startRuntimeHere, type RuntimeAnswer } from './runningRuntime';

export const FUNCTIONS_HELP = `Usage: asl functions run NAME [appDir] [--args JSON] [--as USER | --system] [--data DIR]

Runs the app's function NAME once and prints what it returned (relaxed EJSON), or its error with the
function's own stack: its file, line and column. When a runtime holds the data folder ("asl serve", the
editor) the call runs there (a debugger attached with --inspect-functions stops at its breakpoints);
otherwise the runtime starts in this process for the call, and the function's log lines go to stderr.

Options:
  --args JSON     the arguments, an EJSON array (default [])
  --as USER       run as this user (id or email), as that user's client call would (can_evaluate applies)
  --system        run as the system user, rules bypassed (the default)
  --data DIR      the app's data folder (default <appDir>/.asl)
  -h, --help      show this help

Exit code 0 when the function returned, 1 when it failed, 2 for a usage error.`;

export async function runFunctions(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { args: { type: 'string' }, as: { type: 'string' }, system: { type: 'boolean' }, data: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) { io.out(FUNCTIONS_HELP + '\n'); return EXIT_OK; }
  const [verb, name, folder, ...extra] = positionals;
  if (verb !== 'run') throw new UsageError(verb ? `unknown functions command "${verb}" (there is "run")` : 'name a functions command: run');
  if (!name) throw new UsageError('name the function to run: asl functions run NAME');
  if (extra.length > 0) throw new UsageError('asl functions run takes at most one folder');
  if (values.as !== undefined && values.system) throw new UsageError('--as and --system exclude each other');
  if (values.as === '') throw new UsageError('--as needs a user id or email');
  const argsText = values.args ?? '[]';
  let args: unknown;
  try {
    args = EJSON.parse(argsText, { relaxed: false });
  } catch (e) {
    throw new UsageError(`--args is not EJSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(args)) throw new UsageError('--args must be an EJSON array of the arguments, e.g. --args \'[1, "two"]\'');
  const roots = await resolveAppRoots(io, folder);
  if (roots.length !== 1) {
    io.err(roots.length ? `asl functions: ${roots.length} apps found; name one of them:\n${roots.join('\n')}\n` : `asl functions: no app found${folder ? ` in ${folder}` : ''}\n`);
    return EXIT_USAGE;
  }
  const appDir = roots[0]!;
  const dataDir = path.resolve(io.cwd, values.data ?? path.join(appDir, '.asl'));
  // The arguments go on as the EJSON text given, so their types (dates, ids, int64) arrive as typed.
  const body = `{"name":${JSON.stringify(name)},"arguments":${argsText}${values.as ? `,"user":${JSON.stringify(values.as)}` : ''}}`;

  const running = readRuntimeRecord(dataDir);
  if (running) {
    try {
      return report(io, name, await askRuntime(running, LOCAL_APP_ROUTES.functionsCall, body), `the runtime at ${running.url}`);
    } catch (e) {
      if (!(e instanceof RuntimeGone)) throw e;
    }
  }
  const runtime = await startRuntimeHere(io, 'asl functions run', {
    appDir, dataDir,
    // The function's own lines (its console) and the runtime's problems; not the request lines.
    log: {
      info: (m) => { if (m.startsWith('[function ')) io.err(`${m}\n`); },
      warn: (m) => io.err(`warning: ${m}\n`),
      error: (m) => io.err(`error: ${m}\n`),
    },
  });
  if (!runtime) return EXIT_PROBLEMS;
  try {
    const session = await runtime.mintAdminSession();
    const record = { url: runtime.url, appId: runtime.appId, admin: { accessToken: session.access_token, refreshToken: session.refresh_token } };
    return report(io, name, await askRuntime(record, LOCAL_APP_ROUTES.functionsCall, body), 'the runtime');
  } finally {
    await runtime.close();
  }
}

function report(io: CliIO, name: string, answer: RuntimeAnswer, where: string): number {
  if (answer.status === 200) {
    const value: unknown = EJSON.parse(answer.text, { relaxed: false });
    io.out(`${EJSON.stringify(value, undefined, 2, { relaxed: true })}\n`);
    return EXIT_OK;
  }
  let error: Partial<Record<keyof FunctionCallFailure, unknown>> = {};
  try {
    const parsed: unknown = JSON.parse(answer.text);
    if (isObject(parsed)) error = parsed;
  } catch { /* not JSON */ }
  const message = typeof error.error === 'string' ? error.error : `${where} answered with status ${answer.status}`;
  const code = typeof error.error_code === 'string' ? ` (${error.error_code})` : '';
  const stack = typeof error.function_stack === 'string' ? error.function_stack.split('\n').map((line) => `    ${line}\n`).join('') : '';
  io.err(`asl functions run: ${name} failed${code}: ${message}\n${stack}`);
  return EXIT_PROBLEMS;
}
