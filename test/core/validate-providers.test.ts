// Custom JWT provider rules that span several keys (auth-custom-jwt.md §1–§4).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkApp } from '../../core/check';
import { loadApp } from '../../core/load';
import { claimPath } from '../../core/validate/providers';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';

async function providerCodes(provider: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const files = baseApp();
  files['auth/providers.json'] = { 'custom-token': { name: 'custom-token', type: 'custom-token', disabled: false, ...provider }, ...extra };
  files['secrets.json'] = { k1: 'x'.repeat(32) };
  const ds = checkApp(await loadApp(appFs(files), APP_ROOT)).filter((d) => d.file.endsWith('providers.json'));
  return ds;
}

const codes = async (provider: Record<string, unknown>) => (await providerCodes(provider)).map((d) => d.code);

describe('custom JWT provider checks', () => {
  test('a valid HS256 provider and a valid JWK URI provider have no problems', async () => {
    assert.deepEqual(await codes({ config: { audience: ['a', 'b'], requireAnyAudience: true, signingAlgorithm: 'HS256', useJWKURI: false }, secret_config: { signingKeys: ['k1'] },
      metadata_fields: [{ required: true, name: 'user_data.name', field_name: 'name' }, { required: false, name: 'http://example\\.com/id' }] }), []);
    assert.deepEqual(await codes({ config: { useJWKURI: true, jwkURI: 'https://idp.example.com/keys', signingAlgorithm: 'RS256' }, secret_config: { signingKeys: [] } }), []);
  });

  test('useJWKURI needs an https jwkURI, RS256 and no signing keys', async () => {
    assert.ok((await codes({ config: { useJWKURI: true }, secret_config: { signingKeys: [] } })).includes('auth/jwk-uri-missing'));
    assert.ok((await codes({ config: { useJWKURI: true, jwkURI: 'http://idp.example.com/keys' }, secret_config: { signingKeys: [] } })).includes('auth/jwk-uri-not-https'));
    const withKeys = await providerCodes({ config: { useJWKURI: true, jwkURI: 'https://idp.example.com/keys', signingAlgorithm: 'HS256' }, secret_config: { signingKeys: ['k1'] } });
    const keys = withKeys.find((d) => d.code === 'auth/jwk-uri-with-signing-keys')!;
    assert.deepEqual(keys.data, { path: ['custom-token', 'secret_config', 'signingKeys'] });
    assert.ok(withKeys.some((d) => d.code === 'auth/jwk-uri-needs-rs256'));
  });

  test('without a JWK URI, an algorithm and one to three keys are required', async () => {
    const missing = await codes({ config: { useJWKURI: false } });
    assert.ok(missing.includes('auth/missing-signing-algorithm'));
    assert.ok(missing.includes('auth/missing-signing-keys'));
    assert.ok((await codes({ config: { signingAlgorithm: 'HS256' }, secret_config: { signingKeys: ['k1', 'k1', 'k2', 'k3'] } })).includes('schema/item-count'));
    assert.ok((await codes({ config: { signingAlgorithm: 'HS256' }, secret_config: { signingKeys: ['k1', 'k1'] } })).includes('auth/duplicate-signing-key'));
  });

  test('a signing key secret with no local value is a warning that says how to supply it, never an error', async () => {
    const ds = await providerCodes({ config: { signingAlgorithm: 'HS256' }, secret_config: { signingKeys: ['unknown_key'] } });
    const secret = ds.find((d) => d.code === 'secret/no-local-value')!;
    assert.equal(secret.severity, 'warning');
    assert.match(secret.message, /secrets\.json/);
    assert.ok(!ds.some((d) => d.severity === 'error'));
  });

  test('requireAnyAudience with fewer than two audiences is a warning', async () => {
    for (const audience of ['a', ['a'], [], '']) {
      assert.ok((await codes({ config: { audience, requireAnyAudience: true, signingAlgorithm: 'HS256' }, secret_config: { signingKeys: ['k1'] } })).includes('auth/require-any-audience-single'), JSON.stringify(audience));
    }
  });

  test('metadata field paths must have no empty segment; two fields writing one key are a warning', async () => {
    const base = { config: { signingAlgorithm: 'HS256' }, secret_config: { signingKeys: ['k1'] } };
    assert.ok((await codes({ ...base, metadata_fields: [{ name: 'user_data..name' }] })).includes('auth/invalid-metadata-path'));
    assert.ok((await codes({ ...base, metadata_fields: [{ name: 'user_data.' }] })).includes('auth/invalid-metadata-path'));
    assert.ok((await codes({ ...base, metadata_fields: [{ name: 'a.name' }, { name: 'b.name' }] })).includes('auth/duplicate-metadata-field'));
    assert.ok(!(await codes({ ...base, metadata_fields: [{ name: 'a.name' }, { name: 'b.name', field_name: 'other' }] })).includes('auth/duplicate-metadata-field'));
  });

  test('claim paths split on unescaped dots only', () => {
    assert.deepEqual(claimPath('user_data.name'), ['user_data', 'name']);
    assert.deepEqual(claimPath('http://example\\.com/id'), ['http://example.com/id']);
  });

  test('provider-wide rules stay with their existing codes', async () => {
    const files = baseApp();
    files['auth/providers.json'] = {
      'custom-token': { name: 'custom-token', type: 'custom-token', config: { signingAlgorithm: 'HS256' }, secret_config: { signingKeys: ['k1'] } },
      other: { name: 'other', type: 'custom-token', config: { signingAlgorithm: 'HS256', color: 'red' }, secret_config: { signingKeys: ['k1'] } },
      'api-key': { name: 'api-key', type: 'api-key', disabled: 'no', config: { x: 1 } },
      'local-userpass': { name: 'local-userpass', type: 'local-userpass', config: { runResetFunction: true, resetFunctionName: 'nope' } },
      weird: { name: 'weird', type: 'oauth2-myspace' },
    };
    const found = new Set(checkApp(await loadApp(appFs(files), APP_ROOT)).map((d) => d.code));
    for (const code of ['auth/duplicate-custom-token', 'auth/name-type-mismatch', 'schema/unknown-key', 'schema/type', 'auth/unknown-function', 'schema/enum']) assert.ok(found.has(code), code);
  });
});
