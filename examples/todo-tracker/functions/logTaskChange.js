// Database trigger on tracker.Task updates and replacements: records what changed so Task.history can show it.
exports = async function (changeEvent) {
  const { operationType, documentKey, updateDescription } = changeEvent;
  let note = "replaced";
  if (operationType === "update") {
    const changedFields = [
      ...Object.keys(updateDescription.updatedFields || {}),
      ...(updateDescription.removedFields || []),
    ];
    note = `changed ${changedFields.join(", ")}`;
  }
  const events = context.services.get("mongodb-atlas").db("tracker").collection("TaskEvent");
  await events.insertOne({ taskId: documentKey._id, at: new Date(), note });
};
