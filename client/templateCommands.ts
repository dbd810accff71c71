// "Create App from Template…" and "Download Template Client Code…": the editor asks (quick pick, name,
// folder), shows progress and opens the result; the work is core/templates/workflow.ts.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { nodeFileSystem, nodeFileWriter } from '../core/fs';
import {
  createFromTemplate, downloadClient, downloadPicks, templatePicks, validateAppName, TemplateError, type TemplatePick, type TemplateSource,
} from '../core/templates';

/** Lets a caller (the editor tests, other commands) skip the prompts. */
export interface CreateFromTemplateArgs {
  templateId?: string;
  name?: string;
  parentDir?: string;
  /** What to do with the new app: open it in a new window, add it to the workspace, or nothing. */
  open?: 'window' | 'workspace' | 'none';
}

const OPEN_IN_NEW_WINDOW = 'Open in New Window';
const ADD_TO_WORKSPACE = 'Add to Workspace';

export function templateSource(context: vscode.ExtensionContext): TemplateSource {
  return { fs: nodeFileSystem, root: context.asAbsolutePath('templates') };
}

async function pickTemplate(picks: TemplatePick[], placeHolder: string): Promise<string | undefined> {
  const picked = await vscode.window.showQuickPick(picks, { placeHolder, matchOnDescription: true, matchOnDetail: true });
  return picked?.templateId;
}

async function pickFolder(title: string): Promise<string | undefined> {
  const uris = await vscode.window.showOpenDialog({
    canSelectFolders: true, canSelectFiles: false, canSelectMany: false, openLabel: 'Choose Folder', title,
    defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
  });
  return uris?.[0]?.fsPath;
}

/** Shown without waiting for the user to dismiss it: the command's result does not depend on it. */
function showError(error: unknown): void {
  const message = error instanceof TemplateError ? error.message : `App Services: ${error instanceof Error ? error.message : String(error)}`;
  void vscode.window.showErrorMessage(message);
}

/** Returns the new app's folder, or undefined when the user cancelled or it failed (the error was shown). */
export async function createAppFromTemplate(source: TemplateSource, args: CreateFromTemplateArgs = {}): Promise<string | undefined> {
  const templateId = args.templateId ?? await pickTemplate(templatePicks(), 'Pick a template app');
  if (!templateId) return undefined;
  const name = args.name ?? await vscode.window.showInputBox({
    title: 'App name', prompt: 'ASCII letters, digits, _ and -, starting with a letter', placeHolder: 'MyApp',
    validateInput: (value) => validateAppName(value) ?? null,
  });
  if (!name) return undefined;
  const parentDir = args.parentDir ?? await pickFolder(`Folder to create ${name} in`);
  if (!parentDir) return undefined;
  let created;
  try {
    created = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Creating ${name} from ${templateId}` },
      () => createFromTemplate(source, nodeFileSystem, nodeFileWriter, { templateId, name, parentDir }),
    );
  } catch (error) {
    showError(error);
    return undefined;
  }
  const readme = vscode.Uri.file(created.openFile);
  const choice = args.open ?? await vscode.window.showInformationMessage(
    `Created ${name} (app id ${created.appId}) in ${created.appDir}. Run its backend with "asl serve ${path.join(name, 'backend')}".`,
    OPEN_IN_NEW_WINDOW, ADD_TO_WORKSPACE,
  ).then((c) => (c === OPEN_IN_NEW_WINDOW ? 'window' : c === ADD_TO_WORKSPACE ? 'workspace' : 'none'));
  if (choice === 'window') {
    await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(created.appDir), { forceNewWindow: true });
  } else if (choice === 'workspace') {
    const count = vscode.workspace.workspaceFolders?.length ?? 0;
    vscode.workspace.updateWorkspaceFolders(count, 0, { uri: vscode.Uri.file(created.appDir), name });
    await vscode.window.showTextDocument(readme, { preview: false });
  }
  return created.appDir;
}

/** Returns the folder the client code went to, or undefined. */
export async function downloadTemplateClient(source: TemplateSource, args: { templateId?: string; parentDir?: string } = {}): Promise<string | undefined> {
  const templateId = args.templateId ?? await pickTemplate(downloadPicks(), 'Pick a template whose client code to download (app id left blank)');
  if (!templateId) return undefined;
  const parentDir = args.parentDir ?? await pickFolder(`Folder to put the ${templateId} client in`);
  if (!parentDir) return undefined;
  try {
    const { dir, readme } = await downloadClient(source, nodeFileSystem, nodeFileWriter, { templateId, parentDir });
    await vscode.window.showTextDocument(vscode.Uri.file(readme), { preview: false });
    void vscode.window.showInformationMessage(`Wrote the ${templateId} client to ${dir}; its README says where your app id goes.`);
    return dir;
  } catch (error) {
    showError(error);
    return undefined;
  }
}
