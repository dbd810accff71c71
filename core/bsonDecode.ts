// Reading BSON into the typed form the runtime's store keeps documents in (runtime/store/bson-values.ts),
// where each number keeps its BSON type: int32 and doubles with a fraction as JS numbers, whole-number
// doubles (4.0) as `Double`, int64 as `Long`. Shared by the store (journal, snapshot) and the function
// process (values crossing to and from functions), which may import nothing of the runtime. The bson library either promotes every number to a JS number (losing 4.0's type) or
// wraps every one; most documents hold no whole-number double, so a walk over the bytes (no allocation)
// picks the promoting decode for them and the wrapping decode, then unwrapped, only for the others.
import { BSON, type Double } from 'bson';

const PROMOTED = { promoteLongs: false, promoteValues: true, promoteBuffers: false } as const;
const WRAPPED = { promoteLongs: false, promoteValues: false, promoteBuffers: false } as const;
const PROMOTED_REGEXPS_KEPT = { ...PROMOTED, bsonRegExp: true } as const;
const WRAPPED_REGEXPS_KEPT = { ...WRAPPED, bsonRegExp: true } as const;

export interface StoredDecodeOptions {
  /**
   * Regular expressions as `BSONRegExp`, every option kept (`x`, `l` and their order included), rather than
   * as JS `RegExp`s, which have no such flags: the store's own files and imported dumps read them so.
   */
  keepRegExps?: boolean;
}

/** A BSON document in the stored form: the same as `BSON.deserialize(bytes, {promoteLongs: false})`, but 4.0 stays a `Double`. */
export function deserializeStored(bytes: Uint8Array, options: StoredDecodeOptions = {}): Record<string, unknown> {
  if (!hasWholeDouble(bytes)) return BSON.deserialize(bytes, options.keepRegExps ? PROMOTED_REGEXPS_KEPT : PROMOTED);
  return unwrapNumbers(BSON.deserialize(bytes, options.keepRegExps ? WRAPPED_REGEXPS_KEPT : WRAPPED)) as Record<string, unknown>;
}

/** In place on a freshly decoded value: Int32 and doubles with a fraction become JS numbers, symbols strings. */
function unwrapNumbers(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = unwrapNumbers(value[i]);
    return value;
  }
  const tag = (value as { _bsontype?: unknown })._bsontype;
  if (tag === 'Int32') return (value as { value: number }).value;
  if (tag === 'Double') {
    const n = (value as Double).value;
    return Number.isInteger(n) ? value : n;
  }
  if (tag === 'BSONSymbol') return (value as { value: string }).value;
  if (tag !== undefined || value instanceof Date || value instanceof RegExp) return value;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const item = record[key];
    const unwrapped = unwrapNumbers(item);
    if (unwrapped === item) continue;
    // A "__proto__" field is an own property of decoded documents; assigning would set the prototype.
    if (key === '__proto__') Object.defineProperty(record, key, { value: unwrapped, enumerable: true, writable: true, configurable: true });
    else record[key] = unwrapped;
  }
  return record;
}

/**
 * Whether a BSON document holds a double that is a whole number, found by walking its elements without
 * decoding them. Bytes it cannot walk answer true: the full decode then reports them.
 */
export function hasWholeDouble(bytes: Uint8Array): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  // Embedded documents and arrays are walked inline: their elements follow their size, and a type byte of
  // 0 ends one of them (or the whole document).
  let at = 4;
  try {
    while (at < end) {
      const type = bytes[at++];
      if (type === 0) continue;
      while (bytes[at] !== 0) {
        if (at >= end) return true;
        at++;
      }
      at++;
      let size = 0;
      switch (type) {
        case 0x01:
          if (Number.isInteger(view.getFloat64(at, true))) return true;
          at += 8;
          break;
        case 0x02: case 0x0d: case 0x0e: size = view.getInt32(at, true); at += 4 + size; break;
        case 0x03: case 0x04: at += 4; break;
        case 0x05: size = view.getInt32(at, true); at += 5 + size; break;
        case 0x06: case 0x0a: case 0x7f: case 0xff: break;
        case 0x07: at += 12; break;
        case 0x08: at += 1; break;
        case 0x09: case 0x11: case 0x12: at += 8; break;
        case 0x0b:
          at = bytes.indexOf(0, at) + 1;
          if (at === 0) return true;
          at = bytes.indexOf(0, at) + 1;
          if (at === 0) return true;
          break;
        case 0x0c: size = view.getInt32(at, true); at += 4 + size + 12; break;
        // Code with scope: its total size (itself included) comes first; numbers in the scope decode as they always have.
        case 0x0f:
          size = view.getInt32(at, true);
          if (size <= 0) return true;
          at += size;
          break;
        case 0x10: at += 4; break;
        case 0x13: at += 16; break;
        default: return true;
      }
      // A negative length would walk backwards, maybe forever.
      if (size < 0) return true;
    }
  } catch {
    // A length or value that runs past the end.
    return true;
  }
  return false;
}
