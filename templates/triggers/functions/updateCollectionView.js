// Database trigger: copies every new document of db.items into the view collection db.items_copy,
// stamped with when it was copied.
exports = async function updateCollectionView(changeEvent) {
  const view = context.services.get('mongodb-atlas').db('db').collection('items_copy');
  const { fullDocument } = changeEvent;
  await view.insertOne({ ...fullDocument, date_created: new Date() });
};
