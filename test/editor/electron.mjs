// `npm run test:electron`: the same extension-host suite as Route B of `npm run test:editor`, but in
// desktop VS Code through @vscode/test-electron. That downloads VS Code from update.code.visualstudio.com,
// so it needs network (and a display, e.g. `xvfb-run -a npm run test:electron` on a headless Linux box);
// it is not part of CI, which uses the offline code-server route.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { downloadAndUnzipVSCode, runTests } from '@vscode/test-electron';
import { bundleSuite, cacheDir, log, repoRoot, stageBrokenWorkspace, stageExtension } from './lib.mjs';

const vscodeVersion = process.env.ASL_VSCODE_VERSION || 'stable';

function finish(results, exitCode) {
  const passed = results.filter((r) => r.ok).length;
  for (const r of results) {
    console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name}`);
    if (!r.ok && r.error) console.log(`     ${r.error.split('\n').slice(0, 6).join('\n     ')}`);
  }
  console.log(`editor: ${passed} passed, ${results.length - passed} failed`);
  process.exit(exitCode === 0 && passed === results.length && passed > 0 ? 0 : 1);
}

const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: repoRoot, stdio: 'inherit' });
if (build.status !== 0) finish([{ name: 'build', ok: false, error: `npm run build exited with ${build.status}` }], 1);

const runRoot = path.join(cacheDir, 'electron-run');
fs.rmSync(runRoot, { recursive: true, force: true });
fs.mkdirSync(runRoot, { recursive: true });

let vscodeExecutablePath;
try {
  log(`downloading VS Code ${vscodeVersion} (cached in ${path.relative(repoRoot, cacheDir)}/vscode-test)`);
  vscodeExecutablePath = await downloadAndUnzipVSCode({ version: vscodeVersion, cachePath: path.join(cacheDir, 'vscode-test'), timeout: 30_000 });
} catch (error) {
  console.error(`editor (electron): could not download desktop VS Code ${vscodeVersion}: ${error?.message ?? error}`);
  console.error('editor (electron): this route needs network access to update.code.visualstudio.com; offline, use `npm run test:editor` (code-server).');
  process.exit(2);
}

const resultFile = path.join(runRoot, 'result.json');
const workspace = stageBrokenWorkspace(path.join(runRoot, 'workspace')).appRoot;
let exitCode;
try {
  exitCode = await runTests({
    vscodeExecutablePath,
    extensionDevelopmentPath: stageExtension(path.join(runRoot, 'extension')),
    extensionTestsPath: await bundleSuite(runRoot),
    extensionTestsEnv: { ASL_EDITOR_RESULT: resultFile },
    launchArgs: [workspace, '--disable-extensions', '--disable-workspace-trust', '--skip-welcome', '--skip-release-notes',
      '--user-data-dir', path.join(runRoot, 'user-data')],
  });
} catch (error) {
  // runTests rejects when the tests fail as well as when VS Code cannot start; the result file tells which.
  exitCode = 1;
  if (!fs.existsSync(resultFile)) finish([{ name: 'desktop VS Code runs the suite', ok: false, error: String(error?.message ?? error) }], 1);
}
const report = JSON.parse(fs.readFileSync(resultFile, 'utf8'));
log(`VS Code ${report.vscodeVersion} (${report.appHost})`);
finish(report.results, exitCode);
