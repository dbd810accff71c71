#!/usr/bin/env node
// The corpus of real exported apps (issue 11 §2): the platform exported them, so any error `asl check` reports on
// them is a false error. The apps themselves are other people's files and stay outside the repository; this script
// lists where they come from (test/corpus/sources.json: repo, commit, folder) and checks a local copy.
// Not part of `npm test`: extracting needs GitHub.
//
//   node scripts/corpus.mjs extract [--out /work/corpus] [--mirrors DIR]   copy each app folder at its commit
//   node scripts/corpus.mjs check   [--out /work/corpus] [--cli dist/cli.js] [--verbose]
//
// `extract` reads a repository from `<mirrors>/<owner>+<name>/repo` (a bare git directory) when there is one,
// otherwise clones it (bare, blobs on demand) into `<out>/.git-cache/`.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const here = path.dirname(new URL(import.meta.url).pathname);
const sourcesFile = path.join(here, '..', 'test', 'corpus', 'sources.json');
const { values, positionals } = parseArgs({
  options: { out: { type: 'string', default: '/work/corpus' }, mirrors: { type: 'string' }, cli: { type: 'string', default: path.join(here, '..', 'dist', 'cli.js') }, verbose: { type: 'boolean' } },
  allowPositionals: true,
});
const sources = JSON.parse(fs.readFileSync(sourcesFile, 'utf8'));
const command = positionals[0];

if (command === 'extract') extract();
else if (command === 'check') check();
else {
  process.stderr.write('usage: node scripts/corpus.mjs extract|check [--out DIR] [--mirrors DIR] [--cli dist/cli.js] [--verbose]\n');
  process.exitCode = 2;
}

function gitDirOf(repo) {
  if (values.mirrors) {
    const mirror = path.join(values.mirrors, repo.replace('/', '+'), 'repo');
    if (fs.existsSync(mirror)) return mirror;
  }
  const cache = path.join(values.out, '.git-cache', repo.replace('/', '+'));
  if (!fs.existsSync(cache)) execFileSync('git', ['clone', '--bare', '--filter=blob:none', `https://github.com/${repo}.git`, cache], { stdio: 'inherit' });
  return cache;
}

function extract() {
  for (const source of sources) {
    const target = path.join(values.out, source.name);
    fs.rmSync(target, { recursive: true, force: true });
    fs.mkdirSync(target, { recursive: true });
    const gitDir = gitDirOf(source.repo);
    const tree = source.path ? `${source.commit}:${source.path}` : source.commit;
    const tar = execFileSync('git', ['--git-dir', gitDir, 'archive', '--format=tar', tree], { maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', target], { input: tar });
    process.stdout.write(`${source.name}: ${source.repo}@${source.commit.slice(0, 10)}/${source.path || '.'}\n`);
  }
}

function generationOf(dir) {
  const read = (f) => { try { return JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')); } catch { return undefined; } };
  if (fs.existsSync(path.join(dir, 'root_config.json'))) return 'root_config.json (v3)';
  if (fs.existsSync(path.join(dir, 'realm_config.json'))) return `realm_config.json ${read('realm_config.json')?.config_version ?? '?'}`;
  if (fs.existsSync(path.join(dir, 'stitch.json'))) return `stitch.json ${read('stitch.json')?.config_version ?? '?'}`;
  if (fs.existsSync(path.join(dir, 'config.json'))) return `config.json ${read('config.json')?.config_version ?? '?'}`;
  return 'unknown';
}

function check() {
  const byCode = new Map();
  const generations = new Map();
  let errors = 0;
  let checked = 0;
  for (const source of sources) {
    const dir = path.join(values.out, source.name);
    if (!fs.existsSync(dir)) { process.stdout.write(`${source.name}: missing (run extract)\n`); continue; }
    checked++;
    const generation = generationOf(dir);
    generations.set(generation, (generations.get(generation) ?? 0) + 1);
    const run = spawnSync(process.execPath, [values.cli, 'check', '--json', dir], { encoding: 'utf8', maxBuffer: 1 << 28, cwd: dir });
    let diagnostics;
    try { diagnostics = JSON.parse(run.stdout); } catch { process.stdout.write(`${source.name}: asl check failed (exit ${run.status}): ${run.stderr.trim()}\n`); errors++; continue; }
    const appErrors = diagnostics.filter((d) => d.severity === 'error');
    errors += appErrors.length;
    process.stdout.write(`${source.name} [${generation}]: ${appErrors.length} error(s), ${diagnostics.length - appErrors.length} other\n`);
    for (const d of diagnostics) {
      const key = `${d.severity} ${d.code}`;
      byCode.set(key, (byCode.get(key) ?? 0) + 1);
      if (d.severity === 'error' || values.verbose) process.stdout.write(`  ${d.file}:${d.range.start.line + 1}:${d.range.start.character + 1} ${d.severity} ${d.code} ${d.message}\n`);
    }
  }
  process.stdout.write(`\n${checked} apps; generations: ${[...generations].map(([g, n]) => `${g} ×${n}`).join(', ')}\n`);
  for (const [key, n] of [...byCode].sort()) process.stdout.write(`  ${key}: ${n}\n`);
  process.stdout.write(`errors: ${errors}\n`);
  process.exitCode = errors === 0 ? 0 : 1;
}
