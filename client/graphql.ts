// GraphQL in the editor beyond what the language server answers: the language status item telling which
// app's schema applies (with a pick when several apps exist), and the schema files for other GraphQL tools,
// rewritten while the editor runs whenever the app's schema changes.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { State, type LanguageClient } from 'vscode-languageclient/node';
import {
  GRAPHQL_APP_REQUEST, GRAPHQL_SCHEMA_REQUEST,
  type GraphqlAppResult, type GraphqlSchemaResult, type StatusParams,
} from '../core/protocol';
import {
  TOOL_CONFIG_FILE, TOOL_SCHEMA_FILE, isToolConfigOurs, toolConfigSchemaPath, toolConfigText, toolSchemaText,
} from '../core/graphql/toolConfig';
import { commands } from './commands';
import { describeGraphqlApp } from './graphqlStatus';

export class GraphqlSupport implements vscode.Disposable {
  private readonly item = vscode.languages.createLanguageStatusItem('appServicesLocal.graphqlApp', [{ scheme: 'file', language: 'graphql' }]);
  private readonly disposables: vscode.Disposable[] = [];
  private apps: StatusParams['apps'] = [];
  private lastResult: GraphqlAppResult | undefined;
  private refreshing = Promise.resolve();

  constructor(private readonly client: LanguageClient, private readonly output: vscode.LogOutputChannel) {
    this.item.name = 'App Services GraphQL schema';
    this.item.text = 'GraphQL';
    this.disposables.push(
      this.item,
      vscode.window.onDidChangeActiveTextEditor(() => this.refreshStatus()),
      vscode.workspace.onDidChangeConfiguration((e) => { if (e.affectsConfiguration('appServicesLocal.graphql')) this.refreshStatus(); }),
      vscode.commands.registerCommand(commands.pickGraphqlApp.id, () => this.pickApp()),
      vscode.commands.registerCommand(commands.writeGraphqlSchema.id, () => this.writeSchemaFiles()),
    );
  }

  /** The server (re)loaded apps: the status item and the kept schema files follow. */
  workspaceChanged(status: StatusParams): void {
    if (status.state !== 'ready') return;
    this.apps = status.apps;
    this.refreshStatus();
    this.refreshing = this.refreshing.then(() => this.refreshToolSchemas()).catch((e) => this.output.error(`GraphQL schema files: ${describe(e)}`));
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  private refreshStatus(): void {
    const document = vscode.window.activeTextEditor?.document;
    if (!document || document.languageId !== 'graphql' || this.client.state !== State.Running) return;
    this.client.sendRequest<GraphqlAppResult>(GRAPHQL_APP_REQUEST, { uri: document.uri.toString() }).then((result) => {
      this.lastResult = result;
      const view = describeGraphqlApp(result);
      this.item.text = view.text;
      this.item.detail = view.detail;
      this.item.severity = view.needsAttention ? vscode.LanguageStatusSeverity.Warning : vscode.LanguageStatusSeverity.Information;
      this.item.command = view.canPick ? { command: commands.pickGraphqlApp.id, title: 'Pick App' } : undefined;
    }, (e: unknown) => this.output.error(`GraphQL app lookup failed: ${describe(e)}`));
  }

  private async pickApp(): Promise<void> {
    const choices = this.lastResult?.choices.length ? this.lastResult.choices : this.apps.map((a) => ({ root: a.root, name: a.name }));
    const picked = await vscode.window.showQuickPick(choices.map((c) => ({ label: c.name, description: c.root, root: c.root })), {
      title: 'App whose GraphQL schema applies to files outside every app folder',
    });
    if (!picked) return;
    await vscode.workspace.getConfiguration('appServicesLocal.graphql').update('app', picked.root, vscode.ConfigurationTarget.Workspace);
  }

  /** Writes schema.graphql and graphql.config.yml in the app's folder; a config of the user's own is left alone. */
  private async writeSchemaFiles(): Promise<void> {
    const app = this.apps.length === 1 ? this.apps[0] : await vscode.window.showQuickPick(
      this.apps.map((a) => ({ label: a.name, description: a.root, root: a.root })), { title: 'Write the GraphQL schema of which app?' },
    ).then((p) => p && this.apps.find((a) => a.root === p.root));
    if (!app) {
      if (!this.apps.length) void vscode.window.showWarningMessage('App Services: no app in the workspace.');
      return;
    }
    const { sdl } = await this.client.sendRequest<GraphqlSchemaResult>(GRAPHQL_SCHEMA_REQUEST, { root: app.root });
    if (sdl === undefined) return;
    const schemaFile = path.join(app.root, TOOL_SCHEMA_FILE);
    const configFile = path.join(app.root, TOOL_CONFIG_FILE);
    await writeIfChanged(schemaFile, toolSchemaText(sdl));
    const existing = await readText(configFile);
    if (existing !== undefined && !isToolConfigOurs(existing)) {
      void vscode.window.showWarningMessage(`App Services: wrote ${TOOL_SCHEMA_FILE}; ${TOOL_CONFIG_FILE} is your own, so point its schema at ./${TOOL_SCHEMA_FILE} yourself.`);
      return;
    }
    await writeIfChanged(configFile, toolConfigText(`./${TOOL_SCHEMA_FILE}`));
    this.output.info(`Wrote ${schemaFile} and ${configFile}; kept up to date while the editor runs`);
    void vscode.window.showInformationMessage(`App Services: wrote ${TOOL_SCHEMA_FILE} and ${TOOL_CONFIG_FILE} in ${app.name}; they follow the app's schema while the editor runs.`);
  }

  /** Rewrites the schema file of every app whose folder has a graphql.config.yml we wrote. */
  private async refreshToolSchemas(): Promise<void> {
    for (const app of this.apps) {
      const config = await readText(path.join(app.root, TOOL_CONFIG_FILE));
      const schemaPath = config !== undefined && isToolConfigOurs(config) ? toolConfigSchemaPath(config) : undefined;
      if (!schemaPath) continue;
      const { sdl } = await this.client.sendRequest<GraphqlSchemaResult>(GRAPHQL_SCHEMA_REQUEST, { root: app.root });
      if (sdl !== undefined) await writeIfChanged(path.resolve(app.root, schemaPath), toolSchemaText(sdl));
    }
  }
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(file)));
  } catch {
    return undefined;
  }
}

async function writeIfChanged(file: string, text: string): Promise<void> {
  if ((await readText(file)) === text) return;
  await vscode.workspace.fs.writeFile(vscode.Uri.file(file), new TextEncoder().encode(text));
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
