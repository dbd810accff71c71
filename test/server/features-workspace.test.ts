// The feature host over a real AppWorkspace: several apps in one folder, unsaved buffers, broken files.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { memoryFileSystem } from '../../core/fs';
import { LanguageFeatures } from '../../server/features';
import { AppWorkspace } from '../../server/workspace';
import { baseApp } from '../helpers/app';

const FOLDER = path.resolve('/virtual/workspace');

function twoApps(): Record<string, string> {
  const files: Record<string, string> = {};
  const add = (app: string, content: Record<string, unknown>) => {
    for (const [rel, value] of Object.entries(content)) files[path.join(FOLDER, app, rel)] = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  };
  add('tasks', baseApp());
  const notes = baseApp();
  delete notes['data_sources/mongodb-atlas/todo/Task/schema.json'];
  delete notes['data_sources/mongodb-atlas/todo/Task/relationships.json'];
  notes['data_sources/mongodb-atlas/todo/User/schema.json'] = { title: 'Note', bsonType: 'object', properties: { _id: { bsonType: 'objectId' }, text: { bsonType: 'string' } } };
  notes['auth/providers.json'] = '{"anon-user": {"name": "anon-user", "type": ';
  add('notes', notes);
  return files;
}

async function setUp() {
  const workspace = new AppWorkspace(memoryFileSystem(twoApps()));
  await workspace.setFolders([FOLDER]);
  const open = new Map<string, string>();
  const logged: string[] = [];
  const features = new LanguageFeatures((file) => workspace.appOf(file), (uri) => open.get(uri), (m) => logged.push(m));
  return { workspace, open, logged, features };
}

describe('language features in a workspace', () => {
  test('each app of a folder answers with its own types, even when another of its files is broken', async () => {
    const { workspace, open, features } = await setUp();
    assert.equal(workspace.appCount, 2);
    for (const [app, expected, absent] of [['tasks', 'Task', 'Note'], ['notes', 'Note', 'Task']] as const) {
      const uri = pathToFileURL(path.join(FOLDER, app, 'graphql/custom_resolvers/new.json')).href;
      open.set(uri, '{"on_type": ""}');
      const list = features.completion({ textDocument: { uri }, position: { line: 0, character: 14 } });
      const labels = list!.items.map((i) => i.label);
      assert.ok(labels.includes(expected), `${app}: ${labels.join()}`);
      assert.ok(!labels.includes(absent), `${app}: ${labels.join()}`);
    }
  });

  test('the unsaved buffer, not the file on disk, decides what is at the cursor', async () => {
    const { open, features } = await setUp();
    const uri = pathToFileURL(path.join(FOLDER, 'tasks', 'sync/config.json')).href;
    const text = '{"type": "partition", "partition": {"permissions": {"read": {"%%user.": 1}}}}';
    open.set(uri, text);
    const list = features.completion({ textDocument: { uri }, position: { line: 0, character: text.indexOf('%%user.') + '%%user.'.length } });
    assert.ok(list!.items.some((i) => i.label === '%%user.custom_data'));
  });

  test('a failing request is logged and answered empty', async () => {
    const logged: string[] = [];
    const features = new LanguageFeatures(() => { throw new Error('boom'); }, () => '{}', (m) => logged.push(m));
    const uri = pathToFileURL(path.join(FOLDER, 'tasks', 'sync/config.json')).href;
    assert.equal(features.hover({ textDocument: { uri }, position: { line: 0, character: 1 } }), null);
    assert.deepEqual(features.codeActions({ textDocument: { uri }, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, context: { diagnostics: [] } }), []);
    assert.equal(logged.length, 2);
    assert.match(logged[0], /hover failed .*boom/s);
  });

  test('documents that are neither open nor part of an app get no answer', async () => {
    const { features } = await setUp();
    const uri = pathToFileURL(path.join(FOLDER, 'elsewhere.json')).href;
    assert.equal(features.completion({ textDocument: { uri }, position: { line: 0, character: 0 } }), null);
  });
});
