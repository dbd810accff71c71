// `npm run test:editor`: the extension in a real VS Code (code-server from npm), offline.
// Installs what it needs (setup.sh), builds and packages the .vsix (`npm run package`), installs that
// package into each code-server with --install-extension, as a user would, stages the example app with one
// broken resolver config, then runs Route B (the run() suite in the extension host) and Route A (the UI in
// headless Chromium). ASL_EDITOR_FROM=checkout skips the packaging and loads the built checkout instead
// (Route B as a development extension, Route A copied into the extensions dir): quicker while developing;
// CI tests the .vsix.
// Screenshots and, on failure, logs go to test/editor/artifacts/. Exit code 0 only when every check passed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  addRunnerFixtures, artifactsDir, brokenResolver, bundleSuite, cacheDir, editorTestDir, installVsix, log, repoRoot, runningServers,
  stageBrokenWorkspace, stageExtension, stopCodeServer,
} from './lib.mjs';
import { checkWhatUserSees } from './routeA.mjs';
import { runExtensionHostSuite } from './routeB.mjs';

// Generous enough for a cold install (about 2.5 min) plus both routes on a loaded 2-core machine.
const hardTimeoutMs = 15 * 60_000;
const unknownFunction = 'resolver/unknown-function';
const fromCheckout = process.env.ASL_EDITOR_FROM === 'checkout';

const results = [];

function withRunnerFixtures(staged) {
  addRunnerFixtures(staged.appRoot);
  return staged;
}
function finish() {
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  for (const r of results) {
    console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name}${r.ms !== undefined ? ` (${(r.ms / 1000).toFixed(1)} s)` : ''}`);
    if (!r.ok && r.error) console.log(`     ${r.error.split('\n').slice(0, 6).join('\n     ')}`);
  }
  console.log(`editor: ${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0 ? 0 : 1;
}

const hardTimeout = setTimeout(() => {
  for (const proc of runningServers) stopCodeServer(proc);
  results.push({ name: `the editor tests finish within ${hardTimeoutMs / 60_000} min`, ok: false, error: 'hard timeout' });
  process.exit(finish());
}, hardTimeoutMs);

function step(command, args, what) {
  const started = Date.now();
  const run = spawnSync(command, args, { cwd: repoRoot, stdio: 'inherit' });
  log(`${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (run.status !== 0) throw new Error(`${what} failed (exit ${run.status ?? run.signal})`);
}

/** Keeps the logs of a failed route next to its screenshots. */
function keepLogs(runDir, route) {
  const into = path.join(artifactsDir, `${route}-logs`);
  for (const name of ['code-server.log', 'browser-console.log']) {
    const file = path.join(runDir, name);
    if (fs.existsSync(file)) fs.cpSync(file, path.join(into, name));
  }
  const vscodeLogs = path.join(runDir, 'user-data', 'logs');
  if (fs.existsSync(vscodeLogs)) fs.cpSync(vscodeLogs, path.join(into, 'vscode'), { recursive: true });
}

let exitCode = 1;
try {
  fs.rmSync(artifactsDir, { recursive: true, force: true });
  fs.mkdirSync(artifactsDir, { recursive: true });
  step('bash', [path.join(editorTestDir, 'setup.sh')], 'setup');
  step('npm', ['run', '--silent', 'build'], 'build');

  const runRoot = path.join(cacheDir, 'run');
  fs.rmSync(runRoot, { recursive: true, force: true });
  fs.mkdirSync(runRoot, { recursive: true });
  const suiteFile = await bundleSuite(path.join(runRoot, 'suite'));
  let vsix;
  if (!fromCheckout) {
    const { checkVsix, packageExtension } = await import('../../scripts/package.mjs');
    const started = Date.now();
    vsix = packageExtension({ out: path.join(runRoot, 'app-services-local.vsix'), build: false });
    const problems = checkVsix(vsix);
    log(`package: ${((Date.now() - started) / 1000).toFixed(1)} s, ${(fs.statSync(vsix).size / 1024 / 1024).toFixed(2)} MB`);
    if (problems.length) throw new Error(`the .vsix is wrong:\n${problems.join('\n')}`);
  }
  log(fromCheckout ? 'testing the built checkout (ASL_EDITOR_FROM=checkout)' : `testing the installed ${path.basename(vsix)}`);

  const routeBDir = path.join(runRoot, 'route-b');
  const routeBStarted = Date.now();
  if (vsix) await installVsix(routeBDir, vsix);
  const routeBResults = await runExtensionHostSuite({
    runDir: routeBDir,
    // With the .vsix installed, the development path is the suite's folder, which holds no extension.
    extensionDir: vsix ? path.dirname(suiteFile) : stageExtension(path.join(routeBDir, 'dev-extension')),
    suiteFile,
    installed: Boolean(vsix),
    workspace: withRunnerFixtures(stageBrokenWorkspace(path.join(routeBDir, 'workspace'))).appRoot,
  });
  log(`route B: ${((Date.now() - routeBStarted) / 1000).toFixed(1)} s`);
  results.push(...routeBResults);
  if (routeBResults.some((r) => !r.ok)) keepLogs(routeBDir, 'route-b');

  const routeADir = path.join(runRoot, 'route-a');
  const routeAStarted = Date.now();
  if (vsix) await installVsix(routeADir, vsix);
  else stageExtension(path.join(routeADir, 'extensions'));
  const staged = withRunnerFixtures(stageBrokenWorkspace(path.join(routeADir, 'workspace')));
  const routeAResults = await checkWhatUserSees({
    runDir: routeADir,
    workspace: staged.appRoot,
    problem: { file: staged.file, value: brokenResolver.brokenValue, intactValue: brokenResolver.intactValue, code: unknownFunction, location: staged.location },
    appCount: 1,
  });
  log(`route A: ${((Date.now() - routeAStarted) / 1000).toFixed(1)} s`);
  results.push(...routeAResults);
  if (routeAResults.some((r) => !r.ok)) keepLogs(routeADir, 'route-a');
} catch (error) {
  results.push({ name: 'editor test harness', ok: false, error: String(error?.stack ?? error) });
} finally {
  clearTimeout(hardTimeout);
  exitCode = finish();
  const shots = fs.existsSync(artifactsDir) ? fs.readdirSync(artifactsDir).filter((f) => f.endsWith('.png')) : [];
  if (shots.length) log(`screenshots in ${path.relative(repoRoot, artifactsDir)}/: ${shots.sort().join(', ')}`);
}
process.exit(exitCode);
