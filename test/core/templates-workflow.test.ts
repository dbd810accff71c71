// The palette's steps without an editor: quick pick items, the non-empty folder refusal, creation and download.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { nodeFileSystem, nodeFileWriter } from '../../core/fs';
import { createFromTemplate, downloadClient, downloadPicks, targetFolderProblem, templatePicks, TemplateError } from '../../core/templates';
import { bundledTemplates } from '../../runtime/templates';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'asl-workflow-'));

describe('template workflow', () => {
  test('the quick pick lists the 13 templates with their client language; download offers those with a downloadable client', () => {
    const picks = templatePicks();
    assert.equal(picks.length, 13);
    assert.deepEqual(picks.find((p) => p.templateId === 'kotlin.todo.flex'), {
      label: 'Kotlin Todo App', description: 'Kotlin (Android)', detail: 'kotlin.todo.flex — Android to-do app (Jetpack Compose) syncing with flexible sync.', templateId: 'kotlin.todo.flex',
    });
    assert.equal(picks.find((p) => p.templateId === 'triggers')!.description, 'backend only');
    const downloadable = downloadPicks().map((p) => p.templateId);
    assert.equal(downloadable.length, 10);
    assert.ok(!downloadable.includes('cpp.todo.flex') && !downloadable.includes('sync.todo'));
  });

  test('a non-empty folder is refused, naming it and what it holds; a new or empty one is fine', async () => {
    const dir = tmp();
    assert.equal(await targetFolderProblem(nodeFileSystem, path.join(dir, 'new')), undefined);
    assert.equal(await targetFolderProblem(nodeFileSystem, dir), undefined);
    for (const f of ['a.txt', 'b.txt', 'c.txt', 'd.txt']) fs.writeFileSync(path.join(dir, f), '');
    assert.equal(await targetFolderProblem(nodeFileSystem, dir), `The folder ${dir} is not empty (it holds a.txt, b.txt, c.txt, and 1 more); pick an empty or new folder`);
    assert.match((await targetFolderProblem(nodeFileSystem, path.join(dir, 'a.txt')))!, /is a file/);
  });

  test('creates <folder>/<name> with backend/ and frontend/<id>/, the app id filled in, and opens the client README', async () => {
    const parent = tmp();
    const created = await createFromTemplate(bundledTemplates(), nodeFileSystem, nodeFileWriter, { templateId: 'react-native.todo.flex', name: 'Mobile', parentDir: parent, random: () => 0.5 });
    assert.equal(created.appId, 'mobile-nnnnn');
    assert.equal(created.appDir, path.join(parent, 'Mobile'));
    assert.equal(created.openFile, path.join(parent, 'Mobile', 'frontend', 'react-native.todo.flex', 'README.md'));
    assert.equal(JSON.parse(fs.readFileSync(path.join(created.backendDir, 'realm_config.json'), 'utf8')).app_id, 'mobile-nnnnn');
    assert.equal(JSON.parse(fs.readFileSync(path.join(created.appDir, 'frontend', 'react-native.todo.flex', 'atlasConfig.json'), 'utf8')).appId, 'mobile-nnnnn');

    await assert.rejects(createFromTemplate(bundledTemplates(), nodeFileSystem, nodeFileWriter, { templateId: 'sync.todo', name: 'Mobile', parentDir: parent }),
      (e) => e instanceof TemplateError && e.code === 'TargetNotEmpty' && e.message.includes(path.join(parent, 'Mobile')));
    await assert.rejects(createFromTemplate(bundledTemplates(), nodeFileSystem, nodeFileWriter, { templateId: 'sync.todo', name: 'no spaces', parentDir: parent }),
      (e) => e instanceof TemplateError && e.code === 'InvalidName');

    const backendOnly = await createFromTemplate(bundledTemplates(), nodeFileSystem, nodeFileWriter, { templateId: 'triggers', name: 'Trig', parentDir: parent });
    assert.equal(backendOnly.openFile, path.join(parent, 'Trig', 'backend', 'realm_config.json'));
    assert.equal(fs.existsSync(path.join(parent, 'Trig', 'frontend')), false);
  });

  test('download writes <folder>/<id> with the app id blank', async () => {
    const parent = tmp();
    const { dir, readme } = await downloadClient(bundledTemplates(), nodeFileSystem, nodeFileWriter, { templateId: 'swiftui.todo.flex', parentDir: parent });
    assert.equal(dir, path.join(parent, 'swiftui.todo.flex'));
    assert.ok(fs.existsSync(readme));
    assert.match(fs.readFileSync(path.join(dir, 'App', 'atlasConfig.plist'), 'utf8'), /<key>appId<\/key>\n\t<string><\/string>/);
    await assert.rejects(downloadClient(bundledTemplates(), nodeFileSystem, nodeFileWriter, { templateId: 'cpp.todo.flex', parentDir: parent }), /cannot be downloaded/);
    await assert.rejects(downloadClient(bundledTemplates(), nodeFileSystem, nodeFileWriter, { templateId: 'triggers', parentDir: parent }), /has no client code/);
  });
});
