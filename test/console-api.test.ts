import t from 'tap';
import { Writable } from 'node:stream';
import pino from 'pino';
import { REDACT_PATHS } from '../src/logging/logger.js';
import { eachDatabase } from './helpers/accounts-db.js';
import { testConsole } from './helpers/console.js';
import { verifyEmailOf } from './helpers/verify-email.js';

function isErrorBody(t: any, res: any, status: number, code: string) {
  t.equal(res.statusCode, status, `status ${status}`);
  t.match(res.headers['content-type'], /^application\/json/);
  const body = res.json();
  t.same(Object.keys(body).sort(), ['detail', 'error']);
  t.equal(body.error, code);
  t.type(body.detail, 'string');
  return body;
}

eachDatabase(
  t,
  async (t, tdb) => {
    const c = await testConsole(tdb);
    t.teardown(async () => {
      await c.app.close();
      await c.store.close();
    });

    t.test('anonymous signup: one call, no body, account and session token', async (t) => {
      for (const headers of [{}, { 'content-type': 'application/json' }] as Array<Record<string, string>>) {
        const res = await c.api('POST', '/api/signup/anonymous', { headers, ip: '198.51.100.1' });
        t.equal(res.statusCode, 201);
        t.equal(res.headers['x-api-version'], 'v1');
        t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/);
        const body = res.json();
        t.same(Object.keys(body).sort(), ['account', 'session_token']);
        t.same(Object.keys(body.account).sort(), ['created_at', 'email', 'email_verified', 'free_calls', 'id', 'status', 'tier']);
        t.same(body.account.free_calls, { total: 10, used: 0, remaining: 10 });
        t.equal(body.account.tier, 'anonymous');
        t.equal(body.account.status, 'active');
      }
      const res = await c.api('POST', '/api/signup/anonymous', { body: { email: 'x@example.com' }, ip: '198.51.100.1' });
      isErrorBody(t, res, 400, 'invalid_request');
    });

    t.test('anonymous signup is rate-limited per client address', async (t) => {
      for (let i = 0; i < 3; i++) t.equal((await c.api('POST', '/api/signup/anonymous', { ip: '203.0.113.9' })).statusCode, 201);
      const res = await c.api('POST', '/api/signup/anonymous', { ip: '203.0.113.9' });
      isErrorBody(t, res, 429, 'signup_rate_limited');
      t.equal(res.headers['retry-after'], '3600');
      t.equal((await c.api('POST', '/api/signup/anonymous', { ip: '203.0.113.10' })).statusCode, 201, 'another address is not affected');
    });

    t.test('agent flow: keys, limits, kinds, revocation', async (t) => {
      const { session_token: token, account } = (await c.api('POST', '/api/signup/anonymous', { ip: '198.51.100.2' })).json();
      const created = await c.api('POST', '/api/keys', { token, body: { name: 'agent' } });
      t.equal(created.statusCode, 201);
      const key = created.json();
      t.same(Object.keys(key).sort(), ['created_at', 'id', 'key', 'name', 'prefix']);
      t.match(key.key, /^fc_live_/);
      isErrorBody(t, await c.api('POST', '/api/keys', { token, body: { name: 'second' } }), 409, 'key_limit_reached');
      const mcp = await c.api('POST', '/api/mcp-keys', { token, body: { name: 'agent mcp' } });
      t.equal(mcp.statusCode, 201);
      t.match(mcp.json().key, /^fc_mcp_/);

      const list = await c.api('GET', '/api/keys', { token });
      t.equal(list.statusCode, 200);
      t.same(Object.keys(list.json().keys[0]).sort(), ['created_at', 'id', 'last_used_at', 'name', 'prefix', 'revoked_at']);
      t.notOk(list.body.includes(key.key), 'the list never holds the secret');
      t.equal((await c.api('GET', '/api/mcp-keys', { token })).json().keys.length, 1);

      t.equal((await c.store.authenticate(key.key, 'rest')).accountId, account.id);
      const wrong = await c.store.authenticate(mcp.json().key, 'rest').catch((e) => e);
      t.equal(wrong.code, 'invalid_api_key');
      t.match(wrong.detail, /REST key/);

      t.equal((await c.api('DELETE', `/api/keys/${key.id}`, { token })).statusCode, 204);
      t.ok((await c.api('GET', '/api/keys', { token })).json().keys[0].revoked_at);
      t.equal((await c.store.authenticate(key.key, 'rest').catch((e) => e)).code, 'invalid_api_key');
      isErrorBody(t, await c.api('DELETE', `/api/keys/${key.id}x`, { token }), 404, 'not_found');
      isErrorBody(t, await c.api('DELETE', `/api/mcp-keys/${key.id}`, { token }), 404, 'not_found');
      isErrorBody(t, await c.api('POST', '/api/keys', { token, body: { name: '' } }), 400, 'invalid_request');
      isErrorBody(t, await c.api('POST', '/api/keys', { token, body: {} }), 400, 'invalid_request');
    });

    t.test('signup, login, logout, account', async (t) => {
      const res = await c.api('POST', '/api/signup', { body: { email: 'api@example.com', password: 'correct horse battery' } });
      t.equal(res.statusCode, 201);
      t.same(res.json().account.free_calls, { total: 10, used: 0, remaining: 10 }, 'the anonymous allowance until the email is verified');
      t.equal(res.json().account.tier, 'account');
      t.equal(res.json().account.email_verified, false);
      isErrorBody(t, await c.api('POST', '/api/signup', { body: { email: 'API@example.com', password: 'correct horse battery' } }), 409, 'email_taken');
      isErrorBody(t, await c.api('POST', '/api/signup', { body: { email: 'x', password: 'correct horse battery' } }), 400, 'invalid_request');
      isErrorBody(t, await c.api('POST', '/api/signup', { body: { email: 'y@example.com' } }), 400, 'invalid_request');
      const unknown = isErrorBody(t, await c.api('POST', '/api/signup', { body: { email: 'y@example.com', password: 'correct horse battery', admin: true } }), 400, 'invalid_request');
      t.match(unknown.detail, /admin/);
      isErrorBody(t, await c.api('POST', '/api/signup', { body: '{"email":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request');
      isErrorBody(t, await c.api('POST', '/api/signup', { body: 'email=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 400, 'invalid_request');

      isErrorBody(t, await c.api('POST', '/api/login', { body: { email: 'api@example.com', password: 'wrong password' } }), 401, 'invalid_credentials');
      const login = await c.api('POST', '/api/login', { body: { email: 'api@example.com', password: 'correct horse battery' } });
      t.equal(login.statusCode, 200);
      const token = login.json().session_token;
      const acct = await c.api('GET', '/api/account', { token });
      t.equal(acct.statusCode, 200);
      t.equal(acct.json().account.email, 'api@example.com');
      await verifyEmailOf(c.store, acct.json().account.id);
      t.same((await c.api('GET', '/api/account', { token })).json().account.free_calls, { total: 50, used: 0, remaining: 50 }, 'verified: the account allowance');
      t.equal((await c.api('POST', '/api/logout', { token })).statusCode, 204);
      isErrorBody(t, await c.api('GET', '/api/account', { token }), 401, 'unauthorized');
      isErrorBody(t, await c.api('GET', '/api/account'), 401, 'unauthorized');
      isErrorBody(t, await c.api('GET', '/api/account', { token: 'fc_live_notasession' }), 401, 'unauthorized');
      isErrorBody(t, await c.api('GET', '/api/nothing'), 404, 'not_found');
      isErrorBody(t, await c.api('POST', '/api/login', { body: { email: 'a@example.com', password: 'x'.repeat(200_000) } }), 413, 'request_too_large');
      isErrorBody(t, await c.api('POST', '/api/login', { body: { email: 'a@example.com', password: 'x'.repeat(300) } }), 400, 'invalid_request');
    });

    t.test('upgrade keeps keys and usage; card raises to 100', async (t) => {
      const { session_token: token, account } = (await c.api('POST', '/api/signup/anonymous', { ip: '198.51.100.3' })).json();
      const key = (await c.api('POST', '/api/keys', { token, body: { name: 'k' } })).json();
      await c.store.consume(account.id);
      isErrorBody(t, await c.api('POST', '/api/account/card', { token, body: { payment_method: 'pm_card_visa' } }), 400, 'invalid_request');
      const up = await c.api('POST', '/api/account/upgrade', { token, body: { email: 'upg@example.com', password: 'correct horse battery' } });
      t.equal(up.statusCode, 200);
      t.same(Object.keys(up.json()), ['account']);
      t.equal(up.json().account.tier, 'account');
      t.same(up.json().account.free_calls, { total: 10, used: 1, remaining: 9 }, 'unverified: the anonymous allowance');
      t.equal((await c.store.authenticate(key.key, 'rest')).accountId, account.id, 'key still works');
      t.same((await verifyEmailOf(c.store, account.id)).free_calls, { total: 50, used: 1, remaining: 49 });
      isErrorBody(t, await c.api('POST', '/api/account/upgrade', { token, body: { email: 'upg2@example.com', password: 'correct horse battery' } }), 400, 'invalid_request');

      isErrorBody(t, await c.api('POST', '/api/account/card', { token, body: { payment_method: 'pm_card_chargeDeclined' } }), 402, 'payment_method_declined');
      const num = isErrorBody(t, await c.api('POST', '/api/account/card', { token, body: { payment_method: '4242424242424242' } }), 400, 'invalid_request');
      t.notMatch(num.detail, /4242/);
      const card = await c.api('POST', '/api/account/card', { token, body: { payment_method: 'pm_card_visa' } });
      t.equal(card.statusCode, 200);
      t.equal(card.json().account.tier, 'card');
      t.same(card.json().account.free_calls, { total: 100, used: 1, remaining: 99 });
      const row = await c.store.db.selectFrom('accounts').selectAll().where('id', '=', account.id).executeTakeFirstOrThrow();
      t.notOk(JSON.stringify(row).includes('4242424242424242'));
    });

    t.test('cookie sessions need the CSRF token for writes; bearer tokens do not', async (t) => {
      const { session_token: token, account } = (await c.api('POST', '/api/signup', { body: { email: 'csrf@example.com', password: 'correct horse battery' } })).json();
      await verifyEmailOf(c.store, account.id);
      const cookie = `fc_session=${token}; fc_csrf=abcdefghijklmnopqrstuvwxyz012345`;
      t.equal((await c.api('GET', '/api/account', { headers: { cookie } })).statusCode, 200, 'reads work with the cookie');
      isErrorBody(t, await c.api('POST', '/api/keys', { headers: { cookie }, body: { name: 'x' } }), 403, 'csrf_failed');
      isErrorBody(t, await c.api('POST', '/api/keys', { headers: { cookie, 'x-csrf-token': 'abcdefghijklmnopqrstuvwxyz012346' }, body: { name: 'x' } }), 403, 'csrf_failed');
      t.equal((await c.api('POST', '/api/keys', { headers: { cookie, 'x-csrf-token': 'abcdefghijklmnopqrstuvwxyz012345' }, body: { name: 'x' } })).statusCode, 201);
      t.equal((await c.api('POST', '/api/keys', { token, body: { name: 'y' } })).statusCode, 201);
    });
  },
  { FACECOMPUTE_SIGNUP_RATE_LIMIT: '3' },
);

t.test('logs never contain keys, session tokens or passwords', async (t) => {
  const { mkdtempSync } = await import('node:fs');
  const { loadConfig } = await import('../src/config/index.js');
  const { createAccountsStore } = await import('../src/accounts/index.js');
  const { buildConsole } = await import('../src/console/main.js');
  let out = '';
  const sink = new Writable({ write(chunk, _e, cb) { out += String(chunk); cb(); } });
  const logger = pino({ level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
  const config = loadConfig({ FACECOMPUTE_DATA_DIR: mkdtempSync('/tmp/fc-logs-') });
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store, logger });
  t.teardown(async () => { await app.close(); await store.close(); });
  const password = 'a very secret password';
  const s = (await app.inject({ method: 'POST', url: '/api/signup', payload: { email: 'log@example.com', password } })).json();
  const k = (await app.inject({ method: 'POST', url: '/api/keys', headers: { authorization: `Bearer ${s.session_token}` }, payload: { name: 'n' } })).json();
  await app.inject({ method: 'GET', url: '/api/account', headers: { authorization: `Bearer ${s.session_token}`, cookie: `fc_session=${s.session_token}` } });
  await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'log@example.com', password: 'wrong ' + password } });
  t.ok(out.length > 0, 'something was logged');
  for (const secret of [password, s.session_token, k.key]) t.notOk(out.includes(secret), 'secret absent from logs');
});
