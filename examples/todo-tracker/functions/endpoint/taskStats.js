// HTTPS endpoint GET /taskStats?key=<statsKey>: task counts per status across the whole app, for a status
// dashboard. The function runs as system, so the caller must present the shared key held in a secret value.
exports = async function ({ query }, response) {
  if (query.key !== context.values.get("statsKey")) {
    response.setStatusCode(401);
    response.setHeader("Content-Type", "application/json");
    response.setBody(JSON.stringify({ error: "a valid key query parameter is required" }));
    return;
  }
  const tasks = context.services.get("mongodb-atlas").db("tracker").collection("Task");
  const groups = await tasks.aggregate([{ $group: { _id: "$status", count: { $sum: 1 } } }]).toArray();
  const byStatus = {};
  for (const group of groups) {
    byStatus[group._id] = group.count;
  }
  response.setStatusCode(200);
  response.setHeader("Content-Type", "application/json");
  response.setBody(JSON.stringify({ app: context.values.get("appDisplayName"), byStatus }));
};
