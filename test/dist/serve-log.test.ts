// `dist/cli.js serve` logs one line per request at info (the default), none at `--log-level warn`, refuses an
// unknown level, and serves the page at `/` and the `/logs?co_id=` link of its error bodies.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { adminToken, CLI, copyApp, serveDist } from './fixtures/serve';

describe('dist/cli.js serve --log-level', () => {
  test('by default each request is one line: method, path, status, ms, co_id; the / page and /logs answer', async () => {
    const served = await serveDist();
    try {
      const page = await fetch(`${served.url}/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), new RegExp(`<code>${served.appId}</code>`));
      const missing = await fetch(`${served.url}/api/client/v2.0/app/${served.appId}/no-such-route`);
      const { link } = await missing.json() as { link: string };
      assert.equal((await fetch(link)).status, 401, '/logs needs the admin session');
      const entry = await (await fetch(link, { headers: { Authorization: `Bearer ${await adminToken(served)}` } })).json() as { status: number; co_id: string };
      assert.equal(entry.status, 404);
      const line = await served.waitForLog(new RegExp(`GET /api/client/v2\\.0/app/${served.appId}/no-such-route 404 [\\d.]+ ms NotFound co_id ${entry.co_id}$`));
      assert.match(line, /^\d\d:\d\d:\d\d\.\d{3} GET /);
      await served.waitForLog(/GET \/ 200 [\d.]+ ms co_id/);
    } finally {
      await served.close();
    }
  });

  test('--log-level warn logs no request', async () => {
    const served = await serveDist({ args: ['--log-level', 'warn'] });
    const res = await fetch(`${served.url}/`);
    assert.equal(res.status, 200);
    await res.text();
    assert.equal(await served.close(), 0);
    assert.doesNotMatch(served.stderr(), /GET \//);
    assert.doesNotMatch(served.stderr(), /stopping/, 'info lines are left out');
  });

  test('--log-level debug adds the file changes that trigger a reload', async () => {
    const served = await serveDist({ args: ['--log-level', 'debug'] });
    try {
      fs.appendFileSync(path.join(served.appDir, 'functions/sum.js'), '\n// edited\n');
      await served.waitForLog(/file change: functions\/sum\.js$/);
      await served.waitForLog(/reloaded/);
    } finally {
      await served.close();
    }
  });

  test('an unknown level is a usage error', () => {
    const appDir = copyApp();
    const result = spawnSync(process.execPath, [CLI, 'serve', appDir, '--port', '0', '--log-level', 'loud'], { encoding: 'utf8' });
    fs.rmSync(appDir, { recursive: true, force: true });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /--log-level must be one of error, warn, info, debug, got "loud"/);
  });
});
