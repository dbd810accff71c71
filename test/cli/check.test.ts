// `asl check` as a user runs it: the bundled CLI in a child process.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { baseApp } from '../helpers/app';
import { DIST, writeApp } from '../helpers/disk';

function asl(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [path.join(DIST, 'cli.js'), ...args], { cwd, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('asl check', () => {
  test('exits 0 on a valid app', () => {
    const root = writeApp(baseApp());
    const r = asl(['check', root], os.tmpdir());
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

  test('exits 1 and names file, line, column and code of a broken reference', () => {
    const files = baseApp();
    (files['graphql/custom_resolvers/mutation_renameTask.json'] as Record<string, unknown>).function_name = 'nope';
    const root = writeApp(files);
    const r = asl(['check', '.'], root);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^graphql\/custom_resolvers\/mutation_renameTask\.json:4:20 {2}error {2}resolver\/unknown-function {2}/m);
  });

  test('--json prints 0-based LSP ranges and relative paths', () => {
    const files = baseApp();
    (files['graphql/custom_resolvers/mutation_renameTask.json'] as Record<string, unknown>).function_name = 'nope';
    const root = writeApp(files);
    const r = asl(['check', '--json'], path.join(root, 'functions'));
    assert.equal(r.code, 1);
    const items = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    const d = items.find((x) => x.code === 'resolver/unknown-function')!;
    assert.equal(d.file, '../graphql/custom_resolvers/mutation_renameTask.json');
    assert.deepEqual(d.range, { start: { line: 3, character: 19 }, end: { line: 3, character: 25 } });
    assert.equal(d.severity, 'error');
  });

  test('exits 2 on a folder without an app and on a usage error', () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-empty-'));
    assert.equal(asl(['check', empty], empty).code, 2);
    assert.equal(asl(['check', '--bogus'], empty).code, 2);
    assert.equal(asl(['frobnicate'], empty).code, 2);
  });

  test('--help describes the options', () => {
    const r = asl(['check', '--help'], os.tmpdir());
    assert.equal(r.code, 0);
    assert.match(r.stdout, /--json/);
    assert.match(asl(['--help'], os.tmpdir()).stdout, /check \[appDir\]/);
  });
});

describe('asl schema', () => {
  test('prints SDL that graphql-js accepts, with the generated and custom fields', async () => {
    const { buildSchema, validateSchema } = await import('graphql');
    const root = writeApp(baseApp());
    const r = asl(['schema', root], os.tmpdir());
    assert.equal(r.code, 0, r.stderr);
    const schema = buildSchema(r.stdout);
    assert.deepEqual(validateSchema(schema), []);
    assert.ok(schema.getQueryType()!.getFields().tasks);
    assert.equal(String(schema.getMutationType()!.getFields().renameTask.type), 'Task');
  });

  test('--out writes the SDL to a file and --config a graphql.config.yml pointing at it', async () => {
    const { buildSchema } = await import('graphql');
    const root = writeApp(baseApp());
    const r = asl(['schema', root, '--out', 'tools/schema.graphql', '--config'], root);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    const sdl = fs.readFileSync(path.join(root, 'tools/schema.graphql'), 'utf8');
    assert.match(sdl, /^# Written by App Services Local/);
    assert.ok(buildSchema(sdl).getQueryType()!.getFields().tasks);
    const config = fs.readFileSync(path.join(root, 'tools/graphql.config.yml'), 'utf8');
    assert.match(config, /^schema: "\.\/schema\.graphql"$/m);
    assert.match(config, /^documents: /m);
    assert.equal(asl(['schema', root, '--config'], root).code, 2);
  });
});
