// Data access over HTTP on the example app (red-team findings): the runtime's own sync history is no
// namespace clients or app functions reach, and field rules hold for what a filter or sort may test.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { findPipelineViolation } from '../../runtime/store/pipeline-check';
import { REPO_ROOT } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

async function json(url: string, init: { body?: unknown; token?: string } = {}) {
  const res = await fetch(url, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

describe('data access never reaches the runtime\'s own databases, and filters see only readable fields', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let app: string;

  const login = async (email: string) => {
    await json(`${app}/auth/providers/local-userpass/register`, { body: { email, password: 'correct horse' } });
    const res = await json(`${app}/auth/providers/local-userpass/login`, { body: { username: email, password: 'correct horse' } });
    assert.equal(res.status, 200, res.text);
    return { id: res.body.user_id as string, token: res.body.access_token as string };
  };
  const action = (token: string, name: string, args: Record<string, unknown>) =>
    json(`${app}/functions/call`, { token, body: { service: 'mongodb-atlas', name, arguments: [args] } });
  const count = async (token: string, collection: string, query: unknown) => {
    const res = await action(token, 'count', { database: 'tracker', collection, query });
    assert.equal(res.status, 200, res.text);
    return Number(res.body.$numberLong ?? res.body.$numberInt ?? res.body);
  };

  before(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-data-sec-'));
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    // A function an app could write to read sync's history as system.
    fs.writeFileSync(path.join(appDir, 'functions/readSyncHistory.js'),
      "exports = async function () { return context.services.get('mongodb-atlas').db('__realm_sync').collection('history').find({}).toArray(); };\n");
    const configFile = path.join(appDir, 'functions/config.json');
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8'));
    config.push({ name: 'readSyncHistory', private: false, run_as_system: true });
    fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
    runtime = await startRuntime({ appDir, port: 0, log: quiet, functionTimeoutMs: 5000 });
    app = `${runtime.url}/api/client/v2.0/app/${runtime.appId}`;
  });
  after(async () => {
    await runtime.close();
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('__realm_sync answers a user as a namespace without rules: reads find nothing, writes are refused', async () => {
    const victim = await login('victim@example.com');
    const inserted = await action(victim.token, 'insertOne', {
      database: 'tracker', collection: 'Task', document: { _partition: victim.id, name: 'SECRET-merger-plan', status: 'open', isComplete: false },
    });
    assert.equal(inserted.status, 200, inserted.text);
    const mallory = await login('mallory@example.com');
    for (const collection of ['history', 'partitions', 'clientFiles', 'schema']) {
      const found = await action(mallory.token, 'find', { database: '__realm_sync', collection, query: {} });
      assert.equal(found.status, 200, found.text);
      assert.deepEqual(found.body, [], `${collection} is not readable`);
      const counted = await action(mallory.token, 'count', { database: '__realm_sync', collection, query: {} });
      assert.equal(Number(counted.body.$numberLong ?? counted.body.$numberInt), 0);
      const aggregated = await action(mallory.token, 'aggregate', { database: '__realm_sync', collection, pipeline: [{ $match: {} }] });
      assert.deepEqual(aggregated.body, []);
    }
    const written = await action(mallory.token, 'insertOne', { database: '__realm_sync', collection: 'history', document: { forged: true } });
    assert.equal(written.status, 403, written.text);
    assert.equal(written.body.error_code, 'NoMatchingRuleFound');
    const deleted = await action(mallory.token, 'deleteMany', { database: '__realm_sync', collection: 'history', query: {} });
    assert.equal(deleted.status, 403, deleted.text);
  });

  test('an app function running as system is refused the sync history too', async () => {
    const user = await login('system-caller@example.com');
    const res = await json(`${app}/functions/call`, { token: user.token, body: { name: 'readSyncHistory', arguments: [] } });
    assert.notEqual(res.status, 200, res.text);
    assert.match(res.text, /__realm_sync.*runtime's own records/);
  });

  test('pipelines of system calls may not name an internal database as a target', () => {
    const refused = new Set(['__realm_sync']);
    const check = (pipeline: unknown) => findPipelineViolation(pipeline, { allowCrossCollection: true, refusedDatabases: refused });
    assert.equal(check([{ $unionWith: { coll: 'history', db: '__realm_sync' } }])?.reason, 'refused-database');
    assert.equal(check([{ $lookup: { from: { db: '__realm_sync', coll: 'partitions' }, as: 'p', pipeline: [] } }])?.reason, 'refused-database');
    assert.equal(check([{ $facet: { x: [{ $graphLookup: { from: { db: '__realm_sync', coll: 'h' } } }] } }])?.reason, 'refused-database');
    assert.equal(check([{ $out: { db: '__realm_sync', coll: 'history' } }])?.reason, 'refused-database');
    assert.equal(check([{ $merge: { into: { db: '__realm_sync', coll: 'history' } } }])?.reason, 'refused-database');
    assert.equal(check([{ $lookup: { from: 'Task', as: 't' } }, { $out: 'copy' }]), undefined, 'the pipeline\'s own database stays open');
  });

  test('a hidden field cannot be tested by a filter: counts, finds and writes match as if it were absent', async () => {
    const secretEmail = 'ceo.private7@corp.example';
    const victim = await login(secretEmail);
    const named = await action(victim.token, 'updateOne', { database: 'tracker', collection: 'User', query: { userId: victim.id }, update: { $set: { name: 'The CEO' } } });
    assert.equal(named.status, 200, named.text);
    const mallory = await login('mallory2@example.com');
    // The victim's own view has the email; the attacker's has not.
    assert.equal(await count(victim.token, 'User', { userId: victim.id, email: secretEmail }), 1);
    assert.equal(await count(mallory.token, 'User', { userId: victim.id }), 1);
    assert.equal(await count(mallory.token, 'User', { userId: victim.id, email: secretEmail }), 0);
    assert.equal(await count(mallory.token, 'User', { userId: victim.id, email: { $regex: '^ceo' } }), 0);
    assert.equal(await count(mallory.token, 'User', { $or: [{ email: { $regex: '^ceo' } }, { name: 'nobody' }] }), 0);
    assert.equal(await count(mallory.token, 'User', { userId: victim.id, email: { $exists: false } }), 1, 'as the attacker may read it, the document has no email');
    assert.equal(await count(mallory.token, 'User', { name: 'The CEO' }), 1, 'readable fields still filter');
    const found = await action(mallory.token, 'find', { database: 'tracker', collection: 'User', query: { email: { $regex: '^ceo' } } });
    assert.deepEqual(found.body, []);
    const own = await action(mallory.token, 'find', { database: 'tracker', collection: 'User', query: { email: 'mallory2@example.com' } });
    assert.equal(own.body.length, 1, 'the caller\'s own readable email still matches');
  });

  test('a slow filter on a hidden field runs off the serving thread: another request is answered meanwhile', async () => {
    const mallory = await login('mallory3@example.com');
    await login('someone.else@example.com');
    // Naming the email (hidden in other users' documents) sends the filter through the views in memory.
    const slowZero = { $subtract: [{ $reduce: { input: { $range: [0, 400_000] }, initialValue: 0, in: { $add: ['$$value', 1] } } }, 400_000] };
    const started = performance.now();
    const slow = action(mallory.token, 'count', { database: 'tracker', collection: 'User', query: { email: { $exists: false }, $expr: { $eq: [slowZero, 0] } } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const other = await fetch(`${app}/location`);
    const otherMs = performance.now() - started;
    const res = await slow;
    assert.equal(other.status, 200);
    assert.ok(res.status === 200 || (res.status === 400 && /ran for more than/.test(res.text)), res.text);
    assert.ok(otherMs < 1000, `another request waited ${Math.round(otherMs)} ms`);
  });

  test('a hidden field cannot order results: sorting on it sorts every hidden value alike', async () => {
    const a = await login('aaa.first@example.com');
    const z = await login('zzz.last@example.com');
    const viewer = await login('viewer@example.com');
    const ordered = async (direction: 1 | -1) => {
      const res = await action(viewer.token, 'find', {
        database: 'tracker', collection: 'User', query: { userId: { $in: [a.id, z.id] } }, sort: { email: direction },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.length, 2);
      assert.ok(res.body.every((doc: Record<string, unknown>) => !('email' in doc)));
      return res.body.map((doc: { userId: string }) => doc.userId);
    };
    assert.deepEqual(await ordered(1), await ordered(-1), 'the order does not depend on the hidden emails');
    // The caller's own email is readable: ordering by it puts the document with none (as seen) first.
    const mine = await action(viewer.token, 'find', {
      database: 'tracker', collection: 'User', query: { userId: { $in: [a.id, viewer.id] } }, sort: { email: -1 }, limit: 1,
    });
    assert.deepEqual(mine.body.map((doc: { userId: string }) => doc.userId), [viewer.id]);
  });
});
