// Writes test apps to a temporary folder on disk, for tests that run real processes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function writeApp(files: Record<string, unknown>, dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-test-'))): string {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(dir, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, typeof content === 'string' ? content : JSON.stringify(content, null, 2) + '\n');
  }
  return dir;
}

export const REPO_ROOT = path.resolve(__dirname, '../..');
export const DIST = path.join(REPO_ROOT, 'dist');
