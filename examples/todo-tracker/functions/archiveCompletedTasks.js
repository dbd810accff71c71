// Custom mutation resolver `Mutation.archiveCompletedTasks` (no payload, so GraphQL answers DefaultPayload):
// marks every completed task in the caller's own partition and project partitions as archived.
exports = async function () {
  const user = context.user;
  const projectIds = (user.custom_data && user.custom_data.projectIds) || [];
  const tasks = context.services.get("mongodb-atlas").db("tracker").collection("Task");
  const { modifiedCount } = await tasks.updateMany(
    { _partition: { $in: [user.id, ...projectIds] }, isComplete: true, status: { $ne: "archived" } },
    { $set: { status: "archived" } }
  );
  return { archived: modifiedCount };
};
