// The official Web SDK (realm-web 2.0.1) against the shipped `dist/cli.js serve` on examples/todo-tracker:
// the same flows as against the sources (test/runtime/fixtures/sdk-flows.ts). The process's clock cannot
// be moved, so a refused access token is one whose signature was spoilt.
import type * as Realm from 'realm-web';
import { describeSdkFlows } from '../runtime/fixtures/sdk-flows';
import { serveDist } from './fixtures/serve';

describeSdkFlows('realm-web 2.0.1 against dist/cli.js serve on examples/todo-tracker', async () => {
  const served = await serveDist();
  return {
    url: served.url,
    appId: served.appId,
    refuseAccessToken: (user: Realm.User) => {
      const [header, payload] = user.accessToken!.split('.');
      user.accessToken = `${header}.${payload}.${'A'.repeat(43)}`;
    },
    close: () => served.close(),
  };
});
