// An access token that ends mid-session, with realm-core 14.14's client (issue 34): `asl serve
// --access-token-lifetime 3` makes tokens last 3 seconds; the runtime closes the connection as its token
// ends, the client refreshes the token and reconnects by itself, and nothing written before, during or
// after is lost.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeAvailable, registerUser, runProbe } from '../helpers/realm-probe';
import { copyApp, serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

const SCHEMA = [{ name: 'Task', primaryKey: '_id', properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool' } }];
const oid = (n: number) => ({ $oid: `65c0000000000000000${String(n).padStart(5, '0')}` });
const task = (n: number, partition: string, name: string) => ({ op: 'create', type: 'Task', value: { _id: oid(n), _partition: partition, name, status: 'open', isComplete: false } });

describe('Realm sync across an access token\'s end', { skip, timeout: 120_000 }, () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-realm-token-'));
  const appDir = copyApp();
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  let served: ServedDist;
  let adaId: string;

  before(async () => {
    served = await serveDist({ appDir, args: ['--data', path.join(state, 'data'), '--access-token-lifetime', '3'] });
    adaId = await registerUser(served.app, ada.email, ada.password);
  });
  after(async () => {
    await served?.close();
    fs.rmSync(state, { recursive: true, force: true });
  });

  test('the connection ends with the token, the client refreshes it and reconnects, every write arrives once', async () => {
    const device = path.join(state, 'device');
    const script = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, credentials: ada, partition: adaId, schema: SCHEMA, timeoutMs: 15_000, ...extra });
    const run = await runProbe(script({
      dataDir: device,
      steps: [
        { write: [task(1, adaId, 'before the end')] }, { waitUpload: true },
        // Past the token's 3 seconds: the runtime has closed the connection; this write is made meanwhile.
        { sleepMs: 4500 }, { write: [task(2, adaId, 'after the end')] }, { waitUpload: true },
        { sleepMs: 4000 }, { write: [task(3, adaId, 'after the second end')] }, { waitUpload: true }, { waitDownload: true },
      ],
    }), ['--log-bodies']);
    assert.equal(run.result.exitCode, 0, `${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed|closed|reset/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);
    assert.equal(run.result.clientReset, false, 'no client reset');
    assert.ok(run.events('ws_closed').length >= 2, `the runtime ended the connection at each token's end: ${JSON.stringify(run.events('ws_closed'))}`);
    assert.ok(run.events('ws_connect').length >= 3, 'and the client connected again each time');
    const refreshes = run.events('http').filter((l) => /\/auth\/session$/.test(String(l.url)) && l.method === 'POST');
    assert.ok(refreshes.length >= 2, `the client refreshed its access token: ${JSON.stringify(run.events('http').map((l) => [l.method, l.url, l.status]))}`);
    assert.equal(run.events('sync_error').length, 0, 'the token\'s end is not a sync error for the app');

    const other = await runProbe(script({}));
    assert.equal(other.result.exitCode, 0, JSON.stringify(other.result));
    assert.deepEqual(other.objects('Task').map((t) => t.name).sort(), ['after the end', 'after the second end', 'before the end']);
  });
});
