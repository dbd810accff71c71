// An app function written as the attacker of issue 33 (item 1): it looks for a `process` by every route out
// of its vm context it knows, and with any it finds starts threads and processes in every shape that could
// shed Node's permission model (a Worker given `execArgv`, `env`, `resourceLimits`; eval, data: URL and
// file workers; child_process by any route; the spawn_sync binding), each trying to read the files it is
// given, write a marker file and run `id` into another. It also tries the modules that start threads or
// processes directly. It returns what it reached and every outcome ('refused: …' or what it got), so what
// it gained shows in the response. Used by test/dist/function-boundary.test.ts and by
// `npm run reliability` (the security part's function escapes). Input: { files, marker, runtimePid, ownFile }.

// Run as a worker thread's entry (the file worker below starts this very file): outside any vm context.
if (typeof context === 'undefined' && typeof require === 'function') {
  const { workerData, parentPort } = require('worker_threads');
  if (workerData && workerData.escape) {
    const fs = require('fs');
    const out = {};
    for (const file of workerData.escape.files) {
      try { out['read ' + file] = fs.readFileSync(file, 'latin1'); } catch (error) { out['read ' + file] = 'refused: ' + error.code; }
    }
    try { fs.writeFileSync(workerData.escape.marker + '-file-worker', 'x'); out.write = 'written'; } catch (error) { out.write = 'refused: ' + error.code; }
    try { require('child_process').execSync('id > ' + JSON.stringify(workerData.escape.marker + '-file-worker-id')); out.id = 'ran'; } catch (error) { out.id = 'refused: ' + error.code; }
    parentPort.postMessage(out);
  }
}

exports = async function (input) {
  const reached = [];
  const procs = [];
  const found = (route, value) => {
    if (value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.pid === 'number' && !procs.includes(value)) {
      reached.push(route);
      procs.push(value);
    }
  };
  const tryRoute = (route, get) => { try { found(route, get()); } catch (error) { /* closed */ } };
  const compile = (fn) => {
    const value = fn('return process')();
    // This realm's AsyncFunction answers with a promise that rejects (`process` is not defined here).
    if (value && typeof value.then === 'function') value.then(undefined, () => undefined);
    return value;
  };
  const chains = (label, value) => {
    if (value === null || value === undefined) return;
    tryRoute(label + '.constructor.constructor', () => compile(value.constructor.constructor));
    tryRoute(label + '.__proto__', () => compile(value.__proto__.constructor.constructor));
    tryRoute(label + ' prototype chain', () => {
      let p = value;
      while (Object.getPrototypeOf(p)) p = Object.getPrototypeOf(p);
      return compile(p.constructor.constructor);
    });
    tryRoute(label + ' as a function kind', () => compile(Object.getPrototypeOf(value).constructor));
    tryRoute(label + ' via descriptors', () => compile(Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Object.getPrototypeOf(value.constructor) || value), 'constructor').value));
    tryRoute(label + ' Reflect', () => compile(Reflect.getPrototypeOf(Reflect.getPrototypeOf(value).constructor).constructor));
  };

  // Every object the platform hands a function, and what its calls give back.
  const atlas = context.services.get('mongodb-atlas');
  const collection = atlas.db('db').collection('c');
  const pending = context.functions.execute('giveObject');
  const objects = {
    context, user: context.user, request: context.request, values: context.values, valuesGet: context.values.get,
    services: context.services, atlas, collection, find: collection.find({}), functions: context.functions, execute: context.functions.execute,
    http: context.http, httpGet: context.http.get, runningAsSystem: context.runningAsSystem, console, consoleLog: console.log,
    BSON, EJSON, ObjectId: BSON.ObjectId, objectId: new BSON.ObjectId(), long: BSON.Long.fromNumber(1), decimal: BSON.Decimal128.fromString('1'),
    binary: new BSON.Binary(Buffer.from('x')), Buffer, buffer: Buffer.from('x'), require, setTimeout, timer: setTimeout(() => {}, 0),
    URL, url: new URL('http://x.test/'), TextEncoder, encoded: new TextEncoder().encode('x'), AbortController, signal: new AbortController().signal,
    input, argumentsObject: arguments, module, pending, crypto: require('crypto'), util: require('util'), events: require('events'), net: require('net'),
  };
  clearTimeout(objects.timer);
  try { objects.result = await pending; } catch (error) { objects.resultError = error; }
  try { objects.fetched = fetch; objects.headers = new Headers(); } catch (error) { objects.fetchError = error; }
  for (const [label, value] of Object.entries(objects)) chains(label, value);

  // Errors thrown by host code: the runtime's answers, the platform's objects, Node's modules, a stack overflow in a host frame.
  const throwers = {
    missingModule: () => require('no-such-package'),
    refusedModule: () => require('worker_threads'),
    values: () => context.values.get({ toString() { throw new Error('x'); } }),
    buffer: () => Buffer.from(Symbol('x')),
    objectId: () => new BSON.ObjectId('zz'),
    ejson: () => EJSON.parse('{'),
    http: () => context.http.get(5),
    hostRejection: () => context.functions.execute('throwsHost'),
    service: () => collection.deleteMany({}),
    crypto: () => require('crypto').createHash('nope'),
    overflow: () => { const deep = () => EJSON.stringify({ toJSON: deep }); return deep(); },
    overflowInBuffer: () => { const deep = () => Buffer.from({ valueOf: deep, length: 1 }); return deep(); },
  };
  const errors = {};
  for (const [label, thrower] of Object.entries(throwers)) {
    try { await thrower(); } catch (error) { errors[label] = error; chains('error from ' + label, error); }
  }

  // Stack traces: call sites of host frames, in this realm's and (through a host error's constructor) the host realm's Error.
  const inspectFrames = (origin) => (error, frames) => {
    for (const frame of frames) {
      chains(origin + ' call site', frame);
      for (const getter of ['getThis', 'getFunction']) {
        try {
          const value = frame[getter]();
          if (value) { found(origin + ' ' + getter + '().process', value.process); chains(origin + ' ' + getter + '()', value); }
        } catch (e) { /* closed */ }
      }
    }
    return 'trace';
  };
  Error.prepareStackTrace = inspectFrames('this realm');
  for (const error of Object.values(errors)) {
    try {
      if (error && error.constructor && error.constructor !== Error) error.constructor.prepareStackTrace = inspectFrames('host realm');
    } catch (e) { /* closed */ }
  }
  const callers = (label, fn) => {
    const callerOf = (f) => { try { return f.caller; } catch (e) { return null; } };
    for (let c = callerOf(fn), depth = 0; c && depth < 20; c = callerOf(c), depth++) {
      const caller = c;
      tryRoute(label + ' caller', () => compile(caller.constructor));
    }
  };
  function fromHost() {
    try { void new Error('from a callback').stack; callers('callback', fromHost); } catch (e) { /* closed */ }
    return 1;
  }
  try { EJSON.stringify({ toJSON: fromHost }); } catch (e) { /* closed */ }
  try { require('util').inspect({ [require('util').inspect.custom]: fromHost }); } catch (e) { /* closed */ }
  try { const emitter = new (require('events'))(); emitter.on('x', fromHost); emitter.emit('x'); } catch (e) { /* closed */ }
  try { [1].forEach(fromHost); } catch (e) { /* closed */ }
  await new Promise((resolve) => setTimeout(() => { fromHost(); resolve(); }, 0));
  await Promise.resolve().then(fromHost);
  for (const thrower of Object.values(throwers)) { try { await thrower(); } catch (error) { try { void error.stack; } catch (e) { /* closed */ } } }
  try { void new Error('here').stack; } catch (e) { /* closed */ }
  (function sloppyCaller() { callers('own function', sloppyCaller); })();
  Error.prepareStackTrace = undefined;

  // Modules that start threads or processes, asked for directly.
  const outcomes = {};
  const attempt = async (name, run) => {
    try {
      const value = await run();
      outcomes[name] = typeof value === 'string' ? value : JSON.stringify(value === undefined ? 'done' : value);
    } catch (error) {
      outcomes[name] = 'refused: ' + String(error && (error.code || error.message));
    }
  };
  for (const name of ['worker_threads', 'child_process', 'cluster', 'vm', 'module', 'v8', 'inspector', 'wasi', 'process', 'fs']) {
    await attempt('require ' + name, () => { require(name); return 'loaded'; });
  }
  await attempt('import()', () => import('node:worker_threads').then(() => 'loaded'));

  // With every process reached: threads and processes in each shape.
  const escape = { files: input.files, marker: input.marker };
  const threadCode = 'const fs = require("fs"); const out = {}; const e = ' + JSON.stringify(escape) + ';'
    + 'for (const f of e.files) { try { out["read " + f] = fs.readFileSync(f, "latin1"); } catch (x) { out["read " + f] = "refused: " + x.code; } }'
    + 'try { fs.writeFileSync(e.marker + "-" + require("worker_threads").workerData, "x"); out.write = "written"; } catch (x) { out.write = "refused: " + x.code; }'
    + 'try { require("child_process").execSync("id > " + JSON.stringify(e.marker + "-id-" + require("worker_threads").workerData)); out.id = "ran"; } catch (x) { out.id = "refused: " + x.code; }'
    + 'require("worker_threads").parentPort.postMessage(out);';
  const moduleCode = 'import fs from "node:fs"; import cp from "node:child_process"; import { parentPort } from "node:worker_threads"; const out = {}; const e = ' + JSON.stringify(escape) + ';'
    + 'for (const f of e.files) { try { out["read " + f] = fs.readFileSync(f, "latin1"); } catch (x) { out["read " + f] = "refused: " + x.code; } }'
    + 'try { fs.writeFileSync(e.marker + "-data-url", "x"); out.write = "written"; } catch (x) { out.write = "refused: " + x.code; }'
    + 'try { cp.execSync("id > " + JSON.stringify(e.marker + "-data-url-id")); out.id = "ran"; } catch (x) { out.id = "refused: " + x.code; }'
    + 'parentPort.postMessage(out);';
  for (const [n, proc] of procs.entries()) {
    const load = (name) => (typeof proc.getBuiltinModule === 'function' ? proc.getBuiltinModule(name) : proc.mainModule.require(name));
    const thread = (label, make) => attempt(`process ${n}: ${label}`, () => new Promise((resolve, reject) => {
      const worker = make(load('worker_threads'));
      const timer = setTimeout(() => { worker.terminate(); reject(new Error('no answer')); }, 5000);
      worker.on('message', (message) => { clearTimeout(timer); resolve(message); });
      worker.on('error', (error) => { clearTimeout(timer); reject(error); });
    }));
    const shapes = {
      'inherited': {}, 'execArgv []': { execArgv: [] }, "execArgv ['--no-warnings']": { execArgv: ['--no-warnings'] },
      "execArgv ['--expose-gc']": { execArgv: ['--expose-gc'] }, 'env': { env: { ESCAPE: '1' } }, 'resourceLimits': { resourceLimits: { maxOldGenerationSizeMb: 64 } },
      'execArgv [] with env and resourceLimits': { execArgv: [], env: {}, resourceLimits: { maxOldGenerationSizeMb: 64 } },
    };
    for (const [label, options] of Object.entries(shapes)) {
      const id = label.replace(/[^a-z]+/gi, '_');
      await thread('eval worker, ' + label, (wt) => new wt.Worker(threadCode, { eval: true, workerData: id, ...options }));
    }
    await thread('env: SHARE_ENV', (wt) => new wt.Worker(threadCode, { eval: true, workerData: 'share_env', env: wt.SHARE_ENV, execArgv: [] }));
    await thread('data: URL worker, execArgv []', (wt) => new wt.Worker(new URL('data:text/javascript,' + encodeURIComponent(moduleCode)), { execArgv: [] }));
    if (input.ownFile) await thread('file worker (this function\'s file), execArgv []', (wt) => new wt.Worker(input.ownFile, { execArgv: [], workerData: { escape } }));
    await attempt(`process ${n}: child_process.execSync`, () => String(load('child_process').execSync('id > ' + JSON.stringify(input.marker + '-exec'))));
    await attempt(`process ${n}: child_process.spawnSync`, () => { const r = load('child_process').spawnSync('/bin/sh', ['-c', 'id > ' + JSON.stringify(input.marker + '-spawn')]); if (r.error) throw r.error; return 'ran'; });
    await attempt(`process ${n}: cluster.fork`, () => { load('cluster').fork(); return 'forked'; });
    await attempt(`process ${n}: spawn_sync binding`, () => proc.binding('spawn_sync').spawn({ file: '/bin/sh', args: ['/bin/sh', '-c', 'id > ' + JSON.stringify(input.marker + '-binding')], stdio: [] }));
    await attempt(`process ${n}: dlopen`, () => proc.dlopen({ exports: {} }, input.marker + '.node'));
    for (const file of input.files) await attempt(`process ${n}: read ${file}`, () => load('fs').readFileSync(file, 'latin1'));
    await attempt(`process ${n}: signal the runtime`, () => proc.kill(input.runtimePid, 0));
  }
  return { escaped: procs.length > 0, reached, outcomes };
};
