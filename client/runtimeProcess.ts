// The runtime as a child process: `dist/cli.js serve` with an IPC channel, so a crash or a runaway function
// never takes the extension host down. The typed handshake (core/runtime-protocol.ts) gives the URL, the
// app ids and the admin session; log lines arrive with their level. No `vscode` import: tested in plain Node.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  RUNTIME_PROTOCOL_VERSION, isRuntimeMessage, type RuntimeLogLevel, type RuntimeMessage, type RuntimeProblem,
} from '../core/runtime-protocol';

export interface RuntimeLaunch {
  /** The bundled CLI (`dist/cli.js`). */
  cliPath: string;
  appDir: string;
  /** 0 picks a free port. */
  port: number;
  dataDir?: string;
  functionTimeoutSec?: number;
  /** `NAME=VALUE` items. */
  secrets?: readonly string[];
  /** The Node to run it with: the editor's own (`process.execPath` with ELECTRON_RUN_AS_NODE). */
  execPath: string;
  env?: NodeJS.ProcessEnv;
  /** How long the start may take before it counts as failed. */
  startTimeoutMs?: number;
  /** `--inspect-functions`: the functions' inspector on a free loopback port (App Services: Debug Functions). */
  inspectFunctions?: boolean;
  /**
   * With `inspectFunctions`: `--functions-node`, the Node (24 or later) the function process runs on. The
   * runtime runs on the editor's Node (`execPath`), which may be older than 24 (desktop VS Code's Electron
   * has shipped Node 20 and 22) and then cannot grant the inspector; without this it looks on PATH itself.
   */
  functionsNode?: string;
}

/** The handshake's ready message, as declared once in `core/runtime-protocol.ts`, without its envelope. */
export type RuntimeReady = Omit<Extract<RuntimeMessage, { type: 'ready' }>, 'type' | 'version'>;

export interface RuntimeProcessListener {
  onLog?(level: RuntimeLogLevel, message: string): void;
  /** The process ended without being asked to stop (after it was ready): a crash or a kill from outside. */
  onCrash?(description: string, lastLines: string[]): void;
  onReloaded?(applied: boolean, errors: number): void;
  /** While debugging functions: the app's function process started again, its inspector at `url`. */
  onFunctionsInspector?(appId: string, url: string): void;
}

/** A start that did not reach ready: what failed, and the app's problems when they were the reason. */
export class RuntimeStartError extends Error {
  constructor(message: string, readonly reason: 'app-errors' | 'usage' | 'start' | 'exited' | 'timeout', readonly problems: RuntimeProblem[] = [], readonly lastLines: string[] = []) {
    super(message);
  }
}

const KEPT_LINES = 40;
const STOP_GRACE_MS = 5000;

export function serveArguments(launch: RuntimeLaunch): string[] {
  const args = [launch.cliPath, 'serve', launch.appDir, '--port', String(launch.port), '--fail-on-errors'];
  if (launch.dataDir) args.push('--data', launch.dataDir);
  if (launch.functionTimeoutSec !== undefined) args.push('--function-timeout', String(launch.functionTimeoutSec));
  for (const secret of launch.secrets ?? []) args.push('--secret', secret);
  if (launch.inspectFunctions) {
    args.push('--inspect-functions');
    if (launch.functionsNode) args.push('--functions-node', launch.functionsNode);
  }
  return args;
}

export class RuntimeProcess {
  private readonly lines: string[] = [];
  private stopping = false;
  private exited: Promise<void>;

  private constructor(private readonly child: ChildProcess, private readonly listener: RuntimeProcessListener) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  get pid(): number | undefined { return this.child.pid; }

  /** The last log lines, newest last (for a crash report). */
  get lastLines(): string[] { return [...this.lines]; }

  static start(launch: RuntimeLaunch, listener: RuntimeProcessListener = {}): { process: RuntimeProcess; ready: Promise<RuntimeReady> } {
    const child = spawn(launch.execPath, serveArguments(launch), {
      cwd: launch.appDir,
      env: { ...(launch.env ?? process.env), ELECTRON_RUN_AS_NODE: '1' },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      windowsHide: true,
    });
    const runtime = new RuntimeProcess(child, listener);
    return { process: runtime, ready: runtime.handshake(launch.startTimeoutMs ?? 60_000) };
  }

  private keep(level: RuntimeLogLevel, message: string): void {
    for (const line of message.split('\n')) {
      this.lines.push(`${level === 'info' ? '' : `${level}: `}${line}`);
      if (this.lines.length > KEPT_LINES) this.lines.shift();
    }
    this.listener.onLog?.(level, message);
  }

  private handshake(timeoutMs: number): Promise<RuntimeReady> {
    const child = this.child;
    let ready = false;
    forEachLine(child.stdout, (line) => this.keep('debug', line));
    // stderr carries what did not go through the channel: uncaught errors, Node's own warnings.
    forEachLine(child.stderr, (line) => this.keep('error', line));
    const started = new Promise<RuntimeReady>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new RuntimeStartError(`the runtime did not get ready within ${Math.round(timeoutMs / 1000)} s`, 'timeout', [], this.lastLines));
        void this.stop();
      }, timeoutMs);
      child.on('message', (message: unknown) => {
        if (!isRuntimeMessage(message)) return;
        switch (message.type) {
          case 'log': this.keep(message.level, message.message); break;
          case 'reloaded': this.listener.onReloaded?.(message.applied, message.errors); break;
          case 'functionsInspector': this.listener.onFunctionsInspector?.(message.appId, message.url); break;
          case 'failed':
            clearTimeout(timer);
            reject(new RuntimeStartError(message.message, message.reason, message.problems, this.lastLines));
            break;
          case 'ready':
            clearTimeout(timer);
            if (message.version !== RUNTIME_PROTOCOL_VERSION) {
              reject(new RuntimeStartError(`the runtime speaks handshake version ${message.version}, the extension ${RUNTIME_PROTOCOL_VERSION}; rebuild the extension`, 'start'));
              void this.stop();
              return;
            }
            ready = true;
            resolve({ url: message.url, port: message.port, apps: message.apps, admin: message.admin, errors: message.errors, warnings: message.warnings });
            break;
        }
      });
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(new RuntimeStartError(`the runtime process could not start: ${error.message}`, 'start', [], this.lastLines));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        const how = describeExit(code, signal);
        if (!ready) {
          reject(new RuntimeStartError(`the runtime exited before it was ready (${how})`, 'exited', [], this.lastLines));
        } else if (!this.stopping) {
          this.listener.onCrash?.(`the runtime process ended unexpectedly (${how})`, this.lastLines);
        }
      });
    });
    return started;
  }

  /** Asks the runtime to stop, and kills it when it has not stopped after a grace period. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (this.child.connected) this.child.send({ type: 'stop' }, () => undefined);
    else this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `killed by ${signal}` : `exit code ${code ?? 'unknown'}`;
}

function forEachLine(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (!stream) return;
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    pending += chunk;
    let newline;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline).replace(/\r$/, '');
      pending = pending.slice(newline + 1);
      if (line) onLine(line);
    }
  });
  stream.on('end', () => { if (pending) onLine(pending); });
}
