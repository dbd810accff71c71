// Computed field `Task.history`: the parent Task arrives as `source`. The first entry comes from the
// creation time encoded in the ObjectId; later entries are the changes recorded by the logTaskChange trigger.
exports = async function (source) {
  const events = context.services.get("mongodb-atlas").db("tracker").collection("TaskEvent");
  const recorded = await events.find({ taskId: source._id }).toArray();
  recorded.sort((a, b) => a.at - b.at);
  return [
    { at: source._id.getTimestamp().toISOString(), note: `created "${source.name}"` },
    ...recorded.map((event) => ({ at: event.at.toISOString(), note: event.note })),
  ];
};
