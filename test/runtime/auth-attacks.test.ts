// Forged and invalid tokens (issue 5 item 7): every one is refused with 401 and the platform's error body.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { SignJWT, exportSPKI, decodeJwt } from 'jose';
import { APP_ID, JWT_SECRET, appRoute, client, defaultProviders, errorOf, startAuthHarness, type Harness } from './fixtures/auth-harness';
import { newSigningKey, signWith, startJwksServer, type JwksServer, type SigningKey } from './fixtures/auth-jwks';

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const hmac = (claims: Record<string, unknown>, secret: string | Uint8Array, header: Record<string, unknown> = {}) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT', ...header }).sign(typeof secret === 'string' ? new TextEncoder().encode(secret) : secret);

function tamper(token: string, change: (claims: Record<string, unknown>) => void): string {
  const [h, p, s] = token.split('.');
  const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
  change(claims);
  return `${h}.${b64(claims)}.${s}`;
}

describe('forged and invalid tokens are all refused', () => {
  let hsApp: Harness;
  let jwkApp: Harness;
  let jwks: JwksServer;
  let rsKey: SigningKey;
  let strangerKey: SigningKey;

  before(async () => {
    [rsKey, strangerKey] = await Promise.all([newSigningKey('good-kid'), newSigningKey('stranger-kid')]);
    jwks = await startJwksServer([rsKey]);
    hsApp = await startAuthHarness();
    const providers = defaultProviders();
    providers['custom-token'] = {
      name: 'custom-token', type: 'custom-token', disabled: false,
      config: { audience: [], useJWKURI: true, jwkURI: jwks.url, signingAlgorithm: 'RS256' },
      secret_config: { signingKeys: [] }, metadata_fields: [],
    };
    jwkApp = await startAuthHarness({ providers, secrets: {}, keySets: { timeoutMs: 1000, cooldownMs: 0 } });
  });
  after(async () => { await hsApp.close(); await jwkApp.close(); await jwks.close(); });

  test('none of the forged tokens is accepted, each gets 401 with the error body', async () => {
    const now = Math.floor(hsApp.clock.now() / 1000);
    const serverSecret = new Uint8Array(Buffer.from((await fs.readFile(path.join(hsApp.dataDir, 'auth', 'token-secret'), 'utf8')).trim(), 'base64url'));
    const login = await hsApp.request('POST', appRoute('/auth/providers/anon-user/login'), { body: {} });
    const realAccess: string = login.json.access_token;
    const realRefresh: string = login.json.refresh_token;
    const claims = decodeJwt(realAccess) as Record<string, unknown>;
    const pem = await exportSPKI((await import('node:crypto')).createPublicKey({ key: rsKey.jwk as never, format: 'jwk' }));

    // Sanity: the genuine tokens work, so a refusal below is the forgery's doing.
    assert.equal((await hsApp.request('GET', client('/auth/profile'), { token: realAccess })).status, 200);
    assert.equal((await hsApp.request('POST', appRoute('/auth/providers/custom-token/login'), { body: { token: await hmac({ sub: 's', aud: APP_ID, exp: now + 600, user_data: { name: 'n' } }, JWT_SECRET) } })).status, 200);
    assert.equal((await jwkApp.request('POST', appRoute('/auth/providers/custom-token/login'), { body: { token: await signWith(rsKey, { sub: 's', aud: APP_ID }) } })).status, 200);

    const oversized = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ ...claims, pad: 'x'.repeat(1_000_100) })}.${b64('sig')}`;
    const customBase = { sub: 'attacker', aud: APP_ID, exp: now + 600, user_data: { name: 'n' } };

    const accessForgeries: Record<string, string> = {
      'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`,
      'alg none with signature': `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.${realAccess.split('.')[2]}`,
      'HS256 signed with another key': await hmac(claims, 'not-the-server-secret-at-all-0123456789abcdef'),
      'expired': await hmac({ ...claims, iat: now - 4000, exp: now - 2200 }, serverSecret),
      'not yet valid': await hmac({ ...claims, nbf: now + 3600 }, serverSecret),
      'tampered payload': tamper(realAccess, (c) => { c.sub = '000000000000000000000001'; }),
      'tampered expiry': tamper(realAccess, (c) => { c.exp = (c.exp as number) + 100000; }),
      'refresh token used as access token': realRefresh,
      'unknown session': await hmac({ ...claims, iss: 'ffffffffffffffffffffffff' }, serverSecret),
      'oversized beyond the header limit': oversized,
      'oversized within the header limit': `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ ...claims, pad: 'x'.repeat(750_100) })}.${b64('sig')}`,
      'malformed base64': `${b64({ alg: 'HS256' })}.%%%not-base64%%%.${b64('sig')}`,
      'two segments': `${b64({ alg: 'HS256' })}.${b64(claims)}`,
      'garbage': 'this is not a token',
      'RS256 header over HMAC signature': tamper(await hmac(claims, serverSecret), () => undefined).replace(/^[^.]+/, b64({ alg: 'RS256', typ: 'JWT' })),
    };
    const customForgeries: Record<string, string> = {
      'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${b64(customBase)}.`,
      'HS256 signed with the RS256 public key': await hmac(customBase, pem, { kid: rsKey.kid }),
      'expired': await hmac({ ...customBase, exp: now - 60 }, JWT_SECRET),
      'not yet valid': await hmac({ ...customBase, nbf: now + 3600 }, JWT_SECRET),
      'wrong audience': await hmac({ ...customBase, aud: 'another-app' }, JWT_SECRET),
      'tampered payload': tamper(await hmac(customBase, JWT_SECRET), (c) => { c.sub = 'admin'; }),
      'wrong key': await hmac(customBase, 'guessed-secret-guessed-secret-guessed-secret'),
      'oversized': await hmac({ ...customBase, pad: 'x'.repeat(1_000_100) }, JWT_SECRET),
      'malformed base64': `${b64({ alg: 'HS256' })}.!!!!.${b64('sig')}`,
      'missing exp': await hmac({ sub: 'a', aud: APP_ID, user_data: { name: 'n' } }, JWT_SECRET),
      'missing sub': await hmac({ aud: APP_ID, exp: now + 600, user_data: { name: 'n' } }, JWT_SECRET),
    };
    const jwkForgeries: Record<string, string> = {
      'alg none': `${b64({ alg: 'none', kid: rsKey.kid })}.${b64(customBase)}.`,
      'HS256 signed with the RS256 public key': await hmac(customBase, pem, { kid: rsKey.kid }),
      'unknown kid': await signWith(strangerKey, customBase),
      'known kid, foreign key': await signWith({ ...strangerKey, kid: rsKey.kid }, customBase),
      'expired': await signWith(rsKey, { ...customBase, exp: now - 60 }),
      'wrong audience': await signWith(rsKey, { ...customBase, aud: 'another-app' }),
      'tampered payload': tamper(await signWith(rsKey, customBase), (c) => { c.sub = 'admin'; }),
      'malformed base64': `${b64({ alg: 'RS256', kid: rsKey.kid })}.***.${b64('sig')}`,
    };

    const accepted: string[] = [];
    const check = async (label: string, res: Awaited<ReturnType<Harness['request']>>) => {
      if (res.status !== 401) { accepted.push(`${label}: ${res.status} ${res.text.slice(0, 200)}`); return; }
      const body = errorOf(res);
      assert.ok(body.error.length > 0, label);
    };
    for (const [label, token] of Object.entries(accessForgeries)) {
      await check(`access token / ${label}`, await hsApp.request('GET', client('/auth/profile'), { token }));
      await check(`functions/call / ${label}`, await hsApp.request('POST', appRoute('/functions/call'), { token, body: { name: 'x', arguments: [] } }));
      await check(`graphql bearer / ${label}`, await hsApp.request('POST', '/test/graphql-auth', { token }));
      if (label !== 'refresh token used as access token') {
        await check(`refresh token / ${label}`, await hsApp.request('POST', client('/auth/session'), { token }));
      }
    }
    for (const [label, token] of Object.entries(customForgeries)) {
      await check(`custom JWT login / ${label}`, await hsApp.request('POST', appRoute('/auth/providers/custom-token/login'), { body: { token } }));
      if (token.length < 64 * 1024) await check(`jwtTokenString / ${label}`, await hsApp.request('POST', '/test/graphql-auth', { headers: { jwtTokenString: token } }));
    }
    for (const [label, token] of Object.entries(jwkForgeries)) {
      await check(`JWK URI login / ${label}`, await jwkApp.request('POST', appRoute('/auth/providers/custom-token/login'), { body: { token } }));
    }
    assert.deepEqual(accepted, [], 'no forged token may be accepted');
    assert.equal((await hsApp.request('GET', client('/auth/profile'), { token: realAccess })).status, 200, 'the runtime is still healthy');
  });
});
