// Puts a user in a team, as a member or as the team's admin (tiered privileges).
exports = async function joinTeam(userId, teamName, isAdmin = false) {
  const users = context.services.get('mongodb-atlas').db('Item').collection('User');
  return users.updateOne({ _id: userId }, { $set: { team: teamName, isTeamAdmin: isAdmin } });
};
