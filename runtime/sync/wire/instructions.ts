// The instruction set of Realm sync changesets, as typed values (realm-core `doc/changeset.md` and
// `src/realm/sync/instructions.hpp` describe the format). Strings are plain strings here: interning is the
// codec's business. Shared by the codec (`wire/`), the merge (`merge/`) and the translation (`translate/`).
import type { Decimal128, ObjectId, UUID } from 'bson';

/** Payload type tags as they appear on the wire. */
export const PAYLOAD_TYPE = {
  set: -6, list: -5, erased: -4, dictionary: -3, objectValue: -2, globalKey: -1,
  null: 0, int: 1, bool: 2, string: 3, binary: 4, timestamp: 5, float: 6, double: 7, decimal: 8, link: 9, objectId: 10, uuid: 11,
} as const;
export type PayloadTypeName = keyof typeof PAYLOAD_TYPE;

export type PrimaryKey =
  | { type: 'null' }
  | { type: 'int'; value: bigint }
  | { type: 'string'; value: string }
  | { type: 'objectId'; value: ObjectId }
  | { type: 'uuid'; value: UUID }
  | { type: 'globalKey'; hi: bigint; lo: bigint };

export type Payload =
  | { type: 'null' }
  | { type: 'int'; value: bigint }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'binary'; value: Uint8Array }
  /** Seconds and nanoseconds since the UNIX epoch, as the client wrote them: |nanoseconds| < 10^9, and the signs
   * may differ (realm-core 14 writes 1969-12-31T23:59:59.999Z as -1 s + 999,000,000 ns). */
  | { type: 'timestamp'; seconds: bigint; nanoseconds: number }
  | { type: 'float'; value: number }
  | { type: 'double'; value: number }
  | { type: 'decimal'; value: Decimal128 }
  | { type: 'link'; table: string; target: PrimaryKey }
  | { type: 'objectId'; value: ObjectId }
  | { type: 'uuid'; value: UUID }
  | { type: 'globalKey'; hi: bigint; lo: bigint }
  /** Creates an embedded object in place. */
  | { type: 'objectValue' }
  /** Creates an empty dictionary / list / set in place (a mixed field holding a collection). */
  | { type: 'dictionary' }
  | { type: 'list' }
  | { type: 'set' }
  /** A dictionary element erased. */
  | { type: 'erased' };

/** A field name, a dictionary key (strings) or a list index (numbers), below `field`. */
export type PathElement = string | number;

export type CollectionType = 'single' | 'list' | 'dictionary' | 'set';

interface ObjectTarget { table: string; object: PrimaryKey }
interface PathTarget extends ObjectTarget { field: string; path: PathElement[] }

export type Instruction =
  | { type: 'AddTable'; table: string; spec: { kind: 'topLevel'; pkField: string; pkType: PayloadTypeName; pkNullable: boolean; asymmetric: boolean } | { kind: 'embedded' } }
  | { type: 'EraseTable'; table: string }
  | { type: 'AddColumn'; table: string; field: string; valueType: PayloadTypeName; keyType: PayloadTypeName; nullable: boolean; collectionType: CollectionType; linkTargetTable?: string }
  | { type: 'EraseColumn'; table: string; field: string }
  | ({ type: 'CreateObject' } & ObjectTarget)
  | ({ type: 'EraseObject' } & ObjectTarget)
  /** Set a field (path empty) or a nested element; `priorSize` when the path ends with a list index, else `isDefault`. */
  | ({ type: 'Update'; value: Payload; isDefault: boolean; priorSize: number } & PathTarget)
  | ({ type: 'AddInteger'; value: bigint } & PathTarget)
  /** The path's last element is the index inserted at. */
  | ({ type: 'ArrayInsert'; value: Payload; priorSize: number } & PathTarget)
  /** The path's last element is the index moved from; `ndx2` the index moved to. */
  | ({ type: 'ArrayMove'; ndx2: number; priorSize: number } & PathTarget)
  | ({ type: 'ArrayErase'; priorSize: number } & PathTarget)
  | ({ type: 'Clear'; collectionType: CollectionType } & PathTarget)
  | ({ type: 'SetInsert'; value: Payload } & PathTarget)
  | ({ type: 'SetErase'; value: Payload } & PathTarget);

export type InstructionType = Instruction['type'];

/** A changeset with the header it travels with (UPLOAD and DOWNLOAD). */
export interface ChangesetEntry {
  /** UPLOAD: the client version that produced it. DOWNLOAD: the server version it produced. */
  version: bigint;
  /** UPLOAD: the last server version the client had integrated. DOWNLOAD: the last client version of the receiving client integrated at that point. */
  lastIntegratedRemoteVersion: bigint;
  /** Milliseconds since 2015-01-01T00:00:00Z (realm's sync epoch). */
  originTimestamp: bigint;
  /** The client file that made it; 0 in an UPLOAD means the uploading client itself. */
  originFileIdent: bigint;
  /** DOWNLOAD only: the size of the changeset as originally uploaded. */
  originalChangesetSize?: number;
  instructions: Instruction[];
  /**
   * The changeset's bytes as received. When encoding a message, these go on the wire as they are (and
   * `instructions` is not re-encoded), so a stored changeset is forwarded without a round trip.
   */
  bytes?: Uint8Array;
}

/** AddTable, AddColumn, EraseTable, EraseColumn: instructions on the schema, not on an object. */
export function isSchemaInstruction(instruction: Instruction): boolean {
  return instruction.type === 'AddTable' || instruction.type === 'AddColumn' || instruction.type === 'EraseTable' || instruction.type === 'EraseColumn';
}
