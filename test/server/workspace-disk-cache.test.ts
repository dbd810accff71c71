// The language server's workspace with disk reads cached (as when the client reports watched-file
// changes): files created, changed and deleted on disk reach the model once reported, and a folder's
// listing, kept between reloads, is never mixed up between two apps that both see it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { loadApp } from '../../core/load';
import { CachingFileSystem, nodeFileSystem } from '../../core/fs';
import { AppWorkspace } from '../../server/workspace';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';

const collectionsOf = (workspace: AppWorkspace, root: string): string[] =>
  workspace.appOf(path.join(root, 'root_config.json'))!.model.dataSources.flatMap((d) => d.collections.map((c) => `${c.database}.${c.collection}`));

describe('workspace over a cached disk', () => {
  const roots: string[] = [];
  after(() => { for (const root of roots) fs.rmSync(root, { recursive: true, force: true }); });

  test('a collection folder created and later deleted on disk appears and disappears once reported', async () => {
    const root = writeApp(baseApp());
    roots.push(root);
    const workspace = new AppWorkspace(nodeFileSystem, { cacheDisk: true });
    await workspace.setFolders([root]);
    const before = collectionsOf(workspace, root);
    assert.ok(before.includes('todo.Task'), before.join());

    const folder = path.join(root, 'data_sources/mongodb-atlas/todo/Note');
    fs.mkdirSync(folder, { recursive: true });
    const schema = path.join(folder, 'schema.json');
    fs.writeFileSync(schema, JSON.stringify({ title: 'Note', bsonType: 'object', properties: { _id: { bsonType: 'objectId' } } }));
    // Not reported yet: the cache still answers with the old listing.
    await workspace.reload(root);
    assert.deepEqual(collectionsOf(workspace, root), before);
    await workspace.fileChanged(folder, 'created');
    await workspace.fileChanged(schema, 'created');
    assert.deepEqual(collectionsOf(workspace, root).sort(), [...before, 'todo.Note'].sort());

    fs.writeFileSync(schema, '{"title": ');
    await workspace.fileChanged(schema, 'changed');
    const broken = workspace.appOf(schema)!.diagnostics.filter((d) => d.file === schema && d.code === 'json/syntax');
    assert.ok(broken.length > 0, 'the changed file was not read again');

    fs.rmSync(folder, { recursive: true });
    await workspace.fileChanged(folder, 'deleted');
    assert.deepEqual(collectionsOf(workspace, root), before);
  });

  test('a folder listed from two app roots keeps each app its own relative paths', async () => {
    const outer = writeApp(baseApp());
    roots.push(outer);
    const inner = path.join(outer, 'nested');
    fs.mkdirSync(inner);
    writeApp(baseApp(), inner);
    const disk = new CachingFileSystem(nodeFileSystem);
    const innerModel = await loadApp(disk, inner);
    const outerModel = await loadApp(disk, outer);
    const innerSchema = path.join(inner, 'data_sources/mongodb-atlas/todo/Task/schema.json');
    assert.equal(innerModel.files.get(innerSchema)?.relPath, 'data_sources/mongodb-atlas/todo/Task/schema.json');
    // Seen from the outer app, the same file sits under nested/ (and is none of the outer app's collections).
    const outerSchema = path.join(outer, 'data_sources/mongodb-atlas/todo/Task/schema.json');
    assert.equal(outerModel.files.get(outerSchema)?.relPath, 'data_sources/mongodb-atlas/todo/Task/schema.json');
    assert.equal(outerModel.files.get(innerSchema), undefined);
    const again = await loadApp(disk, inner);
    assert.equal(again.files.get(innerSchema)?.relPath, 'data_sources/mongodb-atlas/todo/Task/schema.json');
  });
});
