// Deletes the calling user's items, so the demo can start over.
exports = async function deleteAllItems() {
  const items = context.services.get('mongodb-atlas').db('Item').collection('Item');
  const { deletedCount } = await items.deleteMany({ owner_id: context.user.id });
  return deletedCount;
};
