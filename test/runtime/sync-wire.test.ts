// The sync wire codec (runtime/sync/wire/): real frames captured between realm-core 14's sync client and
// realm's reference server (fixtures/sync-wire/frames.json, made by capture.mjs), round trips of every
// instruction, payload and message type, and hostile input.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { deflateSync, inflateSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { Decimal128, ObjectId, UUID } from 'bson';
import fc from 'fast-check';
import { WebSocket, WebSocketServer } from 'ws';
import {
  encodeChangeset,
  encodeChangesetBatches,
  parseChangeset,
  parseChangesetWithStrings,
  DEFAULT_CHANGESET_LIMITS,
} from '../../runtime/sync/wire/changeset';
import { ErrorCode, PROTOCOL_ERRORS, WireError, isSessionLevelError } from '../../runtime/sync/wire/errors';
import type { ChangesetEntry, Instruction, Payload, PrimaryKey } from '../../runtime/sync/wire/instructions';
import {
  encodeClientMessage,
  encodeServerMessage,
  parseClientMessage,
  parseServerMessage,
  type ClientMessage,
  type ServerMessage,
} from '../../runtime/sync/wire/messages';
import { negotiate } from '../../runtime/sync/wire/negotiate';
import { serveDist } from '../dist/fixtures/serve';
import { probeAvailable, runProbe, startReferenceServer } from '../helpers/realm-probe';

const PARTITION = { protocolVersion: 14, flexible: false };
const FLEXIBLE = { protocolVersion: 14, flexible: true };

interface CapturedFrame { dir: 'client' | 'server'; binary: boolean; base64: string }
const captured: { connections: { id: number; protocol: string; frames: CapturedFrame[] }[] } = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, 'fixtures/sync-wire/frames.json'), 'utf8'),
);
const frames = captured.connections.flatMap((connection) =>
  connection.frames.map((frame) => ({ ...frame, connection: connection.id, bytes: Buffer.from(frame.base64, 'base64') })),
);
const headOf = (bytes: Uint8Array) => Buffer.from(bytes.subarray(0, Buffer.from(bytes).indexOf(10))).toString('latin1');

/** A comparable form: bson values, bigints, bytes and -0/NaN spelled out. */
function canonical(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value, function replacer(this: Record<string, unknown>, key, v) {
      const raw = this[key];
      if (raw instanceof ObjectId) return `ObjectId(${raw.toHexString()})`;
      if (raw instanceof UUID) return `UUID(${raw.toHexString()})`;
      if (raw instanceof Decimal128) return `Decimal128(${Buffer.from(raw.bytes).toString('hex')})`;
      if (raw instanceof Uint8Array) return `bytes(${Buffer.from(raw).toString('hex')})`;
      if (typeof raw === 'bigint') return `${raw}n`;
      if (typeof raw === 'number' && Object.is(raw, -0)) return '-0';
      if (typeof raw === 'number' && !Number.isFinite(raw)) return String(raw);
      return v;
    }),
  );
}

function expectWireError(run: () => unknown, code?: number, message?: RegExp): WireError {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown instanceof WireError, `expected a WireError, got ${thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : String(thrown)}`);
  if (code !== undefined) assert.equal(thrown.code, code, thrown.message);
  if (message) assert.match(thrown.message, message);
  return thrown;
}

const parseFrame = (frame: { dir: string; bytes: Uint8Array }) =>
  frame.dir === 'client' ? parseClientMessage(frame.bytes, PARTITION) : parseServerMessage(frame.bytes, PARTITION);

describe('captured frames (realm-sync-probe <-> realm-sync-reference-server)', () => {
  it('hold both directions of a whole partition session, negotiated at protocol 14', () => {
    assert.ok(captured.connections.length >= 2, 'one connection per probe run');
    for (const connection of captured.connections) assert.equal(connection.protocol, 'com.mongodb.realm-sync#14');
    const kinds = new Set(frames.map((frame) => `${frame.dir} ${headOf(frame.bytes).split(' ')[0]}`));
    for (const kind of ['client bind', 'client ident', 'client upload', 'client mark', 'client unbind', 'server ident', 'server download', 'server mark', 'server unbound', 'server log_message']) {
      assert.ok(kinds.has(kind), `no ${kind} frame captured`);
    }
    assert.ok(frames.every((frame) => frame.binary), 'realm sends binary frames');
  });

  it('every frame parses, and re-encodes to the same bytes (compressed bodies: the same content)', () => {
    let compressedFrames = 0;
    for (const frame of frames) {
      const message = parseFrame(frame);
      const again = frame.dir === 'client'
        ? encodeClientMessage(message as ClientMessage, 14)
        : encodeServerMessage(message as ServerMessage, 14);
      if ('compressed' in message && message.compressed) {
        // Node's zlib and realm's deflate the same body into different bytes; the content must match.
        compressedFrames++;
        const reparsed = parseFrame({ dir: frame.dir, bytes: again });
        assert.deepEqual(canonical(reparsed), canonical(message), headOf(frame.bytes));
        const compressedSizeAt = message.type === 'upload' ? 4 : 11;
        const withoutCompressedSize = (bytes: Uint8Array) => headOf(bytes).split(' ').filter((_, i) => i !== compressedSizeAt);
        assert.deepEqual(withoutCompressedSize(again), withoutCompressedSize(frame.bytes), 'only the compressed size may differ');
        const bodyStart = (bytes: Uint8Array) => headOf(bytes).length + 1;
        assert.deepEqual(inflateSync(again.subarray(bodyStart(again))), inflateSync(frame.bytes.subarray(bodyStart(frame.bytes))));
      } else {
        assert.deepEqual(Buffer.from(again), frame.bytes, `re-encoding changed ${headOf(frame.bytes)}`);
      }
    }
    assert.ok(compressedFrames >= 2, 'the capture holds compressed UPLOAD and DOWNLOAD bodies');
  });

  const changesets = frames.flatMap((frame) => {
    const message = parseFrame(frame);
    return 'changesets' in message ? message.changesets.map((entry) => ({ frame, entry })) : [];
  });

  it('every changeset re-encodes byte for byte with its string table, and to equal instructions without it', () => {
    assert.ok(changesets.length >= 10, 'changesets in UPLOAD and DOWNLOAD frames');
    const layouts = new Set<string>();
    for (const { frame, entry } of changesets) {
      const bytes = entry.bytes!;
      const parsed = parseChangesetWithStrings(bytes);
      assert.deepEqual(Buffer.from(encodeChangeset(parsed.instructions, { strings: parsed.strings })), Buffer.from(bytes));
      const plain = encodeChangeset(parsed.instructions);
      assert.deepEqual(canonical(parseChangeset(plain)), canonical(parsed.instructions));
      if (Buffer.from(plain).equals(Buffer.from(bytes))) layouts.add(`${frame.dir}: interned at first use`);
      if (parsed.strings.length > 1 && parsed.strings.every((s) => s.beforeInstruction === 0)) layouts.add(`${frame.dir}: table first`);
    }
    // realm's client interns at first use; realm's server, forwarding a changeset, writes the table first.
    assert.ok(layouts.has('client: interned at first use'), [...layouts].join(', '));
    assert.ok(layouts.has('server: table first'), [...layouts].join(', '));
  });

  it('the instructions are the writes the probe made', () => {
    const uploads = frames.filter((frame) => frame.dir === 'client' && frame.connection === 1).map(parseFrame)
      .filter((message): message is Extract<ClientMessage, { type: 'upload' }> => message.type === 'upload');
    const instructions = uploads.flatMap((upload) => upload.changesets.flatMap((entry) => entry.instructions));
    const types = new Set(instructions.map((instruction) => instruction.type));
    for (const type of ['AddTable', 'AddColumn', 'CreateObject', 'EraseObject', 'Update', 'ArrayInsert', 'ArrayErase', 'Clear', 'SetInsert', 'SetErase']) {
      assert.ok(types.has(type as Instruction['type']), `no ${type} captured`);
    }
    const payloads = new Set(instructions.flatMap((instruction) => ('value' in instruction && typeof instruction.value === 'object' ? [instruction.value.type] : [])));
    for (const type of ['null', 'int', 'bool', 'string', 'binary', 'timestamp', 'float', 'double', 'decimal', 'link', 'objectId', 'uuid', 'objectValue']) {
      assert.ok(payloads.has(type as Payload['type']), `no ${type} payload captured`);
    }

    const tables = new Map(instructions.flatMap((i) => (i.type === 'AddTable' ? [[i.table, i.spec]] : [])));
    assert.deepEqual(tables.get('Address'), { kind: 'embedded' });
    assert.deepEqual(tables.get('AllTypes'), { kind: 'topLevel', pkField: '_id', pkType: 'objectId', pkNullable: false, asymmetric: false });
    assert.deepEqual(tables.get('Person'), { kind: 'topLevel', pkField: '_id', pkType: 'string', pkNullable: false, asymmetric: false });
    assert.deepEqual(tables.get('Counter'), { kind: 'topLevel', pkField: '_id', pkType: 'int', pkNullable: false, asymmetric: false });
    assert.deepEqual(tables.get('Gadget'), { kind: 'topLevel', pkField: '_id', pkType: 'uuid', pkNullable: false, asymmetric: false });
    const column = (field: string) => instructions.find((i) => i.type === 'AddColumn' && i.table === 'AllTypes' && i.field === field);
    assert.deepEqual(column('peopleDict'), { type: 'AddColumn', table: 'AllTypes', field: 'peopleDict', valueType: 'link', keyType: 'string', nullable: true, collectionType: 'dictionary', linkTargetTable: 'Person' });
    assert.deepEqual(column('uuidSet'), { type: 'AddColumn', table: 'AllTypes', field: 'uuidSet', valueType: 'uuid', keyType: 'null', nullable: false, collectionType: 'set' });
    assert.deepEqual(column('mixed'), { type: 'AddColumn', table: 'AllTypes', field: 'mixed', valueType: 'null', keyType: 'null', nullable: true, collectionType: 'single' });

    const allTypes: PrimaryKey = { type: 'objectId', value: new ObjectId('65b000000000000000000001') };
    const sameKey = (key: PrimaryKey, expected: PrimaryKey) => JSON.stringify(canonical(key)) === JSON.stringify(canonical(expected));
    const set = (field: string, path: (string | number)[] = []) => instructions.find((i) =>
      i.type === 'Update' && i.table === 'AllTypes' && i.field === field && JSON.stringify(i.path) === JSON.stringify(path) && sameKey(i.object, allTypes));
    const valueOf = (field: string, path?: (string | number)[]) => canonical((set(field, path) as { value: Payload } | undefined)?.value);
    assert.deepEqual(valueOf('string'), { type: 'string', value: 'héllo wörld' });
    assert.deepEqual(valueOf('data'), { type: 'binary', value: 'bytes(000102030405ff)' });
    assert.deepEqual(valueOf('decimal'), canonical({ type: 'decimal', value: Decimal128.fromString('-1234.5678') }));
    assert.deepEqual(valueOf('optDecimal'), canonical({ type: 'decimal', value: Decimal128.fromString('1E+6000') }));
    assert.deepEqual(valueOf('float'), { type: 'float', value: 1.5 });
    assert.deepEqual(valueOf('optDouble'), { type: 'double', value: 1e300 });
    assert.deepEqual(valueOf('optInt'), { type: 'int', value: '-9007199254740993n' });
    assert.deepEqual(valueOf('date'), { type: 'timestamp', seconds: '1704164645n', nanoseconds: 678_000_000 });
    const beforeEpoch = set('optDate') as { value: Extract<Payload, { type: 'timestamp' }> };
    assert.equal(Number(beforeEpoch.value.seconds) * 1000 + beforeEpoch.value.nanoseconds / 1e6, -1);
    assert.deepEqual(valueOf('uuid'), canonical({ type: 'uuid', value: new UUID('f81d4fae-7dec-11d0-a765-00a0c91e6bf6') }));
    assert.deepEqual(valueOf('address'), { type: 'objectValue' });
    assert.deepEqual(valueOf('address', ['geo', 'lat']), { type: 'double', value: 46.9 });
    assert.deepEqual(valueOf('stringDict', ['spaced key']), { type: 'string', value: 'w' });
    assert.deepEqual(valueOf('owner'), { type: 'link', table: 'Person', target: { type: 'string', value: 'ada' } });
    assert.deepEqual(valueOf('gadget'), canonical({ type: 'link', table: 'Gadget', target: { type: 'uuid', value: new UUID('3b241101-e2bb-4255-8caf-4136c566a962') } }));
    assert.deepEqual(valueOf('counter'), { type: 'link', table: 'Counter', target: { type: 'int', value: '7n' } });
    const inserts = instructions.filter((i): i is Extract<Instruction, { type: 'ArrayInsert' }> => i.type === 'ArrayInsert' && i.field === 'intList').slice(0, 4);
    assert.deepEqual(inserts.map((i) => [i.path, i.priorSize]), [[[0], 0], [[1], 1], [[2], 2], [[3], 3]]);
    assert.ok(instructions.some((i) => i.type === 'EraseObject' && i.table === 'Counter' && sameKey(i.object, { type: 'int', value: -3n })), 'the delete of Counter -3 was captured');
  });

  it('DOWNLOAD carries the other client\'s changesets with their headers', () => {
    const downloads = frames.filter((frame) => frame.dir === 'server' && frame.connection === 2).map(parseFrame)
      .filter((message): message is Extract<ServerMessage, { type: 'download' }> => message.type === 'download');
    const bootstrap = downloads.find((download) => download.changesets.length > 1)!;
    assert.ok(bootstrap.compressed, 'a bootstrap this size comes compressed');
    const versions = bootstrap.changesets.map((entry) => entry.version);
    assert.deepEqual(versions, [...versions].sort((a, b) => Number(a - b)), 'oldest first');
    for (const entry of bootstrap.changesets) {
      assert.ok(entry.originFileIdent > 0n, 'a downloaded changeset names the client file it came from');
      assert.equal(entry.originalChangesetSize, entry.bytes!.length);
      assert.ok(entry.originTimestamp > 0n, 'origin timestamps are set');
    }
    assert.equal(bootstrap.downloadableBytes, 0n);
    assert.equal(bootstrap.downloadServerVersion, bootstrap.latestServerVersion);
  });
});

const oid = new ObjectId('65a0000000000000000000aa');
const uuid = new UUID('0f8fad5b-d9cb-469f-a165-70867728950e');
const primaryKeys: PrimaryKey[] = [
  { type: 'null' },
  { type: 'int', value: 0n },
  { type: 'int', value: -(2n ** 63n) },
  { type: 'int', value: 2n ** 63n - 1n },
  { type: 'string', value: 'k€y' },
  { type: 'string', value: '' },
  { type: 'objectId', value: oid },
  { type: 'uuid', value: uuid },
  { type: 'globalKey', hi: 2n ** 64n - 1n, lo: 12345n },
];
const payloads: Payload[] = [
  { type: 'null' },
  { type: 'int', value: 0n }, { type: 'int', value: -1n }, { type: 'int', value: 63n }, { type: 'int', value: 64n },
  { type: 'int', value: -64n }, { type: 'int', value: -65n }, { type: 'int', value: 2n ** 53n + 1n },
  { type: 'int', value: 2n ** 63n - 1n }, { type: 'int', value: -(2n ** 63n) },
  { type: 'bool', value: true }, { type: 'bool', value: false },
  { type: 'string', value: '' }, { type: 'string', value: 'ünïcödé 🎉\u0000' }, { type: 'string', value: 'x'.repeat(5000) },
  { type: 'binary', value: new Uint8Array([]) }, { type: 'binary', value: Uint8Array.from({ length: 300 }, (_, i) => i % 256) },
  { type: 'timestamp', seconds: 0n, nanoseconds: 0 }, { type: 'timestamp', seconds: -62135596800n, nanoseconds: -999_999_999 },
  { type: 'timestamp', seconds: 253402300799n, nanoseconds: 999_999_999 },
  { type: 'float', value: 1.5 }, { type: 'float', value: -0 }, { type: 'float', value: Infinity }, { type: 'float', value: 3.4028234663852886e38 },
  { type: 'double', value: Math.PI }, { type: 'double', value: -Infinity }, { type: 'double', value: Number.MIN_VALUE }, { type: 'double', value: -0 },
  { type: 'decimal', value: Decimal128.fromString('0') }, { type: 'decimal', value: Decimal128.fromString('-0.000001') },
  { type: 'decimal', value: Decimal128.fromString('9999999999999999999999999999999999E+6111') },
  { type: 'decimal', value: Decimal128.fromString('1E-6176') }, { type: 'decimal', value: Decimal128.fromString('NaN') },
  { type: 'decimal', value: Decimal128.fromString('-Infinity') },
  ...primaryKeys.map((target): Payload => ({ type: 'link', table: 'Target', target })),
  { type: 'objectId', value: oid }, { type: 'uuid', value: uuid },
  { type: 'objectValue' }, { type: 'dictionary' }, { type: 'list' }, { type: 'set' }, { type: 'erased' },
];
const target = { table: 'Thing', object: { type: 'objectId', value: oid } as PrimaryKey, field: 'f' };
const everyInstruction: Instruction[] = [
  { type: 'AddTable', table: 'Thing', spec: { kind: 'topLevel', pkField: '_id', pkType: 'objectId', pkNullable: false, asymmetric: false } },
  { type: 'AddTable', table: 'Log', spec: { kind: 'topLevel', pkField: '_id', pkType: 'uuid', pkNullable: true, asymmetric: true } },
  { type: 'AddTable', table: 'Legacy', spec: { kind: 'topLevel', pkField: '', pkType: 'globalKey', pkNullable: false, asymmetric: false } },
  { type: 'AddTable', table: 'Counter', spec: { kind: 'topLevel', pkField: 'n', pkType: 'int', pkNullable: true, asymmetric: false } },
  { type: 'AddTable', table: 'Named', spec: { kind: 'topLevel', pkField: 'name', pkType: 'string', pkNullable: false, asymmetric: false } },
  { type: 'AddTable', table: 'Part', spec: { kind: 'embedded' } },
  { type: 'EraseTable', table: 'Legacy' },
  ...(['null', 'int', 'bool', 'string', 'binary', 'timestamp', 'float', 'double', 'decimal', 'objectId', 'uuid'] as const).flatMap((valueType) =>
    (['single', 'list', 'set', 'dictionary'] as const).map((collectionType): Instruction => ({
      type: 'AddColumn', table: 'Thing', field: `${valueType}_${collectionType}`, valueType,
      keyType: collectionType === 'dictionary' ? 'string' : 'null', nullable: valueType === 'null', collectionType,
    }))),
  { type: 'AddColumn', table: 'Thing', field: 'link', valueType: 'link', keyType: 'null', nullable: true, collectionType: 'single', linkTargetTable: 'Named' },
  { type: 'AddColumn', table: 'Thing', field: 'links', valueType: 'link', keyType: 'string', nullable: true, collectionType: 'dictionary', linkTargetTable: 'Part' },
  { type: 'EraseColumn', table: 'Thing', field: 'null_set' },
  ...primaryKeys.flatMap((object): Instruction[] => [
    { type: 'CreateObject', table: 'Thing', object },
    { type: 'EraseObject', table: 'Thing', object },
  ]),
  ...payloads.map((value): Instruction => ({ type: 'Update', ...target, path: [], value, isDefault: false, priorSize: 0 })),
  { type: 'Update', ...target, path: ['key', 'nested'], value: { type: 'int', value: 5n }, isDefault: true, priorSize: 0 },
  { type: 'Update', ...target, path: ['key', 0xffff_ffff], value: { type: 'erased' }, isDefault: false, priorSize: 0xffff_ffff },
  { type: 'AddInteger', ...target, path: [], value: -(2n ** 63n) },
  { type: 'AddInteger', ...target, path: ['counts', 'k'], value: 17n },
  ...payloads.slice(0, 12).map((value, i): Instruction => ({ type: 'ArrayInsert', ...target, path: ['list', i], value, priorSize: i })),
  { type: 'ArrayMove', ...target, path: [3], ndx2: 0, priorSize: 4 },
  { type: 'ArrayErase', ...target, path: ['k', 1, 'x', 2], priorSize: 3 },
  ...(['single', 'list', 'dictionary', 'set'] as const).map((collectionType): Instruction => ({ type: 'Clear', ...target, path: [1], collectionType })),
  { type: 'SetInsert', ...target, path: [], value: { type: 'link', table: 'Named', target: { type: 'string', value: 'ada' } } },
  { type: 'SetErase', ...target, path: [0, 'deep'], value: { type: 'decimal', value: Decimal128.fromString('12.5') } },
  { type: 'Update', table: 'Named', object: { type: 'string', value: 'ada' }, field: 'self', path: [], value: { type: 'link', table: 'Named', target: { type: 'string', value: 'bob' } }, isDefault: false, priorSize: 0 },
];

describe('changeset codec', () => {
  it('every instruction, payload and primary key type round-trips', () => {
    const bytes = encodeChangeset(everyInstruction);
    assert.deepEqual(canonical(parseChangeset(bytes)), canonical(everyInstruction));
    for (const instruction of everyInstruction) {
      assert.deepEqual(canonical(parseChangeset(encodeChangeset([instruction]))), canonical([instruction]), instruction.type);
    }
    const covered = new Set(everyInstruction.map((instruction) => instruction.type));
    assert.equal(covered.size, 14, 'all 14 instruction types');
  });

  it('a NaN float comes back NaN', () => {
    const [instruction] = parseChangeset(encodeChangeset([{ type: 'Update', ...target, path: [], value: { type: 'double', value: NaN }, isDefault: false, priorSize: 0 }]));
    assert.ok(instruction.type === 'Update' && instruction.value.type === 'double' && Number.isNaN(instruction.value.value), 'NaN stays NaN');
  });

  it('writes realm\'s integer code (not LEB128), and interns strings as realm\'s client does', () => {
    const bytes = encodeChangeset([
      { type: 'AddColumn', table: 'T', field: 'a', valueType: 'int', keyType: 'null', nullable: false, collectionType: 'single' },
      { type: 'AddInteger', table: 'T', object: { type: 'int', value: -65n }, field: 'a', path: [], value: 300n },
    ]);
    assert.equal(Buffer.from(bytes).toString('hex'), [
      '3f 00 01 54', // InternString 0 "T"
      '3f 01 01 61', // InternString 1 "a"
      '3f 02 00', // InternString 2 "": realm interns it as the link target of every non-link column
      '06 00 01 01 00 00', // AddColumn T.a int, not nullable, single
      '05 00 01 c0 40 01 00', // AddInteger T[int -65, written as 64 with the sign bit: 0x80|64, 0x40|0] . a, path []
      'ac 02', // 300: 0x80|(300 & 0x7f), then 300 >> 7
    ].join('').replaceAll(' ', ''));
  });

  it('a bootstrap in batches: each changeset closed at its instruction or byte limit, together the same instructions', () => {
    const big = 'x'.repeat(1000);
    const instructions: Instruction[] = Array.from({ length: 50 }, (_, i) => ({ type: 'Update', table: 'T', object: { type: 'int', value: BigInt(i) }, field: 'f', path: [], value: { type: 'string', value: big }, isDefault: false, priorSize: 0 }));
    const byBytes = encodeChangesetBatches(instructions, { maxInstructions: 1000, maxBytes: 10_000 });
    assert.equal(byBytes.length, 5, '10 updates of ~1 KB fill each 10 KB batch');
    for (const batch of byBytes.slice(0, -1)) assert.ok(batch.length >= 10_000 && batch.length < 11_100, `batch of ${batch.length} bytes`);
    assert.deepEqual(byBytes.flatMap((batch) => parseChangeset(batch)), instructions, 'each batch stands alone (its own strings)');
    assert.deepEqual(encodeChangesetBatches(instructions, { maxInstructions: 20, maxBytes: 1e9 }).map((batch) => parseChangeset(batch).length), [20, 20, 10]);
    assert.deepEqual(encodeChangesetBatches([], { maxInstructions: 20, maxBytes: 1e9 }).map((batch) => batch.length), [0], 'no instruction: one empty changeset');
  });

  it('an empty changeset is no bytes at all', () => {
    assert.equal(encodeChangeset([]).length, 0);
    assert.deepEqual(parseChangeset(new Uint8Array()), []);
  });

  it('the string table places strings where it says, else at first use', () => {
    const instructions: Instruction[] = [{ type: 'EraseTable', table: 'A' }, { type: 'EraseTable', table: 'B' }];
    const upfront = encodeChangeset(instructions, { strings: [{ value: 'A', beforeInstruction: 0 }, { value: 'B', beforeInstruction: 0 }, { value: 'unused', beforeInstruction: 2 }] });
    const parsed = parseChangesetWithStrings(upfront);
    assert.deepEqual(parsed.strings, [{ value: 'A', beforeInstruction: 0 }, { value: 'B', beforeInstruction: 0 }, { value: 'unused', beforeInstruction: 2 }]);
    assert.deepEqual(parsed.instructions, instructions);
    assert.deepEqual(parseChangesetWithStrings(encodeChangeset(instructions)).strings, [{ value: 'A', beforeInstruction: 0 }, { value: 'B', beforeInstruction: 1 }]);
  });

  it('refuses what no valid changeset holds when encoding', () => {
    assert.throws(() => encodeChangeset([{ type: 'Update', ...target, path: [], value: { type: 'globalKey', hi: 1n, lo: 2n }, isDefault: false, priorSize: 0 }]), /global key/);
    assert.throws(() => encodeChangeset([{ type: 'AddColumn', table: 'T', field: 'l', valueType: 'link', keyType: 'null', nullable: true, collectionType: 'single' }]), /linkTargetTable/);
  });
});

/** Hand-written changeset bytes: hex with spaces. */
const hex = (text: string) => Uint8Array.from(Buffer.from(text.replaceAll(' ', ''), 'hex'));
const T = '3f 00 01 54'; // InternString 0 = "T"

describe('changeset parser on hostile input', () => {
  const cases: [string, string, RegExp][] = [
    ['truncated integer', `${T} 02 00 01 80`, /ends inside an integer/],
    ['integer longer than int64 allows', `${T} 02 00 01 ff ff ff ff ff ff ff ff ff ff 00`, /longer than 10 bytes/],
    ['int64 overflow in the last byte', `${T} 02 00 01 80 80 80 80 80 80 80 80 80 01`, /out of range/],
    ['unknown instruction', `${T} 0e`, /unknown instruction type 14/],
    ['string index not interned', '02 00 01 00', /interned string 0 is not defined/],
    ['intern index out of order', '3f 01 01 54', /interned string index 1, expected 0/],
    ['the same string interned twice', `${T} 3f 01 01 54`, /interned twice/],
    ['huge declared string', `3f 00 ff ff ff ff ff ff ff ff 3f`, /over the limit/],
    ['string longer than the bytes left', `3f 00 20 41 41`, /32 bytes declared, 2 left/],
    ['invalid UTF-8', `3f 00 02 c3 28`, /not valid UTF-8/],
    ['unknown payload type', `${T} 04 00 00 00 00 0c 00`, /unknown type 12/],
    ['global key payload', `${T} 04 00 00 00 00 40`, /cannot be a global key/],
    ['primary key of type bool', `${T} 02 00 02 01`, /primary key cannot be of type bool/],
    ['negative value in an unsigned field', `${T} 04 00 00 00 40`, /out of range/],
    ['boolean 2', `${T} 04 00 00 00 00 02 01 02`, /neither 0 nor 1/],
    ['path deeper than the limit', `${T} 04 00 00 00 ff ff ff ff 0f`, /deeper than 64/],
    ['path marker -2', `${T} 04 00 00 00 01 41`, /marker -2/],
    ['path index over 2^32-1', `${T} 04 00 00 00 01 80 80 80 80 10`, /out of range/],
    ['ArrayInsert without an index', `${T} 08 00 00 00 00 00 00`, /without an index/],
    ['unknown collection type', `${T} 0b 00 00 00 00 04`, /unknown collection type 4/],
    ['unknown table type', `${T} 00 00 03`, /unknown table type 3/],
    ['bad primary key type in AddTable', `${T} 00 00 00 00 02 00`, /cannot be a primary key type/],
    ['timestamp nanoseconds out of range', `${T} 04 00 00 00 00 05 00 80 a8 d6 b9 07 00`, /nanoseconds .* out of range/],
    ['decimal exponent out of range', `${T} 04 00 00 00 00 08 00 80 80 01 00 00`, /exponent .* out of range/],
    ['decimal coefficient too long', `${T} 04 00 00 00 00 08 ${'ff '.repeat(17)}00`, /longer than 17 bytes/],
    ['ObjectId cut short', `${T} 02 00 0a 01 02 03`, /12 bytes declared, 3 left/],
  ];
  for (const [name, bytes, message] of cases) {
    it(name, () => {
      const error = expectWireError(() => parseChangeset(hex(bytes)), ErrorCode.bad_changeset, message);
      assert.match(error.message, /^Bad changeset at byte \d+: /);
    });
  }

  it('limits: instructions, strings, binaries, path depth', () => {
    const many = encodeChangeset(Array.from({ length: 11 }, (): Instruction => ({ type: 'EraseTable', table: 'T' })));
    expectWireError(() => parseChangeset(many, { maxInstructions: 10 }), 212, /more than 10 instructions/);
    assert.equal(parseChangeset(many, { maxInstructions: 11 }).length, 11);
    const long = encodeChangeset([{ type: 'Update', ...target, path: [], value: { type: 'string', value: 'x'.repeat(101) }, isDefault: false, priorSize: 0 }]);
    expectWireError(() => parseChangeset(long, { maxStringSize: 100 }), 212, /101 bytes is over the limit of 100/);
    const blob = encodeChangeset([{ type: 'Update', ...target, path: [], value: { type: 'binary', value: new Uint8Array(101) }, isDefault: false, priorSize: 0 }]);
    expectWireError(() => parseChangeset(blob, { maxBinarySize: 100 }), 212, /over the limit of 100/);
    const deep = encodeChangeset([{ type: 'ArrayErase', ...target, path: Array.from({ length: 65 }, (_, i) => i), priorSize: 1 }]);
    expectWireError(() => parseChangeset(deep), 212, /deeper than 64/);
    assert.equal(parseChangeset(deep, { maxPathDepth: 65 }).length, 1);
    expectWireError(() => parseChangeset(encodeChangeset([{ type: 'EraseTable', table: 'A' }, { type: 'EraseTable', table: 'B' }]), { maxInternedStrings: 1 }), 212, /more than 1 interned strings/);
    assert.equal(DEFAULT_CHANGESET_LIMITS.maxPathDepth, 64);
  });

  it('every prefix of every captured changeset parses or throws a WireError', () => {
    for (const frame of frames) {
      const message = parseFrame(frame);
      if (!('changesets' in message)) continue;
      for (const entry of message.changesets) {
        for (let cut = 0; cut < entry.bytes!.length; cut++) {
          try {
            parseChangeset(entry.bytes!.subarray(0, cut));
          } catch (error) {
            assert.ok(error instanceof WireError, `${(error as Error).message} at cut ${cut}`);
          }
        }
      }
    }
  });

  it('random bytes and mutated real changesets: a result or a WireError, nothing else (property)', () => {
    const real = frames.flatMap((frame) => {
      const message = parseFrame(frame);
      return 'changesets' in message ? message.changesets.map((entry) => entry.bytes!) : [];
    });
    const onlyWireErrors = (bytes: Uint8Array) => {
      try {
        parseChangeset(bytes);
      } catch (error) {
        if (!(error instanceof WireError)) throw error;
      }
    };
    fc.assert(fc.property(fc.uint8Array({ maxLength: 400 }), onlyWireErrors), { numRuns: 3000 });
    fc.assert(
      fc.property(fc.constantFrom(...real), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }), (bytes, edits) => {
        const mutated = Uint8Array.from(bytes);
        for (const [at, value] of edits) mutated[at % mutated.length] = value;
        onlyWireErrors(mutated);
      }),
      { numRuns: 3000 },
    );
  });
});

const entry = (version: bigint, instructions: Instruction[], extra: Partial<ChangesetEntry> = {}): ChangesetEntry => ({
  version, lastIntegratedRemoteVersion: version - 1n, originTimestamp: 341_000_000_000n, originFileIdent: 0n, instructions, ...extra,
});
const withBytes = (entries: ChangesetEntry[]) => entries.map((e) => ({ ...e, bytes: e.bytes ?? encodeChangeset(e.instructions) }));
const bigUpload: Instruction[] = Array.from({ length: 200 }, (_, i): Instruction => ({
  type: 'Update', ...target, path: [], value: { type: 'string', value: `value number ${i}` }, isDefault: false, priorSize: 0,
}));

const clientMessages: [ClientMessage, typeof PARTITION][] = [
  [{ type: 'bind', session: 1, serverPath: '"p1"', signedUserToken: '', needClientFileIdent: true, isSubserver: false }, PARTITION],
  [{ type: 'bind', session: 2, serverPath: '{"$oid":"65a000000000000000000001"}', signedUserToken: 'token.with:parts', needClientFileIdent: false, isSubserver: true }, PARTITION],
  [{ type: 'bind', session: 3, serverPath: '{"sessionReason":0,"schemaVersion":2}', bindJson: { sessionReason: 0, schemaVersion: 2 }, signedUserToken: '', needClientFileIdent: true, isSubserver: false }, FLEXIBLE],
  [{ type: 'bind', session: 3, serverPath: '', bindJson: {}, signedUserToken: '', needClientFileIdent: true, isSubserver: false }, FLEXIBLE],
  [{ type: 'ident', session: 1, clientFileIdent: 2n, clientFileIdentSalt: 6048390605478226996n, downloadServerVersion: 5n, downloadClientVersion: 4n, latestServerVersion: 6n, latestServerVersionSalt: 2n ** 63n - 1n }, PARTITION],
  [{ type: 'ident', session: 1, clientFileIdent: 2n, clientFileIdentSalt: 1n, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n, query: { version: 3n, body: '{"Task":"(owner_id == \\"ä\\")"}' } }, FLEXIBLE],
  [{ type: 'upload', session: 1, progressClientVersion: 7n, progressServerVersion: 2n, lockedServerVersion: 2n, changesets: withBytes([entry(6n, everyInstruction.slice(0, 20)), entry(7n, [])]), compressed: false }, PARTITION],
  [{ type: 'upload', session: 1, progressClientVersion: 9n, progressServerVersion: 2n, lockedServerVersion: 1n, changesets: withBytes([entry(9n, bigUpload, { originFileIdent: 12n })]), compressed: true }, PARTITION],
  [{ type: 'upload', session: 5, progressClientVersion: 0n, progressServerVersion: 0n, lockedServerVersion: 0n, changesets: [], compressed: false }, PARTITION],
  [{ type: 'mark', session: 1, requestIdent: 2n ** 63n - 1n }, PARTITION],
  [{ type: 'unbind', session: Number.MAX_SAFE_INTEGER }, PARTITION],
  [{ type: 'ping', timestamp: 123456789n, rtt: 0n }, PARTITION],
  [{ type: 'query', session: 1, queryVersion: 4n, body: '{"Task":"TRUEPREDICATE"}' }, FLEXIBLE],
  [{ type: 'json_error', session: 1, errorCode: 212, body: '{"message":"bad changeset from the server"}' }, PARTITION],
  [{ type: 'json_error', session: 0, errorCode: 101, body: '' }, PARTITION],
  [{ type: 'test_command', session: 1, requestIdent: 1n, body: '{"command":"PAUSE_ROUTER_SESSION"}' }, FLEXIBLE],
];

const serverMessages: [ServerMessage, typeof PARTITION][] = [
  [{ type: 'ident', session: 1, clientFileIdent: 2n, clientFileIdentSalt: 4971084344503659934n }, PARTITION],
  [{ type: 'download', session: 1, downloadServerVersion: 3n, downloadClientVersion: 2n, latestServerVersion: 3n, latestServerVersionSalt: 3971100615792442933n, uploadClientVersion: 4n, uploadServerVersion: 2n, downloadableBytes: 0n, changesets: withBytes([entry(3n, everyInstruction.slice(20, 40), { originFileIdent: 7n, originalChangesetSize: 999 })]), compressed: false }, PARTITION],
  [{ type: 'download', session: 1, downloadServerVersion: 9n, downloadClientVersion: 0n, latestServerVersion: 9n, latestServerVersionSalt: 1n, uploadClientVersion: 0n, uploadServerVersion: 0n, downloadableBytes: 5n, changesets: withBytes([entry(8n, bigUpload, { originFileIdent: 3n, originalChangesetSize: 4000 }), entry(9n, everyInstruction, { originFileIdent: 4n, originalChangesetSize: 1 })]), compressed: true }, PARTITION],
  [{ type: 'download', session: 2, downloadServerVersion: 0n, downloadClientVersion: 0n, latestServerVersion: 0n, latestServerVersionSalt: 0n, uploadClientVersion: 0n, uploadServerVersion: 0n, flexible: { queryVersion: 2n, batchState: 'lastInBatch', progressEstimate: 0.5 }, changesets: [], compressed: false }, FLEXIBLE],
  [{ type: 'download', session: 2, downloadServerVersion: 4n, downloadClientVersion: 1n, latestServerVersion: 4n, latestServerVersionSalt: 9n, uploadClientVersion: 1n, uploadServerVersion: 0n, flexible: { queryVersion: 0n, batchState: 'steadyState', progressEstimate: 1 }, changesets: withBytes([entry(4n, everyInstruction.slice(50, 60), { originFileIdent: 1n, originalChangesetSize: 10 })]), compressed: false }, FLEXIBLE],
  [{ type: 'mark', session: 1, requestIdent: 3n }, PARTITION],
  [{ type: 'unbound', session: 1 }, PARTITION],
  [{ type: 'error', errorCode: 204, message: 'Illegal Realm path (BIND): serialized partition \'x\' is invalid', tryAgain: false, session: 1 }, PARTITION],
  [{ type: 'error', errorCode: 104, message: '', tryAgain: true, session: 0 }, PARTITION],
  [{ type: 'json_error', errorCode: 209, session: 1, body: { message: 'reset', tryAgain: false, action: 'ClientReset', shouldClientReset: true, isRecoveryModeDisabled: false, logURL: '' } }, PARTITION],
  [{ type: 'pong', timestamp: 42n }, PARTITION],
  [{ type: 'log_message', session: 0, coId: '6b0832fc674c3d8821d8a66a', level: 'info', message: 'Client connection established with server' }, PARTITION],
  [{ type: 'log_message', session: 1 }, PARTITION],
  [{ type: 'query_error', errorCode: 226, session: 1, queryVersion: 3n, message: 'Invalid query: unknown field "x"' }, FLEXIBLE],
  [{ type: 'test_command', session: 1, requestIdent: 1n, body: '{}' }, FLEXIBLE],
];

describe('messages', () => {
  it('every client message round-trips', () => {
    const types = new Set<string>();
    for (const [message, options] of clientMessages) {
      const bytes = encodeClientMessage(message, 14);
      assert.deepEqual(canonical(parseClientMessage(bytes, options)), canonical(message), headOf(bytes));
      types.add(message.type);
    }
    assert.equal(types.size, 9);
  });

  it('every server message round-trips', () => {
    const types = new Set<string>();
    for (const [message, options] of serverMessages) {
      const bytes = encodeServerMessage(message, 14);
      assert.deepEqual(canonical(parseServerMessage(bytes, options)), canonical(message), headOf(bytes));
      types.add(message.type);
    }
    assert.equal(types.size, 10);
  });

  it('heads look as realm writes them', () => {
    const head = (bytes: Uint8Array) => headOf(bytes);
    assert.match(head(encodeServerMessage(serverMessages[1][0], 14)), /^download 1 3 2 3 3971100615792442933 4 2 0 0 \d+ 0$/);
    assert.match(head(encodeServerMessage(serverMessages[3][0], 14)), /^download 2 0 0 0 0 0 0 2 1 0\.5 0 0 0$/);
    assert.equal(head(encodeServerMessage({ type: 'error', errorCode: 212, message: 'bad', tryAgain: false, session: 3 }, 14)), 'error 212 3 0 3');
    const log = encodeServerMessage(serverMessages[11][0], 14);
    assert.equal(Buffer.from(log).toString(), 'log_message 0 101\n{"co_id":"6b0832fc674c3d8821d8a66a","level":"info","msg":"Client connection established with server"}');
    assert.equal(Buffer.from(encodeClientMessage(clientMessages[0][0], 14)).toString(), 'bind 1 4 0 1 0\n"p1"');
  });

  it('a parsed changeset owns its bytes: it does not keep the frame alive', () => {
    const frame = Buffer.from(encodeClientMessage({ type: 'upload', session: 1, progressClientVersion: 1n, progressServerVersion: 0n, lockedServerVersion: 0n, changesets: [entry(1n, everyInstruction.slice(0, 3))], compressed: false }, 14));
    const upload = parseClientMessage(frame, PARTITION);
    assert.ok(upload.type === 'upload', 'an UPLOAD');
    const bytes = upload.changesets[0].bytes!;
    assert.notEqual(bytes.buffer, frame.buffer, 'not a view into the frame');
    assert.equal(bytes.byteLength, bytes.buffer.byteLength, 'a buffer of its own size');
  });

  it('changeset bytes as received are forwarded as they are', () => {
    const original = frames.map(parseFrame).find((m): m is Extract<ClientMessage, { type: 'upload' }> => m.type === 'upload' && m.changesets.length > 0)!;
    const stored = original.changesets[0];
    const forwarded = encodeServerMessage({
      type: 'download', session: 9, downloadServerVersion: 5n, downloadClientVersion: 0n, latestServerVersion: 5n, latestServerVersionSalt: 1n,
      uploadClientVersion: 0n, uploadServerVersion: 0n, downloadableBytes: 0n, compressed: false,
      changesets: [{ ...stored, version: 5n, instructions: [], originFileIdent: 2n }],
    }, 14);
    const received = parseServerMessage(forwarded, PARTITION);
    assert.ok(received.type === 'download', 'a DOWNLOAD comes back');
    assert.deepEqual(Buffer.from(received.changesets[0].bytes!), Buffer.from(stored.bytes!));
    assert.deepEqual(canonical(received.changesets[0].instructions), canonical(stored.instructions));
  });

  it('bodies over 1 KiB are compressed when that makes them smaller, unless told otherwise', () => {
    const upload = (compressed?: boolean): ClientMessage => ({ type: 'upload', session: 1, progressClientVersion: 1n, progressServerVersion: 0n, lockedServerVersion: 0n, changesets: [entry(1n, bigUpload)], compressed });
    const flag = (bytes: Uint8Array) => headOf(bytes).split(' ')[2];
    assert.equal(flag(encodeClientMessage(upload(), 14)), '1');
    assert.equal(flag(encodeClientMessage(upload(false), 14)), '0');
    const small: ClientMessage = { type: 'upload', session: 1, progressClientVersion: 1n, progressServerVersion: 0n, lockedServerVersion: 0n, changesets: [entry(1n, bigUpload.slice(0, 1))] };
    assert.equal(flag(encodeClientMessage(small, 14)), '0');
    assert.equal(flag(encodeClientMessage({ ...small, compressed: true }, 14)), '1');
  });

  it('before protocol 8 a flexible BIND carries a plain server path', () => {
    const bind = parseClientMessage(ascii('bind 1 8 0 1 0\n/default'), { protocolVersion: 7, flexible: true });
    assert.deepEqual(bind, { type: 'bind', session: 1, serverPath: '/default', signedUserToken: '', needClientFileIdent: true, isSubserver: false });
    expectWireError(() => parseClientMessage(ascii('bind 1 8 0 1 0\n/default'), FLEXIBLE), 103, /not valid JSON/);
  });

  it('refuses to encode what the negotiated version lacks', () => {
    assert.throws(() => encodeServerMessage({ type: 'log_message', session: 0, message: 'x' }, 9), /protocol version 10/);
    assert.throws(() => encodeServerMessage({ type: 'json_error', errorCode: 201, session: 1, body: {} }, 3), /protocol version 4/);
    assert.throws(() => encodeClientMessage({ type: 'json_error', errorCode: 201, session: 1, body: '{}' }, 6), /protocol version 7/);
    assert.ok(encodeServerMessage({ type: 'log_message', session: 0, message: 'x' }, 10).length > 0, 'version 10 has LOG_MESSAGE');
  });
});

const ascii = (text: string) => Uint8Array.from(Buffer.from(text, 'latin1'));

describe('message parser on hostile input', () => {
  const cases: [string, string, number, RegExp, typeof PARTITION?][] = [
    ['empty frame', '', 103, /empty/],
    ['no newline', 'mark 1 2', 103, /does not end with a newline/],
    ['a head over the limit', `mark ${'1'.repeat(600)}`, 104, /longer than 512/],
    ['unknown type', 'hello 1\n', 102, /unknown message type "hello"/],
    ['QUERY on a partition connection', 'query 1 1 2\n{}', 102, /flexible sync message/],
    ['a field too many', 'mark 1 2 3\n', 103, /3 fields, expected 2/],
    ['a field missing', 'mark 1\n', 103, /1 fields, expected 2/],
    ['double space', 'mark 1  2\n', 103, /empty fields/],
    ['trailing space', 'unbind 1 \n', 103, /empty fields/],
    ['leading zero', 'mark 01 2\n', 103, /not a decimal number/],
    ['sign on an unsigned field', 'mark +1 2\n', 103, /not a decimal number/],
    ['negative version', 'ident 1 2 3 -4 0 0 0\n', 103, /not a decimal number/],
    ['exponent', 'ping 1e3 0\n', 103, /not a decimal number/],
    ['version of 2^63', 'ident 1 2 3 9223372036854775808 0 0 0\n', 103, /out of range/],
    ['21 digits', 'ping 100000000000000000000 0\n', 103, /not a decimal number/],
    ['salt below int64', 'ident 1 2 -9223372036854775809 0 0 0 0\n', 103, /out of range/],
    ['session 0', 'unbind 0\n', 106, /bad session ident 0/],
    ['session over 2^53', 'unbind 9007199254740992\n', 106, /bad session ident/],
    ['boolean 2', 'bind 1 4 0 2 0\n"p1"', 103, /not 0 or 1/],
    ['control byte in the head', 'mark 1\t2\n', 103, /byte 0x09/],
    ['non-ASCII head', 'märk 1 2\n', 103, /byte 0xe4/],
    ['body on a bodiless message', 'unbind 1\nextra', 103, /body of 0 bytes, the frame has 5/],
    ['BIND sizes not matching the body', 'bind 1 10 0 1 0\n"p1"', 103, /body of 10 bytes, the frame has 4/],
    ['BIND path over the limit', 'bind 1 5000 0 1 0\n', 104, /5000 bytes is over the limit of 4096/],
    ['BIND token of 2^64-1 bytes', 'bind 1 4 18446744073709551615 1 0\n"p1"', 104, /over the limit/],
    ['BIND size over 2^64', 'bind 1 4 18446744073709551616 1 0\n"p1"', 103, /out of range/],
    ['empty partition path', 'bind 1 0 0 1 0\n', 103, /server path is empty/],
    ['flexible BIND with bad JSON', 'bind 1 3 0 1 0\n{x}', 103, /not valid JSON/, FLEXIBLE],
    ['flexible BIND with a JSON array', 'bind 1 2 0 1 0\n[]', 103, /not a JSON object/, FLEXIBLE],
    ['invalid UTF-8 path', 'bind 1 2 0 1 0\n\xc3\x28', 103, /not valid UTF-8/],
    ['UPLOAD declaring 64 GiB', 'upload 1 0 68719476736 0 1 0 0\n', 104, /over the limit/],
    ['UPLOAD uncompressed with a compressed size', 'upload 1 0 0 5 1 0 0\n', 103, /compressed size of 5/],
    ['UPLOAD body shorter than declared', 'upload 1 0 10 0 1 0 0\nabc', 103, /body of 10 bytes, the frame has 3/],
    ['UPLOAD compressed body that is not zlib', 'upload 1 1 10 3 1 0 0\nabc', 110, /does not inflate/],
    ['changeset header without a space', 'upload 1 0 9 0 1 0 0\n1 0 0 0 0', 111, /not followed by a space/],
    ['changeset header with a letter', 'upload 1 0 10 0 1 0 0\n1 0 x 0 0 ', 111, /not a decimal number/],
    ['changeset larger than the body', 'upload 1 0 12 0 1 0 0\n1 0 0 0 999 ', 112, /999 bytes declared, 0 left/],
    ['changeset that does not parse', 'upload 1 0 12 0 1 0 0\n1 0 0 0 2 ?\x01', 212, /changeset 1 \(version 1\): Bad changeset/],
    ['flexible IDENT without its query', 'ident 1 2 3 0 0 0 0\n', 103, /7 fields, expected 9/, FLEXIBLE],
    ['JSON_ERROR code over int32', 'json_error 2147483648 0 1\n', 103, /out of range/],
  ];
  for (const [name, text, code, message, options] of cases) {
    it(name, () => {
      expectWireError(() => parseClientMessage(ascii(text), options ?? PARTITION), code, message);
    });
  }

  it('limits over a whole message: changesets, and instructions summed over its changesets', () => {
    const upload = (changesets: ChangesetEntry[]) => encodeClientMessage({ type: 'upload', session: 1, progressClientVersion: 9n, progressServerVersion: 0n, lockedServerVersion: 0n, changesets }, 14);
    const three = upload([entry(1n, []), entry(2n, []), entry(3n, [])]);
    expectWireError(() => parseClientMessage(three, { ...PARTITION, limits: { maxChangesets: 2 } }), 104, /more than 2 changesets/);
    assert.equal((parseClientMessage(three, { ...PARTITION, limits: { maxChangesets: 3 } }) as { changesets: unknown[] }).changesets.length, 3);
    const erase: Instruction = { type: 'EraseTable', table: 'T' };
    const six = upload([entry(1n, [erase, erase, erase]), entry(2n, [erase, erase, erase])]);
    expectWireError(() => parseClientMessage(six, { ...PARTITION, limits: { changeset: { maxInstructions: 5 } } }), 212, /changeset 2 .*more than 2 instructions/);
    assert.ok(parseClientMessage(six, { ...PARTITION, limits: { changeset: { maxInstructions: 6 } } }), 'six instructions pass a limit of six');
  });

  it('a compressed body inflating past its declared size stops at the declared size', () => {
    const bomb = deflateSync(Buffer.alloc(10_000_000));
    const frame = new Uint8Array([...ascii(`upload 1 1 1000 ${bomb.length} 1 0 0\n`), ...bomb]);
    expectWireError(() => parseClientMessage(frame, PARTITION), 110, /declared 1000 bytes/);
    const honest = new Uint8Array([...ascii(`upload 1 1 10000000 ${bomb.length} 1 0 0\n`), ...bomb]);
    expectWireError(() => parseClientMessage(honest, PARTITION), 111, /not followed by a space/);
    const inflatesShort = deflateSync(Buffer.from('1 0 0 0 0 '));
    const short = new Uint8Array([...ascii(`upload 1 1 11 ${inflatesShort.length} 1 0 0\n`), ...inflatesShort]);
    expectWireError(() => parseClientMessage(short, PARTITION), 110, /inflates to 10 bytes, the head declares 11/);
  });

  it('server-side frames for tools: bad DOWNLOAD values', () => {
    expectWireError(() => parseServerMessage(ascii('download 1 0 0 0 0 0 0 0 3 0.5 0 0 0\n'), FLEXIBLE), 103, /out of range/);
    expectWireError(() => parseServerMessage(ascii('download 1 0 0 0 0 0 0 0 1 1.5 0 0 0\n'), FLEXIBLE), 103, /not within 0..1/);
    expectWireError(() => parseServerMessage(ascii('download 1 0 0 0 0 0 0 0 1 NaN 0 0 0\n'), FLEXIBLE), 103, /not a number/);
    expectWireError(() => parseServerMessage(ascii('download 1 0 0 0 0 0 0 0 0 12 0\n0 0 0 1 0 0 '), PARTITION), 111, /server version 0/);
  });

  it('every prefix of every captured frame: the frame itself parses, each shorter one throws a WireError', () => {
    for (const frame of frames) {
      for (let cut = 0; cut < frame.bytes.length; cut++) {
        const prefix = frame.bytes.subarray(0, cut);
        expectWireError(() => parseFrame({ dir: frame.dir, bytes: prefix }));
      }
      parseFrame(frame);
    }
  });

  it('random frames and mutated real frames: a message or a WireError, nothing else (property)', () => {
    const onlyWireErrors = (bytes: Uint8Array, options: typeof PARTITION) => {
      for (const parse of [parseClientMessage, parseServerMessage]) {
        try {
          parse(bytes, options);
        } catch (error) {
          if (!(error instanceof WireError)) throw error;
        }
      }
    };
    const heads = ['bind', 'ident', 'upload', 'mark', 'unbind', 'ping', 'query', 'json_error', 'test_command', 'download', 'error', 'log_message', 'query_error', 'unbound', 'pong'];
    const field = fc.oneof(fc.nat().map(String), fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String), fc.constantFrom('0', '1', '-0', '', ' ', '00', '1.5'), fc.string({ maxLength: 4 }));
    const arbitraryFrame = fc.tuple(fc.constantFrom(...heads), fc.array(field, { maxLength: 14 }), fc.uint8Array({ maxLength: 64 }))
      .map(([type, fields, body]) => new Uint8Array([...Buffer.from([type, ...fields].join(' ') + '\n', 'latin1'), ...body]));
    fc.assert(fc.property(arbitraryFrame, fc.boolean(), (bytes, flexible) => onlyWireErrors(bytes, { protocolVersion: 14, flexible })), { numRuns: 5000 });
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => onlyWireErrors(bytes, PARTITION)), { numRuns: 2000 });
    fc.assert(
      fc.property(fc.constantFrom(...frames.map((f) => f.bytes)), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), (bytes, edits) => {
        const mutated = Uint8Array.from(bytes);
        for (const [at, value] of edits) mutated[at % mutated.length] = value;
        onlyWireErrors(mutated, PARTITION);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('negotiate', () => {
  const offers = (prefix: string) => Array.from({ length: 13 }, (_, i) => `${prefix}#${14 - i}`).join(', ');

  it('picks 14 from what realm-core 14 offers, partition or flexible', () => {
    assert.deepEqual(negotiate(offers('com.mongodb.realm-sync')), { protocol: 'com.mongodb.realm-sync#14', version: 14, flexible: false });
    assert.deepEqual(negotiate(offers('com.mongodb.realm-query-sync')), { protocol: 'com.mongodb.realm-query-sync#14', version: 14, flexible: true });
    assert.deepEqual(negotiate(new Set(['com.mongodb.realm-sync#2', 'com.mongodb.realm-sync#9'])), { protocol: 'com.mongodb.realm-sync#9', version: 9, flexible: false });
  });

  it('ranges, the old "/" form, and limits', () => {
    assert.deepEqual(negotiate('com.mongodb.realm-sync#3-20'), { protocol: 'com.mongodb.realm-sync#14', version: 14, flexible: false });
    assert.deepEqual(negotiate('com.mongodb.realm-sync/7'), { protocol: 'com.mongodb.realm-sync/7', version: 7, flexible: false });
    assert.equal(negotiate('com.mongodb.realm-sync#15-20'), null);
    assert.equal(negotiate('com.mongodb.realm-sync#1'), null);
    assert.deepEqual(negotiate(offers('com.mongodb.realm-sync'), { maxVersion: 12 })?.version, 12);
    assert.equal(negotiate(offers('com.mongodb.realm-query-sync'), { accept: { flexible: false } }), null);
  });

  it('none: no header, junk, other protocols', () => {
    assert.equal(negotiate(undefined), null);
    assert.equal(negotiate(''), null);
    assert.equal(negotiate('graphql-ws, chat'), null);
    assert.equal(negotiate('com.mongodb.realm-sync#x, com.mongodb.realm-sync#, com.mongodb.realm-sync#99999'), null);
  });
});

describe('protocol errors', () => {
  it('codes, names, levels', () => {
    assert.equal(ErrorCode.bad_changeset, 212);
    assert.equal(ErrorCode.bad_syntax, 103);
    assert.equal(ErrorCode.compensating_write, 231);
    assert.equal(ErrorCode.schema_version_changed, 236);
    assert.equal(PROTOCOL_ERRORS.get(204)?.name, 'illegal_realm_path');
    assert.equal(PROTOCOL_ERRORS.get(204)?.sessionLevel, true);
    assert.equal(PROTOCOL_ERRORS.get(110)?.sessionLevel, false);
    const codes = [...PROTOCOL_ERRORS.keys()];
    assert.deepEqual(codes, [...Array.from({ length: 15 }, (_, i) => 100 + i), ...Array.from({ length: 37 }, (_, i) => 200 + i)]);
    assert.ok(isSessionLevelError(200) && !isSessionLevelError(199) && !isSessionLevelError(300), '200..299 are session-level');
    const error = new WireError(212, 'x');
    assert.ok(error instanceof Error && error.sessionLevel && error.name === 'WireError', 'WireError is an Error with a session-level code');
  });
});

/**
 * A WebSocket proxy that decodes every frame with the codec and sends on what the codec encodes again, the
 * changesets re-encoded from their instructions (their received bytes dropped).
 */
async function startRecodingProxy(upstreamUrl: string) {
  const seen = { client: new Map<string, number>(), server: new Map<string, number>(), changesets: 0, errors: [] as string[] };
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (_, request) => (request as http.IncomingMessage & { chosen?: string }).chosen ?? false });
  const server = http.createServer((_, res) => res.writeHead(404).end());
  server.on('upgrade', (request: http.IncomingMessage & { chosen?: string }, socket, head) => {
    const offered = String(request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    const chosen = negotiate(offered);
    if (!chosen) return socket.destroy();
    const query = request.url!.includes('?') ? request.url!.slice(request.url!.indexOf('?')) : '';
    const upstream = new WebSocket(upstreamUrl + query, [chosen.protocol]);
    upstream.on('error', () => socket.destroy());
    upstream.on('open', () => {
      request.chosen = chosen.protocol;
      wss.handleUpgrade(request, socket, head, (client) => {
        const options = { protocolVersion: chosen.version, flexible: chosen.flexible };
        const recode = (from: 'client' | 'server', data: Buffer) => {
          try {
            const message = from === 'client' ? parseClientMessage(data, options) : parseServerMessage(data, options);
            seen[from].set(message.type, (seen[from].get(message.type) ?? 0) + 1);
            if ('changesets' in message) {
              for (const entry of message.changesets) delete entry.bytes;
              seen.changesets += message.changesets.length;
            }
            return from === 'client'
              ? encodeClientMessage(message as ClientMessage, chosen.version)
              : encodeServerMessage(message as ServerMessage, chosen.version);
          } catch (error) {
            seen.errors.push(`${from}: ${(error as Error).message}`);
            client.close();
            upstream.close();
            return undefined;
          }
        };
        client.on('message', (data: Buffer) => {
          const out = recode('client', data);
          if (out) upstream.send(out);
        });
        upstream.on('message', (data: Buffer) => {
          const out = recode('server', data);
          if (out && client.readyState === WebSocket.OPEN) client.send(out);
        });
        client.on('close', () => upstream.close());
        upstream.on('close', () => client.close());
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    seen,
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/realm-sync`,
    close: () => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); server.close(() => resolve()); }),
  };
}

describe('live: realm-core 14 on both ends of the codec', { skip: probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine' }, () => {
  it('realm\'s client and realm\'s server sync through frames the codec decoded and encoded again', async (t) => {
    const scenario = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures/sync-wire/scenario.json'), 'utf8'));
    const served = await serveDist();
    t.after(() => served.close());
    const reference = await startReferenceServer();
    t.after(() => reference.close());
    const proxy = await startRecodingProxy(reference.url);
    t.after(() => proxy.close());
    const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-sync-wire-'));
    t.after(() => fs.rmSync(dataRoot, { recursive: true, force: true }));
    const base = { baseUrl: served.url, appId: served.appId, partition: scenario.partition, schema: scenario.schema, syncRoute: proxy.url, timeoutMs: 20000 };

    const writer = await runProbe({ ...base, credentials: { type: 'emailPassword', email: 'wire-writer@example.com', password: 'wire-Passw0rd', register: true }, dataDir: path.join(dataRoot, 'writer'), steps: scenario.writerSteps });
    assert.equal(writer.result.status, 'ok', JSON.stringify(writer.result));
    const reader = await runProbe({ ...base, credentials: { type: 'emailPassword', email: 'wire-reader@example.com', password: 'wire-Passw0rd', register: true }, dataDir: path.join(dataRoot, 'reader'), steps: scenario.readerSteps });
    assert.equal(reader.result.status, 'ok', JSON.stringify(reader.result));

    assert.deepEqual(proxy.seen.errors, []);
    for (const type of ['AllTypes', 'Person', 'Counter', 'Gadget']) assert.deepEqual(reader.objects(type), writer.objects(type), type);
    const [everything] = reader.objects('AllTypes');
    assert.equal(everything.string, 'changed');
    assert.deepEqual(everything.intList, [3, 1, 2]);
    assert.deepEqual(reader.objects('Person'), [], 'both link targets deleted');
    assert.ok((proxy.seen.client.get('upload') ?? 0) >= 8 && (proxy.seen.server.get('download') ?? 0) >= 8, JSON.stringify([...proxy.seen.client, ...proxy.seen.server]));
    assert.ok(proxy.seen.changesets >= 12, 'changesets went through the codec');
  });
});

/**
 * A minimal flexible-sync server made of the codec alone, enough for a client to bind, bootstrap each
 * subscription set (a LastInBatch DOWNLOAD holding one empty changeset of a new server version), have its
 * uploads acknowledged and its MARKs answered. It records every client message.
 */
async function startFlexibleCodecServer() {
  const received: ClientMessage[] = [];
  const errors: string[] = [];
  let serverVersion = 0n;
  const salt = 4242n;
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', handleProtocols: (offered) => negotiate(offered, { accept: { flexible: true, partition: false } })?.protocol ?? false });
  wss.on('connection', (ws) => {
    const version = negotiate([ws.protocol])!.version;
    const queryVersions = new Map<number, bigint>();
    const send = (message: ServerMessage) => ws.send(encodeServerMessage(message, version));
    const uploaded = new Map<number, { client: bigint; server: bigint }>();
    const download = (session: number, queryVersion: bigint, batchState: 'lastInBatch' | 'steadyState', changesets: ChangesetEntry[] = []) => {
      const upload = uploaded.get(session) ?? { client: 0n, server: 0n };
      send({
        type: 'download', session, downloadServerVersion: serverVersion, downloadClientVersion: upload.client, latestServerVersion: serverVersion,
        latestServerVersionSalt: serverVersion === 0n ? 0n : salt, uploadClientVersion: upload.client, uploadServerVersion: upload.server,
        flexible: { queryVersion, batchState, progressEstimate: 1 }, changesets,
      });
    };
    const bootstrap = (session: number, queryVersion: bigint) => {
      serverVersion++;
      const upload = uploaded.get(session) ?? { client: 0n, server: 0n };
      download(session, queryVersion, 'lastInBatch', [{ version: serverVersion, lastIntegratedRemoteVersion: upload.client, originTimestamp: 1n, originFileIdent: 1n, instructions: [] }]);
    };
    ws.on('message', (data: Buffer) => {
      let message: ClientMessage;
      try {
        message = parseClientMessage(data, { protocolVersion: version, flexible: true });
      } catch (error) {
        errors.push((error as Error).message);
        return ws.close();
      }
      received.push(message);
      switch (message.type) {
        case 'bind':
          if (message.needClientFileIdent) send({ type: 'ident', session: message.session, clientFileIdent: 7n, clientFileIdentSalt: 99n });
          return;
        case 'ident':
          queryVersions.set(message.session, message.query!.version);
          return message.query!.version === 0n ? download(message.session, 0n, 'steadyState') : bootstrap(message.session, message.query!.version);
        case 'query':
          queryVersions.set(message.session, message.queryVersion);
          return bootstrap(message.session, message.queryVersion);
        case 'upload':
          if (message.changesets.length > 0) serverVersion++;
          uploaded.set(message.session, { client: message.progressClientVersion, server: message.progressServerVersion });
          return download(message.session, queryVersions.get(message.session) ?? 0n, 'steadyState');
        case 'mark':
          return send({ type: 'mark', session: message.session, requestIdent: message.requestIdent });
        case 'unbind':
          return send({ type: 'unbound', session: message.session });
        case 'ping':
          return send({ type: 'pong', timestamp: message.timestamp });
        default:
          return;
      }
    });
  });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  return {
    received, errors,
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/realm-sync`,
    close: () => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(() => resolve()); }),
  };
}

describe('live: realm-core 14 flexible sync against the codec', { skip: probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine' }, () => {
  it('the client\'s BIND JSON, IDENT query and QUERY parse, and it accepts the codec\'s flexible DOWNLOADs', async (t) => {
    const served = await serveDist();
    t.after(() => served.close());
    const server = await startFlexibleCodecServer();
    t.after(() => server.close());
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-sync-wire-flx-'));
    t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const run = await runProbe({
      baseUrl: served.url, appId: served.appId, flexible: true, syncRoute: server.url, dataDir, timeoutMs: 15000,
      credentials: { type: 'emailPassword', email: 'wire-flx@example.com', password: 'wire-Passw0rd', register: true },
      schema: [{ name: 'Task', primaryKey: '_id', properties: { _id: 'objectId', owner: 'string', done: 'bool' } }],
      subscriptions: ['Task=TRUEPREDICATE'],
      steps: [
        { write: [{ op: 'create', type: 'Task', value: { _id: { $oid: '65c000000000000000000001' }, owner: 'ada', done: false } }] },
        { waitUpload: true },
        { subscribe: [{ name: 'open', type: 'Task', query: 'done == false' }] },
        { unsubscribe: ['open'] },
      ],
    });
    assert.deepEqual(server.errors, []);
    assert.equal(run.result.status, 'ok', run.lines.filter((l) => !['http', 'object'].includes(l.event)).map((l) => JSON.stringify(l)).join('\n'));
    const ofType = <T extends ClientMessage['type']>(type: T) => server.received.filter((m): m is Extract<ClientMessage, { type: T }> => m.type === type);

    const [bind] = ofType('bind');
    assert.equal(bind.needClientFileIdent, true);
    assert.deepEqual(Object.keys(bind.bindJson!).sort(), ['schemaVersion', 'sessionReason']);
    const [ident] = ofType('ident');
    assert.equal(ident.clientFileIdent, 7n);
    assert.equal(ident.clientFileIdentSalt, 99n);
    // IDENT names the active subscription set (version 0, none yet); each committed set follows as a QUERY.
    assert.deepEqual(ident.query, { version: 0n, body: '{}' });
    const queries = ofType('query');
    assert.deepEqual(queries.map((q) => [q.queryVersion, q.body]), [
      [1n, '{"Task":"(TRUEPREDICATE)"}'],
      [2n, '{"Task":"(TRUEPREDICATE) OR (done == false)"}'],
      [3n, '{"Task":"(TRUEPREDICATE)"}'],
    ]);
    const uploaded = ofType('upload').flatMap((upload) => upload.changesets.flatMap((entry) => entry.instructions));
    assert.ok(uploaded.some((i) => i.type === 'CreateObject' && i.table === 'Task'), 'the created Task was uploaded');
    assert.ok(uploaded.some((i) => i.type === 'Update' && i.field === 'owner' && i.value.type === 'string' && i.value.value === 'ada'), 'its owner was uploaded');
    assert.ok(ofType('mark').length >= 1, 'the client asked for MARKs');
    assert.ok(ofType('unbind').length >= 1, 'the client unbound');
  });
});
