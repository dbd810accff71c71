// The life of a synced client file across the runtime's own life and sync's state machine, with
// realm-core 14.14's client: a restart between two syncs resumes (no reset), kill -9 after an acknowledged
// upload loses nothing, pause ends sessions and refuses opens until resume, terminate makes clients reset
// (recover keeps their unsynced changes, discard drops them) once sync is enabled again.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeAvailable, registerUser, runProbe, startProbe, type ProbeRun } from '../helpers/realm-probe';
import { copyApp, serveDist, type ServedDist } from './fixtures/serve';

const skip = probeAvailable ? false : 'realm-sync-probe (../shared/realm-sync) is not available on this machine';

const SCHEMA = [{ name: 'Task', primaryKey: '_id', properties: { _id: 'objectId', _partition: 'string?', name: 'string', status: 'string', isComplete: 'bool' } }];
const oid = (n: number) => ({ $oid: `65b0000000000000000${String(n).padStart(5, '0')}` });
const task = (n: number, partition: string, name: string) => ({ op: 'create', type: 'Task', value: { _id: oid(n), _partition: partition, name, status: 'open', isComplete: false } });

function assertOk(run: ProbeRun, what: string): void {
  assert.equal(run.result.exitCode, 0, `${what}: ${JSON.stringify(run.result)}\n${run.lines.filter((l) => /error|failed|reset/.test(l.event)).map((l) => JSON.stringify(l)).join('\n')}`);
}

function setSyncState(appDir: string, value: string): void {
  const file = path.join(appDir, 'sync/config.json');
  const config = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  config.state = value;
  fs.writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
}

describe('Realm sync across restarts and sync state changes', { skip, timeout: 300_000 }, () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-realm-life-'));
  const dataDir = path.join(state, 'data');
  const appDir = copyApp();
  const ada = { type: 'emailPassword', email: 'ada@example.com', password: 'ada-Passw0rd' };
  let served: ServedDist;
  let adaId: string;
  const start = () => serveDist({ appDir, args: ['--data', dataDir] });
  const script = (extra: Record<string, unknown>) => ({ baseUrl: served.url, appId: served.appId, credentials: ada, partition: adaId, schema: SCHEMA, timeoutMs: 10000, ...extra });

  before(async () => {
    served = await start();
    adaId = await registerUser(served.app, ada.email, ada.password);
  });
  after(async () => {
    await served?.close();
    fs.rmSync(state, { recursive: true, force: true });
  });

  test('a restart between two syncs of the same client file resumes without a reset; kill -9 after an acknowledged upload loses nothing', async () => {
    const device = path.join(state, 'device');
    assertOk(await runProbe(script({ dataDir: device, writes: [task(1, adaId, 'before restart')] })), 'first sync');
    await served.close();
    served = await start();
    const resumed = await runProbe(script({ dataDir: device, writes: [task(2, adaId, 'after restart')] }));
    assertOk(resumed, 'resume');
    assert.equal(resumed.result.clientReset, false);
    assert.equal(resumed.events('realm_opened')[0]?.existed, true);
    assert.deepEqual(resumed.objects('Task').map((t) => t.name).sort(), ['after restart', 'before restart']);
    // The upload completed (acknowledged) before the runtime is killed without a chance to flush anything.
    assertOk(await runProbe(script({ dataDir: device, writes: [task(3, adaId, 'acknowledged')] })), 'upload before kill');
    served.child.kill('SIGKILL');
    await served.close();
    served = await start();
    const fresh = await runProbe(script({}));
    assertOk(fresh, 'fresh client after kill -9');
    assert.deepEqual(fresh.objects('Task').map((t) => t.name).sort(), ['acknowledged', 'after restart', 'before restart']);
    const again = await runProbe(script({ dataDir: device }));
    assertOk(again, 'the old device after kill -9');
    assert.equal(again.result.clientReset, false);
  });

  test('logging out one device ends the sync sessions resting on that login only; another device keeps syncing', async () => {
    const watching = { steps: [{ watchMs: 12_000 }] };
    const loggedOut = startProbe(script(watching), ['--show-tokens']);
    const other = startProbe(script(watching));
    const login = await loggedOut.waitFor((l) => l.event === 'login', 15_000);
    await Promise.all([loggedOut, other].map((p) => p.waitFor((l) => l.event === 'watch' && l.phase === 'begin', 15_000)));
    const logout = await fetch(`${served.url}/api/client/v2.0/auth/session`, { method: 'DELETE', headers: { authorization: `Bearer ${String(login.refreshToken)}` } });
    assert.equal(logout.status, 204);
    const ended = await loggedOut.waitFor((l) => l.event === 'protocol_error' || l.event === 'sync_error', 10_000);
    assert.match(JSON.stringify(ended), /revoked|203|auth/i);
    const [otherRun] = await Promise.all([other.done, loggedOut.done]);
    assertOk(otherRun, 'the other device');
    assert.equal(otherRun.lines.some((l) => l.event === 'protocol_error' || l.event === 'sync_error'), false);
  });

  test('pause ends sessions and refuses opens until resume', async () => {
    setSyncState(appDir, 'disabled');
    await served.waitForLog(/sync paused/);
    const refused = await runProbe(script({}), ['--cancel-waits-on-error', '--reconnect', 'testing']);
    assert.equal(refused.events('protocol_error')[0]?.rawErrorCode, 213, JSON.stringify(refused.events('protocol_error')));
    setSyncState(appDir, 'enabled');
    await served.waitForLog(/sync resumed/);
    assertOk(await runProbe(script({})), 'after resume');
  });

  for (const mode of ['recover', 'discard'] as const) {
    test(`terminate and re-enable: a client with unsynced changes resets in ${mode} mode and keeps syncing`, async () => {
      const device = path.join(state, `reset-${mode}`);
      const base = mode === 'recover' ? 20 : 30;
      assertOk(await runProbe(script({ dataDir: device, writes: [task(base, adaId, `${mode} synced`)] })), 'synced once');
      assertOk(await runProbe(script({ dataDir: device, offline: true, writes: [task(base + 1, adaId, `${mode} offline`)] })), 'offline write');
      setSyncState(appDir, '');
      await served.waitForLog(/sync terminated/, { count: mode === 'recover' ? 1 : 2 });
      setSyncState(appDir, 'enabled');
      await served.waitForLog(/sync (re-)?enabled/, { count: mode === 'recover' ? 1 : 2 });
      const reset = await runProbe(script({ dataDir: device, clientReset: mode }));
      assertOk(reset, `${mode} reset`);
      assert.equal(reset.result.clientReset, true, JSON.stringify(reset.result));
      const names = reset.objects('Task').map((t) => t.name);
      if (mode === 'recover') assert.ok(names.includes('recover offline'), `recovered: ${names.join(', ')}`);
      else assert.ok(!names.includes('discard offline'), `discarded: ${names.join(', ')}`);
      const other = await runProbe(script({}));
      assertOk(other, 'another device after the reset');
      assert.deepEqual(other.objects('Task').map((t) => t.name).sort(), [...names].sort());
    });
  }
});
