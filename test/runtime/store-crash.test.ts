// Crash safety of the embedded store: acknowledged writes survive SIGKILL of the writing process,
// and damage at the journal tail never costs the data before it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BSON } from 'bson';
import { EmbeddedStore, openEmbeddedStore } from '../../runtime/store/embedded';
import { frameRecord } from '../../runtime/store/journal';

const WRITER = path.join(__dirname, 'fixtures', 'store-writer.ts');
const ROOT = path.join(__dirname, '..', '..');

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'store-crash-'));
}

interface Acknowledged { inserted: Set<number>; updated: Set<number> }

/** Runs the writer child, SIGKILLs it once `killAfter` inserts are acknowledged, returns what it acknowledged. */
function runAndKill(dir: string, killAfter: number, extraArgs: string[] = []): Promise<Acknowledged> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER, dir, ...extraArgs], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const acked: Acknowledged = { inserted: new Set(), updated: new Set() };
    let buffered = '';
    let stderr = '';
    let killed = false;
    const deadline = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`writer acknowledged only ${acked.inserted.size} inserts before the deadline; stderr: ${stderr}`));
    }, 40_000);
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const [kind, id] = line.split(' ');
        if (kind === 'i') acked.inserted.add(Number(id));
        if (kind === 'u') acked.updated.add(Number(id));
      }
      if (!killed && acked.inserted.size >= killAfter) {
        killed = true;
        child.kill('SIGKILL');
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(deadline);
      if (signal !== 'SIGKILL') reject(new Error(`writer exited with ${code}: ${stderr}`));
      else resolve(acked);
    });
  });
}

async function assertAllPresent(dir: string, acked: Acknowledged): Promise<void> {
  const store = await openEmbeddedStore({ dir });
  try {
    const items = store.collection('crash', 'items');
    const docs = await items.find({});
    const byId = new Map(docs.map((d) => [d._id as number, d]));
    for (const id of acked.inserted) assert.ok(byId.has(id), `acknowledged insert ${id} is missing`);
    for (const id of acked.updated) assert.equal(byId.get(id)?.updated, true, `acknowledged update of ${id} is missing`);
    // The store keeps working after recovery.
    await items.insertOne({ _id: 'after-crash' });
  } finally {
    await store.close();
  }
  const reopened = await openEmbeddedStore({ dir });
  try {
    assert.equal((reopened as EmbeddedStore).recovery.truncatedBytes, 0);
    assert.ok(await reopened.collection('crash', 'items').findOne({ _id: 'after-crash' }));
  } finally {
    await reopened.close();
  }
}

describe('embedded store crash safety', () => {
  test('every acknowledged write survives SIGKILL mid-burst', async () => {
    const dir = tempDir();
    try {
      const acked = await runAndKill(dir, 400);
      assert.ok(acked.inserted.size >= 400);
      await assertAllPresent(dir, acked);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('acknowledged writes survive SIGKILL while compactions are running', async () => {
    const dir = tempDir();
    try {
      const acked = await runAndKill(dir, 1500, [String(32 * 1024)]);
      await assertAllPresent(dir, acked);
      assert.ok(fs.existsSync(path.join(dir, 'snapshot.bson')), 'the small threshold made the writer compact');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('embedded store journal tail damage', () => {
  async function seed(dir: string): Promise<void> {
    const store = await openEmbeddedStore({ dir });
    const items = store.collection('app', 'items');
    for (let i = 0; i < 50; i++) await items.insertOne({ _id: i, v: i });
    await store.close();
  }

  function journalFile(dir: string): string {
    const name = fs.readdirSync(dir).find((n) => n.startsWith('journal-'));
    assert.ok(name, 'a journal file exists');
    return path.join(dir, name);
  }

  async function assertSeedSurvives(dir: string, expectTruncated: boolean): Promise<void> {
    const store = await openEmbeddedStore({ dir });
    assert.equal((store as EmbeddedStore).recovery.truncatedBytes > 0, expectTruncated);
    const items = store.collection('app', 'items');
    assert.equal(await items.countDocuments(), 50);
    assert.deepEqual(await items.findOne({ _id: 49 }), { _id: 49, v: 49 });
    await items.insertOne({ _id: 'new' });
    await store.close();
    const reopened = await openEmbeddedStore({ dir });
    assert.equal((reopened as EmbeddedStore).recovery.truncatedBytes, 0, 'the damaged tail was cut, so new records follow valid ones');
    assert.equal(await reopened.collection('app', 'items').countDocuments(), 51);
    await reopened.close();
  }

  test('half a record at the tail is dropped and earlier data survives', async () => {
    const dir = tempDir();
    try {
      await seed(dir);
      const record = frameRecord(BSON.serialize({ o: 'p', n: 'app.items', d: { _id: 'torn', v: 'x'.repeat(100) } }));
      fs.appendFileSync(journalFile(dir), record.subarray(0, Math.floor(record.length / 2)));
      await assertSeedSurvives(dir, true);
      const store = await openEmbeddedStore({ dir });
      assert.equal(await store.collection('app', 'items').findOne({ _id: 'torn' }), null);
      await store.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('garbage bytes at the tail are dropped and earlier data survives', async () => {
    const dir = tempDir();
    try {
      await seed(dir);
      fs.appendFileSync(journalFile(dir), Buffer.from([0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
      await assertSeedSurvives(dir, true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a whole record with a bad checksum at the tail is dropped', async () => {
    const dir = tempDir();
    try {
      await seed(dir);
      const record = frameRecord(BSON.serialize({ o: 'p', n: 'app.items', d: { _id: 'bad', v: 1 } }));
      record[record.length - 2] ^= 0xff;
      fs.appendFileSync(journalFile(dir), record);
      await assertSeedSurvives(dir, true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
