// The generated schema's platform rules at run time (issue 11 §3), over real HTTP on 127.0.0.1: an enum field
// round-trips (insert, filter with every operator kind, sort, update) with the stored strings kept in the
// database; a `subscriptions` collection is an ordinary `Subscription` type with full CRUD; a required `_id`
// may be left out on insert; a rules.json naming its collection is the namespace the runtime uses.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const ds = 'data_sources/mongodb-atlas/todo';

function openRules(collection: string) {
  return {
    database: 'todo', collection, filters: [],
    roles: [{ name: 'signed-in', apply_when: {}, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true }],
  };
}

function app(): Record<string, unknown> {
  const files = baseApp();
  for (const key of Object.keys(files)) if (key.startsWith('graphql/custom_resolvers') || key.startsWith(`${ds}/`) || (key.startsWith('functions/') && key !== 'functions/resetFunc.js')) delete files[key];
  return {
    ...files,
    'functions/config.json': [{ name: 'resetFunc', private: true }, { name: 'storedTickets', private: false }],
    // Reads the store directly, to see what the GraphQL layer wrote.
    'functions/storedTickets.js': 'exports = async () => context.services.get("mongodb-atlas").db("todo").collection("tickets").find({}, { status: 1, _id: 0 }).toArray();\n',
    // The folder says "TicketFolder"; rules.json says the collection is "tickets", and wins.
    [`${ds}/TicketFolder/rules.json`]: openRules('tickets'),
    [`${ds}/TicketFolder/schema.json`]: {
      bsonType: 'object', required: ['_id'],
      properties: {
        _id: { bsonType: 'objectId' },
        title: { bsonType: 'string' },
        status: { bsonType: 'string', enum: ['open', 'in progress', 'done'] },
      },
    },
    [`${ds}/TicketFolder/relationships.json`]: {},
    [`${ds}/subscriptions/rules.json`]: openRules('subscriptions'),
    [`${ds}/subscriptions/schema.json`]: { title: 'subscription', bsonType: 'object', required: ['plan'], properties: { _id: { bsonType: 'objectId' }, plan: { bsonType: 'string' } } },
    [`${ds}/subscriptions/relationships.json`]: {},
  };
}

interface Reply { status: number; body: any }

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('platform schema rules at run time', () => {
  let runtime: RunningRuntime;
  let appDir: string;
  let gql: (query: string, variables?: Record<string, unknown>) => Promise<any>;
  let callFunction: (name: string) => Promise<Reply>;

  before(async () => {
    appDir = writeApp(app());
    runtime = await startRuntime({ appDir, port: 0, log: quiet });
    const base = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
    const credentials = { email: 'ada@example.com', password: 'enums round trip' };
    assert.equal((await post(`${base}/auth/providers/local-userpass/register`, credentials)).status, 201);
    const login = await post(`${base}/auth/providers/local-userpass/login`, { username: credentials.email, password: credentials.password });
    const authorization = `Bearer ${login.body.access_token}`;
    gql = async (query, variables) => {
      const reply = await post(`${base}/graphql`, { query, variables }, { authorization });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      return reply.body;
    };
    callFunction = (name) => post(`${base}/functions/call`, { name, arguments: [] }, { authorization });
  });

  after(async () => {
    await runtime?.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('an enum field round-trips: insert without the required _id, stored strings in the database, filters, sort, update', async () => {
    const inserted = await gql(`mutation { a: insertOneTicket(data: {title: "a", status: OPEN}) { _id status }
      b: insertOneTicket(data: {title: "b", status: IN_PROGRESS}) { status }
      c: insertOneTicket(data: {title: "c", status: DONE}) { status } }`);
    assert.equal(inserted.errors, undefined, JSON.stringify(inserted.errors));
    assert.deepEqual([inserted.data.a.status, inserted.data.b.status, inserted.data.c.status], ['OPEN', 'IN_PROGRESS', 'DONE']);
    assert.match(inserted.data.a._id, /^[0-9a-f]{24}$/, 'the server filled in the required _id');

    const stored = await callFunction('storedTickets');
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    assert.deepEqual(stored.body.map((d: { status: string }) => d.status).sort(), ['done', 'in progress', 'open'], 'the database keeps the schema\'s strings');

    const titles = async (query: string, variables?: Record<string, unknown>) => {
      const reply = await gql(query, variables);
      assert.equal(reply.errors, undefined, JSON.stringify(reply.errors));
      return (reply.data.tickets as Array<{ title: string }>).map((t) => t.title);
    };
    assert.deepEqual(await titles('{ tickets(query: {status: IN_PROGRESS}) { title } }'), ['b']);
    assert.deepEqual(await titles('query ($s: TicketStatus) { tickets(query: {status_ne: $s}, sortBy: TITLE_ASC) { title } }', { s: 'OPEN' }), ['b', 'c']);
    assert.deepEqual(await titles('{ tickets(query: {status_in: [OPEN, DONE]}, sortBy: TITLE_DESC) { title } }'), ['c', 'a']);
    assert.deepEqual(await titles('{ tickets(query: {status_nin: [OPEN]}, sortBy: TITLE_ASC) { title } }'), ['b', 'c']);
    assert.deepEqual(await titles('{ tickets(query: {status_gt: IN_PROGRESS}) { title } }'), ['a'], 'ordered on the stored strings: "open" > "in progress"');
    assert.deepEqual(await titles('{ tickets(query: {status_exists: true}, sortBy: STATUS_ASC) { title } }'), ['c', 'b', 'a'], 'sorted on the stored strings');

    const updated = await gql('mutation { updateOneTicket(query: {title: "a"}, set: {status: DONE}) { status } }');
    assert.deepEqual(updated, { data: { updateOneTicket: { status: 'DONE' } } });
    assert.deepEqual(await titles('{ tickets(query: {status: DONE}, sortBy: TITLE_ASC) { title } }'), ['a', 'c']);
    const unset = await gql('mutation { updateOneTicket(query: {title: "b"}, set: {status_unset: true}) { title status } }');
    assert.deepEqual(unset, { data: { updateOneTicket: { title: 'b', status: null } } });

    const wrong = await gql('{ tickets(query: {status: "open"}) { title } }');
    assert.match(wrong.errors[0].message, /Enum "TicketStatus" cannot represent non-enum value: "open"/);
  });

  test('a subscriptions collection is the ordinary type Subscription with every generated field', async () => {
    const inserted = await gql('mutation { insertOneSubscription(data: {plan: "pro"}) { plan } insertManySubscriptions(data: [{plan: "free"}]) { insertedIds } }');
    assert.equal(inserted.errors, undefined, JSON.stringify(inserted.errors));
    const read = await gql('{ subscription(query: {plan: "pro"}) { plan } subscriptions(sortBy: PLAN_ASC) { plan } }');
    assert.deepEqual(read, { data: { subscription: { plan: 'pro' }, subscriptions: [{ plan: 'free' }, { plan: 'pro' }] } });
    const removed = await gql('mutation { deleteManySubscriptions { deletedCount } }');
    assert.deepEqual(removed, { data: { deleteManySubscriptions: { deletedCount: 2 } } });
    const introspected = await gql('{ __schema { subscriptionType { name } } }');
    assert.deepEqual(introspected, { data: { __schema: { subscriptionType: null } } }, 'the type is no subscription root');
  });
});
