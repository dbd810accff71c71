// The rebase the sync server runs on each uploaded changeset: which of the server's changesets the upload
// meets (those after its base version, from other client files, that change the schema or an object the
// upload touches), in which form (the reciprocal one kept for the uploading client file), and the forms
// the merge changed kept for that client's next upload. The engine (`../sessions/engine.ts`) and the
// property test's server (`test/helpers/sync-merge-sim.ts`) both call `ReciprocalHistory.rebase`.
import { integrateUpload, type ConcurrentChangeset, type IntegrationResult } from './integrate';
import type { TimedChangeset } from './transform';

/** A changeset's instructions by the object they touch (any key naming table and primary key), and whether it changes the schema. */
export interface ChangeIndex {
  objects: ReadonlyMap<string, unknown>;
  schemaChanges: boolean;
}

/** A server history entry after the upload's base version. */
export interface RebaseEntry {
  version: number;
  originFileIdent: number;
  /** Its changeset as stored (parsed when the rebase meets it). */
  changeset(): TimedChangeset;
  index(): ChangeIndex;
}

/**
 * A changeset the client integrated between history entries (flexible sync's bootstraps, which are no
 * history entry): met after the entries up to `version`, in its own reciprocal form.
 */
export interface InterleavedChangeset extends ConcurrentChangeset {
  version: number;
}

/** Whether two changesets can meet under realm's merge rules: schema against schema, an object against the same object. */
export function meets(entry: ChangeIndex, upload: ChangeIndex): boolean {
  if (entry.schemaChanges) return true;
  for (const key of upload.objects.keys()) if (entry.objects.has(key)) return true;
  return false;
}

/** Per client file, the reciprocal forms of the server's changesets (by version) as that client's uploads transformed them. */
export class ReciprocalHistory {
  private readonly forms = new Map<number, Map<number, TimedChangeset>>();

  /**
   * The upload of client file `client`, made on `baseVersion`, rebased onto `unseen` (the server's entries
   * after `baseVersion`, in version order) and `interleaved`: the changeset to apply and append. Entries
   * of the client's own file and those the upload cannot meet are passed by (so a changeset based on
   * version 0 costs a look at each entry, not a merge with the whole history).
   */
  rebase(client: number, baseVersion: number, upload: TimedChangeset, uploadIndex: ChangeIndex, unseen: readonly RebaseEntry[], interleaved: readonly InterleavedChangeset[] = []): IntegrationResult {
    let forms = this.forms.get(client);
    if (!forms) this.forms.set(client, (forms = new Map()));
    // The client's later uploads are based on this version or a later one: older forms are never met again.
    for (const version of forms.keys()) if (version <= baseVersion) forms.delete(version);
    const kept = forms;
    const concurrent: (ConcurrentChangeset & { version: number })[] = unseen
      .filter((entry) => entry.version > baseVersion && entry.originFileIdent !== client && meets(entry.index(), uploadIndex))
      .map((entry) => ({ version: entry.version, changeset: kept.get(entry.version) ?? entry.changeset(), keep: (form) => kept.set(entry.version, form) }));
    for (const changeset of interleaved) {
      const at = concurrent.findIndex((c) => c.version > changeset.version);
      concurrent.splice(at === -1 ? concurrent.length : at, 0, changeset);
    }
    const result = integrateUpload(concurrent, upload);
    if (forms.size === 0) this.forms.delete(client);
    return result;
  }
}
