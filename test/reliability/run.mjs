// npm run reliability: hostile input, crashes and load against the shipped bundle (`dist/cli.js serve` on a
// copy of examples/todo-tracker with the hostile functions of hostile-functions.json and the escape attempts of
// escape-functions.json), over loopback only.
// Prints one line per figure and exits 1 when a goal is not met. Kills only the servers it started.
// The security part (security.mjs) attacks a fresh server over HTTP and WebSocket (issue 21); with it, the flexible
// sync attack scripts (sync-merge-attacks.ts, sync-flexible-attacks.ts: issue 33).
// The sync fault parts (sync-faults-suite.mjs): sync through a faulty network, kill -9 under 100 uploading clients, stalled readers.
// Run: node test/reliability/run.mjs [--short] [--long] [--security] [--sync-faults]   (--short: fewer crash rounds
// and a shorter soak, for CI; --long: a 10-minute soak, outside CI; --security: the security part alone;
// --sync-faults: the sync fault parts alone)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { securitySuite } from './security.mjs';
import { stalledClientsSuite, syncFaultsSuite } from './sync-faults-suite.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '../..');
const CLI = path.join(REPO, 'dist/cli.js');
const EXAMPLE = path.join(REPO, 'examples/todo-tracker');
const APP_ID = 'todo-tracker-abcde';
const SHORT = process.argv.includes('--short');
const VERBOSE = process.argv.includes('--verbose');
const SECURITY_ONLY = process.argv.includes('--security');
const SYNC_FAULTS_ONLY = process.argv.includes('--sync-faults');
const FUNCTION_TIMEOUT_S = 3;
const HANG_MS = 5000;
const KILL_ROUNDS = SHORT ? 3 : 10;
const LONG = process.argv.includes('--long');
const SOAK_MS = SHORT ? 10_000 : LONG ? 600_000 : 45_000;
/** The soak's memory reading to compare the end with: after 10 s of load (a quarter of the short soak's 10 s). */
const SOAK_WARM_MS = Math.min(10_000, SOAK_MS / 4);
/** RSS growth from that reading to the end: the 10 s soak is still warming up, the longer ones must be flat. */
const SOAK_GROWTH_GOAL = SHORT ? 25 : 10;
const SOAK_CLIENTS = 32;
const SUITE_DEADLINE_MS = (LONG ? 30 : 20) * 60 * 1000;
/** Issue 21: an innocent user's requests stay prompt while another user's functions loop and bomb memory. */
const INNOCENT_P99_GOAL_MS = 250;

const started = Date.now();
const servers = new Set();
const results = [];

function figure(line, met) {
  results.push({ line, met });
  console.log(`${line} ${met ? 'MET' : 'NOT MET'}`);
}

function cleanup() {
  for (const server of servers) if (server.exitCode === null) server.kill('SIGKILL');
}
process.on('exit', cleanup);
const overall = setTimeout(() => {
  console.error(`reliability suite overran ${SUITE_DEADLINE_MS / 60000} minutes`);
  cleanup();
  process.exit(2);
}, SUITE_DEADLINE_MS);
overall.unref();

// ---------------------------------------------------------------- app and server

/**
 * What an escape function (escape-functions.json) does with a `process` it reached: read the data folder's
 * key material, write a file, run a command, start a thread that writes, signal or renice the runtime,
 * learn whether a key file exists. It returns
 * every outcome, so whatever it gained would show in the response.
 */
const ESCAPE_ATTACK = `async function attack(proc, input) {
  const out = { escaped: proc !== null && typeof proc === 'object' && typeof proc.pid === 'number', outcomes: {} };
  if (!out.escaped) return out;
  const attempt = async (name, run) => {
    try { const v = await run(); out.outcomes[name] = v && typeof v.length === 'number' && typeof v !== 'string' ? Buffer.from(v).toString('hex') + ' ' + Buffer.from(v).toString('base64') : String(v); }
    catch (error) { out.outcomes[name] = 'refused: ' + String(error && (error.code || error.message)); }
  };
  const load = (name) => proc.getBuiltinModule ? proc.getBuiltinModule(name) : proc.mainModule.require(name);
  for (const file of input.files) await attempt('read ' + file, () => load('fs').readFileSync(file));
  await attempt('write', () => load('fs').writeFileSync(input.marker + '-write', 'x'));
  await attempt('exec', () => load('child_process').execSync('echo x > ' + input.marker + '-exec'));
  await attempt('binding', () => proc.binding('spawn_sync'));
  await attempt('thread', () => new Promise((resolve, reject) => {
    const thread = new (load('worker_threads').Worker)('require("fs").writeFileSync(' + JSON.stringify(input.marker + '-thread') + ', "x")', { eval: true });
    thread.on('error', reject);
    thread.on('exit', resolve);
  }));
  await attempt('signal', () => proc.kill(input.runtimePid, 'SIGKILL'));
  await attempt('renice the runtime', () => load('os').setPriority(input.runtimePid, 19));
  await attempt('realpath of a key file', () => load('fs').realpathSync(input.files[0]));
  return out;
}`;

function prepareApp() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-reliability-'));
  const appDir = path.join(root, 'app');
  fs.cpSync(EXAMPLE, appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
  const hostile = JSON.parse(fs.readFileSync(path.join(HERE, 'hostile-functions.json'), 'utf8'));
  const configFile = path.join(appDir, 'functions', 'config.json');
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8'));
  const escapes = JSON.parse(fs.readFileSync(path.join(HERE, 'escape-functions.json'), 'utf8'));
  for (const [name, source] of Object.entries(escapes)) hostile[name] = `${ESCAPE_ATTACK}\n${source}`;
  // Issue 33: every route to a process, then threads and processes in every shape that could shed the permission model.
  hostile.escapeWorker = fs.readFileSync(path.join(HERE, 'escape-worker.js'), 'utf8');
  hostile.giveObject = 'exports = () => ({ an: "object" });';
  hostile.throwsHost = 'exports = () => { throw new Error("thrown"); };';
  for (const [name, source] of Object.entries(hostile)) {
    fs.writeFileSync(path.join(appDir, 'functions', `${name}.js`), `${source}\n`);
    config.push({ name, private: false });
  }
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  return { root, appDir, dataDir: path.join(root, 'data') };
}

/** Starts `dist/cli.js serve`; resolves with its URL and process once it prints "listening on". */
function startServer(app, port = 0, extraArgs = []) {
  const child = spawn(process.execPath, [CLI, 'serve', app.appDir, '--port', String(port), '--no-watch', '--function-timeout', String(FUNCTION_TIMEOUT_S), '--data', app.dataDir, ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  servers.add(child);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.on('exit', () => servers.delete(child));
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start within 20 s:\n${output}`)), 20_000);
    const onData = (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      // The admin lines follow the address: wait for them too, so a first start's key pair is complete.
      if (match && /admin public key: [^\n]*\n/.test(output)) {
        clearTimeout(timer);
        resolve({ child, exited, url: match[1], api: `${match[1]}/api/client/v2.0/app/${APP_ID}`, output: () => output });
      }
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', (chunk) => { output += chunk; });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`the server exited (${code}) before listening:\n${output}`)); });
  });
}

async function stopServer(server) {
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 5000);
  await server.exited;
  clearTimeout(timer);
}

/** The resident memory of a process and its children (the runtime and its function processes). */
function rssOf(pid) {
  let total = 0;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
    for (const child of fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean)) total += rssOf(Number(child));
  } catch {
    // Gone meanwhile, or not Linux.
  }
  return total;
}

// ---------------------------------------------------------------- requests

/** One request; `{status, body, ms}` or `{hang: true}` after `hangMs`. Never throws for HTTP outcomes. */
async function send(url, { method = 'POST', headers = {}, body, token, hangMs = HANG_MS } = {}) {
  const begin = Date.now();
  try {
    const res = await fetch(url, {
      method,
      headers: { ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...(token ? { Authorization: `Bearer ${token}` } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(hangMs),
    });
    const text = await res.text();
    let json;
    try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
    return { status: res.status, body: json, text, ms: Date.now() - begin };
  } catch (error) {
    if (error?.name === 'TimeoutError' || error?.name === 'AbortError') return { hang: true, ms: Date.now() - begin };
    return { status: 0, error: String(error?.cause?.code ?? error?.message ?? error), ms: Date.now() - begin };
  }
}

/** Raw bytes over a socket (malformed HTTP); resolves with what came back until close or HANG_MS. */
function sendRaw(port, bytes) {
  return new Promise((resolve) => {
    const begin = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => { socket.destroy(); resolve({ hang: true, text: received, ms: Date.now() - begin }); }, HANG_MS);
    socket.on('connect', () => socket.write(bytes));
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => {
      received += chunk;
      // A complete response with a Content-Length body: done.
      const head = received.indexOf('\r\n\r\n');
      const length = /content-length:\s*(\d+)/i.exec(received.slice(0, head))?.[1];
      if (head >= 0 && length !== undefined && received.length - head - 4 >= Number(length)) socket.end();
    });
    const done = () => {
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
      const bodyText = received.slice(received.indexOf('\r\n\r\n') + 4);
      let json;
      try { json = JSON.parse(bodyText); } catch { json = undefined; }
      resolve({ status, body: json, text: received, ms: Date.now() - begin });
    };
    socket.on('close', done);
    socket.on('error', () => undefined);
  });
}

/** Registers and logs in a user (password hashing is slow on purpose, so a busy machine gets 30 s). */
async function login(api, email) {
  await send(`${api}/auth/providers/local-userpass/register`, { body: { email, password: 'password1' }, hangMs: 30_000 });
  const res = await send(`${api}/auth/providers/local-userpass/login`, { body: { username: email, password: 'password1' }, hangMs: 30_000 });
  if (res.status !== 200) throw new Error(`login of ${email} failed: ${res.hang ? 'no answer within 30 s' : `${res.status} ${res.error ?? res.text}`}`);
  return { token: res.body.access_token, refresh: res.body.refresh_token, userId: res.body.user_id };
}

const oid = (n) => n.toString(16).padStart(24, '0');

// ---------------------------------------------------------------- 1. bad-input matrix

const PROTO_NAMES = ['__proto__', 'constructor', 'hasOwnProperty', 'valueOf', 'toString', 'prototype', '__defineGetter__', 'isPrototypeOf'];
const TRAVERSAL_NAMES = ['../../etc', '..', '/etc/passwd', 'a/../../b', 'x\u0000y', '', '..\\..\\windows', 'system.users', '$cmd', 'a'.repeat(300)];
const BAD_EJSON = [
  { $numberInt: '99999999999999' }, { $numberInt: 'abc' }, { $numberInt: '1.5' }, { $numberLong: '9223372036854775808' }, { $numberLong: '1e3' },
  { $numberDouble: 'abc' }, { $numberDouble: '1e999' }, { $numberDecimal: 'one' }, { $numberDecimal: '1e99999' }, { $date: { $numberLong: '99999999999999999' } },
  { $date: 'yesterday' }, { $oid: 'zz' }, { $oid: '0123456789ab' }, { $binary: { base64: '!!', subType: '00' } }, { $timestamp: { t: -1, i: 1 } },
];
const EVIL_PATTERNS = ['^(a+)+$', '(a|a)*$', '^(a|aa)+$', '(.*a){20}', '(x+x+)+y'];

function graphqlBombs() {
  const fragments = Array.from({ length: 40 }, (_, i) => (i === 39 ? `fragment F${i} on Task { _id }` : `fragment F${i} on Task { ...F${i + 1} ...F${i + 1} }`));
  return [
    ['fragment bomb', { query: `query Bomb { tasks { ...F0 } } ${fragments.join(' ')}` }],
    ['10,000 aliases of a plain field', { query: `{ ${Array.from({ length: 10_000 }, (_, i) => `a${i}: tasks { _id }`).join(' ')} }` }],
    ['10,000 aliases of a function field', { query: `{ ${Array.from({ length: 10_000 }, (_, i) => `s${i}: taskSummary(input: { owner: "o", status: "s" }) { count }`).join(' ')} }` }],
    ['300 root fields', { query: `{ ${Array.from({ length: 300 }, (_, i) => `a${i}: tasks { _id }`).join(' ')} }` }],
    ['10,000-deep selection', { query: `${'{ tasks '.repeat(10_000)}{ _id }${' }'.repeat(10_000)}` }],
    ['1,000-deep AND literal', { query: `{ tasks(query: ${'{ AND: ['.repeat(1000)}{ _id_exists: true }${'] }'.repeat(1000)}) { _id } }` }],
    ['30,000 tokens', { query: `{ tasks { ${'_id '.repeat(30_000)} } }` }],
    ['query is a number', { query: 42 }],
    ['query missing', { variables: {} }],
    ['variables an array', { query: '{ tasks { _id } }', variables: [1] }],
    ['syntax error', { query: '{ tasks { _id ' }],
    ['unknown field', { query: '{ nope }' }],
    ['directive bomb', { query: `{ tasks ${'@include(if: true) '.repeat(2000)} { _id } }` }],
    ['fragment cycle', { query: '{ tasks { ...A } } fragment A on Task { ...B } fragment B on Task { ...A }' }],
    ['introspection depth', { query: `{ __schema { types { ${'fields { type { ofType { '.repeat(20)} name ${'} } } '.repeat(20)} } } }` }],
  ];
}

function deepVariables() {
  return `{"query":"query Q($q: TaskQueryInput) { tasks(query: $q) { _id } }","variables":{"q":${'{"AND":['.repeat(10_000)}{"_id_exists":true}${']}'.repeat(10_000)}}}`;
}

async function badInputMatrix(server) {
  const { api, url } = server;
  const port = Number(new URL(url).port);
  const { token, refresh } = await login(api, 'mallory@example.com');
  const cases = [];
  const add = (name, run) => cases.push({ name, run });
  const call = (body, t = token) => () => send(`${api}/functions/call`, { body, token: t });
  const gql = (body, t = token) => () => send(`${api}/graphql`, { body, token: t });
  const coll = (extra) => [{ database: 'tracker', collection: 'Task', ...extra }];

  for (const name of PROTO_NAMES) {
    add(`service action ${name}`, call({ service: 'mongodb-atlas', name, arguments: coll({}) }));
    add(`function ${name}`, call({ name, arguments: [] }));
    add(`service ${name}`, call({ service: name, name: 'find', arguments: coll({}) }));
    add(`provider login ${name}`, () => send(`${api}/auth/providers/${encodeURIComponent(name)}/login`, { body: {} }));
    add(`value ${name} from a function`, call({ name: 'echo', arguments: [{ [name]: 1 }] }));
    add(`collection ${name}`, call({ service: 'mongodb-atlas', name: 'find', arguments: [{ database: 'tracker', collection: name, query: {} }] }));
  }
  for (const name of TRAVERSAL_NAMES) {
    add(`database ${JSON.stringify(name).slice(0, 20)}`, call({ service: 'mongodb-atlas', name: 'insertOne', arguments: [{ database: name, collection: 'Task', document: { a: 1 } }] }));
    add(`collection ${JSON.stringify(name).slice(0, 20)}`, call({ service: 'mongodb-atlas', name: 'insertOne', arguments: [{ database: 'tracker', collection: name, document: { a: 1 } }] }));
  }
  for (const value of BAD_EJSON) {
    add(`EJSON ${JSON.stringify(value)} in a query`, call({ service: 'mongodb-atlas', name: 'find', arguments: coll({ query: { n: value } }) }));
    add(`EJSON ${JSON.stringify(value)} as an argument`, call({ name: 'echo', arguments: [value] }));
  }
  for (const pattern of EVIL_PATTERNS) {
    add(`$regex ${pattern}`, call({ service: 'mongodb-atlas', name: 'find', arguments: coll({ query: { name: { $regex: pattern } } }) }));
    add(`BSON regex ${pattern}`, call({ service: 'mongodb-atlas', name: 'find', arguments: coll({ query: { name: { $regularExpression: { pattern, options: 'i' } } } }) }));
    add(`$regexMatch ${pattern}`, call({ service: 'mongodb-atlas', name: 'aggregate', arguments: coll({ pipeline: [{ $match: { $expr: { $regexMatch: { input: '$name', regex: pattern } } } }] }) }));
  }
  add('$regex backreference', call({ service: 'mongodb-atlas', name: 'find', arguments: coll({ query: { name: { $regex: '(a)\\1' } } }) }));
  add('$regex lookahead', call({ service: 'mongodb-atlas', name: 'find', arguments: coll({ query: { name: { $regex: '(?=a)' } } }) }));
  for (const [name, body] of graphqlBombs()) add(`GraphQL ${name}`, gql(body));
  add('GraphQL 10,000-deep variables', () => send(`${api}/graphql`, { body: deepVariables(), token }));
  // Bodies.
  for (const [name, body] of [
    ['invalid JSON', '{"name": '], ['empty body', ''], ['array body', '[1,2]'], ['number body', '42'], ['null body', 'null'],
    ['deeply nested JSON', `${'['.repeat(100_000)}${']'.repeat(100_000)}`], ['deeply nested objects', `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`],
    ['lone surrogate', '{"name":"\\ud800","arguments":[]}'], ['name not a string', '{"name":{"$oid":"0123456789abcdef01234567"}}'],
    ['arguments not an array', '{"name":"echo","arguments":{"a":1}}'],
  ]) {
    add(`functions/call ${name}`, () => send(`${api}/functions/call`, { body, token }));
    add(`login ${name}`, () => send(`${api}/auth/providers/local-userpass/login`, { body }));
  }
  add('GraphQL invalid JSON', () => send(`${api}/graphql`, { body: '{"query":', token }));
  add('body over 16 MB', () => send(`${api}/functions/call`, { body: `{"name":"echo","arguments":["${'x'.repeat(17 * 1024 * 1024)}"]}`, token }));
  add('GraphQL body over 4 MB', () => send(`${api}/graphql`, { body: `{"query":"{ tasks { _id } }","x":"${'x'.repeat(5 * 1024 * 1024)}"}`, token }));
  add('100,000 arguments', call({ name: 'echo', arguments: Array.from({ length: 100_000 }, (_, i) => i) }));
  add('insertMany of 100,000 documents', call({ service: 'mongodb-atlas', name: 'insertMany', arguments: coll({ documents: Array.from({ length: 100_000 }, () => ({ a: 1 })) }) }));
  // Tokens.
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
  for (const [name, bad] of [
    ['garbage token', 'garbage'], ['alg none', `${b64({ alg: 'none' })}.${b64({ sub: 'x' })}.`], ['refresh token as access', refresh],
    ['empty bearer', ''], ['token of 900 KB', 'a'.repeat(900_000)], ['two segments', `${b64({ alg: 'HS256' })}.${b64({})}`],
  ]) {
    add(`functions/call with ${name}`, () => send(`${api}/functions/call`, { body: { name: 'echo', arguments: [] }, headers: { Authorization: `Bearer ${bad}` } }));
    add(`GraphQL with ${name}`, () => send(`${api}/graphql`, { body: { query: '{ tasks { _id } }' }, headers: { Authorization: `Bearer ${bad}` } }));
    add(`session refresh with ${name}`, () => send(`${url}/api/client/v2.0/auth/session`, { headers: { Authorization: `Bearer ${bad}` } }));
  }
  add('header over 1.1 MB', () => send(`${api}/functions/call`, { body: {}, headers: { Authorization: `Bearer ${'a'.repeat(1_200_000)}` } }));
  add('path of 100 KB', () => send(`${api}/${'a'.repeat(100_000)}`, { method: 'GET' }));
  add('20,000 query parameters', () => send(`${api}/location?${Array.from({ length: 20_000 }, (_, i) => `p${i}=${i}`).join('&')}`, { method: 'GET' }));
  add('encoded traversal path', () => send(`${url}/api/client/v2.0/app/..%2f..%2fetc/location`, { method: 'GET' }));
  // Malformed HTTP.
  for (const [name, raw] of [
    ['CONNECT', 'CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n'],
    ['TRACE', `TRACE /api/client/v2.0/app/${APP_ID}/location HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`],
    ['unknown method', `BREW /api/client/v2.0/app/${APP_ID}/location HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`],
    ['PROPFIND', `PROPFIND / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`],
    ['bad request line', 'GARBAGE\r\n\r\n'],
    ['bad header', 'GET / HTTP/1.1\r\nHost x\r\n\r\n'],
    ['invalid content-length', `POST /api/client/v2.0/app/${APP_ID}/functions/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n{}`],
    ['two content-lengths', `POST /api/client/v2.0/app/${APP_ID}/functions/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`],
    ['bad chunked body', `POST /api/client/v2.0/app/${APP_ID}/functions/call HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`],
    ['NUL in path', 'GET /api\u0000/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'],
    ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
    ['foreign Host (DNS rebinding)', `GET /api/client/v2.0/app/${APP_ID}/location HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`],
    ['absolute-form target', `GET http://evil.example/api/client/v2.0/app/${APP_ID}/location HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`],
    ['websocket upgrade to an API route', `GET /api/client/v2.0/app/${APP_ID}/location HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`],
  ]) add(`raw ${name}`, () => sendRaw(port, raw));

  let clean = 0;
  let accepted = 0;
  let serverErrors = 0;
  let hangs = 0;
  let wedges = 0;
  const problems = [];
  for (const { name, run } of cases) {
    const res = await run();
    const jsonError = typeof res.body?.error === 'string' || (Array.isArray(res.body?.errors) && res.body.errors.length > 0 && res.body.data === null);
    if (res.hang) { hangs++; problems.push(`${name}: no answer within ${HANG_MS} ms`); }
    else if (res.status >= 500 || res.status === 0) { serverErrors++; problems.push(`${name}: ${res.status || res.error} ${String(res.text ?? '').slice(0, 160)}`); }
    else if (res.status >= 400 && jsonError) clean++;
    else if (res.status === 200 && jsonError) clean++;
    else {
      accepted++;
      if (res.status >= 400) problems.push(`${name}: ${res.status} without a JSON error: ${String(res.text ?? '').slice(0, 160)}`);
      else if (VERBOSE) console.log(`  accepted: ${name}: ${res.status} ${String(res.text ?? '').slice(0, 100)}`);
    }
    // Everyone else is still served promptly.
    const probe = await send(`${api}/location`, { method: 'GET' });
    if (probe.hang || probe.status !== 200 || probe.ms > 2000) { wedges++; problems.push(`after ${name}: the runtime did not answer another client within 2 s`); }
  }
  for (const problem of problems) console.log(`  ${problem}`);
  figure(`bad-input matrix: ${cases.length} hostile requests: ${clean} clean errors (4xx with a JSON error, or a GraphQL error), ${accepted} accepted, ${serverErrors} 5xx, ${hangs} hangs over 5 s, ${wedges} wedges (goal 0 / 0 / 0)`,
    cases.length >= 150 && serverErrors === 0 && hangs === 0 && wedges === 0 && problems.length === 0);
}

// ---------------------------------------------------------------- 2. kill -9 during acknowledged writes

async function killRounds(app) {
  let lost = 0;
  let failedRestarts = 0;
  let acknowledged = 0;
  let next = 1;
  const acked = [];
  let user;
  for (let round = 0; round < KILL_ROUNDS; round++) {
    let server;
    try {
      server = await startServer(app);
    } catch (error) {
      failedRestarts++;
      console.log(`  round ${round}: restart failed: ${error.message.slice(0, 300)}`);
      continue;
    }
    user = await login(server.api, 'writer@example.com');
    // Everything acknowledged before must still be there.
    const found = await send(`${server.api}/functions/call`, {
      token: user.token,
      body: { service: 'mongodb-atlas', name: 'find', arguments: [{ database: 'tracker', collection: 'Task', query: { _partition: user.userId }, project: { _id: 1 } }] },
    });
    const present = new Set((found.body ?? []).map((doc) => doc._id?.$oid));
    const missing = acked.filter((id) => !present.has(id));
    lost += missing.length;
    acked.splice(0, acked.length, ...acked.filter((id) => present.has(id)));
    let writing = true;
    const writers = Array.from({ length: 8 }, async () => {
      while (writing) {
        const id = oid(next++);
        const res = await send(`${server.api}/functions/call`, {
          token: user.token,
          body: { service: 'mongodb-atlas', name: 'insertOne', arguments: [{ database: 'tracker', collection: 'Task', document: { _id: { $oid: id }, _partition: user.userId, name: `task ${id}`, status: 'open', isComplete: false } }] },
        });
        if (res.status === 200) { acked.push(id); acknowledged++; }
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 600 + Math.random() * 1200));
    server.child.kill('SIGKILL');
    writing = false;
    await Promise.all(writers);
    await server.exited;
  }
  // A last start checks the writes of the last round.
  try {
    const server = await startServer(app);
    user = await login(server.api, 'writer@example.com');
    const found = await send(`${server.api}/functions/call`, {
      token: user.token,
      body: { service: 'mongodb-atlas', name: 'find', arguments: [{ database: 'tracker', collection: 'Task', query: { _partition: user.userId }, project: { _id: 1 } }] },
    });
    const present = new Set((found.body ?? []).map((doc) => doc._id?.$oid));
    lost += acked.filter((id) => !present.has(id)).length;
    await stopServer(server);
  } catch (error) {
    failedRestarts++;
    console.log(`  final restart failed: ${error.message.slice(0, 300)}`);
  }
  figure(`kill -9 during concurrent acknowledged writes x ${KILL_ROUNDS} rounds: ${acknowledged} writes acknowledged, ${lost} lost, ${failedRestarts} failed restarts (goal 0 / 0)`, lost === 0 && failedRestarts === 0 && acknowledged > 0);
}

// ---------------------------------------------------------------- 3. hostile functions beside an innocent user

async function hostileFunctions(server) {
  const attacker = await login(server.api, 'attacker@example.com');
  const innocent = await login(server.api, 'innocent@example.com');
  const limitMs = FUNCTION_TIMEOUT_S * 1000;
  const baseline = rssOf(server.child.pid);
  let peak = baseline;
  const sampler = setInterval(() => { peak = Math.max(peak, rssOf(server.child.pid)); }, 20);
  let innocentRequests = 0;
  const innocentFailures = [];
  const innocentMs = [];
  let running = true;
  const innocentLoop = (async () => {
    while (running) {
      const [echo, find, gql] = await Promise.all([
        send(`${server.api}/functions/call`, { token: innocent.token, body: { name: 'echo', arguments: [innocentRequests] } }),
        send(`${server.api}/functions/call`, { token: innocent.token, body: { service: 'mongodb-atlas', name: 'find', arguments: [{ database: 'tracker', collection: 'Task', query: {} }] } }),
        send(`${server.api}/graphql`, { token: innocent.token, body: { query: '{ tasks { _id } }' } }),
      ]);
      innocentRequests += 3;
      const at = Date.now() - started;
      innocentMs.push({ name: 'echo', ms: echo.ms, at }, { name: 'find', ms: find.ms, at }, { name: 'graphql', ms: gql.ms, at });
      for (const [name, res] of [['echo', echo], ['find', find], ['graphql', gql]]) {
        if (res.hang || res.status !== 200 || (name === 'graphql' && res.body?.errors)) innocentFailures.push(`${name}: ${res.hang ? 'hang' : res.status} ${String(res.text ?? '').slice(0, 200)}`);
      }
    }
  })();
  const hostile = ['loop', 'throws', 'leaveInterval', 'typedArrays', 'heap', 'hugeString', 'manyObjects', 'aggregationBomb'];
  let clean = 0;
  let total = 0;
  const problems = [];
  for (const round of [0, 1]) {
    const calls = hostile.map(async (name) => {
      // Eight hostile calls share a pool of four workers: a call may wait for one before its own time starts.
      const res = await send(`${server.api}/functions/call`, { token: attacker.token, body: { name, arguments: [] }, hangMs: 3 * limitMs + 10_000 });
      total++;
      const expected = name === 'leaveInterval' ? res.status === 200 : res.status === 400 && typeof res.body?.error === 'string';
      if (!res.hang && expected && res.ms <= 3 * limitMs + 3000) clean++;
      else problems.push(`round ${round} ${name}: ${res.hang ? 'hang' : res.status} after ${res.ms} ms ${String(res.text ?? '').slice(0, 160)}`);
    });
    await Promise.all(calls);
  }
  // What the hostile calls left behind must not reach the innocent user afterwards either.
  await new Promise((resolve) => setTimeout(resolve, limitMs + 1000));
  running = false;
  await innocentLoop;
  clearInterval(sampler);
  for (const problem of [...problems, ...innocentFailures.slice(0, 10)]) console.log(`  ${problem}`);
  const peakMb = Math.round(peak / 1048576);
  figure(`hostile functions (loops, throws, memory, huge results, leftover timers, aggregations at the evaluation limit) x 2 rounds beside an innocent user: ${clean}/${total} runaway calls answered cleanly within 3 s + 3 x the ${FUNCTION_TIMEOUT_S} s limit (queueing for a worker included), ${innocentFailures.length} of ${innocentRequests} innocent requests failed, peak RSS ${peakMb} MiB (from ${Math.round(baseline / 1048576)} MiB) (goal all / 0 / bounded under 2048 MiB)`,
    clean === total && innocentFailures.length === 0 && peakMb < 2048);
  const slowest = [...innocentMs].sort((a, b) => b.ms - a.ms).slice(0, 5);
  console.log(`  slowest innocent requests: ${slowest.map((r) => `${r.name} ${r.ms} ms (sent at +${Math.round(r.at / 1000)} s)`).join(', ')}`);
  const sorted = innocentMs.map((r) => r.ms).sort((a, b) => a - b);
  const p = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  figure(`innocent requests (function call, data read, GraphQL) while those hostile functions ran: p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${sorted.at(-1) ?? 0} ms over ${sorted.length} requests (goal p99 <= ${INNOCENT_P99_GOAL_MS} ms)`,
    sorted.length >= 30 && p(0.99) <= INNOCENT_P99_GOAL_MS);
}

// ---------------------------------------------------------------- 3b. functions escaping their context

/** A process's nice value, from /proc (undefined elsewhere). */
function niceOf(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  } catch {
    return undefined;
  }
}

function filesUnder(dir) {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath ?? e.path, e.name));
}

/** Issue 21: each escape from a function's vm context gains no file, command, signal or key material. */
async function functionEscapes(server, app) {
  const attacker = await login(server.api, 'escaper@example.com');
  const keyFiles = filesUnder(app.dataDir).filter((file) => /token-secret$|api-key\.json$|runtime\.json$/.test(file));
  const keyForms = keyFiles.flatMap((file) => {
    const bytes = fs.readFileSync(file);
    return [bytes.toString('hex'), bytes.toString('base64'), bytes.toString('base64url')];
  });
  const markerDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-reliability-markers-'));
  // A file outside the app and the data folder, which no function may read.
  const planted = path.join(app.root, 'planted.txt');
  const plantedText = `planted-${Math.random().toString(36).slice(2)}`;
  fs.writeFileSync(planted, plantedText);
  keyForms.push(plantedText, Buffer.from(plantedText).toString('hex'), Buffer.from(plantedText).toString('base64'));
  const names = [...Object.keys(JSON.parse(fs.readFileSync(path.join(HERE, 'escape-functions.json'), 'utf8'))), 'escapeWorker'];
  let escaped = 0;
  let leaks = 0;
  let gains = 0;
  let serverErrors = 0;
  const problems = [];
  const niceBefore = niceOf(server.child.pid);
  try {
    for (const name of names) {
      const res = await send(`${server.api}/functions/call`, {
        token: attacker.token, body: { name, arguments: [{ files: [...keyFiles, planted], marker: path.join(markerDir, name), runtimePid: server.child.pid, ownFile: path.join(app.appDir, 'functions', `${name}.js`) }] },
      });
      if (res.body?.escaped === true) escaped++;
      if (res.hang || res.status === 0 || res.status >= 500) { serverErrors++; problems.push(`${name}: ${res.hang ? 'hang' : res.status || res.error}`); }
      if (keyForms.some((form) => String(res.text ?? '').includes(form))) { leaks++; problems.push(`${name}: the response holds key material`); }
      for (const [attempt, outcome] of Object.entries(res.body?.outcomes ?? {})) {
        if (!String(outcome).startsWith('refused: ')) { gains++; problems.push(`${name}: ${attempt} was not refused`); }
      }
    }
    const markers = fs.readdirSync(markerDir);
    const alive = server.child.exitCode === null && (await send(`${server.api}/location`, { method: 'GET' })).status === 200;
    const niceAfter = niceOf(server.child.pid);
    if (niceAfter !== niceBefore) problems.push(`the runtime's nice value went from ${niceBefore} to ${niceAfter}`);
    for (const problem of [...problems, ...markers.map((m) => `marker written: ${m}`)]) console.log(`  ${problem}`);
    figure(`function escapes: ${names.length} hostile functions (constructor chains from context, arguments, results, errors and promises; Error.prepareStackTrace; import(); arguments.callee.caller; garbage on every descriptor; issue 33: every route to a process, then workers with every execArgv/env/resourceLimits shape, eval, data: URL and file workers, child_process, cluster, the spawn_sync binding), ${escaped} of them reached a process, against ${keyFiles.length} key files and a planted file: ${leaks} responses with key material, ${gains} attempts not refused, ${markers.length} files written or commands run, ${serverErrors} 5xx or hangs, runtime ${alive ? 'alive' : 'DOWN'}, its priority ${niceAfter === niceBefore ? 'kept' : 'LOWERED'} (goal 0 / 0 / 0 / 0 / 0 / alive / kept)`,
      keyFiles.length >= 2 && escaped === 0 && leaks === 0 && gains === 0 && markers.length === 0 && serverErrors === 0 && alive && niceAfter === niceBefore);
  } finally {
    fs.rmSync(markerDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- 4. mixed soak

async function soak(server) {
  const users = [];
  for (let i = 0; i < 8; i++) users.push(await login(server.api, `soak${i}@example.com`));
  // The app's function process starts on the first call and its pool grows with concurrent calls: both
  // happen before the first memory reading, which is there to catch growth under steady load.
  await Promise.all(Array.from({ length: SOAK_CLIENTS }, (_, i) => send(`${server.api}/functions/call`, { token: users[i % users.length].token, body: { name: 'echo', arguments: [i] } })));
  let errors = 0;
  let requests = 0;
  const acked = new Map();
  const errorSamples = [];
  let next = 0x100000;
  const until = Date.now() + SOAK_MS;
  const warmUntil = Date.now() + SOAK_WARM_MS;
  let warmRss;
  const client = async (index) => {
    const user = users[index % users.length];
    while (Date.now() < until) {
      if (warmRss === undefined && Date.now() >= warmUntil) warmRss = rssOf(server.child.pid);
      const kind = (requests + index) % 5;
      let res;
      if (kind === 0) {
        const id = oid(next++);
        res = await send(`${server.api}/functions/call`, {
          token: user.token,
          body: { service: 'mongodb-atlas', name: 'insertOne', arguments: [{ database: 'tracker', collection: 'Task', document: { _id: { $oid: id }, _partition: user.userId, name: `soak ${id}`, status: 'open', isComplete: false } }] },
        });
        if (res.status === 200) acked.set(id, user);
      } else if (kind === 1) {
        res = await send(`${server.api}/functions/call`, { token: user.token, body: { service: 'mongodb-atlas', name: 'find', arguments: [{ database: 'tracker', collection: 'Task', query: { status: 'open' }, limit: 20 }] } });
      } else if (kind === 2) {
        res = await send(`${server.api}/graphql`, { token: user.token, body: { query: '{ tasks(limit: 20) { _id name status } }' } });
        if (res.body?.errors) res = { ...res, status: 599 };
      } else if (kind === 3) {
        res = await send(`${server.api}/functions/call`, { token: user.token, body: { name: 'echo', arguments: [{ i: requests }] } });
      } else {
        res = await send(`${server.api}/functions/call`, { token: user.token, body: { name: 'sum', arguments: [1, 2] } });
      }
      requests++;
      if (res.hang || res.status !== 200) {
        errors++;
        if (errorSamples.length < 5) errorSamples.push(`${kind}: ${res.hang ? 'hang' : res.status} ${String(res.text ?? '').slice(0, 160)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: SOAK_CLIENTS }, (_, i) => client(i)));
  const endRss = rssOf(server.child.pid);
  let lost = 0;
  for (const user of users) {
    const found = await send(`${server.api}/functions/call`, {
      token: user.token,
      body: { service: 'mongodb-atlas', name: 'find', arguments: [{ database: 'tracker', collection: 'Task', query: { _partition: user.userId }, project: { _id: 1 } }] },
    });
    const present = new Set((found.body ?? []).map((doc) => doc._id?.$oid));
    for (const [id, owner] of acked) if (owner === user && !present.has(id)) lost++;
  }
  for (const sample of errorSamples) console.log(`  ${sample}`);
  const growth = warmRss ? ((endRss - warmRss) / warmRss) * 100 : 0;
  figure(`${SOAK_MS / 1000} s mixed soak with ${SOAK_CLIENTS} clients: ${requests} requests, ${errors} errors, ${lost} lost of ${acked.size} acknowledged writes, RSS ${Math.round((warmRss ?? 0) / 1048576)} -> ${Math.round(endRss / 1048576)} MiB from ${SOAK_WARM_MS / 1000} s to the end (${growth.toFixed(1)}% growth) (goal 0 / 0 / < ${SOAK_GROWTH_GOAL}%)`,
    errors === 0 && lost === 0 && growth < SOAK_GROWTH_GOAL);
}

// ---------------------------------------------------------------- flexible sync attacks (issue 33, items 2 to 8)

/** An attack script in a child (it speaks the Realm protocol with the runtime's own codec, through tsx); resolves with its JSON line, or undefined after a failing figure. */
async function attackScript(file, what) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, file), ...(SHORT ? ['--short'] : [])], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err = (err + d).slice(-4000); });
  const code = await new Promise((resolve) => child.once('exit', (c) => resolve(c)));
  const line = out.trim().split('\n').pop();
  let r;
  try { r = JSON.parse(line); } catch { r = undefined; }
  if (code !== 0 || !r) figure(`${what}: the attack script failed (exit ${code}): ${err.slice(-1500)}`, false);
  return code === 0 ? r : undefined;
}

async function syncMergeAttacks() {
  const r = await attackScript('sync-merge-attacks.ts', 'flexible sync merge attacks');
  if (!r) return;
  figure(`flexible sync merge attacks: ${r.memoryFiles} client files each uploading a base-0 changeset over a ${r.history}-entry history (all ${r.notes} of a victim's notes, winning every conflict) leave ${r.retainedMiB.toFixed(1)} MiB of heap behind; ${r.refused} refused, ${r.overwritten} of the victim's notes changed (goal ≤ 64 MiB / ${r.memoryFiles} / 0)`,
    r.retainedMiB <= 64 && r.refused === r.memoryFiles && r.overwritten === 0);
  figure(`flexible sync merge attacks: ${r.stallUploads} such uploads in flight; another user's new client file, bootstrap and acknowledged upload took ${Math.round(r.innocentMs)} ms (the attacks ${Math.round(r.attacksMs)} ms) (goal ≤ 2500 ms)`, r.innocentMs <= 2500);
}

/** Issue 33, items 2, 3, 4, 5 and 8: flexible sync's read rules under attack (sync-flexible-attacks.ts). */
async function syncFlexibleAttacks() {
  const r = await attackScript('sync-flexible-attacks.ts', 'flexible sync rule attacks');
  if (!r) return;
  const { hidden: h, oracle: o, like: l, roles: q, reload: d } = r;
  const list = (values) => (values.length ? values.slice(0, 5).join(', ') : 'none');
  figure(`flexible sync hidden fields: a read-only teammate's raw client, every DOWNLOAD decoded, while the owner changes a hidden top-level field, an embedded object's hidden field and a hidden list (${h.steadyChanges} uploads and HTTP writes), after resuming past ${h.windowEntries} history entries${h.windowReceivedLast ? '' : ' (the last NOT received)'} and after a restart of the runtime: hidden values received ${list(h.steadyLeaks)} / ${list(h.windowLeaks)} / ${list(h.restartLeaks)} (goal none / none / none)`,
    h.steadyLeaks.length === 0 && h.windowLeaks.length === 0 && h.restartLeaks.length === 0 && h.windowReceivedLast);
  figure(`flexible sync reason oracle: subscribing on a hidden ${o.secretLength}-character secret (secret >= "<prefix>") and uploading a no-op CreateObject of its _id, bisecting each character: a teammate's document ${o.readable.probes} probes, ${o.readable.distinctAnswers} distinct answers, ${o.readable.recovered} characters recovered; a document she may not read ${o.unreadable.probes} probes, ${o.unreadable.distinctAnswers} distinct, ${o.unreadable.recovered} recovered; erasing, setting and inserting items of a hidden list within and past its length: ${o.listDistinct} distinct answers of ${o.listProbes}; an existing unreadable _id and a missing one: ${o.existenceDistinct} distinct answers; hidden values in the reverts of all those refused writes: ${list(o.revertLeaks)} (goal 1 / 0 / 1 / 0 / 1 / 1 / none)`,
    o.readable.distinctAnswers === 1 && o.readable.recovered === 0 && o.unreadable.distinctAnswers === 1 && o.unreadable.recovered === 0 && o.listDistinct === 1 && o.existenceDistinct === 1 && o.revertLeaks.length === 0);
  figure(`flexible sync rules reload: a live session whose role let it read and rename the owner's item (rename ${d.renamedBefore ? 'accepted' : 'NOT accepted'}) has that role removed from rules.json: the item erased after ${d.erasedMs === null ? 'NEVER' : `${Math.round(d.erasedMs)} ms`}, a rename through the same session ${d.renamedAfter ? 'ACCEPTED' : 'refused'} (the name now "${d.nameAfter}"), the owner's next item and change ${d.laterReceived ? 'RECEIVED' : 'not received'} (goal erased ≤ 10000 ms / refused / not received)`,
    d.renamedBefore && d.heldBefore && d.erasedMs !== null && d.erasedMs <= 10_000 && !d.renamedAfter && d.nameAfter !== 'bob after the edit' && !d.laterReceived);
  figure(`flexible sync LIKE bomb: a ${l.queryChars}-character subscription of LIKE patterns full of ? (${l.queryError ? `refused: ${l.queryError.slice(-120)}` : 'accepted'}), then one of ${l.boundedChars} characters within the bound (? parts, long literal LIKE and CONTAINS needles; ${l.boundedError ? `REFUSED: ${l.boundedError.slice(0, 120)}` : 'accepted'}) over the attacker's ${l.textChars}-character note and ${l.uploads} uploads of it (${Math.round(l.bombMs)} ms): an innocent HTTP request every 20 ms, ${l.innocentRequests} of them, p50 ${Math.round(l.innocentP50Ms)} ms, max ${Math.round(l.innocentMaxMs)} ms (goal max ≤ 250 ms)`,
    l.innocentRequests >= 5 && l.innocentMaxMs <= 250 && !l.boundedError);
  figure(`flexible sync roles sync cannot enforce: a reader sets owner_id to herself under a role whose apply_when reads the document, then erases the owner's entry: ${q.refusals} of 2 refused, the entry ${q.ledgerOwner === 'ada' && q.ledgerAmount === 100 ? 'intact' : q.ledgerOwner.toUpperCase()}; field rules leaving _id out: ${q.badgeObjects} of ${q.badges} objects received, ${q.badgeDistinct} distinct keys, ${q.badgeNullKeys} null keys, hidden values ${list(q.badgeLeaks)} (goal 2 / intact / ${q.badges} / ${q.badges} / 0 / none)`,
    q.refusals === 2 && q.ledgerOwner === 'ada' && q.ledgerAmount === 100 && q.badgeObjects === q.badges && q.badgeDistinct === q.badges && q.badgeNullKeys === 0 && q.badgeLeaks.length === 0);
}

// ---------------------------------------------------------------- main

async function main() {
  if (!fs.existsSync(CLI)) throw new Error('dist/cli.js is missing: run npm run build first');
  console.log(`reliability suite${SHORT ? ' (short form)' : ''} against ${path.relative(REPO, CLI)}, node ${process.version}, ${os.availableParallelism()} cores`);
  const app = prepareApp();
  try {
    if (SYNC_FAULTS_ONLY) {
      await syncFaultsSuite({ figure, repo: REPO, here: HERE, short: SHORT });
      await stalledClientsSuite({ figure, repo: REPO, here: HERE, short: SHORT });
      return finish();
    }
    if (SECURITY_ONLY) {
      await securitySuite({ prepareApp, startServer, stopServer, send, login, figure, APP_ID, CLI });
      await syncMergeAttacks();
      await syncFlexibleAttacks();
      return finish();
    }
    let server = await startServer(app);
    await badInputMatrix(server);
    await hostileFunctions(server);
    await functionEscapes(server, app);
    await stopServer(server);
    await killRounds(app);
    server = await startServer(app);
    await soak(server);
    await stopServer(server);
    await securitySuite({ prepareApp, startServer, stopServer, send, login, figure, APP_ID, CLI });
    await syncMergeAttacks();
    await syncFlexibleAttacks();
    await syncFaultsSuite({ figure, repo: REPO, here: HERE, short: SHORT });
    await stalledClientsSuite({ figure, repo: REPO, here: HERE, short: SHORT });
  } finally {
    cleanup();
    fs.rmSync(app.root, { recursive: true, force: true });
  }
  finish();
}

function finish() {
  const failed = results.filter((r) => !r.met).length;
  console.log(`reliability: ${results.length - failed} of ${results.length} goals met in ${Math.round((Date.now() - started) / 1000)} s`);
  process.exitCode = failed > 0 ? 1 : 0;
}

// Every wait above is bounded; should one still be left unsettled, that is a failure, not a quiet exit 0.
process.on('beforeExit', () => {
  if (process.exitCode === undefined) {
    console.error('reliability suite: a step never finished');
    process.exitCode = 2;
  }
});

main().catch((error) => {
  console.error(error?.stack ?? error);
  cleanup();
  process.exitCode = 2;
});
