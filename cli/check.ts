// `asl check <appDir> [--json]`: the language server's diagnostics, printed for a terminal or a script.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { checkApp } from '../core/check';
import type { Diagnostic } from '../core/diagnostics';
import { findAppRoots, findAppRootUpwards, loadApp, rootFileOf } from '../core/load';
import { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, UsageError, type CliIO } from './io';

export const CHECK_HELP = `Usage: asl check [appDir] [--json]

Checks every configuration file of an exported app (or of every app below appDir) and prints the problems:
  path:line:col  severity  code  message
Paths are relative to the current folder; lines and columns start at 1.

Options:
  --json     print a JSON array of {file, range, severity, code, message} (0-based LSP positions)
  -h, --help show this help

Exit status: 0 when there is no error, 1 when there is at least one error, 2 on a usage error or when no app is found.
Without appDir, the app containing the current folder is checked (searching up to 8 parent folders).`;

export async function runCheck(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
  if (values.help) { io.out(CHECK_HELP + '\n'); return EXIT_OK; }
  if (positionals.length > 1) throw new UsageError('asl check takes at most one folder');
  const roots = await resolveAppRoots(io, positionals[0]);
  if (roots.length === 0) {
    io.err(`asl check: no app found ${positionals[0] ? `in ${positionals[0]}` : 'here or in the parent folders'} (looked for root_config.json, realm_config.json, stitch.json or a legacy config.json)\n`);
    return EXIT_USAGE;
  }
  const diagnostics: Diagnostic[] = [];
  for (const root of roots) diagnostics.push(...checkApp(await loadApp(io.fs, root)));
  if (values.json) {
    io.out(JSON.stringify(diagnostics.map((d) => ({ file: path.relative(io.cwd, d.file), range: d.range, severity: d.severity, code: d.code, message: d.message })), null, 2) + '\n');
  } else {
    for (const d of diagnostics) io.out(formatDiagnostic(d, io.cwd) + '\n');
    const errors = diagnostics.filter((d) => d.severity === 'error').length;
    io.err(`${roots.length === 1 ? path.relative(io.cwd, roots[0]) || '.' : `${roots.length} apps`}: ${errors} error(s), ${diagnostics.length - errors} other problem(s)\n`);
  }
  return diagnostics.some((d) => d.severity === 'error') ? EXIT_PROBLEMS : EXIT_OK;
}

export function formatDiagnostic(d: Diagnostic, cwd: string): string {
  return `${path.relative(cwd, d.file)}:${d.range.start.line + 1}:${d.range.start.character + 1}  ${d.severity}  ${d.code}  ${d.message}`;
}

/** The app at `dir`, or every app below it; without `dir`, the app around the current folder. */
export async function resolveAppRoots(io: CliIO, dir: string | undefined): Promise<string[]> {
  if (dir === undefined) {
    const up = await findAppRootUpwards(io.fs, io.cwd);
    return up ? [up] : [];
  }
  const abs = path.resolve(io.cwd, dir);
  if (await rootFileOf(io.fs, abs)) return [abs];
  return findAppRoots(io.fs, abs);
}
