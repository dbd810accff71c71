// Flexible sync: the bootstraps a client file was sent, as changesets its later uploads may not have seen.
// A client that changes its queries while it has local changes the server has not integrated (offline
// writes, or writes made before the bootstrap arrives) transforms those changes against the bootstrap when
// it integrates it (realm-core's client does so for every server changeset after the bootstrap's
// `lastIntegratedRemoteVersion`). It still uploads them as it made them, so the server must transform them
// against the same bootstrap, or the two sides diverge (a local copy of an object the bootstrap brings keeps
// the client's values on the server and the server's values on the client). Kept per client file until its
// uploads show it integrated the bootstrap (an upload based on the bootstrap's version or later).
import { changesByObject } from './view';
import type { TimedChangeset } from '../merge/transform';
import { parseChangeset } from '../wire/changeset';
import { isSchemaInstruction, type Instruction } from '../wire/instructions';

/** A bootstrap as it left: its server version, the client version it said was integrated, its header, its instructions. */
export interface SentBootstrap {
  version: number;
  clientVersion: number;
  originTimestamp: bigint;
  originFileIdent: bigint;
  /** Encoded, as they left (one DOWNLOAD each). */
  changesets: readonly Uint8Array[];
}

/** A bootstrap concurrent with an upload, restricted to what the upload can meet, and how to keep its transformed form. */
export interface ConcurrentBootstrap {
  version: number;
  form: TimedChangeset;
  /** The bootstrap as the upload transformed it, kept for the client's next uploads. */
  keep(transformed: TimedChangeset): void;
}

// A client rarely has more than a couple of query changes in flight; more are forgotten oldest first, and
// so are the oldest of all clients past the bounds (a later upload concurrent with a forgotten bootstrap is
// integrated as if the client had not met it).
const MAX_PER_CLIENT_FILE = 8;
const MAX_BYTES = 64 * 1024 * 1024;
const MAX_INDEXED_INSTRUCTIONS = 2_000_000;

interface Kept {
  sent: SentBootstrap;
  /** Parsed on the first concurrent upload: schema instructions, and each object's instructions by `heldKey`. */
  index?: BootstrapIndex;
}

interface BootstrapIndex { schema: Instruction[]; objects: Map<string, Instruction[]>; size: number }

export class SentBootstraps {
  private readonly byFile = new Map<number, Kept[]>();
  private bytes = 0;
  private indexedInstructions = 0;

  /** A bootstrap left for the client file. */
  sent(file: number, bootstrap: SentBootstrap): void {
    const kept = this.byFile.get(file) ?? [];
    const k: Kept = { sent: bootstrap };
    kept.push(k);
    this.bytes += sizeOf(bootstrap);
    while (kept.length > MAX_PER_CLIENT_FILE) this.forget(kept.shift()!);
    // Map order is insertion order: re-inserted, this file's are the newest.
    this.byFile.delete(file);
    this.byFile.set(file, kept);
    this.shed(k);
  }

  /**
   * The bootstraps an uploaded changeset had not seen, in version order: made after what each said was
   * integrated (`clientVersion`) and based on an earlier server version. Those it has seen are forgotten.
   */
  concurrentWith(file: number, upload: { clientVersion: number; baseVersion: number; instructions: readonly Instruction[] }): ConcurrentBootstrap[] {
    const kept = this.byFile.get(file);
    if (!kept) return [];
    const unseen = kept.filter((k) => k.sent.version > upload.baseVersion);
    for (const k of kept) if (k.sent.version <= upload.baseVersion) this.forget(k);
    if (unseen.length === 0) this.byFile.delete(file);
    else this.byFile.set(file, unseen);
    const touched = [...changesByObject(upload.instructions).objects.keys()];
    return unseen.filter((k) => k.sent.clientVersion < upload.clientVersion).map((k) => {
      const index = this.indexOf(k);
      const instructions = [...index.schema];
      for (const key of touched) instructions.push(...(index.objects.get(key) ?? []));
      return {
        version: k.sent.version,
        form: { instructions, originTimestamp: k.sent.originTimestamp, originFileIdent: k.sent.originFileIdent },
        keep: (transformed) => {
          index.schema = transformed.instructions.filter(isSchemaInstruction);
          for (const key of touched) index.objects.delete(key);
          for (const [key, group] of changesByObject(transformed.instructions).objects) index.objects.set(key, group.instructions);
        },
      };
    });
  }

  private indexOf(k: Kept): BootstrapIndex {
    if (k.index) return k.index;
    const instructions = k.sent.changesets.flatMap((bytes) => parseChangeset(bytes));
    const objects = new Map<string, Instruction[]>();
    for (const [key, group] of changesByObject(instructions).objects) objects.set(key, group.instructions);
    k.index = { schema: instructions.filter(isSchemaInstruction), objects, size: instructions.length };
    this.indexedInstructions += instructions.length;
    this.shed(k);
    return k.index;
  }

  /** Past a bound: the other bootstraps go, oldest file first. */
  private shed(keep: Kept): void {
    const over = () => this.bytes > MAX_BYTES || this.indexedInstructions > MAX_INDEXED_INSTRUCTIONS;
    for (const [file, kept] of this.byFile) {
      if (!over()) return;
      for (const k of kept.filter((k) => k !== keep)) {
        if (!over()) break;
        this.forget(k);
        kept.splice(kept.indexOf(k), 1);
      }
      if (kept.length === 0) this.byFile.delete(file);
    }
  }

  private forget(k: Kept): void {
    if (k.index) this.indexedInstructions -= k.index.size;
    k.index = undefined;
    this.bytes -= sizeOf(k.sent);
  }
}

function sizeOf(bootstrap: SentBootstrap): number {
  return bootstrap.changesets.reduce((n, bytes) => n + bytes.length, 0);
}
