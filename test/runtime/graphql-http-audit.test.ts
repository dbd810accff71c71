// The graphql-http package's server audits (GraphQL-over-HTTP conformance) against the runtime's GraphQL
// route, with a valid bearer token on every request. The platform's endpoint is POST + application/json
// only and always answers `application/json` with `data` present (graphql.md §11), so the MUST audits for
// that shape have to pass; the other audits are printed, and every one that fails must be a documented
// difference from GraphQL-over-HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { serverAudits, type AuditResult } from 'graphql-http';
import { appliesToPostJson, DELIBERATE_DIFFERENCES, POST_JSON_MUST_AUDITS } from './fixtures/graphql-http-audits';
import { postJson, startExampleRuntime, type ExampleRuntime } from './fixtures/e2e-runtime';

describe('GraphQL-over-HTTP audits (graphql-http serverAudits) against POST /app/<appId>/graphql', () => {
  let example: ExampleRuntime;
  let accessToken = '';
  const endpoint = () => `${example.api}/app/${example.runtime.appId}/graphql`;
  /** graphql-http's fetch with the user's bearer token added: the route refuses anonymous requests. */
  const authorizedFetch = (input: string | URL | Request, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${accessToken}`);
    return fetch(input, { ...init, headers });
  };
  const audits = serverAudits({ url: endpoint, fetchFn: authorizedFetch });
  const results = new Map<string, AuditResult>();

  before(async () => {
    example = await startExampleRuntime();
    const app = `${example.api}/app/${example.runtime.appId}`;
    const credentials = { email: 'auditor@example.com', password: 'audit-password-1' };
    const registered = await postJson(`${app}/auth/providers/local-userpass/register`, credentials);
    assert.ok(registered.status >= 200 && registered.status < 300, JSON.stringify(registered.body));
    const login = await postJson(`${app}/auth/providers/local-userpass/login`, { username: credentials.email, password: credentials.password });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    accessToken = login.body.access_token;
    for (const audit of audits) results.set(audit.id, await audit.fn());
    const lines = audits.map((audit) => {
      const result = results.get(audit.id)!;
      const mark = result.status === 'ok' ? 'pass' : `FAIL (${result.status})`;
      const why = result.status === 'ok' ? '' : ` — ${result.reason}${DELIBERATE_DIFFERENCES[audit.id] ? `; deliberate: ${DELIBERATE_DIFFERENCES[audit.id]}` : ''}`;
      return `  ${mark.padEnd(13)} ${audit.id} ${audit.name}${why}`;
    });
    const passed = [...results.values()].filter((r) => r.status === 'ok').length;
    console.log(`graphql-http ${audits.length} server audits: ${passed} pass, ${audits.length - passed} fail\n${lines.join('\n')}`);
  });
  after(async () => { await example?.close(); });

  test('the audit list holds the MUST audits for POST application/json', () => {
    const applicable = audits.filter(appliesToPostJson).map((a) => a.id);
    for (const id of POST_JSON_MUST_AUDITS) {
      assert.ok(applicable.includes(id), `MUST audit ${id} is checked`);
    }
  });

  for (const audit of audits.filter(appliesToPostJson)) {
    test(`${audit.id} ${audit.name}`, () => {
      const result = results.get(audit.id);
      assert.ok(result, 'the audit ran');
      assert.equal(result.status, 'ok', result.status === 'ok' ? '' : result.reason);
    });
  }

  test('every failing audit is a documented difference from GraphQL-over-HTTP', () => {
    const undocumented = [...results.values()].filter((r) => r.status !== 'ok' && !(r.id in DELIBERATE_DIFFERENCES));
    assert.deepEqual(undocumented.map((r) => `${r.id} ${r.name}`), []);
  });

  test('the audits really hit the authenticated route: without the token the first MUST audit fails with 401', async () => {
    const [unauthenticated] = serverAudits({ url: endpoint() }).filter((a) => a.id === '4655');
    const result = await unauthenticated!.fn();
    assert.ok(result.status !== 'ok', 'the audit fails without the token');
    assert.equal(result.status, 'error');
    assert.equal(result.response.status, 401);
  });
});
