// The security part's attacks on flexible sync's merge work (issue 33, items 6 and 7), against the shipped
// runtime (`node --inspect=127.0.0.1:0 dist/cli.js serve`) on a flexible app where each user owns her notes:
//   memory: client files that each upload one changeset claiming base version 0, updating every note of a
//           victim's history with a timestamp that wins every conflict (the rules refuse it), then disconnect;
//           the runtime's heap after a full GC, after minus before
//   stall:  that many such uploads in flight at once, while another user opens a new client file, gets her
//           bootstrap and has one note acknowledged: her time
// Prints one JSON line (run.mjs reports it against the goals). Run: node --import tsx test/reliability/sync-merge-attacks.ts [--short]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ObjectId } from 'bson';
import { encodeChangeset } from '../../runtime/sync/wire/changeset';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { registerAndLogin } from '../../bench/fixtures/load';
import { RawSyncClient, startInspectableRuntime, type Arrival } from '../../bench/fixtures/realm-sync-peers';

const REPO_ROOT = path.resolve(__dirname, '../..');
const SHORT = process.argv.includes('--short');
/** The victim's notes, and the history entries she makes on them (creates, then updates). */
const NOTES = SHORT ? 100 : 200;
const HISTORY = SHORT ? 600 : 2000;
const MEMORY_FILES = 60;
const STALL_UPLOADS = 400;
/** A realm timestamp (ms since 2015) far in the future: the attacker's updates win every conflict. */
const FUTURE = BigInt(Date.UTC(2100, 0, 1) - Date.UTC(2015, 0, 1));

function writeApp(dir: string): void {
  fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), dir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), JSON.stringify(value, null, 2));
  };
  write('sync/config.json', { type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: 'attackdb', is_recovery_mode_disabled: false, queryable_fields_names: ['owner_id'] });
  write('data_sources/mongodb-atlas/attackdb/Note/schema.json', {
    title: 'Note', bsonType: 'object', required: ['_id', 'owner_id', 'text'],
    properties: { _id: { bsonType: 'objectId' }, owner_id: { bsonType: 'string' }, text: { bsonType: 'string' } },
  });
  write('data_sources/mongodb-atlas/attackdb/Note/rules.json', {
    collection: 'Note', database: 'attackdb',
    roles: [{ name: 'owner', apply_when: {}, document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } }, read: true, write: true, insert: true, delete: true, search: true }],
  });
}

const noteId = (n: number) => ObjectId.createFromHexString(`65e0${n.toString(16).padStart(20, '0')}`);
const set = (id: ObjectId, field: string, value: string): Instruction => ({ type: 'Update', table: 'Note', object: { type: 'objectId', value: id }, field, path: [], value: { type: 'string', value }, isDefault: false, priorSize: 0 });

/** Resolves once the server answered the upload of client version 2: acknowledged, or refused (head `error`). */
function answered(client: RawSyncClient): Promise<Arrival> {
  return client.waitFor((a) => a.head[0] === 'download' && BigInt(a.head[6]!) >= 2n, 120_000).catch(() => ({ head: ['error'], hasBody: false, at: performance.now() }));
}

/** A new client file of `url`'s user (subscribed to its own notes) uploading the attack changeset based on version 0. */
async function attacker(url: string, ownerId: string): Promise<{ client: RawSyncClient; fire(): Promise<Arrival> }> {
  const client = await RawSyncClient.connect(url, { flexible: true });
  await client.bindFlexibleAndCatchUp({ Note: `owner_id == "${ownerId}"` });
  const instructions = Array.from({ length: NOTES }, (_, n) => set(noteId(n), 'text', `attacker ${n}`));
  return {
    client,
    fire() {
      const reply = answered(client);
      client.send({
        type: 'upload', session: 1, progressClientVersion: 2n, progressServerVersion: 0n, lockedServerVersion: 0n,
        changesets: [{ version: 2n, lastIntegratedRemoteVersion: 0n, originTimestamp: FUTURE, originFileIdent: 0n, instructions, bytes: encodeChangeset(instructions) }],
      });
      return reply;
    },
  };
}

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-merge-attacks-'));
  const appDir = path.join(root, 'app');
  writeApp(appDir);
  const runtime = await startInspectableRuntime(appDir, path.join(root, 'data'));
  const open: RawSyncClient[] = [];
  try {
    const origin = new URL(runtime.appUrl).origin;
    const appId = runtime.appUrl.slice(runtime.appUrl.lastIndexOf('/') + 1);
    const syncUrl = (token: string) => `${origin.replace('http', 'ws')}/api/client/v2.0/app/${appId}/realm-sync?baas_at=${token}`;
    const userId = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')).sub as string;
    const victim = await registerAndLogin(runtime.appUrl, 'victim@example.com', 'victim-Passw0rd');
    const mallory = await registerAndLogin(runtime.appUrl, 'mallory@example.com', 'mallory-Passw0rd');
    const innocent = await registerAndLogin(runtime.appUrl, 'innocent@example.com', 'innocent-Passw0rd');
    const victimId = userId(victim.access_token);

    // The victim's history: her notes, then updates of them in turn.
    const writer = await RawSyncClient.connect(syncUrl(victim.access_token), { flexible: true });
    open.push(writer);
    await writer.bindFlexibleAndCatchUp({ Note: `owner_id == "${victimId}"` });
    for (let i = 0; i < HISTORY; i++) {
      const n = i % NOTES;
      const instructions: Instruction[] = i < NOTES
        ? [{ type: 'CreateObject', table: 'Note', object: { type: 'objectId', value: noteId(n) } }, set(noteId(n), 'owner_id', victimId), set(noteId(n), 'text', `note ${n}`)]
        : [set(noteId(n), 'text', `note ${n}, edit ${i} ${'x'.repeat(200)}`)];
      await writer.upload(instructions).acknowledged;
    }

    // Memory: client files one after another, each gone once answered.
    const heap = () => runtime.evaluateAfterGc<number>('process.memoryUsage().heapUsed');
    const before = await heap();
    let refused = 0;
    for (let i = 0; i < MEMORY_FILES; i++) {
      const attack = await attacker(syncUrl(mallory.access_token), userId(mallory.access_token));
      const reply = await attack.fire();
      if (reply.head[0] === 'error') refused++;
      await attack.client.close();
    }
    const after = await heap();

    // Stall: every attack upload sent at once, then the innocent user's new client file.
    const attacks = [];
    for (let i = 0; i < STALL_UPLOADS; i++) {
      const attack = await attacker(syncUrl(mallory.access_token), userId(mallory.access_token));
      open.push(attack.client);
      attacks.push(attack);
    }
    const inFlight = attacks.map((a) => a.fire());
    const start = performance.now();
    const other = await RawSyncClient.connect(syncUrl(innocent.access_token), { flexible: true });
    open.push(other);
    await other.bindFlexibleAndCatchUp({ Note: `owner_id == "${userId(innocent.access_token)}"` });
    const own = new ObjectId();
    await other.upload([{ type: 'CreateObject', table: 'Note', object: { type: 'objectId', value: own } }, set(own, 'owner_id', userId(innocent.access_token)), set(own, 'text', 'innocent')]).acknowledged;
    const innocentMs = performance.now() - start;
    const stallStart = performance.now();
    await Promise.all(inFlight);
    const attacksMs = performance.now() - stallStart + innocentMs;

    // None of it reached the victim's notes.
    const texts: string[] = [];
    const graphql = await fetch(`${runtime.appUrl}/graphql`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${victim.access_token}` },
      body: JSON.stringify({ query: 'query { notes(limit: 1000) { text } }' }),
    });
    const body = await graphql.json() as { data?: { notes: { text: string }[] } };
    for (const note of body.data?.notes ?? []) texts.push(note.text);
    const overwritten = texts.filter((t) => t.startsWith('attacker')).length;
    console.log(JSON.stringify({
      history: HISTORY, notes: NOTES, memoryFiles: MEMORY_FILES, refused, retainedMiB: (after - before) / 1048576,
      stallUploads: STALL_UPLOADS, innocentMs, attacksMs, victimNotes: texts.length, overwritten,
    }));
  } finally {
    await Promise.all(open.map((c) => c.close()));
    await runtime.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
