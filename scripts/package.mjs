// `npm run package`: builds, then makes the one .vsix people install (`code --install-extension <file>`),
// offline and without prompts, and checks it: every file is one the installed extension runs or shows
// (.vscodeignore lets them in), the required ones are all there, and the file stays under the size goal.
// Usage: node scripts/package.mjs [--out FILE] [--no-build]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { unzipSync } from 'fflate';

export const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const MAX_VSIX_BYTES = 10 * 1024 * 1024;

/** Paths inside the .vsix (under `extension/`) that the installed extension needs. */
export const REQUIRED_FILES = [
  'package.json', 'readme.md', 'changelog.md', 'LICENSE.txt', 'media/icon.png',
  'dist/extension.js', 'dist/language-client.js', 'dist/features.js', 'dist/server.js', 'dist/cli.js', 'dist/function-process.js', 'dist/function-worker.js',
  'dist/store-evaluator.js',
  'schemas/root-config.schema.json', 'syntaxes/graphql.tmLanguage.json',
  // The web templates' clients, built by scripts/build-templates.mjs, are served by the runtime's hosting.
  'templates/web-js/hosting/files/app.js', 'templates/web-js-data-api/hosting/files/app.js',
];

/** Where the files of the .vsix may come from; anything else (sources, tests, maps, node_modules) is a leak. */
const ALLOWED = [
  /^(package\.json|readme\.md|changelog\.md|LICENSE\.txt)$/,
  /^dist\/[a-z-]+\.js$/,
  /^schemas\/[^/]+\.schema\.json$/,
  /^syntaxes\/[^/]+\.json$/,
  /^templates\/(?!README\.md$).+/,
  /^media\/icon\.png$/,
  /^media\/walkthrough\/[^/]+\.(md|png|svg)$/,
];

export function vsixFileName(manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))) {
  return `${manifest.name}-${manifest.version}.vsix`;
}

/** The extension's files in a .vsix (paths relative to its `extension/` folder) and its byte size. */
export function readVsix(file) {
  const bytes = fs.readFileSync(file);
  const names = [];
  // Every name is listed, but only the manifest is inflated.
  const entries = unzipSync(bytes, {
    filter: (entry) => {
      if (!entry.name.endsWith('/')) names.push(entry.name);
      return entry.name === 'extension/package.json';
    },
  });
  const files = names.filter((n) => n.startsWith('extension/')).map((n) => n.slice('extension/'.length));
  const manifest = JSON.parse(new TextDecoder().decode(entries['extension/package.json']));
  return { files, manifest, bytes: bytes.length, names };
}

/** Everything wrong with a .vsix: leaked files, missing files, size over the goal, manifest gaps. */
export function checkVsix(file) {
  const { files, manifest, bytes } = readVsix(file);
  const problems = [];
  for (const f of files) if (!ALLOWED.some((pattern) => pattern.test(f))) problems.push(`should not ship: ${f}`);
  for (const f of REQUIRED_FILES) if (!files.includes(f)) problems.push(`missing: ${f}`);
  for (const step of manifest.contributes?.walkthroughs?.flatMap((w) => w.steps) ?? []) {
    const media = step.media?.markdown ?? step.media?.image ?? step.media?.svg;
    if (typeof media === 'string' && !files.includes(media)) problems.push(`missing walkthrough media: ${media}`);
  }
  if (manifest.icon && !files.includes(manifest.icon)) problems.push(`missing icon: ${manifest.icon}`);
  for (const key of ['displayName', 'description', 'publisher', 'version', 'license', 'icon', 'categories', 'keywords', 'engines']) {
    if (manifest[key] === undefined || (Array.isArray(manifest[key]) && manifest[key].length === 0)) problems.push(`package.json has no ${key}`);
  }
  if (bytes > MAX_VSIX_BYTES) problems.push(`${(bytes / 1024 / 1024).toFixed(2)} MB is over the ${MAX_VSIX_BYTES / 1024 / 1024} MB goal`);
  return problems;
}

function run(command, args) {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
}

export function packageExtension({ out = path.join(ROOT, vsixFileName()), build = true } = {}) {
  if (build) run(process.execPath, [path.join(ROOT, 'scripts/build.mjs')]);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.rmSync(out, { force: true });
  // --no-dependencies: the bundles carry their libraries (mongodb, external to them, is only for
  // `asl serve --mongodb-uri`, which the editor never passes), so vsce neither runs npm nor reads the network.
  run(process.execPath, [path.join(ROOT, 'node_modules/@vscode/vsce/vsce'), 'package', '--no-dependencies', '--no-update-package-json',
    '--allow-missing-repository', '--out', out]);
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { out: { type: 'string' }, 'no-build': { type: 'boolean' } } });
  const out = packageExtension({ out: values.out ? path.resolve(values.out) : undefined, build: !values['no-build'] });
  const problems = checkVsix(out);
  const { files, bytes } = readVsix(out);
  console.log(`${path.relative(process.cwd(), out)}: ${files.length} files, ${(bytes / 1024 / 1024).toFixed(2)} MB (goal ≤ ${MAX_VSIX_BYTES / 1024 / 1024} MB)`);
  if (problems.length) {
    console.error(`the package is wrong:\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`install it with: code --install-extension ${path.relative(process.cwd(), out)}`);
}
