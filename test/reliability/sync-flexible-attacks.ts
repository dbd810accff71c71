// The security part's attacks on flexible sync's read rules (issue 33, items 2, 3, 4, 5 and 8), against the
// shipped runtime (`node dist/cli.js serve`) on a flexible app where ada owns items and notes, bob is her
// read-only teammate (a role hiding `secret`, the embedded `sub.hidden` and the list `tags`) and mallory
// reads nothing of hers. Every attacker is a raw protocol client (sync-flexible-client.ts) that sees every
// DOWNLOAD decoded:
//   hidden:  bob syncing while ada changes hidden fields (uploads and HTTP writes, top-level, nested, a list),
//            bob resuming past the runtime's 1,000-entry window of written documents, bob resuming after a
//            restart: every hidden value ada wrote, searched for in all that bob was sent
//   oracle:  bob and mallory subscribe on the hidden `secret` (`secret >= "<prefix>"`) and upload a no-op
//            CreateObject of the known _id, searching the secret character by character; bob erases items of
//            the hidden list `tags` past and within its length; mallory updates a note that exists and one
//            that does not: the answers (errors, reasons, bootstraps, reverts) that differ, and what came out
//   reload:  rules.json edited to drop bob's role while his session stays open: the items he held erased,
//            and ada's next item never reaching him
//   like:    mallory's subscriptions of RQL LIKE patterns full of `?` (as long as a query may be), then of the
//            longest the bound allows with long literal LIKE and CONTAINS needles, over her own 90,000-character
//            note, then uploads of it, while an innocent HTTP request runs every 20 ms
//   roles:   a role whose apply_when reads the document (owner_id == %%user.id) and a read-only role: bob
//            sets owner_id to himself, then erases ada's ledger entry; a role whose field rules leave _id out
// Prints one JSON line (run.mjs reports it against the goals). Run: node --import tsx test/reliability/sync-flexible-attacks.ts [--short]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ObjectId } from 'bson';
import type { Instruction, Payload, PrimaryKey } from '../../runtime/sync/wire/instructions';
import type { ServerMessage } from '../../runtime/sync/wire/messages';
import { copyApp, graphql, registerAndLogIn, serveDist, type ServedDist } from '../dist/fixtures/serve';
import { FlexClient, messageText, type FileState } from '../helpers/realm-flexible-client';

const SHORT = process.argv.includes('--short');
/** Past the runtime's window of 1,000 history entries with their documents. */
const WINDOW_ENTRIES = 1_100;
const SEARCH_CHARS = SHORT ? 3 : 6;
const DB = 'attackdb';
const ITEM_RULES = `data_sources/mongodb-atlas/${DB}/Item/rules.json`;

const TEAMMATE = {
  name: 'teammate', apply_when: { '%%user.data.email': 'bob@example.com' },
  document_filters: { read: true, write: false }, read: false, write: false, insert: false, delete: false, search: true,
  fields: { owner_id: { read: true }, name: { read: true }, sub: { fields: { visible: { read: true } } } },
};
const OWNER = {
  name: 'owner', apply_when: {}, document_filters: { read: { owner_id: '%%user.id' }, write: { owner_id: '%%user.id' } },
  read: true, write: true, insert: true, delete: true, search: true,
};
const itemRules = (roles: unknown[]) => ({ collection: 'Item', database: DB, roles });

function writeApp(): string {
  const appDir = copyApp();
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(appDir, file)), { recursive: true });
    fs.writeFileSync(path.join(appDir, file), JSON.stringify(value, null, 2));
  };
  write('sync/config.json', { type: 'flexible', state: 'enabled', development_mode_enabled: false, service_name: 'mongodb-atlas', database_name: DB, is_recovery_mode_disabled: false, queryable_fields_names: ['owner_id', 'name', 'secret', 'text'] });
  const schema = (title: string, properties: Record<string, unknown>, required: string[]) => write(`data_sources/mongodb-atlas/${DB}/${title}/schema.json`, { title, bsonType: 'object', required: ['_id', ...required], properties: { _id: { bsonType: 'objectId' }, ...properties } });
  schema('Item', {
    owner_id: { bsonType: 'string' }, name: { bsonType: 'string' }, secret: { bsonType: 'string' }, tags: { bsonType: 'array', items: { bsonType: 'string' } },
    sub: { bsonType: 'object', title: 'Sub', properties: { visible: { bsonType: 'string' }, hidden: { bsonType: 'string' } } },
  }, ['owner_id', 'name']);
  schema('Note', { owner_id: { bsonType: 'string' }, text: { bsonType: 'string' }, secret: { bsonType: 'string' } }, ['owner_id', 'text']);
  schema('Ledger', { owner_id: { bsonType: 'string' }, amount: { bsonType: 'int' } }, ['owner_id']);
  schema('Badge', { label: { bsonType: 'string' }, code: { bsonType: 'string' } }, ['label']);
  write(ITEM_RULES, itemRules([TEAMMATE, OWNER]));
  write(`data_sources/mongodb-atlas/${DB}/Note/rules.json`, { collection: 'Note', database: DB, roles: [OWNER] });
  write(`data_sources/mongodb-atlas/${DB}/Ledger/rules.json`, {
    collection: 'Ledger', database: DB, roles: [
      { name: 'ownerByDocument', apply_when: { owner_id: '%%user.id' }, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true },
      { name: 'reader', apply_when: {}, document_filters: { read: true, write: false }, read: true, write: false, insert: false, delete: false, search: true },
    ],
  });
  write(`data_sources/mongodb-atlas/${DB}/Badge/rules.json`, {
    collection: 'Badge', database: DB, roles: [
      { name: 'admin', apply_when: { '%%user.data.email': 'ada@example.com' }, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true },
      { name: 'labels', apply_when: {}, document_filters: { read: true, write: false }, read: false, write: false, insert: false, delete: false, search: true, fields: { label: { read: true } } },
    ],
  });
  return appDir;
}

const oidKey = (id: ObjectId): PrimaryKey => ({ type: 'objectId', value: id });
const str = (value: string): Payload => ({ type: 'string', value });
const set = (table: string, id: ObjectId, field: string, value: Payload, pathTo: (string | number)[] = []): Instruction => ({ type: 'Update', table, object: oidKey(id), field, path: pathTo, value, isDefault: false, priorSize: 0 });
const create = (table: string, id: ObjectId): Instruction => ({ type: 'CreateObject', table, object: oidKey(id) });
/** Every hidden value this script writes carries one of these marks; none may reach bob or mallory. */
const HIDDEN_MARK = /(?:SECRET|HIDDEN|TAGHID|CODEHID)-[A-Za-z0-9]+/g;
const leaks = (text: string) => [...new Set([...text.matchAll(HIDDEN_MARK)].map((m) => m[0]))];

/** An answer with what identifies it (ids, versions, timestamps) taken out, so answers can be compared. */
function normalized(messages: ServerMessage[]): string {
  return messages.filter((m) => m.type !== 'mark').map((m) => {
    if (m.type === 'download') return { download: m.changesets.map((c) => c.instructions.map((i) => ({ ...i, object: undefined, value: 'value' in i ? i.value : undefined }))) };
    if (m.type === 'json_error') return { code: m.errorCode, action: m.body.action, reasons: (m.body.rejectedUpdates as { reason: string }[] | undefined)?.map((u) => u.reason) };
    return { type: m.type, code: 'errorCode' in m ? m.errorCode : undefined, message: 'message' in m ? m.message : undefined };
  }).map(messageText).join('\n').replace(/[0-9a-f]{24}/g, 'ID').replace(/"(?:version|serverVersion)":"?\d+"?/g, '');
}

async function main(): Promise<void> {
  const appDir = writeApp();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-flexible-attacks-'));
  let served: ServedDist = await serveDist({ appDir, dataDir, args: ['--log-level', 'warn'] });
  const open: FlexClient[] = [];
  const result: Record<string, unknown> = {};
  try {
    const users = {
      ada: await registerAndLogIn(served.app, 'ada@example.com', 'ada-Passw0rd'),
      bob: await registerAndLogIn(served.app, 'bob@example.com', 'bob-Passw0rd'),
      mallory: await registerAndLogIn(served.app, 'mallory@example.com', 'mallory-Passw0rd'),
    };
    const adaId = users.ada.user_id;
    const connect = async (who: keyof typeof users) => {
      const client = await FlexClient.connect(`${served.url.replace('http', 'ws')}/api/client/v2.0/app/${served.appId}/realm-sync?baas_at=${users[who].access_token}`);
      open.push(client);
      return client;
    };
    const gql = async (who: keyof typeof users, query: string, variables: Record<string, unknown> = {}) => {
      const { status, body } = await graphql(`${served.app}/graphql`, users[who].access_token, query, variables);
      if (status !== 200 || body.errors) throw new Error(`GraphQL ${status}: ${JSON.stringify(body.errors ?? body)}`);
      return body.data as Record<string, unknown>;
    };
    const adaQueries = { Item: `owner_id == "${adaId}"`, Note: `owner_id == "${adaId}"` };

    // ---- hidden fields: steady state, past the window, after a restart
    const item = new ObjectId();
    let ada = await connect('ada');
    await ada.bindNew(adaQueries);
    await ada.upload([[
      create('Item', item), set('Item', item, 'owner_id', str(adaId)), set('Item', item, 'name', str('name-0')), set('Item', item, 'secret', str('SECRET-a0')),
      set('Item', item, 'sub', { type: 'objectValue' }), set('Item', item, 'sub', str('visible-0'), ['visible']), set('Item', item, 'sub', str('HIDDEN-a0'), ['hidden']),
      ...['TAGHID-a0', 'TAGHID-a1', 'TAGHID-a2'].map((tag, i): Instruction => ({ type: 'ArrayInsert', table: 'Item', object: oidKey(item), field: 'tags', path: [i], value: str(tag), priorSize: i })),
    ]]);
    let bob = await connect('bob');
    await bob.bindNew({ Item: 'TRUEPREDICATE' });
    const waitForName = (client: FlexClient, name: string) => client.waitFor((m) => m.type === 'download' && messageText(m.changesets).includes(`"${name}"`), 0, 60_000);
    const steady = 12;
    for (let i = 1; i <= steady; i++) {
      const k = `s${i}`;
      if (i % 3 === 0) {
        await gql('ada', 'mutation($id: ObjectId!, $s: ItemUpdateInput!) { updateOneItem(query: {_id: $id}, set: $s) { _id } }', { id: item.toHexString(), s: { name: `name-${k}`, secret: `SECRET-${k}`, sub: { visible: `visible-${k}`, hidden: `HIDDEN-${k}` } } });
      } else {
        await ada.upload([[
          set('Item', item, 'name', str(`name-${k}`)), set('Item', item, 'secret', str(`SECRET-${k}`)),
          ...(i % 3 === 1 ? [set('Item', item, 'sub', str(`HIDDEN-${k}`), ['hidden'])] : [set('Item', item, 'sub', { type: 'objectValue' }), set('Item', item, 'sub', str(`visible-${k}`), ['visible']), set('Item', item, 'sub', str(`HIDDEN-${k}`), ['hidden'])]),
          { type: 'ArrayInsert', table: 'Item', object: oidKey(item), field: 'tags', path: [0], value: str(`TAGHID-${k}`), priorSize: 3 + i - 1 },
        ]]);
      }
    }
    await waitForName(bob, `name-s${steady}`);
    await bob.mark();
    const steadyLeaks = leaks(bob.downloadedText());
    let bobState: FileState = { ...bob.state };
    await bob.close();

    // Past the window: 1,100 history entries while bob is away, each with hidden values.
    await ada.upload(Array.from({ length: WINDOW_ENTRIES }, (_, i) => [set('Item', item, 'name', str(`name-w${i}`)), set('Item', item, 'secret', str(`SECRET-w${i}`)), set('Item', item, 'sub', str(`HIDDEN-w${i}`), ['hidden'])]));
    bob = await connect('bob');
    await bob.resume(bobState);
    await waitForName(bob, `name-w${WINDOW_ENTRIES - 1}`);
    const windowText = bob.downloadedText();
    const windowLeaks = leaks(windowText);
    bobState = { ...bob.state };
    await bob.close();

    // After a restart: changes while bob is away, then the runtime stopped and started on the same data.
    for (let i = 0; i < 4; i++) {
      await ada.upload([[set('Item', item, 'name', str(`name-r${i}`)), set('Item', item, 'secret', str(`SECRET-r${i}`)), set('Item', item, 'sub', str(`HIDDEN-r${i}`), ['hidden'])]]);
    }
    await gql('ada', 'mutation($id: ObjectId!) { updateOneItem(query: {_id: $id}, set: {name: "name-r9", secret: "SECRET-r9"}) { _id } }', { id: item.toHexString() });
    await ada.close();
    await served.close();
    served = await serveDist({ appDir, dataDir, args: ['--log-level', 'warn'] });
    bob = await connect('bob');
    await bob.resume(bobState);
    await waitForName(bob, 'name-r9');
    const restartLeaks = leaks(bob.downloadedText());
    result.hidden = {
      steadyChanges: steady, steadyLeaks, windowEntries: WINDOW_ENTRIES, windowReceivedLast: windowText.includes(`name-w${WINDOW_ENTRIES - 1}`), windowLeaks, restartLeaks,
    };
    await bob.close();

    // ---- the oracle: a subscription on a hidden value, then a no-op write of the known _id
    ada = await connect('ada');
    await ada.bindNew(adaQueries);
    const SECRET = SHORT ? 'Kq7' : 'Kq7zP2';
    await gql('ada', 'mutation($id: ObjectId!, $s: String!) { updateOneItem(query: {_id: $id}, set: {secret: $s}) { _id } }', { id: item.toHexString(), s: SECRET });
    const note = new ObjectId();
    await ada.upload([[create('Note', note), set('Note', note, 'owner_id', str(adaId)), set('Note', note, 'text', str('ada private')), set('Note', note, 'secret', str(SECRET))]]);
    /** One probe: the subscription's bootstrap and the answer to a CreateObject of the known id. */
    const probe = async (client: FlexClient, table: string, id: ObjectId, prefix: string): Promise<string> => {
      // From a view holding nothing, so that each probe's bootstrap shows only what its own query selects.
      await client.subscribe({ [table]: 'owner_id == "nobody"' });
      const from = client.received.length;
      const queryError = await client.subscribe({ [table]: `secret >= "${prefix.replace(/[\\"]/g, (c) => `\\${c}`)}"` });
      const answer = await client.upload([[create(table, id)]]);
      return normalized([...client.received.slice(from, client.received.length - answer.length), ...answer]) + (queryError ?? '');
    };
    /** The attacker's search: each character by bisection on "the answer is the one `secret >= \"\"` gets". */
    const search = async (client: FlexClient, table: string, id: ObjectId) => {
      const yes = await probe(client, table, id, '');
      const no = await probe(client, table, id, '\u{10FFFF}');
      const answers = new Set([yes, no]);
      let found = '';
      let probes = 2;
      for (let c = 0; c < SEARCH_CHARS; c++) {
        let lo = 0x20, hi = 0x7e;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          const answer = await probe(client, table, id, found + String.fromCharCode(mid));
          probes++;
          answers.add(answer);
          if (answer === yes) lo = mid; else hi = mid - 1;
        }
        found += String.fromCharCode(lo);
      }
      let recovered = 0;
      while (recovered < SECRET.length && found[recovered] === SECRET[recovered]) recovered++;
      return { probes, distinctAnswers: answers.size, recovered };
    };
    const oracleStart = performance.now();
    bob = await connect('bob');
    await bob.bindNew({ Item: 'TRUEPREDICATE' });
    const readable = await search(bob, 'Item', item);
    const mallory = await connect('mallory');
    await mallory.bindNew({ Note: 'TRUEPREDICATE' });
    const unreadable = await search(mallory, 'Note', note);
    // The hidden list's length: erasing and setting items within it and past it.
    await bob.subscribe({ Item: 'TRUEPREDICATE' });
    const listAnswers = new Set<string>();
    for (let i = 0; i < 8; i++) {
      listAnswers.add(normalized(await bob.upload([[{ type: 'ArrayErase', table: 'Item', object: oidKey(item), field: 'tags', path: [i * 4], priorSize: i * 4 + 1 }]])));
      listAnswers.add(normalized(await bob.upload([[{ type: 'Update', table: 'Item', object: oidKey(item), field: 'tags', path: [i * 4], value: str('x'), isDefault: false, priorSize: i * 4 + 1 }]])));
      listAnswers.add(normalized(await bob.upload([[{ type: 'ArrayInsert', table: 'Item', object: oidKey(item), field: 'tags', path: [i * 4], value: str('x'), priorSize: i * 4 }]])));
    }
    // Whether an _id exists: ada's note (unreadable to mallory) and an id no document has.
    await mallory.subscribe({ Note: `owner_id == "${users.mallory.user_id}"` });
    const existence = new Set<string>();
    for (const id of [note, new ObjectId()]) existence.add(normalized(await mallory.upload([[set('Note', id, 'text', str('probe'))]])));
    existence.add(normalized(await mallory.upload([[{ type: 'EraseObject', table: 'Note', object: oidKey(note) }]])).replace('EraseObject', 'X'));
    // What the reverts of all those refused writes brought back.
    const revertText = bob.downloadedText() + mallory.downloadedText();
    const revertLeaks = [...leaks(revertText), ...(revertText.includes(`"${SECRET}"`) ? [SECRET] : [])];
    result.oracle = { secretLength: SECRET.length, readable, unreadable, listDistinct: listAnswers.size, listProbes: 24, revertLeaks, existenceDistinct: new Set([...existence].map((a) => a.replace('X', 'EraseObject'))).size, ms: performance.now() - oracleStart };
    await bob.close();

    // ---- the LIKE bomb: patterns full of `?` over a 90,000-character value, an innocent request beside it
    const bomb = new ObjectId();
    const longText = 'a'.repeat(90_000);
    await mallory.upload([[create('Note', bomb), set('Note', bomb, 'owner_id', str(users.mallory.user_id)), set('Note', bomb, 'text', str(longText))]]);
    // Patterns of `?` as long as a query may be; then, as that is refused, the most the bound lets through:
    // `?` parts at the bound, long literal parts (`*a…ba…*`) and CONTAINS of the same needle.
    const singles = Array.from({ length: 8 }, () => `text LIKE "*${'a?'.repeat(14_990)}b*"`).join(' OR ');
    const needle = `${'a'.repeat(14_000)}b${'a'.repeat(14_000)}`;
    const patterns = [`text LIKE "*${'a?'.repeat(127)}b*"`, ...Array.from({ length: 4 }, () => `text LIKE "*${needle}*"`), ...Array.from({ length: 4 }, () => `text CONTAINS "${needle}"`)].join(' OR ');
    let innocentRunning = true;
    const innocentMs: number[] = [];
    const innocent = (async () => {
      while (innocentRunning) {
        const start = performance.now();
        const res = await fetch(`${served.app}/location`);
        await res.text();
        innocentMs.push(performance.now() - start);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const bombStart = performance.now();
    const likeError = await mallory.subscribe({ Note: `owner_id == "${users.mallory.user_id}" AND (${singles})` });
    const boundedError = await mallory.subscribe({ Note: `owner_id == "${users.mallory.user_id}" AND (${patterns})` });
    for (let i = 0; i < 10; i++) await mallory.upload([[set('Note', bomb, 'text', str(`${longText}${i}`))]]);
    const bombMs = performance.now() - bombStart;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 - bombMs)));
    innocentRunning = false;
    await innocent;
    innocentMs.sort((a, b) => a - b);
    result.like = { queryChars: singles.length, boundedChars: patterns.length, textChars: longText.length, uploads: 10, queryError: likeError ?? null, boundedError: boundedError ?? null, bombMs, innocentRequests: innocentMs.length, innocentMaxMs: innocentMs.at(-1) ?? 0, innocentP50Ms: innocentMs[Math.floor(innocentMs.length / 2)] ?? 0 };
    await mallory.close();

    // ---- roles sync cannot enforce
    const ledger = new ObjectId();
    await gql('ada', 'mutation($id: ObjectId!, $o: String!) { insertOneLedger(data: {_id: $id, owner_id: $o, amount: 100}) { _id } }', { id: ledger.toHexString(), o: adaId });
    bob = await connect('bob');
    await bob.bindNew({ Ledger: 'TRUEPREDICATE' });
    const takeover = await bob.upload([[set('Ledger', ledger, 'owner_id', str(users.bob.user_id))]]);
    const erase = await bob.upload([[{ type: 'EraseObject', table: 'Ledger', object: oidKey(ledger) }]]);
    const refusals = [...takeover, ...erase].filter((m) => m.type === 'json_error' && m.errorCode === 231).length;
    const stored = (await gql('ada', 'query($id: ObjectId!) { ledger(query: {_id: $id}) { owner_id amount } }', { id: ledger.toHexString() })).ledger as { owner_id: string; amount: number } | null;
    await bob.close();
    const badges = Array.from({ length: 3 }, () => new ObjectId());
    for (const [i, id] of badges.entries()) await gql('ada', 'mutation($id: ObjectId!, $l: String!, $c: String!) { insertOneBadge(data: {_id: $id, label: $l, code: $c}) { _id } }', { id: id.toHexString(), l: `label-${i}`, c: `CODEHID-${i}` });
    bob = await connect('bob');
    await bob.bindNew({ Badge: 'TRUEPREDICATE' });
    const created = bob.received.flatMap((m) => (m.type === 'download' ? m.changesets.flatMap((c) => c.instructions.filter((i) => i.type === 'CreateObject' && i.table === 'Badge')) : [])) as { object: PrimaryKey }[];
    const keys = created.map((c) => messageText(c.object));
    result.roles = {
      refusals, ledgerOwner: stored?.owner_id === adaId ? 'ada' : stored ? 'changed' : 'gone', ledgerAmount: stored?.amount ?? null,
      badges: badges.length, badgeObjects: created.length, badgeDistinct: new Set(keys).size, badgeNullKeys: created.filter((c) => c.object.type === 'null').length, badgeLeaks: leaks(bob.downloadedText()),
    };
    await bob.close();

    // ---- a live session when rules.json drops its role (a teammate who may also rename items, then none)
    const WRITER = { ...TEAMMATE, name: 'writer', document_filters: { read: true, write: true }, fields: { ...TEAMMATE.fields, name: { read: true, write: true } } };
    fs.writeFileSync(path.join(appDir, ITEM_RULES), JSON.stringify(itemRules([WRITER, OWNER]), null, 2));
    bob = await connect('bob');
    await bob.bindNew({ Item: 'TRUEPREDICATE' });
    const rename = async (name: string) => !(await bob.upload([[set('Item', item, 'name', str(name))]])).some((m) => m.type === 'json_error' || m.type === 'error');
    let renamedBefore = false;
    for (const deadline = Date.now() + 15_000; !renamedBefore && Date.now() < deadline;) {
      renamedBefore = await rename('renamed by bob');
      if (!renamedBefore) await new Promise((resolve) => setTimeout(resolve, 300));
    }
    await bob.mark();
    const heldBefore = bob.downloadedText().includes(item.toHexString());
    const editAt = bob.received.length;
    const edited = performance.now();
    fs.writeFileSync(path.join(appDir, ITEM_RULES), JSON.stringify(itemRules([OWNER]), null, 2));
    const erased = await bob.waitFor((m) => m.type === 'download' && m.changesets.some((c) => c.instructions.some((i) => i.type === 'EraseObject' && i.table === 'Item')), editAt, 20_000).then(() => performance.now() - edited, () => undefined);
    const renamedAfter = await rename('bob after the edit');
    const later = new ObjectId();
    ada = await connect('ada');
    await ada.bindNew(adaQueries);
    await ada.upload([[create('Item', later), set('Item', later, 'owner_id', str(adaId)), set('Item', later, 'name', str('after the edit'))]]);
    await gql('ada', 'mutation($id: ObjectId!) { updateOneItem(query: {_id: $id}, set: {name: "renamed after the edit"}) { _id } }', { id: item.toHexString() });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await bob.mark();
    const afterEdit = bob.downloadedText(editAt);
    const itemNow = (await gql('ada', 'query($id: ObjectId!) { item(query: {_id: $id}) { name } }', { id: item.toHexString() })).item as { name: string } | null;
    result.reload = {
      renamedBefore, heldBefore, erasedMs: erased ?? null, renamedAfter, nameAfter: itemNow?.name ?? null,
      laterReceived: afterEdit.includes(later.toHexString()) || afterEdit.includes('after the edit'),
    };
    console.log(JSON.stringify(result));
  } catch (error) {
    console.error(`runtime log: ${served.stderr().slice(-3000)}`);
    throw error;
  } finally {
    await Promise.all(open.map((c) => c.close()));
    await served.close();
    fs.rmSync(appDir, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
