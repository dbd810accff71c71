// Runtime control, the query runner and the app explorer in the real extension host: the start that fails
// on app errors, the start from the command, lenses run as real users under the app's rules, an error
// diagnostic, cancelling a slow function-backed query, a 10 MB answer, stop, a kill from outside and the
// restart, the explorer's collections with counts, the Sync Sessions view with realm-core's own client
// syncing (realm-sync-probe). Each check asks the harness for a screenshot.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as vscode from 'vscode';
import type { AppServicesLocalApi } from '../../../client/api';
import { commands } from '../../../client/commands';
import type { ExplorerNode } from '../../../client/explorer';
import { describeRuntimeStatus } from '../../../client/runtimeStatus';
import type { Identity } from '../../../core/runner/identities';
import type { SyncSessionNode } from '../../../client/syncSessions';
import type { RunResult } from '../../../core/runner/run';

type Check = (name: string, body: () => Promise<void>) => Promise<void>;

async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Asks the harness (routeB.mjs) for a screenshot and waits until it is written. */
async function shot(name: string): Promise<void> {
  const dir = process.env.ASL_EDITOR_SHOTS;
  if (!dir) return;
  const file = path.join(dir, `route-b-${name}.png`);
  fs.rmSync(file, { force: true });
  console.log(`EDITOR-SHOT ${name}`);
  await waitFor(`the screenshot ${name}`, () => fs.existsSync(file), 15_000);
}

export interface RuntimeCheckFigures { activationMs?: number; bigResultMs?: number; bigResultBytes?: number; longestStallMs?: number }

export async function runtimeChecks(check: Check, api: AppServicesLocalApi, figures: RuntimeCheckFigures): Promise<void> {
  const features = api.features();
  const { runtime, runner, explorer } = features;
  const folder = vscode.workspace.workspaceFolders![0]!;
  const file = (rel: string) => vscode.Uri.joinPath(folder.uri, rel);
  const ada: Identity = { kind: 'email-password', email: 'ada@example.com', password: 'correct horse' };
  const bob: Identity = { kind: 'email-password', email: 'bob@example.com', password: 'battery staple' };
  figures.activationMs = api.activationMs;

  /** Runs the lens "▶ Run …" above an operation of a file, as the lens's command does. */
  const runLens = async (rel: string, operation: string): Promise<RunResult | undefined> => {
    const uri = file(rel);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.One });
    const line = document.getText().split('\n').findIndex((l) => new RegExp(`^(query|mutation) ${operation}\\b`).test(l));
    assert.ok(line >= 0, `${rel} has no operation ${operation}`);
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri);
    const lens = lenses.find((l) => l.range.start.line === line && l.command?.title.startsWith('▶ Run'));
    assert.ok(lens?.command, `no "▶ Run" lens above ${operation}; lenses: ${JSON.stringify(lenses.map((l) => [l.range.start.line, l.command?.title]))}`);
    assert.ok(lenses.some((l) => l.range.start.line === line && l.command?.title === 'Run as…'), `no "Run as…" lens above ${operation}`);
    return vscode.commands.executeCommand<RunResult | undefined>(lens.command.command, ...(lens.command.arguments ?? []));
  };
  const resultText = () => {
    const uri = runner.lastRun?.uri;
    assert.ok(uri, `no result document; last run: ${JSON.stringify(runner.lastRun)}`);
    const editor = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri.toString());
    assert.ok(editor, 'the result document is not shown');
    return editor.document.getText();
  };

  await check('with an error in the app files, Start fails and names it', async () => {
    const broken = path.join(folder.uri.fsPath, 'graphql/custom_resolvers/query_brokenOnPurpose.json');
    fs.writeFileSync(broken, JSON.stringify({ on_type: 'Query', field_name: 'brokenOnPurpose', function_name: 'noSuchFunction', input_type_format: '', payload_type_format: '' }));
    try {
      const started = await vscode.commands.executeCommand<boolean>(commands.startRuntime.id);
      assert.equal(started, false, 'the runtime started although the app has an error');
      const state = runtime.current;
      assert.equal(state.kind, 'failed');
      assert.match(state.kind === 'failed' ? state.message : '', /the app has \d+ errors? in its files/);
      await shot('1-start-fails-on-errors');
    } finally {
      fs.rmSync(broken, { force: true });
    }
  });

  await check('with the app fixed and saved, Start Runtime starts it and the status bar shows the app id and port', async () => {
    const resolver = file('graphql/custom_resolvers/mutation_renameTask.json');
    const document = await vscode.workspace.openTextDocument(resolver);
    if (document.isDirty) assert.ok(await document.save(), 'the fixed resolver config was not saved');
    for (const d of vscode.workspace.textDocuments) if (d.isDirty) await d.save();
    assert.equal(await vscode.commands.executeCommand<boolean>(commands.startRuntime.id), true, `the start failed: ${JSON.stringify(runtime.current)}`);
    const state = runtime.current;
    assert.equal(state.kind, 'running');
    assert.match(describeRuntimeStatus(state).text, /todo-tracker-abcde :\d+$/);
    assert.ok(runtime.target?.admin, 'the handshake gave no admin session');
    await shot('2-running');
  });

  await check('the lens runs Tasks as a user who owns a task; the result document holds it', async () => {
    assert.ok(await runner.newUser({ email: 'ada@example.com', password: 'correct horse' }), 'ada was not registered');
    assert.ok(await runner.newUser({ email: 'bob@example.com', password: 'battery staple' }), 'bob was not registered');
    const adaId = await runtime.sessions!.userIdOf(ada);
    fs.writeFileSync(path.join(folder.uri.fsPath, 'queries.variables.json'), JSON.stringify({
      AddTask: { task: { _id: '65a000000000000000000001', _partition: adaId, name: 'Write the docs', status: 'open', isComplete: false } },
    }, null, 2));
    await runner.useIdentity(ada);
    const added = await runLens('queries.graphql', 'AddTask');
    assert.equal(added?.status, 200);
    assert.deepEqual(added?.errors, []);
    const result = await runLens('queries.graphql', 'Tasks');
    assert.equal(result?.status, 200);
    const text = resultText();
    assert.match(text, /^\/\/ query Tasks\n\/\/ as ada@example\.com\n\/\/ HTTP 200 · /);
    assert.match(text, /"name": "Write the docs"/);
    await shot('3-result-as-owner');
  });

  await check('as a user whose rules hide the documents, Tasks gives an empty list', async () => {
    await runner.useIdentity(bob);
    const result = await runLens('queries.graphql', 'Tasks');
    assert.equal(result?.status, 200);
    const text = resultText();
    assert.match(text, /\/\/ as bob@example\.com/);
    assert.match(text, /"tasks": \[\]/);
    await shot('4-result-hidden-by-rules');
  });

  await check('an operation spreading a fragment of another file runs with that fragment', async () => {
    await runner.useIdentity(ada);
    // In a folder the editor has watched from the start: a file created at once inside a brand-new folder can
    // be missed by VS Code's watcher (it failed that way in 1 of 2 runs here).
    fs.writeFileSync(path.join(folder.uri.fsPath, 'task-card.graphql'), 'fragment TaskCard on Task { name ...TaskState }\nfragment TaskState on Task { status }\n');
    fs.writeFileSync(path.join(folder.uri.fsPath, 'cards.graphql'), 'query Cards {\n  tasks { ...TaskCard }\n}\n');
    const cards = await vscode.workspace.openTextDocument(file('cards.graphql'));
    // The language server learns of the new fragment file from the file watcher: its definition is found then.
    await waitFor('the definition of TaskCard in task-card.graphql', async () => {
      const found = await vscode.commands.executeCommand<Array<vscode.Location | vscode.LocationLink>>('vscode.executeDefinitionProvider', cards.uri, new vscode.Position(1, 14));
      const target = found?.[0] && ('targetUri' in found[0] ? found[0].targetUri : found[0].uri);
      return target?.path.endsWith('/task-card.graphql');
    });
    const result = await runLens('cards.graphql', 'Cards');
    assert.equal(result?.status, 200);
    assert.deepEqual(result?.errors, []);
    const text = resultText();
    assert.match(text, /"name": "Write the docs"/);
    assert.match(text, /"status": "open"/);
  });

  await check('a query with a mistake puts an error diagnostic on the query', async () => {
    await runner.useIdentity(ada);
    const result = await runLens('checks.graphql', 'Mistake');
    assert.ok(result && result.errors.length > 0, 'the answer has no errors');
    const uri = file('checks.graphql');
    const [problem] = await waitFor('the runner diagnostic on checks.graphql', () => {
      const found = vscode.languages.getDiagnostics(uri).filter((d) => d.source === 'App Services runner');
      return found.length ? found : undefined;
    });
    assert.equal(problem!.severity, vscode.DiagnosticSeverity.Error);
    const document = await vscode.workspace.openTextDocument(uri);
    assert.equal(document.getText(problem!.range), 'nme');
    assert.match(problem!.message, /nme/);
    await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.One });
    await shot('5-error-diagnostic');
  });

  await check('a slow function-backed query is cancelled from its progress notification', async () => {
    const started = Date.now();
    let settled = false;
    const running = runLens('checks.graphql', 'Slow').finally(() => { settled = true; });
    const how = await waitFor('the slow query to be in flight', () => (runner.cancelRunning() ? 'cancelled' : settled && 'settled'));
    const result = await running;
    assert.equal(how, 'cancelled', `the query ended before it could be cancelled: ${JSON.stringify(runner.entries[0])} ${result?.text.slice(0, 300)}`);
    assert.equal(result, undefined);
    assert.ok(Date.now() - started < 10_000, `cancelling took ${Date.now() - started} ms`);
    assert.equal(runner.entries[0]?.failure, 'cancelled');
    await vscode.commands.executeCommand('workbench.view.extension.appServicesLocal');
    await shot('6-cancelled-in-history');
  });

  await check('a 10 MB answer opens beside the query without stalling the extension host', async () => {
    let longest = 0;
    let last = performance.now();
    const ticker = setInterval(() => { const now = performance.now(); longest = Math.max(longest, now - last); last = now; }, 20);
    const started = performance.now();
    try {
      const result = await runLens('checks.graphql', 'Big');
      figures.bigResultMs = Math.round(performance.now() - started);
      assert.equal(result?.status, 200, result?.text.slice(0, 300));
      figures.bigResultBytes = result!.text.length;
      assert.ok(result!.text.length > 10 * 1024 * 1024, `the answer has ${result!.text.length} bytes: ${result!.text.slice(0, 300)}`);
      assert.ok(resultText().length > 10 * 1024 * 1024);
    } finally {
      clearInterval(ticker);
      figures.longestStallMs = Math.round(longest);
    }
    console.log(`EDITOR-FIGURE 10 MB result shown in ${figures.bigResultMs} ms; longest extension host stall ${figures.longestStallMs} ms`);
    await shot('7-ten-megabytes');
  });

  await check('the explorer lists the collections with document counts', async () => {
    explorer.refresh();
    const [app] = await explorer.getChildren();
    assert.equal(app?.kind, 'app');
    const groups = await explorer.getChildren(app);
    const collections = groups.find((g) => g.kind === 'group' && g.group === 'collections');
    assert.ok(collections);
    const items = await Promise.all((await explorer.getChildren(collections)).map(async (node: ExplorerNode) => explorer.getTreeItem(node)));
    const task = items.find((i) => i.label === 'tracker.Task');
    assert.ok(task, `no tracker.Task; got ${items.map((i) => i.label).join(', ')}`);
    assert.equal(task.description, '1 document');
    assert.ok(items.every((i) => typeof i.description === 'string' && /\d+ documents?/.test(i.description)), `counts: ${items.map((i) => `${i.label}=${i.description}`).join(', ')}`);
    await vscode.commands.executeCommand('workbench.view.extension.appServicesLocal');
    await shot('8-explorer');
  });

  await check('Open Partition as User shows the verdicts, the trace and the partition\'s documents for that user', async () => {
    const adaId = await runtime.sessions!.userIdOf(ada);
    await vscode.commands.executeCommand(commands.openPartitionAsUser.id, { userId: adaId, partition: JSON.stringify(adaId) });
    const editor = await waitFor('the partition view', () => vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme === 'asl-partition' && !e.document.getText().includes('opening…')));
    const text = editor.document.getText();
    assert.match(text, new RegExp(`Partition "${adaId}"`), text);
    assert.match(text, /read: (ALLOWED|denied)/, text);
    assert.match(text, /[✓✗] /, `a trace line: ${text}`);
    assert.match(text, /client error: /, text);
    assert.match(text, /Task \(tracker\.Task\): 1 document\(s\)/, text);
    await shot('8b-partition-as-user');
  });

  await check('with a Realm client syncing, the Sync Sessions view lists its session and its traffic shows the UPLOAD\'s instructions', async () => {
    const probe = process.env.ASL_EDITOR_REALM_SYNC_PROBE;
    assert.ok(probe && fs.existsSync(probe), `realm-sync-probe is not at ${probe}`);
    const adaId = await runtime.sessions!.userIdOf(ada);
    const target = runtime.target!;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-editor-probe-'));
    const script = path.join(dir, 'script.json');
    const taskId = '65a0000000000000000000e1';
    fs.writeFileSync(script, JSON.stringify({
      baseUrl: target.baseUrl, appId: target.appId, credentials: { type: 'emailPassword', email: 'ada@example.com', password: 'correct horse' }, partition: adaId, timeoutMs: 20000,
      schema: [{ name: 'Task', primaryKey: '_id', properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool', priority: 'int?', tags: 'string[]' } }],
      steps: [
        { waitDownload: true },
        { write: { op: 'create', type: 'Task', value: { _id: { $oid: taskId }, _partition: adaId, name: 'synced from a Realm client', status: 'open', isComplete: false } } },
        { waitUpload: true },
        { watchMs: 45000 },
      ],
    }));
    const client = spawn(probe, ['--script', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let clientOutput = '';
    client.stdout.on('data', (d: Buffer) => { clientOutput += d.toString('utf8'); });
    client.stderr.on('data', (d: Buffer) => { clientOutput += d.toString('utf8'); });
    try {
      await waitFor(`the client to upload (${clientOutput})`, () => /"event":"watch"/.test(clientOutput), 30_000);
      await vscode.commands.executeCommand(commands.showSyncSessions.id);
      const view = features.syncSessions;
      // The view polls every 2 s: a listing taken between the client's BIND and IDENT shows it bound until the next.
      const node = await waitFor('the identified session in the Sync Sessions view', () => view.getChildren().find((n): n is Extract<SyncSessionNode, { kind: 'session' }> => n.kind === 'session' && n.info.userId === adaId && n.info.state === 'identified'), 15_000);
      const item = view.getTreeItem(node);
      assert.equal(item.label, 'ada@example.com');
      assert.equal(item.description, `${JSON.stringify(adaId)} · protocol 14 · identified`);
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await vscode.commands.executeCommand(item.command!.command, ...(item.command!.arguments ?? []));
      const editor = await waitFor('the traffic document with the UPLOAD', () => vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme === 'asl-sync-traffic' && e.document.getText().includes(`CreateObject Task oid(${taskId})`)));
      const text = editor.document.getText();
      assert.match(text, new RegExp(`user ${adaId} · partition "${adaId}" · protocol 14 · identified`), text);
      assert.match(text, /client PERMISSIONS read=true write=true/, text);
      assert.match(text, /✓ "%%user\.id": "%%partition"/, `the verdict trace: ${text}`);
      assert.match(text, /client UPLOAD progressClientVersion=\d+ progressServerVersion=\d+ changesets=[1-9]/, text);
      assert.ok(text.includes(`        Update Task oid(${taskId}) .name = "synced from a Realm client"`), text);
      await vscode.commands.executeCommand('workbench.view.extension.appServicesLocal');
      const upload = text.split('\n').findIndex((line) => line.includes(`CreateObject Task oid(${taskId})`));
      editor.revealRange(new vscode.Range(upload, 0, upload, 0), vscode.TextEditorRevealType.AtTop);
      await shot('8c-sync-sessions');
    } finally {
      client.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  await check('Stop Runtime stops it', async () => {
    await vscode.commands.executeCommand(commands.stopRuntime.id);
    assert.equal(runtime.current.kind, 'stopped');
    await shot('9-stopped');
  });

  await check('a runtime killed from outside shows crashed, and Restart brings it back', async () => {
    assert.equal(await vscode.commands.executeCommand<boolean>(commands.startRuntime.id), true);
    const pid = runtime.pid;
    assert.ok(pid, 'no runtime process id');
    process.kill(pid, 'SIGKILL');
    await waitFor('the crashed state', () => runtime.current.kind === 'crashed');
    const state = runtime.current;
    assert.match(describeRuntimeStatus(state).text, /crashed/);
    assert.match(state.kind === 'crashed' ? state.description : '', /killed by SIGKILL/);
    await shot('10-crashed');
    assert.equal(await vscode.commands.executeCommand<boolean>(commands.restartRuntime.id), true);
    assert.equal(runtime.current.kind, 'running');
    await shot('11-restarted');
    await vscode.commands.executeCommand(commands.stopRuntime.id);
  });
}
