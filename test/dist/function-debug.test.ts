// Debugging functions (`asl serve --inspect-functions`), against `dist/cli.js serve` over real HTTP and a
// real inspector client (the Chrome DevTools Protocol over the inspector's WebSocket, as an editor's
// debugger speaks it): a breakpoint set on the function's own file by its real path stops the call at that
// line; a paused call outlives the time limit while another user's call answers; the inspector listens on
// 127.0.0.1 only (whatever --host says) and only when asked; function code cannot reach it. Needs a Node
// whose permission model has --allow-inspector (Node 24; test/editor/setup.sh installs one for CI); on a
// Node without it, `--inspect-functions` is refused with the reason.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { EJSON } from 'bson';
import { childrenOf, connectCdp, listeningSocketsOf, nodeWithInspectorPermission, type CdpClient } from '../helpers/cdp';
import { CLI, copyApp, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';
import { spawnSync } from 'node:child_process';

/** `return` is on line 4 (1-based): the breakpoint goes there. */
const PAUSED_FUNCTION = `// debugged by test/dist/function-debug.test.ts
exports = function (a, b) {
  const sum = a + b;
  return { sum, by: context.user.id };
};
`;

/** What function code can try against the inspector: the module, and the port over HTTP and as a WebSocket. */
const PROBE_FUNCTION = `
exports = async function (port) {
  const out = {};
  for (const name of ['inspector', 'node:inspector', 'inspector/promises', 'node:inspector/promises']) {
    try { require(name); out[name] = 'loaded'; } catch (e) { out[name] = 'refused: ' + (e.code || e.message); }
  }
  try { out.process = typeof process; } catch (e) { out.process = 'refused'; }
  try { out.hostProcess = typeof context.constructor.constructor('return process')(); } catch (e) { out.hostProcess = 'refused: ' + (e.code || e.message); }
  for (const page of ['/json/list', '/json', '/json/version']) {
    try { out[page] = await (await fetch('http://127.0.0.1:' + port + page)).text(); } catch (e) { out[page] = 'failed: ' + e.message; }
  }
  out.upgrade = await new Promise((resolve) => {
    const socket = require('net').connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Version: 13\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n\\r\\n'));
    let text = '';
    socket.on('data', (d) => { text += d; });
    socket.on('close', () => resolve(text.split('\\r\\n')[0] || 'closed'));
    socket.on('error', (e) => resolve('error: ' + e.message));
    setTimeout(() => { socket.destroy(); resolve(text.split('\\r\\n')[0] || 'no answer'); }, 3000);
  });
  return out;
};
`;

function addFunctions(appDir: string): void {
  const manifest = path.join(appDir, 'functions', 'config.json');
  const entries = JSON.parse(fs.readFileSync(manifest, 'utf8')) as unknown[];
  entries.push({ name: 'debugged', private: false }, { name: 'probeInspector', private: false });
  fs.writeFileSync(manifest, JSON.stringify(entries, null, 2));
  fs.writeFileSync(path.join(appDir, 'functions', 'debugged.js'), PAUSED_FUNCTION);
  fs.writeFileSync(path.join(appDir, 'functions', 'probeInspector.js'), PROBE_FUNCTION);
}

async function call(served: ServedDist, token: string, name: string, args: unknown[]): Promise<{ status: number; body: any }> {
  const res = await fetch(`${served.app}/functions/call`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` }, body: JSON.stringify({ name, arguments: args }),
  });
  const text = await res.text();
  return { status: res.status, body: res.status === 200 ? EJSON.parse(text, { relaxed: true }) : text };
}

/** The function process of a runtime: its one child process. */
async function functionProcessOf(served: ServedDist): Promise<number> {
  for (const deadline = Date.now() + 20000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    const [pid] = childrenOf(served.child.pid!);
    if (pid) return pid;
  }
  throw new Error('the runtime started no function process');
}

const inspectorUrlOf = (served: ServedDist): string | undefined => /functions inspector: (ws:\/\/\S+)/.exec(served.stdout())?.[1];

/** The inspector's address, printed after the runtime's own lines. */
async function printedInspectorUrl(served: ServedDist): Promise<string> {
  for (const deadline = Date.now() + 20000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    const url = inspectorUrlOf(served);
    if (url) return url;
  }
  throw new Error(`no inspector address printed: ${served.stdout()}\n${served.stderr()}`);
}

describe('debugging functions (--inspect-functions)', () => {
  const node = nodeWithInspectorPermission();
  let served: ServedDist;
  let appDir: string;
  let inspectorUrl: string;
  let ada: string;
  let bob: string;
  let adaId: string;

  before(async () => {
    appDir = copyApp();
    addFunctions(appDir);
    // --host 0.0.0.0: the inspector stays on loopback all the same. A one-second time limit, which a paused call outlives.
    served = await serveDist({ appDir, node, args: ['--inspect-functions', '--host', '0.0.0.0', '--function-timeout', '1'] });
    inspectorUrl = await printedInspectorUrl(served);
    const a = await registerAndLogIn(served.app, 'ada@example.com', 'password-ada');
    const b = await registerAndLogIn(served.app, 'bob@example.com', 'password-bob');
    ada = a.access_token;
    adaId = a.user_id;
    bob = b.access_token;
  });
  after(async () => {
    await served?.close();
    if (appDir) fs.rmSync(appDir, { recursive: true, force: true });
  });

  test('the runtime says debugging is on, and the inspector listens on 127.0.0.1 only', async () => {
    assert.match(served.stderr(), /function debugging is on/);
    assert.match(served.stderr(), /function inspector listening on 127\.0\.0\.1:\d+/);
    // The secret (the WebSocket path) is printed on the output once, never logged.
    const secret = new URL(inspectorUrl).pathname.slice(1);
    assert.match(secret, /^[0-9a-f-]{36}$/);
    assert.equal(served.stderr().includes(secret), false, 'the inspector secret is in the log');
    assert.equal(served.stdout().split(secret).length - 1, 1, 'printed once');
    const port = Number(new URL(inspectorUrl).port);
    assert.equal(new URL(inspectorUrl).hostname, '127.0.0.1');
    const listening = listeningSocketsOf(await functionProcessOf(served));
    assert.deepEqual(listening, [`127.0.0.1:${port}`]);
    // Another loopback address reaches nothing there.
    const other = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.2', () => { socket.destroy(); resolve('connected'); });
      socket.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    assert.equal(other, 'ECONNREFUSED');
  });

  test('a breakpoint on the function file stops the call at its line; paused, it outlives the time limit while another user is answered', async () => {
    const cdp: CdpClient = await connectCdp(inspectorUrl);
    try {
      const file = path.join(appDir, 'functions', 'debugged.js');
      const fileUrl = pathToFileURL(file).href;
      type Worker = Parameters<Parameters<CdpClient['onWorker']>[0]>[0];
      const ready: Promise<unknown>[] = [];
      let pausedAtBreakpoint: (hit: { worker: Worker; params: any }) => void = () => undefined;
      const pausedIn = new Promise<{ worker: Worker; params: any }>((resolve) => { pausedAtBreakpoint = resolve; });
      cdp.onWorker((worker) => {
        ready.push((async () => {
          await worker.send('Debugger.enable');
          await worker.send('Debugger.setBreakpointByUrl', { url: fileUrl, lineNumber: 3 });
          await worker.send('Runtime.runIfWaitingForDebugger');
        })());
        // A worker started while attached stops on its first statement (as with --inspect-brk): go on, as an editor's debugger does.
        void (async () => {
          for (;;) {
            const params = await worker.next('Debugger.paused', undefined, 120000);
            if (params.hitBreakpoints?.length) pausedAtBreakpoint({ worker, params });
            else await worker.send('Debugger.resume');
          }
        })().catch(() => undefined);
      });
      await cdp.send('NodeWorker.enable', { waitForDebuggerOnStart: true });
      // The function process started with the runtime, and its workers with it: the breakpoint is set in each before the call.
      await Promise.all(ready);
      const answer = call(served, ada, 'debugged', [2, 3]);
      const { worker, params } = await pausedIn;
      const top = params.callFrames[0];
      assert.equal(params.hitBreakpoints.length, 1);
      // The frame's script is the function file, by its real path (V8 names it in scriptParsed; the frame's own url is deprecated).
      const script = await worker.next('Debugger.scriptParsed', (p) => p.scriptId === top.location.scriptId, 5000);
      assert.equal(script.url, fileUrl);
      assert.equal(top.location.lineNumber, 3);
      // Paused past the one-second time limit (and the stuck-worker watch): another user's call answers meanwhile.
      await new Promise((r) => setTimeout(r, 2500));
      const other = await call(served, bob, 'sum', [5, 6]);
      assert.equal(other.status, 200, String(other.body));
      assert.equal(other.body, 11);
      await worker.send('Debugger.resume');
      const resumed = await answer;
      assert.equal(resumed.status, 200, String(resumed.body));
      assert.deepEqual(resumed.body, { sum: 5, by: adaId });
    } finally {
      cdp.close();
    }
  });

  test('attacker: function code reaches neither the inspector module nor the inspector behind the port', async () => {
    const port = Number(new URL(inspectorUrl).port);
    const secret = new URL(inspectorUrl).pathname.slice(1);
    const probed = await call(served, ada, 'probeInspector', [port]);
    assert.equal(probed.status, 200, String(probed.body));
    const out = probed.body as Record<string, string>;
    for (const name of ['inspector', 'node:inspector', 'inspector/promises', 'node:inspector/promises']) assert.match(out[name]!, /^refused/, name);
    assert.equal(out.process, 'undefined');
    assert.match(out.hostProcess!, /^refused/);
    assert.equal(JSON.stringify(out).includes(secret), false, `the function learnt the inspector's secret: ${JSON.stringify(out)}`);
    assert.doesNotMatch(out.upgrade!, / 101 /, 'the inspector took a WebSocket without its secret');
    // The runtime is still fine.
    assert.equal((await call(served, bob, 'sum', [1, 2])).body, 3);
  });

  test('a function process that ends is started again at once (not on the next call), its new inspector address printed, so a debugger can attach again before a call runs', async () => {
    const before = await functionProcessOf(served);
    const printed = () => [...served.stdout().matchAll(/functions inspector: (ws:\/\/\S+)/g)].map((m) => m[1]!);
    const seen = printed().length;
    process.kill(before, 'SIGKILL');
    let next: string | undefined;
    for (const deadline = Date.now() + 20000; !next && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) next = printed()[seen];
    assert.ok(next, `no new inspector address printed: ${served.stdout()}`);
    assert.notEqual(next, inspectorUrl);
    const after = await functionProcessOf(served);
    assert.notEqual(after, before);
    assert.deepEqual(listeningSocketsOf(after), [`127.0.0.1:${new URL(next).port}`]);
    assert.equal((await call(served, bob, 'sum', [2, 2])).body, 4);
  });
});

describe('without --inspect-functions', () => {
  let served: ServedDist;
  before(async () => { served = await serveDist({ node: nodeWithInspectorPermission() }); });
  after(async () => { await served?.close(); });

  test('the function process listens on nothing and no inspector address is printed', async () => {
    const { access_token } = await registerAndLogIn(served.app, 'cy@example.com', 'password-cy');
    assert.equal((await call(served, access_token, 'sum', [1, 2])).body, 3);
    assert.deepEqual(listeningSocketsOf(await functionProcessOf(served)), []);
    assert.equal(inspectorUrlOf(served), undefined);
    assert.doesNotMatch(served.stderr(), /function debugging is on/);
  });
});

describe('--inspect-functions on a Node without --allow-inspector', { skip: process.allowedNodeEnvironmentFlags.has('--allow-inspector') ? 'this Node can debug functions' : false }, () => {
  /** PATH without any Node 24: only this Node's folder and the system's. */
  const pathWithoutNode24 = [path.dirname(process.execPath), '/usr/bin', '/bin'].join(':');
  const refusal = (args: string[], env: NodeJS.ProcessEnv) => {
    const appDir = copyApp();
    try {
      return spawnSync(process.execPath, [CLI, 'serve', appDir, '--port', '0', '--inspect-functions', ...args], { encoding: 'utf8', timeout: 30000, env });
    } finally {
      fs.rmSync(appDir, { recursive: true, force: true });
    }
  };

  test('with no Node 24 on PATH it is refused with the reason and what to do, before anything starts', () => {
    const run = refusal([], { PATH: pathWithoutNode24 });
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /--inspect-functions: debugging functions needs a Node whose permission model has --allow-inspector \(Node 24 or later\): the runtime runs on Node 2\d\./);
    assert.match(run.stderr, /--functions-node PATH/);
    assert.doesNotMatch(run.stdout, /listening on/);
  });

  test('--functions-node naming an older Node, or no Node, is refused by name', () => {
    const older = refusal(['--functions-node', process.execPath], { PATH: pathWithoutNode24 });
    assert.equal(older.status, 2, older.stderr);
    assert.ok(older.stderr.includes(`--functions-node: ${process.execPath} is Node ${process.versions.node}, whose permission model has no --allow-inspector`), older.stderr);
    const none = refusal(['--functions-node', '/nonexistent/node'], { PATH: pathWithoutNode24 });
    assert.equal(none.status, 2, none.stderr);
    assert.match(none.stderr, /--functions-node: \/nonexistent\/node does not exist/);
    assert.doesNotMatch(older.stdout + none.stdout, /listening on/);
  });

  for (const how of ['--functions-node', 'a Node 24 on PATH'] as const) {
    test(`with ${how}, the function process runs on that Node, under its permission model with the inspector; function code still cannot reach it`, async () => {
      const node24 = nodeWithInspectorPermission();
      const appDir = copyApp();
      addFunctions(appDir);
      const served = await serveDist({
        appDir, args: ['--inspect-functions', ...(how === '--functions-node' ? ['--functions-node', node24] : [])],
        env: { ...process.env, PATH: how === '--functions-node' ? pathWithoutNode24 : `${path.dirname(node24)}:${pathWithoutNode24}` },
      });
      try {
        const url = await printedInspectorUrl(served);
        assert.ok(served.stderr().includes(`debugging functions: the function processes run on ${node24} (Node 24.`), served.stderr());
        const pid = await functionProcessOf(served);
        assert.equal(fs.realpathSync(`/proc/${pid}/exe`), fs.realpathSync(node24));
        const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        // Node 24's own flags (not the runtime's Node 20 --experimental-permission), reads limited as ever.
        assert.ok(argv.includes('--permission') && argv.includes('--allow-inspector') && argv.includes('--allow-worker'), argv.join(' '));
        assert.ok(!argv.some((a) => a === '--allow-child-process' || a.startsWith('--allow-fs-write') || a === '--allow-addons'), argv.join(' '));
        assert.deepEqual(listeningSocketsOf(pid), [`127.0.0.1:${new URL(url).port}`]);
        const { access_token } = await registerAndLogIn(served.app, 'dee@example.com', 'password-dee');
        assert.equal((await call(served, access_token, 'sum', [2, 3])).body, 5);
        const probe = await call(served, access_token, 'probeInspector', [Number(new URL(url).port)]);
        for (const name of ['inspector', 'node:inspector']) assert.match(probe.body[name], /^refused/, JSON.stringify(probe.body));
      } finally {
        await served.close();
        fs.rmSync(appDir, { recursive: true, force: true });
      }
    });
  }
});
