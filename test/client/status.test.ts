// The words of the status bar item for each state of the server and of the workspace it reports.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { StatusParams } from '../../core/protocol';
import { appCountLabel, describeStatus } from '../../client/status';

const todo = { root: '/ws/todo-tracker', name: 'todo-tracker', errors: 1, warnings: 0 };
const shop = { root: '/ws/shop', name: 'shop', errors: 0, warnings: 2 };
const ready = (apps: StatusParams['apps']): StatusParams => ({ state: 'ready', apps });

describe('status bar item', () => {
  test('counts apps in words', () => {
    assert.equal(appCountLabel(0), 'no apps');
    assert.equal(appCountLabel(1), '1 app');
    assert.equal(appCountLabel(3), '3 apps');
  });

  test('a starting server, and a running one still loading, spin', () => {
    assert.equal(describeStatus('starting', undefined).text, '$(sync~spin) App Services: starting');
    assert.equal(describeStatus('running', undefined).text, '$(sync~spin) App Services: loading apps');
    assert.equal(describeStatus('running', { state: 'loading', apps: [todo] }).text, '$(sync~spin) App Services: loading apps');
  });

  test('a ready server shows how many apps it loaded, with their problems in the tooltip', () => {
    const view = describeStatus('running', ready([todo, shop]));
    assert.equal(view.text, '$(error) App Services: 2 apps, 1 error');
    assert.match(view.tooltip, /^todo-tracker \(\/ws\/todo-tracker\): 1 error, 0 warnings$/m);
    assert.match(view.tooltip, /^shop \(\/ws\/shop\): 0 errors, 2 warnings$/m);
    assert.equal(view.isError, false);
  });

  test('a check mark only when no app has an error or a warning; errors counted over every app, then warnings', () => {
    const clean = { ...shop, warnings: 0 };
    assert.equal(describeStatus('running', ready([clean])).text, '$(check) App Services: 1 app');
    assert.equal(describeStatus('running', ready([shop])).text, '$(warning) App Services: 1 app, 2 warnings');
    assert.equal(describeStatus('running', ready([todo])).text, '$(error) App Services: 1 app, 1 error');
    assert.equal(describeStatus('running', ready([todo, { ...todo, root: '/ws/b', errors: 4 }, shop])).text, '$(error) App Services: 3 apps, 5 errors');
  });

  test('a workspace without app roots says so', () => {
    const view = describeStatus('running', ready([]));
    assert.equal(view.text, '$(check) App Services: no apps');
    assert.match(view.tooltip, /No app root/);
  });

  test('only a stopped server is an error, whatever the last report said', () => {
    const view = describeStatus('stopped', ready([todo]));
    assert.equal(view.isError, true);
    assert.equal(view.text, '$(error) App Services: server stopped');
    assert.match(view.tooltip, /Restart Language Server/);
  });
});
