// `asl schema [appDir]`: the GraphQL schema the runtime serves for an app, as SDL.
import { parseArgs } from 'node:util';
import { validateSchema } from 'graphql';
import { generateSchema } from '../core/graphql';
import { loadApp } from '../core/load';
import { formatDiagnostic, resolveAppRoots } from './check';
import { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, UsageError, type CliIO } from './io';

export const SCHEMA_HELP = `Usage: asl schema [appDir]

Prints the GraphQL schema (SDL) generated from the app's collection schemas, relationships and custom
resolvers: the schema the runtime serves at /api/client/v2.0/app/<appId>/graphql.
Problems that kept parts out of the schema are printed to stderr.

Exit status: 0 when the schema is valid, 1 when graphql-js rejects it, 2 on a usage error or when no app is found.`;

export async function runSchema(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
  if (values.help) { io.out(SCHEMA_HELP + '\n'); return EXIT_OK; }
  if (positionals.length > 1) throw new UsageError('asl schema takes at most one folder');
  const roots = await resolveAppRoots(io, positionals[0]);
  if (roots.length !== 1) {
    io.err(roots.length ? `asl schema: ${roots.length} apps found; name one of them:\n${roots.join('\n')}\n` : 'asl schema: no app found\n');
    return EXIT_USAGE;
  }
  const generated = generateSchema(await loadApp(io.fs, roots[0]));
  for (const d of generated.diagnostics) io.err(formatDiagnostic(d, io.cwd) + '\n');
  io.out(generated.sdl + '\n');
  const errors = validateSchema(generated.schema);
  for (const e of errors) io.err(`invalid schema: ${e.message}\n`);
  return errors.length ? EXIT_PROBLEMS : EXIT_OK;
}
