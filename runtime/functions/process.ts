// Entry of an app's function process (bundled as dist/function-process.js), started by runner.ts under
// Node's permission model: it may read only its own two files and the app's functions/node_modules, and
// may start worker threads, nothing else (no writes, no child processes, no addons, no inspector). Its
// environment is empty and it is given no key material: whatever a function's code reaches here, even
// out of its vm context, is this process. Runs the agent (agent.ts), which owns the workers, and carries
// its messages over a link of its own to the runtime (channel.ts), in one batch per turn of the event loop
// each way. There is no IPC channel: the runtime would trust Node's decoding of whatever arrived on it,
// and a function that wrote a bad message there would stop the runtime. Calls and their data do not pass
// here: each worker has its own link to the runtime.
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { createAgent } from './agent';
import { connectLink } from './channel';
import { lockDown } from './lockdown';
import type { FromAgent, ToAgent } from './protocol';

/** What the runtime passes as the process's one argument (JSON). */
export interface FunctionProcessSettings {
  memoryLimitMb: number;
  packagesDir?: string;
}

/** The settings, and where and with which token the agent connects to the runtime (once: the token is then spent). */
export interface FunctionProcessArgument extends FunctionProcessSettings {
  link: { address: string; token: string };
}

lockDown();
const settings = JSON.parse(process.argv[2] ?? '{}') as FunctionProcessArgument;
const workerFile = path.join(__dirname, 'function-worker.js');

/**
 * The workers' own command line: this process's permission model (the flag, what it may read, the
 * network where Node restricts it) without `--allow-worker`. A worker given `execArgv` does not inherit
 * the process's model (that is how a function's `new Worker(code, { execArgv: [] })` ran unrestricted);
 * given these, it runs under a model of its own in which starting a thread is refused by Node itself,
 * whatever its code does. V8 and per-process flags (`--single-threaded-gc`) are not allowed there; they
 * apply to the whole process anyway. `--allow-inspector` is there only while debugging (runner.ts): Node
 * debugs no worker whose model lacks it, and lockdown.ts takes the inspector module from function threads.
 */
const WORKER_FLAG = /^(--experimental-permission|--permission|--allow-fs-read=.*|--allow-net|--allow-inspector|--no-warnings)$/;
const workerExecArgv = process.execArgv.filter((flag) => WORKER_FLAG.test(flag));
// Without the flag itself, the list would start workers with no permission model at all.
if (!workerExecArgv.some((flag) => flag === '--experimental-permission' || flag === '--permission')) {
  process.stderr.write('the function process runs without Node\'s permission model; it does not start function workers\n');
  process.exit(1);
}

async function main(): Promise<void> {
  const link = await connectLink<FromAgent>(settings.link.address, settings.link.token);
  let outbox: FromAgent[] = [];
  const flush = (): void => {
    const batch = outbox;
    outbox = [];
    link.send(batch);
  };
  const agent = createAgent({
    memoryLimitMb: settings.memoryLimitMb,
    packagesDir: settings.packagesDir,
    startWorker: (_init, options) => new Worker(workerFile, { ...options, execArgv: workerExecArgv }),
    emit(message) {
      if (outbox.length === 0) setImmediate(flush);
      outbox.push(message);
    },
  });
  link.listen((batch) => {
    if (Array.isArray(batch)) for (const message of batch as ToAgent[]) agent.receive(message);
  }, () => {
    // The runtime went away (stopped this process's runner, or exited): so does this process.
    void agent.close().finally(() => process.exit(0));
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`the function process cannot reach the runtime: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
