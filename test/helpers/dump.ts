// Dumps in mongodump's layout written with the bson library, for the `asl data` tests and benchmark:
// `<dir>/<db>/<collection>.bson` (concatenated documents) and `.metadata.json` (canonical Extended JSON).
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { spawnSync } from 'node:child_process';
import {
  Binary, BSON, BSONRegExp, Code, Decimal128, Double, EJSON, Int32, Long, MaxKey, MinKey, ObjectId, Timestamp, UUID,
} from 'bson';
import { DIST } from './disk';

export const CLI = path.join(DIST, 'cli.js');

export interface DumpSpec { database: string; collection: string; docs: Record<string, unknown>[]; indexes?: Record<string, unknown>[]; gzip?: boolean }

export function writeDumpCollection(dir: string, spec: DumpSpec): { bson: string; metadata: string } {
  const folder = path.join(dir, spec.database);
  fs.mkdirSync(folder, { recursive: true });
  const bytes = Buffer.concat(spec.docs.map((d) => BSON.serialize(d)));
  const metadata = Buffer.from(EJSON.stringify({
    indexes: [{ v: new Int32(2), key: { _id: new Int32(1) }, name: '_id_' }, ...(spec.indexes ?? [])],
    uuid: '0123456789abcdef0123456789abcdef', collectionName: spec.collection, type: 'collection',
  }, { relaxed: false }));
  const suffix = spec.gzip ? '.gz' : '';
  const bson = path.join(folder, `${spec.collection}.bson${suffix}`);
  const meta = path.join(folder, `${spec.collection}.metadata.json${suffix}`);
  fs.writeFileSync(bson, spec.gzip ? zlib.gzipSync(bytes) : bytes);
  fs.writeFileSync(meta, spec.gzip ? zlib.gzipSync(metadata) : metadata);
  return { bson, metadata: meta };
}

/** One document holding every BSON type that is not deprecated, several forms of some. */
export function everyTypeDocument(i: number): Record<string, unknown> {
  return {
    _id: new ObjectId(`65a0000000000000000000${i.toString(16).padStart(2, '0')}`),
    double: 1.5, wholeDouble: new Double(4), negativeZero: new Double(-0), nan: NaN, infinity: -Infinity, bigDouble: new Double(5e9),
    string: `ünïcødé ✓ ${i}`, empty: '',
    object: { nested: { deeper: [1, { x: 'y' }] } }, emptyObject: {},
    array: [1, 'two', 3.5, null, [new Int32(4)]], emptyArray: [],
    binaryGeneric: new Binary(Buffer.from([0, 1, 2, 255]), 0), binaryFunction: new Binary(Buffer.from('f'), 1),
    binaryOld: new Binary(Buffer.from('old'), 2), uuidOld: new Binary(Buffer.alloc(16, 7), 3), uuid: new UUID('1b4e28ba-2fa1-11d2-883f-0016d3cca427'),
    md5: new Binary(Buffer.alloc(16, 9), 5), encrypted: new Binary(Buffer.from('enc'), 6), column: new Binary(Buffer.from('col'), 7),
    sensitive: new Binary(Buffer.from('s'), 8), userDefined: new Binary(Buffer.from('user'), 0x80),
    objectId: new ObjectId('5f1d7e2c9b0a4c3d2e1f0a9b'), yes: true, no: false,
    date: new Date('2024-02-29T12:34:56.789Z'), beforeEpoch: new Date(-86400000),
    nothing: null, regex: new BSONRegExp('^a.*b$', 'imsx'),
    code: new Code('function () { return 1; }'), codeWithScope: new Code('function () { return x; }', { x: new Int32(1) }),
    int32: new Int32(-2147483648), int32Max: new Int32(2147483647),
    timestamp: new Timestamp({ t: 1700000000, i: 7 }), int64: Long.fromString('-9223372036854775808'), int64Small: Long.fromNumber(5),
    decimal: Decimal128.fromString('1234567890.123456789012345678901234'), decimalNaN: Decimal128.fromString('NaN'),
    minKey: new MinKey(), maxKey: new MaxKey(),
  };
}

export interface CliRun { status: number | null; stdout: string; stderr: string }

export function asl(args: string[], options: { cwd?: string; timeoutMs?: number } = {}): CliRun {
  const run = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: options.cwd, timeout: options.timeoutMs ?? 60_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}
