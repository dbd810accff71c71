// Custom mutation resolver `Mutation.renameTask`: renames one task and returns the updated Task document.
exports = async function ({ taskId, name }) {
  const newName = name.trim();
  if (newName.length === 0) {
    throw new Error("a task name cannot be empty");
  }
  const tasks = context.services.get("mongodb-atlas").db("tracker").collection("Task");
  const renamed = await tasks.findOneAndUpdate(
    { _id: taskId },
    { $set: { name: newName } },
    { returnNewDocument: true }
  );
  if (renamed === null) {
    throw new Error(`no task with id ${taskId} that you may edit`);
  }
  return renamed;
};
