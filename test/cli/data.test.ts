// `asl data export|import|backup|restore` on a data folder no runtime holds (node dist/cli.js, the store opened
// directly): dumps in mongodump's layout written with the bson library, every BSON type kept byte for byte,
// indexes, gzip, corrupted and truncated files refused by name and offset with nothing imported, stored ids,
// the runtime's own databases, backup and restore.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { BSON, BSONSymbol, DBRef, EJSON, Int32, ObjectId } from 'bson';
import { copyApp } from '../dist/fixtures/serve';
import { asl, CLI, everyTypeDocument, writeDumpCollection } from '../helpers/dump';

describe('asl data on a data folder no runtime holds', { timeout: 240_000 }, () => {
  let appDir: string;
  let work: string;
  let n = 0;
  before(() => {
    appDir = copyApp();
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-data-'));
  });
  after(() => {
    fs.rmSync(appDir, { recursive: true, force: true });
    fs.rmSync(work, { recursive: true, force: true });
  });
  /** A fresh data folder per test, and the `asl data` command on it. */
  const fresh = () => {
    const dataDir = path.join(work, `data-${++n}`);
    return { dataDir, run: (...args: string[]) => asl(['data', ...args, '--local', appDir, '--data', dataDir]) };
  };
  const folder = (name: string) => path.join(work, `${name}-${++n}`);
  const exported = (run: (...a: string[]) => ReturnType<typeof asl>, db?: string) => {
    const out = folder('export');
    const result = run('export', out, '--json', ...(db ? ['--db', db] : []));
    assert.equal(result.status, 0, result.stderr);
    return { out, summary: JSON.parse(result.stdout) as { documents: number; collections: { database: string; collection: string; documents: number }[] } };
  };
  /** The namespaces the store holds documents or indexes of; none when nothing was ever written (no store yet). */
  const stored = (run: (...a: string[]) => ReturnType<typeof asl>): string[] => {
    const result = run('export', folder('export'), '--json');
    if (result.status === 1 && result.stderr.includes('holds no data yet')) return [];
    assert.equal(result.status, 0, result.stderr);
    return (JSON.parse(result.stdout) as { collections: { database: string; collection: string }[] }).collections.map((c) => `${c.database}.${c.collection}`);
  };

  test('a dump written by the bson library imports with every BSON type kept, its indexes created, and exports back byte for byte', () => {
    const { run } = fresh();
    const dump = folder('dump');
    const docs = [everyTypeDocument(1), everyTypeDocument(2), { _id: 'a string id', 'dotted.name': 1, $dollar: 2 }];
    const files = writeDumpCollection(dump, {
      database: 'shop', collection: 'items', docs,
      indexes: [
        { v: new Int32(2), key: { string: new Int32(1) }, name: 'string_1' },
        { v: new Int32(2), key: { 'object.nested.deeper': new Int32(-1) }, name: 'deep_-1' },
        { v: new Int32(2), key: { string: new Int32(1), int32: new Int32(1) }, name: 'compound' },
      ],
    });
    const imported = run('import', dump);
    assert.equal(imported.status, 0, imported.stderr);
    assert.match(imported.stdout, /imported 3 document\(s\) in 1 collection\(s\)/);
    assert.ok(imported.stderr.includes(`${files.metadata}: index compound is not a single-field index`), imported.stderr);

    const { out, summary } = exported(run);
    assert.deepEqual(summary.collections.filter((c) => c.database === 'shop'), [{ database: 'shop', collection: 'items', documents: 3 }]);
    assert.deepEqual(fs.readFileSync(path.join(out, 'shop', 'items.bson')), fs.readFileSync(files.bson), 'every document comes back byte for byte');
    const metadata = EJSON.parse(fs.readFileSync(path.join(out, 'shop', 'items.metadata.json'), 'utf8'), { relaxed: false }) as Record<string, unknown>;
    assert.equal(metadata.collectionName, 'items');
    assert.equal(metadata.type, 'collection');
    assert.match(String(metadata.uuid), /^[0-9a-f]{32}$/);
    const keys = (metadata.indexes as { key: Record<string, unknown>; name: string }[]).map((i) => [i.name, Object.keys(i.key)]);
    assert.deepEqual(keys, [['_id_', ['_id']], ['string_1', ['string']], ['object.nested.deeper_1', ['object.nested.deeper']]]);
    // Canonical Extended JSON, as mongodump writes it.
    assert.ok(fs.readFileSync(path.join(out, 'shop', 'items.metadata.json'), 'utf8').includes('"v":{"$numberInt":"2"}'));
  });

  test('the deprecated BSON types come in as the drivers read them: undefined as null, symbol as string, DBPointer as DBRef', () => {
    const { run } = fresh();
    const dump = folder('dump');
    const id = new ObjectId('65a0000000000000000000aa');
    const pointer = new ObjectId('65a0000000000000000000bb');
    const cstring = (s: string) => Buffer.from(`${s}\0`);
    const bsonString = (s: string) => { const b = Buffer.from(`${s}\0`); const len = Buffer.alloc(4); len.writeInt32LE(b.length); return Buffer.concat([len, b]); };
    const body = Buffer.concat([
      Buffer.from([0x07]), cstring('_id'), Buffer.from(id.id),
      Buffer.from([0x06]), cstring('undefined'),
      Buffer.from([0x0e]), cstring('symbol'), bsonString('sym'),
      Buffer.from([0x0c]), cstring('pointer'), bsonString('shop.other'), Buffer.from(pointer.id),
      Buffer.from([0]),
    ]);
    const length = Buffer.alloc(4);
    length.writeInt32LE(body.length + 4);
    fs.mkdirSync(path.join(dump, 'shop'), { recursive: true });
    fs.writeFileSync(path.join(dump, 'shop', 'old.bson'), Buffer.concat([length, body]));
    assert.equal(run('import', dump).status, 0);
    const { out } = exported(run, 'shop');
    const back = BSON.deserialize(fs.readFileSync(path.join(out, 'shop', 'old.bson')), { promoteValues: false });
    assert.deepEqual(Object.keys(back), ['_id', 'undefined', 'symbol', 'pointer']);
    assert.equal(back.undefined, null);
    assert.ok(!(back.symbol instanceof BSONSymbol));
    assert.equal(String(back.symbol), 'sym');
    assert.ok(back.pointer instanceof DBRef);
    assert.equal((back.pointer as DBRef).collection, 'other');
    assert.equal((back.pointer as DBRef).db, 'shop');
    assert.ok(((back.pointer as DBRef).oid as ObjectId).equals(pointer));
  });

  test('a mongodump --gzip dump imports; export --gzip writes one that imports again, the same documents', () => {
    const first = fresh();
    const dump = folder('dump');
    const docs = Array.from({ length: 2500 }, (_, i) => ({ _id: i, name: `item ${i}`, tags: ['a', i % 2 ? 'odd' : 'even'] }));
    writeDumpCollection(dump, { database: 'shop', collection: 'many', docs, gzip: true });
    const imported = first.run('import', dump);
    assert.equal(imported.status, 0, imported.stderr);
    assert.equal(imported.stderr, '', 'no progress bar and no notes when stderr is not a terminal');
    const out = folder('gz');
    assert.equal(first.run('export', out, '--gzip', '--db', 'shop').status, 0);
    assert.ok(fs.existsSync(path.join(out, 'shop', 'many.bson.gz')) && fs.existsSync(path.join(out, 'shop', 'many.metadata.json.gz')));
    assert.ok(!fs.existsSync(path.join(out, 'shop', 'many.bson')));
    assert.deepEqual(zlib.gunzipSync(fs.readFileSync(path.join(out, 'shop', 'many.bson.gz'))), Buffer.concat(docs.map((d) => BSON.serialize(d))));
    const second = fresh();
    assert.equal(second.run('import', out).status, 0);
    assert.equal(exported(second.run, 'shop').summary.documents, 2500);
  });

  test('on a terminal the import draws a progress bar on stderr as its batches are written', { skip: fs.existsSync('/usr/bin/script') ? false : 'script(1) (util-linux) gives the command a terminal; not on this machine' }, () => {
    const { dataDir } = fresh();
    const dump = folder('dump');
    writeDumpCollection(dump, { database: 'shop', collection: 'bar', docs: Array.from({ length: 3000 }, (_, i) => ({ _id: i })) });
    const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
    const command = [process.execPath, CLI, 'data', 'import', dump, '--local', appDir, '--data', dataDir].map(quote).join(' ');
    const run = spawnSync('/usr/bin/script', ['-qec', command, '/dev/null'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.status, 0, run.stdout);
    assert.match(run.stdout, /\rimporting \[#*-*\] +\d+%  \d+\/3000 documents/);
    assert.ok(run.stdout.includes('\rimporting [##############################] 100%  3000/3000 documents'), JSON.stringify(run.stdout));
    assert.match(run.stdout, /imported 3000 document\(s\) in 1 collection\(s\)/);
  });

  test('a corrupted file is refused with its name and byte offset, and nothing of the dump is imported', () => {
    const { run } = fresh();
    const dump = folder('dump');
    writeDumpCollection(dump, { database: 'shop', collection: 'a_good', docs: [{ _id: 1, ok: true }] });
    const docs = [{ _id: 1, name: 'one' }, { _id: 2, name: 'two' }, { _id: 3, name: 'three' }];
    const { bson } = writeDumpCollection(dump, { database: 'shop', collection: 'b_bad', docs });
    const bytes = fs.readFileSync(bson);
    const second = BSON.serialize(docs[0]!).length;
    // The second document's string claims more bytes than its document holds.
    bytes.writeInt32LE(0x7fff, second + 4 + 1 + '_id'.length + 1 + 4 + 1 + 'name'.length + 1);
    fs.writeFileSync(bson, bytes);
    const refused = run('import', dump);
    assert.equal(refused.status, 1);
    assert.ok(refused.stderr.includes(`${bson}: the document at byte ${second}: not a valid BSON document`), refused.stderr);
    assert.deepEqual(stored(run).filter((ns) => ns.startsWith('shop.')), [], 'the good file before it was not imported either');

    // A length that no document can have, and a document that does not end with its 0 byte.
    bytes.writeInt32LE(3, second);
    fs.writeFileSync(bson, bytes);
    assert.ok(run('import', dump).stderr.includes(`${bson}: the document at byte ${second}: impossible document length 3`));
    const unterminated = Buffer.concat(docs.map((d) => BSON.serialize(d)));
    unterminated[second - 1] = 1;
    fs.writeFileSync(bson, unterminated);
    assert.ok(run('import', dump).stderr.includes(`${bson}: the document at byte 0: the document does not end with its 0 byte`));
    const badMetadata = writeDumpCollection(dump, { database: 'shop', collection: 'b_bad', docs });
    fs.writeFileSync(badMetadata.metadata, '{"indexes": [{"name": "no key"}]}');
    assert.ok(run('import', dump).stderr.includes(`${badMetadata.metadata}: an index has no "key" document`));
  });

  test('a truncated file, and a truncated .gz, are refused with their name and offset; nothing is imported', () => {
    const { run } = fresh();
    const dump = folder('dump');
    const docs = Array.from({ length: 10 }, (_, i) => ({ _id: i, text: 'x'.repeat(100) }));
    const { bson } = writeDumpCollection(dump, { database: 'shop', collection: 'cut', docs });
    const whole = fs.readFileSync(bson);
    const last = whole.length - BSON.serialize(docs[9]!).length;
    fs.writeFileSync(bson, whole.subarray(0, last + 50));
    const refused = run('import', dump);
    assert.equal(refused.status, 1);
    assert.ok(refused.stderr.includes(`${bson}: the document at byte ${last}: truncated: the document claims ${whole.length - last} bytes, only 50 remain`), refused.stderr);
    fs.writeFileSync(bson, whole.subarray(0, last + 2));
    assert.ok(run('import', dump).stderr.includes(`${bson}: the document at byte ${last}: truncated: 2 byte(s) where a document's length should be`));
    fs.rmSync(bson);
    const gz = zlib.gzipSync(whole);
    fs.writeFileSync(`${bson}.gz`, gz.subarray(0, gz.length - 10));
    const cutGzip = run('import', dump);
    assert.equal(cutGzip.status, 1);
    assert.ok(cutGzip.stderr.includes(`${bson}.gz: not a whole gzip file`), cutGzip.stderr);
    assert.deepEqual(stored(run).filter((ns) => ns.startsWith('shop.')), []);
  });

  test('a stored _id refuses the whole import; --drop replaces the collections the dump holds', () => {
    const { run } = fresh();
    const dump = folder('dump');
    writeDumpCollection(dump, { database: 'shop', collection: 'items', docs: [{ _id: 1, v: 'first' }, { _id: 2, v: 'first' }] });
    assert.equal(run('import', dump).status, 0);
    const again = folder('dump');
    writeDumpCollection(again, { database: 'shop', collection: 'fresh', docs: [{ _id: 9 }] });
    const { bson } = writeDumpCollection(again, { database: 'shop', collection: 'items', docs: [{ _id: 3, v: 'second' }, { _id: 2, v: 'second' }] });
    const refused = run('import', again);
    assert.equal(refused.status, 1);
    assert.ok(refused.stderr.includes(`${bson}: shop.items already holds the document with _id 2`), refused.stderr);
    assert.deepEqual(exported(run, 'shop').summary.collections, [{ database: 'shop', collection: 'items', documents: 2 }], 'shop.fresh was not imported either');
    const repeated = folder('dump');
    writeDumpCollection(repeated, { database: 'shop', collection: 'twice', docs: [{ _id: 'x' }, { _id: 'x' }] });
    assert.match(run('import', repeated).stderr, /document 2 repeats the _id "x"/);

    const dropped = run('import', again, '--drop');
    assert.equal(dropped.status, 0, dropped.stderr);
    const { out } = exported(run, 'shop');
    const items = splitDocs(fs.readFileSync(path.join(out, 'shop', 'items.bson')));
    assert.deepEqual(items, [{ _id: 3, v: 'second' }, { _id: 2, v: 'second' }]);
  });

  test('the runtime\'s own databases are never imported, nor are system collections', () => {
    const { run } = fresh();
    const dump = folder('dump');
    const { bson } = writeDumpCollection(dump, { database: '__asl_auth', collection: 'users', docs: [{ _id: 'intruder', admin: true }] });
    const refused = run('import', dump);
    assert.equal(refused.status, 1);
    assert.ok(refused.stderr.includes(`${bson}: the database __asl_auth is the runtime's own`), refused.stderr);
    fs.rmSync(path.join(dump, '__asl_auth'), { recursive: true });
    writeDumpCollection(dump, { database: 'admin', collection: 'system.users', docs: [{ _id: 'admin.root' }] });
    writeDumpCollection(dump, { database: 'shop', collection: 'items', docs: [{ _id: 1 }] });
    const imported = run('import', dump);
    assert.equal(imported.status, 0, imported.stderr);
    assert.match(imported.stderr, /the system collection admin\.system\.users is not imported/);
    assert.deepEqual(exported(run).summary.collections.map((c) => `${c.database}.${c.collection}`), ['shop.items']);
  });

  test('in a folder of several apps, --app picks the one whose data folder the command works on', () => {
    const root = folder('apps');
    for (const [name, id] of [['one', 'one-app-aaaaa'], ['two', 'two-app-bbbbb']] as const) {
      fs.cpSync(appDir, path.join(root, name), { recursive: true });
      const config = path.join(root, name, 'realm_config.json');
      fs.writeFileSync(config, JSON.stringify({ ...JSON.parse(fs.readFileSync(config, 'utf8')), app_id: id, name }));
    }
    const dump = folder('dump');
    writeDumpCollection(dump, { database: 'shop', collection: 'items', docs: [{ _id: 1 }] });
    const ambiguous = asl(['data', 'import', dump, '--local', root]);
    assert.equal(ambiguous.status, 2);
    assert.match(ambiguous.stderr, /2 apps found; pick one with --app <client app id>/);
    assert.match(asl(['data', 'import', dump, '--local', root, '--app', 'three-app-ccccc']).stderr, /no app with the id three-app-ccccc/);
    const picked = asl(['data', 'import', dump, '--local', root, '--app', 'two-app-bbbbb']);
    assert.equal(picked.status, 0, picked.stderr);
    assert.ok(fs.existsSync(path.join(root, 'two', '.asl', 'data')));
    assert.ok(!fs.existsSync(path.join(root, 'one', '.asl')));
  });

  test('backup copies the whole data folder; restore brings it back, refusing a damaged backup or a path out of the folder', () => {
    const { run, dataDir } = fresh();
    const dump = folder('dump');
    writeDumpCollection(dump, { database: 'shop', collection: 'items', docs: [{ _id: 1, v: 'kept' }] });
    assert.equal(run('import', dump).status, 0);
    const backup = folder('backup');
    const made = run('backup', backup);
    assert.equal(made.status, 0, made.stderr);
    assert.ok(fs.existsSync(path.join(backup, 'asl-backup.json')) && fs.existsSync(path.join(backup, 'data', 'snapshot.bson')));
    assert.equal(run('backup', backup).status, 1, 'a backup never writes into a folder that is not empty');

    const later = folder('dump');
    writeDumpCollection(later, { database: 'shop', collection: 'later', docs: [{ _id: 2 }] });
    assert.equal(run('import', later).status, 0);
    const restored = run('restore', backup);
    assert.equal(restored.status, 0, restored.stderr);
    assert.deepEqual(exported(run, 'shop').summary.collections, [{ database: 'shop', collection: 'items', documents: 1 }]);
    assert.equal(fs.statSync(dataDir).mode & 0o777, 0o700);

    fs.appendFileSync(path.join(backup, 'data', 'snapshot.bson'), 'x');
    assert.match(run('restore', backup).stderr, /snapshot\.bson is not the file the backup wrote/);
    const manifest = JSON.parse(fs.readFileSync(path.join(backup, 'asl-backup.json'), 'utf8')) as { files: { path: string }[] };
    manifest.files[0]!.path = '../escape';
    fs.writeFileSync(path.join(backup, 'asl-backup.json'), JSON.stringify(manifest));
    assert.match(run('restore', backup).stderr, /not a file path of a backup: "\.\.\/escape"/);
    assert.deepEqual(exported(run, 'shop').summary.collections, [{ database: 'shop', collection: 'items', documents: 1 }], 'refused restores changed nothing');
  });
});

function splitDocs(bytes: Buffer): Record<string, unknown>[] {
  const docs: Record<string, unknown>[] = [];
  for (let at = 0; at < bytes.length; at += bytes.readInt32LE(at)) docs.push(BSON.deserialize(bytes.subarray(at, at + bytes.readInt32LE(at))));
  return docs;
}
