// The "tiered privileges" permissions strategy: team members read their team's items and write their
// own; a team admin (custom user data isTeamAdmin) reads and writes every item of the team.
import { app, itemsOf, logIn, show } from './shared.js';

const admin = await logIn('admin@example.com');
const member = await logIn('member@example.com');
const outsider = await logIn('outsider@example.com');

await admin.functions.joinTeam(admin.id, 'blue', true);
await admin.functions.joinTeam(member.id, 'blue', false);
await admin.functions.joinTeam(outsider.id, 'red', false);
for (const user of [admin, member, outsider]) await user.refreshCustomData();

const memberItems = await itemsOf(member, 'Item');
await memberItems.insert({ owner_id: member.id, body: 'Member\'s report', team: 'blue' });
show('The member sees the team\'s items:', await memberItems.list());
show('The team admin sees them too:', await (await itemsOf(admin, 'Item')).list());
show('Someone of another team sees nothing:', await (await itemsOf(outsider, 'Item')).list());

await member.functions.deleteAllItems();
for (const user of [admin, member, outsider]) await user.logOut();
console.log(`\nDone (app ${app.id}).`);
