// The two web templates as a user meets them: created from the template, their built client served by the
// runtime's static hosting at http://<app id>.localhost:<port>/, driven in headless Chromium through
// register → log out → log in → add a to-do → mark it done → reload (it persists) → delete → log out.
// Screenshots of each step go to test/templates/artifacts/ (git-ignored).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { nodeFileWriter } from '../../core/fs';
import { createAppFiles, writeFileMap } from '../../core/templates';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { bundledTemplates } from '../../runtime/templates';
import { REPO_ROOT } from '../helpers/disk';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO_ROOT, 'test', 'templates', 'artifacts');
const quiet = { info() {}, warn() {}, error() {} };

let browser: Browser;
before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: install it (apt-get install chromium, as .ci/run does) or set CHROMIUM`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
});
after(async () => { await browser?.close(); });

for (const templateId of ['web.mql.todo', 'web.data-api.todo']) {
  describe(`${templateId} in a browser`, () => {
    let runtime: RunningRuntime;
    let dir: string;
    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-web-template-'));
      const { files } = await createAppFiles(bundledTemplates(), templateId, { name: 'WebTodo', appId: 'webtodo-abcde', baseUrl: 'http://localhost:8080' });
      await writeFileMap(nodeFileWriter, dir, files);
      runtime = await startRuntime({ appDir: path.join(dir, 'backend'), port: 0, log: quiet });
    });
    after(async () => { await runtime?.close(); fs.rmSync(dir, { recursive: true, force: true }); });

    test('the runtime hosts the built client at http://<app id>.localhost:<port>/', async () => {
      assert.equal(runtime.hostingUrl, `http://webtodo-abcde.localhost:${runtime.port}/`);
      const config = JSON.parse(fs.readFileSync(path.join(dir, 'backend', 'hosting', 'files', 'atlasConfig.json'), 'utf8'));
      assert.equal(config.appId, 'webtodo-abcde');
      const client = JSON.parse(fs.readFileSync(path.join(dir, 'frontend', templateId, 'src', 'atlasConfig.json'), 'utf8'));
      assert.equal(client.appId, 'webtodo-abcde');
    });

    test('register, log in, add, complete, reload, delete, log out', async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const consoleErrors: string[] = [];
      page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
      page.on('response', async (r) => { if (r.status() >= 400) consoleErrors.push(`${r.request().method()} ${r.url()} → ${r.status()} ${await r.text().catch(() => '')}`); });
      const shot = (step: string) => page.screenshot({ path: path.join(ARTIFACTS, `${templateId}-${step}.png`) });
      try {
        await page.goto(runtime.hostingUrl!);
        await page.getByRole('heading', { name: 'To-do list' }).waitFor({ timeout: 15_000 });
        await shot('1-login');
        const email = `ada-${templateId}@example.com`;
        await page.getByLabel('Email').fill(email);
        await page.getByLabel('Password').fill('secret-password');
        await page.getByRole('button', { name: 'Register' }).click();
        await page.getByRole('heading', { name: 'My to-dos' }).waitFor({ timeout: 15_000 });
        await page.getByRole('button', { name: 'Log out' }).click();

        await page.getByLabel('Email').fill(email);
        await page.getByLabel('Password').fill('secret-password');
        await page.getByRole('button', { name: 'Log in' }).click();
        await page.getByRole('heading', { name: 'My to-dos' }).waitFor({ timeout: 15_000 });
        await page.getByText('Nothing to do.').waitFor();
        await shot('2-logged-in');

        await page.getByLabel('New to-do').fill('Water the plants');
        await page.getByRole('button', { name: 'Add' }).click();
        const checkbox = page.getByLabel('Done: Water the plants');
        await checkbox.waitFor();
        await checkbox.click();
        await page.locator('li.done', { hasText: 'Water the plants' }).waitFor();
        await shot('3-done');

        await page.reload();
        await page.getByRole('heading', { name: 'My to-dos' }).waitFor({ timeout: 15_000 });
        await page.locator('li.done', { hasText: 'Water the plants' }).waitFor();
        assert.equal(await page.getByLabel('Done: Water the plants').isChecked(), true);
        await shot('4-reloaded');

        await page.getByRole('button', { name: 'Delete Water the plants' }).click();
        await page.getByText('Nothing to do.').waitFor();
        await page.getByRole('button', { name: 'Log out' }).click();
        await page.getByRole('heading', { name: 'To-do list' }).waitFor();
        await shot('5-logged-out');
        assert.equal(await page.getByRole('alert').count(), 0);
      } catch (e) {
        await shot('failure').catch(() => undefined);
        throw new Error(`${(e as Error).message}\nbrowser console errors: ${consoleErrors.join('\n') || 'none'}\npage: ${await page.locator('body').innerText().catch(() => '?')}`);
      } finally {
        await context.close();
      }
    });

    test("another user does not see the first user's items", async () => {
      const page = await browser.newPage();
      try {
        await page.goto(runtime.hostingUrl!);
        await page.getByLabel('Email').fill(`grace-${templateId}@example.com`);
        await page.getByLabel('Password').fill('secret-password');
        await page.getByRole('button', { name: 'Register' }).click();
        await page.getByLabel('New to-do').fill('Grace only');
        await page.getByRole('button', { name: 'Add' }).click();
        await page.getByLabel('Done: Grace only').waitFor({ timeout: 15_000 });
        await page.getByRole('button', { name: 'Log out' }).click();
        await page.getByLabel('Email').fill(`ada-${templateId}@example.com`);
        await page.getByLabel('Password').fill('secret-password');
        await page.getByRole('button', { name: 'Log in' }).click();
        await page.getByText('Nothing to do.').waitFor({ timeout: 15_000 });
        assert.equal(await page.getByText('Grace only').count(), 0);
      } finally {
        await page.close();
      }
    });
  });
}
