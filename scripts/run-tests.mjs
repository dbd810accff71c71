// Runs every *.test.ts under test/ (except the editor tests) with Node's built-in runner.
// Node 20's --test takes no glob patterns, so the file list is collected here.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '..');
const filter = process.argv.slice(2);
const files = [];
(function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'editor' && entry.name !== 'fixtures' && entry.name !== 'node_modules') walk(p);
    } else if (entry.name.endsWith('.test.ts')) files.push(path.relative(root, p));
  }
})(path.join(root, 'test'));
const selected = filter.length ? files.filter((f) => filter.some((x) => f.includes(x))) : files;
if (selected.length === 0) {
  // Node's runner given no file would run every script it finds (the editor tests, fixture capture scripts).
  console.error(`no test file matches ${filter.join(', ')}`);
  process.exit(1);
}
selected.sort();
// Every temporary folder the tests and what they start make (apps, data folders, sockets, browser
// profiles) goes under one folder of this run, removed at its end: a test that fails before its own
// clean-up, or a runtime killed on purpose, leaves nothing behind in the system's temporary folder.
const runTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-tests-'));
let status;
try {
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...selected], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, TMPDIR: runTmp, TMP: runTmp, TEMP: runTmp },
  });
  status = result.status ?? 1;
} finally {
  fs.rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
}
process.exit(status);
