// Shared by the demo's steps: the app from src/realm.json, users that register on first use, and a
// printer. With --sync the items are opened through Device Sync; otherwise through the client API.
import fs from 'node:fs';
import Realm from 'realm';

const config = JSON.parse(fs.readFileSync(new URL('./realm.json', import.meta.url), 'utf8'));
if (!config.appId) throw new Error('src/realm.json has no appId: put your app id there (see README.md)');

export const useSync = process.argv.includes('--sync');
export const app = new Realm.App({ id: config.appId, baseUrl: config.baseUrl });

/** Logs a demo user in, registering them the first time. */
export async function logIn(email, password = 'demo-password') {
  try {
    await app.emailPasswordAuth.registerUser({ email, password });
  } catch (e) {
    if (!/name already in use|already exists/i.test(String(e.message))) throw e;
  }
  return app.logIn(Realm.Credentials.emailPassword(email, password));
}

export const ItemSchema = {
  name: 'Item',
  primaryKey: '_id',
  properties: { _id: 'objectId', owner_id: 'string', body: 'string?' },
};

/**
 * The user's view of the items: a synced realm subscribed to `query` (with --sync), or the same
 * collection through the client API, where the backend's rules filter what the user may see.
 */
export async function itemsOf(user, database) {
  if (useSync) {
    const realm = await Realm.open({ schema: [ItemSchema], sync: { user, flexible: true } });
    await realm.subscriptions.update((subs) => subs.add(realm.objects('Item')));
    return {
      list: () => [...realm.objects('Item')].map((i) => i.toJSON()),
      insert: (doc) => realm.write(() => realm.create('Item', { _id: new Realm.BSON.ObjectId(), ...doc })),
      close: () => realm.close(),
    };
  }
  const items = user.mongoClient('mongodb-atlas').db(database).collection('Item');
  return { list: () => items.find({}), insert: (doc) => items.insertOne(doc), close: () => undefined };
}

export function show(title, items) {
  console.log(`\n${title}`);
  for (const item of items) console.log(`  - ${JSON.stringify(item)}`);
  if (items.length === 0) console.log('  (none)');
}
