// The "restricted news feed" permissions strategy: a user reads the items of the authors they
// subscribed to (their custom user data's subscribedTo, filled by the subscribeToUser function on a
// profile the onUserCreated trigger created) and writes only their own.
import { app, itemsOf, logIn, show } from './shared.js';

const author = await logIn('author@example.com');
const reader = await logIn('reader@example.com');
const stranger = await logIn('stranger@example.com');

const authorItems = await itemsOf(author, 'Item');
await authorItems.insert({ owner_id: author.id, body: 'First post' });
show('The author sees their own posts:', await authorItems.list());

await reader.functions.subscribeToUser('author@example.com');
await reader.refreshCustomData();
console.log(`\nThe reader subscribed to: ${JSON.stringify(reader.customData.subscribedTo)}`);
show('The reader sees the author\'s posts:', await (await itemsOf(reader, 'Item')).list());
show('A user who did not subscribe sees nothing:', await (await itemsOf(stranger, 'Item')).list());

await author.functions.deleteAllItems();
for (const user of [author, reader, stranger]) await user.logOut();
console.log(`\nDone (app ${app.id}).`);
