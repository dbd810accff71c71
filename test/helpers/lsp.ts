// A minimal LSP client over the real protocol: spawns the bundled server on stdio and speaks JSON-RPC.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import type { InitializeResult, PublishDiagnosticsParams } from 'vscode-languageserver';
import { DIST } from './disk';

export class LspClient {
  readonly connection: MessageConnection;
  private readonly process: ChildProcess;
  private readonly diagnostics = new Map<string, PublishDiagnosticsParams>();
  private readonly waiters: Array<() => void> = [];
  readonly stderr: string[] = [];

  constructor() {
    this.process = spawn(process.execPath, [path.join(DIST, 'server.js'), '--stdio'], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.process.stderr!.on('data', (d) => this.stderr.push(String(d)));
    this.connection = createMessageConnection(new StreamMessageReader(this.process.stdout!), new StreamMessageWriter(this.process.stdin!));
    this.connection.onNotification('textDocument/publishDiagnostics', (p: PublishDiagnosticsParams) => {
      this.diagnostics.set(p.uri, p);
      for (const w of this.waiters.splice(0)) w();
    });
    this.connection.onRequest('client/registerCapability', () => null);
    this.connection.onNotification('window/logMessage', () => undefined);
    this.connection.listen();
  }

  /** Sends initialize and initialized; resolves with the server's initialize result. */
  async initialize(folder: string): Promise<InitializeResult> {
    const result = await this.connection.sendRequest<InitializeResult>('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(folder).href,
      workspaceFolders: [{ uri: pathToFileURL(folder).href, name: path.basename(folder) }],
      capabilities: { workspace: { didChangeWatchedFiles: { dynamicRegistration: true } }, textDocument: { publishDiagnostics: {} } },
    });
    await this.connection.sendNotification('initialized', {});
    return result;
  }

  /** Resolves with the latest diagnostics of `file` once `predicate` holds for them; rejects after a deadline. */
  async diagnosticsFor(file: string, predicate: (p: PublishDiagnosticsParams) => boolean, timeoutMs = 20000): Promise<PublishDiagnosticsParams> {
    const uri = pathToFileURL(file).href;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const current = this.diagnostics.get(uri);
      if (current && predicate(current)) return current;
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`no matching diagnostics for ${file}; last: ${JSON.stringify(current)}; stderr: ${this.stderr.join('')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  async close(): Promise<void> {
    try {
      await this.connection.sendRequest('shutdown');
      await this.connection.sendNotification('exit');
    } catch { /* the process may already be gone */ }
    this.connection.dispose();
    this.process.kill();
  }
}
