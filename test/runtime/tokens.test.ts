// The runtime's own access and refresh tokens: standard HS256 JWTs that any JOSE library accepts, and that
// the runtime refuses when forged, altered, expired or of the wrong kind.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { jwtVerify } from 'jose';
import { TokenFailure, TokenService } from '../../runtime/auth/tokens';

const secret = new Uint8Array(randomBytes(48));
let now = 1_800_000_000_000;
const tokens = new TokenService(secret, { now: () => now }, 'd'.repeat(24));
const access = () => tokens.issueAccess({ userId: 'a'.repeat(24), sessionId: 'b'.repeat(24), deviceId: '0'.repeat(24), userData: { name: 'Ada' } });
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

describe('TokenService', () => {
  test('issues JWTs that jose verifies with the same secret, carrying the platform claims', async () => {
    const token = await access();
    const { payload, protectedHeader } = await jwtVerify(token, secret, { algorithms: ['HS256'], currentDate: new Date(now) });
    assert.deepEqual(protectedHeader, { alg: 'HS256', typ: 'JWT' });
    assert.equal(payload.typ, 'access');
    assert.equal(payload.exp, Math.floor(now / 1000) + 1800);
    assert.deepEqual(payload.user_data, { name: 'Ada' });
    assert.equal((await tokens.verify(token, 'access')).sub, 'a'.repeat(24));
  });

  test('every issued token is distinct, even with the same claims in the same second, and each verifies', async () => {
    const first = await access();
    const second = await access();
    assert.notEqual(first, second);
    const refresh = () => tokens.issueRefresh({
      userId: 'a'.repeat(24), sessionId: 'b'.repeat(24), deviceId: '0'.repeat(24), expiresAt: Math.floor(now / 1000) + 60,
      identity: { id: 'i', provider_type: 'anon-user', provider_id: 'p' } as never,
    });
    assert.notEqual(await refresh(), await refresh());
    for (const token of [first, second]) {
      const { payload } = await jwtVerify(token, secret, { algorithms: ['HS256'], currentDate: new Date(now) });
      assert.match(String(payload.jti), /^[\w-]{16}$/);
      assert.equal((await tokens.verify(token, 'access')).sub, 'a'.repeat(24));
    }
  });

  test('refuses altered, unsigned, re-signed, expired, not-yet-valid and wrong-kind tokens', async () => {
    const token = await access();
    const [header, body, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
    const signWith = (key: Uint8Array | string, h: string, b: string) => `${h}.${b}.${createHmac('sha256', key).update(`${h}.${b}`).digest('base64url')}`;
    const forged = [
      `${header}.${b64({ ...claims, sub: 'c'.repeat(24) })}.${signature}`,
      `${b64({ alg: 'none', typ: 'JWT' })}.${body}.`,
      `${b64({ alg: 'none' })}.${body}.${signature}`,
      signWith(randomBytes(48), header, body),
      `${header}.${body}.${signature.slice(0, -2)}`,
      `${header}.${body}`,
      `${token}.extra`,
      'not a token',
      '',
      'x'.repeat(1_000_001),
    ];
    for (const bad of forged) await assert.rejects(tokens.verify(bad, 'access'), TokenFailure, bad.slice(0, 60));
    await assert.rejects(tokens.verify(signWith(secret, b64({ alg: 'HS512', typ: 'JWT' }), body), 'access'), TokenFailure, 'another alg header');
    await assert.rejects(tokens.verify(token, 'refresh'), TokenFailure, 'an access token is not a refresh token');
    await assert.rejects(tokens.verify(signWith(secret, header, b64({ ...claims, nbf: claims.iat + 60 })), 'access'), TokenFailure, 'not yet valid');
    const saved = now;
    now += 1800 * 1000;
    await assert.rejects(tokens.verify(token, 'access'), TokenFailure, 'expired');
    now = saved;
  });
});
