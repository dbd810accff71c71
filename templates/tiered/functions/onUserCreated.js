// Creation trigger: every new user gets a profile in Item.User, which is their custom user data.
exports = async function onUserCreated(authEvent) {
  const { user } = authEvent;
  const users = context.services.get('mongodb-atlas').db('Item').collection('User');
  await users.insertOne({ _id: user.id, email: user.data.email ?? '', subscribedTo: [] });
};
