/**
 * Sign-in throttling (src/accounts/login-throttle.ts), on SQLite and PostgreSQL: a growing delay per
 * (email, client address), a per-address hourly limit, and the owner, from another address, always
 * gets in. Time is a clock the test moves, never a wait.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addressKey } from '../src/accounts/login-throttle.js';
import { loadConfig } from '../src/config/index.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { buildConsole } from '../src/console/main.js';
import { rejectsCode } from './helpers/errors.js';
import { eachDatabase } from './helpers/accounts-db.js';

const PASSWORD = 'correct horse battery';
const ATTACKER = '203.0.113.5';
const OWNER = '198.51.100.7';

function clock() {
  const c = { t: Date.parse('2030-01-01T00:00:00Z'), now: () => c.t, advance: (ms: number) => void (c.t += ms) };
  return c;
}

t.test('client addresses: IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64', async (t) => {
  t.equal(addressKey('203.0.113.5'), '203.0.113.5');
  t.equal(addressKey('::ffff:203.0.113.5'), '203.0.113.5');
  t.equal(addressKey('2001:db8:abcd:12:1:2:3:4'), '2001:db8:abcd:12::/64');
  t.equal(addressKey('2001:0db8:abcd:0012::99'), '2001:db8:abcd:12::/64', 'leading zeros and :: expanded');
  t.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(addressKey('[2001:db8:abcd:12::1]'), '2001:db8:abcd:12::/64');
  t.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  t.equal(addressKey('::1'), '0:0:0:0::/64');
});

eachDatabase(t, async (t, tdb) => {
  t.test('a growing delay per (email, address); the owner, from another address, always gets in', async (t) => {
    const c = clock();
    const store = await tdb.open(undefined, { now: c.now });
    t.teardown(() => store.close());
    const email = `owner-${tdb.name}@example.com`;
    await store.signup(email, PASSWORD);
    const free = tdb.config.accounts.login.freeFailures;
    t.equal(free, 5, 'default: 5 failures before any wait');

    for (let i = 0; i < free; i++) await rejectsCode(t, store.login(email, `wrong ${i} password`, ATTACKER), 'invalid_credentials');
    // From here each failure doubles the wait, up to 15 minutes; an attempt within the wait is refused
    // before the password is even checked, the right one too.
    const waits: number[] = [];
    for (let i = 0; i < 14; i++) {
      const e = await rejectsCode(t, store.login(email, PASSWORD, ATTACKER), 'rate_limited');
      const wait = Number(e?.headers['retry-after']);
      waits.push(wait);
      t.match(e?.detail, /too many failed sign-ins for this account from your address; try again in \d+ (seconds?|minutes)/);
      // The owner is never held up by the attacker's failures.
      t.ok((await store.login(email, PASSWORD, OWNER)).session_token, `the owner signs in from another address (attacker's wait ${wait} s)`);
      c.advance(wait * 1000 - 1);
      await rejectsCode(t, store.login(email, `wrong again ${i}`, ATTACKER), 'rate_limited', undefined, 'not a millisecond early');
      c.advance(1);
      await rejectsCode(t, store.login(email, `wrong again ${i}`, ATTACKER), 'invalid_credentials');
    }
    t.same(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900, 900], 'doubling from 1 s to the 15-minute cap');

    // The right password after the wait: the streak ends, and new failures start from free again.
    c.advance(900_000);
    t.ok(await store.login(email, PASSWORD, ATTACKER), 'the right password after the wait');
    for (let i = 0; i < free; i++) await rejectsCode(t, store.login(email, `fresh ${i} password`, ATTACKER), 'invalid_credentials');
    await rejectsCode(t, store.login(email, PASSWORD, ATTACKER), 'rate_limited');

    // A streak nobody continues is forgotten after a day.
    c.advance(24 * 3600_000);
    for (let i = 0; i < free; i++) await rejectsCode(t, store.login(email, `next day ${i}`, ATTACKER), 'invalid_credentials');

    // Migration 0003 removed the old per-email lock's table.
    await t.rejects(store.db.selectFrom('login_failures' as any).selectAll().execute(), 'login_failures is gone');
    const rows = await store.db.selectFrom('login_throttle').selectAll().execute();
    t.notOk(JSON.stringify(rows).match(/owner-|example\.com|203\.0\.113|198\.51\.100/), 'emails and addresses are stored only hashed');
  });

  t.test('an attacker at one address cannot lock the owner out at another (the old lock did after 10)', async (t) => {
    const c = clock();
    const store = await tdb.open(undefined, { now: c.now });
    t.teardown(() => store.close());
    const email = `locked-${tdb.name}@example.com`;
    await store.signup(email, PASSWORD);
    const codes: string[] = [];
    for (let i = 0; i < 30; i++) {
      codes.push(await store.login(email, `guess ${i} password`, ATTACKER).then(() => 'signed in', (e: { code: string }) => e.code));
      c.advance(2000);
    }
    t.notOk(codes.includes('signed in'));
    t.ok(codes.includes('rate_limited'), 'the attacker is slowed down');
    const owner = await store.login(email, PASSWORD, OWNER);
    t.equal(owner.account.email, email, 'the owner signs in at once from their own address');
    await rejectsCode(t, store.login(email, PASSWORD, ATTACKER), 'rate_limited', undefined, 'while the attacker still waits');
  });

  t.test('unknown emails are throttled exactly as known ones (nothing tells which exist)', async (t) => {
    const c = clock();
    const store = await tdb.open(undefined, { now: c.now });
    t.teardown(() => store.close());
    await store.signup(`known-${tdb.name}@example.com`, PASSWORD);
    for (const email of [`known-${tdb.name}@example.com`, `unknown-${tdb.name}@example.com`]) {
      for (let i = 0; i < 5; i++) await rejectsCode(t, store.login(email, 'wrong password!', '203.0.113.9'), 'invalid_credentials');
      const e = await rejectsCode(t, store.login(email, 'wrong password!', '203.0.113.9'), 'rate_limited');
      t.equal(e?.headers['retry-after'], '1');
    }
  });

  t.test('parallel guesses cannot slip through before the failures are counted', async (t) => {
    const c = clock();
    const store = await tdb.open(undefined, { now: c.now });
    t.teardown(() => store.close());
    const email = `race-${tdb.name}@example.com`;
    await store.signup(email, PASSWORD);
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => store.login(email, `parallel ${i} guess`, ATTACKER)));
    const codes = results.map((r) => (r.status === 'rejected' ? (r.reason as { code: string }).code : 'signed in'));
    t.equal(codes.filter((x) => x === 'invalid_credentials').length, 5, `exactly the free 5 were checked (${tdb.name})`);
    t.equal(codes.filter((x) => x === 'rate_limited').length, 15);
    t.ok(await store.login(email, PASSWORD, OWNER), 'the owner still gets in from elsewhere');
  });
});

eachDatabase(
  t,
  async (t, tdb) => {
    t.test('one address may fail at most N times an hour across all emails; others are unaffected', async (t) => {
      const c = clock();
      const store = await tdb.open(undefined, { now: c.now });
      t.teardown(() => store.close());
      await store.signup(`victim-${tdb.name}@example.com`, PASSWORD);
      // Successful sign-ins do not count: an office behind one address signs in all day.
      await store.signup(`office-${tdb.name}@example.com`, PASSWORD);
      for (let i = 0; i < 20; i++) await store.login(`office-${tdb.name}@example.com`, PASSWORD, ATTACKER);
      for (let i = 0; i < 8; i++) await rejectsCode(t, store.login(`spray${i}-${tdb.name}@example.com`, 'Password123!', ATTACKER), 'invalid_credentials');
      c.advance(60_000);
      const e = await rejectsCode(t, store.login(`victim-${tdb.name}@example.com`, 'Password123!', ATTACKER), 'rate_limited');
      t.equal(e?.headers['retry-after'], String(3600 - 60), 'until the hour is over');
      t.match(e?.detail, /too many failed sign-ins from your address \(at most 8 an hour\); try again in 59 minutes/);
      t.ok(await store.login(`victim-${tdb.name}@example.com`, PASSWORD, OWNER), 'the owner, elsewhere, gets in');
      t.ok(await store.login(`victim-${tdb.name}@example.com`, PASSWORD, '2001:db8:1:2::5'), 'and from an IPv6 address');
      // The same /64 is one client: rotating inside it buys nothing.
      for (let i = 0; i < 8; i++) await rejectsCode(t, store.login(`v6-${i}@example.com`, 'Password123!', `2001:db8:9:9::${i + 1}`), 'invalid_credentials');
      await rejectsCode(t, store.login('v6-x@example.com', 'Password123!', '2001:db8:9:9:ffff::1'), 'rate_limited');
      c.advance(3600_000);
      await rejectsCode(t, store.login(`victim-${tdb.name}@example.com`, 'Password123!', ATTACKER), 'invalid_credentials', undefined, 'a new hour');
    });
  },
  { FACECOMPUTE_LOGIN_ADDRESS_FAILURES_PER_HOUR: '8' },
);

t.test('the console counts the client address FACECOMPUTE_TRUSTED_PROXIES says, on the API and the page', async (t) => {
  const login = (app: any, email: string, password: string, xff: string) =>
    app.inject({ method: 'POST', url: '/api/login', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': xff }, payload: { email, password } });
  for (const trusted of [true, false]) {
    const config = loadConfig({ FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-throttle-')), FACECOMPUTE_LOG_LEVEL: 'silent', ...(trusted ? { FACECOMPUTE_TRUSTED_PROXIES: '127.0.0.1' } : {}) });
    const store = await createAccountsStore(config);
    const app = await buildConsole({ config, store });
    t.teardown(async () => { await app.close(); await store.close(); });
    await store.signup('proxied@example.com', PASSWORD);
    for (let i = 0; i < 5; i++) t.equal((await login(app, 'proxied@example.com', `wrong ${i} password`, `203.0.113.${i}`)).statusCode, 401);
    const attacker = await login(app, 'proxied@example.com', 'wrong 5 password', '203.0.113.0');
    const owner = await login(app, 'proxied@example.com', PASSWORD, '198.51.100.7');
    if (trusted) {
      // Behind the proxy each forwarded address is its own client: five addresses, one failure each.
      t.equal(attacker.statusCode, 401, 'trusted proxy: each forwarded address has its own budget');
      t.equal(owner.statusCode, 200, 'and the owner behind it gets in');
    } else {
      // A forged X-Forwarded-For is not believed: every attempt is the socket address's.
      t.equal(attacker.statusCode, 429, 'untrusted: rotating X-Forwarded-For buys nothing');
      t.equal(attacker.json().error, 'rate_limited');
      t.equal(attacker.headers['retry-after'], '1');
      t.equal(owner.statusCode, 429, 'and everyone at that socket address waits with it');
    }
    // The web form shows the refusal as a message on the page, with its status.
    const page = await app.inject({ url: '/signin' });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
    const form = await app.inject({
      method: 'POST',
      url: '/signin',
      remoteAddress: '127.0.0.1',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `fc_csrf=${csrf}`, 'x-forwarded-for': '203.0.113.0' },
      payload: new URLSearchParams({ email: 'proxied@example.com', password: 'wrong 6 password', _csrf: csrf }).toString(),
    });
    if (!trusted) {
      t.equal(form.statusCode, 429);
      t.match(form.headers['retry-after'], /^\d+$/, 'the page carries Retry-After too');
      t.match(form.body, /Too many failed sign-ins for this account from your address; try again in \d+ seconds?\./);
    }
  }
});
