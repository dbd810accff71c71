// Flexible sync and the rules as they change (issue 33 items 2 and 4, issue 32 item 2), with realm-core's own
// client (`realm-sync-probe --flexible`) against `node dist/cli.js serve`. A teammate role lets bob read
// ada's items without their `secret` and without the `hidden` field of their embedded `sub`: what bob's
// client stores never holds either, in steady state, after a restart of the runtime (when the written
// documents of the history are no longer in memory), and after more changes than the runtime keeps them
// for. Edited rules reach connected clients: objects leave and arrive without a client reset.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeAvailable, registerUser, runProbe, startProbe, type ProbeRun } from '../helpers/realm-probe';
import { copyApp, serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

const SCHEMA = [
  { name: 'Item', primaryKey: '_id', properties: { _id: 'objectId', owner_id: 'string', name: 'string', secret: 'string?', sub: 'Sub?' } },
  { name: 'Sub', embedded: true, properties: { visible: 'string?', hidden: 'string?' } },
];
const ITEM = { $oid: '65c000000000000000000001' };
const RULES_FILE = 'data_sources/mongodb-atlas/rulesdb/Item/rules.json';

const TEAMMATE = {
  name: 'teammate', apply_when: { '%%user.data.email': 'bob@example.com' },
  document_filters: { read: true, write: false }, read: false, write: false, insert: false, delete: false, search: true,
  fields: { owner_id: { read: true }, name: { read: true }, sub: { fields: { visible: { read: true } } } },
};
const OWNER = {
  name: 'owner', apply_when: {},
  document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } },
  read: true, write: true, insert: true, delete: true, search: true,
};

function rules(roles: unknown[]): unknown {
  return { collection: 'Item', database: 'rulesdb', roles };
}

function rulesApp(): string {
  const appDir = copyApp();
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(appDir, file)), { recursive: true });
    fs.writeFileSync(path.join(appDir, file), JSON.stringify(value, null, 2));
  };
  write('sync/config.json', {
    type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'rulesdb',
    is_recovery_mode_disabled: false, queryable_fields_names: ['owner_id'],
  });
  write('data_sources/mongodb-atlas/rulesdb/Item/schema.json', {
    title: 'Item', bsonType: 'object', required: ['_id', 'owner_id', 'name'],
    properties: {
      _id: { bsonType: 'objectId' }, owner_id: { bsonType: 'string' }, name: { bsonType: 'string' }, secret: { bsonType: 'string' },
      sub: { bsonType: 'object', title: 'Sub', properties: { visible: { bsonType: 'string' }, hidden: { bsonType: 'string' } } },
    },
  });
  write(RULES_FILE, rules([TEAMMATE, OWNER]));
  return appDir;
}

function assertOk(run: ProbeRun, what: string): void {
  assert.equal(run.result.exitCode, 0, `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed|subscription_state|protocol/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);
}

/** Every string in bob's client that came from a value he may not read. */
function leaked(run: ProbeRun): string[] {
  const text = JSON.stringify(run.lines);
  return [...text.matchAll(/(?:secret|hidden)-[a-z0-9]+/g)].map((m) => m[0]);
}

describe('flexible sync with field rules and changing rules against dist/cli.js serve', { skip, timeout: 300_000 }, () => {
  let served: ServedDist;
  let appDir: string;
  let dataDir: string;
  let adaId: string;
  let bobId: string;
  const bobDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bob-'));
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  const bob = { type: 'emailPassword', email: 'bob@example.com', password: 'bob-Passw0rd' };
  const script = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, flexible: true, schema: SCHEMA, timeoutMs: 15000, ...extra });
  const asAda = (steps: unknown[]) => runProbe(script({ credentials: ada, subscriptions: [`Item=owner_id == "${adaId}"`], steps }));
  const update = (value: Record<string, unknown>) => ({ write: { op: 'update', type: 'Item', id: ITEM, value } });

  before(async () => {
    appDir = rulesApp();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-rules-data-'));
    served = await serveDist({ appDir, dataDir });
    adaId = await registerUser(served.app, ada.email, ada.password);
    bobId = await registerUser(served.app, bob.email, bob.password);
    assertOk(await asAda([
      { write: { op: 'create', type: 'Item', value: { _id: ITEM, owner_id: adaId, name: 'one', secret: 'secret-a0', sub: { visible: 'visible-0', hidden: 'hidden-a0' } } } },
      { waitUpload: true },
    ]), 'ada creates her item');
  });
  after(async () => {
    await served?.close();
    for (const dir of [appDir, dataDir, bobDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a reader syncing while the owner changes hidden fields stores none of them, nested or not', async () => {
    const watcher = startProbe(script({ credentials: bob, dataDir: bobDir, subscriptions: ['Item=TRUEPREDICATE'], steps: [{ waitDownload: true }, { watchMs: 5000 }, { dump: true }] }));
    await watcher.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    assertOk(await asAda([{ waitDownload: true }, update({ secret: 'secret-a1', sub: { visible: 'visible-1', hidden: 'hidden-a1' } }), { waitUpload: true }]), 'ada replaces sub');
    assertOk(await asAda([{ waitDownload: true }, update({ secret: 'secret-a2' }), { waitUpload: true }]), 'ada changes the secret');
    await watcher.waitFor((l) => l.event === 'change' && (l.value as { sub?: { visible?: string } } | undefined)?.sub?.visible === 'visible-1', 8000);
    const run = await watcher.done;
    assertOk(run, 'bob watches');
    const [item] = run.objects('Item');
    assert.equal((item as { sub: { visible: string } }).sub.visible, 'visible-1', 'readable nested changes arrive');
    assert.deepEqual(leaked(run), [], 'hidden values reached the reader\'s client');
  });

  test('after a restart of the runtime, a resuming reader gets the changes it missed without their hidden fields', async () => {
    assertOk(await asAda([{ waitDownload: true }, update({ secret: 'secret-b1', name: 'renamed' }), { waitUpload: true }]), 'ada writes while bob is away');
    assertOk(await asAda([{ waitDownload: true }, update({ sub: { visible: 'visible-2', hidden: 'hidden-b1' } }), { waitUpload: true }]), 'ada writes again');
    await served.close();
    served = await serveDist({ appDir, dataDir });
    const run = await runProbe(script({ credentials: bob, dataDir: bobDir, subscriptions: ['Item=TRUEPREDICATE'], steps: [{ waitDownload: true }, { dump: true }] }));
    assertOk(run, 'bob resumes');
    const [item] = run.objects('Item') as { name: string; sub: { visible: string } }[];
    assert.equal(item!.name, 'renamed');
    assert.equal(item!.sub.visible, 'visible-2');
    assert.deepEqual(leaked(run), [], 'hidden values reached the reader\'s client');
    assert.equal(run.events('protocol_error').length, 0, JSON.stringify(run.events('protocol_error')));
  });

  test('a reader resuming after more changes than the runtime keeps documents for gets none of their hidden values', async () => {
    const writes = Array.from({ length: 1100 }, (_, i) => update(i % 2 ? { secret: `secret-c${i}` } : { sub: { visible: `visible-c${i}`, hidden: `hidden-c${i}` } }));
    // One write per changeset: each its own history entry.
    const steps = writes.flatMap((w) => [w]);
    assertOk(await asAda([{ waitDownload: true }, ...steps, { waitUpload: true }]), 'ada writes 1,100 times');
    const run = await runProbe(script({ credentials: bob, dataDir: bobDir, subscriptions: ['Item=TRUEPREDICATE'], steps: [{ waitDownload: true }, { dump: true }] }));
    assertOk(run, 'bob resumes');
    const [item] = run.objects('Item') as { sub: { visible: string } }[];
    assert.equal(item!.sub.visible, 'visible-c1098');
    assert.deepEqual(leaked(run), [], 'hidden values reached the reader\'s client');
  });

  test('an edited rules.json reaches a connected client: the objects it may no longer read leave, and come back, with no client reset', async () => {
    const watcher = startProbe(script({
      credentials: bob, dataDir: bobDir, subscriptions: ['Item=TRUEPREDICATE'],
      steps: [{ waitDownload: true }, { expect: { type: 'Item', count: 1 } }, { expect: { type: 'Item', count: 0, withinMs: 10000 } }, { expect: { type: 'Item', count: 1, withinMs: 10000 } }, { dump: true }],
    }));
    await watcher.waitFor((l) => l.event === 'expect' && l.pass === true);
    fs.writeFileSync(path.join(appDir, RULES_FILE), JSON.stringify(rules([OWNER]), null, 2));
    await watcher.waitFor((l) => l.event === 'expect' && l.pass === true && (l as { expected?: number }).expected === 0, 12000).catch(() => undefined);
    fs.writeFileSync(path.join(appDir, RULES_FILE), JSON.stringify(rules([TEAMMATE, OWNER]), null, 2));
    const run = await watcher.done;
    assertOk(run, `bob stays connected (runtime log: ${served.stderr().slice(-1500)})`);
    assert.ok(run.events('expect').every((l) => l.pass === true), JSON.stringify(run.events('expect')));
    assert.equal(run.events('protocol_error').length, 0, 'no error, no client reset');
    assert.deepEqual(leaked(run), [], 'hidden values reached the reader\'s client');
    assert.match(served.stderr(), /the app's rules changed; rules evaluated again \(1 objects erased/);
  });

  test('a role whose apply_when reads the document is decided per session with no document: a reader cannot make herself the owner, then erase the item', async () => {
    const ownerByDocument = { name: 'ownerByDocument', apply_when: { owner_id: '%%user.id' }, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true };
    const reader = { name: 'reader', apply_when: {}, document_filters: { read: true, write: false }, read: true, write: false, insert: false, delete: false, search: true };
    fs.writeFileSync(path.join(appDir, RULES_FILE), JSON.stringify(rules([ownerByDocument, reader]), null, 2));
    try {
      // The reload is seen once a reader's bootstrap holds the whole item (the reader role reads every field).
      const deadline = Date.now() + 10_000;
      for (;;) {
        const peek = await runProbe(script({ credentials: bob, subscriptions: ['Item=TRUEPREDICATE'], steps: [{ waitDownload: true }, { dump: true }] }));
        if (peek.objects('Item').some((i) => typeof i.secret === 'string') || Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const run = await runProbe(script({
        credentials: bob, subscriptions: ['Item=TRUEPREDICATE'], cancelWaitsOnError: true,
        steps: [
          { waitDownload: true },
          { write: { op: 'update', type: 'Item', id: ITEM, value: { owner_id: bobId } } },
          { write: { op: 'delete', type: 'Item', id: ITEM } },
          { waitUpload: true },
          { expect: { type: 'Item', count: 1, withinMs: 5000 } },
          { sleepMs: 1000 },
          { dump: true },
        ],
      }));
      const writes = run.events('sync_error').flatMap((e) => (e.compensatingWrites ?? []) as { objectName: string }[]);
      assert.ok(writes.length > 0 && writes.every((w) => w.objectName === 'Item'), JSON.stringify(run.lines.slice(-8)));
      const stored = await runProbe(script({ credentials: ada, subscriptions: [`Item=owner_id == "${adaId}"`], steps: [{ waitDownload: true }, { dump: true }] }));
      assert.deepEqual(stored.objects('Item').map((i) => i.owner_id), [adaId], 'the item is still there, still ada\'s');
    } finally {
      fs.writeFileSync(path.join(appDir, RULES_FILE), JSON.stringify(rules([TEAMMATE, OWNER]), null, 2));
    }
  });
  test('a client that opens after a rules change gets what the new rules select, never a bootstrap shared under the old rules', async () => {
    const query = `Item=owner_id != "nobody"`;
    const count = async () => (await runProbe(script({ credentials: bob, subscriptions: [query], steps: [{ waitDownload: true }, { dump: true }] }))).objects('Item').length;
    // The teammate role in force again (the last test put it back): a fresh client gets ada's item, and its
    // bootstrap is the one later fresh clients with the same query and user would share.
    const deadline = Date.now() + 10_000;
    while ((await count()) !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await count(), 1, 'bob reads ada\'s item under the teammate role');
    const watcher = startProbe(script({
      credentials: bob, subscriptions: [query],
      steps: [{ waitDownload: true }, { expect: { type: 'Item', count: 1 } }, { expect: { type: 'Item', count: 0, withinMs: 10000 } }],
    }));
    await watcher.waitFor((l) => l.event === 'expect' && l.pass === true);
    fs.writeFileSync(path.join(appDir, RULES_FILE), JSON.stringify(rules([OWNER]), null, 2));
    try {
      const watched = await watcher.done;
      assertOk(watched, 'the connected client sees the item leave');
      assert.equal(await count(), 0, 'a client opening under the owner-only rules got the bootstrap shared under the teammate role');
    } finally {
      fs.writeFileSync(path.join(appDir, RULES_FILE), JSON.stringify(rules([TEAMMATE, OWNER]), null, 2));
    }
  });
});
