// The Admin API on the synthetic 1,000-file app, each figure a median of per-round ratios, the two kinds
// alternating in order on the same runtime:
// - export (GET …/export over HTTP: read the folder, zip, send) ÷ reading the same files and zipping them
//   with the same library (fflate) in this process;
// - push diff (what `asl push` does before asking: read the local files, build the import body, POST
//   …/import?diff=true, the runtime compares with the app's files) ÷ `asl check` of the app (load + check).
// Run: node --import tsx bench/admin.bench.ts [--rounds N]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { checkApp } from '../core/check';
import { nodeFileSystem } from '../core/fs';
import { loadApp } from '../core/load';
import { filesToAppJson } from '../core/transfer/appJson';
import { readLocalAppFiles } from '../cli/adminCommands';
import { startRuntime } from '../runtime';
import { readAppFiles, zipFiles } from '../runtime/admin/files';
import { goalLine, median, option } from './fixtures/load';
import { writeSyntheticApp } from './synthetic-app';

const ROUNDS = option('rounds', 20);
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-bench-admin-'));
  const appDir = path.join(root, 'bench');
  const synthetic = writeSyntheticApp(appDir);
  const runtime = await startRuntime({ rootDir: root, dataDir: path.join(root, '.data'), port: 0, log: quiet });
  try {
    const session = await runtime.mintAdminSession();
    const app = runtime.apps[0]!;
    const appPath = `${runtime.adminUrl}/groups/${runtime.groupId}/apps/${app.id}`;
    const headers = { Authorization: `Bearer ${session.access_token}` };

    const exportOnce = async () => {
      const res = await fetch(`${appPath}/export?source_control=true&version=20210101`, { headers });
      if (res.status !== 200) throw new Error(`export answered ${res.status}`);
      return new Uint8Array(await res.arrayBuffer());
    };
    const zipOnce = async () => zipFiles(await readAppFiles(appDir));
    const diffOnce = async () => {
      const body = filesToAppJson(readLocalAppFiles(appDir));
      const res = await fetch(`${appPath}/import?diff=true&strategy=replace-by-name`, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      const diffs = await res.json() as unknown[];
      if (res.status !== 200 || diffs.length !== 0) throw new Error(`diff answered ${res.status} with ${diffs.length} differences`);
    };
    const checkOnce = async () => checkApp(await loadApp(nodeFileSystem, appDir));

    for (let i = 0; i < 3; i++) { await exportOnce(); await zipOnce(); await diffOnce(); await checkOnce(); }
    const exportRatios: number[] = [];
    const diffRatios: number[] = [];
    const times = { export: [] as number[], zip: [] as number[], diff: [] as number[], check: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const pair = async (a: () => Promise<unknown>, b: () => Promise<unknown>) => {
        if (round % 2 === 0) { const ta = await timed(a); return [ta, await timed(b)]; }
        const tb = await timed(b);
        return [await timed(a), tb];
      };
      const [exportMs, zipMs] = await pair(exportOnce, zipOnce);
      const [diffMs, checkMs] = await pair(diffOnce, checkOnce);
      times.export.push(exportMs!); times.zip.push(zipMs!); times.diff.push(diffMs!); times.check.push(checkMs!);
      exportRatios.push(exportMs! / zipMs!);
      diffRatios.push(diffMs! / checkMs!);
    }
    const zipBytes = (await exportOnce()).byteLength;
    console.log(`admin: synthetic app of ${synthetic.files} config files (${(zipBytes / 1024).toFixed(0)} KiB zipped), ${ROUNDS} rounds (order alternating)`);
    console.log(`export over HTTP: median ${median(times.export).toFixed(1)} ms; read + fflate zipSync of the same files: median ${median(times.zip).toFixed(1)} ms`);
    console.log(`push diff (files -> import body -> POST import?diff=true): median ${median(times.diff).toFixed(1)} ms; asl check (load + check): median ${median(times.check).toFixed(1)} ms`);
    console.log(goalLine('export ÷ zipping the same files with fflate (median of per-round ratios)', median(exportRatios), '<=', 2));
    console.log(goalLine('push diff ÷ asl check of the same app (median of per-round ratios)', median(diffRatios), '<=', 2));
  } finally {
    await runtime.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
