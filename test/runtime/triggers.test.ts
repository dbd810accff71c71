// Triggers end to end: writes through the change-event store reach DATABASE triggers' functions (run by the
// real function runner), AUTHENTICATION events reach their triggers, SCHEDULED triggers fire on an injected
// clock and timer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ObjectId, Timestamp } from 'bson';
import { loadApp } from '../../core/load';
import type { AppModel } from '../../core/model';
import { createFunctionRunner, type FunctionRunner } from '../../runtime/functions';
import { runServiceAction } from '../../runtime/service-actions';
import { withChangeEvents } from '../../runtime/store/changes';
import { openEmbeddedStore } from '../../runtime/store/embedded';
import type { Document, DocumentStore } from '../../runtime/store/types';
import { createTriggerDispatcher, type TriggerDispatcher, type TriggerDispatcherOptions } from '../../runtime/triggers';
import { APP_ROOT, appFs } from '../helpers/app';

const FUNCTIONS: Record<string, string> = {
  echo: 'exports = (event) => event;',
  failing: 'exports = (event) => { throw new Error("cannot handle " + event.operationType); };',
  // The `triggers` template's function: copies each new item into a view collection.
  updateCollectionView: `exports = async function (changeEvent) {
    const copies = context.services.get('mongodb-atlas').db(changeEvent.ns.db).collection('items_copy');
    await copies.insertOne({ ...changeEvent.fullDocument, date_created: new Date(0) });
  };`,
  // The restricted-feed template's creation trigger: the custom user data document of every new user.
  onUserCreated: `exports = async function (authEvent) {
    const users = context.services.get('mongodb-atlas').db('Item').collection('User');
    await users.insertOne({ _id: authEvent.user.id, email: authEvent.user.data.email, subscribedTo: [] });
  };`,
  // Finishes the first event last unless deliveries wait for each other.
  slowFirst: 'exports = async (event) => { if (event.fullDocument.n === 1) await new Promise((r) => setTimeout(r, 40)); return event.fullDocument.n; };',
  tick: 'exports = (...args) => ({ argc: args.length, system: context.runningAsSystem() });',
};

interface Call { name: string; args: unknown[]; result?: unknown; error?: string }
interface LogLine { level: 'info' | 'warn' | 'error'; text: string }

function databaseTrigger(name: string, config: Document, extra: Document = {}): Document {
  return {
    name, type: 'DATABASE', disabled: false,
    config: { service_name: 'mongodb-atlas', database: 'shop', collection: 'items', operation_types: ['INSERT'], full_document: false, full_document_before_change: false, unordered: false, ...config },
    event_processors: { FUNCTION: { config: { function_name: 'echo' } } },
    ...extra,
  };
}

async function loadTriggers(triggers: Document[]): Promise<AppModel> {
  const files: Record<string, unknown> = {
    'realm_config.json': { config_version: 20210101, app_id: 'triggers-abcde', name: 'triggers' },
    'data_sources/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } },
    'functions/config.json': Object.keys(FUNCTIONS).map((name) => ({ name, private: true })),
  };
  for (const [name, source] of Object.entries(FUNCTIONS)) files[`functions/${name}.js`] = source;
  for (const trigger of triggers) files[`triggers/${String(trigger.name)}.json`] = trigger;
  return loadApp(appFs(files), APP_ROOT);
}

describe('triggers', () => {
  let runner: FunctionRunner;
  /** The store trigger functions write to; each test points it at its own. */
  let currentStore: DocumentStore;
  let calls: Call[];
  /** The calls in the order they finished. */
  let completions: Call[];

  before(() => {
    runner = createFunctionRunner({
      loadSource: (name) => (FUNCTIONS[name] === undefined ? undefined : { source: FUNCTIONS[name], path: `/app/functions/${name}.js` }),
      host: {
        serviceAction: (service, action, args) => runServiceAction((_s, db, coll) => currentStore.collection(db, coll), service, action, args),
        values: { get: () => undefined },
        environment: { tag: '', values: {} },
        executeFunction: (name, args, ctx) => runner.run(name, args, ctx),
      },
      timeoutMs: 20_000,
    });
  });
  after(() => runner.close());

  /** A dispatcher for these triggers over a fresh in-memory store wired through the change-event decorator. */
  async function setup(triggers: Document[], overrides: Partial<TriggerDispatcherOptions> = {}) {
    const app = await loadTriggers(triggers);
    const logs: LogLine[] = [];
    calls = [];
    completions = [];
    const dispatcher: TriggerDispatcher = createTriggerDispatcher({
      app,
      runFunction: async (name, args) => {
        const call: Call = { name, args };
        calls.push(call);
        try {
          call.result = await runner.run(name, args, { runAsSystem: true });
          return call.result;
        } catch (error) {
          call.error = (error as Error).message;
          throw error;
        } finally {
          completions.push(call);
        }
      },
      log: { info: (text) => logs.push({ level: 'info', text }), warn: (text) => logs.push({ level: 'warn', text }), error: (text) => logs.push({ level: 'error', text }) },
      ...overrides,
    });
    const raw = await openEmbeddedStore({});
    const store = withChangeEvents(raw, (change) => dispatcher.onChange(change), { wants: dispatcher.wants });
    currentStore = store;
    return { dispatcher, store, items: store.collection('shop', 'items'), logs };
  }

  /** What the trigger functions received, as they saw it (they echo their event). */
  const received = () => calls.map((c) => c.result as Document);

  describe('DATABASE', () => {
    test('an insert reaches the function with the platform event shape', async () => {
      const { dispatcher, items } = await setup([databaseTrigger('onInsert', {})]);
      const { insertedId } = await items.insertOne({ name: 'pen', price: 2 });
      await dispatcher.idle();
      assert.equal(calls.length, 1);
      assert.equal(calls[0].name, 'echo');
      const [event] = received();
      assert.equal(event.operationType, 'insert');
      assert.deepEqual(event.ns, { db: 'shop', coll: 'items' });
      assert.deepEqual(event.documentKey, { _id: insertedId });
      assert.deepEqual(event.fullDocument, { _id: insertedId, name: 'pen', price: 2 }, 'inserts carry the document even with full_document off');
      assert.ok(event.clusterTime instanceof Timestamp);
      assert.ok(event.wallTime instanceof Date);
      assert.equal(typeof (event._id as Document)._data, 'string');
      assert.ok(!('fullDocumentBeforeChange' in event) && !('updateDescription' in event));
    });

    test('each operation type reaches only the triggers that list it', async () => {
      const { dispatcher, items } = await setup([
        databaseTrigger('onUpdate', { operation_types: ['UPDATE'] }),
        databaseTrigger('onReplaceOrDelete', { operation_types: ['REPLACE', 'DELETE'] }),
      ]);
      await items.insertOne({ _id: 1, status: 'open', tmp: 1 });
      await items.updateOne({ _id: 1 }, { $set: { status: 'done' }, $unset: { tmp: '' } });
      await items.replaceOne({ _id: 1 }, { status: 'archived' });
      await items.deleteOne({ _id: 1 });
      await dispatcher.idle();
      const events = received();
      assert.deepEqual(events.map((e) => e.operationType).sort(), ['delete', 'replace', 'update']);
      const update = events.find((e) => e.operationType === 'update')!;
      assert.deepEqual(update.updateDescription, { updatedFields: { status: 'done' }, removedFields: ['tmp'], truncatedArrays: [] });
      assert.ok(!('fullDocument' in update), 'updates carry no document unless full_document is on');
      const replace = events.find((e) => e.operationType === 'replace')!;
      assert.deepEqual(replace.fullDocument, { _id: 1, status: 'archived' });
      const remove = events.find((e) => e.operationType === 'delete')!;
      assert.deepEqual(remove.documentKey, { _id: 1 });
      assert.ok(!('fullDocument' in remove) && !('fullDocumentBeforeChange' in remove));
    });

    test('full_document and full_document_before_change add the documents', async () => {
      const { dispatcher, items } = await setup([
        databaseTrigger('withDocs', { operation_types: ['UPDATE', 'DELETE'], full_document: true, full_document_before_change: true }),
      ]);
      await items.insertOne({ _id: 'a', n: 1 });
      await items.updateOne({ _id: 'a' }, { $inc: { n: 1 } });
      await items.findOneAndDelete({ _id: 'a' });
      await dispatcher.idle();
      const [update, remove] = received();
      assert.deepEqual(update.fullDocument, { _id: 'a', n: 2 });
      assert.deepEqual(update.fullDocumentBeforeChange, { _id: 'a', n: 1 });
      assert.deepEqual(update.updateDescription, { updatedFields: { n: 2 }, removedFields: [], truncatedArrays: [] });
      assert.deepEqual(remove.fullDocumentBeforeChange, { _id: 'a', n: 2 });
      assert.ok(!('fullDocument' in remove));
    });

    test('match filters events and project shapes them', async () => {
      const { dispatcher, items } = await setup([
        databaseTrigger('expensive', { match: { 'fullDocument.price': { $gte: 10 } }, project: { operationType: 1, 'fullDocument.name': 1 } }),
        databaseTrigger('closed', { operation_types: ['UPDATE'], match: { 'updateDescription.updatedFields.status': 'closed' } }),
        databaseTrigger('byId', { match: { 'documentKey._id': { $oid: '65f0c0ffee00000000000001' } } }),
      ]);
      const special = new ObjectId('65f0c0ffee00000000000001');
      await items.insertMany([{ name: 'pen', price: 2 }, { name: 'lamp', price: 40 }, { _id: special, name: 'gift', price: 0 }]);
      await items.updateMany({}, { $set: { status: 'open' } });
      await items.updateOne({ name: 'pen' }, { $set: { status: 'closed' } });
      await dispatcher.idle();
      const events = received();
      const projected = events.filter((e) => !('documentKey' in e));
      assert.equal(projected.length, 1, 'one insert is expensive');
      assert.deepEqual(Object.keys(projected[0]).sort(), ['_id', 'fullDocument', 'operationType']);
      assert.deepEqual(projected[0].fullDocument, { name: 'lamp' });
      const updates = events.filter((e) => e.operationType === 'update');
      assert.equal(updates.length, 1);
      assert.deepEqual(updates[0].updateDescription, { updatedFields: { status: 'closed' }, removedFields: [], truncatedArrays: [] });
      const byId = events.filter((e) => e.operationType === 'insert' && 'documentKey' in e);
      assert.deepEqual(byId.map((e) => (e.fullDocument as Document).name), ['gift'], 'an EJSON $oid in match compares with the ObjectId');
    });

    test('disabled triggers, other collections and other databases do not fire; a database-wide trigger does', async () => {
      const { dispatcher, store } = await setup([
        databaseTrigger('off', {}, { disabled: true }),
        databaseTrigger('wholeDatabase', { collection: undefined }),
      ]);
      assert.equal(dispatcher.wants('shop', 'items', 'insert'), true);
      assert.equal(dispatcher.wants('shop', 'items', 'delete'), false);
      assert.equal(dispatcher.wants('other', 'items', 'insert'), false);
      await store.collection('shop', 'items').insertOne({ _id: 1 });
      await store.collection('shop', 'orders').insertOne({ _id: 2 });
      await store.collection('other', 'items').insertOne({ _id: 3 });
      await dispatcher.idle();
      assert.equal(calls.length, 2, 'only the database-wide trigger runs');
      assert.deepEqual(received().map((e) => (e.ns as Document).coll), ['items', 'orders']);
    });

    test('a failing trigger function is logged with the trigger name and does not break the write', async () => {
      const { dispatcher, items, logs } = await setup([
        databaseTrigger('brittle', {}, { event_processors: { FUNCTION: { config: { function_name: 'failing' } } } }),
      ]);
      const result = await items.insertOne({ _id: 'x' });
      assert.deepEqual(result, { insertedId: 'x' });
      await items.insertOne({ _id: 'y' });
      await dispatcher.idle();
      assert.equal(calls.length, 2, 'the next event is still delivered');
      assert.deepEqual(await items.find({}), [{ _id: 'x' }, { _id: 'y' }]);
      const errors = logs.filter((l) => l.level === 'error');
      assert.equal(errors.length, 2);
      assert.match(errors[0].text, /trigger "brittle" failed: function "failing": .*cannot handle insert/);
    });

    test('an ordered trigger handles one event at a time, in write order', async () => {
      const { dispatcher, items } = await setup([
        databaseTrigger('ordered', {}, { event_processors: { FUNCTION: { config: { function_name: 'slowFirst' } } } }),
      ]);
      await items.insertOne({ n: 1 });
      await items.insertOne({ n: 2 });
      await items.insertMany([{ n: 3 }, { n: 4 }]);
      await dispatcher.idle();
      assert.deepEqual(completions.map((c) => c.result), [1, 2, 3, 4]);
    });

    test('ordered triggers wait for the previous delivery; unordered ones do not', async () => {
      const started: { trigger: string; n: unknown; finish: () => void }[] = [];
      const { dispatcher, items } = await setup([
        databaseTrigger('ordered', {}),
        databaseTrigger('unordered', { unordered: true }, { event_processors: { FUNCTION: { config: { function_name: 'tick' } } } }),
      ], {
        runFunction: (name, args) => new Promise((resolve) => {
          started.push({ trigger: name, n: ((args[0] as Document).fullDocument as Document).n, finish: () => resolve(undefined) });
        }),
      });
      const ofTrigger = (name: string) => started.filter((s) => s.trigger === name).map((s) => s.n);
      await items.insertMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
      await waitFor(() => ofTrigger('tick').length === 3);
      assert.deepEqual(ofTrigger('tick'), [1, 2, 3], 'unordered: all three start at once');
      assert.deepEqual(ofTrigger('echo'), [1], 'ordered: only the first has started');
      started.find((s) => s.trigger === 'echo' && s.n === 1)!.finish();
      await waitFor(() => ofTrigger('echo').length === 2);
      assert.deepEqual(ofTrigger('echo'), [1, 2]);
      for (const s of started) s.finish();
      await waitFor(() => ofTrigger('echo').length === 3);
      started.at(-1)!.finish();
      await dispatcher.idle();
    });

    test('the triggers template: each new item is copied into a view collection by a system function', async () => {
      const { dispatcher, store, items } = await setup([
        databaseTrigger('copyItems', { database: 'shop', collection: 'items' }, { event_processors: { FUNCTION: { config: { function_name: 'updateCollectionView' } } } }),
      ]);
      await items.insertOne({ _id: 1, name: 'pen' });
      await items.insertOne({ _id: 2, name: 'ink' });
      await dispatcher.idle();
      assert.deepEqual(await store.collection('shop', 'items_copy').find({}, { sort: { _id: 1 } }), [
        { _id: 1, name: 'pen', date_created: new Date(0) },
        { _id: 2, name: 'ink', date_created: new Date(0) },
      ]);
    });

    test('what cannot run locally is reported once, by trigger name', async () => {
      const { logs, dispatcher } = await setup([
        databaseTrigger('toAws', {}, { event_processors: { AWS_EVENTBRIDGE: { config: { account_id: '123', region: 'us-east-1' } } } }),
        databaseTrigger('otherCluster', { service_name: 'elsewhere' }),
        databaseTrigger('badMatch', { match: { $nope: 1 } }),
      ]);
      assert.ok(logs.some((l) => l.level === 'warn' && /"toAws" sends its events to AWS EventBridge, which is not supported locally/.test(l.text)));
      assert.ok(logs.some((l) => l.level === 'warn' && /"otherCluster": "elsewhere" is not a linked cluster data source/.test(l.text)));
      assert.ok(logs.some((l) => l.level === 'error' && /"badMatch" does not run/.test(l.text)));
      assert.equal(dispatcher.wants('shop', 'items', 'insert'), false);
    });
  });

  describe('AUTHENTICATION', () => {
    const authTrigger = (name: string, operationType: string, providers: string[], functionName = 'echo') => ({
      name, type: 'AUTHENTICATION', disabled: false,
      config: { operation_type: operationType, providers },
      event_processors: { FUNCTION: { config: { function_name: functionName } } },
    });
    const user = { id: '65f0c0ffee0000000000beef', type: 'normal', data: { email: 'ana@example.com' }, custom_data: {}, identities: [{ id: 'i1', provider_type: 'local-userpass' }] };

    test('CREATE and LOGIN reach the triggers for that operation and provider', async () => {
      const time = new Date('2024-05-01T12:00:00Z');
      const { dispatcher } = await setup([
        authTrigger('created', 'CREATE', ['local-userpass']),
        authTrigger('loggedIn', 'LOGIN', ['local-userpass', 'anon-user'], 'tick'),
      ], { clock: { now: () => time.getTime() } });
      await dispatcher.onAuthEvent({ operationType: 'CREATE', providers: ['local-userpass'], user });
      assert.equal(calls.length, 1);
      assert.deepEqual(calls[0].result, { operationType: 'CREATE', providers: ['local-userpass'], user, time });
      await dispatcher.onAuthEvent({ operationType: 'LOGIN', providers: ['anon-user'], user });
      assert.deepEqual(calls.map((c) => c.name), ['echo', 'tick']);
      await dispatcher.onAuthEvent({ operationType: 'CREATE', providers: ['api-key'], user });
      await dispatcher.onAuthEvent({ operationType: 'DELETE', providers: ['local-userpass'], user });
      assert.equal(calls.length, 2, 'no trigger for api-key creations or deletions');
    });

    test('the restricted-feed creation trigger writes the new user\'s custom user data; failures are logged', async () => {
      const { dispatcher, store, logs } = await setup([authTrigger('onCreate', 'CREATE', ['local-userpass', 'anon-user'], 'onUserCreated')]);
      await dispatcher.onAuthEvent({ operationType: 'CREATE', providers: ['local-userpass'], user });
      assert.deepEqual(await store.collection('Item', 'User').findOne({ _id: user.id }), { _id: user.id, email: 'ana@example.com', subscribedTo: [] });
      await dispatcher.onAuthEvent({ operationType: 'CREATE', providers: ['anon-user'], user });
      assert.match(logs.find((l) => l.level === 'error')?.text ?? '', /trigger "onCreate" failed: function "onUserCreated": .*duplicate key/i);
    });
  });

  describe('SCHEDULED', () => {
    /** Timers that fire when the test moves the clock past them. */
    function fakeTime(startIso: string) {
      let now = Date.parse(startIso);
      const timers = new Map<number, { at: number; callback: () => void }>();
      let nextHandle = 1;
      return {
        clock: { now: () => now },
        setTimeout: (callback: () => void, ms: number) => {
          timers.set(nextHandle, { at: now + ms, callback });
          return nextHandle++;
        },
        clearTimeout: (handle: unknown) => { timers.delete(handle as number); },
        pending: () => timers.size,
        advanceTo(iso: string) {
          const target = Date.parse(iso);
          for (;;) {
            const due = [...timers].filter(([, t]) => t.at <= target).sort((a, b) => a[1].at - b[1].at)[0];
            if (!due) break;
            timers.delete(due[0]);
            now = due[1].at;
            due[1].callback();
          }
          now = target;
        },
        /** The clock jumps ahead and the timers that should have fired meanwhile fire late, as after a suspend. */
        sleepThrough(iso: string) {
          now = Date.parse(iso);
          const late = [...timers].filter(([, t]) => t.at <= now);
          for (const [handle, t] of late) {
            timers.delete(handle);
            t.callback();
          }
        },
      };
    }
    const scheduledTrigger = (name: string, schedule: string) => ({
      name, type: 'SCHEDULED', disabled: false, config: { schedule, skip_catchup_events: false },
      event_processors: { FUNCTION: { config: { function_name: 'tick' } } },
    });

    test('fires at each scheduled minute with no arguments, as system; stop() ends it', async () => {
      const time = fakeTime('2024-01-01T00:00:30Z');
      const { dispatcher } = await setup([scheduledTrigger('every5', '*/5 * * * *')], time);
      time.advanceTo('2024-01-01T00:20:00Z');
      assert.equal(calls.length, 0, 'nothing before start()');
      dispatcher.start();
      time.advanceTo('2024-01-01T00:24:59Z');
      assert.equal(calls.length, 0);
      time.advanceTo('2024-01-01T00:25:00Z');
      assert.equal(calls.length, 1);
      time.advanceTo('2024-01-01T00:40:10Z');
      assert.equal(calls.length, 4, '00:25, 00:30, 00:35, 00:40');
      await dispatcher.idle();
      assert.deepEqual(calls.map((c) => c.result), Array(4).fill({ argc: 0, system: true }));
      dispatcher.stop();
      assert.equal(time.pending(), 0);
      time.advanceTo('2024-01-01T02:00:00Z');
      assert.equal(calls.length, 4);
    });

    test('a schedule missed while the machine slept fires once on waking', async () => {
      const time = fakeTime('2024-01-01T00:00:00Z');
      const { dispatcher } = await setup([scheduledTrigger('everyMinute', '* * * * *')], time);
      dispatcher.start();
      time.advanceTo('2024-01-01T00:01:00Z');
      assert.equal(calls.length, 1);
      time.sleepThrough('2024-01-01T00:11:30Z');
      assert.equal(calls.length, 2, 'ten missed minutes fire once');
      time.advanceTo('2024-01-01T00:12:00Z');
      assert.equal(calls.length, 3, 'and the schedule goes on from there');
      await dispatcher.dispose();
      assert.equal(time.pending(), 0);
    });

    test('an invalid schedule is logged with the trigger name; the others run', async () => {
      const time = fakeTime('2024-01-01T00:00:00Z');
      const { dispatcher, logs } = await setup([scheduledTrigger('broken', '61 * * * *'), scheduledTrigger('hourly', '0 * * * *')], time);
      assert.match(logs.find((l) => l.level === 'error')?.text ?? '', /trigger "broken" does not run: minute 61 is out of range/);
      dispatcher.start();
      time.advanceTo('2024-01-01T03:00:00Z');
      assert.equal(calls.length, 3);
      await dispatcher.dispose();
    });
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met before the deadline');
    await new Promise((resolve) => setImmediate(resolve));
  }
}
