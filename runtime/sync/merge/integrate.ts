// The server's side of integrating one uploaded changeset, as realm-core's server history does it: the
// upload is merged with the changesets it had not seen, each in the reciprocal form kept for the uploading
// client file, and the forms the merge changed are kept for that client's next upload. The engine
// (through `rebase.ts`, which chooses what the upload meets) and the property test's simulated server both run this step.
import { isSchemaInstruction } from '../wire/instructions';
import { mergeChangesets, type TimedChangeset, type TransformError } from './transform';

/** A changeset the upload had not seen, as the uploading client file's changesets meet it. */
export interface ConcurrentChangeset {
  /** Its reciprocal form for the uploading client file (the history entry itself while no merge changed it). */
  changeset: TimedChangeset;
  /** Told the new form when the merge changed it (for the client's later uploads). */
  keep(form: TimedChangeset): void;
}

export type IntegrationResult = { ok: true; changeset: TimedChangeset } | { ok: false; error: TransformError };

/**
 * The upload as the server must apply it and append to its history. `concurrent` is in the order the
 * server applied them. Schema instructions are transformed by schema instructions only and leave the
 * others as they are, so a schema-only upload (a new client's first) meets the schema instructions alone
 * and changes no form. On an error no form is kept.
 */
export function integrateUpload(concurrent: readonly ConcurrentChangeset[], upload: TimedChangeset): IntegrationResult {
  if (concurrent.length === 0) return { ok: true, changeset: upload };
  const schemaOnly = upload.instructions.every(isSchemaInstruction);
  const forms = concurrent.map((c) => (schemaOnly ? { ...c.changeset, instructions: c.changeset.instructions.filter(isSchemaInstruction) } : c.changeset));
  const merged = mergeChangesets(forms, [upload]);
  if (!merged.ok) return merged;
  // After a schema-only upload the forms differ from the changesets at most by schema instructions the
  // upload also declared, which no later upload of this client declares again.
  if (!schemaOnly) {
    concurrent.forEach((c, i) => {
      // A changeset the merge left as it was needs no form of its own (a base-0 upload would otherwise
      // keep a copy of the whole history for its client file).
      if (merged.ours[i] !== forms[i]) c.keep(merged.ours[i]!);
    });
  }
  return { ok: true, changeset: merged.theirs[0]! };
}
