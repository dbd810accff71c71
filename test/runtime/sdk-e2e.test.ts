// The official Web SDK (realm-web 2.0.1) against the runtime's sources serving examples/todo-tracker
// (the flows are in fixtures/sdk-flows.ts); an expired access token comes from moving the runtime's clock.
import { describeSdkFlows } from './fixtures/sdk-flows';
import { startExampleRuntime } from './fixtures/e2e-runtime';

describeSdkFlows('realm-web 2.0.1 against the runtime serving examples/todo-tracker', async () => {
  const example = await startExampleRuntime();
  return {
    url: example.runtime.url,
    appId: example.runtime.appId,
    refuseAccessToken: () => example.advanceClock(31 * 60 * 1000),
    close: () => example.close(),
  };
});
