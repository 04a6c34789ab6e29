/**
 * Issue 24, Medium 6 and 7 and the Low items on Stripe and sessions: what a stranger can no longer
 * harvest from the console. Each test fails on the code before issue 24 (no verification, no limits
 * per address or card, the decline code echoed, no webhook, sessions without idle expiry):
 *
 * - email signup: the anonymous allowance until the mailed link (signed, expiring, single-use) is
 *   followed, then the account allowance; signups with an email are limited per client address;
 * - anonymous signups are limited per IPv6 /64, not per address;
 * - one card gives the card allowance to one account; card attempts are limited per account and per
 *   address; every decline is one answer, with the provider's code in the log;
 * - Stripe's signed webhook takes a detached card's account back to the account tier;
 * - sessions end when idle, and an upgrade ends the account's other sessions.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eachDatabase } from './helpers/accounts-db.js';
import { testConsole } from './helpers/console.js';
import { mailedToken, verifyEmailOf } from './helpers/verify-email.js';
import { rejectsCode } from './helpers/errors.js';
import { loadConfig } from '../src/config/index.js';
import { buildConsole } from '../src/console/main.js';
import { TestBillingProvider } from '../src/accounts/billing/index.js';
import { signPayload } from '../src/accounts/billing/stripe-webhook.js';

const dataDir = mkdtempSync(join(tmpdir(), 'fc-abuse-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const PW = 'correct horse battery';
const CONSOLE_URL = 'https://console.example';

eachDatabase(
  t,
  async (t, tdb) => {
    const c = await testConsole(tdb);
    t.teardown(async () => {
      await c.app.close();
      await c.store.close();
    });
    const dir = tdb.config.dataDir;

    t.test('email signup: anonymous allowance until the mailed link is followed, then the account allowance', async (t) => {
      const email = `verify-${tdb.name}@example.com`;
      const res = await c.api('POST', '/api/signup', { body: { email, password: PW }, ip: '198.51.100.40' });
      t.equal(res.statusCode, 201);
      const { account, session_token: token } = res.json();
      t.same(account.free_calls, { total: 10, used: 0, remaining: 10 }, 'the anonymous allowance (FACECOMPUTE_FREE_CALLS_ANONYMOUS)');
      t.equal(account.email_verified, false);
      t.equal((await c.api('POST', '/api/keys', { token, body: { name: 'a' } })).statusCode, 201);
      t.equal((await c.api('POST', '/api/keys', { token, body: { name: 'b' } })).statusCode, 409, 'and the anonymous key limit: one REST key');
      t.equal((await c.api('POST', '/api/account/card', { token, body: { payment_method: 'pm_card_visa' } })).statusCode, 400, 'no card before verification');

      const first = mailedToken(dir, email);
      t.ok(first, 'a verification mail in the file mailer\'s outbox');
      t.equal((await c.api('POST', '/api/account/verify-email', { body: { token: `${first!.slice(0, -2)}AA` } })).statusCode, 400, 'a tampered token is refused');
      // A new link replaces the old one.
      t.equal((await c.api('POST', '/api/account/verify-email/resend', { token })).statusCode, 204);
      const second = mailedToken(dir, email);
      t.not(second, first, 'a new link');
      t.equal((await c.api('POST', '/api/account/verify-email', { body: { token: first } })).statusCode, 400, 'the earlier link no longer works');
      const page = await c.app.inject({ url: `/verify-email?token=${second}` });
      t.equal(page.statusCode, 200, 'the mailed link verifies');
      t.match(page.body, /is verified: the account now has 50 free calls in total/);
      t.same((await c.api('GET', '/api/account', { token })).json().account.free_calls, { total: 50, used: 0, remaining: 50 });
      t.equal((await c.api('GET', '/api/account', { token })).json().account.email_verified, true);
      t.equal((await c.api('POST', '/api/keys', { token, body: { name: 'b' } })).statusCode, 201, 'and the account key limit');
      t.equal((await c.api('POST', '/api/account/verify-email', { body: { token: second } })).statusCode, 400, 'a link works once');
    });

    t.test('verification links expire', async (t) => {
      let now = Date.now();
      const store = await tdb.open(undefined, { now: () => now });
      t.teardown(() => store.close());
      const { account } = await store.signup(`expire-${tdb.name}@example.com`, PW);
      const token = mailedToken(dir, `expire-${tdb.name}@example.com`);
      now += tdb.config.accounts.emailVerifyTtlMs + 1000;
      await rejectsCode(t, store.verifyEmail(token), 'invalid_request', /expired/);
      t.equal((await store.getAccount(account.id)).free_calls.total, 10);
    });

    t.test('signups with an email are limited per client address (IPv6 by its /64)', async (t) => {
      for (let i = 0; i < 2; i++) t.equal((await c.api('POST', '/api/signup', { body: { email: `many-${i}-${tdb.name}@example.com`, password: PW }, ip: '2001:db8:7:7::1' })).statusCode, 201);
      const res = await c.api('POST', '/api/signup', { body: { email: `many-9-${tdb.name}@example.com`, password: PW }, ip: '2001:db8:7:7:ffff::99' });
      t.equal(res.statusCode, 429, 'another address in the same /64 shares the budget');
      t.equal(res.json().error, 'signup_rate_limited');
      t.ok(Number(res.headers['retry-after']) > 0, 'Retry-After');
      t.equal((await c.api('POST', '/api/signup', { body: { email: `other-${tdb.name}@example.com`, password: PW }, ip: '2001:db8:7:8::1' })).statusCode, 201, 'the next /64 is another client');
    });

    t.test('anonymous signups are limited per IPv6 /64, not per address', async (t) => {
      for (let i = 1; i <= 3; i++) t.equal((await c.api('POST', '/api/signup/anonymous', { ip: `2001:db8:5:5::${i}` })).statusCode, 201);
      t.equal((await c.api('POST', '/api/signup/anonymous', { ip: '2001:db8:5:5:abcd::4' })).statusCode, 429, 'rotating inside the /64 buys nothing');
      t.equal((await c.api('POST', '/api/signup/anonymous', { ip: '2001:db8:5:6::1' })).statusCode, 201);
    });

    t.test('another site cannot make its visitors sign up anonymously (CSRF)', async (t) => {
      const crossSite: Array<Record<string, string>> = [{ 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }, { 'sec-fetch-site': 'same-site' }, { origin: 'https://evil.example' }];
      for (const headers of crossSite) {
        const res = await c.api('POST', '/api/signup/anonymous', { ip: '198.51.100.90', headers });
        t.equal(res.statusCode, 403, JSON.stringify(headers));
        t.equal(res.json().error, 'origin_not_allowed');
      }
      t.equal((await c.api('POST', '/api/signup/anonymous', { ip: '198.51.100.91', headers: { 'sec-fetch-site': 'same-origin', origin: CONSOLE_URL } })).statusCode, 201, 'the console itself');
      t.equal((await c.api('POST', '/api/signup/anonymous', { ip: '198.51.100.92', headers: { origin: CONSOLE_URL } })).statusCode, 201, 'the console, from a browser without Sec-Fetch-Site');
      t.equal((await c.api('POST', '/api/signup/anonymous', { ip: '198.51.100.93' })).statusCode, 201, 'an agent (neither header)');
    });

    t.test('signups are limited per IPv6 /48 too: its 65,536 /64s do not buy more', async (t) => {
      // FACECOMPUTE_SIGNUP_RATE_LIMIT_PER_48 is 5 here, for both kinds together.
      for (let i = 1; i <= 4; i++) t.equal((await c.api('POST', '/api/signup/anonymous', { ip: `2001:db8:9:${i}::1` })).statusCode, 201, `/64 number ${i}`);
      t.equal((await c.api('POST', '/api/signup', { body: { email: `site-${tdb.name}@example.com`, password: PW }, ip: '2001:db8:9:5::1' })).statusCode, 201, 'an email signup counts too');
      const res = await c.api('POST', '/api/signup/anonymous', { ip: '2001:db8:9:6::1' });
      t.equal(res.statusCode, 429, 'a sixth /64 of the same /48 is refused');
      t.equal(res.json().error, 'signup_rate_limited');
      t.equal((await c.api('POST', '/api/signup/anonymous', { ip: '2001:db8:a:1::1' })).statusCode, 201, 'another /48 is another site');
      t.equal((await c.api('POST', '/api/signup/anonymous', { ip: '198.51.100.77' })).statusCode, 201, 'IPv4 keeps its per-address limit only');
    });

    async function verifiedAccount(n: string, ip = '198.51.100.60') {
      const s = (await c.api('POST', '/api/signup', { body: { email: `${n}-${tdb.name}@example.com`, password: PW }, ip })).json();
      await verifyEmailOf(c.store, s.account.id);
      return s as { account: { id: string }; session_token: string };
    }

    t.test('one card gives the card allowance to one account', async (t) => {
      const a = await verifiedAccount('card-a', '198.51.100.61');
      const b = await verifiedAccount('card-b', '198.51.100.62');
      t.equal((await c.api('POST', '/api/account/card', { token: a.session_token, body: { payment_method: 'pm_card_visa' } })).json().account.tier, 'card');
      const again = await c.api('POST', '/api/account/card', { token: b.session_token, body: { payment_method: 'pm_card_visa' } });
      t.equal(again.statusCode, 409, 'the same card on a second account is refused');
      t.equal(again.json().error, 'card_in_use');
      t.equal((await c.store.getAccount(b.account.id)).tier, 'account');
      t.equal((await c.api('POST', '/api/account/card', { token: b.session_token, body: { payment_method: 'pm_card_mastercard' } })).json().account.tier, 'card', 'another card is fine');
      const row = await c.store.db.selectFrom('accounts').select('card_fingerprint').where('id', '=', a.account.id).executeTakeFirstOrThrow();
      t.match(row.card_fingerprint, /^[0-9a-f]{64}$/, 'the fingerprint is stored hashed');
    });

    t.test('card attempts are limited per account and per address; every decline is one answer', async (t) => {
      const a = await verifiedAccount('attempts-a', '198.51.100.70');
      const codes: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await c.api('POST', '/api/account/card', { token: a.session_token, body: { payment_method: 'pm_card_chargeDeclined' }, ip: '198.51.100.70' });
        t.equal(r.statusCode, 402);
        codes.push(r.json().detail);
      }
      t.same([...new Set(codes)], ['the card was declined'], 'no decline code in the answer');
      const over = await c.api('POST', '/api/account/card', { token: a.session_token, body: { payment_method: 'pm_card_visa' }, ip: '198.51.100.70' });
      t.equal(over.statusCode, 429, 'the 4th attempt of the account (limit 3) is refused before the provider is asked');
      t.equal(over.json().error, 'rate_limited');
      t.ok(Number(over.headers['retry-after']) > 0);
      // The address's budget (4) is shared across accounts: a fresh account from there gets one more.
      const b = await verifiedAccount('attempts-b', '198.51.100.71');
      t.equal((await c.api('POST', '/api/account/card', { token: b.session_token, body: { payment_method: 'pm_card_chargeDeclined' }, ip: '198.51.100.70' })).statusCode, 402);
      t.equal((await c.api('POST', '/api/account/card', { token: b.session_token, body: { payment_method: 'pm_card_discover' }, ip: '198.51.100.70' })).statusCode, 429, 'the address is out of attempts');
      t.equal((await c.api('POST', '/api/account/card', { token: b.session_token, body: { payment_method: 'pm_card_discover' }, ip: '198.51.100.72' })).json().account.tier, 'card', 'from another address it works');
    });

    t.test('the decline code goes to the log, not the answer', async (t) => {
      const logged: Array<{ obj: any; msg: string }> = [];
      const store = await tdb.open(undefined, { log: { warn: (obj, msg) => logged.push({ obj, msg }) } });
      t.teardown(() => store.close());
      const { account } = await store.signup(`log-${tdb.name}@example.com`, PW);
      await verifyEmailOf(store, account.id);
      const e = await rejectsCode(t, store.saveCard(account.id, 'pm_card_chargeDeclined'), 'payment_method_declined');
      t.equal(e?.detail, 'the card was declined');
      t.match(logged, [{ msg: 'card declined', obj: { accountId: account.id, provider: 'test', decline: { code: 'card_declined', decline_code: 'test_mode_unknown_card' } } }]);
    });

    t.test('sessions end when idle; an upgrade ends the account\'s other sessions', async (t) => {
      let now = Date.now();
      const store = await tdb.open(undefined, { now: () => now });
      t.teardown(() => store.close());
      const { account, session_token } = await store.signupAnonymous('192.0.2.200');
      now += 5 * 60_000;
      t.equal(await store.sessionAccount(session_token), account.id, 'used within the idle time: alive (and its last use moves)');
      now += tdb.config.accounts.sessionIdleMs - 60_000;
      t.equal(await store.sessionAccount(session_token), account.id, 'still alive: the idle time counts from the last use');
      now += tdb.config.accounts.sessionIdleMs + 1;
      t.equal(await store.sessionAccount(session_token), null, 'idle too long: ended');

      const anon = await store.signupAnonymous('192.0.2.201');
      const other = (await store.db.selectFrom('sessions').select('id').where('account_id', '=', anon.account.id).execute()).length;
      t.equal(other, 1);
      // A second session of the same account (another agent or browser), then the upgrade from the first.
      const leaked = await (store as any).createSession(anon.account.id);
      await store.upgrade(anon.account.id, `upgrade-${tdb.name}@example.com`, PW, anon.session_token);
      t.equal(await store.sessionAccount(anon.session_token), anon.account.id, 'the session that upgraded goes on');
      t.equal(await store.sessionAccount(leaked), null, 'every other session of the account ended');
    });
  },
  { FACECOMPUTE_DATA_DIR: dataDir, FACECOMPUTE_PUBLIC_CONSOLE_URL: CONSOLE_URL, FACECOMPUTE_SIGNUP_RATE_LIMIT: '3', FACECOMPUTE_SIGNUP_RATE_LIMIT_PER_48: '5', FACECOMPUTE_EMAIL_SIGNUP_RATE_LIMIT: '2', FACECOMPUTE_CARD_ATTEMPTS_PER_ACCOUNT: '3', FACECOMPUTE_CARD_ATTEMPTS_PER_ADDRESS: '4' },
);

t.test('Stripe webhook: only signed, fresh events count; a detached card ends the card allowance', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-webhook-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const secret = 'whsec_test_0123456789abcdef';
  const config = loadConfig({ FACECOMPUTE_DATA_DIR: dir, FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_BILLING_PROVIDER: 'stripe', FACECOMPUTE_STRIPE_SECRET_KEY: 'sk_test_x', FACECOMPUTE_STRIPE_WEBHOOK_SECRET: secret });
  const { createAccountsStore } = await import('../src/accounts/index.js');
  // The card itself comes from the test provider; the webhook is what is tested.
  const store = await createAccountsStore(config, { billing: new TestBillingProvider() });
  const app = await buildConsole({ config, store });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const { account } = await store.signup('hook@example.com', PW);
  await verifyEmailOf(store, account.id);
  await store.saveCard(account.id, 'pm_card_visa');
  t.equal((await store.getAccount(account.id)).tier, 'card');

  const event = JSON.stringify({ id: 'evt_1', type: 'payment_method.detached', data: { object: { id: 'pm_card_visa', object: 'payment_method' } } });
  const post = (body: string, signature: string) => app.inject({ method: 'POST', url: '/api/stripe/webhook', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, payload: body });
  const ts = Math.floor(Date.now() / 1000);
  t.equal((await post(event, `t=${ts},v1=${signPayload('whsec_wrong_secret0000', ts, event)}`)).statusCode, 400, 'signed with another secret: refused');
  t.equal((await post(event, `t=${ts - 3600},v1=${signPayload(secret, ts - 3600, event)}`)).statusCode, 400, 'an hour old (a replay): refused');
  t.equal((await post(event.replace('evt_1', 'evt_2'), `t=${ts},v1=${signPayload(secret, ts, event)}`)).statusCode, 400, 'a body that is not the one signed: refused');
  t.equal((await post(event, '')).statusCode, 400, 'unsigned: refused');
  t.equal((await store.getAccount(account.id)).tier, 'card', 'none of them changed anything');
  const ok = await post(event, `t=${ts},v1=${'0'.repeat(64)},v1=${signPayload(secret, ts, event)}`);
  t.equal(ok.statusCode, 200, 'signed (one of several v1 signatures matching): accepted');
  const after = await store.getAccount(account.id);
  t.equal(after.tier, 'account', 'the detached card no longer backs the account');
  t.equal(after.free_calls.total, 50, 'back to the account allowance');
  t.equal(await store.getCard(account.id), null);
});
