import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT, decodeJwt } from 'jose';
import { APP_ID, JWT_SECRET, appRoute, client, errorOf, startAuthHarness, type Harness } from './fixtures/auth-harness';
import type { ApiError } from '../../runtime/http/errors';

const HEX24 = /^[0-9a-f]{24}$/;
const device = { platform: 'node', platformVersion: '20', sdkVersion: '2.0.1' };

function customJwt(claims: Record<string, unknown>, secret = JWT_SECRET) {
  return new SignJWT({ aud: APP_ID, user_data: { name: 'Jean' }, ...claims })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setExpirationTime('1h').sign(new TextEncoder().encode(secret));
}

describe('client API auth routes over HTTP', () => {
  let h: Harness;
  before(async () => {
    h = await startAuthHarness({
      functions: {
        authFunc: { run: ([creds]) => { const c = creds as { username?: string }; if (!c.username) throw new Error('no username'); return { id: `fn-${c.username}` }; } },
        sum: { run: (args) => (args as number[]).reduce((a, b) => a + b, 0) },
        secretSauce: { private: true, run: () => 'hidden' },
        fails: { run: () => { throw new Error('it broke'); } },
        nothing: { run: () => undefined },
      },
      customUserData: new Map(),
      allowedOrigins: ['https://app.example.org'],
    });
  });
  after(() => h.close());

  test('location points at this runtime, at the address the client called', async () => {
    const res = await h.request('GET', appRoute('/location'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(res.json, {
      deployment_model: 'LOCAL', location: 'IE',
      hostname: `http://127.0.0.1:${h.server.port}`, ws_hostname: `ws://127.0.0.1:${h.server.port}`,
    });
    const other = await h.request('GET', client('/app/other-app/location'));
    assert.equal(other.status, 404);
    errorOf(other);
  });

  test('anonymous login returns tokens with the platform claims and a new device_id', async () => {
    const res = await h.request('POST', appRoute('/auth/providers/anon-user/login'), { body: { options: { device } } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(Object.keys(res.json).sort(), ['access_token', 'device_id', 'refresh_token', 'user_id']);
    assert.match(res.json.user_id, HEX24);
    assert.match(res.json.device_id, HEX24);
    assert.notEqual(res.json.device_id, '000000000000000000000000', 'the platform makes a device (an ObjectId) for a login that names none');
    const access = decodeJwt(res.json.access_token);
    const refresh = decodeJwt(res.json.refresh_token);
    assert.equal(access.typ, 'access');
    assert.equal(access.sub, res.json.user_id);
    assert.equal(access.exp! - access.iat!, 1800);
    assert.equal(access.iss, refresh.baas_id);
    assert.equal(access.baas_device_id, res.json.device_id);
    assert.equal(access.stitch_devId, access.baas_device_id);
    assert.equal(access.stitch_domainId, access.baas_domain_id);
    assert.equal(refresh.typ, 'refresh');
    assert.equal(refresh.stitch_id, refresh.baas_id);
    assert.deepEqual(refresh.stitch_ident, refresh.baas_identity);
    assert.equal((refresh.baas_identity as { provider_type: string }).provider_type, 'anon-user');
    assert.equal(refresh.baas_data, null);
    assert.ok(refresh.exp! >= 3244738818, 'anonymous refresh tokens effectively never expire');
  });

  test('a client device id is echoed and carried in the token', async () => {
    const deviceId = '65a1b2c3d4e5f60718293a4b';
    const res = await h.request('POST', appRoute('/auth/providers/anon-user/login'), { body: { options: { device: { ...device, deviceId } } } });
    assert.equal(res.json.device_id, deviceId);
    assert.equal(decodeJwt(res.json.access_token).baas_device_id, deviceId);
  });

  test('email/password: register, login, same user on repeated logins, profile', async () => {
    const reg = await h.request('POST', appRoute('/auth/providers/local-userpass/register'), { body: { email: 'ann@example.com', password: 'secret-1' } });
    assert.ok(reg.status >= 200 && reg.status < 300);
    assert.equal(reg.text, '');
    assert.equal(reg.headers.get('content-type'), null, 'an empty success carries no content type');
    const dup = await h.request('POST', appRoute('/auth/providers/local-userpass/register'), { body: { email: 'ANN@example.com', password: 'secret-1' } });
    assert.equal(dup.status, 409);
    assert.deepEqual([errorOf(dup).error, errorOf(dup).error_code], ['name already in use', 'AccountNameInUse']);

    const first = await h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'ann@example.com', password: 'secret-1' } });
    const second = await h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'ann@example.com', password: 'secret-1' } });
    assert.equal(first.status, 200);
    assert.equal(first.json.user_id, second.json.user_id);
    assert.notEqual(first.json.refresh_token, second.json.refresh_token);

    const profile = await h.request('GET', client('/auth/profile'), { token: first.json.access_token });
    assert.equal(profile.status, 200);
    assert.equal(profile.json.user_id, first.json.user_id);
    assert.match(profile.json.domain_id, HEX24);
    assert.equal(profile.json.type, 'normal');
    assert.deepEqual(profile.json.data, { email: 'ann@example.com' });
    assert.equal(profile.json.identities.length, 1);
    assert.equal(profile.json.identities[0].provider_type, 'local-userpass');
    assert.match(profile.json.identities[0].provider_id, HEX24);
  });

  test('wrong passwords and unknown users get the same answer', async () => {
    await h.request('POST', appRoute('/auth/providers/local-userpass/register'), { body: { email: 'bob@example.com', password: 'right-pass' } });
    const wrong = await h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'bob@example.com', password: 'wrong-pass' } });
    const unknown = await h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'nobody@example.com', password: 'wrong-pass' } });
    assert.equal(wrong.status, 401);
    assert.equal(unknown.status, 401);
    const a = errorOf(wrong), b = errorOf(unknown);
    assert.deepEqual([a.error, a.error_code], [b.error, b.error_code]);
    assert.equal(a.error_code, 'InvalidPassword');
    assert.ok(!h.logs.some((l) => l.includes('wrong-pass') || l.includes('right-pass')), 'passwords never reach the log');
  });

  test('a refresh right after login (same second, same claims) returns a distinct access token', async () => {
    const login = await h.request('POST', appRoute('/auth/providers/anon-user/login'), { body: {} });
    const refreshed = await h.request('POST', client('/auth/session'), { token: login.json.refresh_token });
    const again = await h.request('POST', client('/auth/session'), { token: login.json.refresh_token });
    const tokens = [login.json.access_token, refreshed.json.access_token, again.json.access_token];
    assert.equal(new Set(tokens).size, 3, 'three distinct access tokens');
    for (const token of tokens) assert.equal((await h.request('GET', client('/auth/profile'), { token })).status, 200);
  });

  test('refresh, logout and the 401 bodies that drive refresh', async () => {
    const login = await h.request('POST', appRoute('/auth/providers/anon-user/login'), { body: {} });
    const refreshed = await h.request('POST', client('/auth/session'), { token: login.json.refresh_token });
    assert.ok(refreshed.status >= 200 && refreshed.status < 300);
    assert.deepEqual(Object.keys(refreshed.json), ['access_token']);
    assert.equal(decodeJwt(refreshed.json.access_token).sub, login.json.user_id);

    const withAccessAsRefresh = await h.request('POST', client('/auth/session'), { token: login.json.access_token });
    assert.equal(withAccessAsRefresh.status, 401);
    assert.equal(errorOf(withAccessAsRefresh).error, 'invalid session: failed to find refresh token');

    h.clock.advance(31 * 60 * 1000);
    const expired = await h.request('GET', client('/auth/profile'), { token: refreshed.json.access_token });
    assert.equal(expired.status, 401);
    assert.deepEqual([errorOf(expired).error, errorOf(expired).error_code], ['invalid session: access token expired', 'InvalidSession']);
    const again = await h.request('POST', client('/auth/session'), { token: login.json.refresh_token });
    assert.equal((await h.request('GET', client('/auth/profile'), { token: again.json.access_token })).status, 200);

    const out = await h.request('DELETE', client('/auth/session'), { token: login.json.refresh_token });
    assert.equal(out.status, 204);
    assert.equal(out.headers.get('content-type'), null);
    assert.equal(out.text, '');
    const afterLogout = await h.request('POST', client('/auth/session'), { token: login.json.refresh_token });
    assert.equal(afterLogout.status, 401);
    assert.equal(errorOf(afterLogout).error_code, 'InvalidSession');
    const revokedAccess = await h.request('GET', client('/auth/profile'), { token: again.json.access_token });
    assert.equal(revokedAccess.status, 401, 'access tokens of a revoked session stop working');
    const noToken = await h.request('GET', client('/auth/profile'));
    assert.equal(noToken.status, 401);
    assert.deepEqual([errorOf(noToken).error_code, errorOf(noToken).error], ['MissingAuthReq', 'must authenticate first']);
  });

  test('API keys: create, list, get, disable, enable, login, delete', async () => {
    await h.request('POST', appRoute('/auth/providers/local-userpass/register'), { body: { email: 'keys@example.com', password: 'secret-1' } });
    const login = await h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'keys@example.com', password: 'secret-1' } });
    const rt = login.json.refresh_token;
    const created = await h.request('POST', client('/auth/api_keys'), { token: rt, body: { name: 'k1' } });
    assert.ok(created.status >= 200 && created.status < 300);
    assert.deepEqual(Object.keys(created.json).sort(), ['_id', 'disabled', 'key', 'name']);
    assert.equal(created.json.name, 'k1');
    assert.equal(created.json.disabled, false);
    const viaAccess = await h.request('POST', client('/auth/api_keys'), { token: login.json.access_token, body: { name: 'k2' } });
    assert.equal(viaAccess.status, 401, 'API key routes take the refresh token');
    const dup = await h.request('POST', client('/auth/api_keys'), { token: rt, body: { name: 'k1' } });
    assert.equal(dup.status, 409);

    const list = await h.request('GET', client('/auth/api_keys'), { token: rt });
    assert.deepEqual(list.json, [{ _id: created.json._id, name: 'k1', disabled: false }]);
    const one = await h.request('GET', client(`/auth/api_keys/${created.json._id}`), { token: rt });
    assert.deepEqual(one.json, { _id: created.json._id, name: 'k1', disabled: false });

    const keyLogin = await h.request('POST', appRoute('/auth/providers/api-key/login'), { body: { key: created.json.key } });
    assert.equal(keyLogin.status, 200);
    assert.equal(keyLogin.json.user_id, login.json.user_id);

    const disabled = await h.request('PUT', client(`/auth/api_keys/${created.json._id}/disable`), { token: rt });
    assert.equal(disabled.status, 204);
    assert.equal((await h.request('GET', client(`/auth/api_keys/${created.json._id}`), { token: rt })).json.disabled, true);
    const refused = await h.request('POST', appRoute('/auth/providers/api-key/login'), { body: { key: created.json.key } });
    assert.equal(refused.status, 401);
    errorOf(refused);
    assert.equal((await h.request('PUT', client(`/auth/api_keys/${created.json._id}/enable`), { token: rt })).status, 204);
    assert.equal((await h.request('POST', appRoute('/auth/providers/api-key/login'), { body: { key: created.json.key } })).status, 200);

    assert.equal((await h.request('DELETE', client(`/auth/api_keys/${created.json._id}`), { token: rt })).status, 204);
    const gone = await h.request('GET', client(`/auth/api_keys/${created.json._id}`), { token: rt });
    assert.equal(gone.status, 404);
    assert.equal(errorOf(gone).error_code, 'APIKeyNotFound');
    assert.equal((await h.request('POST', appRoute('/auth/providers/api-key/login'), { body: { key: created.json.key } })).status, 401);
  });

  test('custom-token login maps metadata and keeps the same user per sub', async () => {
    const token = await customJwt({ sub: 'user-24601', user_data: { name: 'Jean', aliases: ['Monsieur Madeleine'] } });
    const first = await h.request('POST', appRoute('/auth/providers/custom-token/login'), { body: { token } });
    assert.equal(first.status, 200, first.text);
    const profile = await h.request('GET', client('/auth/profile'), { token: first.json.access_token });
    assert.deepEqual(profile.json.data, { name: 'Jean', aliases: ['Monsieur Madeleine'] });
    assert.equal(profile.json.identities[0].id, 'user-24601');
    assert.equal(profile.json.identities[0].provider_type, 'custom-token');
    const renamed = await customJwt({ sub: 'user-24601', user_data: { name: 'Madeleine' } });
    const second = await h.request('POST', appRoute('/auth/providers/custom-token/login'), { body: { token: renamed } });
    assert.equal(second.json.user_id, first.json.user_id);
    const p2 = await h.request('GET', client('/auth/profile'), { token: second.json.access_token });
    assert.equal(p2.json.data.name, 'Madeleine', 'metadata is rewritten on every login');
  });

  test('custom-function login passes the payload to the function', async () => {
    const a = await h.request('POST', appRoute('/auth/providers/custom-function/login'), { body: { username: 'zoe', options: { device } } });
    const b = await h.request('POST', appRoute('/auth/providers/custom-function/login'), { body: { username: 'zoe' } });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.json.user_id, b.json.user_id);
    const call = h.calls.find((c) => c.name === 'authFunc');
    assert.deepEqual(call?.args, [{ username: 'zoe' }]);
    const failed = await h.request('POST', appRoute('/auth/providers/custom-function/login'), { body: {} });
    assert.equal(failed.status, 401);
    assert.equal(errorOf(failed).error_code, 'AuthError');
  });

  test('unknown provider is refused with AuthProviderNotFound', async () => {
    const res = await h.request('POST', appRoute('/auth/providers/oauth2-google/login'), { body: {} });
    assert.equal(res.status, 404);
    assert.equal(errorOf(res).error_code, 'AuthProviderNotFound');
  });

  test('linking adds an identity to the current user', async () => {
    const anon = await h.request('POST', appRoute('/auth/providers/anon-user/login'), { body: {} });
    await h.request('POST', appRoute('/auth/providers/local-userpass/register'), { body: { email: 'link@example.com', password: 'secret-1' } });
    const link = await h.request('POST', appRoute('/auth/providers/local-userpass/login?link=true'), {
      token: anon.json.access_token, body: { username: 'link@example.com', password: 'secret-1' },
    });
    assert.equal(link.status, 200, link.text);
    assert.equal(link.json.user_id, anon.json.user_id);
    assert.equal(typeof link.json.refresh_token, 'string');
    const profile = await h.request('GET', client('/auth/profile'), { token: link.json.access_token });
    assert.deepEqual(profile.json.identities.map((i: { provider_type: string }) => i.provider_type), ['anon-user', 'local-userpass']);
    const later = await h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'link@example.com', password: 'secret-1' } });
    assert.equal(later.json.user_id, anon.json.user_id);
    const noToken = await h.request('POST', appRoute('/auth/providers/local-userpass/login?link=true'), { body: { username: 'link@example.com', password: 'secret-1' } });
    assert.equal(noToken.status, 401);
  });

  test('deleting the user ends its sessions', async () => {
    await h.request('POST', appRoute('/auth/providers/local-userpass/register'), { body: { email: 'del@example.com', password: 'secret-1' } });
    const login = await h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'del@example.com', password: 'secret-1' } });
    const del = await h.request('DELETE', client('/auth/delete'), { token: login.json.access_token });
    assert.equal(del.status, 204);
    assert.equal(del.headers.get('content-type'), null);
    assert.equal((await h.request('GET', client('/auth/profile'), { token: login.json.access_token })).status, 401);
    assert.equal((await h.request('POST', client('/auth/session'), { token: login.json.refresh_token })).status, 401);
    assert.equal((await h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'del@example.com', password: 'secret-1' } })).status, 401);
  });

  test('disabled users are refused', async () => {
    const login = await h.request('POST', appRoute('/auth/providers/custom-function/login'), { body: { username: 'mallory' } });
    await h.auth.service.setUserDisabled(login.json.user_id, true);
    const res = await h.request('POST', appRoute('/auth/providers/custom-function/login'), { body: { username: 'mallory' } });
    assert.equal(res.status, 401);
    assert.equal(errorOf(res).error_code, 'UserDisabled');
    assert.equal((await h.request('POST', client('/auth/session'), { token: login.json.refresh_token })).status, 401);
    assert.equal((await h.request('GET', client('/auth/profile'), { token: login.json.access_token })).status, 401);
    await h.auth.service.setUserDisabled(login.json.user_id, false);
    assert.equal((await h.request('POST', appRoute('/auth/providers/custom-function/login'), { body: { username: 'mallory' } })).status, 200);
  });

  test('a bearer token stands for the same caller until its user changes; every check still runs', async () => {
    const login = await h.request('POST', appRoute('/auth/providers/custom-function/login'), { body: { username: 'reuse' } });
    const headers = { authorization: `Bearer ${login.json.access_token}` };
    const first = await h.auth.service.authenticateRequest(headers);
    assert.equal(await h.auth.service.authenticateRequest(headers), first);
    await h.auth.service.setUserDisabled(login.json.user_id, true);
    await assert.rejects(h.auth.service.authenticateRequest(headers), (e: ApiError) => e.errorCode === 'UserDisabled');
    await h.auth.service.setUserDisabled(login.json.user_id, false);
    const again = await h.auth.service.authenticateRequest(headers);
    assert.notEqual(again, first);
    assert.deepEqual(again, first);
    await h.request('DELETE', client('/auth/session'), { token: login.json.refresh_token });
    await assert.rejects(h.auth.service.authenticateRequest(headers), (e: ApiError) => e.errorCode === 'InvalidSession');
  });

  test('custom user data goes into the access token and is refreshed with the session', async () => {
    const login = await h.request('POST', appRoute('/auth/providers/custom-function/login'), { body: { username: 'carla' } });
    assert.equal(decodeJwt(login.json.access_token).user_data, undefined);
    const map = h.customUserData!;
    map.set(login.json.user_id, { userId: login.json.user_id, favourite: 'blue', visits: 3 });
    const refreshed = await h.request('POST', client('/auth/session'), { token: login.json.refresh_token });
    assert.deepEqual(decodeJwt(refreshed.json.access_token).user_data, { userId: login.json.user_id, favourite: 'blue', visits: 3 });
  });

  test('functions/call: named, private, unknown, failing and service calls', async () => {
    const login = await h.request('POST', appRoute('/auth/providers/anon-user/login'), { body: {} });
    const at = login.json.access_token;
    const sum = await h.request('POST', appRoute('/functions/call'), { token: at, rawBody: '{"name":"sum","arguments":[{"$numberInt":"1"},{"$numberInt":"2"}]}' });
    assert.equal(sum.status, 200);
    assert.equal(sum.headers.get('content-type'), 'application/json');
    assert.equal(sum.text, '{"$numberInt":"3"}');

    for (const name of ['secretSauce', 'noSuchFunction']) {
      const res = await h.request('POST', appRoute('/functions/call'), { token: at, body: { name, arguments: [] } });
      assert.equal(res.status, 404);
      assert.deepEqual([errorOf(res).error, errorOf(res).error_code], [`function not found: '${name}'`, 'FunctionNotFound']);
    }
    assert.ok(!h.calls.some((c) => c.name === 'secretSauce'), 'a private function never runs for a client');

    const fails = await h.request('POST', appRoute('/functions/call'), { token: at, body: { name: 'fails', arguments: [] } });
    assert.equal(fails.status, 400);
    assert.deepEqual([errorOf(fails).error, errorOf(fails).error_code], ['it broke', 'FunctionExecutionError']);

    const nothing = await h.request('POST', appRoute('/functions/call'), { token: at, body: { name: 'nothing', arguments: [] } });
    assert.equal(nothing.text, '{"$undefined":true}');

    const find = await h.request('POST', appRoute('/functions/call'), {
      token: at, rawBody: '{"service":"mongodb-atlas","name":"find","arguments":[{"database":"todo","collection":"Task","query":{"_id":{"$oid":"65a1b2c3d4e5f60718293a4b"}},"limit":{"$numberInt":"10"}}]}',
    });
    assert.equal(find.status, 200, find.text);
    assert.equal(find.json.action, 'find');
    assert.deepEqual(find.json.args[0].query, { _id: { $oid: '65a1b2c3d4e5f60718293a4b' } }, 'EJSON survives the round trip');
    assert.deepEqual(find.json.args[0].limit, { $numberInt: '10' });
    const badService = await h.request('POST', appRoute('/functions/call'), { token: at, body: { service: 'nope', name: 'find', arguments: [{}] } });
    assert.equal(badService.status, 404);
    assert.equal(errorOf(badService).error_code, 'ServiceNotFound');

    const unauth = await h.request('POST', appRoute('/functions/call'), { body: { name: 'sum', arguments: [] } });
    assert.equal(unauth.status, 401);
    assert.equal(errorOf(unauth).error_code, 'MissingAuthReq');
  });

  test('GraphQL authentication: bearer first, then credential headers of enabled providers', async () => {
    await h.request('POST', appRoute('/auth/providers/local-userpass/register'), { body: { email: 'gql@example.com', password: 'secret-1' } });
    const login = await h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'gql@example.com', password: 'secret-1' } });
    const bearer = await h.request('POST', '/test/graphql-auth', { token: login.json.access_token });
    assert.equal(bearer.json.userId, login.json.user_id);

    const badBearer = await h.request('POST', '/test/graphql-auth', { headers: { Authorization: 'Basic abc', email: 'gql@example.com', password: 'secret-1' } });
    assert.equal(badBearer.status, 401, 'an Authorization header must be a valid bearer token even when credential headers are present');
    assert.equal(errorOf(badBearer).error_code, 'InvalidSession');

    const creds = await h.request('POST', '/test/graphql-auth', { headers: { email: 'gql@example.com', password: 'secret-1' } });
    assert.equal(creds.json.userId, login.json.user_id);
    const wrong = await h.request('POST', '/test/graphql-auth', { headers: { email: 'gql@example.com', password: 'nope-nope' } });
    assert.equal(wrong.status, 401);

    const key = await h.request('POST', client('/auth/api_keys'), { token: login.json.refresh_token, body: { name: 'gql' } });
    const byKey = await h.request('POST', '/test/graphql-auth', { headers: { apiKey: key.json.key } });
    assert.equal(byKey.json.userId, login.json.user_id);

    const jwt = await customJwt({ sub: 'gql-sub' });
    const byJwt = await h.request('POST', '/test/graphql-auth', { headers: { jwtTokenString: jwt } });
    assert.equal(byJwt.status, 200, byJwt.text);
    const jwtLogin = await h.request('POST', appRoute('/auth/providers/custom-token/login'), { body: { token: jwt } });
    assert.equal(byJwt.json.userId, jwtLogin.json.user_id);

    const none = await h.request('POST', '/test/graphql-auth');
    assert.equal(none.status, 401);
    errorOf(none);
  });

  test('a disabled provider cannot authenticate, by login or by credential headers', async () => {
    const providers = (await import('./fixtures/auth-harness')).defaultProviders();
    (providers['api-key'] as { disabled: boolean }).disabled = true;
    (providers['local-userpass'] as { disabled: boolean }).disabled = true;
    const other = await startAuthHarness({ providers });
    try {
      const login = await other.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'a@example.com', password: 'secret-1' } });
      assert.equal(login.status, 404);
      assert.equal(errorOf(login).error_code, 'AuthProviderNotFound');
      for (const headers of [{ email: 'a@example.com', password: 'secret-1' }, { apiKey: 'whatever' }] as Array<Record<string, string>>) {
        const res = await other.request('POST', '/test/graphql-auth', { headers });
        assert.equal(res.status, 401);
        assert.match(errorOf(res).error, /not enabled/);
      }
    } finally { await other.close(); }
  });

  for (const useDocumentStore of [false, true]) test(`users, sessions and keys survive a restart over the same data dir (${useDocumentStore ? 'embedded DocumentStore' : 'auth journal'})`, async () => {
    const fs = await import('node:fs/promises');
    const os = await import('node:os');
    const path = await import('node:path');
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'asl-auth-restart-'));
    try {
      const first = await startAuthHarness({ dataDir, useDocumentStore });
      await first.request('POST', appRoute('/auth/providers/local-userpass/register'), { body: { email: 'keep@example.com', password: 'secret-1' } });
      const login = await first.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'keep@example.com', password: 'secret-1' } });
      const key = await first.request('POST', client('/auth/api_keys'), { token: login.json.refresh_token, body: { name: 'kept' } });
      await first.close();
      const second = await startAuthHarness({ dataDir, useDocumentStore });
      try {
        const refreshed = await second.request('POST', client('/auth/session'), { token: login.json.refresh_token });
        assert.equal(refreshed.status, 201, 'the refresh token (and the signing secret) survive the restart');
        const byKey = await second.request('POST', appRoute('/auth/providers/api-key/login'), { body: { key: key.json.key } });
        assert.equal(byKey.json.user_id, login.json.user_id);
        const again = await second.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username: 'keep@example.com', password: 'secret-1' } });
        assert.equal(again.json.user_id, login.json.user_id);
        const journalExists = await fs.stat(path.join(dataDir, 'auth', 'records.jsonl')).then(() => true, () => false);
        assert.equal(journalExists, !useDocumentStore, 'the records live where the options say');
        const mode = (await fs.stat(path.join(dataDir, 'auth', 'token-secret'))).mode & 0o777;
        assert.equal(mode, 0o600);
      } finally { await second.close(); }
    } finally { await fs.rm(dataDir, { recursive: true, force: true }); }
  });
});
