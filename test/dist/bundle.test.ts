// The build's single-copy check: each bundle holds one copy of each library. Built without the plugin
// that sends every import to one copy, the CLI bundle holds graphql-js twice (ESM for our code, CommonJS
// for graphql-jit) and the check must say so; built as it ships, it holds each library once.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as esbuild from 'esbuild';
import { REPO_ROOT } from '../helpers/disk';

const loadBuild = () => import('../../scripts/build.mjs');

async function metafileOf(options: esbuild.BuildOptions): Promise<esbuild.Metafile> {
  const result = await esbuild.build({ ...options, absWorkingDir: REPO_ROOT, write: false, metafile: true, logLevel: 'silent' });
  return result.metafile!;
}

describe('one copy of each library per bundle', () => {
  test('without the single-copy plugin the CLI bundle holds two graphql-js builds, and the check reports it', async () => {
    const { buildOptions, buildEntries, duplicatePackages } = await loadBuild();
    const cli = buildEntries.find((e) => e.outfile === 'dist/cli.js')!;
    const problems = duplicatePackages(await metafileOf({ ...buildOptions, ...cli, plugins: [] }));
    assert.ok(problems.some((p) => /^graphql is bundled in two builds: .*\.mjs and .*\.js$/.test(p)), problems.join('\n'));
  });

  test('every shipped bundle holds each library once', async () => {
    const { buildOptions, buildEntries, duplicatePackages } = await loadBuild();
    for (const entry of buildEntries) {
      assert.deepEqual(duplicatePackages(await metafileOf({ ...buildOptions, ...entry })), [], entry.outfile);
    }
  });

  test('two install folders of one package, and lib/esm + lib/umd builds of one module, are both reported', async () => {
    const { duplicatePackages } = await loadBuild();
    const input = { bytes: 1, imports: [] };
    const problems = duplicatePackages({
      inputs: {
        'node_modules/a/index.js': input, 'node_modules/b/node_modules/a/index.js': input,
        'node_modules/c/lib/esm/main.js': input, 'node_modules/c/lib/umd/main.js': input,
        'node_modules/d/one.js': input, 'node_modules/d/two.js': input,
      },
      outputs: {},
    });
    assert.deepEqual(problems, [
      'a is bundled from 2 folders: node_modules/a, node_modules/b/node_modules/a',
      'c is bundled in two builds: node_modules/c/lib/esm/main.js and node_modules/c/lib/umd/main.js',
    ]);
  });
});
