// Completion, hover and a quick fix from the bundled language server over the real LSP protocol.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { CodeAction, CompletionList, Diagnostic, Hover } from 'vscode-languageserver';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';
import { LspClient } from '../helpers/lsp';

describe('language features over stdio', () => {
  let client: LspClient;
  let root: string;
  const syncFile = () => path.join(root, 'sync/config.json');
  const resolverFile = () => path.join(root, 'graphql/custom_resolvers/mutation_renameTask.json');

  before(async () => {
    const files = baseApp();
    (files['graphql/custom_resolvers/mutation_renameTask.json'] as Record<string, unknown>).function_name = 'renameTaskFn';
    files['sync/config.json'] = { type: 'partition', state: 'enabled', service_name: 'mongodb-atlas', database_name: 'todo',
      partition: { key: '_partition', type: 'string', permissions: { read: { '%%user.id': '%%partition' }, write: true } } };
    for (const coll of ['Task', 'User']) (files[`data_sources/mongodb-atlas/todo/${coll}/schema.json`] as { properties: Record<string, unknown> }).properties._partition = { bsonType: 'string' };
    root = writeApp(files);
    client = new LspClient();
    await client.initialize(root);
    await client.diagnosticsFor(resolverFile(), (p) => p.diagnostics.some((d) => d.code === 'resolver/unknown-function'));
  });
  after(async () => { await client.close(); fs.rmSync(root, { recursive: true, force: true }); });

  test('completes members of %%user in an open, edited sync config', async () => {
    const uri = pathToFileURL(syncFile()).href;
    const text = fs.readFileSync(syncFile(), 'utf8').replace('"%%user.id"', '"%%user."');
    await client.connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'json', version: 1, text } });
    const offset = text.indexOf('%%user.') + '%%user.'.length;
    const lines = text.slice(0, offset).split('\n');
    const list = await client.connection.sendRequest<CompletionList>('textDocument/completion', {
      textDocument: { uri }, position: { line: lines.length - 1, character: lines[lines.length - 1].length },
    });
    assert.deepEqual(list.items.map((i) => i.label).sort(), ['%%user.custom_data', '%%user.data', '%%user.id', '%%user.identities', '%%user.type']);
  });

  test('hovering on_type shows the SDL of the field the resolver adds', async () => {
    const text = fs.readFileSync(resolverFile(), 'utf8');
    const line = text.split('\n').findIndex((l) => l.includes('"field_name"'));
    const result = await client.connection.sendRequest<Hover>('textDocument/hover', {
      textDocument: { uri: pathToFileURL(resolverFile()).href }, position: { line, character: text.split('\n')[line].indexOf('renameTask') + 2 },
    });
    assert.match((result.contents as { value: string }).value, /extend type Mutation \{\n {2}renameTask\(input: RenameTaskInput\): Task\n\}/);
  });

  test('offers to create the missing resolver function', async () => {
    const published = await client.diagnosticsFor(resolverFile(), (p) => p.diagnostics.some((d) => d.code === 'resolver/unknown-function'));
    const diagnostic = published.diagnostics.find((d) => d.code === 'resolver/unknown-function') as Diagnostic;
    const actions = await client.connection.sendRequest<CodeAction[]>('textDocument/codeAction', {
      textDocument: { uri: pathToFileURL(resolverFile()).href }, range: diagnostic.range, context: { diagnostics: [diagnostic] },
    });
    const create = actions.find((a) => a.title === 'Create functions/renameTaskFn.js')!;
    assert.ok(create, JSON.stringify(actions));
    const changes = create.edit!.documentChanges as Array<{ kind?: string; uri?: string; edits?: { newText: string }[] }>;
    assert.equal(changes[0].kind, 'create');
    assert.equal(changes[0].uri, pathToFileURL(path.join(root, 'functions/renameTaskFn.js')).href);
    assert.match(changes[1].edits![0].newText, /exports = async function \(input, source\)/);
  });
});
