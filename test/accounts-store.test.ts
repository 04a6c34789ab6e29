import t from 'tap';
import { verifyEmailOf } from './helpers/verify-email.js';
import { sha256 } from '../src/accounts/secrets.js';
import { MIGRATION_NAMES } from '../src/accounts/migrations.js';
import { LAST_USED_RESOLUTION_MS } from '../src/accounts/store.js';
import { rejectsCode } from './helpers/errors.js';
import { eachDatabase } from './helpers/accounts-db.js';


eachDatabase(t, async (t, tdb) => {
  const store = await tdb.open();
  t.teardown(() => store.close());

  t.test('migrations are versioned and re-running them is a no-op', async (t) => {
    const again = await tdb.open();
    const rows = await again.db.selectFrom('kysely_migration' as any).select('name' as any).orderBy('name' as any).execute();
    t.same(rows.map((r: any) => r.name), MIGRATION_NAMES);
    t.same(MIGRATION_NAMES, ['0001_accounts_keys_usage_sessions', '0002_login_failures', '0003_login_throttle', '0004_verification_cards_attempts', '0005_usage_log']);
    await again.close();
  });

  t.test('anonymous signup: active, 10 calls, one REST key, one MCP key', async (t) => {
    const { account, session_token } = await store.signupAnonymous('10.0.0.1');
    t.equal(account.tier, 'anonymous');
    t.equal(account.status, 'active');
    t.equal(account.email, null);
    t.same(account.free_calls, { total: 10, used: 0, remaining: 10 });
    t.match(session_token, /^fc_sess_[A-Za-z0-9_-]{43}$/);
    t.equal(await store.sessionAccount(session_token), account.id);

    const key = await store.createKey(account.id, 'rest', 'agent');
    t.match(key.key, /^fc_live_[A-Za-z0-9_-]{43}$/);
    t.ok(key.key.startsWith(key.prefix));
    t.equal(key.prefix.length, 'fc_live_'.length + 8);
    await rejectsCode(t, store.createKey(account.id, 'rest', 'second'), 'key_limit_reached');
    const mcp = await store.createKey(account.id, 'mcp', 'agent mcp');
    t.match(mcp.key, /^fc_mcp_[A-Za-z0-9_-]{43}$/);
  });

  t.test('keys are stored only as sha256, listed without the secret, and revocable', async (t) => {
    const { account } = await store.signup('keys@example.com', 'correct horse battery');
    await verifyEmailOf(store, account.id);
    const a = await store.createKey(account.id, 'rest', 'first');
    const b = await store.createKey(account.id, 'rest', 'second');
    const rows = await store.db.selectFrom('api_keys').selectAll().where('account_id', '=', account.id).execute();
    t.equal(rows.length, 2);
    for (const r of rows) {
      t.not(r.secret_hash, a.key);
      t.notOk(JSON.stringify(r).includes(a.key) || JSON.stringify(r).includes(b.key), 'no secret in the row');
    }
    t.ok(rows.some((r) => r.secret_hash === sha256(a.key)));
    const list = await store.listKeys(account.id, 'rest');
    t.same(list.map((k) => k.name).sort(), ['first', 'second']);
    t.notOk(JSON.stringify(list).includes(a.key));
    t.same(Object.keys(list[0]!).sort(), ['created_at', 'id', 'last_used_at', 'name', 'prefix', 'revoked_at']);

    const auth = await store.authenticate(a.key, 'rest');
    t.same(auth, { accountId: account.id, keyId: a.id, kind: 'rest', tier: 'account' });
    t.ok((await store.listKeys(account.id, 'rest')).find((k) => k.id === a.id)?.last_used_at, 'last_used_at set');

    await store.revokeKey(account.id, 'rest', a.id);
    await rejectsCode(t, store.authenticate(a.key, 'rest'), 'invalid_api_key');
    t.ok((await store.listKeys(account.id, 'rest')).find((k) => k.id === a.id)?.revoked_at);
    await store.authenticate(b.key, 'rest');
    await rejectsCode(t, store.revokeKey(account.id, 'mcp', b.id), 'not_found', undefined, 'kind must match');
    const other = await store.signup('other@example.com', 'correct horse battery');
    await rejectsCode(t, store.revokeKey(other.account.id, 'rest', b.id), 'not_found', undefined, 'another account cannot revoke it');
  });

  t.test('last_used_at is written at most once a minute per key, not on every call', async (t) => {
    let ms = Date.parse('2026-01-01T00:00:00Z');
    const clocked = await tdb.open(undefined, { now: () => ms });
    t.teardown(() => clocked.close());
    const { account } = await clocked.signup('touch@example.com', 'correct horse battery');
    const k = await clocked.createKey(account.id, 'rest', 'k');
    const lastUsed = async () => (await clocked.listKeys(account.id, 'rest')).find((x) => x.id === k.id)?.last_used_at;
    t.equal(await lastUsed(), null, 'never used');
    await clocked.authenticate(k.key, 'rest');
    t.equal(await lastUsed(), '2026-01-01T00:00:00.000Z', 'the first use is written');
    ms += LAST_USED_RESOLUTION_MS - 1;
    await clocked.authenticate(k.key, 'rest');
    t.equal(await lastUsed(), '2026-01-01T00:00:00.000Z', 'within the minute: no write');
    ms += 1;
    await clocked.authenticate(k.key, 'rest');
    t.equal(await lastUsed(), '2026-01-01T00:01:00.000Z', 'a minute later: written again');
  });

  t.test('a REST key on MCP and an MCP key on REST are refused, naming the kind expected', async (t) => {
    const { account } = await store.signup('kinds@example.com', 'correct horse battery');
    const rest = await store.createKey(account.id, 'rest', 'r');
    const mcp = await store.createKey(account.id, 'mcp', 'm');
    await rejectsCode(t, store.authenticate(rest.key, 'mcp'), 'invalid_api_key', /expects an MCP key/);
    await rejectsCode(t, store.authenticate(mcp.key, 'rest'), 'invalid_api_key', /expects a REST key/);
    t.equal((await store.authenticate(mcp.key, 'mcp')).kind, 'mcp');
    await rejectsCode(t, store.authenticate('fc_live_' + 'x'.repeat(43), 'rest'), 'invalid_api_key');
    await rejectsCode(t, store.authenticate('garbage', 'rest'), 'invalid_api_key');
    await rejectsCode(t, store.authenticate('', 'rest'), 'invalid_api_key');
    await store.setStatus(account.id, 'disabled');
    await rejectsCode(t, store.authenticate(rest.key, 'rest'), 'account_inactive');
  });

  t.test('signup, login, email uniqueness, bad input', async (t) => {
    const { account } = await store.signup('Person@Example.com', 'correct horse battery');
    t.equal(account.tier, 'account');
    t.equal(account.email, 'person@example.com');
    t.equal(account.email_verified, false);
    t.same(account.free_calls, { total: 10, used: 0, remaining: 10 }, 'the anonymous allowance until the email is verified');
    t.same((await verifyEmailOf(store, account.id)).free_calls, { total: 50, used: 0, remaining: 50 }, 'verified: the account allowance');
    const row = await store.db.selectFrom('accounts').select('password_hash').where('id', '=', account.id).executeTakeFirstOrThrow();
    t.match(row.password_hash, /^\$argon2id\$/);
    await rejectsCode(t, store.signup('person@example.com', 'another password'), 'email_taken');
    await rejectsCode(t, store.signup('not-an-email', 'correct horse battery'), 'invalid_request');
    await rejectsCode(t, store.signup('short@example.com', 'short'), 'invalid_request');
    const login = await store.login('person@example.com', 'correct horse battery', '192.0.2.1');
    t.equal(login.account.id, account.id);
    await rejectsCode(t, store.login('person@example.com', 'wrong password!', '192.0.2.1'), 'invalid_credentials');
    await rejectsCode(t, store.login('nobody@example.com', 'wrong password!', '192.0.2.1'), 'invalid_credentials');
    await store.logout(login.session_token);
    t.equal(await store.sessionAccount(login.session_token), null);
    t.equal(await store.sessionAccount('fc_sess_nope'), null);
    const sessions = await store.db.selectFrom('sessions').selectAll().execute();
    t.notOk(sessions.some((s) => JSON.stringify(s).includes(login.session_token)), 'only hashes of session tokens stored');
  });

  t.test('upgrade keeps keys and usage; card raises the allowance to 100', async (t) => {
    const { account } = await store.signupAnonymous('10.0.0.2');
    const key = await store.createKey(account.id, 'rest', 'k');
    await store.consume(account.id);
    await store.consume(account.id);
    const up = await store.upgrade(account.id, 'upgraded@example.com', 'correct horse battery');
    t.equal(up.tier, 'account');
    t.equal(up.email, 'upgraded@example.com');
    t.same(up.free_calls, { total: 10, used: 2, remaining: 8 }, 'unverified: still the anonymous allowance');
    await rejectsCode(t, store.saveCard(account.id, 'pm_card_visa'), 'invalid_request', /verify your email before saving a card/);
    t.same((await verifyEmailOf(store, account.id)).free_calls, { total: 50, used: 2, remaining: 48 });
    t.equal((await store.authenticate(key.key, 'rest')).accountId, account.id, 'key kept');
    await rejectsCode(t, store.upgrade(account.id, 'again@example.com', 'correct horse battery'), 'invalid_request');
    t.equal((await store.login('upgraded@example.com', 'correct horse battery', '192.0.2.1')).account.id, account.id);
    await store.createKey(account.id, 'rest', 'second key now allowed');

    const anon = await store.signupAnonymous('10.0.0.2');
    await rejectsCode(t, store.upgrade(anon.account.id, 'upgraded@example.com', 'correct horse battery'), 'email_taken');
    await rejectsCode(t, store.saveCard(anon.account.id, 'pm_card_visa'), 'invalid_request', undefined, 'anonymous must add an email first');

    await rejectsCode(t, store.saveCard(account.id, 'pm_card_chargeDeclined'), 'payment_method_declined');
    const e = await rejectsCode(t, store.saveCard(account.id, '4242 4242 4242 4242'), 'invalid_request', /never a card number/);
    t.notOk(e?.detail.includes('4242'), 'the number is not echoed');
    const carded = await store.saveCard(account.id, 'pm_card_visa');
    t.equal(carded.tier, 'card');
    t.same(carded.free_calls, { total: 100, used: 2, remaining: 98 });
    t.same(await store.getCard(account.id), { brand: 'visa', last4: '4242' });
  });

  t.test('allowance: consume, insufficient_credits, refund', async (t) => {
    const { account } = await store.signupAnonymous('10.0.0.3');
    for (let i = 1; i <= 10; i++) t.equal((await store.consume(account.id)).remaining, 10 - i);
    await rejectsCode(t, store.consume(account.id), 'insufficient_credits');
    await store.refund(account.id);
    t.same((await store.getAccount(account.id)).free_calls, { total: 10, used: 9, remaining: 1 });
    await store.consume(account.id);
    await rejectsCode(t, store.consume(account.id), 'insufficient_credits');
    const fresh = await store.signupAnonymous('10.0.0.3');
    await store.refund(fresh.account.id);
    t.equal((await store.getAccount(fresh.account.id)).free_calls.used, 0, 'refund never goes below zero');
  });

  t.test('50 concurrent consume() against 10 remaining: exactly 10 succeed', async (t) => {
    const { account } = await store.signup(`race-${tdb.name}@example.com`, 'correct horse battery');
    await verifyEmailOf(store, account.id);
    for (let i = 0; i < 40; i++) await store.consume(account.id);
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => store.consume(account.id)));
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'insufficient_credits').length;
    t.equal(ok, 10, 'exactly 10 succeed');
    t.equal(refused, 40, 'exactly 40 insufficient_credits');
    t.same((await store.getAccount(account.id)).free_calls, { total: 50, used: 50, remaining: 0 });
    t.comment(`${tdb.name}: ${ok} succeeded, ${refused} insufficient_credits`);
  });

  t.test('expired sessions stop working and are cleaned up', async (t) => {
    const { session_token } = await store.signup('expired@example.com', 'correct horse battery');
    await store.db.updateTable('sessions').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('token_hash', '=', sha256(session_token)).execute();
    t.equal(await store.sessionAccount(session_token), null);
    await store.login('expired@example.com', 'correct horse battery', '192.0.2.1');
    t.notOk(await store.db.selectFrom('sessions').select('id').where('token_hash', '=', sha256(session_token)).executeTakeFirst(), 'deleted');
  });

  t.test('anonymous signup is rate-limited per client address', async (t) => {
    const limit = tdb.config.accounts.signupRateLimit;
    for (let i = 0; i < limit; i++) await store.signupAnonymous('192.0.2.77');
    const e = await rejectsCode(t, store.signupAnonymous('192.0.2.77'), 'signup_rate_limited');
    t.equal(e?.headers['retry-after'], '3600');
    await store.signupAnonymous('192.0.2.78');
    const events = await store.db.selectFrom('attempt_events').selectAll().execute();
    t.notOk(events.some((e) => e.key_hash.includes('192.0.2')), 'addresses are stored hashed');
  });
});
