// A client's later upload based on an old server version after a restart of the runtime (issue 33): the
// server merges it with the changesets it had not seen in their reciprocal form, as transformed through the
// same client's earlier uploads (realm-core's server keeps that reciprocal history in its file, per client
// file). Two raw protocol clients of one user (`helpers/realm-flexible-client.ts`) against `node dist/cli.js
// serve`: B inserts into a list; A, which has not integrated that, inserts twice, each upload based on the
// same old version; between A's two uploads the runtime restarts (or, as the control, does not). The list
// the server keeps must be the one realm-core's rules give everyone (the merge simulation of
// `helpers/sync-merge-sim.ts` with the same file idents and timestamps), with no error.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { dumpState } from '../../runtime/sync/merge/apply';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { FlexClient, messageText } from '../helpers/realm-flexible-client';
import { SimClient, SimServer, settle } from '../helpers/sync-merge-sim';
import { copyApp, graphql, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

function listApp(): string {
  const appDir = copyApp();
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(appDir, file)), { recursive: true });
    fs.writeFileSync(path.join(appDir, file), JSON.stringify(value, null, 2));
  };
  write('sync/config.json', { type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'listdb', is_recovery_mode_disabled: false, queryable_fields_names: ['owner_id'] });
  write('data_sources/mongodb-atlas/listdb/Item/schema.json', {
    title: 'Item', bsonType: 'object', required: ['_id', 'owner_id'],
    properties: { _id: { bsonType: 'objectId' }, owner_id: { bsonType: 'string' }, tags: { bsonType: 'array', items: { bsonType: 'string' } } },
  });
  write('data_sources/mongodb-atlas/listdb/Item/rules.json', {
    collection: 'Item', database: 'listdb',
    roles: [{ name: 'owner', apply_when: {}, document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } }, read: true, write: true, insert: true, delete: true, search: true }],
  });
  return appDir;
}

const SCHEMA: Instruction[] = [
  { type: 'AddTable', table: 'Item', spec: { kind: 'topLevel', pkField: '_id', pkType: 'objectId', pkNullable: false, asymmetric: false } },
  { type: 'AddColumn', table: 'Item', field: 'owner_id', valueType: 'string', keyType: 'null', nullable: false, collectionType: 'single' },
  { type: 'AddColumn', table: 'Item', field: 'tags', valueType: 'string', keyType: 'null', nullable: false, collectionType: 'list' },
];

async function scenario(restart: boolean): Promise<{ stored: unknown; expected: unknown; answers: string }> {
  const appDir = listApp();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-reciprocal-'));
  let served: ServedDist = await serveDist({ appDir, dataDir });
  const clients: FlexClient[] = [];
  try {
    const ada = await registerAndLogIn(served.app, 'ada@example.com', 'ada-Passw0rd');
    const connect = async () => {
      const client = await FlexClient.connect(`${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${ada.access_token}`);
      clients.push(client);
      return client;
    };
    const queries = { Item: `owner_id == "${ada.user_id}"` };
    const id = new ObjectId();
    const object = { type: 'objectId' as const, value: id };
    const insert = (index: number, value: string, priorSize: number): Instruction => ({ type: 'ArrayInsert', table: 'Item', object, field: 'tags', path: [index], value: { type: 'string', value }, priorSize });
    const created: Instruction[] = [
      { type: 'CreateObject', table: 'Item', object },
      { type: 'Update', table: 'Item', object, field: 'owner_id', path: [], value: { type: 'string', value: ada.user_id }, isDefault: false, priorSize: 0 },
      insert(0, 'x', 0),
    ];
    const t0 = BigInt(Date.now() - Date.UTC(2015, 0, 1));
    let a = await connect();
    await a.bindNew(queries);
    await a.upload([created], { timestamp: t0 });
    const b = await connect();
    await b.bindNew(queries);
    await a.mark();
    // What A had integrated when it made both of its changesets: the item, not B's insert.
    const base = a.state.serverVersion;
    const e = [insert(0, 'b', 1)];
    const c1 = [insert(0, 'a1', 1)];
    const c2 = [insert(1, 'a2', 2)];
    const answers: unknown[] = [];
    answers.push(await b.upload([e], { timestamp: t0 + 10n }));
    answers.push(await a.upload([c1], { base, timestamp: t0 + 5n }));
    if (restart) {
      const state = { ...a.state, serverVersion: base };
      await Promise.all(clients.map((c) => c.close()));
      await served.close();
      served = await serveDist({ appDir, dataDir });
      a = await connect();
      await a.resume(state);
    }
    answers.push(await a.upload([c2], { base, timestamp: t0 + 6n }));
    const { body } = await graphql(`${served.app}/graphql`, ada.access_token, 'query($id: ObjectId!) { item(query: {_id: $id}) { tags } }', { id: id.toHexString() });

    // realm-core's rules for the same changesets, file idents and timestamps.
    const server = new SimServer();
    const simA = new SimClient(a.state.ident);
    const simB = new SimClient(b.state.ident);
    simA.write([...SCHEMA, ...created], t0);
    settle(server, [simA, simB]);
    simB.write(e, t0 + 10n);
    simB.uploadOne(server);
    simA.write(c1, t0 + 5n);
    simA.write(c2, t0 + 6n);
    settle(server, [simA, simB]);
    const [tagsOfA] = Object.values(dumpState(simA.state).Item ?? {}).map((o) => o.tags);
    assert.deepEqual(Object.values(dumpState(server.state).Item ?? {}).map((o) => o.tags), [tagsOfA], 'the simulation converges');
    return { stored: body?.data?.item?.tags, expected: (tagsOfA as string[]).map((t) => t.replace(/^string:/, '')), answers: messageText(answers) };
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await served.close();
    fs.rmSync(appDir, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('a later upload based on an old version is merged with the reciprocal forms of what it had not seen', { timeout: 120_000 }, () => {
  test('without a restart (the control)', async () => {
    const { stored, expected, answers } = await scenario(false);
    assert.doesNotMatch(answers, /json_error|"error"/);
    assert.deepEqual(stored, expected);
  });

  test('after a restart of the runtime between the two uploads', async () => {
    const { stored, expected, answers } = await scenario(true);
    assert.doesNotMatch(answers, /json_error|"error"/, answers);
    assert.deepEqual(stored, expected);
  });
});
