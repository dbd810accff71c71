// Route B: the `run()` suite inside code-server's real extension host. The built workbench only honours
// the URL payload's extensionDevelopmentPath/extensionTestsPath with enable-smoke-test-driver, and reports
// the outcome through window.codeAutomationExit, which the page must expose before it loads.
import fs from 'node:fs';
import path from 'node:path';
import { artifactsDir, launchBrowser, log, repoRoot, startCodeServer, stopCodeServer, workbenchUrl } from './lib.mjs';

// realm-core's own sync client, beside the clone as in the other tests; the suite syncs it for the Sync Sessions view.
const realmSyncProbe = path.resolve(repoRoot, '../shared/realm-sync/realm-sync-probe');

const suiteTimeoutMs = 300_000;

/** Returns one result per check of the suite, or a single failed result when the suite did not report. */
export async function runExtensionHostSuite({ runDir, extensionDir, suiteFile, workspace, installed }) {
  fs.mkdirSync(runDir, { recursive: true });
  const resultFile = path.join(runDir, 'result.json');
  const consoleLines = [];
  let server, browser, page, failureShot;
  const shootFailure = () => {
    failureShot ??= page?.screenshot({ path: path.join(artifactsDir, 'route-b-failure.png') }).catch(() => undefined);
    return failureShot;
  };
  try {
    server = await startCodeServer({
      runDir,
      extraArgs: ['--vscode-option', 'enable-smoke-test-driver'],
      env: {
        ASL_EDITOR_RESULT: resultFile, ASL_EDITOR_SHOTS: artifactsDir, ASL_EDITOR_REALM_SYNC_PROBE: realmSyncProbe,
        ...(installed ? { ASL_EDITOR_EXPECT_INSTALLED: '1' } : {}),
      },
    });
    log('route B: code-server on', server.base);
    browser = await launchBrowser(runDir);
    page = browser.pages()[0] ?? await browser.newPage();
    page.on('console', (m) => consoleLines.push(`[${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => consoleLines.push(`[pageerror] ${e.message}`));
    let settle;
    const exited = new Promise((resolve) => { settle = resolve; });
    await page.exposeFunction('codeAutomationLog', (type, args) => {
      const line = Array.isArray(args) ? args.join(' ') : String(args);
      consoleLines.push(`[automation:${type}] ${line}`);
      if (line.startsWith('EDITOR-TEST')) log('route B:', line.split('\n')[0]);
      // The suite asks for a picture of a settled state and waits for the file.
      const shot = /^EDITOR-SHOT ([a-z0-9-]+)$/.exec(line.trim());
      if (shot) {
        const file = path.join(artifactsDir, `route-b-${shot[1]}.png`);
        void page.waitForTimeout(300).then(() => page.screenshot({ path: `${file}.tmp.png`, animations: 'disabled' }))
          .then(() => fs.renameSync(`${file}.tmp.png`, file), () => undefined);
      }
      // The extension host stops once run() settles, taking the diagnostics with it; shoot while it runs.
      if (line.startsWith('EDITOR-TEST FAIL')) void shootFailure();
    });
    await page.exposeFunction('codeAutomationExit', (code) => settle(code));
    await page.goto(workbenchUrl(server, workspace, { extensionDevelopmentPath: extensionDir, extensionTestsPath: suiteFile }));
    let timer;
    const timedOut = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), suiteTimeoutMs); });
    const exitCode = await Promise.race([exited, timedOut]);
    clearTimeout(timer);
    log('route B: extension tests exited with', exitCode);
    if (exitCode !== 0) await shootFailure();
    if (!fs.existsSync(resultFile)) {
      const reason = exitCode === 'timeout' ? `no result within ${suiteTimeoutMs / 1000} s` : `the suite exited with ${exitCode} and wrote no result`;
      return [{ name: 'route B: the extension-host suite reports', ok: false, error: reason }];
    }
    const report = JSON.parse(fs.readFileSync(resultFile, 'utf8'));
    log(`route B: VS Code ${report.vscodeVersion} (${report.appHost})`);
    const results = report.results.map((r) => ({ ...r, name: `route B: ${r.name}` }));
    if (exitCode !== 0 && results.every((r) => r.ok)) {
      results.push({ name: 'route B: the extension-host suite exits with 0', ok: false, error: `exit code ${exitCode}` });
    }
    return results;
  } catch (error) {
    await shootFailure();
    return [{ name: 'route B: harness', ok: false, error: String(error?.stack ?? error) }];
  } finally {
    fs.writeFileSync(path.join(runDir, 'browser-console.log'), consoleLines.join('\n'));
    await browser?.close().catch(() => undefined);
    stopCodeServer(server?.proc);
  }
}
