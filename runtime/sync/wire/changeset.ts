// The changeset codec: realm-core's binary changeset format (doc/changeset.md; the parser and encoder of
// realm-core 14.x are the reference for the details the doc leaves out) <-> Instruction values.
//
// Integers use realm's own variable-length code, not LEB128: 7 value bits per byte with 0x80 meaning "more",
// and the last byte carries 6 value bits plus a sign bit (0x40); a negative n is written as -(n+1) with the
// sign bit set. The parser is strict where realm's is lenient (it refuses what realm's encoder never writes:
// negative values in unsigned fields, booleans other than 0/1, path indexes over 2^32-1, string path markers
// other than -1, invalid UTF-8), and every length is checked against the bytes left before anything is read.
import { Decimal128, ObjectId, UUID } from 'bson';
import { ErrorCode, WireError } from './errors';
import {
  PAYLOAD_TYPE,
  type CollectionType,
  type Instruction,
  type PathElement,
  type Payload,
  type PayloadTypeName,
  type PrimaryKey,
} from './instructions';

export interface ChangesetLimits {
  /** Instructions in one changeset (InternString meta-instructions not counted). */
  maxInstructions: number;
  /** Elements of one path (below the field). */
  maxPathDepth: number;
  /** Bytes of one string (payload or interned); realm's own limit is 16,777,199. */
  maxStringSize: number;
  /** Bytes of one binary payload; realm's own limit is 16,777,208. */
  maxBinarySize: number;
  /** Interned strings of one changeset. */
  maxInternedStrings: number;
}

export const DEFAULT_CHANGESET_LIMITS: Readonly<ChangesetLimits> = Object.freeze({
  maxInstructions: 1_000_000,
  maxPathDepth: 64,
  maxStringSize: 16_777_199,
  maxBinarySize: 16_777_208,
  maxInternedStrings: 1_000_000,
});

const INTERN_STRING = 0x3f;
const INSTRUCTION_CODES = {
  AddTable: 0, EraseTable: 1, CreateObject: 2, EraseObject: 3, Update: 4, AddInteger: 5, AddColumn: 6,
  EraseColumn: 7, ArrayInsert: 8, ArrayMove: 9, ArrayErase: 10, Clear: 11, SetInsert: 12, SetErase: 13,
} as const satisfies Record<Instruction['type'], number>;

/** realm's Table::Type in AddTable. */
const TABLE_TYPE = { topLevel: 0, embedded: 1, topLevelAsymmetric: 2 } as const;
const COLLECTION_TYPES: readonly CollectionType[] = ['single', 'list', 'dictionary', 'set'];
const PAYLOAD_NAME_BY_CODE = new Map<number, PayloadTypeName>(
  (Object.entries(PAYLOAD_TYPE) as [PayloadTypeName, number][]).map(([name, code]) => [code, name]),
);
const KEY_TYPES: ReadonlySet<PayloadTypeName> = new Set(['int', 'string', 'objectId', 'uuid', 'globalKey']);
const DECIMAL_EXPONENT_BIAS = 6176;
const NANOS_PER_SECOND = 1_000_000_000;

type IntKind = 'u8' | 'u32' | 'i32' | 'i64' | 'u64';
/** Bounds as bigints for the slow path, and as doubles for the fast one (exact where a fast value can reach). */
const INT_SPEC: Record<IntKind, { maxBytes: number; min: bigint; max: bigint; minNumber: number; maxNumber: number }> = {
  u8: { maxBytes: 2, min: 0n, max: 0xffn, minNumber: 0, maxNumber: 0xff },
  u32: { maxBytes: 5, min: 0n, max: 0xffff_ffffn, minNumber: 0, maxNumber: 0xffff_ffff },
  i32: { maxBytes: 5, min: -(2n ** 31n), max: 2n ** 31n - 1n, minNumber: -(2 ** 31), maxNumber: 2 ** 31 - 1 },
  i64: { maxBytes: 10, min: -(2n ** 63n), max: 2n ** 63n - 1n, minNumber: -Infinity, maxNumber: Infinity },
  u64: { maxBytes: 10, min: 0n, max: 2n ** 64n - 1n, minNumber: 0, maxNumber: Infinity },
};

const utf8Decoder = new TextDecoder('utf-8', { fatal: true });
const utf8Encoder = new TextEncoder();

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

class ChangesetReader {
  private pos = 0;
  private readonly view: DataView;
  readonly strings: string[] = [];
  readonly table: StringTableEntry[] = [];
  private readonly seen = new Set<string>();
  private instructionCount = 0;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly limits: ChangesetLimits,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  atEnd(): boolean {
    return this.pos >= this.bytes.length;
  }

  fail(message: string): never {
    throw new WireError(ErrorCode.bad_changeset, `Bad changeset at byte ${this.pos}: ${message}`);
  }

  /** One integer of realm's code, range-checked for `kind`; a number when it is a safe integer. */
  private int(kind: IntKind, what: string): number | bigint {
    const { maxBytes, minNumber, maxNumber } = INT_SPEC[kind];
    const bytes = this.bytes;
    const start = this.pos;
    // Up to 7 bytes hold at most 48 value bits: exact in a double, so no BigInt on the common path.
    let value = 0;
    let scale = 1;
    for (let i = 0; ; i++) {
      if (this.pos >= bytes.length) this.fail(`${what}: the changeset ends inside an integer`);
      const byte = bytes[this.pos++];
      if ((byte & 0x80) === 0) {
        if (i >= 7) return this.bigInt(start, kind, what);
        value += (byte & 0x3f) * scale;
        if (byte & 0x40) value = -value - 1;
        if (value < minNumber || value > maxNumber) this.fail(`${what}: ${value} is out of range`);
        return value;
      }
      if (i === maxBytes - 1) this.fail(`${what}: integer longer than ${maxBytes} bytes`);
      value += (byte & 0x7f) * scale;
      scale *= 128;
    }
  }

  private bigInt(start: number, kind: IntKind, what: string): number | bigint {
    const { min, max } = INT_SPEC[kind];
    let value = 0n;
    let shift = 0n;
    for (let p = start; ; p++) {
      const byte = this.bytes[p];
      if ((byte & 0x80) === 0) {
        value |= BigInt(byte & 0x3f) << shift;
        if (byte & 0x40) value = -value - 1n;
        break;
      }
      value |= BigInt(byte & 0x7f) << shift;
      shift += 7n;
    }
    if (value < min || value > max) this.fail(`${what}: ${value} is out of range`);
    return Number.isSafeInteger(Number(value)) && BigInt(Number(value)) === value ? Number(value) : value;
  }

  u8(what: string): number {
    return this.int('u8', what) as number;
  }
  u32(what: string): number {
    return this.int('u32', what) as number;
  }
  i32(what: string): number {
    return this.int('i32', what) as number;
  }
  i64(what: string): bigint {
    return BigInt(this.int('i64', what));
  }
  u64(what: string): bigint {
    return BigInt(this.int('u64', what));
  }
  /** An int64 wanted as a JS number (path elements): safe-integer range is enough there. */
  i64Number(what: string): number {
    const value = this.int('i64', what);
    if (typeof value === 'bigint') this.fail(`${what}: ${value} is out of range`);
    return value;
  }

  bool(what: string): boolean {
    const value = this.u8(what);
    if (value > 1) this.fail(`${what}: boolean ${value} is neither 0 nor 1`);
    return value === 1;
  }

  take(size: number, what: string): Uint8Array {
    if (size > this.bytes.length - this.pos) {
      this.fail(`${what}: ${size} bytes declared, ${this.bytes.length - this.pos} left`);
    }
    const out = this.bytes.subarray(this.pos, this.pos + size);
    this.pos += size;
    return out;
  }

  sizedBytes(limit: number, what: string): Uint8Array {
    const size = this.u64(what);
    if (size > BigInt(limit)) this.fail(`${what}: ${size} bytes is over the limit of ${limit}`);
    return this.take(Number(size), what);
  }

  string(what: string): string {
    const raw = this.sizedBytes(this.limits.maxStringSize, what);
    if (raw.length <= 64) {
      // Names and keys are short and mostly ASCII: no decoder call for them.
      let ascii = '';
      for (let i = 0; i < raw.length; i++) {
        if (raw[i] >= 0x80) return this.utf8(raw, what);
        ascii += String.fromCharCode(raw[i]);
      }
      return ascii;
    }
    return this.utf8(raw, what);
  }

  private utf8(raw: Uint8Array, what: string): string {
    try {
      return utf8Decoder.decode(raw);
    } catch {
      this.fail(`${what}: not valid UTF-8`);
    }
  }

  float32(): number {
    const at = this.take(4, 'float').byteOffset - this.bytes.byteOffset;
    return this.view.getFloat32(at, true);
  }

  float64(): number {
    const at = this.take(8, 'double').byteOffset - this.bytes.byteOffset;
    return this.view.getFloat64(at, true);
  }

  internString(): void {
    const index = this.u32('interned string index');
    if (index !== this.strings.length) this.fail(`interned string index ${index}, expected ${this.strings.length}`);
    if (index >= this.limits.maxInternedStrings) this.fail(`more than ${this.limits.maxInternedStrings} interned strings`);
    const value = this.string('interned string');
    if (this.seen.has(value)) this.fail(`string ${JSON.stringify(value)} interned twice`);
    this.seen.add(value);
    this.strings.push(value);
    this.table.push({ value, beforeInstruction: this.instructionCount });
  }

  interned(what: string): string {
    const index = this.u32(what);
    if (index >= this.strings.length) this.fail(`${what}: interned string ${index} is not defined`);
    return this.strings[index];
  }

  payloadType(what: string): PayloadTypeName {
    const code = this.int('i64', what);
    const name = typeof code === 'number' ? PAYLOAD_NAME_BY_CODE.get(code) : undefined;
    if (!name) this.fail(`${what}: unknown type ${code}`);
    return name;
  }

  collectionType(): CollectionType {
    const code = this.u8('collection type');
    const type = COLLECTION_TYPES[code];
    if (!type) this.fail(`unknown collection type ${code}`);
    return type;
  }

  // Consecutive instructions mostly name the same object: the last ObjectId/UUID is reused (bson values are
  // treated as immutable), which saves most of their construction cost.
  private lastObjectId: { bytes: Uint8Array; value: ObjectId } | undefined;
  private lastUuid: { bytes: Uint8Array; value: UUID } | undefined;

  objectId(): ObjectId {
    const bytes = this.take(12, 'ObjectId');
    if (this.lastObjectId && sameBytes(this.lastObjectId.bytes, bytes)) return this.lastObjectId.value;
    const value = new ObjectId(Buffer.from(bytes));
    this.lastObjectId = { bytes, value };
    return value;
  }

  uuid(): UUID {
    const bytes = this.take(16, 'UUID');
    if (this.lastUuid && sameBytes(this.lastUuid.bytes, bytes)) return this.lastUuid.value;
    const value = new UUID(Buffer.from(bytes));
    this.lastUuid = { bytes, value };
    return value;
  }

  globalKey(): { hi: bigint; lo: bigint } {
    return { hi: this.u64('global key hi'), lo: this.u64('global key lo') };
  }

  primaryKey(): PrimaryKey {
    const type = this.payloadType('primary key type');
    switch (type) {
      case 'null':
        return { type: 'null' };
      case 'int':
        return { type: 'int', value: this.i64('primary key') };
      case 'string':
        return { type: 'string', value: this.interned('primary key') };
      case 'objectId':
        return { type: 'objectId', value: this.objectId() };
      case 'uuid':
        return { type: 'uuid', value: this.uuid() };
      case 'globalKey':
        return { type: 'globalKey', ...this.globalKey() };
      default:
        this.fail(`a primary key cannot be of type ${type}`);
    }
  }

  timestamp(): Payload {
    const seconds = this.i64('timestamp seconds');
    const nanoseconds = this.i64('timestamp nanoseconds');
    if (nanoseconds <= -NANOS_PER_SECOND || nanoseconds >= NANOS_PER_SECOND) {
      this.fail(`timestamp nanoseconds ${nanoseconds} out of range`);
    }
    return { type: 'timestamp', seconds, nanoseconds: Number(nanoseconds) };
  }

  decimal(): Decimal128 {
    // The coefficient uses the same 7-bit groups but no sign bit, up to 17 bytes (113 bits).
    let coefficient = 0n;
    for (let i = 0; ; i++) {
      if (i === 17) this.fail('decimal coefficient longer than 17 bytes');
      if (this.pos >= this.bytes.length) this.fail('the changeset ends inside a decimal');
      const byte = this.bytes[this.pos++];
      coefficient |= BigInt(byte & 0x7f) << BigInt(7 * i);
      if ((byte & 0x80) === 0) break;
    }
    const exponent = this.i32('decimal exponent');
    const sign = this.i32('decimal sign');
    if (coefficient >= 1n << 113n) this.fail('decimal coefficient over 113 bits');
    const biased = exponent + DECIMAL_EXPONENT_BIAS;
    if (biased < 0 || biased > 0x3fff) this.fail(`decimal exponent ${exponent} out of range`);
    if (sign !== 0 && sign !== 1) this.fail(`decimal sign ${sign} is neither 0 nor 1`);
    const bits = coefficient | (BigInt(biased) << 113n) | (BigInt(sign) << 127n);
    const bytes = Buffer.alloc(16);
    bytes.writeBigUInt64LE(bits & 0xffff_ffff_ffff_ffffn, 0);
    bytes.writeBigUInt64LE(bits >> 64n, 8);
    return new Decimal128(bytes);
  }

  payload(): Payload {
    const type = this.payloadType('payload type');
    switch (type) {
      case 'int':
        return { type, value: this.i64('int') };
      case 'bool':
        return { type, value: this.bool('bool') };
      case 'string':
        return { type, value: this.string('string') };
      case 'binary':
        return { type, value: Uint8Array.from(this.sizedBytes(this.limits.maxBinarySize, 'binary')) };
      case 'timestamp':
        return this.timestamp();
      case 'float':
        return { type, value: this.float32() };
      case 'double':
        return { type, value: this.float64() };
      case 'decimal':
        return { type, value: this.decimal() };
      case 'objectId':
        return { type, value: this.objectId() };
      case 'uuid':
        return { type, value: this.uuid() };
      case 'link': {
        const table = this.interned('link target table');
        return { type, table, target: this.primaryKey() };
      }
      case 'globalKey':
        // realm's parser refuses it too: global keys are never values on the wire.
        return this.fail('a payload cannot be a global key');
      case 'null':
      case 'objectValue':
      case 'dictionary':
      case 'list':
      case 'set':
      case 'erased':
        return { type };
    }
  }

  path(): PathElement[] {
    const length = this.u32('path length');
    if (length > this.limits.maxPathDepth) this.fail(`path of ${length} elements is deeper than ${this.limits.maxPathDepth}`);
    const path: PathElement[] = [];
    for (let i = 0; i < length; i++) {
      const element = this.i64Number('path element');
      if (element >= 0) {
        if (element > 0xffff_ffff) this.fail(`path index ${element} out of range`);
        path.push(element);
      } else if (element === -1) {
        path.push(this.interned('path key'));
      } else {
        this.fail(`path element marker ${element} (expected an index or -1)`);
      }
    }
    return path;
  }

  pathTarget(): { table: string; object: PrimaryKey; field: string; path: PathElement[] } {
    const table = this.interned('table');
    const object = this.primaryKey();
    const field = this.interned('field');
    return { table, object, field, path: this.path() };
  }

  indexedPathTarget(name: string): { table: string; object: PrimaryKey; field: string; path: PathElement[] } {
    const target = this.pathTarget();
    if (typeof target.path[target.path.length - 1] !== 'number') this.fail(`${name} without an index`);
    return target;
  }

  instruction(code: number): Instruction {
    switch (code) {
      case INSTRUCTION_CODES.AddTable: {
        const table = this.interned('table');
        const tableType = this.u8('table type');
        if (tableType === TABLE_TYPE.embedded) return { type: 'AddTable', table, spec: { kind: 'embedded' } };
        if (tableType !== TABLE_TYPE.topLevel && tableType !== TABLE_TYPE.topLevelAsymmetric) {
          this.fail(`AddTable: unknown table type ${tableType}`);
        }
        const pkField = this.interned('primary key field');
        const pkType = this.payloadType('primary key type');
        if (!KEY_TYPES.has(pkType)) this.fail(`AddTable: ${pkType} cannot be a primary key type`);
        const pkNullable = this.bool('primary key nullable');
        return {
          type: 'AddTable', table,
          spec: { kind: 'topLevel', pkField, pkType, pkNullable, asymmetric: tableType === TABLE_TYPE.topLevelAsymmetric },
        };
      }
      case INSTRUCTION_CODES.EraseTable:
        return { type: 'EraseTable', table: this.interned('table') };
      case INSTRUCTION_CODES.CreateObject: {
        const table = this.interned('table');
        return { type: 'CreateObject', table, object: this.primaryKey() };
      }
      case INSTRUCTION_CODES.EraseObject: {
        const table = this.interned('table');
        return { type: 'EraseObject', table, object: this.primaryKey() };
      }
      case INSTRUCTION_CODES.Update: {
        const target = this.pathTarget();
        const value = this.payload();
        if (typeof target.path[target.path.length - 1] === 'number') {
          return { type: 'Update', ...target, value, isDefault: false, priorSize: this.u32('prior size') };
        }
        return { type: 'Update', ...target, value, isDefault: this.bool('is default'), priorSize: 0 };
      }
      case INSTRUCTION_CODES.AddInteger: {
        const target = this.pathTarget();
        return { type: 'AddInteger', ...target, value: this.i64('AddInteger value') };
      }
      case INSTRUCTION_CODES.AddColumn: {
        const table = this.interned('table');
        const field = this.interned('field');
        const valueType = this.payloadType('column type');
        const nullable = this.bool('nullable');
        const collectionType = this.collectionType();
        const linkTargetTable = valueType === 'link' ? this.interned('link target table') : undefined;
        const keyType = collectionType === 'dictionary' ? this.payloadType('dictionary key type') : 'null';
        const instruction: Instruction = { type: 'AddColumn', table, field, valueType, keyType, nullable, collectionType };
        if (linkTargetTable !== undefined) instruction.linkTargetTable = linkTargetTable;
        return instruction;
      }
      case INSTRUCTION_CODES.EraseColumn: {
        const table = this.interned('table');
        return { type: 'EraseColumn', table, field: this.interned('field') };
      }
      case INSTRUCTION_CODES.ArrayInsert: {
        const target = this.indexedPathTarget('ArrayInsert');
        const value = this.payload();
        return { type: 'ArrayInsert', ...target, value, priorSize: this.u32('prior size') };
      }
      case INSTRUCTION_CODES.ArrayMove: {
        const target = this.indexedPathTarget('ArrayMove');
        const ndx2 = this.u32('move target index');
        return { type: 'ArrayMove', ...target, ndx2, priorSize: this.u32('prior size') };
      }
      case INSTRUCTION_CODES.ArrayErase: {
        const target = this.indexedPathTarget('ArrayErase');
        return { type: 'ArrayErase', ...target, priorSize: this.u32('prior size') };
      }
      case INSTRUCTION_CODES.Clear: {
        const target = this.pathTarget();
        return { type: 'Clear', ...target, collectionType: this.collectionType() };
      }
      case INSTRUCTION_CODES.SetInsert: {
        const target = this.pathTarget();
        return { type: 'SetInsert', ...target, value: this.payload() };
      }
      case INSTRUCTION_CODES.SetErase: {
        const target = this.pathTarget();
        return { type: 'SetErase', ...target, value: this.payload() };
      }
      default:
        this.fail(`unknown instruction type ${code}`);
    }
  }

  readAll(): Instruction[] {
    const instructions: Instruction[] = [];
    while (!this.atEnd()) {
      const code = this.u8('instruction type');
      if (code === INTERN_STRING) {
        this.internString();
        continue;
      }
      if (instructions.length >= this.limits.maxInstructions) this.fail(`more than ${this.limits.maxInstructions} instructions`);
      instructions.push(this.instruction(code));
      this.instructionCount = instructions.length;
    }
    return instructions;
  }
}

/** An interned string and where it stood: before the instruction of that index (the count when after all). */
export interface StringTableEntry {
  value: string;
  beforeInstruction: number;
}

export interface ParsedChangeset {
  instructions: Instruction[];
  /**
   * The string table in order with the place of each InternString, including strings no instruction uses
   * (realm's client interns the class name of an embedded object it creates, and "" for each non-link column).
   */
  strings: StringTableEntry[];
}

/** Parses a changeset; also returns its string table, which re-encoding byte for byte needs. */
export function parseChangesetWithStrings(bytes: Uint8Array, limits?: Partial<ChangesetLimits>): ParsedChangeset {
  const reader = new ChangesetReader(bytes, { ...DEFAULT_CHANGESET_LIMITS, ...limits });
  const instructions = reader.readAll();
  return { instructions, strings: reader.table };
}

/** Parses a changeset. Throws a WireError (code 212, bad changeset) on malformed or over-limit input. */
export function parseChangeset(bytes: Uint8Array, limits?: Partial<ChangesetLimits>): Instruction[] {
  return parseChangesetWithStrings(bytes, limits).instructions;
}

class ChangesetWriter {
  private buffer = new Uint8Array(256);
  private length = 0;
  private readonly interned = new Map<string, number>();
  private readonly scratch = new DataView(new ArrayBuffer(8));

  private ensure(extra: number): void {
    if (this.length + extra <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.length + extra) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buffer.subarray(0, this.length));
    this.buffer = next;
  }

  byte(value: number): void {
    this.ensure(1);
    this.buffer[this.length++] = value;
  }

  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
  }

  int(value: number | bigint): void {
    // Most bigints (an int payload) fit 32 bits: the number loop below is several times faster than BigInt arithmetic.
    if (typeof value === 'bigint' && value < 2147483648n && value > -2147483648n) value = Number(value);
    if (typeof value === 'number' && Number.isSafeInteger(value) && Math.abs(value) < 2 ** 31) {
      let magnitude = value < 0 ? -value - 1 : value;
      const signBit = value < 0 ? 0x40 : 0;
      while (magnitude >= 0x40) {
        this.byte(0x80 | (magnitude & 0x7f));
        magnitude = Math.floor(magnitude / 128);
      }
      this.byte(signBit | magnitude);
      return;
    }
    let big = BigInt(value);
    const signBit = big < 0n ? 0x40 : 0;
    if (big < 0n) big = -big - 1n;
    while (big >= 0x40n) {
      this.byte(0x80 | Number(big & 0x7fn));
      big >>= 7n;
    }
    this.byte(signBit | Number(big));
  }

  bool(value: boolean): void {
    this.byte(value ? 1 : 0);
  }

  sized(bytes: Uint8Array): void {
    this.int(bytes.length);
    this.raw(bytes);
  }

  /** A string as its UTF-8 size then bytes, without an intermediate array for ASCII. */
  text(value: string): void {
    let ascii = true;
    for (let i = 0; i < value.length; i++) {
      if (value.charCodeAt(i) >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (!ascii) {
      this.sized(utf8Encoder.encode(value));
      return;
    }
    this.int(value.length);
    this.ensure(value.length);
    for (let i = 0; i < value.length; i++) this.buffer[this.length++] = value.charCodeAt(i);
  }

  /** Interns `value` if new: the InternString meta-instruction goes before the instruction that uses it. */
  intern(value: string): void {
    if (this.interned.has(value)) return;
    const index = this.interned.size;
    this.interned.set(value, index);
    this.byte(INTERN_STRING);
    this.int(index);
    this.text(value);
  }

  ref(value: string): void {
    const index = this.interned.get(value);
    if (index === undefined) throw new Error(`changeset encoder: ${JSON.stringify(value)} was not interned`);
    this.int(index);
  }

  float32(value: number): void {
    this.scratch.setFloat32(0, value, true);
    this.raw(new Uint8Array(this.scratch.buffer, 0, 4).slice());
  }

  float64(value: number): void {
    this.scratch.setFloat64(0, value, true);
    this.raw(new Uint8Array(this.scratch.buffer, 0, 8).slice());
  }

  result(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }

  get size(): number {
    return this.length;
  }
}

function internPrimaryKey(writer: ChangesetWriter, key: PrimaryKey): void {
  if (key.type === 'string') writer.intern(key.value);
}

function internPayload(writer: ChangesetWriter, payload: Payload): void {
  if (payload.type !== 'link') return;
  writer.intern(payload.table);
  internPrimaryKey(writer, payload.target);
}

/** The strings an instruction refers to, in the order realm's replication interns them. */
function internInstruction(writer: ChangesetWriter, instruction: Instruction): void {
  writer.intern(instruction.table);
  switch (instruction.type) {
    case 'AddTable':
      if (instruction.spec.kind === 'topLevel') writer.intern(instruction.spec.pkField);
      return;
    case 'EraseTable':
      return;
    case 'AddColumn':
      writer.intern(instruction.field);
      // realm interns "" as the link target of every non-link column (and writes it nowhere).
      writer.intern(instruction.valueType === 'link' ? linkTarget(instruction.linkTargetTable) : '');
      return;
    case 'EraseColumn':
      writer.intern(instruction.field);
      return;
    case 'CreateObject':
    case 'EraseObject':
      internPrimaryKey(writer, instruction.object);
      return;
    default:
      internPrimaryKey(writer, instruction.object);
      writer.intern(instruction.field);
      for (const element of instruction.path) if (typeof element === 'string') writer.intern(element);
      if ('value' in instruction && typeof instruction.value === 'object') internPayload(writer, instruction.value);
  }
}

function linkTarget(table: string | undefined): string {
  if (table === undefined) throw new Error('changeset encoder: an AddColumn of type link needs linkTargetTable');
  return table;
}

function writePayloadType(writer: ChangesetWriter, type: PayloadTypeName): void {
  const code = PAYLOAD_TYPE[type];
  if (code === undefined) throw new Error(`changeset encoder: unknown payload type ${String(type)}`);
  writer.int(code);
}

function writePrimaryKey(writer: ChangesetWriter, key: PrimaryKey): void {
  writePayloadType(writer, key.type);
  switch (key.type) {
    case 'null':
      return;
    case 'int':
      writer.int(key.value);
      return;
    case 'string':
      writer.ref(key.value);
      return;
    case 'objectId':
      writer.raw(key.value.id);
      return;
    case 'uuid':
      writer.raw(key.value.buffer);
      return;
    case 'globalKey':
      writer.int(key.hi);
      writer.int(key.lo);
      return;
  }
}

function writeDecimal(writer: ChangesetWriter, value: Decimal128): void {
  const bytes = value.bytes;
  const low = Buffer.from(bytes.buffer, bytes.byteOffset, 16).readBigUInt64LE(0);
  const high = Buffer.from(bytes.buffer, bytes.byteOffset, 16).readBigUInt64LE(8);
  const bits = (high << 64n) | low;
  let coefficient = bits & ((1n << 113n) - 1n);
  const exponent = Number((bits >> 113n) & 0x3fffn) - DECIMAL_EXPONENT_BIAS;
  const sign = bits >> 127n === 1n;
  while (coefficient >= 0x40n) {
    writer.byte(0x80 | Number(coefficient & 0x7fn));
    coefficient >>= 7n;
  }
  writer.byte(Number(coefficient));
  writer.int(exponent);
  writer.bool(sign);
}

function writePayload(writer: ChangesetWriter, payload: Payload): void {
  writePayloadType(writer, payload.type);
  switch (payload.type) {
    case 'int':
      writer.int(payload.value);
      return;
    case 'bool':
      writer.bool(payload.value);
      return;
    case 'string':
      writer.text(payload.value);
      return;
    case 'binary':
      writer.sized(payload.value);
      return;
    case 'timestamp':
      writer.int(payload.seconds);
      writer.int(payload.nanoseconds);
      return;
    case 'float':
      writer.float32(payload.value);
      return;
    case 'double':
      writer.float64(payload.value);
      return;
    case 'decimal':
      writeDecimal(writer, payload.value);
      return;
    case 'objectId':
      writer.raw(payload.value.id);
      return;
    case 'uuid':
      writer.raw(payload.value.buffer);
      return;
    case 'link':
      writer.ref(payload.table);
      writePrimaryKey(writer, payload.target);
      return;
    case 'globalKey':
      throw new Error('changeset encoder: a global key is not a payload realm clients accept');
    case 'null':
    case 'objectValue':
    case 'dictionary':
    case 'list':
    case 'set':
    case 'erased':
      return;
  }
}

function writePathTarget(
  writer: ChangesetWriter,
  code: number,
  instruction: { table: string; object: PrimaryKey; field: string; path: PathElement[] },
): void {
  writer.byte(code);
  writer.ref(instruction.table);
  writePrimaryKey(writer, instruction.object);
  writer.ref(instruction.field);
  writer.int(instruction.path.length);
  for (const element of instruction.path) {
    if (typeof element === 'string') {
      writer.int(-1);
      writer.ref(element);
    } else {
      writer.int(element);
    }
  }
}

function writeInstruction(writer: ChangesetWriter, instruction: Instruction): void {
  switch (instruction.type) {
    case 'AddTable': {
      writer.byte(INSTRUCTION_CODES.AddTable);
      writer.ref(instruction.table);
      const spec = instruction.spec;
      if (spec.kind === 'embedded') {
        writer.int(TABLE_TYPE.embedded);
        return;
      }
      writer.int(spec.asymmetric ? TABLE_TYPE.topLevelAsymmetric : TABLE_TYPE.topLevel);
      writer.ref(spec.pkField);
      writePayloadType(writer, spec.pkType);
      writer.bool(spec.pkNullable);
      return;
    }
    case 'EraseTable':
      writer.byte(INSTRUCTION_CODES.EraseTable);
      writer.ref(instruction.table);
      return;
    case 'CreateObject':
    case 'EraseObject':
      writer.byte(INSTRUCTION_CODES[instruction.type]);
      writer.ref(instruction.table);
      writePrimaryKey(writer, instruction.object);
      return;
    case 'AddColumn':
      writer.byte(INSTRUCTION_CODES.AddColumn);
      writer.ref(instruction.table);
      writer.ref(instruction.field);
      writePayloadType(writer, instruction.valueType);
      writer.bool(instruction.nullable);
      writer.int(COLLECTION_TYPES.indexOf(instruction.collectionType));
      if (instruction.valueType === 'link') writer.ref(linkTarget(instruction.linkTargetTable));
      if (instruction.collectionType === 'dictionary') writePayloadType(writer, instruction.keyType);
      return;
    case 'EraseColumn':
      writer.byte(INSTRUCTION_CODES.EraseColumn);
      writer.ref(instruction.table);
      writer.ref(instruction.field);
      return;
    case 'Update':
      writePathTarget(writer, INSTRUCTION_CODES.Update, instruction);
      writePayload(writer, instruction.value);
      if (typeof instruction.path[instruction.path.length - 1] === 'number') writer.int(instruction.priorSize);
      else writer.bool(instruction.isDefault);
      return;
    case 'AddInteger':
      writePathTarget(writer, INSTRUCTION_CODES.AddInteger, instruction);
      writer.int(instruction.value);
      return;
    case 'ArrayInsert':
      writePathTarget(writer, INSTRUCTION_CODES.ArrayInsert, instruction);
      writePayload(writer, instruction.value);
      writer.int(instruction.priorSize);
      return;
    case 'ArrayMove':
      writePathTarget(writer, INSTRUCTION_CODES.ArrayMove, instruction);
      writer.int(instruction.ndx2);
      writer.int(instruction.priorSize);
      return;
    case 'ArrayErase':
      writePathTarget(writer, INSTRUCTION_CODES.ArrayErase, instruction);
      writer.int(instruction.priorSize);
      return;
    case 'Clear':
      writePathTarget(writer, INSTRUCTION_CODES.Clear, instruction);
      writer.int(COLLECTION_TYPES.indexOf(instruction.collectionType));
      return;
    case 'SetInsert':
    case 'SetErase':
      writePathTarget(writer, INSTRUCTION_CODES[instruction.type], instruction);
      writePayload(writer, instruction.value);
      return;
  }
}

export interface EncodeChangesetOptions {
  /**
   * Strings to intern at given places (from `parseChangesetWithStrings`, to re-encode byte for byte; realm's
   * server writes its whole table before the first instruction). A string an instruction needs earlier is
   * interned where it is first needed, as realm's client does with every string.
   */
  strings?: readonly StringTableEntry[];
}

/** Encodes instructions as a changeset. Throws a plain Error for values no valid changeset holds. */
export function encodeChangeset(instructions: readonly Instruction[], options: EncodeChangesetOptions = {}): Uint8Array {
  const writer = new ChangesetWriter();
  // realm's server writes an empty changeset as no bytes at all, string table included.
  if (instructions.length === 0) return writer.result();
  const planned = options.strings ?? [];
  let next = 0;
  instructions.forEach((instruction, index) => {
    for (; next < planned.length && planned[next].beforeInstruction <= index; next++) writer.intern(planned[next].value);
    internInstruction(writer, instruction);
    writeInstruction(writer, instruction);
  });
  for (; next < planned.length; next++) writer.intern(planned[next].value);
  return writer.result();
}

/**
 * Encodes instructions as consecutive changesets, each closed once it holds `maxInstructions` instructions or
 * `maxBytes` bytes (so one may pass `maxBytes` by its last instruction): a bootstrap the platform sends in
 * several DOWNLOAD messages. Always at least one changeset, empty when there is no instruction.
 */
export function encodeChangesetBatches(instructions: readonly Instruction[], limits: { maxInstructions: number; maxBytes: number }): Uint8Array[] {
  const batches: Uint8Array[] = [];
  let writer = new ChangesetWriter();
  let count = 0;
  for (const instruction of instructions) {
    internInstruction(writer, instruction);
    writeInstruction(writer, instruction);
    if (++count >= limits.maxInstructions || writer.size >= limits.maxBytes) {
      batches.push(writer.result());
      writer = new ChangesetWriter();
      count = 0;
    }
  }
  if (count > 0 || batches.length === 0) batches.push(writer.result());
  return batches;
}

/**
 * A primary key as a compensating write error names it (`rejectedUpdates[].pk`): base64 of its payload type
 * then its value, a string written inline (size, bytes) rather than interned, as realm's client reads it.
 */
export function encodeBase64PrimaryKey(key: PrimaryKey): string {
  const writer = new ChangesetWriter();
  writePayloadType(writer, key.type);
  switch (key.type) {
    case 'int': writer.int(key.value); break;
    case 'string': writer.text(key.value); break;
    case 'objectId': writer.raw(key.value.id); break;
    case 'uuid': writer.raw(key.value.buffer); break;
    case 'globalKey': throw new Error('changeset encoder: a global key is never a synced primary key');
    case 'null': break;
  }
  return Buffer.from(writer.result()).toString('base64');
}
