// `asl schema [appDir]`: the GraphQL schema the runtime serves for an app, as SDL.
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { validateSchema } from 'graphql';
import { generateSchema } from '../core/graphql';
import { TOOL_CONFIG_FILE, toolConfigText, toolSchemaText } from '../core/graphql/toolConfig';
import { loadApp } from '../core/load';
import { formatDiagnostic, resolveAppRoots } from './check';
import { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, UsageError, type CliIO } from './io';

export const SCHEMA_HELP = `Usage: asl schema [appDir] [--out schema.graphql [--config]]

Prints the GraphQL schema (SDL) generated from the app's collection schemas, relationships and custom
resolvers: the schema the runtime serves at /api/client/v2.0/app/<appId>/graphql.
Problems that kept parts out of the schema are printed to stderr.

Options:
  --out <file>   write the SDL to this file (relative to the current folder) instead of printing it
  --config       with --out: also write graphql.config.yml beside it, pointing at it, so GraphQL tools
                 (codegen, other editor extensions) use the app's schema

Exit status: 0 when the schema is valid, 1 when graphql-js rejects it, 2 on a usage error or when no app is found.`;

export async function runSchema(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv, allowPositionals: true, strict: true,
    options: { help: { type: 'boolean', short: 'h' }, out: { type: 'string', short: 'o' }, config: { type: 'boolean' } },
  });
  if (values.help) { io.out(SCHEMA_HELP + '\n'); return EXIT_OK; }
  if (positionals.length > 1) throw new UsageError('asl schema takes at most one folder');
  if (values.out === '') throw new UsageError('--out needs a file name');
  if (values.config && values.out === undefined) throw new UsageError('--config needs --out');
  const roots = await resolveAppRoots(io, positionals[0]);
  if (roots.length !== 1) {
    io.err(roots.length ? `asl schema: ${roots.length} apps found; name one of them:\n${roots.join('\n')}\n` : 'asl schema: no app found\n');
    return EXIT_USAGE;
  }
  const generated = generateSchema(await loadApp(io.fs, roots[0]));
  for (const d of generated.diagnostics) io.err(formatDiagnostic(d, io.cwd) + '\n');
  if (values.out !== undefined) {
    const out = path.resolve(io.cwd, values.out);
    await writeText(out, toolSchemaText(generated.sdl));
    io.err(`wrote ${out}\n`);
    if (values.config) {
      const config = path.join(path.dirname(out), TOOL_CONFIG_FILE);
      await writeText(config, toolConfigText(`./${path.basename(out)}`));
      io.err(`wrote ${config}\n`);
    }
  } else {
    io.out(generated.sdl + '\n');
  }
  const errors = validateSchema(generated.schema);
  for (const e of errors) io.err(`invalid schema: ${e.message}\n`);
  return errors.length ? EXIT_PROBLEMS : EXIT_OK;
}

async function writeText(file: string, text: string): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, text);
}
