// `asl`: App Services Local without an editor. Argument parsing and output only; the work is in core/ and runtime/.
import { createInterface } from 'node:readline';
import { nodeFileSystem } from '../core/fs';
import { runCheck } from './check';
import { runSchema } from './schema';
import { runServe, waitForSignal } from './serve';
import { parentChannelOf } from '../core/runtime-protocol';
import { runAdminKeys } from './adminKeys';
import { runSync } from './sync';
import { runData } from './data';
import { runFunctions } from './functions';
import { runApps, runLogin, runLogout, runPull, runPush, runWhoami } from './adminCommands';
import { EXIT_OK, EXIT_USAGE, UsageError, type CliIO } from './io';

const HELP = `Usage: asl <command> [options]

Commands:
  check [appDir] [--json]   check an app's configuration files and print the problems
  schema [appDir] [--out f] print (or write) the app's generated GraphQL schema (SDL)
  serve [dir] [options]     run the apps locally: client API, auth, functions, GraphQL, Admin API
  admin-keys [--rotate]     print (or replace) the runtime's admin API key pair
  sync <command> [appDir]   partition-based sync: status, enable, pause, resume, terminate, simulate,
                            sessions [--follow] [--json], schema-versions [--json], migrate --to flexible|partition
  data <command> DIR        export, import (mongodump's layout), backup, restore an app's data
  functions run NAME [appDir] [--args JSON] [--as USER|--system]
                            run a function once; print its result, or its error with its stack
  login --api-key K --private-api-key S [--url U]   log in to a runtime's Admin API
  logout | whoami           end the admin session | show it
  apps list | apps create -n <name> [--template <id>] [--local <dir>]
  pull --remote <app id> [--local <dir>] [--template <id>]   write an app's files from the runtime
  push [--remote <app id>] [--local <dir>] [--yes]           deploy local files to the runtime
  help                      show this help

Run "asl <command> --help" for a command's options.`;

type Command = (argv: string[], io: CliIO) => Promise<number>;
const COMMANDS: Record<string, Command> = { check: runCheck, schema: runSchema, serve: (argv, io) => runServe(argv, io, { untilStopped: waitForSignal, untilStoppedAgain: waitForSignal, parent: parentChannelOf(process) }), 'admin-keys': runAdminKeys,
  login: runLogin, logout: runLogout, whoami: runWhoami, apps: runApps, pull: runPull, push: runPush,
  sync: (argv, io) => runSync(argv, io), data: runData, functions: runFunctions,
};

export async function main(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') { io.out(HELP + '\n'); return name === undefined ? EXIT_USAGE : EXIT_OK; }
  if (name === '--version' || name === '-v') { io.out(`${typeof ASL_VERSION === 'string' ? ASL_VERSION : 'development build'}\n`); return EXIT_OK; }
  const command = COMMANDS[name];
  if (!command) { io.err(`asl: unknown command "${name}"\n\n${HELP}\n`); return EXIT_USAGE; }
  try {
    return await command(rest, io);
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`asl ${name}: ${(e as Error).message}\nRun "asl ${name} --help" for usage.\n`);
      return EXIT_USAGE;
    }
    throw e;
  }
}

declare const ASL_VERSION: string;

function askOnTerminal(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  return new Promise((resolve) => rl.question(question, (answer) => { rl.close(); resolve(answer); }));
}

if (require.main === module) {
  const io: CliIO = {
    cwd: process.cwd(),
    fs: nodeFileSystem,
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    env: process.env,
    errIsTerminal: Boolean(process.stderr.isTTY),
    ...(process.stdin.isTTY && process.stdout.isTTY ? { prompt: askOnTerminal } : {}),
  };
  main(process.argv.slice(2), io).then(
    (code) => {
      process.exitCode = code;
      // An open IPC channel keeps the process alive; the command is done, so let it go.
      if (process.connected) process.disconnect();
    },
    (e) => { process.stderr.write(`asl: internal error: ${(e as Error)?.stack ?? e}\n`); process.exitCode = 70; },
  );
}
