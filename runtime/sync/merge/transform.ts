// Operational transform of Realm sync changesets: the merge rules of realm-core's `sync/transform.cpp`
// (14.14), written anew over the typed instructions of `../wire/instructions`. Two changesets made
// concurrently on the same base are rebased onto each other so that `A + T(B, A)` and `B + T(A, B)` give
// the same state on every peer. Clients run the same rules on what they download, so any difference here
// makes clients and the server diverge: the rules, their order and their quirks follow realm-core.
import type { Instruction, Payload, PathElement, PrimaryKey } from '../wire/instructions';

/** A changeset with what orders it against concurrent ones. */
export interface TimedChangeset {
  instructions: Instruction[];
  /** Milliseconds since 2015-01-01 (realm's sync epoch), as in the changeset header. */
  originTimestamp: bigint;
  /** The client file that made it; never 0 here (the server substitutes the uploader's ident for 0). */
  originFileIdent: bigint;
}

/**
 * Changesets that cannot be merged: a schema conflict (the same table or property created with other
 * types) or instructions inconsistent with each other (list sizes that disagree, malformed paths). The
 * server answers such an upload with a bad-changeset error for that client.
 */
export class TransformError extends Error {
  constructor(readonly kind: 'schemaMismatch' | 'badChangeset', message: string) {
    super(message);
    this.name = 'TransformError';
  }
}

/**
 * The upload as the server must apply and store it: transformed through the changesets the server
 * integrated after the upload's base (in server-version order, none of them from the uploader). When the
 * uploader's earlier changesets were integrated after some of those, pass their reciprocal forms (see
 * `mergeChangesets`). Throws `TransformError`.
 */
export function transformUpload(upload: TimedChangeset, concurrent: TimedChangeset[]): Instruction[] {
  const merged = mergeChangesets(concurrent, [upload]);
  if (!merged.ok) throw merged.error;
  return merged.theirs[0].instructions;
}

export type MergeResult =
  | { ok: true; ours: TimedChangeset[]; theirs: TimedChangeset[] }
  | { ok: false; error: TransformError };

/**
 * Both directions of one merge, as realm-core's `Transformer::merge_changesets`: `ours` are the local
 * history's changesets after the incoming ones' base (on the server: its history, in the reciprocal form
 * kept for the uploading client; on a client: its own unacknowledged changesets), `theirs` the incoming
 * ones (on the server: the upload; on a client: the download). `theirs` come back ready to apply locally;
 * `ours` come back as the reciprocal forms to keep for the next incoming changeset from the same peer
 * with the same or an older base. The inputs are not modified.
 */
export function mergeChangesets(ours: TimedChangeset[], theirs: TimedChangeset[]): MergeResult {
  const major = ours.map(toWorking);
  const minor = theirs.map(toWorking);
  try {
    for (const changeset of [...major, ...minor]) changeset.slots.forEach((slot) => validate(slot.instr!));
    if (major.some((c) => c.slots.length > 0) && minor.some((c) => c.slots.length > 0)) {
      const destructive = [...major, ...minor].some((c) => c.slots.some((slot) => slot.instr!.type === 'EraseTable' || slot.instr!.type === 'EraseColumn'));
      if (destructive) for (const changeset of major) transformChangeset(changeset, minor);
      else transformByObject(major, minor);
    }
  } catch (error) {
    if (error instanceof TransformError) return { ok: false, error };
    throw error;
  }
  return { ok: true, ours: major.map(fromWorking), theirs: minor.map(fromWorking) };
}

// --- working copies ---

interface Slot { instr: Instruction | null }
interface WorkingChangeset { source: TimedChangeset; slots: Slot[]; discriminant: Discriminant }
interface Discriminant { timestamp: bigint; ident: bigint }

function toWorking(changeset: TimedChangeset): WorkingChangeset {
  return {
    source: changeset,
    slots: changeset.instructions.map((instr) => ({ instr: cloneInstruction(instr) })),
    discriminant: { timestamp: changeset.originTimestamp, ident: changeset.originFileIdent },
  };
}

function fromWorking(changeset: WorkingChangeset): TimedChangeset {
  const { source, slots } = changeset;
  // Left as it was: the input itself, so a caller keeping reciprocal forms keeps only those that differ.
  if (slots.length === source.instructions.length && slots.every((slot, i) => slot.instr !== null && sameInstruction(slot.instr, source.instructions[i]!))) return source;
  return {
    instructions: changeset.slots.flatMap((slot) => (slot.instr ? [slot.instr] : [])),
    originTimestamp: changeset.source.originTimestamp,
    originFileIdent: changeset.source.originFileIdent,
  };
}

/** Transforms replace an instruction's fields and edit only its path in place, so fields compare by identity and the path by element. */
function sameInstruction(a: Instruction, b: Instruction): boolean {
  const fieldsOfA = Object.keys(a);
  if (fieldsOfA.length !== Object.keys(b).length) return false;
  return fieldsOfA.every((key) => {
    const x = (a as unknown as Record<string, unknown>)[key];
    const y = (b as unknown as Record<string, unknown>)[key];
    if (x === y) return true;
    return key === 'path' && Array.isArray(x) && Array.isArray(y) && x.length === y.length && x.every((element, i) => element === y[i]);
  });
}

// Payloads are never modified in place (AddInteger folding replaces `value`), so only paths are copied.
function cloneInstruction(instr: Instruction): Instruction {
  return 'path' in instr ? { ...instr, path: [...instr.path] } : { ...instr };
}

/** Ties between equal timestamps go to the higher file ident. */
function earlier(a: Discriminant, b: Discriminant): boolean {
  return a.timestamp === b.timestamp ? a.ident < b.ident : a.timestamp < b.timestamp;
}

// --- the driver: every instruction of ours meets every remaining instruction of theirs, in order ---

/** One side of a pairwise merge: the instruction's slot, its changeset, and what happened to it. */
interface Side {
  changeset: WorkingChangeset;
  index: number;
  discarded: boolean;
  /** Instructions to insert before this one (only a link column of an erased table does this). */
  prepended: Instruction[];
}

function transformChangeset(ours: WorkingChangeset, theirs: WorkingChangeset[]): void {
  let index = 0;
  while (index < ours.slots.length) {
    if (ours.slots[index].instr) index = transformMajor(ours, index, theirs, { changeset: 0, index: 0 });
    index++;
  }
}

interface MinorPosition { changeset: number; index: number }

/**
 * Merges our instruction at `index` with their instructions from `from` on; returns the index of our
 * instruction afterwards (it moves when instructions were prepended before it).
 */
function transformMajor(ours: WorkingChangeset, index: number, theirs: WorkingChangeset[], from: MinorPosition): number {
  let majorIndex = index;
  for (let c = from.changeset; c < theirs.length; c++) {
    const minorChangeset = theirs[c];
    for (let m = c === from.changeset ? from.index : 0; m < minorChangeset.slots.length; m++) {
      if (!minorChangeset.slots[m].instr) continue;
      const major: Side = { changeset: ours, index: majorIndex, discarded: false, prepended: [] };
      const minor: Side = { changeset: minorChangeset, index: m, discarded: false, prepended: [] };
      mergeInstructions(major, minor);
      if (minor.prepended.length) {
        minorChangeset.slots.splice(m, 0, ...minor.prepended.map((instr) => ({ instr })));
        m += minor.prepended.length;
      }
      if (major.prepended.length) {
        ours.slots.splice(majorIndex, 0, ...major.prepended.map((instr) => ({ instr })));
        const next = minor.discarded ? { changeset: c, index: m } : { changeset: c, index: m + 1 };
        for (let p = 0; p < major.prepended.length; p++) {
          const at = majorIndex + p;
          if (ours.slots[at].instr) transformMajor(ours, at, theirs, next);
        }
        majorIndex += major.prepended.length;
      }
      if (major.discarded) return majorIndex;
    }
  }
  return majorIndex;
}

/**
 * Without erased tables or columns, instructions only ever interact with instructions on the same object
 * (schema instructions with schema instructions): each of ours meets only those of theirs, in the same
 * order as the full pass (realm-core's changeset index does the same), which keeps large changesets on
 * different objects from meeting each other.
 */
function transformByObject(ours: WorkingChangeset[], theirs: WorkingChangeset[]): void {
  const groups = new Map<string, { changeset: WorkingChangeset; index: number }[]>();
  for (const changeset of theirs) {
    changeset.slots.forEach((slot, index) => {
      const key = groupKey(slot.instr!);
      const group = groups.get(key);
      if (group) group.push({ changeset, index });
      else groups.set(key, [{ changeset, index }]);
    });
  }
  for (const changeset of ours) {
    changeset.slots.forEach((slot, index) => {
      const group = slot.instr && groups.get(groupKey(slot.instr));
      if (!group) return;
      for (const entry of group) {
        const other = entry.changeset.slots[entry.index].instr;
        if (!other) continue;
        // Path instructions on different fields never interact (every rule between them needs the same field).
        if ('field' in other && 'path' in other && 'path' in slot.instr! && other.field !== slot.instr!.field) continue;
        const major: Side = { changeset, index, discarded: false, prepended: [] };
        mergeInstructions(major, { changeset: entry.changeset, index: entry.index, discarded: false, prepended: [] });
        if (major.discarded) return;
      }
    });
  }
}

function groupKey(instr: Instruction): string {
  if (!('object' in instr)) return 'schema';
  const pk = instr.object;
  const value = pk.type === 'null' ? '' : pk.type === 'globalKey' ? `${pk.hi}:${pk.lo}` : pk.type === 'objectId' || pk.type === 'uuid' ? pk.value.toHexString() : String(pk.value);
  return `${instr.table}\u0000${pk.type}\u0000${value}`;
}

function instrOf(side: Side): Instruction {
  return side.changeset.slots[side.index].instr!;
}

function discard(side: Side): void {
  side.changeset.slots[side.index].instr = null;
  side.discarded = true;
}

function timestampOf(side: Side): Discriminant {
  return side.changeset.discriminant;
}

const TYPE_ORDER: Record<Instruction['type'], number> = {
  AddTable: 0, EraseTable: 1, CreateObject: 2, EraseObject: 3, Update: 4, AddInteger: 5, AddColumn: 6,
  EraseColumn: 7, ArrayInsert: 8, ArrayMove: 9, ArrayErase: 10, Clear: 11, SetInsert: 12, SetErase: 13,
};

function pathLength(instr: Instruction): number {
  switch (instr.type) {
    case 'AddTable': case 'EraseTable': return 1;
    case 'AddColumn': case 'EraseColumn': case 'CreateObject': case 'EraseObject': return 2;
    default: return 3 + instr.path.length;
  }
}

function mergeInstructions(major: Side, minor: Side): void {
  const majorLength = pathLength(instrOf(major));
  const minorLength = pathLength(instrOf(minor));
  // The instruction higher in the hierarchy may change or discard the nested one first.
  if (minorLength < majorLength) {
    mergeNested(minor, major);
    if (major.discarded) return;
  } else if (minorLength > majorLength) {
    mergeNested(major, minor);
    if (minor.discarded) return;
  }
  // Even nested pairs meet through the same-level rules (link columns carry table-level facts).
  if (TYPE_ORDER[instrOf(major).type] >= TYPE_ORDER[instrOf(minor).type]) mergePair(major, minor);
  else mergePair(minor, major);
}

// --- comparisons ---

function sameKey(a: PrimaryKey, b: PrimaryKey): boolean {
  if (a.type !== b.type) return false;
  switch (a.type) {
    case 'null': return true;
    case 'int': return a.value === (b as typeof a).value;
    case 'string': return a.value === (b as typeof a).value;
    case 'objectId': return a.value.equals((b as typeof a).value);
    case 'uuid': return a.value.equals((b as typeof a).value);
    case 'globalKey': return a.hi === (b as typeof a).hi && a.lo === (b as typeof a).lo;
  }
}

function samePayload(a: Payload, b: Payload): boolean {
  if (a.type !== b.type) return false;
  switch (a.type) {
    case 'null': case 'erased': case 'set': case 'list': case 'dictionary': case 'objectValue': return true;
    case 'int': return a.value === (b as typeof a).value;
    case 'bool': return a.value === (b as typeof a).value;
    case 'string': return a.value === (b as typeof a).value;
    case 'binary': return Buffer.from(a.value).equals(Buffer.from((b as typeof a).value));
    case 'timestamp': return a.seconds === (b as typeof a).seconds && a.nanoseconds === (b as typeof a).nanoseconds;
    case 'float': case 'double': return a.value === (b as typeof a).value;
    case 'decimal': return a.value.toString() === (b as typeof a).value.toString();
    case 'link': return a.table === (b as typeof a).table && sameKey(a.target, (b as typeof a).target);
    case 'objectId': return a.value.equals((b as typeof a).value);
    case 'uuid': return a.value.equals((b as typeof a).value);
    case 'globalKey': return a.hi === (b as typeof a).hi && a.lo === (b as typeof a).lo;
  }
}

type PathInstruction = Extract<Instruction, { path: PathElement[] }>;
type ObjectInstruction = Extract<Instruction, { object: PrimaryKey }>;

function isPathInstruction(instr: Instruction): instr is PathInstruction {
  return 'path' in instr;
}

function sameObject(a: ObjectInstruction, b: ObjectInstruction): boolean {
  return a.table === b.table && sameKey(a.object, b.object);
}
function sameField(a: PathInstruction, b: PathInstruction): boolean {
  return sameObject(a, b) && a.field === b.field;
}
function samePathElements(a: PathElement[], b: PathElement[], count: number): boolean {
  for (let i = 0; i < count; i++) if (a[i] !== b[i]) return false;
  return true;
}
function samePath(a: PathInstruction, b: PathInstruction): boolean {
  return sameField(a, b) && a.path.length === b.path.length && samePathElements(a.path, b.path, a.path.length);
}
/** Same list (or dictionary): equal paths but for the last element. */
function sameContainer(a: PathInstruction, b: PathInstruction): boolean {
  if (!sameField(a, b) || a.path.length !== b.path.length) return false;
  return a.path.length === 0 || samePathElements(a.path, b.path, a.path.length - 1);
}
/** The element of `inner`'s path just below `outer`'s whole path, when `outer` is a strict prefix. */
function prefixNext(outer: PathInstruction, inner: PathInstruction): PathElement | undefined {
  if (outer.path.length < inner.path.length && sameField(outer, inner) && samePathElements(outer.path, inner.path, outer.path.length)) {
    return inner.path[outer.path.length];
  }
  return undefined;
}
/** `outer` touches a container on `inner`'s path (its last element, an index, not compared). */
function isContainerPrefix(outer: PathInstruction, inner: PathInstruction): boolean {
  return outer.path.length !== 0 && outer.path.length < inner.path.length && sameField(outer, inner)
    && samePathElements(outer.path, inner.path, outer.path.length - 1);
}

function indexOf(instr: PathInstruction): number {
  return instr.path[instr.path.length - 1] as number;
}
function setIndex(instr: PathInstruction, index: number): void {
  instr.path[instr.path.length - 1] = index;
}
function isArrayUpdate(instr: Extract<Instruction, { type: 'Update' }>): boolean {
  return instr.path.length > 0 && typeof instr.path[instr.path.length - 1] === 'number';
}
/** Position in `inner`'s path of the index that `outer`'s last path element (an index) refers to. */
function correspondingIndexPosition(outer: PathInstruction, inner: PathInstruction): number {
  const position = outer.path.length - 1;
  if (typeof inner.path[position] !== 'number') throw new TransformError('badChangeset', 'Inconsistent paths');
  return position;
}

/** Where an element read at `index` ends up after moving `from` to `to`. */
function indexAfterMove(index: number, from: number, to: number): number {
  if (index === from) return to;
  let result = index;
  if (result > from) result -= 1;
  if (result >= to) result += 1;
  return result;
}

function describeTarget(instr: PathInstruction): string {
  return `${instr.table}.${instr.field}${instr.path.map((p) => `[${JSON.stringify(p)}]`).join('')}`;
}
function badMerge(instr: PathInstruction, message: string): never {
  throw new TransformError('badChangeset', `${message} (instruction target: ${describeTarget(instr)})`);
}

// --- nested rules: `outer` has the shorter path ---

function mergeNested(outerSide: Side, innerSide: Side): void {
  const outer = instrOf(outerSide);
  const inner = instrOf(innerSide);
  switch (outer.type) {
    case 'EraseTable':
      if (outer.table === inner.table) discard(innerSide);
      return;
    case 'EraseObject':
      if (isPathInstruction(inner) && sameObject(outer, inner)) discard(innerSide);
      return;
    case 'Update': {
      if (!isPathInstruction(inner)) return;
      // Creating an embedded object is idempotent and keeps what was written inside it.
      if (outer.value.type === 'objectValue') return;
      const next = prefixNext(outer, inner);
      if (next === undefined) return;
      // A collection set in a mixed field keeps the changes made inside a collection of that kind.
      if (outer.value.type === 'list' && typeof next === 'number') return;
      if (outer.value.type === 'dictionary' && typeof next === 'string') return;
      discard(innerSide);
      return;
    }
    case 'AddInteger':
    case 'Clear':
      if (isPathInstruction(inner) && prefixNext(outer, inner) !== undefined) discard(innerSide);
      return;
    case 'ArrayInsert':
      if (isPathInstruction(inner) && isContainerPrefix(outer, inner)) {
        const position = correspondingIndexPosition(outer, inner);
        if ((inner.path[position] as number) >= indexOf(outer)) inner.path[position] = (inner.path[position] as number) + 1;
      }
      return;
    case 'ArrayMove':
      if (isPathInstruction(inner) && isContainerPrefix(outer, inner)) {
        // realm-core 14.14 moves the outer instruction's own source index here (the arguments of its
        // get-vs-move helper are in this order); kept as is so clients and server agree.
        const position = correspondingIndexPosition(outer, inner);
        setIndex(outer, indexAfterMove(indexOf(outer), inner.path[position] as number, outer.ndx2));
      }
      return;
    case 'ArrayErase':
      if (!isPathInstruction(inner)) return;
      if (prefixNext(outer, inner) !== undefined) {
        discard(innerSide);
      } else if (isContainerPrefix(outer, inner)) {
        const position = correspondingIndexPosition(outer, inner);
        if (indexOf(outer) < (inner.path[position] as number)) inner.path[position] = (inner.path[position] as number) - 1;
      }
      return;
    default:
      return;
  }
}

// --- same-level rules: `left` has the higher (or equal) instruction type ---

/** Keeps the later of the two (by timestamp, then file ident). */
function discardEarlier(leftSide: Side, rightSide: Side): void {
  discard(earlier(timestampOf(leftSide), timestampOf(rightSide)) ? leftSide : rightSide);
}

function mergePair(leftSide: Side, rightSide: Side): void {
  const left = instrOf(leftSide);
  const right = instrOf(rightSide);
  const leftEarlier = earlier(timestampOf(leftSide), timestampOf(rightSide));

  switch (left.type) {
    case 'AddTable': {
      if (right.type !== 'AddTable' || left.table !== right.table) return;
      checkSameTable(left, right);
      discard(leftSide);
      discard(rightSide);
      return;
    }
    case 'EraseTable': {
      if (right.type === 'AddTable' && left.table === right.table) discard(rightSide);
      if (right.type === 'EraseTable' && left.table === right.table) {
        discard(leftSide);
        discard(rightSide);
      }
      return;
    }
    case 'EraseObject': {
      if (right.type === 'CreateObject' && sameObject(left, right)) discard(rightSide);
      if (right.type === 'EraseObject' && sameObject(left, right)) {
        // The most recent erase is kept, so an old erase cannot outweigh a later erase-and-create.
        if (earlier(timestampOf(rightSide), timestampOf(leftSide))) discard(rightSide);
        else discard(leftSide);
      }
      return;
    }
    case 'Update': {
      if (right.type !== 'Update' || !samePath(left, right)) return;
      if (isArrayUpdate(left) !== isArrayUpdate(right)) badMerge(left, 'Merge error: left.is_array_update() == right.is_array_update()');
      const arrayUpdate = isArrayUpdate(left);
      if (arrayUpdate && left.priorSize !== right.priorSize) badMerge(left, 'Merge error: left.prior_size == right.prior_size');
      const leftDefault = !arrayUpdate && left.isDefault;
      const rightDefault = !arrayUpdate && right.isDefault;
      if (left.value.type !== right.value.type) {
        // Creating an embedded object loses to setting a value, which replaces the whole subtree.
        if (left.value.type === 'objectValue') return discard(leftSide);
        if (right.value.type === 'objectValue') return discard(rightSide);
      }
      if (left.value.type === right.value.type && (left.value.type === 'list' || left.value.type === 'dictionary')) return;
      if (leftDefault === rightDefault) discardEarlier(leftSide, rightSide);
      else if (leftDefault) discard(leftSide);
      else discard(rightSide);
      return;
    }
    case 'AddInteger': {
      if (right.type !== 'Update' || !samePath(left, right)) return;
      // A set-default never cancels an increment, whatever the order.
      const rightDefault = !isArrayUpdate(right) && right.isDefault;
      if (earlier(timestampOf(rightSide), timestampOf(leftSide)) || rightDefault) {
        // The increment came after the set: fold it into the set (a set of null stays as it is; a set of
        // another type in a mixed field drops the increment).
        if (right.value.type === 'null') return;
        if (right.value.type !== 'int') return discard(leftSide);
        right.value = { type: 'int', value: BigInt.asIntN(64, right.value.value + left.value) };
      } else {
        discard(leftSide);
      }
      return;
    }
    case 'AddColumn': {
      if (right.type === 'EraseTable') {
        // A link column added towards a table the other side erased: the column goes too.
        if (left.valueType === 'link' && left.linkTargetTable === right.table) {
          rightSide.prepended.push({ type: 'EraseColumn', table: left.table, field: left.field });
          discard(leftSide);
        }
        return;
      }
      if (right.type !== 'AddColumn' || left.table !== right.table || left.field !== right.field) return;
      checkSameColumn(left, right);
      discard(leftSide);
      discard(rightSide);
      return;
    }
    case 'EraseColumn': {
      if (right.type === 'Update' && right.table === left.table && right.field === left.field) discard(rightSide);
      if (right.type === 'AddColumn' && right.table === left.table && right.field === left.field) discard(rightSide);
      if (right.type === 'EraseColumn' && right.table === left.table && right.field === left.field) {
        discard(leftSide);
        discard(rightSide);
      }
      return;
    }
    case 'ArrayInsert':
      return mergeArrayInsert(left, right, leftEarlier);
    case 'ArrayMove':
      return mergeArrayMove(left, leftSide, right, rightSide, leftEarlier);
    case 'ArrayErase':
      return mergeArrayErase(left, leftSide, right, rightSide);
    case 'Clear': {
      if (!isPathInstruction(right) || !samePath(left, right)) return;
      if (right.type === 'Update') {
        // Setting the same kind of collection that is cleared: both pass.
        if (left.collectionType === 'list' && right.value.type === 'list') return;
        if (left.collectionType === 'dictionary' && right.value.type === 'dictionary') return;
        discardEarlier(leftSide, rightSide);
      } else if (right.type === 'AddInteger') {
        discard(rightSide);
      } else if (right.type === 'Clear') {
        // The later clear is kept, so insertions after it survive.
        discardEarlier(leftSide, rightSide);
      }
      return;
    }
    case 'SetInsert':
    case 'SetErase': {
      if (right.type === 'Clear') {
        if (samePath(left, right)) discard(leftSide);
        return;
      }
      if ((right.type === 'SetInsert' || right.type === 'SetErase') && samePath(left, right) && samePayload(left.value, right.value)) {
        // Both are idempotent; the later one is kept so that order by timestamp holds when more arrive.
        discardEarlier(leftSide, rightSide);
      }
      return;
    }
    default:
      return;
  }
}

type Of<T extends Instruction['type']> = Extract<Instruction, { type: T }>;

function mergeArrayInsert(left: Of<'ArrayInsert'>, right: Instruction, leftEarlier: boolean): void {
  if (right.type === 'Update') {
    if (!sameContainer(left, right)) return;
    if (!isArrayUpdate(right)) badMerge(right, 'Merge error: right.is_array_update()');
    if (left.priorSize !== right.priorSize) badMerge(left, 'Merge error: left.prior_size == right.prior_size');
    if (!(indexOf(left) <= left.priorSize)) badMerge(left, 'Merge error: left.index() <= left.prior_size');
    if (!(indexOf(right) < right.priorSize)) badMerge(right, 'Merge error: right.index() < right.prior_size');
    right.priorSize += 1;
    if (indexOf(right) >= indexOf(left)) setIndex(right, indexOf(right) + 1);
    return;
  }
  if (right.type === 'ArrayInsert') {
    if (!sameContainer(left, right)) return;
    if (left.priorSize !== right.priorSize) badMerge(right, 'Exception: left.prior_size == right.prior_size');
    left.priorSize += 1;
    right.priorSize += 1;
    const l = indexOf(left);
    const r = indexOf(right);
    // Same position: the earlier insertion ends up first.
    if (l > r || (l === r && !leftEarlier)) setIndex(left, l + 1);
    else setIndex(right, r + 1);
  }
}

function mergeArrayMove(left: Of<'ArrayMove'>, leftSide: Side, right: Instruction, rightSide: Side, leftEarlier: boolean): void {
  if (right.type === 'Update') {
    if (!sameContainer(left, right)) return;
    if (!isArrayUpdate(right)) badMerge(right, 'Merge error: right.is_array_update()');
    if (!(indexOf(left) < left.priorSize)) badMerge(left, 'Merge error: left.index() < left.prior_size');
    if (!(indexOf(right) < right.priorSize)) badMerge(right, 'Merge error: right.index() < right.prior_size');
    setIndex(right, indexAfterMove(indexOf(right), indexOf(left), left.ndx2));
    return;
  }
  if (right.type === 'ArrayInsert') {
    if (!sameContainer(left, right)) return;
    left.priorSize += 1;
    if (indexOf(right) > indexOf(left)) setIndex(right, indexOf(right) - 1);
    else setIndex(left, indexOf(left) + 1);
    if (indexOf(right) < left.ndx2) left.ndx2 += 1;
    else if (indexOf(right) > left.ndx2) setIndex(right, indexOf(right) + 1);
    else if (leftEarlier) left.ndx2 += 1;
    else setIndex(right, indexOf(right) + 1);
    return;
  }
  if (right.type === 'ArrayMove') {
    if (!sameContainer(left, right)) return;
    if (left.priorSize !== right.priorSize) badMerge(left, 'Merge error: left.prior_size == right.prior_size');
    if (!(indexOf(left) < left.priorSize)) badMerge(left, 'Merge error: left.index() < left.prior_size');
    if (!(indexOf(right) < right.priorSize)) badMerge(right, 'Merge error: right.index() < right.prior_size');
    if (!(left.ndx2 < left.priorSize)) badMerge(left, 'Merge error: left.ndx_2 < left.prior_size');
    if (!(right.ndx2 < right.priorSize)) badMerge(right, 'Merge error: right.ndx_2 < right.prior_size');
    if (indexOf(left) < indexOf(right)) {
      setIndex(right, indexOf(right) - 1);
    } else if (indexOf(left) > indexOf(right)) {
      setIndex(left, indexOf(left) - 1);
    } else {
      // Both moved the same element: the later move decides where it goes.
      if (leftEarlier) {
        setIndex(right, left.ndx2);
        discard(leftSide);
        if (indexOf(right) === right.ndx2) discard(rightSide);
      } else {
        setIndex(left, right.ndx2);
        if (indexOf(left) === left.ndx2) discard(leftSide);
        discard(rightSide);
      }
      return;
    }
    if (left.ndx2 > indexOf(right)) left.ndx2 -= 1;
    else setIndex(right, indexOf(right) + 1);
    if (indexOf(left) < right.ndx2) right.ndx2 -= 1;
    else setIndex(left, indexOf(left) + 1);
    if (left.ndx2 < right.ndx2) right.ndx2 += 1;
    else if (left.ndx2 > right.ndx2) left.ndx2 += 1;
    else if (leftEarlier) right.ndx2 += 1;
    else left.ndx2 += 1;
    if (indexOf(left) === left.ndx2) discard(leftSide);
    if (indexOf(right) === right.ndx2) discard(rightSide);
  }
}

function mergeArrayErase(left: Of<'ArrayErase'>, leftSide: Side, right: Instruction, rightSide: Side): void {
  if (right.type === 'Update') {
    if (!sameContainer(left, right)) return;
    if (!isArrayUpdate(right)) badMerge(right, 'Merge error: right.is_array_update()');
    if (left.priorSize !== right.priorSize) badMerge(left, 'Merge error: left.prior_size == right.prior_size');
    if (!(indexOf(left) < left.priorSize)) badMerge(left, 'Merge error: left.index() < left.prior_size');
    if (!(indexOf(right) < right.priorSize)) badMerge(right, 'Merge error: right.index() < right.prior_size');
    right.priorSize -= 1;
    // An update of the erased element goes with it.
    if (indexOf(left) === indexOf(right)) discard(rightSide);
    else if (indexOf(right) > indexOf(left)) setIndex(right, indexOf(right) - 1);
    return;
  }
  if (right.type === 'ArrayInsert') {
    if (!sameContainer(left, right)) return;
    if (left.priorSize !== right.priorSize) badMerge(left, 'Merge error: left.prior_size == right.prior_size');
    if (!(indexOf(left) < left.priorSize)) badMerge(left, 'Merge error: left.index() < left.prior_size');
    if (!(indexOf(right) <= right.priorSize)) badMerge(left, 'Merge error: right.index() <= right.prior_size');
    left.priorSize += 1;
    right.priorSize -= 1;
    if (indexOf(right) <= indexOf(left)) setIndex(left, indexOf(left) + 1);
    else setIndex(right, indexOf(right) - 1);
    return;
  }
  if (right.type === 'ArrayMove') {
    if (!sameContainer(left, right)) return;
    if (left.priorSize !== right.priorSize) badMerge(left, 'Merge error: left.prior_size == right.prior_size');
    if (!(indexOf(left) < left.priorSize)) badMerge(left, 'Merge error: left.index() < left.prior_size');
    if (!(indexOf(right) < right.priorSize)) badMerge(right, 'Merge error: right.index() < right.prior_size');
    right.priorSize -= 1;
    if (indexOf(left) === indexOf(right)) {
      // The moved element is erased: erase it where it went, drop the move.
      setIndex(left, right.ndx2);
      discard(rightSide);
      return;
    }
    if (indexOf(left) > indexOf(right)) setIndex(left, indexOf(left) - 1);
    else setIndex(right, indexOf(right) - 1);
    if (indexOf(left) >= right.ndx2) setIndex(left, indexOf(left) + 1);
    else right.ndx2 -= 1;
    if (indexOf(right) === right.ndx2) discard(rightSide);
    return;
  }
  if (right.type === 'ArrayErase') {
    if (!sameContainer(left, right)) return;
    if (left.priorSize !== right.priorSize) badMerge(left, 'Merge error: left.prior_size == right.prior_size');
    if (!(indexOf(left) < left.priorSize)) badMerge(left, 'Merge error: left.index() < left.prior_size');
    if (!(indexOf(right) < right.priorSize)) badMerge(right, 'Merge error: right.index() < right.prior_size');
    left.priorSize -= 1;
    right.priorSize -= 1;
    if (indexOf(left) > indexOf(right)) setIndex(left, indexOf(left) - 1);
    else if (indexOf(left) < indexOf(right)) setIndex(right, indexOf(right) - 1);
    else {
      // Both erased the same element.
      discard(leftSide);
      discard(rightSide);
    }
  }
}

function checkSameTable(left: Of<'AddTable'>, right: Of<'AddTable'>): void {
  const name = left.table;
  const l = left.spec;
  const r = right.spec;
  if (l.kind === 'topLevel') {
    if (r.kind !== 'topLevel') schemaMismatch(`'${name}' has a primary key on one side, but not on the other.`);
    if (l.pkField !== r.pkField) schemaMismatch(`'${name}' has primary key '${l.pkField}' on one side, but primary key '${r.pkField}' on the other.`);
    if (l.pkType !== r.pkType) schemaMismatch(`'${name}' has primary key '${l.pkField}', which is of type ${l.pkType} on one side and type ${r.pkType} on the other.`);
    if (l.pkNullable !== r.pkNullable) schemaMismatch(`'${name}' has primary key '${l.pkField}', which is nullable on one side, but not the other.`);
    if (l.asymmetric !== r.asymmetric) schemaMismatch(`'${name}' is asymmetric on one side, but not on the other.`);
  } else if (r.kind !== 'embedded') {
    schemaMismatch(`'${name}' is an embedded table on one side, but not the other.`);
  }
}

function checkSameColumn(left: Of<'AddColumn'>, right: Of<'AddColumn'>): void {
  const where = `Property '${left.field}' in class '${left.table}'`;
  if (left.valueType !== right.valueType) schemaMismatch(`${where} is of type ${left.valueType} on one side and type ${right.valueType} on the other.`);
  if (left.nullable !== right.nullable) schemaMismatch(`${where} is nullable on one side and not on the other.`);
  if (left.collectionType !== right.collectionType) {
    schemaMismatch(`${where} is a ${collectionName(left.collectionType)} on one side, and a ${collectionName(right.collectionType)} on the other.`);
  }
  if (left.valueType === 'link' && left.linkTargetTable !== right.linkTargetTable) {
    schemaMismatch(`Link property '${left.field}' in class '${left.table}' points to class '${left.linkTargetTable}' on one side and to '${right.linkTargetTable}' on the other.`);
  }
}

function collectionName(type: Of<'AddColumn'>['collectionType']): string {
  return type === 'single' ? 'single value' : type;
}

function schemaMismatch(message: string): never {
  throw new TransformError('schemaMismatch', `Schema mismatch: ${message}`);
}

/** Malformed instructions are refused before any merge (realm-core's parser refuses them on receipt). */
function validate(instr: Instruction): void {
  if (!isPathInstruction(instr)) return;
  for (const element of instr.path) {
    if (typeof element === 'number' && !(Number.isInteger(element) && element >= 0 && element <= 0xffffffff)) {
      badMerge(instr, `Invalid list index ${element}`);
    }
  }
  const needsIndex = instr.type === 'ArrayInsert' || instr.type === 'ArrayMove' || instr.type === 'ArrayErase';
  if (needsIndex && (instr.path.length === 0 || typeof instr.path[instr.path.length - 1] !== 'number')) {
    badMerge(instr, `${instr.type} without a list index`);
  }
  if ('priorSize' in instr && !(Number.isInteger(instr.priorSize) && instr.priorSize >= 0)) badMerge(instr, 'Invalid prior size');
  if (instr.type === 'ArrayMove' && !(Number.isInteger(instr.ndx2) && instr.ndx2 >= 0)) badMerge(instr, 'Invalid move target');
}
