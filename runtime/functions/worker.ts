// Function worker, a thread of an app's function process (process.ts): compiles each function source once
// into its own vm context and runs calls posted by the pool. The vm context is for the platform's globals,
// not for security: the boundary is the function process (see README.md). The runtime's state lives in the
// runtime's process; everything a function reaches (data, values, other functions) is a request back to it.
// Bundled as its own entry (dist/function-worker.js).
import { isMainThread, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { builtinModules, createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import inspector from 'node:inspector';
import util from 'node:util';
import vm from 'node:vm';
import * as bson from 'bson';
import {
  SEALED, decodeLending, encodeReturned, encodesAs, encodeValue, uncarry,
  type CallPayload, type FromWorker, type LogLevel, type SyncReply, type SyncRequest, type ToWorker, type WorkerInit,
} from './protocol';
import { deposit, mailboxOf, reclaim } from './mailbox';
import { connectLink, MAX_FRAME_BYTES, portLink, type BatchLink } from './channel';
import { createHttpClient } from './http';
import { lockDown } from './lockdown';
import { endCall, installLongArithmetic, resultOfCall, startCall } from './long-numbers';
import { yieldToRuntime } from '../priority';
import { createServiceClient, type HostRequest } from './services';
import { DecodedDocumentCache } from './decoded-documents';

if (isMainThread) throw new Error('runtime/functions/worker must run in a worker thread');
const init = workerData as WorkerInit;

/** The channel to the runtime's pool, once connected (see channel.ts). */
let link: BatchLink<FromWorker> | undefined;
let outbox: FromWorker[] = [];
/** Messages left in the mailbox (see mailbox.ts), which leave with the next batch unless the agent took them. */
let mailboxed: FromWorker[] = [];
const mailbox = mailboxOf(init.mailbox);
/** Whether the outbox holds a call's outcome. */
let outcomesWaiting = false;
/** Whether messages from the runner are being handled; when they all are, what they gave rise to leaves. */
let receiving = false;

/**
 * Queues a message. What queues up leaves in one batch: at the end of this turn of the event loop, or,
 * while messages from the pool are being handled, once all of them are (each batch reaching the runtime
 * is a frame it pays for, whatever the size). Finished calls' outcomes go to the mailbox before function
 * code runs again (a call, or a reply a call awaited): code stuck in a loop must not hold back the answers
 * of calls that finished before it, and the agent sends them on from there (see mailbox.ts).
 */
function post(message: FromWorker): void {
  if (outbox.length === 0 && !receiving) setImmediate(flush);
  outbox.push(message);
  if (message.t === 'done' || message.t === 'failed' || message.t === 'syntax') outcomesWaiting = true;
}

/** Texts a worker sends (logs, error messages) are cut here, so every message fits in a frame. */
const MAX_TEXT_CHARS = 1024 * 1024;

function cut(text: string): string {
  return text.length > MAX_TEXT_CHARS ? `${text.slice(0, MAX_TEXT_CHARS)}… (cut at ${MAX_TEXT_CHARS} characters)` : text;
}

function flush(): void {
  if (!link) return;
  const stillOurs = mailboxed.length === 0 || reclaim(mailbox);
  const batch = stillOurs && mailboxed.length > 0 ? [...mailboxed, ...outbox] : outbox;
  mailboxed = [];
  outbox = [];
  outcomesWaiting = false;
  if (batch.length === 0) return;
  // A batch too large for one frame leaves as one frame a message (each is within the limit).
  if (batch.length > 1 && batch.reduce((bytes, m) => bytes + approximateBytes(m), 0) > MAX_FRAME_BYTES / 2) {
    for (const message of batch) link.send([message]);
  } else {
    link.send(batch);
  }
}

/**
 * Before function code runs again, what is waiting (finished calls' outcomes) goes to the mailbox rather
 * than out on the socket: it leaves with the next batch, or, should that code not return, the agent sends
 * it on when the pool finds this worker stuck.
 */
function leaveInMailbox(): void {
  const { stored, taken } = deposit(mailbox, outbox);
  if (taken) mailboxed = [];
  if (!stored) {
    flush();
    return;
  }
  mailboxed.push(...outbox);
  outbox = [];
  outcomesWaiting = false;
}

function approximateBytes(message: FromWorker): number {
  const m = message as { payload?: unknown; text?: unknown; message?: unknown };
  return 64 + [m.payload, m.text, m.message].reduce<number>((bytes, part) => bytes + (typeof part === 'string' ? part.length : 0), 0);
}

// Node built-ins the platform offers to functions; the file system, processes and threads stay out of reach.
const ALLOWED_BUILTINS = new Set([
  'assert', 'buffer', 'crypto', 'dns', 'events', 'http', 'https', 'net', 'os', 'path', 'punycode', 'querystring',
  'stream', 'string_decoder', 'timers', 'tls', 'url', 'util', 'zlib',
]);
/**
 * What a package's own code may require besides: what packages commonly read (the file system, which the
 * permission model limits to the app's packages, `tty.isatty`, timing). Never what starts a thread or a
 * process or compiles code outside the function's realm (`worker_threads`, `child_process`, `cluster`,
 * `vm`, `module`, `v8`, `inspector`, `wasi`, `repl`); `process` is the stand-in below.
 */
const PACKAGE_BUILTINS = new Set([
  ...ALLOWED_BUILTINS, 'async_hooks', 'constants', 'dgram', 'diagnostics_channel', 'fs', 'http2', 'perf_hooks', 'readline', 'sys', 'tty',
]);
const nodeRequire = createRequire(__filename);
/** The text of package files, read once per worker (until a reload). */
const packageSources = new Map<string, string>();

/**
 * What a package's code finds as `process` (a parameter of its module, as `require` is): made in the
 * function's realm, with nothing of the thread's own `process`.
 */
const PACKAGE_PROCESS = `(facts) => {
  const { version, versions, platform, arch } = JSON.parse(facts);
  const none = () => undefined;
  return {
    env: {}, argv: [], execArgv: [], version, versions, platform, arch, browser: false, title: 'functions',
    cwd: () => '/', nextTick: (callback, ...args) => queueMicrotask(() => callback(...args)), emitWarning: none,
    on: none, once: none, off: none, removeListener: none, emit: () => false, listenerCount: () => 0,
  };
}`;
const PROCESS_FACTS = JSON.stringify({ version: process.version, versions: process.versions, platform: process.platform, arch: process.arch });

/**
 * The `require` of one function's vm context. Built-ins (of the allowed ones) are Node's own; packages of
 * the app's `functions/node_modules` are compiled into that context, the function's realm, as Node would
 * compile them (`exports`, `require`, `module`, `__filename`, `__dirname`), so their code, like the
 * function's, holds nothing of the thread's realm (its global object, `process`, a loader): a package
 * loaded by Node itself would run in that realm, and its sloppy-mode frames would hand that realm's global
 * object to a stack trace's `getThis()`. Each context has its own instances of the packages.
 */
function createRealmRequire(context: vm.Context, RealmError: ErrorConstructor): (specifier: string) => unknown {
  const modules = new Map<string, { exports: unknown; loaded: boolean }>();
  const makeModule = vm.runInContext('(filename) => ({ id: filename, filename, exports: {}, loaded: false, children: [], paths: [] })', context) as (filename: string) => { exports: unknown; loaded: boolean };
  const parseJson = vm.runInContext('(text) => JSON.parse(text)', context) as (text: string) => unknown;
  let processStandIn: unknown;
  const fail = (message: string, code?: string): never => {
    const error = new RealmError(message);
    if (code) (error as Error & { code?: string }).code = code;
    throw error;
  };

  function load(filename: string): unknown {
    const known = modules.get(filename);
    if (known) return known.exports;
    if (!/\.(c?js|json)$/.test(filename)) fail(`Cannot load '${path.basename(filename)}': functions load JavaScript (CommonJS) and JSON files only`, 'ERR_ACCESS_DENIED');
    let text = packageSources.get(filename);
    if (text === undefined) {
      text = fs.readFileSync(filename, 'utf8');
      packageSources.set(filename, text);
    }
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const module = makeModule(filename);
    modules.set(filename, module);
    try {
      if (filename.endsWith('.json')) {
        module.exports = parseJson(text);
      } else {
        // A hashbang line is allowed at the start of a script, not of a function body.
        const body = text.startsWith('#!') ? `//${text.slice(2)}` : text;
        const wrapper = vm.compileFunction(body, ['exports', 'require', 'module', '__filename', '__dirname', 'process'], { filename, parsingContext: context });
        const dirname = path.dirname(filename);
        processStandIn ??= (vm.runInContext(PACKAGE_PROCESS, context) as (facts: string) => unknown)(PROCESS_FACTS);
        wrapper.call(module.exports, module.exports, requireFrom(dirname), module, filename, dirname, processStandIn);
      }
    } catch (error) {
      modules.delete(filename);
      throw error;
    }
    module.loaded = true;
    return module.exports;
  }

  /** A package file's `require` (from its folder), or, without a folder, the function's own. */
  function requireFrom(dirname: string | undefined): (specifier: string) => unknown {
    const fromPackage = dirname !== undefined;
    const resolveFile = (spec: string): string | undefined => {
      const packagesDir = init.packagesDir;
      // Function code requires packages by name; a package's code also by a path relative to its file.
      if (!packagesDir || (!fromPackage && (spec.startsWith('.') || path.isAbsolute(spec)))) return undefined;
      let resolved: string | undefined;
      try {
        resolved = nodeRequire.resolve(spec, { paths: [dirname ?? path.dirname(packagesDir)] });
      } catch {
        resolved = undefined;
      }
      // Resolution walks up parent folders (and through links); only the app's own packages count.
      return resolved && resolved.startsWith(packagesDir + path.sep) ? resolved : undefined;
    };
    const require = (specifier: string): unknown => {
      const spec = String(specifier);
      const bare = spec.startsWith('node:') ? spec.slice('node:'.length) : spec;
      if (builtinModules.includes(bare)) {
        if (fromPackage && bare === 'process') return (processStandIn ??= (vm.runInContext(PACKAGE_PROCESS, context) as (facts: string) => unknown)(PROCESS_FACTS));
        if (!(fromPackage ? PACKAGE_BUILTINS : ALLOWED_BUILTINS).has(bare.split('/')[0]!)) return fail(`module '${spec}' is not available to functions`, 'ERR_ACCESS_DENIED');
        return nodeRequire(bare);
      }
      const file = resolveFile(bare);
      return file === undefined ? fail(`Cannot find module '${spec}'`, 'MODULE_NOT_FOUND') : load(file);
    };
    if (fromPackage) {
      require.resolve = (specifier: string): string => {
        const spec = String(specifier);
        if (builtinModules.includes(spec.startsWith('node:') ? spec.slice('node:'.length) : spec)) return spec;
        return resolveFile(spec) ?? fail(`Cannot find module '${spec}'`, 'MODULE_NOT_FOUND');
      };
    }
    return require;
  }
  return requireFrom(undefined);
}

function forgetPackages(): void {
  packageSources.clear();
}

/**
 * While debugging (the thread's permission model allows the inspector: runner.ts), a function's console
 * also reaches the debugger's console, its values inspectable there; `inspector.console` writes to the
 * inspector only. Otherwise undefined: nothing more per line.
 */
const debuggerConsole = process.execArgv.includes('--allow-inspector') ? (inspector.console as unknown as Record<LogLevel, (...args: unknown[]) => void>) : undefined;

function createConsole(functionName: string): Record<LogLevel, (...args: unknown[]) => void> {
  const emit = (level: LogLevel) => (...args: unknown[]): void => {
    post({ t: 'log', name: functionName, level, text: cut(util.format(...args)) });
    debuggerConsole?.[level]?.(`[function ${functionName}]`, ...args);
  };
  return { log: emit('log'), info: emit('info'), warn: emit('warn'), error: emit('error'), debug: emit('debug') };
}

type Timer = NodeJS.Timeout | NodeJS.Immediate;

/**
 * The timers each running call has set and that have not fired (intervals until cleared). A call's
 * execution ends when it returns, as on the platform: what it left pending is cleared then, so that an
 * interval it left behind cannot keep its worker (and the other calls there) busy. A timer's callback runs
 * with `runningCall` naming the call that set it, so a worker stuck in one names the right call.
 */
const timersOfCalls = new Map<number, Map<Timer, 'timeout' | 'immediate'>>();

function underCall(owner: number, callback: (...args: unknown[]) => unknown, args: unknown[]): void {
  Atomics.store(init.runningCall, 0, owner);
  callback(...args);
}

function trackTimer(owner: number, timer: Timer, kind: 'timeout' | 'immediate'): void {
  if (owner === 0) return;
  let timers = timersOfCalls.get(owner);
  if (!timers) timersOfCalls.set(owner, (timers = new Map()));
  timers.set(timer, kind);
}

function forgetTimer(timer: unknown): void {
  for (const timers of timersOfCalls.values()) if (timers.delete(timer as Timer)) return;
}

/** Clears what a call left pending; the number of timers cleared. */
function clearTimersOf(callId: number): number {
  const timers = timersOfCalls.get(callId);
  if (!timers) return 0;
  timersOfCalls.delete(callId);
  for (const [timer, kind] of timers) {
    if (kind === 'immediate') clearImmediate(timer as NodeJS.Immediate);
    else clearTimeout(timer as NodeJS.Timeout);
  }
  return timers.size;
}

type Callback = (...args: unknown[]) => unknown;

const callTimers = {
  setTimeout(callback: Callback, ms?: number, ...args: unknown[]): Timer {
    if (typeof callback !== 'function') return setTimeout(callback, ms);
    const owner = Atomics.load(init.runningCall, 0);
    const timer: NodeJS.Timeout = setTimeout(() => {
      timersOfCalls.get(owner)?.delete(timer);
      underCall(owner, callback, args);
    }, ms);
    trackTimer(owner, timer, 'timeout');
    return timer;
  },
  setInterval(callback: Callback, ms?: number, ...args: unknown[]): Timer {
    if (typeof callback !== 'function') return setInterval(callback, ms);
    const owner = Atomics.load(init.runningCall, 0);
    const timer = setInterval(() => underCall(owner, callback, args), ms);
    trackTimer(owner, timer, 'timeout');
    return timer;
  },
  setImmediate(callback: Callback, ...args: unknown[]): Timer {
    if (typeof callback !== 'function') return setImmediate(callback);
    const owner = Atomics.load(init.runningCall, 0);
    const timer: NodeJS.Immediate = setImmediate(() => {
      timersOfCalls.get(owner)?.delete(timer);
      underCall(owner, callback, args);
    });
    trackTimer(owner, timer, 'immediate');
    return timer;
  },
  clearTimeout(timer: unknown): void {
    forgetTimer(timer);
    clearTimeout(timer as NodeJS.Timeout);
  },
  clearInterval(timer: unknown): void {
    forgetTimer(timer);
    clearInterval(timer as NodeJS.Timeout);
  },
  clearImmediate(timer: unknown): void {
    forgetTimer(timer);
    clearImmediate(timer as NodeJS.Immediate);
  },
};

/** The bson value classes platform functions may call without `new`, as they could on the platform (`BSON.Double(4.0)`). */
const CALLABLE_BSON_CLASSES = ['Binary', 'Code', 'DBRef', 'Decimal128', 'Double', 'Int32', 'Long', 'MaxKey', 'MinKey', 'ObjectId', 'BSONRegExp', 'BSONSymbol', 'Timestamp', 'UUID'] as const;

/** The `BSON` global: the bson module, its value classes also callable as plain functions (instances are the same classes). */
const functionBson: Record<string, unknown> = { ...bson };
for (const name of CALLABLE_BSON_CLASSES) {
  const BsonClass = bson[name] as unknown as new (...args: unknown[]) => unknown;
  functionBson[name] = new Proxy(BsonClass, { apply: (target, _this, args: unknown[]) => new target(...args) });
}
Object.freeze(functionBson);

/**
 * Node's fetch and its classes, which load its HTTP client (undici) when first touched: tens of
 * milliseconds at every worker's first compile, and workers are started whenever one is sealed.
 */
const NETWORK_GLOBALS = ['fetch', 'Headers', 'Request', 'Response', 'FormData'] as const;

/** The globals a platform function expects, beyond the per-call `context`. */
function functionGlobals(functionName: string): Record<string, unknown> {
  const globals: Record<string, unknown> = {
    console: createConsole(functionName),
    BSON: functionBson,
    EJSON: bson.EJSON,
    Buffer,
    ...callTimers, queueMicrotask,
    TextEncoder, TextDecoder, URL, URLSearchParams, atob, btoa,
    AbortController, AbortSignal,
  };
  for (const name of NETWORK_GLOBALS) {
    // Loaded on first use, then an ordinary global the function may read or replace.
    const settle = (value: unknown) => {
      Object.defineProperty(globals, name, { value, writable: true, configurable: true, enumerable: true });
      return value;
    };
    Object.defineProperty(globals, name, {
      get: () => settle(globalThis[name]), set: settle, configurable: true, enumerable: true,
    });
  }
  return globals;
}

interface CompiledFunction {
  /** Evaluates the source once for a call; `exports` is a global of `sandbox`, `context`/`module` are parameters. */
  evaluate: (context: unknown, module: { exports: unknown }) => void;
  sandbox: Record<string, unknown>;
  RealmError: ErrorConstructor;
  /** `context.http`: the same for every call (it holds nothing of a call), made once per compiled source. */
  http: ReturnType<typeof createHttpClient>;
}

class SourceSyntaxError {
  constructor(readonly reason: string, readonly line: number, readonly character: number) {}
}

/** V8 reports a syntax error's place only in the stack: `<file>:<line>`, the source line, then a caret line. */
function syntaxErrorAt(error: Error, filePath: string): SourceSyntaxError {
  const lines = String(error.stack ?? '').split('\n');
  const header = lines[0] ?? '';
  const line = header.startsWith(filePath + ':') ? Number(header.slice(filePath.length + 1)) : NaN;
  const caret = lines[2] ?? '';
  const at = caret.indexOf('^');
  return Number.isInteger(line) && line >= 1
    ? new SourceSyntaxError(error.message, line - 1, at >= 0 ? at : caret.length)
    : new SourceSyntaxError(error.message, 0, 0);
}

const compiled = new Map<number, CompiledFunction>();
/** Sources that came with calls this worker skipped (see claim): the pool counts them as sent here. */
const skippedSources = new Map<number, string>();

function compile(functionName: string, source: string, filePath: string): CompiledFunction | SourceSyntaxError {
  const sandbox: Record<string, unknown> = functionGlobals(functionName);
  const context = vm.createContext(sandbox, { name: functionName });
  vm.runInContext('globalThis.global = globalThis;', context);
  let evaluate: CompiledFunction['evaluate'];
  try {
    evaluate = vm.compileFunction(source, ['context', 'module'], { filename: filePath, parsingContext: context }) as CompiledFunction['evaluate'];
  } catch (error) {
    // The error comes from the context's realm, so it is no instance of this realm's SyntaxError.
    if ((error as Error | undefined)?.name === 'SyntaxError') return syntaxErrorAt(error as Error, filePath);
    throw error;
  }
  const RealmError = vm.runInContext('Error', context) as ErrorConstructor;
  sandbox.require = createRealmRequire(context, RealmError);
  return { evaluate, sandbox, RealmError, http: createHttpClient(RealmError) };
}

const pendingHostRequests = new Map<number, { callId: number; resolve: (value: unknown) => void; reject: (message: string) => void }>();
let nextRequestId = 1;
/** Documents this worker has decoded, copied out again when the same bytes come back. */
const decodedDocuments = new DecodedDocumentCache();
/**
 * Documents lent to each running call (see protocol.Lent), with the BSON they arrived as. Plain maps
 * dropped when the call ends: a WeakMap entry per document cost more (to add, and to the garbage
 * collector) than anything else the worker did with it.
 */
const lentToCalls = new Map<number, Map<object, { handle: number; bson: Buffer; key: string }>>();

function lend(callId: number, doc: object, handle: number, bson: Buffer, key: string): void {
  let lent = lentToCalls.get(callId);
  if (!lent) lentToCalls.set(callId, (lent = new Map()));
  lent.set(doc, { handle, bson, key });
}

/**
 * The handle of a document lent to this call that the function left as it arrived (so the main thread's
 * own object stands for it): compared with the kept document it was copied from while that is kept, else
 * walked beside its bytes.
 */
function returnedHandle(doc: Record<string, unknown>, callId: number): number | undefined {
  const lent = lentToCalls.get(callId)?.get(doc);
  if (!lent) return undefined;
  return (decodedDocuments.matches(lent.key, doc) ?? encodesAs(doc, lent.bson)) ? lent.handle : undefined;
}

/**
 * Calls the runner gave up on (time limit). What they wait for from the runtime, or still ask for, never
 * settles: their code parks at its next await of the runtime. Refusing instead would let code that retries
 * in a loop (`for (;;) try { await … } catch {}`) spin in microtasks and hold this worker and its other
 * calls until the pool stopped it. Their documents and timers go at once.
 */
const abandoned = new Set<number>();

function abandon(callId: number): void {
  abandoned.add(callId);
  endCall(callId);
  clearTimersOf(callId);
  lentToCalls.delete(callId);
  for (const [rid, pending] of pendingHostRequests) {
    if (pending.callId === callId) pendingHostRequests.delete(rid);
  }
}

function hostRequestFor(callId: number, RealmError: ErrorConstructor): HostRequest {
  return (request) => new Promise((resolve, reject) => {
    if (abandoned.has(callId)) return;
    const rid = nextRequestId++;
    pendingHostRequests.set(rid, { callId, resolve, reject: (message) => reject(new RealmError(message)) });
    post(request.kind === 'service'
      ? { t: 'service', id: callId, rid, service: request.service, action: request.action, payload: encodeValue(request.args) }
      : { t: 'execute', id: callId, rid, name: request.name, payload: encodeValue(request.args) });
  });
}

/** Values and the environment are read synchronously on the platform, so the worker blocks until the runtime answers. */
function syncRequest(request: SyncRequest, RealmError: ErrorConstructor): unknown {
  Atomics.store(init.syncFlag, 0, 0);
  init.syncPort.postMessage(request);
  for (;;) {
    Atomics.wait(init.syncFlag, 0, 0, 100);
    const received = receiveMessageOnPort(init.syncPort);
    if (!received) continue;
    const reply = received.message as SyncReply;
    if (!reply.ok || !reply.payload) throw new RealmError(reply.message ?? 'request failed');
    return uncarry(reply.payload);
  }
}

const SYSTEM_USER = { id: '', type: 'system', data: {}, custom_data: {}, identities: [] };

function createCallContext(callId: number, call: CallPayload, fn: CompiledFunction): Record<string, unknown> {
  const { RealmError } = fn;
  const hostRequest = hostRequestFor(callId, RealmError);
  let environment: unknown;
  return {
    user: call.user ?? SYSTEM_USER,
    request: call.request ?? {},
    runningAsSystem: () => call.runAsSystem,
    get environment() {
      environment ??= syncRequest({ t: 'environment' }, RealmError);
      return environment;
    },
    values: { get: (name: string) => syncRequest({ t: 'value', name: String(name) }, RealmError) },
    services: { get: (name: string) => createServiceClient(String(name), hostRequest) },
    functions: { execute: (name: string, ...args: unknown[]) => hostRequest({ kind: 'execute', name: String(name), args }) },
    http: fn.http,
  };
}

function messageOf(thrown: unknown): string {
  if (thrown !== null && typeof thrown === 'object' && typeof (thrown as { message?: unknown }).message === 'string') {
    return cut((thrown as { message: string }).message);
  }
  if (typeof thrown === 'string') return cut(thrown);
  try {
    return cut(bson.EJSON.stringify(thrown));
  } catch {
    return cut(String(thrown));
  }
}

/** What of a stack is kept: the app's own frames, at most this many characters. */
const MAX_STACK_CHARS = 16 * 1024;

/**
 * The frames of what the function threw that are the app's own code (its file, by its path, and its
 * packages), without the worker's or Node's; undefined when it threw no error or none of its frames are.
 * `stack` is read as the function left it (a string, or nothing).
 */
function stackOf(thrown: unknown): string | undefined {
  if (thrown === null || typeof thrown !== 'object') return undefined;
  let stack: unknown;
  try {
    stack = (thrown as { stack?: unknown }).stack;
  } catch {
    return undefined;
  }
  if (typeof stack !== 'string') return undefined;
  const own = stack.split('\n').filter((line) => /^\s+at /.test(line) && !line.includes(__filename) && !/\(node:|at node:|<anonymous>\)?$/.test(line));
  return own.length > 0 ? own.map((line) => line.trim()).join('\n').slice(0, MAX_STACK_CHARS) : undefined;
}

let lastFunctionName = 'functions';

async function runCall(message: Extract<ToWorker, { t: 'call' }>): Promise<void> {
  const { id, name } = message;
  lastFunctionName = name;
  let fn = compiled.get(message.sourceId);
  if (!fn) {
    const source = message.source ?? skippedSources.get(message.sourceId);
    if (source === undefined) throw new Error(`source of '${name}' was not sent`);
    skippedSources.delete(message.sourceId);
    const result = compile(name, source, message.path);
    if (result instanceof SourceSyntaxError) {
      post({ t: 'syntax', id, reason: result.reason, line: result.line, character: result.character });
      return;
    }
    compiled.set(message.sourceId, result);
    fn = result;
  }
  try {
    const call = uncarry(message.payload) as CallPayload;
    // `exports = f` replaces the global, `module.exports = f` the module's property; whichever changed wins.
    const initialExports = {};
    const moduleObject: { exports: unknown } = { exports: initialExports };
    fn.sandbox.exports = initialExports;
    fn.evaluate(createCallContext(id, call, fn), moduleObject);
    const exported = fn.sandbox.exports !== initialExports ? fn.sandbox.exports : moduleObject.exports;
    if (typeof exported !== 'function') throw new Error(`function '${name}' does not assign a function to exports`);
    const value: unknown = resultOfCall(id, await (exported as (...args: unknown[]) => unknown)(...call.args));
    let encoded: ReturnType<typeof encodeReturned>;
    try {
      encoded = encodeReturned(value, (doc) => returnedHandle(doc, id));
    } catch (error) {
      throw new Error(`the result of function '${name}' cannot be returned: ${messageOf(error)}`);
    }
    post({ t: 'done', id, ...encoded });
  } catch (thrown) {
    const stack = stackOf(thrown);
    post({ t: 'failed', id, message: messageOf(thrown), ...(stack ? { stack } : {}) });
  }
}

// One message per macrotask, with `runningCall` naming the call it concerns, so that the microtasks it
// sets off (the function's code after an await) run before the next message and under its name.
const inbox: ToWorker[] = [];

function onBatch(batch: unknown): void {
  inbox.push(...(batch as ToWorker[]));
  if (receiving) return;
  receiving = true;
  setImmediate(receiveNext);
}

function receiveNext(): void {
  Atomics.store(init.runningCall, 0, 0);
  Atomics.add(init.handled, 0, 1);
  const message = inbox.shift();
  if (!message) {
    receiving = false;
    // Tells the pool this worker has handled all it was sent (what it sent before may have left mid-way).
    outbox.push({ t: 'drained', sealed: (Atomics.load(init.started, 0) & SEALED) !== 0 });
    flush();
    return;
  }
  if (outcomesWaiting && (message.t === 'call' || message.t === 'reply')) leaveInMailbox();
  Atomics.store(init.runningCall, 0, callOf(message));
  receive(message);
  setImmediate(receiveNext);
}

function callOf(message: ToWorker): number {
  if (message.t === 'call') return message.id;
  if (message.t === 'reply') return pendingHostRequests.get(message.rid)?.callId ?? 0;
  return 0;
}

/** Records that this worker starts call number `seq`, unless the pool has sealed it (see WorkerInit.started). */
function claim(seq: number): boolean {
  let seen = Atomics.load(init.started, 0);
  for (;;) {
    if ((seen & SEALED) !== 0) return false;
    const before = Atomics.compareExchange(init.started, 0, seen, seq);
    if (before === seen) return true;
    seen = before;
  }
}

function receive(message: ToWorker): void {
  switch (message.t) {
    case 'call':
      if (!claim(message.seq)) {
        if (message.source !== undefined) skippedSources.set(message.sourceId, message.source);
        post({ t: 'skipped', id: message.id });
        break;
      }
      startCall(message.id);
      runCall(message)
        .catch((error: unknown) => post({ t: 'failed', id: message.id, message: messageOf(error) }))
        .finally(() => {
          endCall(message.id);
          abandoned.delete(message.id);
          lentToCalls.delete(message.id);
          const left = clearTimersOf(message.id);
          if (left > 0) {
            post({ t: 'log', name: message.name, level: 'warn', text: `returned leaving ${left} timer(s) pending (setTimeout/setInterval/setImmediate); they were cleared, as a function's execution ends when it returns` });
          }
        });
      break;
    case 'reply': {
      const pending = pendingHostRequests.get(message.rid);
      if (!pending) break;
      pendingHostRequests.delete(message.rid);
      if (message.ok) pending.resolve(decodeLending(message, (doc, handle, bson, key) => lend(pending.callId, doc, handle, bson, key), decodedDocuments));
      else pending.reject(message.message);
      break;
    }
    case 'ping':
      post({ t: 'pong' });
      break;
    case 'abandon':
      abandon(message.id);
      break;
    case 'reload':
      compiled.clear();
      skippedSources.clear();
      forgetPackages();
      break;
  }
}

// A function's stray promise or timer callback must not take the worker (and its neighbours' calls) down.
process.on('uncaughtException', (error) => post({ t: 'log', name: lastFunctionName, level: 'error', text: `uncaught exception: ${messageOf(error)}` }));
process.on('unhandledRejection', (reason) => post({ t: 'log', name: lastFunctionName, level: 'error', text: `unhandled promise rejection: ${messageOf(reason)}` }));

// Function code runs below the runtime's priority (../priority.ts): the runtime keeps serving promptly
// while functions compute, even one looping until its time limit. On Linux only this thread drops: the
// function process's main thread, which keeps the time limit and watches memory, keeps the runtime's.
yieldToRuntime();
installLongArithmetic(() => Atomics.load(init.runningCall, 0));
// In the function process, this thread must run under a permission model of its own that starts no thread
// and no process (process.ts): without it, it runs no function.
if ('address' in init.link) {
  const permission = (process as unknown as { permission?: { has(scope: string): boolean } }).permission;
  if (!permission || permission.has('worker') || permission.has('child')) {
    process.stderr.write('the function worker does not run under its own permission model; it runs no function\n');
    process.exit(1);
  }
}
lockDown({ functionThread: true });

/** Connects to the runtime's pool; the worker has nothing to do without it, so it ends when the channel does. */
async function connect(): Promise<void> {
  const spec = init.link;
  const opened: BatchLink<FromWorker> = 'port' in spec ? portLink(spec.port) : await connectLink(spec.address, spec.token);
  opened.listen(onBatch, () => process.exit(0));
  opened.hold(true);
  link = opened;
  post({ t: 'ready' });
  flush();
}

connect().catch((error: unknown) => {
  process.stderr.write(`the function worker cannot reach the runtime: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
