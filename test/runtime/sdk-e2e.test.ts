// The official Web SDK (realm-web 2.0.1, as shipped) against the full runtime serving a copy of
// examples/todo-tracker: every provider the example enables, functions, the remote MongoDB client under the
// example's rules, custom user data written by onUserCreated, GraphQL with the SDK's token, and the SDK
// refreshing an expired access token on its own.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SignJWT } from 'jose';
import * as Realm from 'realm-web';
import { EXAMPLE_APP_ID, exampleJwtSigningKey, postJson, startExampleRuntime, type ExampleRuntime } from './fixtures/e2e-runtime';

interface TaskDocument {
  _id: Realm.BSON.ObjectId;
  _partition: string;
  name: string;
  status: string;
  isComplete: boolean;
}

const ADA = { email: 'ada@example.com', password: 'correct-horse-42' };
const GRACE = { email: 'grace@example.com', password: 'cobol-forever-59' };

function signExampleJwt(claims: Record<string, unknown>, expiresIn = '1h'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setExpirationTime(expiresIn)
    .sign(new TextEncoder().encode(exampleJwtSigningKey()));
}

const isRealmError = (code: string, status?: number) => (e: unknown) => {
  assert.ok(e instanceof Realm.MongoDBRealmError, `expected a MongoDBRealmError, got ${String(e)}`);
  assert.equal(e.errorCode, code, e.message);
  if (status !== undefined) assert.equal(e.statusCode, status, e.message);
  return true;
};

describe('realm-web 2.0.1 against the runtime serving examples/todo-tracker', () => {
  let example: ExampleRuntime;
  let app: Realm.App;
  let ada: Realm.User;

  const tasksOf = (user: Realm.User) => user.mongoClient('mongodb-atlas').db('tracker').collection<TaskDocument>('Task');
  const newTask = (owner: Realm.User, name: string): TaskDocument =>
    ({ _id: new Realm.BSON.ObjectId(), _partition: owner.id, name, status: 'open', isComplete: false });

  before(async () => {
    example = await startExampleRuntime();
    assert.equal(example.runtime.appId, EXAMPLE_APP_ID);
    app = new Realm.App({ id: EXAMPLE_APP_ID, baseUrl: example.runtime.url });
  });
  after(async () => {
    for (const user of Object.values(app?.allUsers ?? {})) if (user.isLoggedIn) await user.logOut().catch(() => undefined);
    await example?.close();
  });

  test('register and log in with email/password', async () => {
    await app.emailPasswordAuth.registerUser(ADA);
    ada = await app.logIn(Realm.Credentials.emailPassword(ADA.email, ADA.password));
    assert.match(ada.id, /^[0-9a-f]{24}$/);
    assert.equal(ada.providerType, 'local-userpass');
    assert.equal(ada.profile.email, ADA.email);
    assert.equal(app.currentUser?.id, ada.id);
    await assert.rejects(app.emailPasswordAuth.registerUser(ADA), isRealmError('AccountNameInUse'));
    await assert.rejects(app.logIn(Realm.Credentials.emailPassword(ADA.email, 'wrong-password')), isRealmError('InvalidPassword', 401));
  });

  test('the anonymous provider is disabled in the example', async () => {
    await assert.rejects(app.logIn(Realm.Credentials.anonymous()), (e: unknown) => e instanceof Realm.MongoDBRealmError && e.statusCode >= 400 && e.statusCode < 500);
  });

  test('onUserCreated wrote the User document, and refreshing custom user data returns it', async () => {
    const data = await ada.refreshCustomData();
    assert.equal(data.userId, ada.id);
    assert.equal(data._partition, ada.id);
    assert.equal(data.email, ADA.email);
    assert.deepEqual(data.projectIds, []);
    assert.equal(data.isAdmin, false);
    assert.deepEqual(ada.customData, data);
  });

  test('log in with an API key the user created: the same user', async () => {
    const key = await ada.apiKeys.create('ci');
    assert.equal(key.name, 'ci');
    assert.equal(key.disabled, false);
    assert.equal(typeof key.key, 'string');
    assert.deepEqual((await ada.apiKeys.fetchAll()).map((k) => k.name), ['ci']);
    const viaKey = await app.logIn(Realm.Credentials.apiKey(key.key));
    assert.equal(viaKey.id, ada.id);
    assert.equal(await viaKey.functions.sum!(20, 22), 42);
    await assert.rejects(app.logIn(Realm.Credentials.apiKey('not-a-key-of-anyone')), (e: unknown) => e instanceof Realm.MongoDBRealmError && e.statusCode === 401);
    app.switchUser(ada);
  });

  test('log in with a custom JWT signed by the example key: metadata fields land in the profile', async () => {
    const token = await signExampleJwt({ aud: EXAMPLE_APP_ID, sub: 'jean-24601', name: 'Jean', email: 'jean@example.com', role: 'unmapped' });
    const jean = await app.logIn(Realm.Credentials.jwt(token));
    assert.equal(jean.providerType, 'custom-token');
    assert.equal(jean.profile.name, 'Jean');
    assert.equal(jean.profile.email, 'jean@example.com');
    assert.equal((jean.profile as Record<string, unknown>).role, undefined, 'unmapped claims are discarded');
    const custom = await jean.refreshCustomData();
    assert.equal(custom.name, 'Jean', 'onUserCreated saw the mapped name');
    const again = await app.logIn(Realm.Credentials.jwt(await signExampleJwt({ aud: EXAMPLE_APP_ID, sub: 'jean-24601', name: 'Jean V.' })));
    assert.equal(again.id, jean.id, 'the same sub is the same user');
    assert.equal(again.profile.name, 'Jean V.', 'metadata is rewritten on every login');

    const refused = (e: unknown) => e instanceof Realm.MongoDBRealmError && e.statusCode === 401 && e.errorCode === 'AuthError';
    await assert.rejects(app.logIn(Realm.Credentials.jwt(await signExampleJwt({ aud: EXAMPLE_APP_ID, sub: 'no-name' }))), refused, 'name is required');
    await assert.rejects(app.logIn(Realm.Credentials.jwt(await signExampleJwt({ aud: 'another-app', sub: 'x', name: 'X' }))), refused, 'audience');
    const foreignKey = await new SignJWT({ aud: EXAMPLE_APP_ID, sub: 'x', name: 'X' }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h')
      .sign(new TextEncoder().encode('some-other-signing-key-of-thirty-two-or-more'));
    await assert.rejects(app.logIn(Realm.Credentials.jwt(foreignKey)), refused, 'signature');
    app.switchUser(ada);
  });

  test('call the public function sum; a private function is refused', async () => {
    assert.equal(await ada.functions.sum!(1, 2), 3);
    assert.equal(await ada.callFunction('sum', 40, 2), 42);
    await assert.rejects(ada.functions.onUserCreated!({ id: ada.id }), isRealmError('FunctionNotFound'));
    await assert.rejects(ada.callFunction('resetFunc', {}), isRealmError('FunctionNotFound'));
  });

  test('the remote MongoDB client inserts and finds the user\'s own tasks; another user\'s stay invisible', async () => {
    const mine = newTask(ada, 'Write spec');
    const inserted = await tasksOf(ada).insertOne(mine);
    assert.equal(inserted.insertedId.toHexString(), mine._id.toHexString());
    await tasksOf(ada).insertMany([newTask(ada, 'Review spec'), newTask(ada, 'Ship spec')]);

    await app.emailPasswordAuth.registerUser(GRACE);
    const grace = await app.logIn(Realm.Credentials.emailPassword(GRACE.email, GRACE.password));
    await tasksOf(grace).insertOne(newTask(grace, 'Grace only'));
    await assert.rejects(tasksOf(grace).insertOne(newTask(ada, 'Planted in Ada\'s partition')), Realm.MongoDBRealmError,
      'the write filter keeps a user out of another user\'s partition');

    const adaSees = await tasksOf(ada).find({}, { sort: { name: -1 } });
    assert.deepEqual(adaSees.map((t) => t.name), ['Write spec', 'Ship spec', 'Review spec']);
    assert.ok(adaSees.every((t) => t._partition === ada.id));
    assert.equal(await tasksOf(ada).count(), 3);
    assert.equal(await tasksOf(ada).findOne({ name: 'Grace only' }), null);
    assert.deepEqual((await tasksOf(grace).find()).map((t) => t.name), ['Grace only']);

    const updated = await tasksOf(ada).updateOne({ _id: mine._id }, { $set: { isComplete: true } });
    assert.equal(updated.matchedCount, 1);
    assert.equal((await tasksOf(grace).updateMany({}, { $set: { status: 'stolen' } })).matchedCount, 1, 'only Grace\'s own task matches');
    assert.equal((await tasksOf(ada).findOne({ _id: mine._id }))?.isComplete, true);
    assert.deepEqual([...new Set((await tasksOf(ada).find()).map((t) => t.status))], ['open']);
    app.switchUser(ada);
  });

  test('a write the rules refuse is a 403 with the rule error code', async () => {
    await assert.rejects(tasksOf(ada).insertOne({ ...newTask(ada, 'Urgent'), priority: 5 } as TaskDocument), isRealmError('PermissionDenied', 403),
      'only admins may write Task.priority');
  });

  test('GraphQL with the SDK user\'s access token, sent with fetch', async () => {
    const res = await postJson(`${example.api}/app/${EXAMPLE_APP_ID}/graphql`,
      { query: 'query Mine($q: TaskQueryInput) { tasks(query: $q, sortBy: NAME_ASC) { name isComplete } }', variables: { q: { _partition: ada.id } }, operationName: 'Mine' },
      { Authorization: `Bearer ${ada.accessToken}` });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { data: { tasks: [
      { name: 'Review spec', isComplete: false }, { name: 'Ship spec', isComplete: false }, { name: 'Write spec', isComplete: true },
    ] } });
    const everyone = await postJson(`${example.api}/app/${EXAMPLE_APP_ID}/graphql`, { query: '{ tasks { name } }' }, { Authorization: `Bearer ${ada.accessToken}` });
    assert.equal(everyone.body.data.tasks.length, 3, 'GraphQL applies the same rules: Grace\'s task is hidden');
  });

  test('an access token that expired is refreshed by the SDK on its own', async () => {
    const expiring = ada.accessToken!;
    const raw = await postJson(`${example.api}/app/${EXAMPLE_APP_ID}/functions/call`, { name: 'sum', arguments: [1, 1] }, { Authorization: `Bearer ${expiring}` });
    assert.equal(raw.status, 200, 'the token works before the jump');
    example.advanceClock(31 * 60 * 1000);
    const stale = await postJson(`${example.api}/app/${EXAMPLE_APP_ID}/functions/call`, { name: 'sum', arguments: [1, 1] }, { Authorization: `Bearer ${expiring}` });
    assert.equal(stale.status, 401);
    assert.equal(stale.body.error_code, 'InvalidSession');
    const staleGraphql = await postJson(`${example.api}/app/${EXAMPLE_APP_ID}/graphql`, { query: '{ tasks { name } }' }, { Authorization: `Bearer ${expiring}` });
    assert.equal(staleGraphql.status, 401);
    assert.equal(staleGraphql.body.error_code, 'InvalidSession');

    assert.equal(await ada.functions.sum!(2, 3), 5);
    assert.notEqual(ada.accessToken, expiring, 'the SDK refreshed the access token after the 401');
    assert.equal(ada.isLoggedIn, true);
    assert.equal((await tasksOf(ada).find()).length, 3, 'the remote client works with the refreshed token');
  });

  test('log out ends the session on the server', async () => {
    const refreshToken = ada.refreshToken!;
    await ada.logOut();
    assert.equal(ada.isLoggedIn, false);
    const res = await fetch(`${example.api}/auth/session`, { method: 'POST', headers: { Authorization: `Bearer ${refreshToken}` } });
    assert.equal(res.status, 401);
  });
});
