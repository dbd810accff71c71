// App functions cannot escape to the runtime (issue 21, part 1; issue 33, item 1): each known way out of a
// `vm` context, as a hostile function of one app served with another by `dist/cli.js serve` over real HTTP.
// Every escape that reaches a `process` object tries to read the data folder's key material and the other
// app's secret, to write a file, to run a shell command, to start a thread that writes (in every shape that
// could shed the permission model: test/reliability/escape-worker.js), and to signal the runtime; the test
// asserts by side effect: no marker file, no secret or planted file in any response (raw, hex or base64),
// the runtime alive. Since issue 33 no route reaches a `process` at all (the host realm's function
// constructors refuse, runtime/functions/lockdown.ts): the escapes that used to are asserted to fail.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EJSON } from 'bson';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';
import { registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

const VICTIM_SECRET = `victim-secret-${Math.random().toString(36).slice(2)}`;
const PLANTED = `planted-outside-every-app-${Math.random().toString(36).slice(2)}`;
const ESCAPE_WORKER = fs.readFileSync(path.join(__dirname, '..', 'reliability', 'escape-worker.js'), 'utf8');

/**
 * What an escaped function does with the `process` it reached: every attempt's outcome is returned, so a
 * secret read would show in the response. `input`: the files to read, the marker files' stem, the
 * runtime's pid.
 */
const ATTACK = `
async function attack(proc, input) {
  const out = { escaped: proc !== null && typeof proc === 'object' && typeof proc.pid === 'number', outcomes: {} };
  if (!out.escaped) return out;
  const record = async (name, attempt) => {
    try {
      const value = await attempt();
      out.outcomes[name] = value && typeof value === 'object' && typeof value.length === 'number'
        ? { latin1: Buffer.from(value).toString('latin1'), hex: Buffer.from(value).toString('hex'), base64: Buffer.from(value).toString('base64') }
        : String(value);
    } catch (error) {
      out.outcomes[name] = 'refused: ' + String(error && (error.code || error.message));
    }
  };
  const load = (name) => {
    if (typeof proc.getBuiltinModule === 'function') return proc.getBuiltinModule(name);
    if (proc.mainModule) return proc.mainModule.require(name);
    throw new Error('no module loader');
  };
  for (const file of input.files) await record('read ' + file, () => load('fs').readFileSync(file));
  await record('list data folder', () => load('fs').readdirSync(input.dataDir).join(','));
  await record('environment', () => JSON.stringify(proc.env));
  await record('write', () => load('fs').writeFileSync(input.marker + '-write', 'x'));
  await record('exec', () => load('child_process').execSync('echo x > ' + input.marker + '-exec'));
  await record('spawn_sync binding', () => proc.binding('spawn_sync').spawn({ file: '/bin/sh', args: ['/bin/sh', '-c', 'echo x > ' + input.marker + '-binding'], stdio: [] }));
  await record('fs binding', () => proc.binding('fs'));
  await record('addon', () => proc.dlopen({ exports: {} }, input.marker + '.node'));
  await record('inspector', () => load('inspector').open(0));
  await record('thread', () => new Promise((resolve, reject) => {
    const Worker = load('worker_threads').Worker;
    const thread = new Worker('require("fs").writeFileSync(' + JSON.stringify(input.marker + '-thread') + ', "x")', { eval: true });
    thread.on('error', reject);
    thread.on('exit', resolve);
  }));
  await record('signal the runtime', () => proc.kill(input.runtimePid, 'SIGKILL'));
  await record('lower the priority of the runtime', () => load('os').setPriority(input.runtimePid, 19));
  await record('find where a file is', () => load('fs').realpathSync(input.files[0]));
  return out;
}
`;

/** Out of the vm context, connects to the runtime's socket for function workers as an intruder would. */
const PROBE_CHANNEL = `
async function probeChannel(context) {
  const proc = context.constructor.constructor('return process')();
  const net = proc.getBuiltinModule('net');
  const v8 = proc.getBuiltinModule('v8');
  const { workerData } = proc.getBuiltinModule('worker_threads');
  const frame = (value) => { const body = v8.serialize(value); const head = Buffer.alloc(4); head.writeUInt32LE(body.length); return Buffer.concat([head, body]); };
  const forged = [];
  for (let id = 1; id <= 200; id++) forged.push({ t: 'done', id, payload: 'forged' }, { t: 'service', id, rid: 1, service: 'mongodb-atlas', action: 'deleteMany', payload: 'x' });
  const attempt = (bytes) => new Promise((resolve) => {
    const out = { connected: false, closedByServer: false, received: 0 };
    const socket = net.connect(workerData.link.address);
    const timer = setTimeout(() => { socket.destroy(); resolve(out); }, 3000);
    socket.on('connect', () => { out.connected = true; socket.write(bytes); });
    socket.on('data', (chunk) => { out.received += chunk.length; });
    socket.on('error', () => undefined);
    socket.on('close', () => { clearTimeout(timer); out.closedByServer = out.connected; resolve(out); });
  });
  const outcomes = {
    usedToken: await attempt(Buffer.concat([frame(workerData.link.token), frame(forged)])),
    guessedToken: await attempt(Buffer.concat([frame('0'.repeat(48)), frame(forged)])),
    noToken: await attempt(frame(forged)),
    oversized: await attempt(Buffer.from([0xff, 0xff, 0xff, 0x7f])),
  };
  return { proc, frame, forged, outcomes };
}
`;

/** Hostile functions: each gets hold of a `process` its own way, then attacks with it. */
const HOSTILE: Record<string, string> = {
  contextChain: `exports = (input) => attack(context.constructor.constructor('return process')(), input);`,
  contextFunctionChain: `exports = (input) => attack(context.values.get.constructor('return process')(), input);`,
  argumentChain: `exports = (input) => attack(input.constructor.constructor('return process')(), input);`,
  resultChain: `exports = async (input) => {
    const result = await context.functions.execute('giveObject');
    return attack(result.constructor.constructor('return process')(), input);
  };`,
  errorChain: `exports = (input) => {
    try { require('no-such-package'); } catch (error) { return attack(error.constructor.constructor('return process')(), input); }
    return { escaped: false };
  };`,
  promiseChain: `exports = (input) => {
    const pending = context.functions.execute('giveObject');
    return attack(pending.constructor.constructor('return process')(), input);
  };`,
  returnedThenable: `exports = (input) => ({
    then(resolve, reject) {
      attack(resolve.constructor.constructor('return process')(), input).then(resolve, reject);
    },
  });`,
  prepareStackTrace: `exports = async (input) => {
    let reached = null;
    Error.prepareStackTrace = (error, frames) => {
      for (const frame of frames) {
        try {
          const fn = frame.getFunction() || frame.getThis();
          if (fn && !reached) reached = fn.constructor.constructor('return process')();
        } catch {}
      }
      return 'trace';
    };
    try { null.boom; } catch (error) { void error.stack; }
    try { await context.functions.execute('throwsHost'); } catch (error) { void error.stack; }
    try { require('no-such-package'); } catch (error) { void error.stack; }
    return attack(reached, input);
  };`,
  bindingAndBuiltins: `exports = (input) => {
    const proc = Buffer.constructor.constructor('return process')();
    return attack({ pid: proc.pid, env: proc.env, getBuiltinModule: (name) => proc.binding(name), binding: proc.binding.bind(proc), dlopen: proc.dlopen.bind(proc), kill: (...a) => proc.kill(...a) }, input)
      .then(async (viaBinding) => ({ viaBinding, viaBuiltins: await attack(proc, input) }));
  };`,
  dynamicImport: `exports = async (input) => {
    const outcomes = {};
    for (const name of ['node:fs', 'node:child_process', 'node:process']) {
      try {
        const mod = await import(name);
        outcomes[name] = name === 'node:fs' ? String(mod.readFileSync(input.files[0])) : name === 'node:child_process' ? String(mod.execSync('echo x > ' + input.marker + '-import')) : await attack(mod.default, input);
      } catch (error) { outcomes[name] = 'refused: ' + String(error && (error.code || error.message)); }
    }
    return outcomes;
  };`,
  calleeCaller: `exports = function (input) {
    let caller = arguments.callee.caller;
    for (let depth = 0; caller && depth < 20; depth++) {
      try { return attack(caller.constructor('return process')(), input); } catch {}
      caller = caller.caller;
    }
    return { escaped: false };
  };`,
  pollution: `exports = (input) => {
    let hostObjectPrototype = Buffer.from('');
    while (Object.getPrototypeOf(hostObjectPrototype)) hostObjectPrototype = Object.getPrototypeOf(hostObjectPrototype);
    hostObjectPrototype.polluted = 'yes';
    Object.prototype.pollutedInside = 'yes';
    BSON.EJSON.stringify = () => 'polluted';
    return attack(hostObjectPrototype.constructor.constructor('return process')(), input);
  };`,
  // The worker's own channel to the runtime (runtime/functions/channel.ts), reached out of the vm context:
  // new connections with its (used) token, a guessed one, none, or an oversized frame; then (channelAttack)
  // forged frames on its own connection (outcomes of calls it does not run, requests for them) and a frame
  // over the limit.
  channelProbe: `exports = async () => (await probeChannel(context)).outcomes;`,
  channelAttack: `exports = async () => {
    const { proc, frame, forged, outcomes } = await probeChannel(context);
    const own = proc._getActiveHandles().filter((h) => h && typeof h.write === 'function' && h.constructor && h.constructor.name === 'Socket');
    for (const socket of own) socket.write(Buffer.concat([frame(forged), frame([{ t: 'nonsense' }]), Buffer.from([0xff, 0xff, 0xff, 0x7f])]));
    await new Promise((resolve) => setTimeout(resolve, 500));
    return { outcomes, ownSockets: own.length };
  };`,
  // Its worker's mailbox (runtime/functions/mailbox.ts), which the agent reads when the worker stops: forged
  // outcomes for ids 1–200, then a chunk announcing 2 GiB of garbage; then the worker thread exits.
  mailboxAttack: `exports = () => {
    const proc = context.constructor.constructor('return process')();
    const v8 = proc.getBuiltinModule('v8');
    const { workerData } = proc.getBuiltinModule('worker_threads');
    const header = new Int32Array(workerData.mailbox, 0, 2);
    const view = new DataView(workerData.mailbox, 8);
    const bytes = new Uint8Array(workerData.mailbox, 8);
    const forged = [];
    for (let id = 1; id <= 200; id++) forged.push({ t: 'done', id, payload: 'forged' });
    const chunk = v8.serialize(forged);
    view.setUint32(0, chunk.length, true);
    bytes.set(chunk, 4);
    view.setUint32(4 + chunk.length, 0x7fffffff, true);
    bytes.fill(0xee, 8 + chunk.length, 8 + chunk.length + 4096);
    Atomics.store(header, 1, 8 + chunk.length + 4096);
    Atomics.store(header, 0, 2);
    proc.exit(0);
  };`,
  // Bytes that are no message, written to every file descriptor of the function process: its pipes and
  // sockets to the runtime among them (once an IPC channel, whose garbage stopped the runtime).
  fdAttack: `exports = () => {
    const proc = context.constructor.constructor('return process')();
    const fs = proc.getBuiltinModule('fs');
    // A 6-byte message (big-endian length, as Node's IPC frames it) holding V8's header and an unknown tag.
    const garbage = Buffer.concat([Buffer.from([0, 0, 0, 6, 0xff, 0x0f, 0x99, 0x99, 0x99, 0x99]), Buffer.alloc(64, 0xee)]);
    const written = [];
    for (let fd = 0; fd < 256; fd++) {
      try { fs.writeSync(fd, garbage); written.push(fd); } catch {}
    }
    return { written };
  };`,
  // Writes 64 KiB chunks to stderr for 2 s: as many as the runtime reads.
  stderrFlood: `exports = () => {
    const fs = context.constructor.constructor('return process')().getBuiltinModule('fs');
    const chunk = Buffer.alloc(65536, 0x41);
    let written = 0;
    // The pipe is non-blocking here: a full one refuses the write (EAGAIN), and the loop tries again.
    for (const until = Date.now() + 2000; Date.now() < until;) { try { fs.writeSync(2, chunk); written++; } catch {} }
    return written;
  };`,
  // Functions may require 'os', whose setPriority reaches any process of the user.
  reniceRuntime: `exports = (input) => {
    try { require('os').setPriority(input.runtimePid, 19); return 'lowered'; } catch (error) { return 'refused: ' + (error.code || error.message); }
  };`,
  giveObject: `exports = () => ({ an: 'object' });`,
  throwsHost: `exports = () => { throw new Error('thrown'); };`,
  innocent: `exports = (x) => ({ x, keys: Object.keys({}) });`,
  // Issue 33: every route to a process, then threads and processes in every shape.
  escapeWorker: ESCAPE_WORKER,
};

function attackerApp(): Record<string, unknown> {
  const files: Record<string, unknown> = {
    ...baseApp(),
    'realm_config.json': { config_version: 20210101, app_id: 'attacker-aaaaa', name: 'attacker', location: 'US-VA', deployment_model: 'GLOBAL' },
    'functions/config.json': Object.keys(HOSTILE).map((name) => ({ name, private: false })),
  };
  for (const [name, body] of Object.entries(HOSTILE)) files[`functions/${name}.js`] = `${ATTACK}\n${PROBE_CHANNEL}\n${body}\n`;
  return files;
}

function victimApp(): Record<string, unknown> {
  return {
    ...baseApp(),
    'realm_config.json': { config_version: 20210101, app_id: 'victim-vvvvv', name: 'victim', location: 'US-VA', deployment_model: 'GLOBAL' },
    'secrets.json': { victimSecret: VICTIM_SECRET },
    'values/fromSecret.json': { name: 'fromSecret', from_secret: true, value: 'victimSecret' },
  };
}

/** Every file under `dir`. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath ?? e.path, e.name));
}

/** A process's nice value (its main thread's), from /proc. */
function niceOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

/** The ways a secret could show in a response body. */
function encodings(secret: Buffer): string[] {
  return [secret.toString('hex'), secret.toString('base64'), secret.toString('base64url'), secret.toString('latin1')].filter((s) => s.length >= 16);
}

describe('functions behind the process boundary (dist/cli.js serve, two apps)', { timeout: 240_000 }, () => {
  let root: string;
  let served: ServedDist;
  let attackerUrl: string;
  let token: string;
  let victimToken: string;
  let markerDir: string;
  let dataDir: string;
  const secrets: { name: string; forms: string[] }[] = [];
  let runtimeNice: number | undefined;

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-boundary-'));
    writeApp(attackerApp(), path.join(root, 'attacker'));
    writeApp(victimApp(), path.join(root, 'victim'));
    markerDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-boundary-markers-'));
    fs.writeFileSync(path.join(root, 'planted.txt'), PLANTED);
    served = await serveDist({ appDir: root, args: ['--no-watch'] });
    attackerUrl = `${served.url}/api/client/v2.0/app/attacker-aaaaa`;
    token = (await registerAndLogIn(attackerUrl, 'mallory@example.com', 'password1')).access_token;
    victimToken = (await registerAndLogIn(`${served.url}/api/client/v2.0/app/victim-vvvvv`, 'victim@example.com', 'password1')).access_token;
    dataDir = served.child.spawnargs[served.child.spawnargs.indexOf('--data') + 1]!;
    if (process.platform === 'linux') runtimeNice = niceOf(served.child.pid!);
    for (const file of filesUnder(dataDir)) {
      if (['token-secret', 'api-key.json', 'runtime.json'].includes(path.basename(file))) secrets.push({ name: path.relative(dataDir, file), forms: encodings(fs.readFileSync(file)) });
    }
    secrets.push({ name: 'the victim app\'s secrets.json value', forms: [VICTIM_SECRET, Buffer.from(VICTIM_SECRET).toString('hex'), Buffer.from(VICTIM_SECRET).toString('base64')] });
    secrets.push({ name: 'a file planted outside every app', forms: [PLANTED, Buffer.from(PLANTED).toString('hex'), Buffer.from(PLANTED).toString('base64')] });
  });

  after(async () => {
    await served?.close();
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(markerDir, { recursive: true, force: true });
  });

  async function call(name: string, marker: string): Promise<{ status: number; text: string }> {
    const input = {
      files: [...filesUnder(dataDir).filter((f) => /token-secret$|api-key\.json$|runtime\.json$/.test(f)), path.join(root, 'victim', 'secrets.json'), path.join(root, 'planted.txt')],
      dataDir, marker: path.join(markerDir, marker), runtimePid: served.child.pid, ownFile: path.join(root, 'attacker', 'functions', `${name}.js`),
    };
    const res = await fetch(`${attackerUrl}/functions/call`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` }, body: JSON.stringify({ name, arguments: [input] }),
    });
    return { status: res.status, text: await res.text() };
  }

  function assertNothingGained(name: string, response: { status: number; text: string }): void {
    assert.ok(response.status === 200 || (response.status >= 400 && response.status < 500), `${name}: answered ${response.status}: ${response.text.slice(0, 300)}`);
    assert.ok(secrets.length >= 3, 'the data folder holds the admin and app key material');
    for (const secret of secrets) {
      for (const form of secret.forms) assert.ok(!response.text.includes(form), `${name}: the response holds ${secret.name}`);
    }
    assert.deepEqual(fs.readdirSync(markerDir), [], `${name}: a marker file was written`);
    assert.equal(served.child.exitCode, null, `${name}: the runtime stopped`);
    assert.equal(served.child.signalCode, null, `${name}: the runtime was signalled`);
    if (process.platform === 'linux') assert.equal(niceOf(served.child.pid!), runtimeNice, `${name}: the runtime's priority changed`);
  }

  /**
   * The call failed (4xx) because the route to a process is closed (the host realm's constructors refuse, or
   * the chain ends in the function's own realm, where there is no `process`), or answered that it reached none.
   */
  function assertNoProcess(name: string, response: { status: number; text: string }): void {
    if (response.status === 200) assert.doesNotMatch(response.text, /"escaped":\s*true/, `${name}: reached a process`);
    else assert.match(response.text, /not available to functions|process is not defined/, `${name}: failed otherwise than by the refusal: ${response.text.slice(0, 300)}`);
  }

  // Escapes that reached the function process's `process` before issue 33: now none does.
  const reaching = ['contextChain', 'contextFunctionChain', 'argumentChain', 'resultChain', 'errorChain', 'promiseChain', 'pollution'];
  for (const name of reaching) {
    test(`${name}: the escape reaches no process, and gains nothing`, async () => {
      const response = await call(name, name);
      assertNothingGained(name, response);
      assertNoProcess(name, response);
    });
  }

  test('issue 33: no route from function code reaches a process, and no thread or process starts in any shape', async () => {
    const response = await call('escapeWorker', 'escapeWorker');
    assertNothingGained('escapeWorker', response);
    assert.equal(response.status, 200, response.text);
    const body = EJSON.parse(response.text, { relaxed: true }) as { escaped: boolean; reached: string[]; outcomes: Record<string, string> };
    assert.deepEqual(body.reached, [], 'routes out of the vm context to a process');
    assert.ok(Object.keys(body.outcomes).length >= 11, 'the direct attempts ran');
    for (const [attempt, outcome] of Object.entries(body.outcomes)) assert.match(outcome, /^refused: /, `${attempt} was not refused: ${outcome.slice(0, 300)}`);
  });

  for (const name of ['returnedThenable', 'prepareStackTrace', 'bindingAndBuiltins', 'dynamicImport', 'calleeCaller']) {
    test(`${name}: gains no file, process, signal or secret`, async () => {
      const response = await call(name, name);
      assertNothingGained(name, response);
      assert.doesNotMatch(response.text, /"(latin1|hex|base64)":/, 'no file was read');
    });
  }

  test('the channel to the runtime: no connection without a fresh token, forged frames reach no other call', async () => {
    const victimCall = (taskId: string) => fetch(`${served.url}/api/client/v2.0/app/victim-vvvvv/functions/call`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${victimToken}` },
      body: JSON.stringify({ name: 'renameTask', arguments: [{ taskId, name: 'genuine' }] }),
    });
    const during = victimCall('during');
    const response = await call('channelAttack', 'channelAttack');
    assertNothingGained('channelAttack', response);
    // The socket is out of reach since issue 33 (no process). Were it reached: a worker may report its own
    // calls' outcomes, so the forged ones would end this very call (or its frame over the limit its worker's
    // link): it fails either way (the channel's own checks: test/runtime/functions-channel.test.ts).
    assert.notEqual(response.status, 200, `the forged frames on its own channel went unnoticed: ${response.text}`);
    assert.ok(response.status < 500, response.text);
    assertNoProcess('channelAttack', response);
    const victim = await during;
    assert.equal(victim.status, 200);
    assert.deepEqual(await victim.json(), { _id: 'during', name: 'genuine' });
    const innocent = await call('innocent', 'innocent-after-channel');
    assert.equal(innocent.status, 200, innocent.text);
    assert.equal(served.child.exitCode, null);
  });

  test('a forged and broken mailbox, read when its worker stops, reaches no other call and stops nothing', async () => {
    const victimCall = fetch(`${served.url}/api/client/v2.0/app/victim-vvvvv/functions/call`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${victimToken}` },
      body: JSON.stringify({ name: 'renameTask', arguments: [{ taskId: 'mailbox', name: 'genuine' }] }),
    });
    const response = await call('mailboxAttack', 'mailboxAttack');
    assertNothingGained('mailboxAttack', response);
    // Out of reach since issue 33; were it reached, its worker would exit under it, or a forged outcome for
    // its own id end it first: either way it fails.
    assert.notEqual(response.status, 200, response.text);
    assert.ok(response.status < 500, response.text);
    assertNoProcess('mailboxAttack', response);
    const victim = await victimCall;
    assert.equal(victim.status, 200);
    assert.deepEqual(await victim.json(), { _id: 'mailbox', name: 'genuine' });
    const innocent = await call('innocent', 'innocent-after-mailbox');
    assert.equal(innocent.status, 200, innocent.text);
  });

  test('the channel attack, without its own frame over the limit, reaches no socket (and every new connection is refused)', async () => {
    const response = await call('channelProbe', 'channelProbe');
    assertNothingGained('channelProbe', response);
    if (response.status === 200) {
      const body = EJSON.parse(response.text, { relaxed: true }) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ['guessedToken', 'noToken', 'oversized', 'usedToken']);
      for (const [name, outcome] of Object.entries(body)) assert.deepEqual(outcome, { connected: true, closedByServer: true, received: 0 }, name);
    }
    assertNoProcess('channelProbe', response);
  });

  test('a function cannot lower the runtime\'s priority with the os module functions may require', async () => {
    const response = await call('reniceRuntime', 'reniceRuntime');
    assertNothingGained('reniceRuntime', response);
    assert.equal(response.status, 200, response.text);
    assert.match(JSON.parse(response.text) as string, /^refused: /);
  });

  test('a function flooding stderr waits for the runtime, which reads at a bounded rate', async () => {
    const response = await call('stderrFlood', 'stderrFlood');
    assertNothingGained('stderrFlood', response);
    // Its descriptor is out of reach since issue 33. Before: read as fast as it came, 1,266 chunks in 2 s in
    // this suite, 44,389 in 3 s alone (2.5 s of the runtime's CPU); held back by the full pipe at ~256 KiB a
    // second: ~15.
    if (response.status === 200) {
      const written = Number(EJSON.parse(response.text));
      assert.ok(written < 200, `${written} chunks of 64 KiB were read in 2 s`);
    }
    assertNoProcess('stderrFlood', response);
  });

  test('garbage written to every file descriptor of the function process stops neither the runtime nor the other app', async () => {
    const victimCall = (taskId: string) => fetch(`${served.url}/api/client/v2.0/app/victim-vvvvv/functions/call`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${victimToken}` },
      body: JSON.stringify({ name: 'renameTask', arguments: [{ taskId, name: 'genuine' }] }),
    });
    const response = await call('fdAttack', 'fdAttack');
    assertNothingGained('fdAttack', response);
    // Out of reach since issue 33; were it reached, its own links broken, the attacker's function process
    // would be done for, and the call may fail with it.
    assert.ok(response.status < 500, response.text);
    assertNoProcess('fdAttack', response);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assertNothingGained('fdAttack (after)', { status: 200, text: '' });
    const victim = await victimCall('after-fd-attack');
    assert.equal(victim.status, 200);
    assert.deepEqual(await victim.json(), { _id: 'after-fd-attack', name: 'genuine' });
    // The attacker's app gets a new function process.
    let innocent = await call('innocent', 'innocent-after-fd-attack');
    if (innocent.status !== 200) innocent = await call('innocent', 'innocent-after-fd-attack-2');
    assert.equal(innocent.status, 200, innocent.text);
  });

  test('after the pollution, the runtime and the other app answer as before', async () => {
    assertNothingGained('pollution', await call('pollution', 'pollution-again'));
    const innocent = await call('innocent', 'innocent');
    assert.equal(innocent.status, 200);
    assert.doesNotMatch(innocent.text, /polluted/);
    const victim = await fetch(`${served.url}/api/client/v2.0/app/victim-vvvvv/functions/call`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${victimToken}` },
      body: JSON.stringify({ name: 'renameTask', arguments: [{ taskId: 't1', name: 'kept' }] }),
    });
    assert.equal(victim.status, 200);
    assert.deepEqual(await victim.json(), { _id: 't1', name: 'kept' });
  });
});
