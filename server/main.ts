// Process entry of the language server: `node dist/server.js --stdio` (or --node-ipc from the extension).
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { nodeFileSystem } from '../core/fs';
import { startServer } from './server';

startServer(createConnection(ProposedFeatures.all), {
  fs: nodeFileSystem,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  editDebounceMs: 100,
});
