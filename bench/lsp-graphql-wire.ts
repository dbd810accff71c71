// GraphQL diagnostics after an edit as an editor sees them: the shipped language server (dist/server.js) on
// stdio, a 1,000-line .graphql file open in the synthetic app, and the time from sending a change (one line
// edited, as VS Code sends it) to receiving that file's diagnostics for it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import type { PublishDiagnosticsParams } from 'vscode-languageserver';
import { thousandLineQueries } from './lsp-graphql';

const GRAPHQL_SOURCE = 'asl graphql';

/** p95 in ms of edit → diagnostics over `edits` edits (the first 20 are warm-up and not counted). */
export async function graphqlDiagnosticsOverLsp(serverPath: string, appRoot: string, collections: number, edits = 220): Promise<number> {
  const server = spawn(process.execPath, [serverPath, '--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const connection = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  let waiter: ((p: PublishDiagnosticsParams) => void) | undefined;
  const file = path.join(appRoot, 'queries.graphql');
  const uri = pathToFileURL(file).href;
  connection.onNotification('textDocument/publishDiagnostics', (p: PublishDiagnosticsParams) => { if (p.uri === uri) waiter?.(p); });
  connection.onRequest('client/registerCapability', () => null);
  connection.onRequest('workspace/configuration', (params: { items: unknown[] }) => params.items.map(() => null));
  connection.onNotification('window/logMessage', () => undefined);
  connection.listen();
  try {
    await connection.sendRequest('initialize', {
      processId: process.pid, rootUri: pathToFileURL(appRoot).href,
      workspaceFolders: [{ uri: pathToFileURL(appRoot).href, name: 'synthetic' }],
      capabilities: { textDocument: { publishDiagnostics: {} } },
    });
    const text = thousandLineQueries(collections);
    fs.writeFileSync(file, text);
    const diagnosticsOf = (predicate: (p: PublishDiagnosticsParams) => boolean) => new Promise<PublishDiagnosticsParams>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no diagnostics within 30 s')), 30_000);
      waiter = (p) => { if (predicate(p)) { clearTimeout(timer); waiter = undefined; resolve(p); } };
    });
    const graphqlErrors = (p: PublishDiagnosticsParams) => p.diagnostics.filter((d) => d.source === GRAPHQL_SOURCE);
    const opened = diagnosticsOf((p) => graphqlErrors(p).length === 0);
    await connection.sendNotification('initialized', {});
    await connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'graphql', version: 1, text } });
    await opened;
    const lines = text.split('\n');
    const editLine = lines.findIndex((l, i) => i >= 500 && l === '    name');
    let current = lines[editLine];
    const samples: number[] = [];
    for (let i = 0; i < edits; i++) {
      // Each edit a text not seen before: alternately a misspelt field (its error must arrive) and a valid one.
      const next = i % 2 ? `    n${i}: name` : `    nam${i}`;
      const arrived = diagnosticsOf(i % 2
        ? (p) => graphqlErrors(p).length === 0
        : (p) => graphqlErrors(p).some((d) => d.message.includes(`"nam${i}"`)));
      const start = performance.now();
      await connection.sendNotification('textDocument/didChange', {
        textDocument: { uri, version: i + 2 },
        contentChanges: [{ range: { start: { line: editLine, character: 0 }, end: { line: editLine, character: current.length } }, text: next }],
      });
      await arrived;
      samples.push(performance.now() - start);
      current = next;
    }
    const sorted = samples.slice(20).sort((a, b) => a - b);
    return sorted[Math.ceil(0.95 * sorted.length) - 1];
  } finally {
    connection.dispose();
    server.kill();
    fs.rmSync(file, { force: true });
  }
}
