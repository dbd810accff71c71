import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { appRoute, defaultProviders, errorOf, startAuthHarness, type FakeFunction, type Harness } from './fixtures/auth-harness';

function withUserpass(config: Record<string, unknown>) {
  const providers = defaultProviders();
  providers['local-userpass'] = { name: 'local-userpass', type: 'local-userpass', disabled: false, config };
  return providers;
}

const register = (h: Harness, email: string, password = 'secret-1') =>
  h.request('POST', appRoute('/auth/providers/local-userpass/register'), { body: { email, password } });
const login = (h: Harness, username: string, password = 'secret-1') =>
  h.request('POST', appRoute('/auth/providers/local-userpass/login'), { body: { username, password } });
const post = (h: Harness, sub: string, body: unknown) => h.request('POST', appRoute(`/auth/providers/local-userpass/${sub}`), { body });

describe('email/password flows', () => {
  test('confirmation by email: pending until confirmed, tokens single use, resend', async () => {
    const h = await startAuthHarness({ providers: withUserpass({ autoConfirm: false, emailConfirmationUrl: 'https://app.example.org/confirm', confirmEmailSubject: 'Welcome' }) });
    try {
      assert.equal((await register(h, 'pat@example.com')).status, 201);
      assert.equal(h.mails.length, 1);
      const mail = h.mails[0]!;
      assert.equal(mail.to, 'pat@example.com');
      assert.equal(mail.subject, 'Welcome');
      const url = new URL(mail.url!);
      assert.equal(url.origin + url.pathname, 'https://app.example.org/confirm');
      assert.equal(url.searchParams.get('token'), mail.token);
      assert.equal(url.searchParams.get('tokenId'), mail.tokenId);

      const early = await login(h, 'pat@example.com');
      assert.equal(early.status, 401);
      assert.deepEqual([errorOf(early).error, errorOf(early).error_code], ['confirmation required', 'AuthError']);

      const badToken = await post(h, 'confirm', { token: 'nope', tokenId: mail.tokenId });
      assert.equal(badToken.status, 400);
      assert.deepEqual([errorOf(badToken).error, errorOf(badToken).error_code], ['invalid token data', 'UserpassTokenInvalid']);

      const resend = await post(h, 'confirm/send', { email: 'pat@example.com' });
      assert.equal(resend.status, 204);
      assert.equal(h.mails.length, 2);

      const ok = await post(h, 'confirm', { token: mail.token, tokenId: mail.tokenId });
      assert.equal(ok.status, 204);
      assert.equal(ok.headers.get('content-type'), null);
      assert.equal((await login(h, 'pat@example.com')).status, 200);
      const reused = await post(h, 'confirm', { token: mail.token, tokenId: mail.tokenId });
      assert.equal(errorOf(reused).error_code, 'UserpassTokenInvalid');
      const second = h.mails[1]!;
      const already = await post(h, 'confirm', { token: second.token, tokenId: second.tokenId });
      assert.deepEqual([errorOf(already).error, errorOf(already).error_code], ['already confirmed', 'UserAlreadyConfirmed']);
      const resendConfirmed = await post(h, 'confirm/send', { email: 'pat@example.com' });
      assert.equal(errorOf(resendConfirmed).error_code, 'UserAlreadyConfirmed');
      const unknown = await post(h, 'confirm/send', { email: 'who@example.com' });
      assert.equal(unknown.status, 404);
      assert.deepEqual([errorOf(unknown).error, errorOf(unknown).error_code], ['user not found', 'UserNotFound']);
      const call = await post(h, 'confirm/call', { email: 'pat@example.com' });
      assert.equal(call.status, 400, 'confirm/call needs the confirmation function');
    } finally { await h.close(); }
  });

  test('autoConfirm confirms at once and refuses confirm/call', async () => {
    const h = await startAuthHarness({ providers: withUserpass({ autoConfirm: true }) });
    try {
      await register(h, 'auto@example.com');
      assert.equal(h.mails.length, 0);
      assert.equal((await login(h, 'auto@example.com')).status, 200);
      const call = await post(h, 'confirm/call', { email: 'auto@example.com' });
      assert.equal(call.status, 400);
      assert.equal(errorOf(call).error, 'cannot run confirmation for auto@example.com: automatic confirmation is enabled');
      const short = await register(h, 'short@example.com', '123');
      assert.equal(short.status, 400);
      assert.equal(errorOf(short).error_code, 'BadRequest');
    } finally { await h.close(); }
  });

  test('confirmation function decides: success, pending then confirm/call, fail', async () => {
    const decisions = new Map<string, string>([['yes@example.com', 'success'], ['later@example.com', 'pending'], ['no@example.com', 'fail']]);
    const confirmUser: FakeFunction = ([arg]) => {
      const { username, token, tokenId } = arg as { username: string; token: string; tokenId: string };
      assert.equal(typeof token, 'string');
      assert.equal(typeof tokenId, 'string');
      return { status: decisions.get(username) };
    };
    const h = await startAuthHarness({
      providers: withUserpass({ autoConfirm: false, runConfirmationFunction: true, confirmationFunctionName: 'confirmUser' }),
      functions: { confirmUser: { private: true, run: confirmUser } },
    });
    try {
      assert.equal((await register(h, 'yes@example.com')).status, 201);
      assert.equal((await login(h, 'yes@example.com')).status, 200);

      assert.equal((await register(h, 'later@example.com')).status, 201);
      assert.equal((await login(h, 'later@example.com')).status, 401);
      const pendingCall = h.calls.filter((c) => c.name === 'confirmUser').at(-1)!;
      const { token, tokenId } = pendingCall.args[0] as { token: string; tokenId: string };
      assert.equal((await post(h, 'confirm', { token, tokenId })).status, 204, 'a pending confirmation completes with the token the function got');
      assert.equal((await login(h, 'later@example.com')).status, 200);

      const failed = await register(h, 'no@example.com');
      assert.equal(failed.status, 400);
      assert.deepEqual([errorOf(failed).error, errorOf(failed).error_code], ['failed to confirm user "no@example.com"', 'BadRequest']);
      assert.equal((await login(h, 'no@example.com')).status, 401);

      decisions.set('flip@example.com', 'pending');
      await register(h, 'flip@example.com');
      decisions.set('flip@example.com', 'success');
      assert.equal((await post(h, 'confirm/call', { email: 'flip@example.com' })).status, 204);
      assert.equal((await login(h, 'flip@example.com')).status, 200);
      assert.equal(h.mails.length, 0);
    } finally { await h.close(); }
  });

  test('password reset by email', async () => {
    const h = await startAuthHarness({ providers: withUserpass({ autoConfirm: true, resetPasswordUrl: 'https://app.example.org/reset' }) });
    try {
      await register(h, 'forgetful@example.com', 'old-password');
      assert.equal((await post(h, 'reset/send', { email: 'forgetful@example.com' })).status, 204);
      const mail = h.mails.at(-1)!;
      assert.equal(mail.kind, 'reset');
      assert.match(mail.url!, /^https:\/\/app\.example\.org\/reset\?token=[0-9a-f]+&tokenId=[0-9a-f]{24}$/);
      assert.equal((await post(h, 'reset', { token: mail.token, tokenId: mail.tokenId, password: 'new-password' })).status, 204);
      assert.equal((await login(h, 'forgetful@example.com', 'old-password')).status, 401);
      assert.equal((await login(h, 'forgetful@example.com', 'new-password')).status, 200);
      const reused = await post(h, 'reset', { token: mail.token, tokenId: mail.tokenId, password: 'other-password' });
      assert.equal(errorOf(reused).error_code, 'UserpassTokenInvalid');
      const unknown = await post(h, 'reset/send', { email: 'ghost@example.com' });
      assert.equal(errorOf(unknown).error_code, 'UserNotFound');
      const viaFunction = await post(h, 'reset/call', { email: 'forgetful@example.com', password: 'x-password', arguments: [] });
      assert.equal(viaFunction.status, 400);
    } finally { await h.close(); }
  });

  test('password reset by function: arguments passed, success, pending, fail and thrown', async () => {
    const resetFunc: FakeFunction = ([req, ...args]) => {
      const { username, password, token, tokenId } = req as Record<string, string>;
      assert.ok(username && password && token && tokenId);
      if (args[0] === 'throw') throw new Error('exploded');
      return { status: args[0] };
    };
    const h = await startAuthHarness({
      providers: withUserpass({ autoConfirm: true, runResetFunction: true, resetFunctionName: 'resetFunc' }),
      functions: { resetFunc: { private: true, run: resetFunc } },
    });
    try {
      await register(h, 'r@example.com', 'pass-0000');
      const viaEmail = await post(h, 'reset/send', { email: 'r@example.com' });
      assert.equal(viaEmail.status, 400);
      assert.equal(errorOf(viaEmail).error, 'please use reset password via function');

      assert.equal((await post(h, 'reset/call', { email: 'r@example.com', password: 'pass-1111', arguments: ['success', 'extra'] })).status, 204);
      assert.deepEqual(h.calls.at(-1)!.args.slice(1), ['success', 'extra']);
      assert.equal((await login(h, 'r@example.com', 'pass-1111')).status, 200);

      for (const outcome of ['fail', 'throw']) {
        const res = await post(h, 'reset/call', { email: 'r@example.com', password: 'pass-2222', arguments: [outcome] });
        assert.equal(res.status, 400);
        assert.equal(errorOf(res).error, 'failed to reset password for user "r@example.com"');
      }
      assert.equal((await login(h, 'r@example.com', 'pass-1111')).status, 200, 'a failed reset keeps the old password');

      assert.equal((await post(h, 'reset/call', { email: 'r@example.com', password: 'pass-3333', arguments: ['pending'] })).status, 204);
      assert.equal((await login(h, 'r@example.com', 'pass-1111')).status, 200, 'a pending reset does not change the password yet');
      const { token, tokenId } = h.calls.at(-1)!.args[0] as { token: string; tokenId: string };
      assert.equal((await post(h, 'reset', { token, tokenId, password: 'pass-4444' })).status, 204);
      assert.equal((await login(h, 'r@example.com', 'pass-4444')).status, 200);
    } finally { await h.close(); }
  });
});
