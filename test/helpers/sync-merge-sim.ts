// A simulation of Realm sync's history exchange over the merge: one server and several clients, each
// with its own state and history, integrating changesets the way realm-core's server and client do
// (reciprocal transforms kept per peer, uploads carrying the server version they were made on, downloads
// carrying the last client version the server had integrated). Used to check that everyone converges.
import { applyChangeset, cloneState, dumpState, emptyState, type RealmState } from '../../runtime/sync/merge/apply';
import { ReciprocalHistory } from '../../runtime/sync/merge/rebase';
import { changesByObject } from '../../runtime/sync/flexible/view';
import { mergeChangesets, type TimedChangeset } from '../../runtime/sync/merge/transform';
import type { Instruction } from '../../runtime/sync/wire/instructions';

interface ServerEntry {
  version: bigint;
  /** `originFileIdent` is the client file that uploaded it. */
  changeset: TimedChangeset;
  /** For each client, the last client version of it integrated at this server version. */
  integratedClientVersions: Map<bigint, number>;
}

interface Upload { clientVersion: number; lastIntegratedServerVersion: number; changeset: TimedChangeset }

/** The server: the engine's `ReciprocalHistory.rebase` (a reciprocal history per client file), and the changesets applied. */
export class SimServer {
  state: RealmState = emptyState();
  readonly history: ServerEntry[] = [];
  private readonly reciprocal = new ReciprocalHistory();
  private readonly integrated = new Map<bigint, number>();

  get version(): number {
    return this.history.length;
  }

  integrate(client: bigint, upload: Upload): void {
    // The engine's rebase: the entries the upload had not seen, from other clients, each in this client's
    // reciprocal form, only those changing the schema or an object the upload touches.
    const unseen = this.history.map((entry) => ({
      version: Number(entry.version), originFileIdent: Number(entry.changeset.originFileIdent),
      changeset: () => entry.changeset, index: () => changesByObject(entry.changeset.instructions),
    }));
    const result = this.reciprocal.rebase(Number(client), upload.lastIntegratedServerVersion, upload.changeset, changesByObject(upload.changeset.instructions), unseen);
    if (!result.ok) throw result.error;
    applyChangeset(this.state, result.changeset.instructions);
    this.integrated.set(client, upload.clientVersion);
    this.history.push({
      version: BigInt(this.history.length + 1),
      changeset: result.changeset,
      integratedClientVersions: new Map(this.integrated),
    });
  }
}

interface LocalEntry { clientVersion: number; changeset: TimedChangeset; reciprocal: TimedChangeset; baseServerVersion: number }

export class SimClient {
  state: RealmState = emptyState();
  private readonly local: LocalEntry[] = [];
  private clientVersion = 0;
  private uploaded = 0;
  /** The last server version integrated (downloaded) here. */
  private serverVersion = 0;

  constructor(readonly ident: bigint) {}

  /** Makes a local changeset at `timestamp` (applied at once, as a write transaction). */
  write(instructions: Instruction[], timestamp: bigint): void {
    if (instructions.length === 0) return;
    const scratch = cloneState(this.state);
    applyChangeset(scratch, instructions);
    this.state = scratch;
    this.clientVersion++;
    const changeset = { instructions, originTimestamp: timestamp, originFileIdent: this.ident };
    this.local.push({ clientVersion: this.clientVersion, changeset, reciprocal: changeset, baseServerVersion: this.serverVersion });
  }

  get pendingUploads(): number {
    return this.local.length - this.uploaded;
  }

  uploadOne(server: SimServer): void {
    const entry = this.local[this.uploaded++];
    server.integrate(this.ident, { clientVersion: entry.clientVersion, lastIntegratedServerVersion: entry.baseServerVersion, changeset: entry.changeset });
  }

  pendingDownloads(server: SimServer): number {
    return server.version - this.serverVersion;
  }

  downloadOne(server: SimServer): void {
    const entry = server.history[this.serverVersion];
    this.serverVersion++;
    if (entry.changeset.originFileIdent === this.ident) return;
    const seen = entry.integratedClientVersions.get(this.ident) ?? 0;
    const ours = this.local.filter((l) => l.clientVersion > seen);
    const merged = mergeChangesets(ours.map((l) => l.reciprocal), [entry.changeset]);
    if (!merged.ok) throw merged.error;
    ours.forEach((l, i) => (l.reciprocal = merged.ours[i]));
    applyChangeset(this.state, merged.theirs[0].instructions);
  }
}

/** Uploads and downloads everything until nothing is pending. */
export function settle(server: SimServer, clients: SimClient[]): void {
  for (const client of clients) while (client.pendingUploads > 0) client.uploadOne(server);
  for (const client of clients) while (client.pendingDownloads(server) > 0) client.downloadOne(server);
}

export function dumps(server: SimServer, clients: SimClient[]): { server: unknown; clients: unknown[] } {
  return { server: dumpState(server.state), clients: clients.map((c) => dumpState(c.state)) };
}
