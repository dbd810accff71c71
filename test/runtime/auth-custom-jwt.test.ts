import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT } from 'jose';
import { APP_ID, JWT_SECRET, appRoute, client, defaultProviders, errorOf, startAuthHarness, type Harness, type HarnessOptions } from './fixtures/auth-harness';
import { newSigningKey, signWith, startJwksServer, type JwksServer, type SigningKey } from './fixtures/auth-jwks';
import { splitMetadataPath } from '../../runtime/auth/customJwt';

function jwtProvider(config: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const providers = defaultProviders();
  providers['custom-token'] = {
    name: 'custom-token', type: 'custom-token', disabled: false,
    config: { audience: [], requireAnyAudience: false, signingAlgorithm: 'HS256', useJWKURI: false, ...config },
    secret_config: { signingKeys: ['jwt_key'] }, metadata_fields: [], ...extra,
  };
  return providers;
}

const hs = (claims: Record<string, unknown>, secret = JWT_SECRET) =>
  new SignJWT({ sub: 'u1', aud: APP_ID, ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setExpirationTime('1h').sign(new TextEncoder().encode(secret));

async function loginWith(h: Harness, token: string) {
  return h.request('POST', appRoute('/auth/providers/custom-token/login'), { body: { token } });
}

async function withHarness<T>(options: HarnessOptions, run: (h: Harness) => Promise<T>): Promise<T> {
  const h = await startAuthHarness(options);
  try { return await run(h); } finally { await h.close(); }
}

describe('custom JWT with HS256 keys from secrets', () => {
  test('any of up to three signing keys verifies', async () => {
    const second = 'second-shared-secret-value-with-enough-length_xyz';
    await withHarness({
      providers: jwtProvider({}, { secret_config: { signingKeys: ['jwt_key', 'jwt_key_2'] } }),
      secrets: { jwt_key: JWT_SECRET, jwt_key_2: second },
    }, async (h) => {
      assert.equal((await loginWith(h, await hs({}, JWT_SECRET))).status, 200);
      assert.equal((await loginWith(h, await hs({}, second))).status, 200);
      const other = await loginWith(h, await hs({}, 'some-other-secret-that-nobody-configured-here'));
      assert.equal(other.status, 401);
      assert.equal(errorOf(other).error_code, 'AuthError');
    });
  });

  test('audience modes', async () => {
    await withHarness({ providers: jwtProvider({ audience: [] }) }, async (h) => {
      assert.equal((await loginWith(h, await hs({ aud: [APP_ID, 'x'] }))).status, 200);
      const wrong = await loginWith(h, await hs({ aud: 'someone-else' }));
      assert.equal(wrong.status, 401);
      assert.equal(errorOf(wrong).error, `'${APP_ID}' not found in 'aud' claim`);
    });
    await withHarness({ providers: jwtProvider({ audience: 'api://mine' }) }, async (h) => {
      assert.equal((await loginWith(h, await hs({ aud: 'api://mine' }))).status, 200);
      assert.equal((await loginWith(h, await hs({ aud: APP_ID }))).status, 401);
    });
    await withHarness({ providers: jwtProvider({ audience: ['a', 'b'], requireAnyAudience: false }) }, async (h) => {
      assert.equal((await loginWith(h, await hs({ aud: ['a', 'b'] }))).status, 200);
      const onlyA = await loginWith(h, await hs({ aud: ['a'] }));
      assert.equal(onlyA.status, 401);
      assert.equal(errorOf(onlyA).error, "'b' not found in 'aud' claim");
    });
    await withHarness({ providers: jwtProvider({ audience: ['a', 'b'], requireAnyAudience: true }) }, async (h) => {
      assert.equal((await loginWith(h, await hs({ aud: ['b'] }))).status, 200);
      assert.equal((await loginWith(h, await hs({ aud: ['c'] }))).status, 401);
    });
  });

  test('sub, exp and aud are required', async () => {
    await withHarness({ providers: jwtProvider({}) }, async (h) => {
      const key = new TextEncoder().encode(JWT_SECRET);
      const noExp = await new SignJWT({ sub: 'u', aud: APP_ID }).setProtectedHeader({ alg: 'HS256' }).sign(key);
      const noSub = await new SignJWT({ aud: APP_ID }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(key);
      const noAud = await new SignJWT({ sub: 'u' }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(key);
      for (const token of [noExp, noSub, noAud]) {
        const res = await loginWith(h, token);
        assert.equal(res.status, 401);
        assert.match(errorOf(res).error, /claim/);
      }
      const farFuture = await new SignJWT({ sub: 'u', aud: APP_ID, exp: 4102444800 }).setProtectedHeader({ alg: 'HS256' }).sign(key);
      assert.equal((await loginWith(h, farFuture)).status, 200, 'no maximum lifetime');
    });
  });

  test('metadata fields: dotted paths, escaped dots, default names, required', async () => {
    const metadata_fields = [
      { required: true, name: 'user_data.name', field_name: 'name' },
      { required: false, name: 'location.primary.city' },
      { required: false, name: 'http://example\\.com/id', field_name: 'externalId' },
    ];
    await withHarness({ providers: jwtProvider({}, { metadata_fields }) }, async (h) => {
      const token = await hs({ sub: 'meta', user_data: { name: 'Ada', ignored: true }, location: { primary: { city: 'Paris' } }, 'http://example.com/id': 'ext-1', unmapped: 1 });
      const res = await loginWith(h, token);
      assert.equal(res.status, 200, res.text);
      const profile = await h.request('GET', client('/auth/profile'), { token: res.json.access_token });
      assert.deepEqual(profile.json.data, { name: 'Ada', city: 'Paris', externalId: 'ext-1' });
      assert.deepEqual(profile.json.identities[0].data, { name: 'Ada', city: 'Paris', externalId: 'ext-1' });
      const missing = await loginWith(h, await hs({ sub: 'meta2' }));
      assert.equal(missing.status, 401);
      assert.equal(errorOf(missing).error, "required metadata field 'user_data.name' not found in the token");
    });
    assert.deepEqual(splitMetadataPath('a.b\\.c.d'), ['a', 'b.c', 'd']);
  });

  test('a signing key whose secret nobody supplied is a clear error', async () => {
    await withHarness({ providers: jwtProvider({}), secrets: {} }, async (h) => {
      const res = await loginWith(h, await hs({}));
      assert.equal(res.status, 500);
      const body = errorOf(res);
      assert.match(body.error, /secret 'jwt_key' needed by auth provider 'custom-token' has no value/);
      assert.match(body.error, /--secret jwt_key=/);
    });
  });

  test('RS256 with a PEM public key from secrets', async () => {
    const { generateKeyPair, exportSPKI } = await import('jose');
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    const pem = await exportSPKI(publicKey);
    await withHarness({ providers: jwtProvider({ signingAlgorithm: 'RS256' }), secrets: { jwt_key: pem } }, async (h) => {
      const good = await new SignJWT({ sub: 'rs', aud: APP_ID }).setProtectedHeader({ alg: 'RS256' }).setExpirationTime('1h').sign(privateKey);
      assert.equal((await loginWith(h, good)).status, 200);
      const confused = await hs({ sub: 'rs' }, pem);
      assert.equal((await loginWith(h, confused)).status, 401, 'HS256 signed with the public key is refused');
    });
    await withHarness({ providers: jwtProvider({ signingAlgorithm: 'RS256' }), secrets: { jwt_key: 'not a pem' } }, async (h) => {
      const res = await loginWith(h, await hs({}));
      assert.equal(errorOf(res).error, 'could not find PEM formatted data in the provided public key');
    });
  });
});

describe('custom JWT through a JWK URI', () => {
  let jwks: JwksServer;
  let k1: SigningKey;
  let k2: SigningKey;
  let ec: SigningKey;
  before(async () => {
    [k1, k2, ec] = await Promise.all([newSigningKey('k1'), newSigningKey('k2'), newSigningKey('ec1', 'ES256')]);
    jwks = await startJwksServer([k1, ec]);
  });
  after(() => jwks.close());

  const jwkOptions = (uri: string): HarnessOptions => ({
    providers: jwtProvider({ useJWKURI: true, jwkURI: uri, signingAlgorithm: 'RS256' }, { secret_config: { signingKeys: [] } }),
    secrets: {},
    keySets: { timeoutMs: 400, cooldownMs: 0 },
  });

  test('RS256 and other asymmetric keys verify; the key set is fetched once and cached', async () => {
    jwks.mode = 'ok';
    await withHarness(jwkOptions(jwks.url), async (h) => {
      const before = jwks.requests;
      assert.equal((await loginWith(h, await signWith(k1, { sub: 'rs-user', aud: APP_ID }))).status, 200);
      assert.equal((await loginWith(h, await signWith(k1, { sub: 'rs-user', aud: APP_ID }))).status, 200);
      assert.equal((await loginWith(h, await signWith(ec, { sub: 'ec-user', aud: APP_ID }))).status, 200);
      assert.equal(jwks.requests - before, 1);
      const noKid = await signWith(k1, { sub: 'x', aud: APP_ID }, { kid: undefined });
      const res = await loginWith(h, noKid);
      assert.equal(res.status, 401);
      assert.match(errorOf(res).error, /kid/);
    });
  });

  test('rotation: a new kid makes the runtime refetch the key set', async () => {
    jwks.mode = 'ok';
    jwks.keys = [k1];
    await withHarness(jwkOptions(jwks.url), async (h) => {
      assert.equal((await loginWith(h, await signWith(k1, { sub: 'rot', aud: APP_ID }))).status, 200);
      const unknownYet = await loginWith(h, await signWith(k2, { sub: 'rot', aud: APP_ID }));
      assert.equal(unknownYet.status, 401);
      assert.match(errorOf(unknownYet).error, /no key in the key set/);
      jwks.keys = [k2];
      const rotated = await loginWith(h, await signWith(k2, { sub: 'rot', aud: APP_ID }));
      assert.equal(rotated.status, 200, rotated.text);
    });
    jwks.keys = [k1, ec];
  });

  for (const [mode, pattern] of [
    ['hang', /did not answer in time/],
    ['redirect', /could not fetch the key set/],
    ['garbage', /not a valid JSON Web Key Set|could not fetch the key set/],
    ['error500', /could not fetch the key set/],
    ['reset', /could not fetch the key set/],
  ] as const) {
    test(`a key set that is ${mode} gives a clear 401 and no hang`, async () => {
      jwks.mode = mode;
      try {
        await withHarness(jwkOptions(jwks.url), async (h) => {
          const res = await loginWith(h, await signWith(k1, { sub: 'down', aud: APP_ID }));
          assert.equal(res.status, 401);
          const body = errorOf(res);
          assert.equal(body.error_code, 'AuthError');
          assert.match(body.error, pattern);
          assert.ok(body.error.includes(jwks.url), 'the message names the key set URI');
          assert.equal((await h.request('GET', appRoute('/location'))).status, 200, 'the runtime keeps answering');
        });
      } finally { jwks.mode = 'ok'; }
    });
  }

  test('a key set URI nobody listens on gives a 401', async () => {
    const dead = await startJwksServer([k1]);
    const url = dead.url;
    await dead.close();
    await withHarness(jwkOptions(url), async (h) => {
      const res = await loginWith(h, await signWith(k1, { sub: 'gone', aud: APP_ID }));
      assert.equal(res.status, 401);
      assert.match(errorOf(res).error, /could not fetch the key set/);
    });
  });
});
