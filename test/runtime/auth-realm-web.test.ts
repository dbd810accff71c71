// The official Web SDK, as shipped, against the local auth routes.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT } from 'jose';
import * as Realm from 'realm-web';
import { APP_ID, JWT_SECRET, startAuthHarness, type Harness } from './fixtures/auth-harness';

describe('realm-web 2.0.1 against the local runtime', () => {
  let h: Harness;
  let app: Realm.App;
  before(async () => {
    h = await startAuthHarness({
      functions: { sum: { run: (args) => (args as number[]).reduce((a, b) => a + b, 0) } },
      customUserData: new Map(),
    });
    app = new Realm.App({ id: APP_ID, baseUrl: h.url });
  });
  after(async () => {
    for (const user of Object.values(app.allUsers)) if (user.isLoggedIn) await user.logOut().catch(() => undefined);
    await h.close();
  });

  test('email/password: register, log in, profile, function call', async () => {
    await app.emailPasswordAuth.registerUser({ email: 'web@example.com', password: 'secret-1' });
    const user = await app.logIn(Realm.Credentials.emailPassword('web@example.com', 'secret-1'));
    assert.match(user.id, /^[0-9a-f]{24}$/);
    assert.equal(user.profile.email, 'web@example.com');
    assert.equal(user.providerType, 'local-userpass');
    assert.equal(await user.functions.sum!(1, 2), 3);
    assert.equal(await user.callFunction('sum', 40, 2), 42);
    await assert.rejects(app.logIn(Realm.Credentials.emailPassword('web@example.com', 'wrong-one')), (e: Realm.MongoDBRealmError) => e.statusCode === 401 && e.errorCode === 'InvalidPassword');
  });

  test('anonymous login and linking an email/password identity', async () => {
    const anon = await app.logIn(Realm.Credentials.anonymous(false));
    assert.equal(anon.providerType, 'anon-user');
    await app.emailPasswordAuth.registerUser({ email: 'linked@example.com', password: 'secret-1' });
    await anon.linkCredentials(Realm.Credentials.emailPassword('linked@example.com', 'secret-1'));
    assert.deepEqual(anon.identities.map((i) => i.providerType), ['anon-user', 'local-userpass']);
  });

  test('API key: create and log in as the same user', async () => {
    const user = await app.logIn(Realm.Credentials.emailPassword('web@example.com', 'secret-1'));
    const key = await user.apiKeys.create('server-key');
    assert.equal(key.name, 'server-key');
    assert.equal(typeof key.key, 'string');
    const listed = await user.apiKeys.fetchAll();
    assert.deepEqual(listed.map((k) => k.name), ['server-key']);
    await user.apiKeys.disable(key._id);
    assert.equal((await user.apiKeys.fetch(key._id)).disabled, true);
    await user.apiKeys.enable(key._id);
    const viaKey = await app.logIn(Realm.Credentials.apiKey(key.key));
    assert.equal(viaKey.id, user.id);
    await user.apiKeys.delete(key._id);
    assert.deepEqual(await user.apiKeys.fetchAll(), []);
  });

  test('custom JWT login with mapped metadata', async () => {
    const token = await new SignJWT({ sub: 'web-jwt', aud: APP_ID, user_data: { name: 'Jean' } })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setExpirationTime('1h').sign(new TextEncoder().encode(JWT_SECRET));
    const user = await app.logIn(Realm.Credentials.jwt(token));
    assert.equal(user.providerType, 'custom-token');
    assert.equal(user.profile.name, 'Jean');
  });

  test('an expired access token is refreshed by the SDK on its own', async () => {
    const user = await app.logIn(Realm.Credentials.emailPassword('web@example.com', 'secret-1'));
    const before = user.accessToken;
    h.clock.advance(31 * 60 * 1000);
    assert.equal(await user.functions.sum!(2, 3), 5);
    assert.notEqual(user.accessToken, before, 'the SDK refreshed the access token after the 401');
    await user.refreshProfile();
    assert.equal(user.profile.email, 'web@example.com');
  });

  test('custom user data and the remote collection API', async () => {
    const user = await app.logIn(Realm.Credentials.emailPassword('web@example.com', 'secret-1'));
    h.customUserData!.set(user.id, { userId: user.id, plan: 'pro' });
    const data = await user.refreshCustomData();
    assert.deepEqual(data, { userId: user.id, plan: 'pro' });
    const result = await user.mongoClient('mongodb-atlas').db('todo').collection('Task').find({ done: false }, { limit: 5 }) as unknown as { action: string; args: Array<Record<string, unknown>>; userId: string };
    assert.equal(result.action, 'find');
    assert.equal(result.userId, user.id);
    assert.equal(result.args[0]!.database, 'todo');
    assert.equal(result.args[0]!.collection, 'Task');
    assert.deepEqual(result.args[0]!.query, { done: false });
  });

  test('log out ends the session on the server; delete removes the user', async () => {
    const user = await app.logIn(Realm.Credentials.anonymous(false));
    const refreshToken = user.refreshToken!;
    await user.logOut();
    assert.equal(user.isLoggedIn, false);
    const res = await fetch(`${h.url}/api/client/v2.0/auth/session`, { method: 'POST', headers: { Authorization: `Bearer ${refreshToken}` } });
    assert.equal(res.status, 401, 'the refresh token no longer works');
    const doomed = await app.logIn(Realm.Credentials.anonymous(false));
    assert.ok(h.auth.service.user(doomed.id));
    await app.deleteUser(doomed);
    assert.equal(h.auth.service.user(doomed.id), undefined);
  });
});
