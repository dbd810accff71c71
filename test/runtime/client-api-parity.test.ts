// Client API behaviours the platform's own integration suite (realm-core 14.14.0's `[baas]` tests) checks,
// over real HTTP against the assembled runtime serving a copy of the example app: the login's device id,
// error links to the URL the client called, "must authenticate first", int64 function results, update
// documents without operators, and push registration.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { REPO_ROOT } from '../helpers/disk';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const HEX24 = /^[0-9a-f]{24}$/;
const ZERO_ID = '000000000000000000000000';

interface Answer { status: number; text: string; body: any; headers: http.IncomingHttpHeaders }

/** A request with node:http, so the Host header can be chosen (fetch sets its own). */
function request(port: number, method: string, route: string, o: { body?: string; token?: string; authorization?: string; host?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
    if (o.authorization !== undefined) headers.authorization = o.authorization;
    if (o.host !== undefined) headers.host = o.host;
    const req = http.request({ host: '127.0.0.1', port, method, path: route, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try { body = text ? JSON.parse(text) : undefined; } catch { body = undefined; }
        resolve({ status: res.statusCode ?? 0, text, body, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

/** The push registrations in the auth journal (`<data>/auth/records.jsonl`), as the runtime wrote them. */
function pushRegistrations(dataDir: string): Array<{ userId: string; deviceId: string; service: string; registrationToken: string }> {
  const live = new Map<string, any>();
  const text = fs.readFileSync(path.join(dataDir, 'auth', 'records.jsonl'), 'utf8');
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const { t, id, d } = JSON.parse(line) as { t: string; id: string; d: unknown };
    if (t !== 'push_registrations') continue;
    if (d === null) live.delete(id); else live.set(id, d);
  }
  return [...live.values()];
}

describe('client API behaviours of the platform that realm-core checks', () => {
  let appDir: string;
  let runtime: RunningRuntime;
  let port: number;
  let app: string;
  const api = '/api/client/v2.0';
  const json = (value: unknown) => JSON.stringify(value);

  before(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-parity-'));
    fs.cpSync(path.join(REPO_ROOT, 'examples/todo-tracker'), appDir, { recursive: true, filter: (src) => path.basename(src) !== '.asl' });
    const providersFile = path.join(appDir, 'auth', 'providers.json');
    const providers = JSON.parse(fs.readFileSync(providersFile, 'utf8'));
    providers['anon-user'].disabled = false;
    fs.writeFileSync(providersFile, JSON.stringify(providers));
    // Collections without rules of their own (tracker.Dog) fall to a default role that allows everything.
    fs.writeFileSync(path.join(appDir, 'data_sources', 'mongodb-atlas', 'default_rule.json'), json({
      roles: [{ name: 'all', apply_when: {}, document_filters: { read: true, write: true }, read: true, write: true, insert: true, delete: true, search: true }],
    }));
    const functionsFile = path.join(appDir, 'functions', 'config.json');
    const functions = JSON.parse(fs.readFileSync(functionsFile, 'utf8'));
    const sources: Record<string, string> = {
      sumFunc: 'exports = function(...args) {\n  return args.reduce((a, b) => a + b, 0);\n};\n',
      longText: 'exports = (l) => `${l}`;\n',
      longMethods: 'exports = (l) => ({ plusOne: l.add(1), isLong: l._bsontype, bigger: l > 2, half: l / 2 });\n',
    };
    for (const [name, source] of Object.entries(sources)) {
      fs.writeFileSync(path.join(appDir, 'functions', `${name}.js`), source);
      functions.push({ name, private: false });
    }
    fs.writeFileSync(functionsFile, JSON.stringify(functions));
    // What the Admin API's POST services writes for the harness's gcm service, and a service of another kind.
    fs.mkdirSync(path.join(appDir, 'services', 'gcm'), { recursive: true });
    fs.writeFileSync(path.join(appDir, 'services', 'gcm', 'config.json'), json({ name: 'gcm', type: 'gcm', config: { senderId: 'gcm' }, secret_config: { apiKey: 'gcm' }, version: 1 }));
    fs.mkdirSync(path.join(appDir, 'services', 'webhooks'), { recursive: true });
    fs.writeFileSync(path.join(appDir, 'services', 'webhooks', 'config.json'), json({ name: 'webhooks', type: 'http', config: {}, version: 1 }));
    runtime = await startRuntime({ appDir, port: 0, log: quiet, functionTimeoutMs: 5000, watch: false });
    port = runtime.port;
    app = `${api}/app/${runtime.appId}`;
  });
  after(async () => { await runtime.close(); fs.rmSync(appDir, { recursive: true, force: true }); });

  const anonymous = async (device: Record<string, unknown> = { platform: 'Linux', sdk: 'unknown' }) => {
    const login = await request(port, 'POST', `${app}/auth/providers/anon-user/login`, { body: json({ options: { device } }) });
    assert.equal(login.status, 200, login.text);
    return login.body as { access_token: string; refresh_token: string; user_id: string; device_id: string };
  };
  const emailUser = async (email: string) => {
    const reg = await request(port, 'POST', `${app}/auth/providers/local-userpass/register`, { body: json({ email, password: 'password1' }) });
    assert.equal(reg.status, 201, reg.text);
    const login = await request(port, 'POST', `${app}/auth/providers/local-userpass/login`, { body: json({ username: email, password: 'password1' }) });
    assert.equal(login.status, 200, login.text);
    return login.body as { access_token: string; refresh_token: string; user_id: string; device_id: string };
  };

  test('a login that names no device gets a new ObjectId device id, carried in its tokens (never the zero id)', async () => {
    const first = await anonymous();
    assert.match(first.device_id, HEX24);
    assert.notEqual(first.device_id, ZERO_ID);
    assert.equal(decodeJwt(first.access_token).baas_device_id, first.device_id);
    assert.equal(decodeJwt(first.refresh_token).baas_device_id, first.device_id);
    const email = await emailUser('device@example.com');
    assert.match(email.device_id, HEX24);
    assert.notEqual(email.device_id, first.device_id, 'each login without a device id is a new device');
    const zero = await anonymous({ deviceId: ZERO_ID });
    assert.notEqual(zero.device_id, ZERO_ID, 'the zero id means "none" and is replaced');
    const named = await anonymous({ deviceId: '65a1b2c3d4e5f60718293a4b' });
    assert.equal(named.device_id, '65a1b2c3d4e5f60718293a4b', 'a device id the client sends is kept');
    // A refreshed access token keeps the session's device.
    const refreshed = await request(port, 'POST', `${api}/auth/session`, { token: email.refresh_token });
    assert.equal(decodeJwt(refreshed.body.access_token).baas_device_id, email.device_id);
  });

  test('error links and the location name the address the client called', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const base = `http://${host}`;
      const location = await request(port, 'GET', `${app}/location`, { host });
      assert.equal(location.body.hostname, base);
      assert.equal(location.body.ws_hostname, `ws://${host}`);
      const dup = await request(port, 'POST', `${app}/auth/providers/local-userpass/register`, { host, body: json({ email: 'device@example.com', password: 'password1' }) });
      assert.equal(dup.status, 409);
      assert.equal(dup.body.error, 'name already in use');
      assert.ok(dup.body.link.startsWith(`${base}/`), dup.body.link);
      const reset = await request(port, 'POST', `${app}/auth/providers/local-userpass/reset`, { host, body: json({ token: 'x', tokenId: 'y', password: 'password2' }) });
      assert.equal(reset.status, 400);
      assert.ok(reset.body.link.startsWith(`${base}/`), reset.body.link);
      for (const failed of [
        await request(port, 'GET', `${api}/no/such/route`, { host }),
        await request(port, 'PATCH', `${app}/location`, { host }),
        await request(port, 'POST', `${app}/functions/call`, { host, body: '{"name":', token: (await anonymous()).access_token }),
      ]) {
        assert.ok(failed.status >= 400 && failed.status < 500, failed.text);
        assert.ok(failed.body.link.startsWith(`${base}/logs?co_id=`), failed.body.link);
      }
    }
  });

  test('client routes that need a user answer a request without a token with 401 "must authenticate first"', async () => {
    const routes: Array<[string, string, string?]> = [
      ['POST', `${api}/auth/api_keys`, json({ name: 'k' })],
      ['GET', `${api}/auth/api_keys`],
      ['GET', `${api}/auth/api_keys/65a1b2c3d4e5f60718293a4b`],
      ['DELETE', `${api}/auth/api_keys/65a1b2c3d4e5f60718293a4b`],
      ['PUT', `${api}/auth/api_keys/65a1b2c3d4e5f60718293a4b/enable`],
      ['PUT', `${api}/auth/api_keys/65a1b2c3d4e5f60718293a4b/disable`],
      ['GET', `${api}/auth/profile`],
      ['POST', `${api}/auth/session`],
      ['DELETE', `${api}/auth/session`],
      ['DELETE', `${api}/auth/delete`],
      ['POST', `${app}/functions/call`, json({ name: 'sumFunc', arguments: [] })],
      ['PUT', `${app}/push/providers/gcm/registration`, json({ registrationToken: 't' })],
      ['DELETE', `${app}/push/providers/gcm/registration`],
    ];
    for (const [method, route, body] of routes) {
      // No header, and `Bearer ` with nothing after it (what the native core sends for a logged-out user).
      for (const authorization of [undefined, 'Bearer ', 'Bearer']) {
        const res = await request(port, method, route, { ...(body !== undefined ? { body } : {}), ...(authorization !== undefined ? { authorization } : {}) });
        assert.equal(res.status, 401, `${method} ${route} (${authorization}): ${res.text}`);
        assert.deepEqual([res.body.error, res.body.error_code], ['must authenticate first', 'MissingAuthReq'], `${method} ${route}`);
      }
      // A token that is there but wrong is still an invalid session, which makes the SDKs refresh.
      const wrong = await request(port, method, route, { ...(body !== undefined ? { body } : {}), token: 'not-a-token' });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.error_code, 'InvalidSession', `${method} ${route}`);
    }
  });

  test('int64 arguments add up to an int64; int32 ones to an int32; a Long keeps its methods and prints exactly', async () => {
    const { access_token: token } = await anonymous();
    const call = (name: string, args: string) => request(port, 'POST', `${app}/functions/call`, { token, body: `{"name":"${name}","arguments":${args}}` });
    const longs = await call('sumFunc', '[{"$numberLong":"1"},{"$numberLong":"2"},{"$numberLong":"3"},{"$numberLong":"4"},{"$numberLong":"5"}]');
    assert.equal(longs.status, 200, longs.text);
    assert.equal(longs.text, '{"$numberLong":"15"}');
    const ints = await call('sumFunc', '[{"$numberInt":"1"},{"$numberInt":"2"},{"$numberInt":"3"},{"$numberInt":"4"},{"$numberInt":"5"}]');
    assert.equal(ints.text, '{"$numberInt":"15"}');
    const doubles = await call('sumFunc', '[{"$numberDouble":"1.5"},{"$numberDouble":"2.25"}]');
    assert.equal(doubles.text, '{"$numberDouble":"3.75"}');
    const text = await call('longText', '[{"$numberLong":"9007199254740993"}]');
    assert.equal(text.body, '9007199254740993', 'a Long in a template literal is its exact digits');
    const methods = await call('longMethods', '[{"$numberLong":"5"}]');
    assert.deepEqual(methods.body, { plusOne: { $numberLong: '6' }, isLong: 'Long', bigger: true, half: { $numberDouble: '2.5' } });
  });

  test('updates without operators set the fields, with upsert, projection, sort and returnNewDocument', async () => {
    const { access_token: token } = await anonymous();
    const action = async (name: string, args: Record<string, unknown>) => {
      const res = await request(port, 'POST', `${app}/functions/call`, {
        token, body: json({ name, service: 'mongodb-atlas', arguments: [{ database: 'tracker', collection: 'Dog', ...args }] }),
      });
      return res;
    };
    const fido = { name: 'fido', breed: 'king charles' };
    const bob = { name: 'bob', breed: 'french bulldog' };
    assert.equal((await action('deleteMany', { query: {} })).status, 200);

    const none = await action('findOneAndUpdate', { filter: fido, update: bob });
    assert.equal(none.status, 200, none.text);
    assert.equal(none.body, null);

    const upserted = await action('updateOne', { query: fido, update: bob, upsert: true });
    assert.equal(upserted.status, 200, upserted.text);
    assert.deepEqual([upserted.body.matchedCount, upserted.body.modifiedCount], [{ $numberInt: '0' }, { $numberInt: '0' }]);
    assert.ok(upserted.body.upsertedId.$oid, upserted.text);
    const updated = await action('updateOne', { query: bob, update: fido });
    assert.deepEqual(updated.body, { matchedCount: { $numberInt: '1' }, modifiedCount: { $numberInt: '1' } }, 'no upsertedId without an upsert');
    const found = await action('findOne', { query: fido });
    assert.deepEqual({ name: found.body.name, breed: found.body.breed }, fido, 'the fields were set (the upserted document took the update)');

    const many = await action('updateMany', { query: bob, update: fido, upsert: true });
    assert.ok(many.body.upsertedId.$oid, many.text);
    const manyAgain = await action('updateMany', { query: fido, update: { breed: 'beagle' } });
    assert.deepEqual(manyAgain.body, { matchedCount: { $numberInt: '2' }, modifiedCount: { $numberInt: '2' } });

    const options = { projection: { name: 1, breed: 1 }, sort: { name: 1 }, upsert: true, returnNewDocument: true };
    const changed = await action('findOneAndUpdate', { filter: { name: 'fido' }, update: bob, ...options });
    assert.equal(changed.status, 200, changed.text);
    assert.deepEqual({ name: changed.body.name, breed: changed.body.breed }, bob);
    assert.deepEqual(Object.keys(changed.body).sort(), ['_id', 'breed', 'name'], 'the projection applies');
    const inserted = await action('findOneAndUpdate', { filter: { name: 'rex' }, update: { breed: 'collie' }, ...options });
    assert.deepEqual({ name: inserted.body.name, breed: inserted.body.breed }, { name: 'rex', breed: 'collie' }, 'an upsert seeds from the filter');

    // An update that makes no document: the upsert has nothing to insert, as the platform answered it.
    const refused = await action('findOneAndUpdate', { filter: { name: 'invalid name' }, update: { '': null }, ...options });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error, 'insert not permitted');
    const invalid = await action('findOneAndUpdate', { filter: { name: 'invalid name' }, update: { '': null } });
    assert.equal(invalid.status, 400, invalid.text);
    assert.equal(invalid.body.error_code, 'MongoDBError');
    const mixed = await action('updateOne', { query: { name: 'rex' }, update: { $set: { a: 1 }, b: 2 } });
    assert.equal(mixed.status, 400, 'operators and plain fields together are refused, as by MongoDB');
    assert.equal((await action('count', { query: { name: 'invalid name' } })).body.$numberLong, '0', 'nothing was inserted');
  });

  test('push registration: for the caller\'s own device only, unknown services 404, bad bodies 400, never a 500', async () => {
    const ann = await emailUser('push-ann@example.com');
    const eve = await emailUser('push-eve@example.com');
    const route = (service: string) => `${app}/push/providers/${service}/registration`;
    const mine = (userId: string) => pushRegistrations(runtime.dataDir).filter((r) => r.userId === userId);

    const registered = await request(port, 'PUT', route('gcm'), { token: ann.access_token, body: json({ registrationToken: 'ann-token' }) });
    assert.equal(registered.status, 204, registered.text);
    assert.equal(registered.text, '');
    assert.deepEqual(mine(ann.user_id).map((r) => [r.service, r.deviceId, r.registrationToken]), [['gcm', ann.device_id, 'ann-token']]);
    const again = await request(port, 'PUT', route('gcm'), { token: ann.access_token, body: json({ registrationToken: 'ann-token-2' }) });
    assert.equal(again.status, 204);
    assert.deepEqual(mine(ann.user_id).map((r) => r.registrationToken), ['ann-token-2'], 'a device has one registration per service');

    // Eve names Ann in the body: ignored, the registration is Eve's own; her deregistration leaves Ann's.
    const forged = await request(port, 'PUT', route('gcm'), { token: eve.access_token, body: json({ registrationToken: 'eve-token', userId: ann.user_id, deviceId: ann.device_id }) });
    assert.equal(forged.status, 204);
    assert.deepEqual(mine(eve.user_id).map((r) => [r.deviceId, r.registrationToken]), [[eve.device_id, 'eve-token']]);
    assert.equal((await request(port, 'DELETE', route('gcm'), { token: eve.access_token })).status, 204);
    assert.deepEqual(mine(eve.user_id), []);
    assert.deepEqual(mine(ann.user_id).map((r) => r.registrationToken), ['ann-token-2']);

    // Deregistering what was never registered is fine, as on the platform.
    const fresh = await anonymous();
    assert.equal((await request(port, 'DELETE', route('gcm'), { token: fresh.access_token })).status, 204);

    for (const service of ['gcm_blah', 'webhooks', 'mongodb-atlas', '__proto__', 'constructor', '..%2Fgcm', 'x'.repeat(300)]) {
      const res = await request(port, 'PUT', route(service), { token: ann.access_token, body: json({ registrationToken: 't' }) });
      assert.equal(res.status, 404, `${service}: ${res.text}`);
      assert.equal(res.body.error_code, 'ServiceNotFound');
      assert.ok(res.body.error.length < 300, 'a long name is cut in the message');
      assert.equal((await request(port, 'DELETE', route(service), { token: ann.access_token })).status, 404);
    }
    const unknown = await request(port, 'PUT', route('gcm_blah'), { token: ann.access_token, body: json({ registrationToken: 't' }) });
    assert.equal(unknown.body.error, "service not found: 'gcm_blah'");

    for (const body of ['', '{}', '[]', 'null', '{"registrationToken":""}', '{"registrationToken":7}', json({ registrationToken: 'x'.repeat(5000) }), '{"registrationToken":']) {
      const res = await request(port, 'PUT', route('gcm'), { token: ann.access_token, body });
      assert.equal(res.status, 400, `${body.slice(0, 40)}: ${res.text}`);
    }
    assert.equal((await request(port, 'PUT', `${api}/app/other-app/push/providers/gcm/registration`, { token: ann.access_token, body: json({ registrationToken: 't' }) })).status, 404);
    assert.deepEqual(mine(ann.user_id).map((r) => r.registrationToken), ['ann-token-2'], 'refused requests changed nothing');

    // A deleted user's registrations go with it.
    assert.equal((await request(port, 'DELETE', `${api}/auth/delete`, { token: ann.access_token })).status, 204);
    assert.deepEqual(mine(ann.user_id), []);
  });
});
