// The pure parts of the runtime's security checks (issue 21): which Host and Origin a localhost runtime
// answers, the aggregation pipeline checker (no MongoDB needed), the redaction of secrets in permission
// traces, the account events that end sync connections, and the names of nested apps' data folders.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ObjectId } from 'bson';
import { redactTrace, REDACTED, type EvaluationTrace } from '../../core/rules';
import { AccountEvents, type AccountEnd } from '../../runtime/auth/account-events';
import { appDataFolderName } from '../../runtime/data-folder';
import { hostNameOf, isLoopbackOrigin, isOwnHost, isRuntimeOrigin, isTrustedRequestOrigin } from '../../runtime/http/origin';
import { findPipelineViolation } from '../../runtime/store/pipeline-check';

describe('Host check (DNS rebinding)', () => {
  const loopbackBound = { bindHost: '127.0.0.1' };
  test('loopback names, *.localhost and IP literals of loopback pass, with or without a port', () => {
    for (const host of ['localhost', 'localhost:8080', 'LOCALHOST.:1', '127.0.0.1:9', '127.5.6.7', '[::1]:8080', '[::1]', 'todo-abcde.localhost:4000', undefined]) {
      assert.equal(isOwnHost(host, loopbackBound), true, String(host));
    }
  });
  test('any other name is refused: a rebinding attacker\'s domain, look-alikes, garbage', () => {
    for (const host of ['evil.example', 'evil.example:8080', 'localhost.evil.example', '127.0.0.1.nip.io', '10.0.0.5', '[::2]', 'x', '', 'local host', 'localhost:80:80', '[::1']) {
      assert.equal(isOwnHost(host, loopbackBound), false, host);
    }
  });
  test('the --host given is its own; a wildcard bind admits IP literals but never names', () => {
    assert.equal(isOwnHost('devbox.lan:8080', { bindHost: 'devbox.lan' }), true);
    assert.equal(isOwnHost('192.168.1.5:8080', { bindHost: '192.168.1.5' }), true);
    assert.equal(isOwnHost('192.168.1.6:8080', { bindHost: '192.168.1.5' }), false);
    assert.equal(isOwnHost('192.168.1.6:8080', { bindHost: '0.0.0.0' }), true);
    assert.equal(isOwnHost('[fe80::1]:8080', { bindHost: '::' }), true);
    assert.equal(isOwnHost('evil.example', { bindHost: '0.0.0.0' }), false);
    assert.equal(isOwnHost('public.example:443', { bindHost: '127.0.0.1', names: ['public.example'] }), true);
  });
  test('host names are read without port and case', () => {
    assert.equal(hostNameOf('Example.ORG:80'), 'example.org');
    assert.equal(hostNameOf('[::1]:80'), '[::1]');
    assert.equal(hostNameOf('[::1]x'), undefined);
  });
});

describe('Origin checks (CSRF, CORS)', () => {
  test('loopback origins are any scheme-http(s) page on a loopback name', () => {
    for (const o of ['http://localhost:3000', 'https://localhost', 'http://127.0.0.1:8080', 'http://[::1]:1', 'http://app-abcde.localhost:9']) assert.equal(isLoopbackOrigin(o), true, o);
    for (const o of ['null', 'http://evil.example', 'http://localhost.evil.example', 'file://', 'http://127.0.0.1.nip.io', 'ftp://localhost']) assert.equal(isLoopbackOrigin(o), false, o);
  });
  test('unauthenticated state-changing routes: no Origin (SDK, curl) passes unless the browser says cross-site; other origins only when allowed', () => {
    const allowed = ['https://app.example.org'];
    assert.equal(isTrustedRequestOrigin(undefined, undefined, allowed), true);
    assert.equal(isTrustedRequestOrigin(undefined, 'same-origin', allowed), true);
    assert.equal(isTrustedRequestOrigin(undefined, 'cross-site', allowed), false);
    assert.equal(isTrustedRequestOrigin('https://app.example.org', 'cross-site', allowed), true);
    assert.equal(isTrustedRequestOrigin('https://APP.example.org/', undefined, allowed), true);
    assert.equal(isTrustedRequestOrigin('http://localhost:5173', 'cross-site', allowed), true);
    assert.equal(isTrustedRequestOrigin('https://evil.example', undefined, allowed), false);
    assert.equal(isTrustedRequestOrigin('null', undefined, allowed), false);
    assert.equal(isTrustedRequestOrigin('https://app.example.org.evil.example', undefined, allowed), false);
  });
  test('the runtime\'s own origin: its port on localhost, 127.0.0.1, [::1] or the bound host; never a hosted site or another port', () => {
    const own = { bindHost: '127.0.0.1' };
    assert.equal(isRuntimeOrigin('http://localhost:4000', 4000, own), true);
    assert.equal(isRuntimeOrigin('http://127.0.0.1:4000', 4000, own), true);
    assert.equal(isRuntimeOrigin('http://[::1]:4000', 4000, own), true);
    assert.equal(isRuntimeOrigin('http://localhost:4001', 4000, own), false);
    assert.equal(isRuntimeOrigin('http://todo-abcde.localhost:4000', 4000, own), false);
    assert.equal(isRuntimeOrigin('http://evil.example:4000', 4000, own), false);
    assert.equal(isRuntimeOrigin('http://devbox.lan:4000', 4000, { bindHost: 'devbox.lan' }), true);
  });
});

describe('aggregation pipeline checker (before anything reaches MongoDB)', () => {
  const ruled = { allowCrossCollection: false };
  const system = { allowCrossCollection: true };
  const cases: [string, unknown, string, string][] = [
    ['$where in a $match', [{ $match: { $where: 'sleep(1000)' } }], '$where', 'pipeline[0].$match.$where'],
    ['$function inside $expr', [{ $match: { $expr: { $function: { body: 'function() { return true }', args: [], lang: 'js' } } } }], '$function', 'pipeline[0].$match.$expr.$function'],
    ['$accumulator in $group', [{ $group: { _id: null, x: { $accumulator: { init: 'function() {}' } } } }], '$accumulator', 'pipeline[0].$group.x.$accumulator'],
    ['$function in a $facet branch', [{ $facet: { a: [{ $project: { x: { $function: {} } } }] } }], '$function', 'pipeline[0].$facet.a[0].$project.x.$function'],
    ['$where in a $lookup pipeline in a $unionWith pipeline', [{ $unionWith: { coll: 'x', pipeline: [{ $lookup: { from: 'y', pipeline: [{ $match: { $where: '1' } }], as: 'z' } }] } }], '$where', 'pipeline[0].$unionWith.pipeline[0].$lookup.pipeline[0].$match.$where'],
    ['$currentOp', [{ $currentOp: {} }], '$currentOp', 'pipeline[0].$currentOp'],
  ];
  for (const [name, pipeline, operator, path] of cases) {
    test(`refused at every depth, for system calls too: ${name}`, () => {
      const found = findPipelineViolation(pipeline, system);
      assert.deepEqual(found && { operator: found.operator, path: found.path }, { operator, path });
      assert.ok(findPipelineViolation(pipeline, ruled), 'refused where rules apply as well');
    });
  }
  const crossing: [string, unknown, string][] = [
    ['$lookup at the top', [{ $lookup: { from: 'User', localField: 'a', foreignField: 'b', as: 'c' } }], '$lookup'],
    ['$lookup inside $facet', [{ $facet: { users: [{ $lookup: { from: 'User', pipeline: [], as: 'u' } }] } }], '$lookup'],
    ['$graphLookup inside $facet', [{ $facet: { t: [{ $graphLookup: { from: 'User', startWith: '$a', connectFromField: 'a', connectToField: 'b', as: 'c' } }] } }], '$graphLookup'],
    ['$unionWith', [{ $match: {} }, { $unionWith: { coll: 'User' } }], '$unionWith'],
    ['$out as a last stage', [{ $match: {} }, { $out: 'stolen' }], '$out'],
    ['$merge in a $facet', [{ $facet: { a: [{ $merge: { into: 'x' } }] } }], '$merge'],
  ];
  for (const [name, pipeline, operator] of crossing) {
    test(`stages across collections refused where rules apply, allowed for system calls: ${name}`, () => {
      assert.equal(findPipelineViolation(pipeline, ruled)?.operator, operator);
      assert.equal(findPipelineViolation(pipeline, system), undefined);
    });
  }
  test('ordinary pipelines pass; a $literal is data; BSON values are not walked; depth is bounded', () => {
    const ordinary = [{ $match: { owner: 'u', n: { $gt: 1 }, _id: new ObjectId() } }, { $group: { _id: '$status', n: { $sum: 1 } } }, { $sort: { n: -1 } }, { $project: { x: { $literal: { $where: 'just text' } } } }];
    assert.equal(findPipelineViolation(ordinary, ruled), undefined);
    let deep: unknown = { $match: {} };
    for (let i = 0; i < 500; i++) deep = { $and: [deep] };
    assert.equal(findPipelineViolation([deep], system)?.reason, 'depth');
  });
});

describe('permission trace redaction', () => {
  const secret = 's3cr3t-partner-token';
  const trace: EvaluationTrace = {
    expression: '%%values.partnerToken', result: false, subject: secret, operand: { nested: [`Bearer ${secret}`, 1], [secret]: true },
    note: `%function failed: got ${secret} back`,
    children: [{ expression: '"%%user.id": "%%partition"', result: true, subject: 'abc', operand: 'abc', children: [] }],
  };
  test('a secret value reads [redacted secret] wherever it is: whole, inside strings, in keys, in notes', () => {
    const out = redactTrace(trace, [secret]);
    assert.equal(out.subject, REDACTED);
    assert.deepEqual(out.operand, { nested: [`Bearer ${REDACTED}`, 1], [REDACTED]: true });
    assert.equal(out.note, `%function failed: got ${REDACTED} back`);
    assert.equal(out.expression, '%%values.partnerToken', 'expressions name values, they never hold them');
    assert.deepEqual(out.children[0], trace.children[0], 'the rest is unchanged');
    assert.ok(!JSON.stringify(out).includes(secret));
    assert.equal(trace.subject, secret, 'the original is not modified');
  });
  test('short secrets are replaced whole only; no secrets, no change; a __proto__ key stays a key', () => {
    const out = redactTrace({ expression: 'e', result: true, subject: 'ab', operand: 'cab', children: [] }, ['ab']);
    assert.equal(out.subject, REDACTED);
    assert.equal(out.operand, 'cab');
    assert.equal(redactTrace(trace, []), trace);
    const polluted = redactTrace({ expression: 'e', result: true, operand: JSON.parse(`{"__proto__": {"x": "${secret}"}}`), children: [] }, [secret]);
    assert.equal(Object.getPrototypeOf(polluted.operand), Object.prototype);
    assert.deepEqual(Object.keys(polluted.operand as object), ['__proto__']);
  });
});

describe('account events (what ends a sync connection)', () => {
  const login = (userId: string, sessionId: string, expiresAt = Math.floor(Date.now() / 1000) + 3600) => ({ userId, sessionId, expiresAt });
  test('a revoked session ends only the connections of that session; disable and delete end all of the user\'s', () => {
    const events = new AccountEvents();
    const ended: [string, AccountEnd][] = [];
    events.watch(login('u1', 's1'), (e) => ended.push(['a', e]));
    events.watch(login('u1', 's2'), (e) => ended.push(['b', e]));
    events.watch(login('u2', 's3'), (e) => ended.push(['c', e]));
    events.emit({ kind: 'session-revoked', userId: 'u1', sessionId: 's1' });
    assert.deepEqual(ended.map(([w, e]) => [w, e.kind]), [['a', 'session-revoked']]);
    events.emit({ kind: 'user-disabled', userId: 'u1' });
    assert.deepEqual(ended.map(([w, e]) => [w, e.kind]), [['a', 'session-revoked'], ['b', 'user-disabled']]);
    events.emit({ kind: 'user-deleted', userId: 'u2' });
    assert.deepEqual(ended.map(([w]) => w), ['a', 'b', 'c']);
    events.emit({ kind: 'user-deleted', userId: 'u1' });
    assert.equal(ended.length, 3, 'each connection is told once');
    assert.equal(events.watching, 0);
  });
  test('an access token\'s expiry ends its connection (at once when already expired); a stopped watch hears nothing', async () => {
    let now = 1_000_000_000_000;
    const events = new AccountEvents(() => now);
    const ended: AccountEnd[] = [];
    events.watch(login('u', 's', now / 1000 - 1), (e) => ended.push(e));
    assert.deepEqual(ended.map((e) => e.kind), ['token-expired']);
    events.watch(login('u', 's', now / 1000 + 1), (e) => ended.push(e));
    const stop = events.watch(login('u', 's', now / 1000 + 1), () => assert.fail('stopped'));
    stop();
    now += 2000;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    assert.deepEqual(ended.map((e) => e.kind), ['token-expired', 'token-expired']);
    assert.match(ended[1]!.message, /expired/);
    const subscribed: string[] = [];
    const unsubscribe = events.subscribe((c) => subscribed.push(c.kind));
    events.emit({ kind: 'user-disabled', userId: 'x' });
    unsubscribe();
    events.emit({ kind: 'user-deleted', userId: 'x' });
    assert.deepEqual(subscribed, ['user-disabled']);
  });
});

describe('data folders of nested apps', () => {
  test('a/b and a_b get different folders; % is escaped, so no two paths share one', () => {
    const names = ['a/b', 'a_b', 'a%2Fb', 'a', ''].map((p) => appDataFolderName(p));
    assert.equal(new Set(names).size, names.length, names.join(' '));
    assert.equal(appDataFolderName(''), '_root');
    assert.equal(appDataFolderName('plain-app'), 'plain-app');
  });
});
