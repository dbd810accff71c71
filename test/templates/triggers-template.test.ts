// The triggers template: its DATABASE trigger on db.items INSERT runs the private system function
// updateCollectionView, which copies each new item into the view collection db.items_copy with date_created.
// The template has no client and no login; the test adds anonymous login and lets users insert items.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EJSON } from 'bson';
import { nodeFileWriter } from '../../core/fs';
import { backendFiles, writeFileMap } from '../../core/templates';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { bundledTemplates } from '../../runtime/templates';

describe('triggers template', () => {
  let runtime: RunningRuntime;
  let dir: string;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-triggers-'));
    const files = await backendFiles(bundledTemplates(), 'triggers', { name: 'Trig', appId: 'trig-abcde' });
    const providers = JSON.parse(files.get('auth/providers.json')!);
    files.set('auth/providers.json', JSON.stringify({ ...providers, 'anon-user': { name: 'anon-user', type: 'anon-user', disabled: false } }));
    const itemsRules = JSON.parse(files.get('data_sources/mongodb-atlas/db/items/rules.json')!);
    itemsRules.roles = [{ ...itemsRules.roles[0], document_filters: { read: true, write: true }, write: true, insert: true }];
    files.set('data_sources/mongodb-atlas/db/items/rules.json', JSON.stringify(itemsRules));
    await writeFileMap(nodeFileWriter, dir, files);
    runtime = await startRuntime({ appDir: dir, port: 0, log: { info() {}, warn() {}, error() {} } });
  });
  after(async () => { await runtime?.close(); fs.rmSync(dir, { recursive: true, force: true }); });

  test('an insert into db.items appears in db.items_copy with date_created', async () => {
    const api = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    const login = await (await fetch(`${api}/auth/providers/anon-user/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).json() as { access_token: string };
    const call = async (name: string, collection: string, args: Record<string, unknown>) => {
      const res = await fetch(`${api}/functions/call`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${login.access_token}` },
        body: EJSON.stringify({ name, service: 'mongodb-atlas', arguments: [{ database: 'db', collection, ...args }] }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      return EJSON.parse(await res.text());
    };
    await call('insertOne', 'items', { document: { name: 'first' } });
    const deadline = Date.now() + 10_000;
    let copies: Array<Record<string, unknown>> = [];
    while (copies.length === 0) {
      copies = await call('find', 'items_copy', { query: {} }) as Array<Record<string, unknown>>;
      if (copies.length === 0 && Date.now() > deadline) throw new Error('the trigger did not copy the item within 10 s');
      if (copies.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(copies.length, 1);
    assert.equal(copies[0]!.name, 'first');
    assert.ok(copies[0]!.date_created instanceof Date);
  });
});
