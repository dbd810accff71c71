// The sync sessions traffic as text (core/sync/sessionsClient.ts), on entries in the shape the runtime
// records them: a denied verdict shows its evaluation trace, a JSON_ERROR body says client reset or
// compensating write, a changeset's instructions sit under its message, and following a session prints
// only what came after the last entry already shown.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { evaluateExpressionTraced } from '../../core/rules';
import { traceLines } from '../../core/rules/trace';
import {
  describeSchemaVersion, describeSession, newTraffic, renderSessionTraffic, trafficEntryLines,
} from '../../core/sync/sessionsClient';
import type { SyncSessionInfo, SyncTrafficEntry } from '../../core/sync/messages';

const USER = '65a0000000000000000000aa';
const OTHER = '65a0000000000000000000bb';
const AT = Date.UTC(2026, 10, 26, 9, 30, 15, 250);

const session: SyncSessionInfo = {
  connection: 'c0ffee', session: 2, userId: USER, partition: JSON.stringify(OTHER), protocolVersion: 14, state: 'identified',
  clientFileIdent: 7, downloadedVersion: 12, uploadedClientVersion: 3,
};

describe('sync sessions traffic text', () => {
  test('a verdict shows allowed/denied and each trace through traceLines, indented under the message', async () => {
    const expression = { '%%user.id': '%%partition' };
    const { result, trace } = await evaluateExpressionTraced(expression, { user: { id: USER }, partition: OTHER });
    assert.equal(result, false);
    const entry: SyncTrafficEntry = {
      at: AT, direction: 'in', type: 'permissions', fields: { read: false, write: false, readGrantedByWrite: false },
      detail: JSON.stringify({ read: trace, write: trace, problems: ['no rule matches'] }),
    };
    const lines = trafficEntryLines(entry);
    assert.equal(lines[0], '09:30:15.250 client PERMISSIONS read=false write=false readGrantedByWrite=false');
    const traced = traceLines(trace, '        ');
    assert.deepEqual(lines.slice(1), ['    read denied:', ...traced, '    write denied:', ...traced, '    problem: no rule matches']);
    assert.ok(traced.some((line) => line.includes(`✗ "%%user.id": "%%partition"   [subject "${USER}", operand "${OTHER}"]`)), traced.join('\n'));
  });

  test('a JSON_ERROR that asks for a client reset and a compensating write say so, with the body', () => {
    const reset = trafficEntryLines({
      at: AT, direction: 'out', type: 'json_error', fields: { errorCode: 209 },
      detail: JSON.stringify({ message: 'Bad server version', tryAgain: false, action: 'ClientReset', shouldClientReset: true, isRecoveryModeDisabled: false }),
    });
    assert.equal(reset[0], '09:30:15.250 server JSON_ERROR errorCode=209');
    assert.equal(reset[1], '    client reset: the client must discard or recover its local Realm');
    assert.ok(reset.includes('      "action": "ClientReset",'), reset.join('\n'));
    const compensating = trafficEntryLines({
      at: AT, direction: 'out', type: 'json_error', fields: { errorCode: 231 },
      detail: JSON.stringify({ message: 'write not allowed', action: 'Warning', compensatingWrites: [{ objectName: 'Task', primaryKey: 'x', reason: 'denied' }] }),
    });
    assert.equal(compensating[1], '    compensating write: the server undid writes the client was not allowed to make');
    assert.ok(compensating.includes('          "objectName": "Task",'), compensating.join('\n'));
    const plain = trafficEntryLines({ at: AT, direction: 'out', type: 'error', fields: { errorCode: 104, tryAgain: false }, detail: 'Limits exceeded in input message' });
    assert.deepEqual(plain, ['09:30:15.250 server ERROR errorCode=104 tryAgain=false', '    Limits exceeded in input message']);
  });

  test('changesets list their instructions under the message; the document names the session first', () => {
    const upload: SyncTrafficEntry = {
      at: AT, direction: 'in', type: 'upload', fields: { progressClientVersion: '4', progressServerVersion: '12', changesets: 1 },
      changesets: [{ version: '4', origin: '7', timestamp: '2026-11-26T09:30:15.000Z', instructions: ['CreateObject Task oid(65a0000000000000000000c1)', 'Update Task oid(65a0000000000000000000c1) .name = "a b"'], more: 3 }],
    };
    const text = renderSessionTraffic(session, [upload]);
    const lines = text.split('\n');
    assert.equal(lines[0], 'Sync session 2 on connection c0ffee');
    assert.equal(lines[1], describeSession(session));
    assert.equal(lines[1], `user ${USER} · partition "${OTHER}" · protocol 14 · identified`);
    assert.equal(lines[2], 'client file 7, downloaded server version 12, uploaded client version 3');
    const at = lines.indexOf('09:30:15.250 client UPLOAD progressClientVersion=4 progressServerVersion=12 changesets=1');
    assert.ok(at > 0, text);
    assert.deepEqual(lines.slice(at + 1, at + 5), [
      '    changeset version 4 from client file 7 at 2026-11-26T09:30:15.000Z: 2 instruction(s)',
      '        CreateObject Task oid(65a0000000000000000000c1)',
      '        Update Task oid(65a0000000000000000000c1) .name = "a b"',
      '        … and 3 more',
    ]);
    assert.match(renderSessionTraffic(session, []), /\(no traffic yet\)\n$/);
  });

  test('following: only the entries after the last one shown; all of them once it has left the ring', () => {
    const entry = (n: number): SyncTrafficEntry => ({ at: AT + n, direction: 'in', type: 'mark', fields: { requestIdent: String(n) } });
    const first = [entry(1), entry(2), entry(3)];
    assert.deepEqual(newTraffic([], first), first);
    assert.deepEqual(newTraffic(first, [entry(2), entry(3), entry(4), entry(5)]), [entry(4), entry(5)]);
    assert.deepEqual(newTraffic(first, first), []);
    assert.deepEqual(newTraffic(first, [entry(6), entry(7)]), [entry(6), entry(7)]);
  });

  test('a flexible session shows its schema version, and the one it migrates to; a version its breaking changes', () => {
    const flexible: SyncSessionInfo = { ...session, partition: 'flexible (query version 2)', schemaVersion: { bound: 1, serving: 0 } };
    assert.equal(describeSession(flexible), `user ${USER} · partition flexible (query version 2) · protocol 14 · schema version 0 (migrating to 1) · identified`);
    assert.equal(describeSession({ ...flexible, schemaVersion: { bound: 1, serving: 1 } }), `user ${USER} · partition flexible (query version 2) · protocol 14 · schema version 1 · identified`);
    assert.equal(
      describeSchemaVersion({ version: 1, createdAt: '2026-12-06T22:00:00.000Z', changes: ['field "legacy" of table "Thing" removed'], tables: ['Thing'] }, 1),
      'version 1 [newest] (2026-12-06T22:00:00.000Z) · tables Thing · field "legacy" of table "Thing" removed',
    );
    assert.equal(describeSchemaVersion({ version: 0, createdAt: '', changes: [], tables: [] }, 1), 'version 0 · tables (none yet) · the schema sync started with');
  });
});
