// Every source folder has a README.md saying what lives there and what it may import, and naming only
// files that exist (issue 31, item 5). For each folder under core/, runtime/, server/, client/ and cli/
// that holds a .ts file (node_modules, dist and fixtures aside):
//  - there is a README.md;
//  - it has a line starting "May import:";
//  - every backticked `*.ts` name, and every backticked file (`x.json`) or folder (`x/`) in a table row's
//    first column, exists. Other mentions (app files such as `sync/config.json` in prose, commands, code
//    in fenced blocks) are not checked.
// A name resolves against the README's folder; in a table row also against the folders that row's first
// column names (a `http/` row may name `home.ts`); a name with a `/` also against the repository root
// (`core/json.ts` from any folder).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { REPO_ROOT } from '../helpers/disk';

const SOURCE_ROOTS = ['core', 'runtime', 'server', 'client', 'cli'];
const SKIPPED = new Set(['node_modules', 'dist', 'fixtures']);

/** A path-like code span: segments of word characters, dots, `@` and `-`, an optional trailing `/`. */
const PATH = /^[\w.@-]+(\/[\w.@-]+)*\/?$/;

function sourceFolders(dir: string): string[] {
  const entries = fs.readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true });
  const own = entries.some((e) => e.isFile() && e.name.endsWith('.ts')) ? [dir] : [];
  const nested = entries
    .filter((e) => e.isDirectory() && !SKIPPED.has(e.name) && !e.name.startsWith('.'))
    .flatMap((e) => sourceFolders(`${dir}/${e.name}`));
  return [...own, ...nested];
}

function codeSpans(text: string): string[] {
  return [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
}

/** The names a README commits to, each with the folders (relative to the README's) it may be in. */
function namedFiles(readme: string): { name: string; bases: string[] }[] {
  const out: { name: string; bases: string[] }[] = [];
  let fenced = false;
  for (const line of readme.split('\n')) {
    if (line.trimStart().startsWith('```')) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    const bases = ['.'];
    if (line.startsWith('|')) {
      const firstCell = line.slice(1).split(/(?<!\\)\|/)[0];
      const paths = codeSpans(firstCell).filter((s) => PATH.test(s) && (/\.\w+$/.test(s) || s.endsWith('/')));
      bases.push(...paths.filter((p) => p.endsWith('/')));
      out.push(...paths.map((name) => ({ name, bases })));
    }
    out.push(...codeSpans(line).filter((s) => PATH.test(s) && s.endsWith('.ts')).map((name) => ({ name, bases })));
  }
  return out;
}

function exists(folder: string, name: string, bases: string[]): boolean {
  const candidates = bases.map((base) => path.join(REPO_ROOT, folder, base, name));
  if (name.includes('/')) candidates.push(path.join(REPO_ROOT, name));
  return candidates.some((p) => fs.existsSync(p));
}

describe('every source folder has a README that matches its files', () => {
  const folders = SOURCE_ROOTS.flatMap(sourceFolders);

  test('the source folders are found', () => {
    assert.ok(folders.includes('runtime/sync/wire') && folders.includes('core'), folders.join(', '));
  });

  for (const folder of folders) {
    test(folder, () => {
      const file = path.join(REPO_ROOT, folder, 'README.md');
      assert.ok(fs.existsSync(file), `${folder}/ has no README.md`);
      const readme = fs.readFileSync(file, 'utf8');
      assert.match(readme, /^May import:/m, `${folder}/README.md has no line starting "May import:"`);
      const missing = new Set(namedFiles(readme).filter(({ name, bases }) => !exists(folder, name, bases)).map(({ name }) => name));
      assert.equal(missing.size, 0, `${folder}/README.md names files that do not exist: ${[...missing].join(', ')}`);
    });
  }
});
