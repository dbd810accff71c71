// "Open Partition as User…": a read-only JSONC document per (user, partition) with the verdicts and their
// evaluation traces, the documents the client gets, the ignored ones and the client error; refreshed
// while the runtime runs when documents, custom user data or the app's files change. The logic lives in
// core/sync/simulatorClient.ts (tested in Node); this file is the VS Code side only.
import * as vscode from 'vscode';
import { listUsers } from '../core/runner/local';
import { fetchSimulation, renderSimulation, watchPartition, type PartitionWatch } from '../core/sync/simulatorClient';
import type { RuntimeController } from './runtimeController';

export const PARTITION_SCHEME = 'asl-partition';

interface OpenView { user: string; userId: string; partition: string; text: string; watch?: PartitionWatch }

export class PartitionSimulator implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly views = new Map<string, OpenView>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly runtime: RuntimeController) {
    this.subscriptions = [
      this.changed,
      runtime.onDidChange(() => { for (const key of this.views.keys()) void this.refresh(key); }),
      vscode.workspace.onDidCloseTextDocument((document) => {
        const view = this.views.get(document.uri.toString());
        view?.watch?.close();
        this.views.delete(document.uri.toString());
      }),
    ];
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.views.get(uri.toString())?.text ?? '// This partition view is closed; run "App Services: Open Partition as User…" again.\n';
  }

  /** Asks for the user and the partition value unless `args` names them (as the editor tests do). */
  async open(args: { userId?: string; partition?: string } = {}): Promise<void> {
    const target = await this.runtime.ensureRunning();
    const pool = this.runtime.sessions;
    if (!target || !pool) return;
    const users = await listUsers(pool);
    if (users.length === 0) {
      void vscode.window.showWarningMessage('App Services: the app has no users yet; create one first (App Services: Create User…).');
      return;
    }
    const items = users.map((u) => ({ label: u.email ?? u.name ?? u.id, description: u.id, detail: u.providers.join(', '), user: u }));
    const named = args.userId === undefined ? undefined : items.find((i) => i.user.id === args.userId);
    if (args.userId !== undefined && !named) throw new Error(`no user with id ${args.userId} in the app`);
    const picked = named ?? await vscode.window.showQuickPick(items, {
      title: 'Open Partition as User…', placeHolder: 'the user who opens the partition',
    });
    if (!picked) return;
    const partition = args.partition ?? await vscode.window.showInputBox({
      title: 'Open Partition as User…',
      prompt: 'The partition value as EJSON text, as a client sends it: "abc", 42, {"$oid": "…"}, {"$uuid": "…"}, null',
      value: JSON.stringify(picked.user.id),
      ignoreFocusOut: true,
    });
    if (partition === undefined) return;
    const uri = vscode.Uri.from({ scheme: PARTITION_SCHEME, path: `/${picked.label} ${partition.replace(/[\\/]/g, '_')}.jsonc`, query: `${picked.user.id}\u0000${partition}` });
    const key = uri.toString();
    this.views.get(key)?.watch?.close();
    this.views.set(key, { user: picked.user.id, userId: picked.user.id, partition, text: '// opening…\n' });
    await this.refresh(key);
    const view = this.views.get(key);
    if (view) view.watch = await watchPartition(pool, picked.user.id, partition, () => void this.refresh(key)).catch(() => undefined);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(document, 'jsonc');
    await vscode.window.showTextDocument(document, { preview: false });
  }

  private async refresh(key: string): Promise<void> {
    const view = this.views.get(key);
    const pool = this.runtime.sessions;
    if (!view) return;
    try {
      view.text = pool ? renderSimulation(await fetchSimulation(pool, view.user, view.partition)) : '// The runtime is not running; start it to see this partition.\n';
    } catch (e) {
      view.text = `// Could not open the partition: ${(e as Error).message}\n`;
    }
    this.changed.fire(vscode.Uri.parse(key));
  }

  dispose(): void {
    for (const view of this.views.values()) view.watch?.close();
    for (const s of this.subscriptions) s.dispose();
  }
}
