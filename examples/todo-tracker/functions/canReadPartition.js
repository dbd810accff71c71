// Sync read permission helper (called from sync/config.json through %function). Grants read access to a
// project partition as soon as the caller is listed in the project's memberIds, even before their custom
// user data (and so %%user.custom_data.projectIds) has been refreshed.
exports = async function (partition) {
  if (typeof partition !== "string" || partition.length === 0) {
    return false;
  }
  const db = context.services.get("mongodb-atlas").db("tracker");
  const member = await db.collection("User").findOne({ userId: context.user.id }, { _id: 1 });
  if (member === null) {
    return false;
  }
  const project = await db.collection("Project").findOne({ _partition: partition, memberIds: member._id }, { _id: 1 });
  return project !== null;
};
