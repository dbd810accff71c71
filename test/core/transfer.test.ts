// The import body of an app both ways, and the diffs an import shows.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { appJsonToFiles, AppJsonError, filesToAppJson, isTransferredPath, type FileMap } from '../../core/transfer/appJson';
import { changedFiles, unifiedDiffs } from '../../core/transfer/diff';
import { baseApp } from '../helpers/app';
import { REPO_ROOT } from '../helpers/disk';

function exampleFiles(): FileMap {
  const dir = path.join(REPO_ROOT, 'examples/todo-tracker');
  const files: FileMap = new Map();
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const rel = path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/');
    if (isTransferredPath(rel)) files.set(rel, fs.readFileSync(path.join(dir, rel), 'utf8'));
  }
  return files;
}

function textFiles(app: Record<string, unknown>): FileMap {
  return new Map(Object.entries(app).map(([p, v]) => [p, typeof v === 'string' ? v : JSON.stringify(v, null, 2) + '\n']));
}

describe('the import body', () => {
  test('the example app round-trips to the same files, texts kept, with the shape realm-cli sends', () => {
    const files = exampleFiles();
    const body = filesToAppJson(files);
    for (const key of ['auth', 'functions', 'endpoints', 'graphql', 'sync', 'secrets']) assert.ok(typeof body[key] === 'object', key);
    assert.equal(body.app_id, 'todo-tracker-abcde');
    assert.ok(Array.isArray(body.data_sources));
    const back = appJsonToFiles(JSON.parse(JSON.stringify(body)), files);
    assert.deepEqual([...back.keys()].sort(), [...files.keys()].sort());
    for (const [p, text] of files) assert.equal(back.get(p), text, p);
    assert.deepEqual(changedFiles(files, back), []);
  });

  test('items keep the file they have by name; new ones get one named after them; a missing one is deleted', () => {
    const files = textFiles({
      ...baseApp(),
      'values/renamedFile.json': { name: 'greeting', value: 'hi' },
      'triggers/my-trigger-file.json': { name: 'onTask', type: 'DATABASE', config: {}, function_name: 'renameTask', disabled: false },
    });
    const body = filesToAppJson(files) as Record<string, any>;
    body.values = body.values.map((v: any) => (v.name === 'greeting' ? { ...v, value: 'hello' } : v));
    body.values.push({ name: 'extra', value: 1 });
    body.triggers = [];
    const changes = changedFiles(files, appJsonToFiles(body, files));
    assert.deepEqual(changes.map((c) => [c.kind, c.path]), [
      ['deleted', 'triggers/my-trigger-file.json'],
      ['added', 'values/extra.json'],
      ['modified', 'values/renamedFile.json'],
    ]);
    const diffs = unifiedDiffs(changes);
    assert.match(diffs[2]!, /^--- values\/renamedFile\.json\n\+\+\+ values\/renamedFile\.json\n@@ [^\n]+\n(?:[ +-][^\n]*\n)*-  "value": "hi"\n\+  "value": "hello"\n/);
  });

  test('formatting alone is no difference; files the body cannot carry are never compared', () => {
    const files = textFiles(baseApp());
    const reformatted = new Map(files);
    reformatted.set('graphql/config.json', '{"use_natural_pluralization":true}');
    reformatted.set('hosting/files/index.html', '<p>x</p>');
    assert.deepEqual(changedFiles(files, reformatted), []);
  });

  test('a body with paths leaving the app or the wrong shapes is refused with where', () => {
    const files = textFiles(baseApp());
    const body = filesToAppJson(files) as Record<string, any>;
    assert.throws(() => appJsonToFiles({ ...body, functions: { sources: { '../../etc/x.js': 'x' } } }, files), (e: unknown) => e instanceof AppJsonError && /functions\/\.\.\/\.\.\/etc\/x\.js/.test((e as Error).message));
    assert.throws(() => appJsonToFiles({ ...body, data_sources: [{ config: {} }] }, files), /data_sources\[0\]/);
    assert.throws(() => appJsonToFiles([], files), AppJsonError);
  });
});
