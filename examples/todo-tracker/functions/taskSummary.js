// Custom query resolver `Query.taskSummary`: counts the tasks of one partition (a user's own tasks or a
// project's tasks) that are in a given status. Runs as the calling user, so collection rules decide which
// tasks are counted.
exports = async function ({ owner, status }) {
  const tasks = context.services.get("mongodb-atlas").db("tracker").collection("Task");
  const [group] = await tasks
    .aggregate([
      { $match: { _partition: owner, status } },
      { $group: { _id: null, count: { $sum: 1 } } },
    ])
    .toArray();
  return { owner, status, count: group ? group.count : 0 };
};
