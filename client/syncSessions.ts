// The "Sync Sessions" view: the running runtime's live Realm sync sessions (user, partition, protocol,
// state), polled every 2 s while the view is visible (and on its refresh button); selecting one opens its
// recent traffic decoded in a read-only document that follows the session while it is open. Fetching and
// the traffic text live in core/sync/sessionsClient.ts (tested in Node); this file is the VS Code side only.
import * as vscode from 'vscode';
import { listUsers } from '../core/runner/local';
import {
  adminLocalGet, describeSession, schemaVersionText, fetchSyncSessions, fetchSyncTraffic, renderSessionTraffic, sessionKey, sessionProgress,
} from '../core/sync/sessionsClient';
import type { SyncSessionInfo } from '../core/sync/messages';
import { commands } from './commands';
import type { RuntimeController } from './runtimeController';

export const SYNC_TRAFFIC_SCHEME = 'asl-sync-traffic';
const POLL_MS = 2000;

/** A session, or the one line the view shows when there is none to list. */
export type SyncSessionNode = { kind: 'session'; info: SyncSessionInfo; user: string } | { kind: 'note'; text: string; command?: vscode.Command };

interface OpenTraffic { info: SyncSessionInfo; user: string; ended: boolean; text: string }

export class SyncSessionsView implements vscode.TreeDataProvider<SyncSessionNode>, vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly treeChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.treeChanged.event;
  private readonly documentChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.documentChanged.event;
  private nodes: SyncSessionNode[] = [];
  private readonly emails = new Map<string, string>();
  private readonly documents = new Map<string, OpenTraffic>();
  private visible = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private polling: Promise<void> | undefined;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly runtime: RuntimeController) {
    this.subscriptions = [
      this.treeChanged, this.documentChanged,
      runtime.onDidChange(() => void this.refresh()),
      vscode.workspace.onDidCloseTextDocument((document) => { this.documents.delete(document.uri.toString()); }),
    ];
  }

  /** The view shows or hides: poll while it is visible only. */
  setVisible(visible: boolean): void {
    if (visible === this.visible) return;
    this.visible = visible;
    if (visible) void this.refresh();
    else clearTimeout(this.timer);
  }

  /** The sessions as last fetched. */
  get sessions(): SyncSessionInfo[] {
    return this.nodes.flatMap((n) => (n.kind === 'session' ? [n.info] : []));
  }

  getTreeItem(node: SyncSessionNode): vscode.TreeItem {
    if (node.kind === 'note') {
      const item = new vscode.TreeItem(node.text);
      item.command = node.command;
      return item;
    }
    const item = new vscode.TreeItem(node.user);
    item.id = sessionKey(node.info);
    item.description = `${node.info.partition || '(binding)'} · protocol ${node.info.protocolVersion}${schemaVersionText(node.info)} · ${node.info.state}`;
    item.tooltip = `${describeSession(node.info)}\n${sessionProgress(node.info)}\nsession ${node.info.session} on connection ${node.info.connection}`;
    item.iconPath = new vscode.ThemeIcon(node.info.state === 'identified' ? 'sync' : 'loading~spin');
    item.contextValue = 'syncSession';
    item.command = { command: commands.showSyncSessionTraffic.id, title: commands.showSyncSessionTraffic.title, arguments: [node] };
    return item;
  }

  getChildren(node?: SyncSessionNode): SyncSessionNode[] {
    return node ? [] : this.nodes;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.documents.get(uri.toString())?.text ?? 'This traffic view is closed; select the session in the Sync Sessions view again.\n';
  }

  /** Fetches the sessions (and the traffic of the open documents) now; polls again in 2 s while the view is visible. */
  refresh(): Promise<void> {
    this.polling ??= this.poll().finally(() => {
      this.polling = undefined;
      clearTimeout(this.timer);
      if (this.visible && this.runtime.current.kind === 'running') this.timer = setTimeout(() => void this.refresh(), POLL_MS);
    });
    return this.polling;
  }

  /** Opens the recent traffic of a session (a tree item's node, or a session the editor tests name). */
  async showTraffic(node: SyncSessionNode | SyncSessionInfo): Promise<vscode.TextDocument | undefined> {
    const session = 'kind' in node ? node : { kind: 'session' as const, info: node, user: this.emails.get(node.userId) ?? node.userId };
    if (session.kind !== 'session') return undefined;
    const uri = vscode.Uri.from({ scheme: SYNC_TRAFFIC_SCHEME, path: `/${session.user} session ${session.info.session}.log`, query: sessionKey(session.info) });
    const key = uri.toString();
    if (!this.documents.has(key)) this.documents.set(key, { info: session.info, user: session.user, ended: false, text: 'loading…\n' });
    await this.refreshDocument(key);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document, { preview: false });
    return document;
  }

  private async poll(): Promise<void> {
    const pool = this.runtime.sessions;
    if (this.runtime.current.kind !== 'running' || !pool) {
      this.nodes = [{ kind: 'note', text: 'The runtime is not running: start it to see its sync sessions', command: { command: commands.startRuntime.id, title: commands.startRuntime.title } }];
      this.treeChanged.fire();
      return;
    }
    try {
      const sessions = await fetchSyncSessions(adminLocalGet(pool));
      if (sessions.some((s) => !this.emails.has(s.userId))) {
        for (const user of await listUsers(pool).catch(() => [])) this.emails.set(user.id, user.email ?? user.name ?? user.id);
      }
      this.nodes = sessions.length === 0
        ? [{ kind: 'note', text: 'No live sync sessions: connect a Realm client to the runtime' }]
        : sessions.map((info) => ({ kind: 'session', info, user: this.emails.get(info.userId) ?? info.userId }));
      const live = new Map(sessions.map((s) => [sessionKey(s), s]));
      for (const [key, open] of this.documents) {
        const now = live.get(sessionKey(open.info));
        if (now) open.info = now;
        else open.ended = true;
        await this.refreshDocument(key);
      }
    } catch (e) {
      this.nodes = [{ kind: 'note', text: `Could not list the sync sessions: ${(e as Error).message}` }];
    }
    this.treeChanged.fire();
  }

  private async refreshDocument(key: string): Promise<void> {
    const open = this.documents.get(key);
    const pool = this.runtime.sessions;
    if (!open) return;
    const heading = open.ended ? 'This session has ended; its last traffic:' : undefined;
    const before = open.text;
    try {
      if (!pool || this.runtime.current.kind !== 'running') open.text = 'The runtime is not running; start it and select the session again.\n';
      else open.text = renderSessionTraffic(open.info, await fetchSyncTraffic(adminLocalGet(pool), open.info.connection, open.info.session), heading);
    } catch (e) {
      open.text = `${heading ? `${heading}\n` : ''}Could not read the session's traffic: ${(e as Error).message}\n`;
    }
    if (open.text !== before) this.documentChanged.fire(vscode.Uri.parse(key));
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const s of this.subscriptions) s.dispose();
  }
}
