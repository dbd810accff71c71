// The security part of `npm run reliability` (issue 21): each case is an attack over real HTTP or WebSocket
// against `dist/cli.js serve`, judged by its side effect (the victim's document still there, no account
// made, no secret in any answer, no file outside the folder served). Every case prints one line.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { EJSON } from 'bson';
import WebSocket from 'ws';
import { unzipSync } from 'fflate';

const WS_WAIT_MS = 10_000;

/** A feed client: collects EJSON messages; `next` waits (bounded) for one that passes a test. */
async function connectFeed(url, headers = {}) {
  const ws = new WebSocket(url, { headers });
  const received = [];
  const waiters = new Set();
  let closed = false;
  ws.on('message', (data) => {
    const message = EJSON.parse(data.toString());
    received.push(message);
    for (const w of [...waiters]) if (w.test(message)) { waiters.delete(w); w.resolve(message); }
  });
  ws.on('close', () => { closed = true; for (const w of [...waiters]) { waiters.delete(w); w.resolve(undefined); } });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
  return {
    received,
    get closed() { return closed; },
    send: (message) => ws.send(EJSON.stringify(message, { relaxed: false })),
    next(test) {
      const seen = received.find(test);
      if (seen) return Promise.resolve(seen);
      if (closed) return Promise.resolve(undefined);
      return new Promise((resolve) => {
        const waiter = { test, resolve };
        waiters.add(waiter);
        setTimeout(() => { waiters.delete(waiter); resolve(undefined); }, WS_WAIT_MS);
      });
    },
    close: () => ws.terminate(),
  };
}

/** A raw upgrade request with the given Host; resolves with the status line's code. */
function rawUpgrade(port, target, host) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => { socket.destroy(); resolve(0); }, 5000);
    socket.on('connect', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`));
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { text += chunk; if (text.includes('\r\n')) { clearTimeout(timer); socket.destroy(); resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)); } });
    socket.on('error', () => { clearTimeout(timer); resolve(0); });
  });
}

/** A POST with a JSON body and the given Host, over a raw socket (fetch sends the URL's host whatever the headers say). */
function rawPost(port, target, host, body) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const payload = JSON.stringify(body);
    let text = '';
    const timer = setTimeout(() => { socket.destroy(); resolve(0); }, 30_000);
    socket.on('connect', () => socket.write(`POST ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`));
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => { text += chunk; });
    socket.on('close', () => { clearTimeout(timer); resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)); });
    socket.on('error', () => undefined);
  });
}

/** The admin key pair a first start printed, logged in. */
async function adminLogin(server, send) {
  const out = server.output();
  const publicKey = /admin public key: (\S+)/.exec(out)?.[1];
  const privateKey = /admin private key: (\S+)/.exec(out)?.[1];
  const res = await send(`${server.url}/api/admin/v3.0/auth/providers/mongodb-cloud/login`, { body: { username: publicKey, apiKey: privateKey } });
  if (res.status !== 200) throw new Error(`admin login failed: ${res.status} ${res.text}`);
  return res.body.access_token;
}

function modesUnder(dir) {
  const wrong = [];
  let count = 0;
  (function walk(d) {
    const stat = fs.lstatSync(d);
    count++;
    if ((stat.mode & 0o777) !== 0o700) wrong.push(`${d} ${(stat.mode & 0o777).toString(8)}`);
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        count++;
        const mode = fs.statSync(p).mode & 0o777;
        if (mode !== 0o600) wrong.push(`${p} ${mode.toString(8)}`);
      }
    }
  })(dir);
  return { wrong, count };
}

/**
 * Runs every attack. `ctx` brings run.mjs's helpers: prepareApp, startServer(app, port, extraArgs),
 * stopServer, send, login, figure, APP_ID, CLI.
 */
export async function securitySuite(ctx) {
  const { prepareApp, startServer, stopServer, send, login, figure, APP_ID, CLI } = ctx;
  const cases = [];
  const check = (name, ok, detail = '') => { cases.push({ name, ok }); if (!ok) console.log(`  security: ${name} FAILED ${detail}`.slice(0, 600)); };

  // ---- one app, its data folder inside the app folder (where an export must not reach it)
  const app = prepareApp();
  app.dataDir = path.join(app.appDir, 'local-data');
  const secretsFile = path.join(app.appDir, 'secrets.json');
  const SECRET = 'reliability-secret-value-7f3a';
  fs.writeFileSync(secretsFile, JSON.stringify({ reliabilityMarker: SECRET }));
  fs.mkdirSync(path.join(app.appDir, 'hosting', 'files'), { recursive: true });
  fs.writeFileSync(path.join(app.appDir, 'hosting', 'files', 'index.html'), '<p>hosted</p>\n');
  fs.symlinkSync(secretsFile, path.join(app.appDir, 'hosting', 'files', 'leak.json'));
  fs.symlinkSync(path.join(app.appDir, 'functions'), path.join(app.appDir, 'hosting', 'files', 'fns'));
  const server = await startServer(app);
  const { url, api } = server;
  const port = Number(new URL(url).port);
  try {
    // DNS rebinding: a page whose name resolves to 127.0.0.1 sends its own name as Host.
    const evilRegister = { status: await rawPost(port, `/api/client/v2.0/app/${APP_ID}/auth/providers/local-userpass/register`, `evil.example:${port}`, { email: 'rebound@example.com', password: 'password1' }) };
    const reboundLogin = await send(`${api}/auth/providers/local-userpass/login`, { body: { username: 'rebound@example.com', password: 'password1' }, hangMs: 30_000 });
    check('rebinding: a request with a foreign Host gets 421 and registers no one', evilRegister.status === 421 && reboundLogin.status === 401, `${evilRegister.status} / login ${reboundLogin.status}`);
    const evilUpgrade = await rawUpgrade(port, `/api/client/v2.0/app/${APP_ID}/sync/feed`, 'attacker.example');
    const ownUpgrade = await rawUpgrade(port, `/api/client/v2.0/app/${APP_ID}/sync/feed`, `localhost:${port}`);
    check('rebinding: a WebSocket upgrade with a foreign Host gets 421 (the own host upgrades)', evilUpgrade === 421 && ownUpgrade === 101, `${evilUpgrade} / ${ownUpgrade}`);

    // CSRF: a page elsewhere posts a form (text/plain, no preflight) to the unauthenticated routes.
    const csrfRegister = await send(`${api}/auth/providers/local-userpass/register`, { headers: { Origin: 'https://evil.example', 'Content-Type': 'text/plain' }, body: JSON.stringify({ email: 'csrf@example.com', password: 'password1' }) });
    const csrfLogin = await send(`${api}/auth/providers/local-userpass/login`, { body: { username: 'csrf@example.com', password: 'password1' }, hangMs: 30_000 });
    check('CSRF: register from a foreign Origin (text/plain) is refused 403 and makes no account', csrfRegister.status === 403 && csrfLogin.status === 401, `${csrfRegister.status} / ${csrfLogin.status}`);
    const victim = await login(api, 'victim@example.com');
    const csrfReset = await send(`${api}/auth/providers/local-userpass/reset/call`, { headers: { Origin: 'null', 'Content-Type': 'text/plain' }, body: JSON.stringify({ email: 'victim@example.com', password: 'attacker-chosen', arguments: [] }) });
    const victimStill = await send(`${api}/auth/providers/local-userpass/login`, { body: { username: 'victim@example.com', password: 'password1' }, hangMs: 30_000 });
    check('CSRF: a password reset from Origin null is refused 403; the victim\'s password still works', csrfReset.status === 403 && victimStill.status === 200, `${csrfReset.status} / ${victimStill.status}`);
    const allowedOrigin = await send(`${api}/auth/providers/local-userpass/register`, { headers: { Origin: 'http://localhost:5173' }, body: { email: 'dev@example.com', password: 'password1' }, hangMs: 30_000 });
    check('CSRF: the app\'s allowed origin still registers', allowedOrigin.status === 201, String(allowedOrigin.status));

    // CORS of the Admin API: only the runtime's own origin.
    const preflight = (target, origin) => fetch(target, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization' } });
    const adminTarget = `${url}/api/admin/v3.0/auth/providers/mongodb-cloud/login`;
    const foreign = await preflight(adminTarget, 'https://evil.example');
    const hostedSite = await preflight(adminTarget, `http://${APP_ID}.localhost:${port}`);
    const appOrigin = await preflight(adminTarget, 'http://localhost:5173');
    const own = await preflight(adminTarget, `http://localhost:${port}`);
    const logsSpelt = await Promise.all(['/logs/', '/%6Cogs'].map((spelling) => preflight(`${url}${spelling}`, 'http://localhost:5173')));
    check('/logs CORS: the app\'s origin is not approved for /logs however spelt', logsSpelt.every((res) => !res.headers.get('access-control-allow-origin')));
    check('admin CORS: approved for the runtime\'s own origin only (not a foreign page, a hosted site or the app\'s origin)',
      !foreign.headers.get('access-control-allow-origin') && !hostedSite.headers.get('access-control-allow-origin') && !appOrigin.headers.get('access-control-allow-origin') && own.headers.get('access-control-allow-origin') === `http://localhost:${port}`);

    // /logs: the developer's, and without request-body values.
    const marker = `body-marker-${Date.now()}`;
    const failing = await send(`${api}/functions/call`, { token: victim.token, body: { name: marker, arguments: [] } });
    const logsAnonymous = await send(failing.body?.link ?? `${url}/logs`, { method: 'GET' });
    const adminToken = await adminLogin(server, send);
    const logsAdmin = await send(`${url}/logs`, { method: 'GET', token: adminToken });
    check('/logs needs the admin session; no log text carries a request-body value',
      failing.status === 404 && logsAnonymous.status === 401 && logsAdmin.status === 200 && !logsAdmin.text.includes(marker) && !server.output().includes(marker), `${failing.status} ${logsAnonymous.status} ${logsAdmin.status}`);

    // Sync: ids are values, traces are the developer's, the custom user data cannot be synced into admin.
    const attacker = await login(api, 'sync-attacker@example.com');
    const victimTask = { $oid: 'aa'.repeat(12) };
    const inserted = await send(`${api}/functions/call`, { token: victim.token, body: { service: 'mongodb-atlas', name: 'insertOne', arguments: [{ database: 'tracker', collection: 'Task', document: { _id: victimTask, _partition: victim.userId, name: 'victim task', status: 'open', isComplete: false } }] } });
    const feedUrl = `${url.replace('http://', 'ws://')}/api/client/v2.0/app/${APP_ID}/sync/feed`;
    const feed = await connectFeed(feedUrl, { Authorization: `Bearer ${attacker.token}` });
    feed.send({ type: 'open', session: 1, partition: JSON.stringify(attacker.userId), trace: true });
    const opened = await feed.next((m) => m.type === 'opened' && m.session === 1);
    check('sync traces: an ordinary client asking for traces gets verdicts only', opened !== undefined && opened.permissions.readTrace === undefined && opened.permissions.writeTrace === undefined, JSON.stringify(opened?.permissions).slice(0, 200));
    feed.send({ type: 'write', session: 1, id: 1, changes: [{ op: 'delete', collection: 'Task', _id: { $in: [victimTask] } }] });
    feed.send({ type: 'write', session: 1, id: 2, changes: [{ op: 'modify', collection: 'Task', _id: { $ne: null }, set: { name: 'pwned' } }] });
    const answers = [await feed.next((m) => m.id === 1), await feed.next((m) => m.id === 2)];
    const victimFind = await send(`${api}/functions/call`, { token: victim.token, body: { service: 'mongodb-atlas', name: 'findOne', arguments: [{ database: 'tracker', collection: 'Task', query: { _id: victimTask } }] } });
    check('sync ids are values: delete {"$in": [victim id]} and modify {"$ne": null} are rejected; the victim\'s task is intact',
      inserted.status === 200 && answers.every((a) => a?.type === 'rejected') && victimFind.body?.name === 'victim task', `${JSON.stringify(answers).slice(0, 200)} ${victimFind.text?.slice(0, 100)}`);
    const ownUser = await send(`${api}/functions/call`, { token: attacker.token, body: { service: 'mongodb-atlas', name: 'findOne', arguments: [{ database: 'tracker', collection: 'User', query: { userId: attacker.userId } }] } });
    feed.send({ type: 'write', session: 1, id: 3, changes: [{ op: 'modify', collection: 'User', _id: ownUser.body?._id, set: { isAdmin: true } }] });
    const escalation = await feed.next((m) => m.id === 3);
    const afterEscalation = await send(`${api}/functions/call`, { token: attacker.token, body: { service: 'mongodb-atlas', name: 'findOne', arguments: [{ database: 'tracker', collection: 'User', query: { userId: attacker.userId } }] } });
    check('privilege escalation: syncing her own user document with isAdmin true is rejected; she is not admin', escalation?.type === 'rejected' && afterEscalation.body?.isAdmin === false, `${JSON.stringify(escalation).slice(0, 200)} ${afterEscalation.text?.slice(0, 100)}`);
    const facet = await send(`${api}/functions/call`, { token: attacker.token, body: { service: 'mongodb-atlas', name: 'aggregate', arguments: [{ database: 'tracker', collection: 'Task', pipeline: [{ $facet: { users: [{ $lookup: { from: 'User', pipeline: [], as: 'all' } }] } }] }] } });
    check('aggregation: a $lookup hidden in $facet is refused where rules apply; no user document leaks', facet.status >= 400 && !facet.text.includes('victim@example.com'), `${facet.status} ${facet.text.slice(0, 160)}`);
    // The runtime's own sync history holds every partition's changes: no client reads it, whatever the app's default rule.
    const history = await send(`${api}/functions/call`, { token: attacker.token, body: { service: 'mongodb-atlas', name: 'find', arguments: [{ database: '__realm_sync', collection: 'history', query: {} }] } });
    const partitions = await send(`${api}/functions/call`, { token: attacker.token, body: { service: 'mongodb-atlas', name: 'count', arguments: [{ database: '__realm_sync', collection: 'partitions', query: {} }] } });
    check('the sync history is no client\'s to read: finds nothing, counts nothing, holds no victim task',
      history.status < 500 && !history.text.includes('victim task') && (history.status >= 400 || JSON.stringify(history.body) === '[]') && partitions.status < 500 && (partitions.status >= 400 || Number(EJSON.parse(partitions.text)) === 0),
      `${history.status} ${history.text.slice(0, 160)} / ${partitions.status} ${partitions.text.slice(0, 80)}`);
    feed.close();

    // Sync sessions obey the account: logout, then deletion, end live sessions; reconnecting fails.
    const leaver = await login(api, 'leaver@example.com');
    const live = await connectFeed(feedUrl, { Authorization: `Bearer ${leaver.token}` });
    live.send({ type: 'open', session: 1, partition: JSON.stringify(leaver.userId) });
    await live.next((m) => m.type === 'snapshot');
    const logout = await send(`${url}/api/client/v2.0/auth/session`, { method: 'DELETE', token: leaver.refresh });
    const ended = await live.next((m) => m.type === 'error' && m.session === 1);
    let reconnect;
    try {
      const again = await connectFeed(feedUrl, { Authorization: `Bearer ${leaver.token}` });
      reconnect = await again.next((m) => m.type === 'error' || m.type === 'authenticated');
      again.close();
    } catch (error) { reconnect = { refused: String(error) }; }
    check('logout ends the live sync session with 203 and reconnecting with the old token fails', logout.status === 204 && ended?.code === 203 && reconnect?.type !== 'authenticated', `${logout.status} ${JSON.stringify(ended)} ${JSON.stringify(reconnect)}`);
    const deleted = await login(api, 'deleted@example.com');
    const live2 = await connectFeed(feedUrl, { Authorization: `Bearer ${deleted.token}` });
    live2.send({ type: 'open', session: 1, partition: JSON.stringify(deleted.userId) });
    await live2.next((m) => m.type === 'snapshot');
    await send(`${url}/api/client/v2.0/auth/delete`, { method: 'DELETE', token: deleted.token });
    const ended2 = await live2.next((m) => m.type === 'error' && m.session === 1);
    check('deleting the user ends her live sync session (203)', ended2?.code === 203, JSON.stringify(ended2));
    live.close();
    live2.close();

    // Static hosting never follows a symlink out of hosting/files.
    const hosted = (p) => fetch(`${url}${p}`, { headers: { Host: `${APP_ID}.localhost:${port}` } }).then(async (r) => ({ status: r.status, text: await r.text() }));
    const page = await hosted('/');
    const leak = await hosted('/leak.json');
    const fns = await hosted('/fns/echo.js');
    check('hosting: symlinks out of hosting/files answer 404 and leak nothing', page.status === 200 && leak.status === 404 && fns.status === 404 && !leak.text.includes(SECRET), `${page.status} ${leak.status} ${fns.status}`);

    // Export: no data folder (here inside the app folder) and no key material.
    const profile = await send(`${url}/api/admin/v3.0/auth/profile`, { method: 'GET', token: adminToken });
    const groupId = profile.body?.roles?.[0]?.group_id;
    const appsList = await send(`${url}/api/admin/v3.0/groups/${groupId}/apps`, { method: 'GET', token: adminToken });
    const internalId = appsList.body?.find?.((a) => a.client_app_id === APP_ID)?._id;
    const exported = await fetch(`${url}/api/admin/v3.0/groups/${groupId}/apps/${internalId}/export`, { headers: { Authorization: `Bearer ${adminToken}` } });
    const entries = exported.status === 200 ? Object.keys(unzipSync(new Uint8Array(await exported.arrayBuffer()))) : [];
    const tokenSecret = fs.readFileSync(path.join(app.dataDir, 'auth', 'token-secret'), 'utf8');
    const exportedText = entries.join('\n');
    check('export: neither the data folder (inside the app folder here) nor any key or secret file is in the zip',
      entries.length > 10 && !entries.some((e) => e.startsWith('local-data/') || /token-secret|api-key\.json|sessions\.json|secrets\.json|records\.jsonl/.test(e)) && !exportedText.includes(tokenSecret), `${exported.status} ${entries.filter((e) => e.includes('data') || e.includes('secret')).join(', ')}`);

    // The data folder: 0700, its files 0600.
    const modes = modesUnder(app.dataDir);
    check(`data folder: ${modes.count} folders and files, all 0700 / 0600`, modes.wrong.length === 0 && modes.count > 5, modes.wrong.slice(0, 5).join('; '));

    // asl admin-keys --rotate ends every admin session opened with the old key, even while the runtime runs.
    const before = await send(`${url}/api/admin/v3.0/auth/profile`, { method: 'GET', token: adminToken });
    const rotated = spawnSync(process.execPath, [CLI, 'admin-keys', '--data', app.dataDir, '--rotate'], { encoding: 'utf8' });
    const after = await send(`${url}/api/admin/v3.0/auth/profile`, { method: 'GET', token: adminToken });
    check('admin-keys --rotate ends the admin sessions of the old key in the running runtime', before.status === 200 && rotated.status === 0 && after.status === 401, `${before.status} ${rotated.status} ${after.status}`);
  } finally {
    await stopServer(server);
    fs.rmSync(app.root, { recursive: true, force: true });
  }

  // ---- several apps under one root: `team/app` and `team_app`, a symlink loop, per-app origins, the second app's feed
  const root = prepareApp();
  const rootDir = path.join(root.root, 'apps');
  const secondId = 'second-app-fghij';
  fs.mkdirSync(path.join(rootDir, 'team'), { recursive: true });
  fs.renameSync(root.appDir, path.join(rootDir, 'team', 'app'));
  fs.cpSync(path.join(rootDir, 'team', 'app'), path.join(rootDir, 'team_app'), { recursive: true });
  const secondConfig = path.join(rootDir, 'team_app', 'realm_config.json');
  const config = JSON.parse(fs.readFileSync(secondConfig, 'utf8'));
  fs.writeFileSync(secondConfig, JSON.stringify({ ...config, app_id: secondId, name: 'second', allowed_request_origins: ['https://second.example'] }, null, 2));
  fs.symlinkSync('.', path.join(rootDir, 'team_app', 'functions', 'loop'));
  fs.symlinkSync('b', path.join(rootDir, 'team', 'app', 'a'));
  fs.symlinkSync('a', path.join(rootDir, 'team', 'app', 'b'));
  let multi;
  try {
    multi = await startServer({ appDir: rootDir, dataDir: root.dataDir }, 0, ['--function-timeout', '10']);
    check('an app folder with symlink loops starts (a warning at most)', true);
  } catch (error) {
    check('an app folder with symlink loops starts (a warning at most)', false, error.message);
  }
  if (multi) {
    try {
      const second = `${multi.url}/api/client/v2.0/app/${secondId}`;
      const folders = fs.readdirSync(path.join(root.dataDir, 'apps')).sort();
      check('team/app and team_app get different data folders', folders.length === 2 && new Set(folders).size === 2, folders.join(', '));
      const user = await login(second, 'second@example.com');
      const feed = await connectFeed(`${second.replace('http://', 'ws://')}/sync/feed`, { Authorization: `Bearer ${user.token}` });
      feed.send({ type: 'open', session: 1, partition: JSON.stringify(user.userId) });
      const snapshot = await feed.next((m) => m.type === 'snapshot' || m.type === 'error');
      feed.close();
      check('the second app under one root serves its sync feed', snapshot?.type === 'snapshot', JSON.stringify(snapshot).slice(0, 200));
      const preflight = (target, origin) => fetch(target, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' } });
      const firstWithSecondOrigin = await preflight(`${multi.api}/functions/call`, 'https://second.example');
      const secondWithItsOrigin = await preflight(`${second}/functions/call`, 'https://second.example');
      const crossRegister = await send(`${multi.api}/auth/providers/local-userpass/register`, { headers: { Origin: 'https://second.example' }, body: { email: 'cross@example.com', password: 'password1' } });
      check('one app\'s allowed origins apply to that app only (CORS and the Origin check)',
        !firstWithSecondOrigin.headers.get('access-control-allow-origin') && secondWithItsOrigin.headers.get('access-control-allow-origin') === 'https://second.example' && crossRegister.status === 403,
        `${firstWithSecondOrigin.headers.get('access-control-allow-origin')} ${secondWithItsOrigin.headers.get('access-control-allow-origin')} ${crossRegister.status}`);
      const modes = modesUnder(root.dataDir);
      check(`multi-app data folder: ${modes.count} folders and files, all 0700 / 0600`, modes.wrong.length === 0, modes.wrong.slice(0, 5).join('; '));
    } finally {
      await stopServer(multi);
    }
  }
  fs.rmSync(root.root, { recursive: true, force: true });

  const passed = cases.filter((c) => c.ok).length;
  figure(`security attacks over HTTP/WebSocket: ${passed} of ${cases.length} ended safely (goal all)`, passed === cases.length && cases.length >= 20);
}
