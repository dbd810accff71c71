// The bundled language server over the real LSP protocol on stdio.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';
import { LspClient } from '../helpers/lsp';

describe('language server over stdio', () => {
  let client: LspClient;
  let root: string;
  const resolverFile = () => path.join(root, 'graphql/custom_resolvers/mutation_renameTask.json');

  before(async () => {
    const files = baseApp();
    (files['graphql/custom_resolvers/mutation_renameTask.json'] as Record<string, unknown>).function_name = 'renameTaskk';
    root = writeApp(files);
    client = new LspClient();
    await client.initialize(root);
  });
  after(async () => { await client.close(); fs.rmSync(root, { recursive: true, force: true }); });

  test('publishes diagnostics for an unopened broken file after initialize', async () => {
    const published = await client.diagnosticsFor(resolverFile(), (p) => p.diagnostics.length > 0);
    const d = published.diagnostics.find((x) => x.code === 'resolver/unknown-function');
    assert.ok(d, JSON.stringify(published.diagnostics));
    assert.equal(d.source, 'asl');
    assert.equal(d.severity, 1);
    assert.deepEqual(d.range.start, { line: 3, character: 19 });
    assert.match(d.message, /renameTaskk/);
  });

  test('revalidates an open document as it is edited', async () => {
    const uri = pathToFileURL(resolverFile()).href;
    const text = fs.readFileSync(resolverFile(), 'utf8');
    await client.connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'json', version: 1, text } });
    await client.connection.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 2 }, contentChanges: [{ text: text.replace('renameTaskk', 'renameTask') }],
    });
    const fixed = await client.diagnosticsFor(resolverFile(), (p) => !p.diagnostics.some((d) => d.code === 'resolver/unknown-function'));
    assert.deepEqual(fixed.diagnostics.filter((d) => d.severity === 1), []);
  });

  test('a change on disk to another file reaches the diagnostics of the app', async () => {
    const fnFile = path.join(root, 'functions/config.json');
    fs.writeFileSync(fnFile, '[{"name": "resetFunc"}, {"name": "resetFunc"}, {"name": "renameTask"}]');
    await client.connection.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(fnFile).href, type: 2 }] });
    const published = await client.diagnosticsFor(fnFile, (p) => p.diagnostics.some((d) => d.code === 'function/duplicate-name'));
    assert.equal(published.diagnostics.find((d) => d.code === 'function/duplicate-name')!.range.start.line, 0);
  });
});
