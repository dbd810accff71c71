// The three permission-strategy demos behave as their strategy says, over real HTTP with several users:
// the backend created from the template, users registered and logged in through the client API, data
// read and written through `functions/call` service actions (the path the SDKs' mongoClient takes).
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

const quiet = { info() {}, warn() {}, error() {} };

async function startDemo(templateId: string): Promise<{ runtime: RunningRuntime; dir: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-demo-'));
  await writeFileMap(nodeFileWriter, dir, await backendFiles(bundledTemplates(), templateId, { name: 'Demo', appId: 'demo-abcde' }));
  return { runtime: await startRuntime({ appDir: dir, port: 0, log: quiet }), dir };
}

/** One user of the app over its client API. */
class Client {
  id = '';
  private access = '';
  private refresh = '';
  constructor(private readonly runtime: RunningRuntime, readonly email: string) {}

  private async post(route: string, body: unknown, token?: string): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${this.runtime.url}/api/client/v2.0${route}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : EJSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? EJSON.parse(text) : undefined };
  }

  async register(): Promise<this> {
    const app = `/app/${this.runtime.appId}/auth/providers/local-userpass`;
    assert.equal((await this.post(`${app}/register`, { email: this.email, password: 'secret-password' })).status, 201);
    const login = await this.post(`${app}/login`, { username: this.email, password: 'secret-password' });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const tokens = login.body as { access_token: string; refresh_token: string; user_id: string };
    [this.id, this.access, this.refresh] = [tokens.user_id, tokens.access_token, tokens.refresh_token];
    return this;
  }

  /** A new access token, carrying the custom user data as it is now (what `refreshCustomData` does). */
  async refreshCustomData(): Promise<Record<string, unknown> | undefined> {
    const r = await this.post('/auth/session', undefined, this.refresh);
    assert.equal(r.status, 201);
    this.access = (r.body as { access_token: string }).access_token;
    const claims = JSON.parse(Buffer.from(this.access.split('.')[1]!, 'base64url').toString('utf8'));
    return claims.user_data;
  }

  /** Waits (with a deadline) for the creation trigger to have written this user's custom data. */
  async customDataOnceCreated(): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const data = await this.refreshCustomData();
      if (data) return data;
      if (Date.now() > deadline) throw new Error(`no custom user data for ${this.email}: the creation trigger did not run`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async call(name: string, ...args: unknown[]): Promise<{ status: number; body: unknown }> {
    return this.post(`/app/${this.runtime.appId}/functions/call`, { name, arguments: args }, this.access);
  }

  async action(action: string, database: string, args: Record<string, unknown>): Promise<unknown> {
    const r = await this.post(`/app/${this.runtime.appId}/functions/call`, { name: action, service: 'mongodb-atlas', arguments: [{ database, collection: 'Item', ...args }] }, this.access);
    if (r.status !== 200) throw Object.assign(new Error(JSON.stringify(r.body)), { status: r.status });
    return r.body;
  }

  async items(database: string): Promise<Array<Record<string, unknown>>> {
    return (await this.action('find', database, { query: {}, sort: { _id: 1 } })) as Array<Record<string, unknown>>;
  }
}

describe('flex-sync-guides.restricted-feed', () => {
  let demo: Awaited<ReturnType<typeof startDemo>>;
  before(async () => { demo = await startDemo('flex-sync-guides.restricted-feed'); });
  after(async () => { await demo.runtime.close(); fs.rmSync(demo.dir, { recursive: true, force: true }); });

  test('a user reads only the authors they subscribed to, through custom data the creation trigger made', async () => {
    const [author, reader, stranger] = await Promise.all(['author@x.org', 'reader@x.org', 'stranger@x.org'].map((e) => new Client(demo.runtime, e).register()));
    assert.deepEqual(await reader.customDataOnceCreated(), { _id: reader.id, email: 'reader@x.org', subscribedTo: [] });
    await author.customDataOnceCreated();
    await stranger.customDataOnceCreated();

    await author.action('insertOne', 'Item', { document: { owner_id: author.id, body: 'First post' } });
    assert.deepEqual((await author.items('Item')).map((i) => i.body), ['First post']);
    assert.deepEqual(await reader.items('Item'), [], 'no subscription yet');

    const subscribed = await reader.call('subscribeToUser', 'author@x.org');
    assert.equal(subscribed.status, 200, JSON.stringify(subscribed.body));
    assert.deepEqual((await reader.refreshCustomData())!.subscribedTo, [author.id]);
    assert.deepEqual((await reader.items('Item')).map((i) => i.body), ['First post']);
    assert.deepEqual(await stranger.items('Item'), []);

    const update = await reader.action('updateOne', 'Item', { query: { owner_id: author.id }, update: { $set: { body: 'defaced' } } }).catch((e) => e);
    assert.ok(update instanceof Error || (update as { modifiedCount: number }).modifiedCount === 0, 'a subscriber cannot write the author\'s items');
    assert.deepEqual((await author.items('Item')).map((i) => i.body), ['First post']);

    assert.equal((await author.call('deleteAllItems')).status, 200);
    assert.deepEqual(await reader.items('Item'), []);
  });
});

describe('flex-sync-guides.tiered', () => {
  let demo: Awaited<ReturnType<typeof startDemo>>;
  before(async () => { demo = await startDemo('flex-sync-guides.tiered'); });
  after(async () => { await demo.runtime.close(); fs.rmSync(demo.dir, { recursive: true, force: true }); });

  test('team members read the team\'s items and write their own; team admins write all of the team\'s', async () => {
    const [admin, member, teammate, outsider] = await Promise.all(['admin@x.org', 'member@x.org', 'mate@x.org', 'out@x.org'].map((e) => new Client(demo.runtime, e).register()));
    for (const u of [admin, member, teammate, outsider]) await u.customDataOnceCreated();
    for (const [u, team, isAdmin] of [[admin, 'blue', true], [member, 'blue', false], [teammate, 'blue', false], [outsider, 'red', false]] as const) {
      assert.equal((await admin.call('joinTeam', u.id, team, isAdmin)).status, 200);
      await u.refreshCustomData();
    }

    await member.action('insertOne', 'Item', { document: { owner_id: member.id, body: 'report', team: 'blue' } });
    assert.deepEqual((await teammate.items('Item')).map((i) => i.body), ['report'], 'a teammate reads the team\'s items');
    assert.deepEqual((await admin.items('Item')).map((i) => i.body), ['report'], 'the team admin reads them');
    assert.deepEqual(await outsider.items('Item'), [], 'another team reads nothing');

    const byTeammate = await teammate.action('updateOne', 'Item', { query: { body: 'report' }, update: { $set: { body: 'teammate edit' } } }).catch((e) => e);
    assert.ok(byTeammate instanceof Error || (byTeammate as { modifiedCount: number }).modifiedCount === 0, 'a plain member cannot write a teammate\'s item');
    const byAdmin = (await admin.action('updateOne', 'Item', { query: { body: 'report' }, update: { $set: { body: 'reviewed' } } })) as { modifiedCount: number };
    assert.equal(byAdmin.modifiedCount, 1, 'the team admin writes the team\'s items');
    assert.deepEqual((await member.items('Item')).map((i) => i.body), ['reviewed']);
  });
});

describe('flex-sync-guides.add-collaborators', () => {
  let demo: Awaited<ReturnType<typeof startDemo>>;
  before(async () => { demo = await startDemo('flex-sync-guides.add-collaborators'); });
  after(async () => { await demo.runtime.close(); fs.rmSync(demo.dir, { recursive: true, force: true }); });

  test('an item is readable and writable by its owner and its listed collaborators only', async () => {
    const [alice, bob, carol] = await Promise.all(['alice@x.org', 'bob@x.org', 'carol@x.org'].map((e) => new Client(demo.runtime, e).register()));
    await alice.action('insertOne', 'add_collaborators', { document: { owner_id: alice.id, name: 'shared', collaborators: [bob.id] } });
    await alice.action('insertOne', 'add_collaborators', { document: { owner_id: alice.id, name: 'private', collaborators: [] } });

    assert.deepEqual((await alice.items('add_collaborators')).map((i) => i.name), ['shared', 'private']);
    assert.deepEqual((await bob.items('add_collaborators')).map((i) => i.name), ['shared']);
    assert.deepEqual(await carol.items('add_collaborators'), []);

    const byBob = (await bob.action('updateOne', 'add_collaborators', { query: { name: 'shared' }, update: { $set: { name: 'shared, edited by Bob' } } })) as { modifiedCount: number };
    assert.equal(byBob.modifiedCount, 1);
    const byCarol = await carol.action('updateOne', 'add_collaborators', { query: { name: 'private' }, update: { $set: { name: 'stolen' } } }).catch((e) => e);
    assert.ok(byCarol instanceof Error || (byCarol as { modifiedCount: number }).modifiedCount === 0);
    assert.deepEqual((await alice.items('add_collaborators')).map((i) => i.name), ['shared, edited by Bob', 'private']);
  });
});
