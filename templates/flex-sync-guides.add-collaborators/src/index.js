// The "add collaborators" permissions strategy: an item is readable and writable by its owner and by
// the users listed in its collaborators array.
import { app, itemsOf, logIn, show } from './shared.js';

const alice = await logIn('alice@example.com');
const bob = await logIn('bob@example.com');
const carol = await logIn('carol@example.com');

const aliceItems = await itemsOf(alice, 'add_collaborators');
await aliceItems.insert({ owner_id: alice.id, name: 'Plan the trip (shared with Bob)', collaborators: [bob.id] });
await aliceItems.insert({ owner_id: alice.id, name: 'Alice only', collaborators: [] });
show('Alice sees her items:', await aliceItems.list());

show('Bob sees the item he collaborates on:', await (await itemsOf(bob, 'add_collaborators')).list());
show('Carol sees nothing:', await (await itemsOf(carol, 'add_collaborators')).list());

for (const user of [alice, bob, carol]) await user.logOut();
console.log(`\nDone (app ${app.id}).`);
