// The sync.todo template's backend, as `apps create --template sync.todo` writes it, served by dist/cli.js
// and synced by realm-core's client (the probe) playing the template's React Native client: its `Item`
// schema and its `my_items` subscription (`owner_id == $0` with the user's id). The backend's rules let
// everyone read every item and write only their own.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { nodeFileWriter } from '../../core/fs';
import { createAppFiles, writeFileMap } from '../../core/templates';
import { bundledTemplates } from '../../runtime/templates';
import { REPO_ROOT } from '../helpers/disk';
import { probeAvailable, registerUser, runProbe, type ProbeRun } from '../helpers/realm-probe';
import { serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

/** The client's object type, read from the template's own schema file so the test follows the client. */
function clientSchema(): unknown[] {
  const source = fs.readFileSync(path.join(REPO_ROOT, 'templates/react-native.todo.flex/app/ItemSchema.tsx'), 'utf8');
  const properties: Record<string, string> = {};
  for (const m of source.slice(source.indexOf('properties: {')).matchAll(/^\s+(\w+): (?:'(\w+)'|\{ type: '(\w+)')/gm)) properties[m[1]!] = m[2] ?? m[3]!;
  assert.deepEqual(Object.keys(properties).sort(), ['_id', 'isComplete', 'owner_id', 'summary'], source);
  return [{ name: 'Item', primaryKey: '_id', properties }];
}

/** The client's subscription, with the user id bound as the SDK binds `$0`. */
function mySubscription(userId: string): { name: string; type: string; query: string } {
  const source = fs.readFileSync(path.join(REPO_ROOT, 'templates/react-native.todo.flex/app/ItemListView.tsx'), 'utf8');
  const m = /filtered\('([^']+)', user\.id\), \{ name: '(\w+)' \}/.exec(source);
  assert.ok(m, 'the client subscribes with filtered(…, user.id)');
  return { name: m[2]!, type: 'Item', query: m[1]!.replace('$0', JSON.stringify(userId)) };
}

function assertOk(run: ProbeRun, what: string): void {
  assert.equal(run.result.exitCode, 0, `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed|subscription_state/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);
}

describe('the sync.todo template backend syncs with its client', { skip, timeout: 180_000 }, () => {
  let served: ServedDist;
  let root: string;
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  const bob = { type: 'emailPassword', email: 'bob@example.com', password: 'bob-Passw0rd' };

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-sync-todo-'));
    const { files } = await createAppFiles(bundledTemplates(), 'sync.todo', { name: 'SyncTodo', appId: 'synctodo-abcde', baseUrl: 'http://localhost:8123' });
    await writeFileMap(nodeFileWriter, root, files);
    served = await serveDist({ appDir: path.join(root, 'backend') });
  });
  after(async () => {
    await served?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  test('each user syncs her own items; another user\'s write to them is reverted', async () => {
    const adaId = await registerUser(served.app, ada.email, ada.password);
    const bobId = await registerUser(served.app, bob.email, bob.password);
    const script = (credentials: Record<string, unknown>, userId: string, steps: unknown[]) => ({
      baseUrl: served.url, appId: served.appId, flexible: true, schema: clientSchema(), timeoutMs: 10000,
      credentials, subscriptions: [mySubscription(userId)], steps,
    });
    const item = { $oid: '65c000000000000000000001' };
    const adaRun = await runProbe(script(ada, adaId, [
      { write: { op: 'create', type: 'Item', value: { _id: item, summary: 'buy milk', isComplete: false, owner_id: adaId } } },
      { write: { op: 'update', type: 'Item', id: item, value: { isComplete: true } } },
      { waitUpload: true },
    ]));
    assertOk(adaRun, 'ada');
    const again = await runProbe(script(ada, adaId, [{ waitDownload: true }]));
    assertOk(again, 'ada on a second device');
    assert.deepEqual(again.objects('Item'), [{ _id: item, summary: 'buy milk', isComplete: true, owner_id: adaId }]);
    const bobOwn = await runProbe(script(bob, bobId, [{ waitDownload: true }]));
    assertOk(bobOwn, 'bob');
    assert.deepEqual(bobOwn.objects('Item'), [], 'my_items holds only the user\'s items');
    const bobAll = await runProbe({
      ...script(bob, bobId, [
        { subscribe: [{ name: 'all', type: 'Item', query: 'TRUEPREDICATE' }] },
        { write: { op: 'update', type: 'Item', id: item, value: { summary: 'bob was here' } } },
        { waitUpload: true },
        { expect: { type: 'Item', count: 1, query: 'summary == "buy milk"', withinMs: 5000 } },
        // The SDK reports the compensating write to its error handler after the revert has been applied:
        // under load that can come after the expectation above, so the client stays a moment longer.
        { sleepMs: 1000 },
      ]),
      cancelWaitsOnError: true,
    });
    const compensating = bobAll.events('sync_error').find((l) => Array.isArray(l.compensatingWrites));
    assert.ok(compensating, JSON.stringify(bobAll.lines.slice(-12)));
    assert.ok(bobAll.events('expect').every((l) => l.pass === true), JSON.stringify(bobAll.events('expect')));
    const check = await runProbe(script(ada, adaId, [{ waitDownload: true }]));
    assert.deepEqual(check.objects('Item').map((i) => i.summary), ['buy milk']);
  });
});
