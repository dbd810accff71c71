// Custom user data creation function (auth/custom_user_data.json): every new user gets a User document,
// which the rules and sync permissions read back as %%user.custom_data. It has no partition key on purpose:
// sync writes bypass collection rules, so a synced user document would let its owner rewrite isAdmin
// and projectIds (asl check warns about it: sync/writable-custom-user-data).
exports = async function (user) {
  const profile = user.data || {};
  const userDocument = {
    userId: user.id,
    name: profile.name || profile.email || `user ${user.id}`,
    projectIds: [],
    isAdmin: false,
  };
  if (profile.email) {
    userDocument.email = profile.email;
  }
  const users = context.services.get("mongodb-atlas").db("tracker").collection("User");
  await users.insertOne(userDocument);
};
