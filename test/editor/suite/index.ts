// The extension-host suite: a `run()` module in the format @vscode/test-electron loads, so the same checks
// run inside code-server (test/editor/run.mjs) and inside desktop VS Code (test/editor/electron.mjs).
// The workspace is a copy of the example app whose mutation_renameTask resolver names a missing function.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findNodeAtLocation, parseTree } from 'jsonc-parser';
import * as vscode from 'vscode';
import type { AppServicesLocalApi } from '../../../client/api';
import { commands } from '../../../client/commands';
import { runtimeChecks, type RuntimeCheckFigures } from './runtime';
import { functionsDebugChecks } from './functionsDebug';

const extensionId = 'app-services-local.app-services-local';
const brokenFile = 'graphql/custom_resolvers/mutation_renameTask.json';
const brokenValue = 'renameTaskk';
const intactValue = 'renameTask';
const unknownFunction = 'resolver/unknown-function';

interface CheckResult { name: string; ok: boolean; ms: number; error?: string }

/** Polls `probe` until it returns a value, or fails after `ms` with `what` in the message. */
async function waitFor<T>(what: string, probe: () => T | undefined | false, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** As waitFor, for a probe that has to ask the editor (an async command). */
async function pollAsync<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function codeOf(d: vscode.Diagnostic): string | number | undefined {
  return typeof d.code === 'object' ? d.code.value : d.code;
}

function unknownFunctionProblems(uri: vscode.Uri): vscode.Diagnostic[] {
  return vscode.languages.getDiagnostics(uri).filter((d) => codeOf(d) === unknownFunction);
}

function brokenUri(): vscode.Uri {
  const folder = vscode.workspace.workspaceFolders?.[0];
  assert.ok(folder, 'no workspace folder is open');
  return vscode.Uri.joinPath(folder.uri, brokenFile);
}

/** The range of the `function_name` value, computed from the file itself rather than hard-coded. */
function functionNameValueRange(text: string): vscode.Range {
  const node = findNodeAtLocation(parseTree(text)!, ['function_name']);
  assert.ok(node, `${brokenFile} has no function_name`);
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  const positionAt = (offset: number) => {
    let line = 0;
    while (line + 1 < lineStarts.length && lineStarts[line + 1] <= offset) line++;
    return new vscode.Position(line, offset - lineStarts[line]);
  };
  return new vscode.Range(positionAt(node.offset), positionAt(node.offset + node.length));
}

export async function run(): Promise<void> {
  const results: CheckResult[] = [];
  const check = async (name: string, body: () => Promise<void>) => {
    const started = Date.now();
    try {
      await body();
      results.push({ name, ok: true, ms: Date.now() - started });
      console.log(`EDITOR-TEST ok   ${name}`);
    } catch (error) {
      const message = error instanceof Error ? error.stack ?? error.message : String(error);
      results.push({ name, ok: false, ms: Date.now() - started, error: message });
      console.log(`EDITOR-TEST FAIL ${name}: ${message}`);
    }
  };

  await check('the extension activates and its language client starts', async () => {
    const extension = vscode.extensions.getExtension<AppServicesLocalApi>(extensionId);
    assert.ok(extension, `${extensionId} is not installed`);
    if (process.env.ASL_EDITOR_EXPECT_INSTALLED === '1') {
      // The .vsix, installed: no sources or tests beside the bundles, and not a development extension.
      for (const absent of ['client', 'test', 'node_modules', 'tsconfig.json']) {
        assert.ok(!fs.existsSync(path.join(extension.extensionPath, absent)), `${absent} is in the installed extension at ${extension.extensionPath}`);
      }
      assert.equal(path.basename(extension.extensionPath), `${extensionId}-${extension.packageJSON.version}`);
      assert.notEqual(extension.packageJSON.isUnderDevelopment, true, 'the extension was loaded as a development extension');
    }
    const api = await extension.activate();
    await Promise.race([
      api.ready,
      new Promise((_, reject) => setTimeout(() => reject(new Error('api.ready did not settle within 30 s')), 30_000)),
    ]);
  });

  await check('the broken resolver config gets resolver/unknown-function on its function_name value', async () => {
    const uri = brokenUri();
    const text = fs.readFileSync(uri.fsPath, 'utf8');
    assert.ok(text.includes(`"${brokenValue}"`), `the staged workspace does not name ${brokenValue}`);
    const [problem] = await waitFor(`${unknownFunction} on ${brokenFile}`, () => {
      const found = unknownFunctionProblems(uri);
      return found.length ? found : undefined;
    });
    assert.equal(problem.source, 'asl');
    assert.equal(problem.severity, vscode.DiagnosticSeverity.Error);
    assert.ok(problem.message.includes(brokenValue), `the message does not name the missing function: ${problem.message}`);
    const expected = functionNameValueRange(text);
    assert.deepEqual(
      [problem.range.start.line, problem.range.start.character, problem.range.end.line, problem.range.end.character],
      [expected.start.line, expected.start.character, expected.end.line, expected.end.character],
    );
  });

  await check('no intact resolver config has resolver/unknown-function', async () => {
    const broken = brokenUri().toString();
    // Only meaningful once the server has reported on the workspace, which the broken file proves.
    assert.ok(unknownFunctionProblems(brokenUri()).length > 0, 'the server has not reported the broken resolver');
    const elsewhere = vscode.languages.getDiagnostics()
      .filter(([uri, ds]) => uri.toString() !== broken && ds.some((d) => codeOf(d) === unknownFunction))
      .map(([uri]) => vscode.workspace.asRelativePath(uri));
    assert.deepEqual(elsewhere, []);
  });

  await check('the restart command restarts the server and the diagnostic comes back', async () => {
    const uri = brokenUri();
    let clearedByRestart = false;
    const watching = vscode.languages.onDidChangeDiagnostics((event) => {
      if (event.uris.some((u) => u.toString() === uri.toString()) && unknownFunctionProblems(uri).length === 0) clearedByRestart = true;
    });
    try {
      await vscode.commands.executeCommand(commands.restartServer.id);
      await waitFor('the restart to clear the diagnostics of the stopped server', () => clearedByRestart);
      await waitFor(`${unknownFunction} from the restarted server`, () => unknownFunctionProblems(uri).length > 0);
    } finally {
      watching.dispose();
    }
  });

  await check('fixing the function name in the editor clears the diagnostic, unsaved', async () => {
    const uri = brokenUri();
    await waitFor(`${unknownFunction} before the fix`, () => unknownFunctionProblems(uri).length > 0);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document);
    const valueRange = functionNameValueRange(document.getText());
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, valueRange, JSON.stringify(intactValue));
    assert.ok(await vscode.workspace.applyEdit(edit), 'the edit was not applied');
    await waitFor(`${unknownFunction} to go once the name is fixed`, () => unknownFunctionProblems(uri).length === 0);
    assert.ok(document.isDirty, 'the fix was expected to stay unsaved');
  });

  await check('a misspelt expansion in a sync permission gets rule/unknown-expansion, and its quick fix repairs it', async () => {
    const folder = vscode.workspace.workspaceFolders![0];
    const uri = vscode.Uri.joinPath(folder.uri, 'sync/config.json');
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document);
    const at = document.getText().indexOf('"%%user.id"');
    assert.ok(at >= 0, 'sync/config.json has no "%%user.id" to misspell');
    const misspelt = new vscode.WorkspaceEdit();
    misspelt.replace(uri, new vscode.Range(document.positionAt(at), document.positionAt(at + '"%%user.id"'.length)), '"%%usr.id"');
    assert.ok(await vscode.workspace.applyEdit(misspelt), 'the misspelling was not applied');
    const [problem] = await waitFor('rule/unknown-expansion on sync/config.json', () => {
      const found = vscode.languages.getDiagnostics(uri).filter((d) => codeOf(d) === 'rule/unknown-expansion');
      return found.length ? found : undefined;
    });
    assert.equal(document.getText(problem.range), '"%%usr.id"');
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', uri, problem.range, vscode.CodeActionKind.QuickFix.value);
    const fix = actions?.find((a) => a.title.includes('%%user.id'));
    assert.ok(fix?.edit, `no quick fix offers %%user.id; got: ${JSON.stringify(actions?.map((a) => a.title))}`);
    assert.ok(await vscode.workspace.applyEdit(fix.edit), 'the quick fix was not applied');
    const fixedLine = document.lineAt(problem.range.start.line).text;
    assert.ok(fixedLine.includes('"%%user.id"') && !fixedLine.includes('%%usr.id'), `the quick fix left: ${fixedLine}`);
    await waitFor('rule/unknown-expansion to go after the quick fix', () =>
      vscode.languages.getDiagnostics(uri).every((d) => codeOf(d) !== 'rule/unknown-expansion'));
  });

  const figures: RuntimeCheckFigures = {};
  const api = await vscode.extensions.getExtension<AppServicesLocalApi>(extensionId)!.activate();
  await runtimeChecks(check, api, figures);
  await functionsDebugChecks(check, api);
  await check('Create App from Template writes backend/ and frontend/<id>/ with a new app id filled in; a non-empty folder is refused', async () => {
    const parentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-editor-template-'));
    const appDir = await vscode.commands.executeCommand<string | undefined>(commands.createAppFromTemplate.id, { templateId: 'web.mql.todo', name: 'PaletteApp', parentDir, open: 'none' });
    assert.equal(appDir, path.join(parentDir, 'PaletteApp'));
    const appId = JSON.parse(fs.readFileSync(path.join(appDir, 'backend', 'realm_config.json'), 'utf8')).app_id as string;
    assert.match(appId, /^paletteapp-[a-z]{5}$/);
    const clientConfig = JSON.parse(fs.readFileSync(path.join(appDir, 'frontend', 'web.mql.todo', 'src', 'atlasConfig.json'), 'utf8'));
    assert.equal(clientConfig.appId, appId);
    assert.ok(fs.existsSync(path.join(appDir, 'backend', 'hosting', 'files', 'app.js')), 'the hosted web client is in the backend');
    const again = await vscode.commands.executeCommand<string | undefined>(commands.createAppFromTemplate.id, { templateId: 'sync.todo', name: 'PaletteApp', parentDir, open: 'none' });
    assert.equal(again, undefined, 'a second app was written into the non-empty folder');
    assert.equal(JSON.parse(fs.readFileSync(path.join(appDir, 'backend', 'realm_config.json'), 'utf8')).app_id, appId);
  });

  await check('Download Template Client Code writes the client with the app id blank', async () => {
    const parentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-editor-download-'));
    const dir = await vscode.commands.executeCommand<string | undefined>(commands.downloadTemplateClient.id, { templateId: 'kotlin.todo.flex', parentDir });
    assert.equal(dir, path.join(parentDir, 'kotlin.todo.flex'));
    const xml = fs.readFileSync(path.join(dir, 'app', 'src', 'main', 'res', 'values', 'atlasConfig.xml'), 'utf8');
    assert.match(xml, /<string name="realm_app_id"><\/string>/);
    await waitFor('the client README to open', () => vscode.window.activeTextEditor?.document.uri.fsPath === path.join(dir, 'README.md'));
  });

  // GraphQL: a .graphql file in the app's folder, checked against the app's generated schema.
  // A new file per check: an open document keeps its text when the file changes on disk.
  const openGraphql = async (name: string, text: string) => {
    const uri = vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0].uri, 'editor-checks', name);
    fs.mkdirSync(path.dirname(uri.fsPath), { recursive: true });
    fs.writeFileSync(uri.fsPath, text);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document);
    assert.equal(document.languageId, 'graphql');
    return document;
  };

  await check('completion in a .graphql file lists the fields of the app\'s Task type, custom resolver fields included', async () => {
    const document = await openGraphql('completion.graphql', 'query Open {\n  tasks {\n    \n  }\n}\n');
    const position = new vscode.Position(2, 4);
    // The server answers once it has loaded the app; ask again until it has.
    const names = await pollAsync('completion items naming Task fields', async () => {
      const items = await vscode.commands.executeCommand<vscode.CompletionList>('vscode.executeCompletionItemProvider', document.uri, position);
      const labels = items.items.map((i) => (typeof i.label === 'string' ? i.label : i.label.label));
      return labels.includes('name') ? labels : undefined;
    });
    for (const field of ['_id', 'name', 'status', 'checklist', 'assignee', 'history']) assert.ok(names.includes(field), `${field} not offered; got ${names.join(', ')}`);
  });

  await check('an unknown field in a .graphql file is underlined with the graphql-js message', async () => {
    const document = await openGraphql('unknown-field.graphql', 'query Open {\n  tasks {\n    name\n    nope\n  }\n}\n');
    const [problem] = await waitFor('the GraphQL diagnostic on nope', () => {
      const found = vscode.languages.getDiagnostics(document.uri).filter((d) => d.message.startsWith('Cannot query field "nope" on type "Task".'));
      return found.length ? found : undefined;
    });
    assert.equal(problem.severity, vscode.DiagnosticSeverity.Error);
    assert.equal(document.getText(problem.range), 'nope');
  });

  await check('go to definition on a custom resolver field lands in its config file', async () => {
    const document = await openGraphql('definition.graphql', 'mutation {\n  renameTask(input: { taskId: "5f1f1f1f1f1f1f1f1f1f1f1f", name: "x" }) { name }\n}\n');
    const position = new vscode.Position(1, 5);
    const found = await pollAsync('a definition of renameTask', async () => {
      const locations = await vscode.commands.executeCommand<Array<vscode.Location | vscode.LocationLink>>('vscode.executeDefinitionProvider', document.uri, position);
      return locations?.length ? locations : undefined;
    });
    assert.equal(found.length, 1, `definitions: ${JSON.stringify(found)}`);
    const target = 'targetUri' in found[0] ? found[0].targetUri : found[0].uri;
    const range = 'targetRange' in found[0] ? found[0].targetRange : found[0].range;
    assert.ok(target.path.endsWith('/graphql/custom_resolvers/mutation_renameTask.json'), target.toString());
    const config = await vscode.workspace.openTextDocument(target);
    assert.equal(config.getText(range), '"renameTask"');
  });

  await check('Write GraphQL Schema for Other Tools writes schema.graphql and graphql.config.yml, and keeps the schema current', async () => {
    const root = vscode.workspace.workspaceFolders![0].uri.fsPath;
    const schemaFile = path.join(root, 'schema.graphql');
    const configFile = path.join(root, 'graphql.config.yml');
    const taskSchema = path.join(root, 'data_sources/mongodb-atlas/tracker/Task/schema.json');
    const original = fs.readFileSync(taskSchema, 'utf8');
    try {
      await vscode.commands.executeCommand(commands.writeGraphqlSchema.id);
      const sdl = await waitFor('schema.graphql', () => fs.existsSync(schemaFile) && fs.readFileSync(schemaFile, 'utf8'));
      assert.match(sdl, /^# Written by App Services Local/);
      assert.match(sdl, /\ntype Task \{[^}]*\n {2}name: String/);
      assert.match(sdl, /renameTask\(input: RenameTaskInput\): Task/);
      assert.match(fs.readFileSync(configFile, 'utf8'), /^schema: "\.\/schema\.graphql"$/m);
      // A property added to the collection schema on disk reaches the written SDL while the editor runs.
      const schema = JSON.parse(original) as { properties: Record<string, unknown> };
      schema.properties.editorCheckNote = { bsonType: 'string' };
      fs.writeFileSync(taskSchema, JSON.stringify(schema, null, 2));
      await waitFor('editorCheckNote in schema.graphql', () => fs.readFileSync(schemaFile, 'utf8').includes('editorCheckNote: String'));
    } finally {
      fs.writeFileSync(taskSchema, original);
      fs.rmSync(configFile, { force: true });
      fs.rmSync(schemaFile, { force: true });
    }
  });

  const failed = results.filter((r) => !r.ok).length;
  const resultFile = process.env.ASL_EDITOR_RESULT;
  if (resultFile) {
    fs.mkdirSync(path.dirname(resultFile), { recursive: true });
    fs.writeFileSync(resultFile, JSON.stringify({ vscodeVersion: vscode.version, appHost: vscode.env.appHost, passed: results.length - failed, failed, results, figures }, null, 2));
  }
  if (failed) throw new Error(`${failed} of ${results.length} editor checks failed`);
}
