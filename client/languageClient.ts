// The language client: how the server process is started and which files it hears about.
import * as vscode from 'vscode';
import { LanguageClient, State, TransportKind } from 'vscode-languageclient/node';
import type { DocumentSelector, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import type { ServerState } from './status';

/** Also the settings prefix the client reads its trace level from: `appServicesLocal.trace.server`. */
export const languageClientId = 'appServicesLocal';

/**
 * Config files are JSON (some with comments), functions are JavaScript; GraphQL lives in .graphql/.gql files
 * and in templates of JS/TS files anywhere in the workspace. Only files on disk belong to an app.
 */
export const documentSelector: DocumentSelector = ['json', 'jsonc', 'javascript', 'graphql', 'javascriptreact', 'typescript', 'typescriptreact']
  .map((language) => ({ scheme: 'file', language }));

export function createLanguageClient(serverModule: string, output: vscode.LogOutputChannel): LanguageClient {
  // The server is a self-contained bundle; ipc needs no extra arguments and works in the
  // desktop (Electron) and the remote (plain Node) extension host alike.
  const serverOptions: ServerOptions = { module: serverModule, transport: TransportKind.ipc };
  const clientOptions: LanguageClientOptions = {
    documentSelector,
    // VS Code already shows key and enum documentation from the bundled JSON Schemas (jsonValidation);
    // the server keeps to what only it knows (app facts, rule expressions, generated types).
    initializationOptions: { schemaDocumentation: false, graphql: vscode.workspace.getConfiguration('appServicesLocal').get('graphql') },
    // Setting changes (appServicesLocal.graphql.*) reach the server as workspace/didChangeConfiguration.
    synchronize: { configurationSection: 'appServicesLocal' },
    // Changes to files no editor has open reach the server through the file watchers it registers itself
    // (dynamic registration), so every LSP client gets them, not just this one.
    outputChannel: output,
  };
  return new LanguageClient(languageClientId, 'App Services Local', serverOptions, clientOptions);
}

export function serverStateOf(state: State): ServerState {
  switch (state) {
    case State.Starting: return 'starting';
    case State.Running: return 'running';
    case State.Stopped: return 'stopped';
  }
}

/**
 * Restarts the server whatever state it is in: a start in progress is awaited first (a client that is
 * starting cannot be stopped), and a stopped client (crashed too often, or failed to start) is started.
 */
export async function restartLanguageClient(client: LanguageClient): Promise<void> {
  if (client.state === State.Starting) await client.start();
  if (client.state === State.Running) await client.restart();
  else await client.start();
}
