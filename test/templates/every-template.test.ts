// Every template, as `apps create --template` writes it: the backend checks clean and serves; the client's
// metadata file parses in its format with every key; the CLI form holds the new app id, the download form none.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DOMParser, type Element } from '@xmldom/xmldom';
import { nodeFileWriter } from '../../core/fs';
import {
  METADATA_KEYS, TEMPLATES, TemplateError, clientFiles, createAppFiles, metadataFilePath, writeFileMap, type TemplateInfo,
} from '../../core/templates';
import { bundledTemplates } from '../../runtime/templates';
import { DIST } from '../helpers/disk';

const CLI = path.join(DIST, 'cli.js');
const BASE_URL = 'http://localhost:8123';

/** The metadata file's keys and values, read with a real parser for its format. */
function readMetadata(template: TemplateInfo, text: string): Record<string, string> {
  const format = template.client!.fileFormat;
  if (format === 'json') return JSON.parse(text) as Record<string, string>;
  const errors: string[] = [];
  const doc = new DOMParser({ onError: (level, message) => { if (level !== 'warning') errors.push(message); } }).parseFromString(text, 'text/xml');
  assert.deepEqual(errors, [], `${template.id}: the ${format} file does not parse`);
  const root = doc.documentElement!;
  const values: Record<string, string> = {};
  if (format === 'xml') {
    assert.equal(root.tagName, 'resources');
    for (const s of Array.from(root.getElementsByTagName('string'))) values[s.getAttribute('name')!] = s.textContent ?? '';
    return values;
  }
  assert.equal(root.tagName, 'plist');
  const dict = root.getElementsByTagName('dict')[0]!;
  const children = Array.from(dict.childNodes).filter((n): n is Element => n.nodeType === 1);
  for (let i = 0; i < children.length; i += 2) {
    assert.equal(children[i]!.tagName, 'key');
    assert.equal(children[i + 1]!.tagName, 'string');
    values[children[i]!.textContent!] = children[i + 1]!.textContent ?? '';
  }
  return values;
}

const appIdKey = (t: TemplateInfo) => (t.client!.metadataKind === 'android-xml' ? 'realm_app_id' : 'appId');
const baseUrlKey = (t: TemplateInfo) => (t.client!.metadataKind === 'android-xml' ? 'realm_base_url' : 'baseUrl');

/** Starts `asl serve` on a free port and resolves with its first lines once it listens. */
function serveOnce(appDir: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'serve', appDir, '--port', '0', '--no-watch', '--data', fs.mkdtempSync(path.join(os.tmpdir(), 'asl-data-'))], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`asl serve did not start in 20 s:\n${out}${err}`)); }, 20_000);
    child.stdout.on('data', (c) => {
      out += c;
      if (/^app id: .+$/m.test(out)) { clearTimeout(timer); child.kill('SIGTERM'); child.once('exit', () => resolve(out)); }
    });
    child.stderr.on('data', (c) => { err += c; });
    child.once('exit', (code) => { clearTimeout(timer); if (!/^app id:/m.test(out)) reject(new Error(`asl serve exited with ${code}:\n${out}${err}`)); });
  });
}

let root: string;
before(() => { root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-templates-')); });
after(() => fs.rmSync(root, { recursive: true, force: true }));

for (const template of TEMPLATES) {
  describe(template.id, () => {
    const appId = `t${TEMPLATES.indexOf(template)}-abcde`;
    let dir: string;
    before(async () => {
      dir = path.join(root, template.id);
      const { files } = await createAppFiles(bundledTemplates(), template.id, { name: `T${TEMPLATES.indexOf(template)}`, appId, baseUrl: BASE_URL });
      await writeFileMap(nodeFileWriter, dir, files);
    });

    test('asl check reports no error on the backend', () => {
      const r = spawnSync(process.execPath, [CLI, 'check', path.join(dir, 'backend')], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stderr, /: 0 error\(s\)/);
    });

    test('asl serve starts it under the new app id', async () => {
      const out = await serveOnce(path.join(dir, 'backend'));
      assert.match(out, new RegExp(`^app id: ${appId}$`, 'm'));
      assert.equal(JSON.parse(fs.readFileSync(path.join(dir, 'backend', 'realm_config.json'), 'utf8')).app_id, appId);
      if (template.backend.startsWith('web-js')) assert.match(out, new RegExp(`^hosting: http://${appId}\\.localhost:\\d+/$`, 'm'));
    });

    if (!template.client) {
      test('has no client code (backend only)', async () => {
        assert.equal(fs.existsSync(path.join(dir, 'frontend')), false);
        assert.equal(await clientFiles(bundledTemplates(), template.id, { kind: 'download' }), undefined);
      });
      return;
    }

    test('CLI form: the metadata file parses, holds every key, the new app id and the runtime URL', () => {
      const client = path.join(dir, 'frontend', template.id);
      const values = readMetadata(template, fs.readFileSync(path.join(client, metadataFilePath(template)!), 'utf8'));
      assert.deepEqual(Object.keys(values).sort(), [...METADATA_KEYS[template.client!.metadataKind]].sort());
      assert.equal(values[appIdKey(template)], appId);
      assert.equal(values[baseUrlKey(template)], BASE_URL);
      for (const [key, value] of Object.entries(values)) assert.notEqual(value, '', `${template.id}: ${key} is empty`);
      const readme = fs.readFileSync(path.join(client, 'README.md'), 'utf8');
      assert.ok(readme.includes(metadataFilePath(template)!), `${template.id}: the README names where the app id goes`);
      assert.match(readme, /What works against the local runtime/);
    });

    test('download form: the app id is blank and nothing holds an app id', async () => {
      if (!template.client!.downloadable) {
        await assert.rejects(clientFiles(bundledTemplates(), template.id, { kind: 'download' }), (e) => e instanceof TemplateError && e.code === 'NotDownloadable');
        return;
      }
      const files = (await clientFiles(bundledTemplates(), template.id, { kind: 'download' }))!;
      const values = readMetadata(template, files.get(metadataFilePath(template)!)!);
      assert.deepEqual(Object.keys(values).sort(), [...METADATA_KEYS[template.client!.metadataKind]].sort());
      assert.equal(values[appIdKey(template)], '');
      for (const text of files.values()) assert.doesNotMatch(text, /t\d+-abcde/);
    });

    test('the template folder itself holds the download form of the metadata file', async () => {
      const committed = fs.readFileSync(path.join(bundledTemplates().root, template.client!.dir, metadataFilePath(template)!), 'utf8');
      const download = template.client!.downloadable
        ? (await clientFiles(bundledTemplates(), template.id, { kind: 'download' }))!.get(metadataFilePath(template)!)
        : undefined;
      assert.equal(readMetadata(template, committed)[appIdKey(template)], '');
      if (download) assert.equal(committed, download);
    });
  });
}
