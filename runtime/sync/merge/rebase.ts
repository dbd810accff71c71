// The rebase the sync server runs on each uploaded changeset: which of the server's changesets the upload
// meets (those after its base version, from other client files, that change the schema or an object the
// upload touches), in which form (the reciprocal one kept for the uploading client file), and the forms
// the merge changed kept for that client's next upload. The engine (`../sessions/engine.ts`, its forms in the
// store) and the property test's server (`test/helpers/sync-merge-sim.ts`, in memory) both call `rebaseUpload`.
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

/**
 * Where the reciprocal forms of the server's changesets are kept per client file (by version), as that
 * client's uploads transformed them: in memory (`ReciprocalHistory`) or in the store (the engine's
 * `ReciprocalForms`, which survives a restart).
 */
export interface ReciprocalFormStore {
  /** The forms an upload based on `baseVersion` may meet; those of versions up to it are dropped (the client has them). */
  forUpload(client: number, baseVersion: number): ReadonlyMap<number, TimedChangeset>;
  keep(client: number, version: number, form: TimedChangeset): void;
  /** Whether an upload based on `baseVersion` would need forms that were not kept. */
  missing?(client: number, baseVersion: number): boolean;
}

/** A rebase that could not run: the forms it needs were not kept (the client must reset). */
export interface FormsMissing {
  ok: false;
  formsMissing: true;
}

/**
 * The upload of client file `client`, made on `baseVersion`, rebased onto `unseen` (the server's entries
 * after `baseVersion`, in version order) and `interleaved`, in the forms `forms` keeps: the changeset to
 * apply and append. Entries of the client's own file and those the upload cannot meet are passed by (so a
 * changeset based on version 0 costs a look at each entry, not a merge with the whole history).
 */
export function rebaseUpload(forms: ReciprocalFormStore, client: number, baseVersion: number, upload: TimedChangeset, uploadIndex: ChangeIndex, unseen: readonly RebaseEntry[], interleaved: readonly InterleavedChangeset[] = []): IntegrationResult | FormsMissing {
  const kept = forms.forUpload(client, baseVersion);
  const concurrent: (ConcurrentChangeset & { version: number })[] = unseen
    .filter((entry) => entry.version > baseVersion && entry.originFileIdent !== client && meets(entry.index(), uploadIndex))
    .map((entry) => ({ version: entry.version, changeset: kept.get(entry.version) ?? entry.changeset(), keep: (form) => forms.keep(client, entry.version, form) }));
  if (concurrent.length > 0 && forms.missing?.(client, baseVersion)) return { ok: false, formsMissing: true };
  for (const changeset of interleaved) {
    const at = concurrent.findIndex((c) => c.version > changeset.version);
    concurrent.splice(at === -1 ? concurrent.length : at, 0, changeset);
  }
  return integrateUpload(concurrent, upload);
}

/** Reciprocal forms in memory: the property test's server, and the shape of the engine's stored ones. */
export class ReciprocalHistory implements ReciprocalFormStore {
  private readonly forms = new Map<number, Map<number, TimedChangeset>>();

  forUpload(client: number, baseVersion: number): ReadonlyMap<number, TimedChangeset> {
    const forms = this.forms.get(client);
    if (!forms) return new Map();
    // The client's later uploads are based on this version or a later one: older forms are never met again.
    for (const version of forms.keys()) if (version <= baseVersion) forms.delete(version);
    if (forms.size === 0) this.forms.delete(client);
    return forms;
  }

  keep(client: number, version: number, form: TimedChangeset): void {
    let forms = this.forms.get(client);
    if (!forms) this.forms.set(client, (forms = new Map()));
    forms.set(version, form);
  }

  rebase(client: number, baseVersion: number, upload: TimedChangeset, uploadIndex: ChangeIndex, unseen: readonly RebaseEntry[], interleaved: readonly InterleavedChangeset[] = []): IntegrationResult {
    return rebaseUpload(this, client, baseVersion, upload, uploadIndex, unseen, interleaved) as IntegrationResult;
  }
}
