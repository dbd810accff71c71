// The server's side of integrating one uploaded changeset, as realm-core's server history does it: the
// upload is merged with the history entries it had not seen, in the reciprocal forms kept for the
// uploading client file, and those forms are updated for that client's next upload.
import { mergeChangesets, type TimedChangeset, type TransformError } from './transform';

/** A changeset of the server's history: the version it produced and the changeset as the server applied it. */
export interface ServerHistoryEntry {
  version: bigint;
  /** `originFileIdent` is the client file that uploaded it. */
  changeset: TimedChangeset;
}

/**
 * The history entries as transformed for one client file, by server version; absent means the entry
 * itself. Kept per client file across uploads (realm-core stores it in the server's history).
 */
export interface ReciprocalHistory {
  get(version: bigint): TimedChangeset | undefined;
  set(version: bigint, changeset: TimedChangeset): void;
}

export type IntegrationResult = { ok: true; changeset: TimedChangeset } | { ok: false; error: TransformError };

/**
 * The upload as the server must apply it and append to its history. `history` is in version order;
 * `upload.changeset.originFileIdent` is the uploading client file (not 0); `lastIntegratedServerVersion`
 * the server version the client had integrated when it made the changeset. On an error nothing is kept.
 */
export function integrateUpload(
  history: readonly ServerHistoryEntry[],
  reciprocal: ReciprocalHistory,
  upload: { changeset: TimedChangeset; lastIntegratedServerVersion: bigint },
): IntegrationResult {
  const client = upload.changeset.originFileIdent;
  const unseen = history.filter((entry) => entry.version > upload.lastIntegratedServerVersion && entry.changeset.originFileIdent !== client);
  const merged = mergeChangesets(unseen.map((entry) => reciprocal.get(entry.version) ?? entry.changeset), [upload.changeset]);
  if (!merged.ok) return merged;
  unseen.forEach((entry, i) => reciprocal.set(entry.version, merged.ours[i]));
  return { ok: true, changeset: merged.theirs[0] };
}
