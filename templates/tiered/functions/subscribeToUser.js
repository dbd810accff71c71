// Subscribes the calling user to the items of the author with this email (restricted feed).
exports = async function subscribeToUser(email) {
  const users = context.services.get('mongodb-atlas').db('Item').collection('User');
  const author = await users.findOne({ email });
  if (!author) throw new Error(`no user with email ${email}`);
  await users.updateOne({ _id: context.user.id }, { $addToSet: { subscribedTo: author._id } });
  return author._id;
};
