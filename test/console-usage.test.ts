/**
 * The console's usage (issue 28, item 6): GET /api/usage and the /usage page show the signed-in
 * account's recorded requests (src/accounts/usage/) and its remaining allowance, never another
 * account's, and need a session. On SQLite and PostgreSQL.
 */
import t from 'tap';
import { eachDatabase } from './helpers/accounts-db.js';
import { testConsole } from './helpers/console.js';
import { UsageRecorder, type UsageEvent } from '../src/accounts/usage/recorder.js';

eachDatabase(t, async (t, tdb) => {
  const c = await testConsole(tdb);
  const usage = new UsageRecorder(c.store.db, { retentionDays: 31, flushMs: 60_000 });
  t.teardown(async () => {
    await usage.close();
    await c.app.close();
    await c.store.close();
  });

  async function agent(ip: string) {
    const { session_token: token, account } = (await c.api('POST', '/api/signup/anonymous', { ip })).json();
    const key = (await c.api('POST', '/api/keys', { token, body: { name: `key <b>${ip}</b>` } })).json();
    return { token, id: account.id as string, keyId: key.id as string };
  }
  const ev = (a: { id: string; keyId: string }, over: Partial<UsageEvent>): UsageEvent => ({
    accountId: a.id,
    keyId: a.keyId,
    surface: 'rest',
    route: '/verify',
    status: 200,
    error: null,
    outcome: 'charged',
    durationMs: 8.25,
    requestId: 'req',
    at: Date.now(),
    ...over,
  });

  const a = await agent('198.51.100.31');
  const b = await agent('198.51.100.32');
  usage.record(ev(a, { requestId: 'a-ok' }));
  usage.record(ev(a, { requestId: 'a-bad', status: 400, error: 'invalid_image', outcome: 'not_charged', route: '/represent' }));
  usage.record(ev(b, { requestId: 'b-secret-request' }));
  await usage.flush();

  t.test('GET /api/usage: the account, its counts by day, key and route, and its recent requests', async (t) => {
    const res = await c.api('GET', '/api/usage', { token: a.token });
    t.equal(res.statusCode, 200);
    t.equal(res.headers['cache-control'], 'no-store');
    const body = res.json();
    t.same(Object.keys(body).sort(), ['account', 'usage']);
    t.equal(body.account.id, a.id);
    t.same(body.account.free_calls, { total: 10, used: 0, remaining: 10 });
    t.same(body.usage.totals, { charged: 1, refunded: 0, refused: 1, free: 0, total: 2 });
    t.equal(body.usage.days.length, 30);
    t.same(body.usage.by_key.map((k: { name: string; total: number }) => [k.name, k.total]), [['key <b>198.51.100.31</b>', 2]]);
    t.same(body.usage.by_route.map((r: { route: string }) => r.route), ['/represent', '/verify']);
    t.same(
      body.usage.recent.map((r: { request_id: string; status: number; error: string | null; outcome: string }) => [r.request_id, r.status, r.error, r.outcome]),
      [
        ['a-bad', 400, 'invalid_image', 'not_charged'],
        ['a-ok', 200, null, 'charged'],
      ],
    );
    t.notMatch(res.payload, /b-secret-request/, "another account's request is never shown");
  });

  t.test('GET /api/usage needs a session', async (t) => {
    const res = await c.api('GET', '/api/usage');
    t.equal(res.statusCode, 401);
    t.equal(res.json().error, 'unauthorized');
  });

  t.test('the /usage page: totals, key names escaped, request ids; signed out it sends you to sign in', async (t) => {
    const res = await c.api('GET', '/usage', { token: a.token });
    t.equal(res.statusCode, 200);
    t.match(res.headers['content-type'], /text\/html/);
    t.match(res.headers['content-security-policy'], /default-src 'none'/);
    t.match(res.payload, /2 requests: 1 charged, 0 refunded, 1 refused, 0 free/);
    t.match(res.payload, /<strong>10<\/strong> of 10 left \(anonymous\)/);
    t.match(res.payload, /key &lt;b&gt;198\.51\.100\.31&lt;\/b&gt;/, 'the key name is escaped');
    t.notMatch(res.payload, /<b>198/);
    t.match(res.payload, /data-request-id="a-bad"/);
    t.match(res.payload, /invalid_<wbr>image/);
    t.equal((res.payload.match(/<g data-day=/g) ?? []).length, 30, 'one bar per day');
    t.notMatch(res.payload, /b-secret-request/);
    const out = await c.api('GET', '/usage');
    t.equal(out.statusCode, 303);
    t.equal(out.headers['location'], '/signin');
  });
});
