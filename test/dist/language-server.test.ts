// The shipped language server (`node dist/server.js --stdio`) over the real LSP protocol: it answers
// initialize and publishes diagnostics for a broken file of an app.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { writeApp } from '../helpers/disk';
import { LspClient } from '../helpers/lsp';

describe('dist/server.js --stdio', () => {
  const client = new LspClient();
  after(() => client.close());

  test('answers initialize and publishes diagnostics for a broken file', async () => {
    const appDir = writeApp({
      'realm_config.json': { config_version: 20210101, app_id: 'dist-abcde', name: 'dist' },
      'functions/config.json': '[{ "name": "missing", "private": false, }',
    });
    const initialized = await client.initialize(appDir);
    assert.ok(initialized.capabilities.textDocumentSync, 'the server declares how it syncs documents');
    assert.ok(initialized.capabilities.completionProvider, 'and its completion');
    const file = path.join(appDir, 'functions/config.json');
    const published = await client.diagnosticsFor(file, (p) => p.diagnostics.some((d) => d.severity === 1));
    const error = published.diagnostics.find((d) => d.severity === 1)!;
    assert.equal(error.source, 'asl');
  });
});
