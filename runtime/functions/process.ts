// Entry of an app's function process (bundled as dist/function-process.js), started by runner.ts under
// Node's permission model: it may read only its own two files and the app's functions/node_modules, and
// may start worker threads, nothing else (no writes, no child processes, no addons, no inspector). Its
// environment is empty and it is given no key material: whatever a function's code reaches here, even
// out of its vm context, is this process. Runs the agent (agent.ts), which owns the workers, and carries
// its messages over the IPC channel, in one batch per turn of the event loop each way. Calls and their
// data do not pass here: each worker has its own channel to the runtime (channel.ts).
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { createAgent } from './agent';
import type { FromAgent, ToAgent } from './protocol';

/** What the runtime passes as the process's one argument (JSON). */
export interface FunctionProcessSettings {
  memoryLimitMb: number;
  packagesDir?: string;
}

// Signals reach every process of the user, outside the permission model: none are sent from here.
for (const name of ['kill', '_kill']) delete (process as unknown as Record<string, unknown>)[name];
const send = process.send?.bind(process);
if (!send) throw new Error('the function process must be started with an IPC channel');
const settings = JSON.parse(process.argv[2] ?? '{}') as FunctionProcessSettings;
const workerFile = path.join(__dirname, 'function-worker.js');

let outbox: FromAgent[] = [];

function flush(): void {
  const batch = outbox;
  outbox = [];
  if (batch.length > 0 && process.connected) send!(batch);
}

const agent = createAgent({
  memoryLimitMb: settings.memoryLimitMb,
  packagesDir: settings.packagesDir,
  startWorker: (_init, options) => new Worker(workerFile, options),
  emit(message) {
    if (outbox.length === 0) setImmediate(flush);
    outbox.push(message);
  },
});

process.on('message', (batch: ToAgent[]) => {
  for (const message of batch) agent.receive(message);
});
// The runtime went away (closed the runner, or exited): so does this process.
process.on('disconnect', () => {
  void agent.close().finally(() => process.exit(0));
});
