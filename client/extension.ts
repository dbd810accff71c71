// Extension entry: wires the language client, the status bar item, the output channel and the commands.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { STATUS_NOTIFICATION, type StatusParams } from '../core/protocol';
import type { AppServicesLocalApi } from './api';
import { commands } from './commands';
import { GraphqlSupport } from './graphql';
import { createLanguageClient, restartLanguageClient, serverStateOf } from './languageClient';
import { ServerStatusItem } from './statusItem';

let activeClient: LanguageClient | undefined;

export function activate(context: vscode.ExtensionContext): AppServicesLocalApi {
  const output = vscode.window.createOutputChannel('App Services Local', { log: true });
  const status = new ServerStatusItem(commands.showOutput.id);
  const client = createLanguageClient(context.asAbsolutePath(path.join('dist', 'server.js')), output);
  activeClient = client;
  const graphql = new GraphqlSupport(client, output);

  let restartInProgress: Promise<void> | undefined;
  const restartServer = (): Promise<void> => {
    restartInProgress ??= (async () => {
      output.info('Restarting the language server');
      try {
        await restartLanguageClient(client);
      } catch (error) {
        output.error(`The language server did not restart: ${describeError(error)}`);
        void vscode.window.showErrorMessage('App Services: the language server did not restart. See the output for details.');
      } finally {
        restartInProgress = undefined;
      }
    })();
    return restartInProgress;
  };

  context.subscriptions.push(
    output, status,
    client.onDidChangeState(({ newState }) => {
      const state = serverStateOf(newState);
      output.info(`Language server ${state}`);
      status.setServerState(state);
    }),
    graphql,
    client.onNotification(STATUS_NOTIFICATION, (params: StatusParams) => {
      status.setWorkspaceStatus(params);
      graphql.workspaceChanged(params);
    }),
    vscode.commands.registerCommand(commands.restartServer.id, restartServer),
    vscode.commands.registerCommand(commands.showOutput.id, () => output.show(true)),
  );

  const ready = client.start().catch((error: unknown) => {
    output.error(`The language server did not start: ${describeError(error)}`);
    throw error;
  });
  // The failure is in the output channel and the status bar; callers who await `ready` still see it.
  ready.catch(() => undefined);
  return { ready };
}

export function deactivate(): Promise<void> | undefined {
  const client = activeClient;
  activeClient = undefined;
  return client?.stop();
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
