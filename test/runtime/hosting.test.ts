// Static hosting over real HTTP: the Host header picks the app's hosting/files; other hosts reach the API.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { isOriginAllowed } from '../../runtime/http/cors';
import { hostedAppIdOf } from '../../runtime/http/hosting';
import { startRuntime, type RunningRuntime } from '../../runtime';
import { baseApp } from '../helpers/app';
import { writeApp } from '../helpers/disk';

function get(port: number, host: string, target: string, method = 'GET'): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, method, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('static hosting', () => {
  let runtime: RunningRuntime;
  before(async () => {
    const dir = writeApp({
      ...baseApp(),
      'hosting/files/index.html': '<!doctype html><p>hello</p>',
      'hosting/files/app.js': 'console.log(1)',
      'hosting/files/docs/index.html': '<p>docs</p>',
    });
    runtime = await startRuntime({ appDir: dir, port: 0, log: { info() {}, warn() {}, error() {} } });
  });
  after(() => runtime?.close());

  test('serves files at http://<app id>.localhost:<port>/ with their content types', async () => {
    const host = `${runtime.appId}.localhost:${runtime.port}`;
    assert.equal(runtime.hostingUrl, `http://${host}/`);
    const index = await get(runtime.port, host, '/');
    assert.equal(index.status, 200);
    assert.equal(index.type, 'text/html; charset=utf-8');
    assert.match(index.body, /hello/);
    assert.equal((await get(runtime.port, host, '/app.js')).type, 'text/javascript; charset=utf-8');
    assert.match((await get(runtime.port, host.toUpperCase(), '/docs/')).body, /docs/);
    assert.equal((await get(runtime.port, host, '/app.js', 'HEAD')).status, 200);
  });

  test('refuses what is not a hosted file', async () => {
    const host = `${runtime.appId}.localhost:${runtime.port}`;
    assert.equal((await get(runtime.port, host, '/missing.js')).status, 404);
    assert.equal((await get(runtime.port, host, '/../realm_config.json')).status, 404);
    assert.equal((await get(runtime.port, host, '/%2e%2e/realm_config.json')).status, 404);
    assert.equal((await get(runtime.port, host, '/..%2frealm_config.json')).status, 404);
    assert.equal((await get(runtime.port, host, '/%E0%A4%A')).status, 404);
    assert.equal((await get(runtime.port, host, '/', 'POST')).status, 405);
    assert.equal((await get(runtime.port, `other-app.localhost:${runtime.port}`, '/')).status, 404);
  });

  test('the API answers on the hosted origin and on the bare host', async () => {
    const location = `/api/client/v2.0/app/${runtime.appId}/location`;
    const onHosted = await get(runtime.port, `${runtime.appId}.localhost:${runtime.port}`, location);
    assert.equal(onHosted.status, 200);
    assert.equal(JSON.parse(onHosted.body).deployment_model, JSON.parse((await get(runtime.port, `localhost:${runtime.port}`, location)).body).deployment_model);
    assert.notEqual((await get(runtime.port, `localhost:${runtime.port}`, '/app.js')).body, 'console.log(1)');
  });

  test('host names and origins', () => {
    assert.equal(hostedAppIdOf('myapp-abcde.localhost:8080'), 'myapp-abcde');
    assert.equal(hostedAppIdOf('MyApp-abcde.LOCALHOST'), 'myapp-abcde');
    assert.equal(hostedAppIdOf('localhost:8080'), undefined);
    assert.equal(hostedAppIdOf('example.org'), undefined);
    assert.equal(hostedAppIdOf(undefined), undefined);
    const policy = { allowedOrigins: [], allowLocalhost: true };
    assert.equal(isOriginAllowed(policy, 'http://myapp-abcde.localhost:8080'), true);
    assert.equal(isOriginAllowed(policy, 'http://localhost.evil.example'), false);
    assert.equal(isOriginAllowed(policy, 'http://evil.example/localhost'), false);
  });
});
