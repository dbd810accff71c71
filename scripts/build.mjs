// Bundles the three entry points with esbuild: the extension client, the language server, the `asl` CLI.
// Each bundle must hold one copy of each library: after a build, `checkSingleCopies` reads esbuild's
// metafile and fails the build when a package appears twice (two install folders, or two builds of the
// same module such as `index.js` and `index.mjs`). Two copies of graphql-js break every schema object
// that crosses from one to the other ("Cannot use GraphQLNonNull from another module or realm").
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildHostedTemplates } from './build-templates.mjs';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

const watch = process.argv.includes('--watch');

/**
 * Packages that dependencies reach by other paths than our code does, sent to one copy:
 * - graphql: our code gets its ESM build (`mainFields` below), while graphql-jit requires its CommonJS
 *   files by name (`graphql/error/index.js`); every import goes to the ESM files.
 * - fast-uri: fast-json-stringify (under graphql-jit) nests fast-uri 4 only to hand it to ajv as its URI
 *   resolver; ajv is built for the fast-uri 3 at the top (same functions), so that one serves both.
 * - vscode-languageserver-types: vscode-languageserver requires its UMD build, graphql-language-service's
 *   ESM build imports its ESM build; both get the required one.
 */
const singleCopyPlugin = {
  name: 'single-copy',
  setup(build) {
    build.onResolve({ filter: /^graphql(\/.*)?$/ }, (args) => ({ path: graphqlEsmFile(args.path) }));
    build.onResolve({ filter: /^vscode-languageserver-types$/ }, async (args) => {
      if (args.pluginData === 'as-required') return undefined;
      const result = await build.resolve(args.path, { kind: 'require-call', resolveDir: args.resolveDir, pluginData: 'as-required' });
      return result.errors.length > 0 ? { errors: result.errors } : { path: result.path };
    });
    build.onResolve({ filter: /^fast-uri$/ }, async (args) => {
      if (args.pluginData === 'top-level') return undefined;
      const result = await build.resolve(args.path, { kind: args.kind, resolveDir: ROOT, pluginData: 'top-level' });
      return result.errors.length > 0 ? { errors: result.errors } : { path: result.path };
    });
  },
};

/** `graphql`, `graphql/execution`, `graphql/error/index.js` → the ESM file of that module. */
function graphqlEsmFile(specifier) {
  // The real folder: esbuild resolves every other import through symlinks (a linked node_modules), so must this one.
  const dir = fs.realpathSync(path.join(ROOT, 'node_modules', 'graphql'));
  const sub = specifier.slice('graphql'.length).replace(/^\//, '').replace(/\.(m?js)$/, '') || 'index';
  for (const candidate of [`${sub}.mjs`, path.join(sub, 'index.mjs')]) {
    const file = path.join(dir, candidate);
    if (fs.existsSync(file)) return file;
  }
  throw new Error(`graphql: no ESM module for "${specifier}"`);
}

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // jsonc-parser's UMD main breaks when bundled; its ESM build bundles cleanly.
  mainFields: ['module', 'main'],
  sourcemap: 'linked',
  logLevel: 'warning',
  // The MongoDB driver is optional and loaded lazily; it stays in node_modules.
  external: ['vscode', 'mongodb'],
  define: { ASL_VERSION: JSON.stringify(version) },
  plugins: [singleCopyPlugin],
  metafile: true,
};
const entries = [
  { entryPoints: ['client/extension.ts'], outfile: 'dist/extension.js' },
  // Loaded by dist/extension.js after activation (the language client) and on first use (runtime control,
  // query runner, app explorer), so activation stays fast.
  { entryPoints: ['client/languageBundle.ts'], outfile: 'dist/language-client.js' },
  { entryPoints: ['client/features.ts'], outfile: 'dist/features.js' },
  { entryPoints: ['server/main.ts'], outfile: 'dist/server.js' },
  { entryPoints: ['cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } },
  // App functions run in a process of their own (started by the runner from the file next to its own
  // bundle), on worker threads it starts from the file next to it.
  { entryPoints: ['runtime/functions/process.ts'], outfile: 'dist/function-process.js' },
  { entryPoints: ['runtime/functions/worker.ts'], outfile: 'dist/function-worker.js' },
  // Aggregations that outrun the serving thread's brief budget finish on this worker thread.
  { entryPoints: ['runtime/store/evaluator-worker.ts'], outfile: 'dist/store-evaluator.js' },
];

/** Path segments that name a build flavour rather than a module: `lib/esm/x.js` and `lib/umd/x.js` are one module. */
const FLAVOUR_SEGMENTS = new Set(['esm', 'cjs', 'umd', 'es', 'es6', 'es2015', 'mjs', 'commonjs', 'module', 'node', 'browser']);

/**
 * Every package that appears in a bundle more than once: under two install folders (two versions), or
 * as two files of one module in different builds (`index.js` + `index.mjs`, `lib/esm/…` + `lib/umd/…`).
 * Returns one message per such package.
 */
export function duplicatePackages(metafile) {
  const packages = new Map();
  for (const input of Object.keys(metafile.inputs)) {
    const m = /^(.*node_modules\/)((?:@[^/]+\/)?[^/]+)\/(.+)$/.exec(input.replace(/\\/g, '/'));
    if (!m) continue;
    const [, prefix, name, file] = m;
    let entry = packages.get(name);
    if (!entry) packages.set(name, (entry = { folders: new Set(), modules: new Map() }));
    entry.folders.add(prefix + name);
    const module = `${prefix}${name}/${file.split('/').filter((s) => !FLAVOUR_SEGMENTS.has(s)).join('/').replace(/\.(c|m)?js$/, '')}`;
    const files = entry.modules.get(module) ?? [];
    files.push(input);
    entry.modules.set(module, files);
  }
  const problems = [];
  for (const [name, { folders, modules }] of packages) {
    if (folders.size > 1) problems.push(`${name} is bundled from ${folders.size} folders: ${[...folders].join(', ')}`);
    const twice = [...modules.values()].find((files) => files.length > 1);
    if (twice) problems.push(`${name} is bundled in two builds: ${twice.join(' and ')}`);
  }
  return problems;
}

function checkSingleCopies(outfile, metafile) {
  const problems = duplicatePackages(metafile);
  if (problems.length === 0) return true;
  console.error(`${outfile}: a library is bundled twice (objects from one copy are foreign to the other):\n  ${problems.join('\n  ')}`);
  return false;
}

const singleCopyCheck = (outfile) => ({
  name: 'single-copy-check',
  setup(build) {
    build.onEnd((result) => { if (result.metafile) checkSingleCopies(outfile, result.metafile); });
  },
});

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildHostedTemplates();
  if (watch) {
    for (const e of entries) {
      const ctx = await esbuild.context({ ...common, ...e, plugins: [...common.plugins, singleCopyCheck(e.outfile)] });
      await ctx.watch();
    }
    console.log('esbuild: watching client, server and cli');
  } else {
    const results = await Promise.all(entries.map((e) => esbuild.build({ ...common, ...e })));
    const ok = results.map((r, i) => checkSingleCopies(entries[i].outfile, r.metafile)).every(Boolean);
    if (!ok) process.exit(1);
  }
}

export { common as buildOptions, entries as buildEntries };
