// Realm Query Language strings in JS/TS code (`.filtered("…")`) get syntax diagnostics from the language
// server over stdio, at the column of the error inside the string, and lose them when fixed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../helpers/disk';
import { LspClient } from '../helpers/lsp';

const EXAMPLE = path.join(REPO_ROOT, 'examples/todo-tracker');

describe('RQL in JS/TS over stdio', () => {
  let root: string;
  let client: LspClient;
  let version = 1;
  const file = () => path.join(root, 'client/subscriptions.ts');

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-rql-'));
    fs.cpSync(EXAMPLE, root, { recursive: true });
    fs.mkdirSync(path.join(root, 'client'), { recursive: true });
    client = new LspClient();
    await client.initialize(root);
  });
  after(async () => { await client.close(); fs.rmSync(root, { recursive: true, force: true }); });

  test('a subscription query with a syntax error is reported at its column; the fixed query clears it', async () => {
    const text = [
      'realm.subscriptions.update((mutableSubs) => {',
      '  mutableSubs.add(realm.objects("Task").filtered("owner_id == $0 AND isComplete = = false", user.id));',
      "  mutableSubs.add(realm.objects('Task').filtered('summary BEGINSWITH[c] \"a\"'));",
      '});',
      '',
    ].join('\n');
    const uri = pathToFileURL(file()).href;
    await client.connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'typescript', version, text } });
    const published = await client.diagnosticsFor(file(), (p) => p.diagnostics.some((d) => d.code === 'rql/syntax'));
    const rql = published.diagnostics.filter((d) => d.code === 'rql/syntax');
    assert.equal(rql.length, 1);
    assert.match(rql[0]!.message, /^Realm Query Language: expected a property, a value or an argument, found '='/);
    const line = text.split('\n')[1]!;
    const column = line.indexOf('= = false') + 2;
    assert.deepEqual(rql[0]!.range, { start: { line: 1, character: column }, end: { line: 1, character: column + 1 } });
    await client.connection.sendNotification('textDocument/didChange', { textDocument: { uri, version: ++version }, contentChanges: [{ text: text.replace('= = false', '== false') }] });
    await client.diagnosticsFor(file(), (p) => !p.diagnostics.some((d) => d.code === 'rql/syntax'));
  });
});
