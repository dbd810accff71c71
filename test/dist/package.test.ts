// The .vsix people install: `npm run package`'s packaging of the built dist/ holds exactly what the installed
// extension runs and shows, stays under the size goal, carries a published extension's manifest, and its
// bundles work from the unpacked package alone (no checkout, no node_modules beside them).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { strToU8, unzipSync, zipSync } from 'fflate';
import { REPO_ROOT } from '../helpers/disk';

const loadPackaging = () => import('../../scripts/package.mjs');

describe('the .vsix', () => {
  let work: string;
  let vsix: string;
  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-vsix-'));
    const { packageExtension } = await loadPackaging();
    vsix = packageExtension({ out: path.join(work, 'extension.vsix'), build: false });
  });
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  test('holds the bundles, schemas, syntaxes, templates with their built web clients, icon, README, CHANGELOG and LICENSE, and nothing else', async () => {
    const { checkVsix, readVsix, REQUIRED_FILES } = await loadPackaging();
    assert.deepEqual(checkVsix(vsix), []);
    const { files } = readVsix(vsix);
    for (const required of REQUIRED_FILES) assert.ok(files.includes(required), required);
    // Template apps are data (their client code has TypeScript files of its own); everything else is checked.
    const leaks = files.filter((f) => /^(test|bench|client|core|runtime|server|cli|scripts|examples|node_modules|\.ci)\//.test(f)
      || (!f.startsWith('templates/') && /\.(ts|map)$/.test(f)) || f.includes('node_modules/'));
    assert.deepEqual(leaks, []);
    const templateApps = fs.readdirSync(path.join(REPO_ROOT, 'templates'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    for (const template of templateApps) assert.ok(files.some((f) => f.startsWith(`templates/${template}/`)), `template ${template} is missing`);
  });

  test(`is at most 10 MB`, async () => {
    const { MAX_VSIX_BYTES } = await loadPackaging();
    const bytes = fs.statSync(vsix).size;
    assert.ok(bytes <= MAX_VSIX_BYTES, `${bytes} bytes`);
  });

  test('carries the manifest of a published extension, with the walkthrough', async () => {
    const { readVsix } = await loadPackaging();
    const { manifest } = readVsix(vsix);
    const source = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    assert.equal(manifest.name, source.name);
    assert.equal(manifest.publisher, source.publisher);
    assert.equal(manifest.license, 'MIT');
    assert.match(manifest.engines.vscode, /^\^1\.\d+\.\d+$/);
    assert.equal(manifest.icon, 'media/icon.png');
    assert.ok(manifest.keywords.length >= 5 && manifest.keywords.length <= 30);
    assert.ok(manifest.categories.length > 0);
    const walkthrough = manifest.contributes.walkthroughs?.[0];
    assert.ok(walkthrough && walkthrough.steps.length >= 5, 'the walkthrough ships with its steps');
  });

  test('its bundles run from the unpacked package alone: asl check and asl schema on the example app', () => {
    const unpacked = path.join(work, 'unpacked');
    for (const [name, data] of Object.entries(unzipSync(fs.readFileSync(vsix)))) {
      if (name.endsWith('/')) continue;
      fs.mkdirSync(path.dirname(path.join(unpacked, name)), { recursive: true });
      fs.writeFileSync(path.join(unpacked, name), data);
    }
    const app = path.join(work, 'todo-tracker');
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), app, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    const cli = path.join(unpacked, 'extension/dist/cli.js');
    const check = spawnSync(process.execPath, [cli, 'check', app], { cwd: work, encoding: 'utf8' });
    assert.equal(check.status, 0, check.stdout + check.stderr);
    const schema = spawnSync(process.execPath, [cli, 'schema', app], { cwd: work, encoding: 'utf8' });
    assert.equal(schema.status, 0, schema.stderr);
    assert.match(schema.stdout, /type Task \{/);
  });

  test('the check names a leaked source file, a missing bundle and an oversized package', async () => {
    const { checkVsix, MAX_VSIX_BYTES } = await loadPackaging();
    const manifest = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    const bad = path.join(work, 'bad.vsix');
    fs.writeFileSync(bad, zipSync({
      'extension/package.json': strToU8(JSON.stringify(manifest)),
      'extension/client/extension.ts': strToU8('export {};'),
      'extension/dist/extension.js.map': strToU8('{}'),
      // Stored, not deflated, so the file really is over the goal.
      'extension/templates/big.bin': [new Uint8Array(MAX_VSIX_BYTES + 1), { level: 0 }],
    }));
    const problems = checkVsix(bad);
    assert.ok(problems.includes('should not ship: client/extension.ts'), problems.join('\n'));
    assert.ok(problems.includes('should not ship: dist/extension.js.map'), problems.join('\n'));
    assert.ok(problems.includes('missing: dist/server.js'), problems.join('\n'));
    assert.ok(problems.some((p) => /MB is over the 10 MB goal/.test(p)), problems.join('\n'));
  });
});
