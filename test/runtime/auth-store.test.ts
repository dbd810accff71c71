import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Journal } from '../../runtime/auth/journal';
import { loadOrCreateTokenSecret } from '../../runtime/auth/tokens';
import { hashPassword, verifyPassword } from '../../runtime/auth/passwords';
import { loadSecrets, missingSecretDiagnostics, parseSecretFlag, MissingSecretError } from '../../runtime/secrets';
import { JsonFile } from '../../core/json';
import { memoryFileSystem } from '../../core/fs';
import { loadApp } from '../../core/load';

async function tempDir(): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), 'asl-auth-store-'));
}

describe('auth journal', () => {
  test('replays puts and deletes, and cuts a torn final line', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'records.jsonl');
    try {
      const j = await Journal.open(file);
      await j.put('users', { _id: 'a', name: 'A' });
      await j.put('users', { _id: 'b', name: 'B' });
      await j.put('users', { _id: 'a', name: 'A2' });
      await j.delete('users', 'b');
      await j.close();
      const intact = await fs.readFile(file, 'utf8');
      await fs.appendFile(file, '{"t":"users","id":"c","d":{"_id":"c","na');
      const again = await Journal.open(file);
      assert.deepEqual([...again.state.get('users')!.values()], [{ _id: 'a', name: 'A2' }]);
      assert.equal(await fs.readFile(file, 'utf8'), intact, 'the torn tail is cut off');
      await again.put('users', { _id: 'c', name: 'C' });
      await again.close();
      const third = await Journal.open(file);
      assert.deepEqual([...third.state.get('users')!.keys()].sort(), ['a', 'c']);
      await third.close();
    } finally { await fs.rm(dir, { recursive: true, force: true }); }
  });

  test('a bad line followed by good ones is corruption, not a torn write', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'records.jsonl');
    try {
      await fs.writeFile(file, '{"t":"users","id":"a","d":{"_id":"a"}}\nnot json\n{"t":"users","id":"b","d":{"_id":"b"}}\n');
      await assert.rejects(Journal.open(file), /corrupt at line 2/);
    } finally { await fs.rm(dir, { recursive: true, force: true }); }
  });

  test('compacts a log dominated by superseded records', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'records.jsonl');
    try {
      const j = await Journal.open(file);
      await Promise.all(Array.from({ length: 1500 }, (_, i) => j.put('sessions', { _id: 's', n: i })));
      await j.close();
      const before = (await fs.stat(file)).size;
      const again = await Journal.open(file);
      assert.equal((again.state.get('sessions')!.get('s') as unknown as { n: number }).n, 1499);
      await again.close();
      assert.ok((await fs.stat(file)).size < before / 100);
    } finally { await fs.rm(dir, { recursive: true, force: true }); }
  });

  test('every acknowledged write survives kill -9', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'records.jsonl');
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures', 'auth-journal-writer.ts'), file], { stdio: ['ignore', 'pipe', 'inherit'] });
      let lastAcked = -1;
      let buffered = '';
      await new Promise<void>((resolve, reject) => {
        const deadline = setTimeout(() => { child.kill('SIGKILL'); reject(new Error('the writer never acknowledged 200 writes')); }, 30000);
        child.stdout!.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          const lines = buffered.split('\n');
          buffered = lines.pop()!;
          for (const line of lines) lastAcked = Number(line.split(' ')[1]);
          if (lastAcked >= 200 && child.exitCode === null && !child.killed) { clearTimeout(deadline); child.kill('SIGKILL'); }
        });
        child.on('exit', () => resolve());
      });
      assert.ok(lastAcked >= 200, `the writer acknowledged ${lastAcked + 1} writes before it was killed`);
      const j = await Journal.open(file);
      const users = j.state.get('users')!;
      for (let i = 0; i <= lastAcked; i++) assert.equal((users.get(`u${i}`) as unknown as { n: number } | undefined)?.n, i, `acknowledged write ${i} survived`);
      await j.close();
    } finally { await fs.rm(dir, { recursive: true, force: true }); }
  });
});

describe('token secret and passwords', () => {
  test('the token secret is created once, 0600, and shared by concurrent first starts', async () => {
    const dir = await tempDir();
    try {
      const [a, b] = await Promise.all([loadOrCreateTokenSecret(dir), loadOrCreateTokenSecret(dir)]);
      assert.deepEqual(a, b);
      assert.ok(a.length >= 32);
      assert.deepEqual(await loadOrCreateTokenSecret(dir), a);
      assert.equal((await fs.stat(path.join(dir, 'auth', 'token-secret'))).mode & 0o777, 0o600);
      assert.deepEqual((await fs.readdir(path.join(dir, 'auth'))).sort(), ['token-secret']);
    } finally { await fs.rm(dir, { recursive: true, force: true }); }
  });

  test('scrypt hashes verify, carry no plain text and differ per salt', async () => {
    const [h1, h2] = await Promise.all([hashPassword('correct horse'), hashPassword('correct horse')]);
    assert.match(h1, /^scrypt\$16384\$8\$1\$/);
    assert.notEqual(h1, h2);
    assert.ok(!h1.includes('correct'));
    assert.equal(await verifyPassword('correct horse', h1), true);
    assert.equal(await verifyPassword('correct horsf', h1), false);
    assert.equal(await verifyPassword('x', 'plain-text'), false);
  });
});

describe('secrets', () => {
  test('secrets.json values with --secret overrides', () => {
    const file = new JsonFile('/app/secrets.json', 'secrets.json', '{"jwt_key": "from-file", "other": "o", "bad": 5}');
    const { store, diagnostics } = loadSecrets({ file, flags: ['jwt_key=from-flag', 'with_equals=a=b'] });
    assert.equal(store.resolve('jwt_key', 'test'), 'from-flag');
    assert.equal(store.resolve('other', 'test'), 'o');
    assert.equal(store.resolve('with_equals', 'test'), 'a=b');
    assert.equal(store.has('bad'), false);
    assert.deepEqual(diagnostics.map((d) => d.code), ['secrets/not-string']);
    assert.throws(() => store.resolve('missing', "auth provider 'custom-token'"), (e: unknown) =>
      e instanceof MissingSecretError && /secret 'missing' needed by auth provider 'custom-token' has no value/.test(e.message) && /--secret missing=/.test(e.message) && /secrets\.json/.test(e.message));
    assert.throws(() => parseSecretFlag('novalue'), /NAME=VALUE/);
    assert.throws(() => parseSecretFlag('=x'), /NAME=VALUE/);
  });

  test('a secret the app needs and nobody supplied is a diagnostic at the reference', async () => {
    const root = '/virtual/secret-app';
    const files: Record<string, string> = {
      'realm_config.json': JSON.stringify({ config_version: 20210101, app_id: 'sec-abcde', name: 'sec' }),
      'auth/providers.json': JSON.stringify({
        'custom-token': { name: 'custom-token', type: 'custom-token', disabled: false, config: { signingAlgorithm: 'HS256' }, secret_config: { signingKeys: ['k1', 'k2'] }, metadata_fields: [] },
      }),
      'values/apiToken.json': JSON.stringify({ name: 'apiToken', from_secret: true, value: 'api_token_secret' }),
      'values/plain.json': JSON.stringify({ name: 'plain', from_secret: false, value: 'not a secret' }),
    };
    const app = await loadApp(memoryFileSystem(Object.fromEntries(Object.entries(files).map(([k, v]) => [path.join(root, k), v]))), root);
    const { store } = loadSecrets({ flags: ['k1=value-one'] });
    const diagnostics = missingSecretDiagnostics(app, store);
    assert.deepEqual(diagnostics.map((d) => [path.basename(d.file), d.data?.secret]), [['providers.json', 'k2'], ['apiToken.json', 'api_token_secret']]);
    assert.ok(diagnostics.every((d) => d.severity === 'error' && d.code === 'secrets/missing-value'));
    assert.match(diagnostics[0]!.message, /secret 'k2' needed by auth provider 'custom-token'/);
    assert.ok(diagnostics[0]!.range.start.line > 0 || diagnostics[0]!.range.start.character > 0, 'positioned at the reference, not the file start');
  });
});

describe('custom user data lookup', () => {
  test('finds the document whose user id field holds the user id, only when enabled', async () => {
    const { openEmbeddedStore } = await import('../../runtime/store/index');
    const { customUserDataLookup } = await import('../../runtime/auth/customUserData');
    const file = new JsonFile('/app/auth/custom_user_data.json', 'auth/custom_user_data.json', '{}');
    const store = await openEmbeddedStore();
    try {
      await store.collection('customData', 'users').insertMany([{ userId: 'u1', plan: 'pro' }, { userId: 'u2', plan: 'free' }]);
      const opened: string[] = [];
      const lookup = customUserDataLookup(
        { enabled: true, serviceName: 'mongodb-atlas', databaseName: 'customData', collectionName: 'users', userIdField: 'userId', source: { file, path: [] } },
        (svc, db, coll) => { opened.push(`${svc}/${db}/${coll}`); return store.collection(db, coll); },
      )!;
      const user = (id: string) => ({ id, type: 'normal' as const, data: {}, identities: [] });
      assert.equal((await lookup(user('u2')))?.plan, 'free');
      assert.equal(await lookup(user('nobody')), undefined);
      assert.deepEqual(opened, ['mongodb-atlas/customData/users']);
      assert.equal(customUserDataLookup({ enabled: false, source: { file, path: [] } }, () => { throw new Error('not opened'); }), undefined);
    } finally { await store.close(); }
  });
});
