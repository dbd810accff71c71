// The words and texts the editor shows for the runtime and the runner, without VS Code: the runtime status
// bar item in each state, result documents (10 MB included), history entries.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addToHistory, describeHistoryEntry, historyFromState, type HistoryEntry } from '../../client/history';
import { resultDocumentText, resultFileName } from '../../client/results';
import { describeRuntimeStatus } from '../../client/runtimeStatus';
import { customJwtSettings } from '../../client/appModels';
import { loadApp } from '../../core/load';
import { nodeFileSystem } from '../../core/fs';
import path from 'node:path';
import { REPO_ROOT } from '../helpers/disk';

describe('runtime status bar item', () => {
  test('each state in words, never "undefined"', () => {
    const states = [
      { kind: 'stopped' as const },
      { kind: 'starting' as const, appName: 'todo-tracker' },
      { kind: 'running' as const, appId: 'todo-tracker-abcde', port: 8123, url: 'http://localhost:8123', attached: false },
      { kind: 'crashed' as const, appName: 'todo-tracker', description: 'the runtime process ended unexpectedly (killed by SIGKILL)', lastLines: ['a', 'error: b'] },
      { kind: 'failed' as const, appName: 'todo-tracker', message: 'the app has 1 error in its files' },
    ];
    const views = states.map(describeRuntimeStatus);
    for (const view of views) assert.doesNotMatch(`${view.text} ${view.tooltip}`, /undefined/);
    assert.equal(views[1]!.text, '$(sync~spin) App Services: starting');
    assert.equal(views[2]!.text, '$(play-circle) todo-tracker-abcde :8123');
    assert.match(views[3]!.tooltip, /killed by SIGKILL\)\.\nLast log lines:\na\nerror: b\nClick to restart/);
    assert.equal(views[3]!.isError, true);
    assert.equal(views[0]!.isError, false);
  });
});

describe('result documents', () => {
  const result = { status: 200, timeMs: 12.4, identity: 'ada@example.com', operationName: 'Tasks', text: '{"data":{"tasks":[]}}', errors: [], hasData: true, value: { data: { tasks: [] } } };

  test('a JSONC header with operation, identity, status, time and size, then the answer indented', () => {
    const text = resultDocumentText(result, 'query Tasks', new Date('2026-01-02T03:04:05Z'));
    assert.equal(text, '// query Tasks\n// as ada@example.com\n// HTTP 200 · 12 ms · 21 B · 2026-01-02T03:04:05.000Z\n{\n  "data": {\n    "tasks": []\n  }\n}\n');
  });

  test('errors are counted in the header; a body that is not JSON is shown as it came', () => {
    const text = resultDocumentText({ ...result, status: 502, text: 'Bad gateway', value: undefined, errors: [{ message: 'upstream\nfailed' }] }, 'query Tasks', new Date(0));
    assert.match(text, /^\/\/ 1 error: upstream failed$/m);
    assert.match(text, /\nBad gateway\n$/);
  });

  test('a 10 MB answer is formatted in well under a second', () => {
    const big = JSON.stringify({ data: { items: Array.from({ length: 100_000 }, (_, i) => ({ _id: i, name: `item ${i} ${'x'.repeat(60)}` })) } });
    assert.ok(big.length > 9_000_000);
    const started = performance.now();
    const text = resultDocumentText({ ...result, text: big, value: JSON.parse(big) }, 'query Big', new Date(0));
    const ms = performance.now() - started;
    assert.ok(text.length > big.length);
    console.log(`formatting a ${(big.length / 1e6).toFixed(1)} MB answer took ${ms.toFixed(0)} ms`);
  });

  test('file names are safe path segments', () => {
    assert.equal(resultFileName('Tasks', 3), 'Tasks-3.jsonc');
    assert.equal(resultFileName(undefined, 1), 'result-1.jsonc');
    assert.equal(resultFileName('../x y', 2), '_x_y-2.jsonc');
  });
});

describe('history', () => {
  const entry = (n: number, extra: Partial<HistoryEntry> = {}): HistoryEntry => ({
    id: `e${n}`, at: n, operationName: `Op${n}`, operationKind: 'query', identityLabel: 'ada@example.com', identityKey: 'k', errorCount: 0, query: '{ a }', status: 200, timeMs: 5, ...extra,
  });

  test('newest first, capped', () => {
    let entries: HistoryEntry[] = [];
    for (let i = 0; i < 5; i++) entries = addToHistory(entries, entry(i), 3);
    assert.deepEqual(entries.map((e) => e.id), ['e4', 'e3', 'e2']);
  });

  test('describes outcome, identity and time; failures are marked', () => {
    assert.deepEqual(describeHistoryEntry(entry(1)).description, 'ada@example.com · HTTP 200 · 5 ms');
    const failed = describeHistoryEntry(entry(2, { status: undefined, timeMs: undefined, failure: 'cancelled' }));
    assert.equal(failed.description, 'ada@example.com · failed: cancelled');
    assert.equal(failed.failed, true);
    assert.equal(describeHistoryEntry(entry(3, { errorCount: 2 })).failed, true);
  });

  test('stored state is checked, and result documents of an earlier session are dropped', () => {
    assert.deepEqual(historyFromState('junk'), []);
    assert.deepEqual(historyFromState([{ id: 1 }, entry(1, { resultUri: 'asl-result:/x' })]).map((e) => [e.id, e.resultUri]), [['e1', undefined]]);
  });
});

describe('custom JWT settings', () => {
  test('the example app key comes from secrets.json, the audience from the provider config; --secret values win', async () => {
    const app = await loadApp(nodeFileSystem, path.join(REPO_ROOT, 'examples/todo-tracker'));
    const settings = customJwtSettings(app, 'todo-tracker-abcde', []);
    assert.deepEqual(settings, {
      providerName: 'custom-token', key: 'local-example-secret-jwt-signing-key-not-for-production', keyName: 'jwtSigningKey', algorithm: 'HS256', audience: ['todo-tracker-abcde'],
    });
    assert.equal(customJwtSettings(app, 'x', ['jwtSigningKey=override'])?.key, 'override');
  });
});
