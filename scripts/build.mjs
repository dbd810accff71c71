// Bundles the three entry points with esbuild: the extension client, the language server, the `asl` CLI.
import * as esbuild from 'esbuild';
import fs from 'node:fs';

const { version } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

const watch = process.argv.includes('--watch');
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
};
const entries = [
  { entryPoints: ['client/extension.ts'], outfile: 'dist/extension.js' },
  { entryPoints: ['server/main.ts'], outfile: 'dist/server.js' },
  { entryPoints: ['cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } },
  // App functions run in worker threads; the runner loads this file next to its own bundle.
  { entryPoints: ['runtime/functions/worker.ts'], outfile: 'dist/function-worker.js' },
];

if (watch) {
  for (const e of entries) {
    const ctx = await esbuild.context({ ...common, ...e });
    await ctx.watch();
  }
  console.log('esbuild: watching client, server and cli');
} else {
  await Promise.all(entries.map((e) => esbuild.build({ ...common, ...e })));
}
