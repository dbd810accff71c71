// Documents of the store's form written as BSON, faster than the bson library's serializer for the values
// documents are mostly made of (strings, numbers, booleans, dates, ObjectIds, Doubles, Longs, nested documents
// and arrays): ASCII names and strings are written byte by byte rather than by a call into Buffer per value.
// Every other value is written by the bson library itself, so the bytes are the library's either way.
import { BSON, type Double, type Long, type ObjectId } from 'bson';
import { bsonType, isInt32Number } from '../store/bson-values';
import type { Document } from '../store/types';

/** Raised when a document does not fit the room left; the caller writes it another way. */
export class NoRoom extends Error {}

const INT32 = 0x10;
const DOUBLE = 0x01;
const STRING = 0x02;
const OBJECT = 0x03;
const ARRAY = 0x04;
const OBJECT_ID = 0x07;
const BOOLEAN = 0x08;
const DATE = 0x09;
const NULL = 0x0a;
const INT64 = 0x12;

export class BsonWriter {
  private pos = 0;
  private readonly scratch: DataView;

  constructor(private readonly buf: Buffer) {
    this.scratch = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  get length(): number { return this.pos; }
  reset(): void { this.pos = 0; }

  /** Appends one document; on NoRoom the writer is left as it was before. */
  document(doc: Document): void {
    const start = this.pos;
    try {
      this.writeDocument(doc, false);
    } catch (error) {
      this.pos = start;
      throw error;
    }
  }

  private room(bytes: number): void {
    if (this.pos + bytes > this.buf.length) throw new NoRoom();
  }

  private writeDocument(doc: Document | readonly unknown[], isArray: boolean): void {
    this.room(5);
    const start = this.pos;
    this.pos += 4;
    if (isArray) {
      const items = doc as readonly unknown[];
      for (let i = 0; i < items.length; i++) this.element(String(i), items[i]);
    } else {
      for (const key in doc) this.element(key, (doc as Document)[key]);
    }
    this.room(1);
    this.buf[this.pos++] = 0;
    this.scratch.setInt32(start, this.pos - start, true);
  }

  private name(type: number, key: string): void {
    if (key.includes('\0')) throw new Error(`the field name ${JSON.stringify(key)} holds a null byte, which BSON cannot write`);
    this.room(key.length * 3 + 2);
    this.buf[this.pos++] = type;
    this.text(key);
    this.buf[this.pos++] = 0;
  }

  /** UTF-8 of `s` at pos (room for 3 bytes per UTF-16 unit already checked). */
  private text(s: string): void {
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80 || c === 0) {
        this.pos = pos;
        this.pos += buf.write(s.slice(i), pos, 'utf8');
        return;
      }
      buf[pos++] = c;
    }
    this.pos = pos;
  }

  private element(key: string, value: unknown): void {
    switch (typeof value) {
      case 'string': {
        this.name(STRING, key);
        this.room(value.length * 3 + 5);
        const at = this.pos;
        this.pos += 4;
        this.text(value);
        this.buf[this.pos++] = 0;
        this.scratch.setInt32(at, this.pos - at - 4, true);
        return;
      }
      case 'number':
        if (isInt32Number(value)) {
          this.name(INT32, key);
          this.room(4);
          this.scratch.setInt32(this.pos, value, true);
          this.pos += 4;
        } else {
          this.name(DOUBLE, key);
          this.room(8);
          this.scratch.setFloat64(this.pos, value, true);
          this.pos += 8;
        }
        return;
      case 'boolean':
        this.name(BOOLEAN, key);
        this.room(1);
        this.buf[this.pos++] = value ? 1 : 0;
        return;
      case 'object':
        break;
      default:
        this.byLibrary(key, value);
        return;
    }
    if (value === null) { this.name(NULL, key); return; }
    if (Array.isArray(value)) { this.name(ARRAY, key); this.writeDocument(value, true); return; }
    if (value instanceof Date) {
      this.name(DATE, key);
      this.room(8);
      this.scratch.setBigInt64(this.pos, BigInt(value.getTime()), true);
      this.pos += 8;
      return;
    }
    switch (bsonType(value)) {
      case 'ObjectId':
        this.name(OBJECT_ID, key);
        this.room(12);
        this.buf.set((value as ObjectId).id, this.pos);
        this.pos += 12;
        return;
      case 'Double':
        this.name(DOUBLE, key);
        this.room(8);
        this.scratch.setFloat64(this.pos, (value as Double).value, true);
        this.pos += 8;
        return;
      case 'Long':
        this.name(INT64, key);
        this.room(8);
        this.scratch.setInt32(this.pos, (value as Long).low, true);
        this.scratch.setInt32(this.pos + 4, (value as Long).high, true);
        this.pos += 8;
        return;
      case undefined: {
        const proto = Object.getPrototypeOf(value);
        if ((proto === Object.prototype || proto === null) && typeof (value as { toBSON?: unknown }).toBSON !== 'function') {
          this.name(OBJECT, key);
          this.writeDocument(value as Document, false);
          return;
        }
        break;
      }
    }
    this.byLibrary(key, value);
  }

  /** The element as the bson library writes it: its bytes inside a one-element document. */
  private byLibrary(key: string, value: unknown): void {
    if (value === undefined) return;
    const one = BSON.serialize({ [key]: value });
    const element = one.subarray(4, one.length - 1);
    this.room(element.length);
    this.buf.set(element, this.pos);
    this.pos += element.length;
  }
}
