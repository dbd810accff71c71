// The one table of the runtime's API paths (core/apiRoutes.ts): a route's parameters filled and encoded, a
// missing one refused, the local routes' patterns as the admin route table registers them, and the
// WebSocket endpoint paths read back by the runtime's upgrade matcher.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  APP_ENDPOINT_PATH, CLIENT_API, CLIENT_ROUTES, LOCAL_APP_ROUTES, appEndpointPath, localAppPath, localAppPattern, routePath,
} from '../../core/apiRoutes';
import { FEED_ENDPOINT } from '../../core/sync/messages';

test('a route path fills its parameters URI-encoded and refuses a missing one', () => {
  assert.equal(routePath(CLIENT_ROUTES.login, { appId: 'my app', provider: 'local-userpass' }), '/app/my%20app/auth/providers/local-userpass/login');
  assert.equal(routePath(LOCAL_APP_ROUTES.syncTraffic, { connection: 'c/1', session: 3 }), '/sync/sessions/c%2F1/3/traffic');
  assert.throws(() => routePath(CLIENT_ROUTES.graphql), /needs "appId"/);
});

test('local routes: the pattern the runtime registers and the path a client asks', () => {
  assert.equal(localAppPattern(LOCAL_APP_ROUTES.syncSimulate), '/local/app/:appId/sync/simulate');
  assert.equal(localAppPath('app-1', LOCAL_APP_ROUTES.userSession, { userId: 'u 1' }), '/api/admin/v3.0/local/app/app-1/users/u%201/session');
});

test('an app endpoint path reads back as its app id and endpoint', () => {
  const path = appEndpointPath('todo-abc', FEED_ENDPOINT);
  assert.equal(path, `${CLIENT_API}/app/todo-abc/sync/feed`);
  assert.deepEqual(APP_ENDPOINT_PATH.exec(path)?.slice(1), ['todo-abc', 'sync/feed']);
  assert.equal(APP_ENDPOINT_PATH.exec('/api/client/v2x0/app/a/sync/feed'), null);
});
