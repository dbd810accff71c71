// The three flexible sync permission demos (`flex-sync-guides.restricted-feed`, `.tiered`,
// `.add-collaborators`): each backend created as `asl apps create --template <id>` writes it, served by
// dist/cli.js, and synced by realm-core's client (the probe) playing the demo's Node.js client. The
// client's object type and subscription are read from the created client code (`src/shared.js`: its
// `ItemSchema` and `subs.add(realm.objects('Item'))`); the users do what `src/index.js` has them do,
// calling the app's functions over the client API as the SDK does. The demos' rules must hold, in open
// realms too when a function changes the user's custom user data (`subscribeToUser`, `joinTeam`).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EJSON } from 'bson';
import { nodeFileWriter } from '../../core/fs';
import { createAppFiles, writeFileMap } from '../../core/templates';
import { bundledTemplates } from '../../runtime/templates';
import { probeAvailable, registerUser, runProbe, startProbe, type ProbeRun } from '../helpers/realm-probe';
import { serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';
const PASSWORD = 'demo-password';

interface Demo {
  served: ServedDist;
  root: string;
  /** The probe's schema: the client's `ItemSchema`. */
  schema: unknown[];
  /** The client's subscription as the probe takes it (`Type=RQL`). */
  subscription: string;
  close(): Promise<void>;
}

/** Creates the template's app as `asl apps create --template` does and serves its backend. */
async function createDemo(templateId: string, appId: string, editBackend?: (backendDir: string) => void): Promise<Demo> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-guides-'));
  const { files } = await createAppFiles(bundledTemplates(), templateId, { name: appId.split('-')[0]!, appId, baseUrl: 'http://localhost:8123' });
  await writeFileMap(nodeFileWriter, root, files);
  editBackend?.(path.join(root, 'backend'));
  const shared = fs.readFileSync(path.join(root, 'frontend', templateId, 'src/shared.js'), 'utf8');
  const served = await serveDist({ appDir: path.join(root, 'backend') });
  return {
    served, root, schema: [clientSchema(shared)], subscription: clientSubscription(shared),
    async close() {
      await served.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** `export const ItemSchema = { name, primaryKey, properties: { field: 'type', … } }` of the client code. */
function clientSchema(shared: string): { name: string; primaryKey: string; properties: Record<string, string> } {
  const m = /export const ItemSchema = \{\s*name: '(\w+)',\s*primaryKey: '(\w+)',\s*properties: \{([^}]*)\}/.exec(shared);
  assert.ok(m, 'the client code declares ItemSchema');
  const properties: Record<string, string> = {};
  for (const p of m[3]!.matchAll(/(\w+): '([^']+)'/g)) properties[p[1]!] = p[2]!;
  assert.ok(Object.keys(properties).length > 2, m[3]);
  return { name: m[1]!, primaryKey: m[2]!, properties };
}

/** `subs.add(realm.objects('Item')[.filtered('…')])` of the client code, as `Type=RQL`. */
function clientSubscription(shared: string): string {
  const m = /subs\.add\(realm\.objects\('(\w+)'\)(?:\.filtered\('([^']+)'\))?\)/.exec(shared);
  assert.ok(m, 'the client code subscribes with subs.add(realm.objects(…))');
  return `${m[1]}=${m[2] ?? 'TRUEPREDICATE'}`;
}

/** A demo user over the client API: registered and logged in, as `logIn` in the client's shared.js. */
class ClientUser {
  id = '';
  private accessToken = '';
  private refreshToken = '';
  constructor(private readonly demo: Demo, readonly email: string) {}

  get credentials() {
    return { type: 'emailPassword', email: this.email, password: PASSWORD };
  }

  async logIn(): Promise<this> {
    this.id = await registerUser(this.demo.served.app, this.email, PASSWORD);
    const res = await fetch(`${this.demo.served.app}/auth/providers/local-userpass/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: this.email, password: PASSWORD }),
    });
    const body = await res.json() as { access_token: string; refresh_token: string };
    this.accessToken = body.access_token;
    this.refreshToken = body.refresh_token;
    return this;
  }

  /** `user.functions.<name>(…args)` (a MongoDB service action with `service`). */
  async call(name: string, args: unknown[], service?: string): Promise<unknown> {
    const res = await fetch(`${this.demo.served.app}/functions/call`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${this.accessToken}` },
      body: EJSON.stringify({ name, arguments: args, ...(service ? { service } : {}) }, { relaxed: false }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, `${name}: ${text}`);
    return EJSON.parse(text, { relaxed: true });
  }

  /** `user.mongoClient('mongodb-atlas').db(database).collection('Item').<action>(…)`: the demo without --sync. */
  items(database: string, action: string, args: Record<string, unknown> = {}): Promise<unknown> {
    return this.call(action, [{ database, collection: 'Item', ...args }], 'mongodb-atlas');
  }

  /** `user.refreshCustomData()`: a new access token, whose `user_data` is the custom user data now. */
  async refreshCustomData(): Promise<Record<string, unknown> | undefined> {
    const res = await fetch(`${this.demo.served.url}/api/client/v2.0/auth/session`, { method: 'POST', headers: { authorization: `Bearer ${this.refreshToken}` } });
    assert.equal(res.status, 201, await res.clone().text());
    this.accessToken = ((await res.json()) as { access_token: string }).access_token;
    const claims = JSON.parse(Buffer.from(this.accessToken.split('.')[1]!, 'base64url').toString('utf8')) as { user_data?: Record<string, unknown> };
    return claims.user_data;
  }

  /** The profile the `onUserCreated` trigger writes (custom user data), once it is there. */
  async profile(): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const data = await this.refreshCustomData();
      if (data) return data;
      assert.ok(Date.now() < deadline, `no custom user data for ${this.email}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function script(demo: Demo, user: ClientUser, steps: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    baseUrl: demo.served.url, appId: demo.served.appId, flexible: true, schema: demo.schema, timeoutMs: 10000,
    credentials: user.credentials, subscriptions: [demo.subscription], steps, ...extra,
  };
}

function assertOk(run: ProbeRun, what: string): void {
  assert.equal(run.result.exitCode, 0, `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed|subscription_state|expect/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);
}

/** The compensating writes the probe's error handler reported, as `table pk` strings. */
function compensated(run: ProbeRun): string[] {
  return run.events('sync_error').flatMap((l) => (l.compensatingWrites as { objectName: string; primaryKey: { $oid: string } }[] | undefined) ?? [])
    .map((w) => `${w.objectName} ${w.primaryKey.$oid}`);
}

/** Steps that try a write the rules refuse, wait for the server's revert, and stay until the error callback ran. */
function refusedWrite(write: unknown, revertedWhen: { type: string; count: number; query: string }): unknown[] {
  return [
    { write },
    { waitUpload: true },
    { expect: { ...revertedWhen, withinMs: 5000 } },
    { sleepMs: 1000 },
  ];
}

function oid(n: number): { $oid: string } {
  return { $oid: `65d0000000000000000${String(n).padStart(5, '0')}` };
}

const bodies = (items: unknown) => (items as { body: string }[]).map((i) => i.body).sort();

describe('the restricted-feed demo backend syncs with its client', { skip, timeout: 180_000 }, () => {
  let demo: Demo;
  let author: ClientUser;
  let reader: ClientUser;
  let stranger: ClientUser;
  before(async () => {
    demo = await createDemo('flex-sync-guides.restricted-feed', 'restrictedfeed-abcde');
    author = await new ClientUser(demo, 'author@example.com').logIn();
    reader = await new ClientUser(demo, 'reader@example.com').logIn();
    stranger = await new ClientUser(demo, 'stranger@example.com').logIn();
    for (const user of [author, reader, stranger]) await user.profile();
  });
  after(async () => demo?.close());

  test('each user syncs the posts of the authors they subscribed to, and writes only their own', async () => {
    const post = oid(1);
    const authorRun = await runProbe(script(demo, author, [
      { write: { op: 'create', type: 'Item', value: { _id: post, owner_id: author.id, body: 'First post' } } },
      { waitUpload: true },
    ]));
    assertOk(authorRun, 'author');
    assert.deepEqual(authorRun.objects('Item'), [{ _id: post, owner_id: author.id, body: 'First post' }]);

    assert.equal(await reader.call('subscribeToUser', ['author@example.com']), author.id);
    assert.deepEqual((await reader.refreshCustomData())?.subscribedTo, [author.id]);
    const readerRun = await runProbe(script(demo, reader, [
      { waitDownload: true },
      { expect: { type: 'Item', count: 1, query: 'body == "First post"' } },
      { write: { op: 'create', type: 'Item', value: { _id: oid(2), owner_id: reader.id, body: 'Reader\'s post' } } },
      { waitUpload: true },
      ...refusedWrite({ op: 'update', type: 'Item', id: post, value: { body: 'edited by the reader' } }, { type: 'Item', count: 1, query: 'body == "First post"' }),
    ], { cancelWaitsOnError: true }));
    assert.deepEqual(compensated(readerRun), [`Item ${post.$oid}`], JSON.stringify(readerRun.lines.slice(-12)));
    assert.ok(readerRun.events('expect').every((l) => l.pass === true), JSON.stringify(readerRun.events('expect')));
    assert.deepEqual(bodies(readerRun.objects('Item')), ['First post', 'Reader\'s post']);

    const strangerRun = await runProbe(script(demo, stranger, [{ waitDownload: true }]));
    assertOk(strangerRun, 'stranger');
    assert.deepEqual(strangerRun.objects('Item'), [], 'a user who subscribed to no one sees nothing');
    assert.deepEqual(bodies(await author.items('Item', 'find', { query: {} })), ['First post'], 'the reader\'s edit is not in the store');
    assert.deepEqual(bodies(await reader.items('Item', 'find', { query: {} })), ['First post', 'Reader\'s post']);
  });

  test('a live session follows the user\'s subscriptions: subscribing to an author brings the author\'s posts, deleteAllItems takes them', async () => {
    const watcher = startProbe(script(demo, stranger, [
      { waitDownload: true },
      { expect: { type: 'Item', count: 0 } },
      { watchMs: 6000 },
      { dump: true },
    ]));
    await watcher.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    assert.equal(await stranger.call('subscribeToUser', ['author@example.com']), author.id);
    const arrived = await watcher.waitFor((l) => l.event === 'change' && l.kind === 'insert', 5000);
    assert.deepEqual(arrived.value, { _id: oid(1), owner_id: author.id, body: 'First post' });
    assert.equal(await author.call('deleteAllItems', []), 1);
    const deleted = await watcher.waitFor((l) => l.event === 'change' && l.kind === 'delete', 5000);
    assert.deepEqual(deleted.id, oid(1));
    const run = await watcher.done;
    assertOk(run, 'stranger, live');
    assert.deepEqual(run.objects('Item'), []);
  });
});

describe('the tiered demo backend syncs with its client', { skip, timeout: 180_000 }, () => {
  let demo: Demo;
  let admin: ClientUser;
  let member: ClientUser;
  let outsider: ClientUser;
  const adminsPlan = oid(11);
  const membersReport = oid(12);
  before(async () => {
    demo = await createDemo('flex-sync-guides.tiered', 'tiered-abcde');
    admin = await new ClientUser(demo, 'admin@example.com').logIn();
    member = await new ClientUser(demo, 'member@example.com').logIn();
    outsider = await new ClientUser(demo, 'outsider@example.com').logIn();
    for (const user of [admin, member, outsider]) await user.profile();
    await admin.call('joinTeam', [admin.id, 'blue', true]);
    await admin.call('joinTeam', [member.id, 'blue', false]);
    await admin.call('joinTeam', [outsider.id, 'red', false]);
    const teams = [];
    for (const user of [admin, member, outsider]) teams.push(await user.refreshCustomData().then((d) => [d?.team, d?.isTeamAdmin]));
    assert.deepEqual(teams, [['blue', true], ['blue', false], ['red', false]]);
  });
  after(async () => demo?.close());

  test('a member writes her own items, the team admin any item of the team, nobody another team\'s', async () => {
    const adminRun = await runProbe(script(demo, admin, [
      { write: { op: 'create', type: 'Item', value: { _id: adminsPlan, owner_id: admin.id, body: 'Admin\'s plan', team: 'blue' } } },
      { waitUpload: true },
    ]));
    assertOk(adminRun, 'admin');

    const memberRun = await runProbe(script(demo, member, [
      { waitDownload: true },
      { expect: { type: 'Item', count: 1, query: 'body == "Admin\'s plan"' } },
      { write: { op: 'create', type: 'Item', value: { _id: membersReport, owner_id: member.id, body: 'Member\'s report', team: 'blue' } } },
      { waitUpload: true },
      ...refusedWrite({ op: 'update', type: 'Item', id: adminsPlan, value: { body: 'edited by the member' } }, { type: 'Item', count: 1, query: 'body == "Admin\'s plan"' }),
    ], { cancelWaitsOnError: true }));
    assert.deepEqual(compensated(memberRun), [`Item ${adminsPlan.$oid}`], JSON.stringify(memberRun.lines.slice(-12)));
    assert.ok(memberRun.events('expect').every((l) => l.pass === true), JSON.stringify(memberRun.events('expect')));

    const redItem = oid(13);
    const adminAgain = await runProbe(script(demo, admin, [
      { waitDownload: true },
      { write: { op: 'update', type: 'Item', id: membersReport, value: { body: 'Member\'s report (reviewed)' } } },
      { waitUpload: true },
      ...refusedWrite({ op: 'create', type: 'Item', value: { _id: redItem, owner_id: admin.id, body: 'for the red team', team: 'red' } }, { type: 'Item', count: 0, query: 'team == "red"' }),
    ], { cancelWaitsOnError: true }));
    assert.deepEqual(compensated(adminAgain), [`Item ${redItem.$oid}`], JSON.stringify(adminAgain.lines.slice(-12)));
    assert.ok(adminAgain.events('expect').every((l) => l.pass === true), JSON.stringify(adminAgain.events('expect')));
    assert.deepEqual(bodies(adminAgain.objects('Item')), ['Admin\'s plan', 'Member\'s report (reviewed)']);

    const outsiderRun = await runProbe(script(demo, outsider, [{ waitDownload: true }]));
    assertOk(outsiderRun, 'outsider');
    assert.deepEqual(outsiderRun.objects('Item'), [], 'someone of another team sees nothing');
    assert.deepEqual(bodies(await member.items('Item', 'find', { query: {} })), ['Admin\'s plan', 'Member\'s report (reviewed)'], 'the member\'s edit of the admin\'s item is not in the store');
    assert.deepEqual(await outsider.items('Item', 'find', { query: {} }), [], 'the admin\'s red item is not in the store');
  });

  test('a live session follows joinTeam: promoted, the member may edit the team\'s items; moved to another team, the team\'s items leave her client', async () => {
    const live = startProbe(script(demo, member, [
      { waitDownload: true },
      { expect: { type: 'Item', count: 2 } },
      { watchMs: 2500, label: 'promotion' },
      { write: { op: 'update', type: 'Item', id: adminsPlan, value: { body: 'Admin\'s plan (member as admin)' } } },
      { waitUpload: true },
      { watchMs: 4000, label: 'transfer' },
      { dump: true },
    ]));
    await live.waitFor((l) => l.event === 'watch' && l.phase === 'begin' && l.label === 'promotion');
    await admin.call('joinTeam', [member.id, 'blue', true]);
    await live.waitFor((l) => l.event === 'watch' && l.phase === 'begin' && l.label === 'transfer');
    await admin.call('joinTeam', [member.id, 'red', false]);
    const run = await live.done;
    assertOk(run, 'member, live');
    assert.deepEqual(compensated(run), [], 'as an admin the member may edit the admin\'s item');
    const erased = run.events('change').filter((l) => l.kind === 'delete' && l.label === 'transfer').map((l) => (l.id as { $oid: string }).$oid).sort();
    assert.deepEqual(erased, [adminsPlan.$oid], 'the blue team\'s items leave her client');
    // Her write filter (owner_id) still matches her own report, and what a user may write she may read.
    assert.deepEqual(bodies(run.objects('Item')), ['Member\'s report (reviewed)']);
    assert.deepEqual(bodies(await admin.items('Item', 'find', { query: {} })), ['Admin\'s plan (member as admin)', 'Member\'s report (reviewed)']);
  });
});

describe('the add-collaborators demo backend syncs with its client', { skip, timeout: 180_000 }, () => {
  let demo: Demo;
  let alice: ClientUser;
  let bob: ClientUser;
  let carol: ClientUser;
  const trip = oid(21);
  before(async () => {
    demo = await createDemo('flex-sync-guides.add-collaborators', 'addcollaborators-abcde');
    alice = await new ClientUser(demo, 'alice@example.com').logIn();
    bob = await new ClientUser(demo, 'bob@example.com').logIn();
    carol = await new ClientUser(demo, 'carol@example.com').logIn();
  });
  after(async () => demo?.close());

  test('a collaborator added to an item gets it on his live client and can edit it; others see nothing', async () => {
    const aliceRun = await runProbe(script(demo, alice, [
      { write: [
        { op: 'create', type: 'Item', value: { _id: trip, owner_id: alice.id, name: 'Plan the trip', collaborators: [] } },
        { op: 'create', type: 'Item', value: { _id: oid(22), owner_id: alice.id, name: 'Alice only', collaborators: [] } },
      ] },
      { waitUpload: true },
    ]));
    assertOk(aliceRun, 'alice');
    const bobLive = startProbe(script(demo, bob, [
      { waitDownload: true },
      { expect: { type: 'Item', count: 0 } },
      { watchMs: 4000 },
      { write: { op: 'update', type: 'Item', id: trip, value: { name: 'Plan the trip (Bob booked the train)' } } },
      { waitUpload: true },
    ]));
    await bobLive.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    await alice.items('add_collaborators', 'updateOne', { query: { _id: trip }, update: { $push: { collaborators: bob.id } } });
    const arrived = await bobLive.waitFor((l) => l.event === 'change' && l.kind === 'insert', 5000);
    assert.deepEqual(arrived.value, { _id: trip, owner_id: alice.id, name: 'Plan the trip', collaborators: [bob.id] });
    const bobRun = await bobLive.done;
    assertOk(bobRun, 'bob');
    assert.deepEqual(compensated(bobRun), []);
    const stored = await alice.items('add_collaborators', 'findOne', { query: { _id: trip } }) as { name: string };
    assert.equal(stored.name, 'Plan the trip (Bob booked the train)');

    const forged = oid(23);
    const carolRun = await runProbe(script(demo, carol, [
      { waitDownload: true },
      { expect: { type: 'Item', count: 0 } },
      ...refusedWrite({ op: 'create', type: 'Item', value: { _id: forged, owner_id: alice.id, name: 'Carol\'s item in Alice\'s name', collaborators: [] } }, { type: 'Item', count: 0, query: 'TRUEPREDICATE' }),
    ], { cancelWaitsOnError: true }));
    assert.ok(carolRun.events('expect').every((l) => l.pass === true), `carol collaborates on nothing: ${JSON.stringify(carolRun.events('expect'))}`);
    assert.deepEqual(compensated(carolRun), [`Item ${forged.$oid}`], JSON.stringify(carolRun.lines.slice(-12)));
    const aliceAgain = await runProbe(script(demo, alice, [{ waitDownload: true }]));
    assert.deepEqual(aliceAgain.objects('Item').map((i) => i.name).sort(), ['Alice only', 'Plan the trip (Bob booked the train)']);
  });
});

describe('rules follow custom user data kept outside the synced collections', { skip, timeout: 120_000 }, () => {
  let demo: Demo;
  let admin: ClientUser;
  let member: ClientUser;
  before(async () => {
    // The tiered backend with its User collection not synced (its schema has no title): the profile's
    // writes are not in the sync history, only in the store's change stream.
    demo = await createDemo('flex-sync-guides.tiered', 'tieredprofiles-abcde', (backend) => {
      const file = path.join(backend, 'data_sources/mongodb-atlas/Item/User/schema.json');
      const { title: _title, ...schema } = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
      fs.writeFileSync(file, JSON.stringify(schema, null, 2));
    });
    admin = await new ClientUser(demo, 'admin@example.com').logIn();
    member = await new ClientUser(demo, 'member@example.com').logIn();
    for (const user of [admin, member]) await user.profile();
    await admin.call('joinTeam', [admin.id, 'blue', true]);
  });
  after(async () => demo?.close());

  test('joining a team brings its items to the member\'s open realm', async () => {
    const plan = oid(31);
    assertOk(await runProbe(script(demo, admin, [
      { write: { op: 'create', type: 'Item', value: { _id: plan, owner_id: admin.id, body: 'Blue plan', team: 'blue' } } },
      { waitUpload: true },
    ])), 'admin');
    const live = startProbe(script(demo, member, [
      { waitDownload: true },
      { expect: { type: 'Item', count: 0 } },
      { watchMs: 4000 },
      { dump: true },
    ]));
    await live.waitFor((l) => l.event === 'watch' && l.phase === 'begin');
    await admin.call('joinTeam', [member.id, 'blue', false]);
    const arrived = await live.waitFor((l) => l.event === 'change' && l.kind === 'insert', 5000);
    assert.deepEqual(arrived.value, { _id: plan, owner_id: admin.id, body: 'Blue plan', team: 'blue' });
    const run = await live.done;
    assertOk(run, 'member, live');
    assert.deepEqual(bodies(run.objects('Item')), ['Blue plan']);
  });
});
