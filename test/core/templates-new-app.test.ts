// Apps from templates (core/templates/newApp.ts) over the real `templates/` folder and over an in-memory one.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { memoryFileSystem, nodeFileSystem } from '../../core/fs';
import {
  TEMPLATES, backendFiles, clientFiles, createAppFiles, findTemplate, localMetadataValues, metadataFilePath,
  newClientAppId, validateAppName, TemplateError, type TemplateSource,
} from '../../core/templates';
import { REPO_ROOT } from '../helpers/disk';

const bundled: TemplateSource = { fs: nodeFileSystem, root: path.join(REPO_ROOT, 'templates') };

describe('template catalogue', () => {
  test('has the 13 ids of the platform, each with a name, a description and a backend', () => {
    assert.deepEqual(TEMPLATES.map((t) => t.id).sort(), [
      'cpp.todo.flex', 'flex-sync-guides.add-collaborators', 'flex-sync-guides.restricted-feed', 'flex-sync-guides.tiered',
      'flutter.todo.flex', 'kotlin.todo.flex', 'maui.todo.flex', 'react-native.todo.flex', 'swiftui.todo.flex', 'sync.todo',
      'triggers', 'web.data-api.todo', 'web.mql.todo',
    ]);
    for (const t of TEMPLATES) {
      assert.ok(t.name && t.description && t.backend, t.id);
      assert.equal(t.client === undefined, t.clientLanguage === undefined, t.id);
    }
  });

  test('metadata files sit where the platform writes them', () => {
    assert.equal(metadataFilePath(findTemplate('kotlin.todo.flex')!), 'app/src/main/res/values/atlasConfig.xml');
    assert.equal(metadataFilePath(findTemplate('swiftui.todo.flex')!), 'App/atlasConfig.plist');
    assert.equal(metadataFilePath(findTemplate('flex-sync-guides.tiered')!), 'src/realm.json');
    assert.equal(metadataFilePath(findTemplate('cpp.todo.flex')!), 'atlasConfig.json');
    assert.equal(metadataFilePath(findTemplate('sync.todo')!), undefined);
    assert.equal(findTemplate('__proto__'), undefined);
    assert.equal(findTemplate('cpp.todo.flex')!.client!.downloadable, false);
  });
});

describe('app names and ids', () => {
  test('names: ASCII letters, digits, _ and -, starting with a letter', () => {
    for (const ok of ['MyApp', 'a', 'todo_app-2']) assert.equal(validateAppName(ok), undefined, ok);
    assert.match(validateAppName('')!, /empty/);
    assert.match(validateAppName('1app')!, /start with a letter/);
    assert.match(validateAppName('my app')!, /only contain/);
    assert.match(validateAppName('café')!, /only contain/);
    assert.match(validateAppName('a'.repeat(65))!, /at most 64/);
  });

  test('new ids are the lower-cased name and five lowercase letters', () => {
    assert.match(newClientAppId('MyApp'), /^myapp-[a-z]{5}$/);
    assert.equal(newClientAppId('X', () => 0.999999), 'x-zzzzz');
    assert.equal(newClientAppId('X', () => 0), 'x-aaaaa');
  });
});

describe('backends', () => {
  test('a template backend gets the new name, app id and cluster', async () => {
    const files = await backendFiles(bundled, 'sync.todo', { name: 'MyTodo', appId: 'mytodo-abcde', clusterName: 'Dev' });
    const root = JSON.parse(files.get('realm_config.json')!);
    assert.equal(root.app_id, 'mytodo-abcde');
    assert.equal(root.name, 'MyTodo');
    assert.equal(root.config_version, 20210101);
    const ds = JSON.parse(files.get('data_sources/mongodb-atlas/config.json')!);
    assert.equal(ds.name, 'mongodb-atlas');
    assert.equal(ds.config.clusterName, 'Dev');
    assert.ok(files.has('data_sources/mongodb-atlas/todo/Item/rules.json'));
  });

  test('a renamed data source moves its folder and the references to it', async () => {
    const root = '/t';
    const source: TemplateSource = {
      root,
      fs: memoryFileSystem({
        '/t/triggers/realm_config.json': '{"config_version": 20210101, "name": "x"}',
        '/t/triggers/data_sources/mongodb-atlas/config.json': '{"name": "mongodb-atlas", "type": "mongodb-atlas", "config": {"clusterName": "Cluster0"}}',
        '/t/triggers/data_sources/mongodb-atlas/db/items/rules.json': '{}',
        '/t/triggers/triggers/t.json': '{"config": {"service_name": "mongodb-atlas"}}',
        '/t/triggers/functions/f.js': 'exports = () => context.services.get("mongodb-atlas").db("db");',
      }),
    };
    const files = await backendFiles(source, 'triggers', { name: 'T', appId: 't-abcde', dataSourceName: 'cluster-x' });
    assert.deepEqual([...files.keys()].sort(), [
      'data_sources/cluster-x/config.json', 'data_sources/cluster-x/db/items/rules.json', 'functions/f.js', 'realm_config.json', 'triggers/t.json',
    ]);
    const ds = JSON.parse(files.get('data_sources/cluster-x/config.json')!);
    assert.equal(ds.name, 'cluster-x');
    assert.equal(ds.type, 'mongodb-atlas');
    assert.equal(JSON.parse(files.get('triggers/t.json')!).config.service_name, 'cluster-x');
    assert.match(files.get('functions/f.js')!, /services\.get\("cluster-x"\)/);
  });

  test('without a template: the minimal app with the cluster-source data source', async () => {
    const files = await backendFiles(bundled, undefined, { name: 'Blank', appId: 'blank-abcde' });
    assert.equal(JSON.parse(files.get('realm_config.json')!).app_id, 'blank-abcde');
    assert.equal(JSON.parse(files.get('data_sources/cluster-source/config.json')!).config.clusterName, 'Cluster0');
    assert.equal(JSON.parse(files.get('auth/providers.json')!)['api-key'].disabled, true);
    assert.equal(files.has('environments/production.json'), true);
  });

  test('refusals: unknown template, bad name', async () => {
    await assert.rejects(backendFiles(bundled, 'nope', { name: 'A', appId: 'a-abcde' }), (e) => e instanceof TemplateError && e.message === "template 'nope' not found");
    await assert.rejects(backendFiles(bundled, 'sync.todo', { name: '9', appId: 'a-abcde' }), (e) => e instanceof TemplateError && e.code === 'InvalidName');
    await assert.rejects(clientFiles(bundled, 'constructor', { kind: 'download' }), /template 'constructor' not found/);
  });
});

describe('clients', () => {
  test('backend-only templates have no client', async () => {
    assert.equal(await clientFiles(bundled, 'sync.todo', { kind: 'download' }), undefined);
    assert.equal(await clientFiles(bundled, 'triggers', { kind: 'cli', values: localMetadataValues('a-abcde', 'http://localhost:1') }), undefined);
  });

  test('the C++ client has no download form', async () => {
    await assert.rejects(clientFiles(bundled, 'cpp.todo.flex', { kind: 'download' }), (e) => e instanceof TemplateError && e.code === 'NotDownloadable');
  });

  test('createAppFiles lays out backend/ and frontend/<id>/ with the id filled in', async () => {
    const created = await createAppFiles(bundled, 'cpp.todo.flex', { name: 'Cpp', appId: 'cpp-abcde', baseUrl: 'http://localhost:9090/' });
    const config = JSON.parse(created.files.get('frontend/cpp.todo.flex/atlasConfig.json')!);
    assert.deepEqual(config, {
      appId: 'cpp-abcde', baseUrl: 'http://localhost:9090', appUrl: 'http://localhost:9090/', clientApiBaseUrl: 'http://localhost:9090',
      dataApiBaseUrl: 'http://localhost:9090', dataExplorerLink: 'http://localhost:9090/', dataSourceName: 'mongodb-atlas',
    });
    assert.equal(JSON.parse(created.files.get('backend/realm_config.json')!).app_id, 'cpp-abcde');
    assert.ok(created.files.has('frontend/cpp.todo.flex/README.md'));
  });
});
