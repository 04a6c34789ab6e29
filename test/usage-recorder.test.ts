/**
 * Per-request usage records (src/accounts/usage/): batched writes, the daily counters and the recent
 * requests the console's Usage page shows, their bounds (100 recent per account, the retention in
 * days), and a failed write kept for the next try. On SQLite and PostgreSQL.
 */
import t from 'tap';
import { eachDatabase } from './helpers/accounts-db.js';
import { BATCH_SIZE, MAX_BUFFERED, RECENT_PER_ACCOUNT, WRITE_CHUNK, UsageRecorder, createUsageRecorder, type UsageEvent } from '../src/accounts/usage/recorder.js';
import { usageReport } from '../src/accounts/usage/report.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-27T12:00:00Z');

eachDatabase(t, async (t, tdb) => {
  const store = await tdb.open();
  t.teardown(() => store.close());
  let clock = NOW;
  const now = () => clock;

  let signups = 0;
  async function account() {
    // One address each: anonymous signups are limited per address.
    const { account } = await store.signupAnonymous(`10.0.${++signups}.9`);
    const rest = await store.createKey(account.id, 'rest', 'laptop');
    const mcp = await store.createKey(account.id, 'mcp', 'agent');
    return { id: account.id, rest: rest.id, mcp: mcp.id };
  }
  let seq = 0;
  function event(a: { id: string; rest: string }, over: Partial<UsageEvent> = {}): UsageEvent {
    seq++;
    return { accountId: a.id, keyId: a.rest, surface: 'rest', route: '/verify', status: 200, error: null, outcome: 'charged', durationMs: 12.34, requestId: `req-${seq}`, at: clock, ...over };
  }

  t.test('nothing is written until the flush; then counts by day, key, route and cost, and the recent list', async (t) => {
    const a = await account();
    const rec = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 60_000, now });
    rec.record(event(a));
    rec.record(event(a));
    rec.record(event(a, { status: 400, error: 'invalid_image', outcome: 'not_charged', route: '/represent' }));
    rec.record(event(a, { status: 502, error: 'upstream_lost', outcome: 'refunded' }));
    rec.record(event(a, { keyId: a.mcp, surface: 'mcp', route: 'get_capabilities', outcome: 'not_charged', at: clock - DAY }));
    t.equal(rec.pending, 5);
    const before = await usageReport(store.db, a.id, { now: clock });
    t.equal(before.totals.total, 0, 'record() only buffers');

    await rec.flush();
    t.equal(rec.pending, 0);
    t.equal(rec.written, 5);
    const r = await usageReport(store.db, a.id, { now: clock });
    t.same(r.totals, { charged: 2, refunded: 1, refused: 1, free: 1, total: 5 });
    t.equal(r.days.length, 30);
    t.equal(r.to, '2026-11-27');
    t.equal(r.from, '2026-10-29');
    t.same(r.days.at(-1), { day: '2026-11-27', charged: 2, refunded: 1, refused: 1, free: 0, total: 4 });
    t.same(r.days.at(-2), { day: '2026-11-26', charged: 0, refunded: 0, refused: 0, free: 1, total: 1 });
    t.same(
      r.by_route.map((x) => [x.route, x.total]),
      [
        ['/verify', 3],
        ['/represent', 1],
        ['get_capabilities', 1],
      ],
      'most used first, then by name',
    );
    const byKey = Object.fromEntries(r.by_key.map((k) => [k.name, k]));
    t.equal(byKey['laptop']!.total, 4);
    t.equal(byKey['laptop']!.kind, 'rest');
    t.equal(byKey['agent']!.total, 1);
    t.equal(byKey['agent']!.kind, 'mcp');
    t.equal(r.recent.length, 5);
    t.same(r.recent[0], { at: new Date(clock - DAY).toISOString(), key_id: a.mcp, key_name: 'agent', surface: 'mcp', route: 'get_capabilities', status: 200, error: null, outcome: 'not_charged', duration_ms: 12.3, request_id: `req-${seq}` }, 'newest first, by insertion');
    t.same(r.recent.map((x) => x.error), [null, 'upstream_lost', 'invalid_image', null, null]);

    // A second batch adds to the same counters.
    rec.record(event(a));
    await rec.close();
    t.equal((await usageReport(store.db, a.id, { now: clock })).totals.charged, 3);
    rec.record(event(a));
    t.equal(rec.pending, 0, 'a closed recorder takes nothing');
  });

  t.test("another account's usage is never in the report", async (t) => {
    const a = await account();
    const b = await account();
    const rec = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 60_000, now });
    rec.record(event(a));
    rec.record(event(b));
    rec.record(event(b));
    await rec.close();
    const ra = await usageReport(store.db, a.id, { now: clock });
    t.equal(ra.totals.total, 1);
    t.same(ra.recent.map((x) => x.key_id), [a.rest]);
    t.equal((await usageReport(store.db, b.id, { now: clock })).totals.total, 2);
  });

  t.test(`each account keeps its ${RECENT_PER_ACCOUNT} newest requests; the counters keep counting`, async (t) => {
    const a = await account();
    const b = await account();
    const rec = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 60_000, now });
    for (let i = 0; i < 130; i++) rec.record(event(a, { requestId: `a-${i}` }));
    rec.record(event(b, { requestId: 'b-0' }));
    await rec.flush();
    for (let i = 130; i < 150; i++) rec.record(event(a, { requestId: `a-${i}` }));
    await rec.close();
    const r = await usageReport(store.db, a.id, { now: clock });
    t.equal(r.totals.total, 150);
    t.equal(r.recent.length, RECENT_PER_ACCOUNT);
    t.equal(r.recent[0]!.request_id, 'a-149');
    t.equal(r.recent.at(-1)!.request_id, 'a-50');
    const stored = await store.db.selectFrom('usage_recent').select((s) => s.fn.countAll<number>().as('n')).where('account_id', '=', a.id).executeTakeFirstOrThrow();
    t.equal(Number(stored.n), RECENT_PER_ACCOUNT, 'older rows are deleted, not only hidden');
    t.same((await usageReport(store.db, b.id, { now: clock })).recent.map((x) => x.request_id), ['b-0'], "one account's trim leaves the others");
  });

  t.test(`${BATCH_SIZE} waiting records start a write without waiting for the interval`, async (t) => {
    const a = await account();
    const rec = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 60_000, now });
    for (let i = 0; i < BATCH_SIZE; i++) rec.record(event(a));
    const deadline = Date.now() + 10_000;
    while (rec.written < BATCH_SIZE && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    t.equal(rec.written, BATCH_SIZE);
    t.equal((await usageReport(store.db, a.id, { now: clock })).totals.total, BATCH_SIZE);
    await rec.close();
  });

  t.test(`a flush writes ${WRITE_CHUNK} records per transaction and lets I/O run between them`, async (t) => {
    const a = await account();
    let transactions = 0;
    let immediates = 0;
    const db = new Proxy(store.db, {
      get(target, prop) {
        if (prop === 'transaction') transactions++;
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
      },
    });
    const rec = new UsageRecorder(db, { retentionDays: 31, flushMs: 60_000, now });
    for (let i = 0; i < WRITE_CHUNK * 2 + 50; i++) rec.record(event(a));
    // Macrotasks (what answers requests) during the flush: with SQLite's synchronous driver they run
    // only where the flush yields, so one that sees part of the records written ran between two
    // transactions. (With PostgreSQL they also run during each transaction's I/O.)
    const seen: number[] = [];
    let flushing = true;
    const tick = () => {
      immediates++;
      seen.push(rec.written);
      if (flushing) setImmediate(tick);
    };
    setImmediate(tick);
    await rec.flush();
    flushing = false;
    t.equal(transactions, 5, `3 writes of at most ${WRITE_CHUNK}, then one trim of the account and the first flush's prune`);
    t.ok(immediates > 0);
    t.ok(
      seen.some((n) => n > 0 && n < WRITE_CHUNK * 2 + 50),
      `I/O ran between transactions (written when macrotasks ran: ${[...new Set(seen)].join(', ')})`,
    );
    t.equal((await usageReport(store.db, a.id, { now: clock })).totals.total, WRITE_CHUNK * 2 + 50);
    await rec.close();
  });

  t.test('the timer writes within the flush interval', async (t) => {
    const a = await account();
    const rec = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 50, now });
    rec.record(event(a));
    const deadline = Date.now() + 10_000;
    while (rec.written < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    t.equal(rec.written, 1);
    await rec.close();
  });

  t.test('rows older than the retention are deleted by the next write', async (t) => {
    const a = await account();
    clock = NOW - 40 * DAY;
    const old = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 60_000, now });
    old.record(event(a, { requestId: 'old' }));
    await old.close();
    clock = NOW - 5 * DAY;
    const recent = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 60_000, now });
    recent.record(event(a, { requestId: 'recent' }));
    await recent.close();
    clock = NOW;
    // A new process prunes on its first write (then hourly).
    const rec = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 60_000, now });
    rec.record(event(a, { requestId: 'today' }));
    await rec.close();
    const days = await store.db.selectFrom('usage_daily').select('day').where('account_id', '=', a.id).orderBy('day').execute();
    t.same(days.map((d) => d.day), ['2026-11-22', '2026-11-27']);
    const ids = await store.db.selectFrom('usage_recent').select('request_id').where('account_id', '=', a.id).orderBy('id').execute();
    t.same(ids.map((d) => d.request_id), ['recent', 'today']);
  });

  t.test('retention 0 records nothing: no recorder', async (t) => {
    t.equal(createUsageRecorder(store, { retentionDays: 0, flushMs: 1000 }), null);
    t.type(createUsageRecorder(store, { retentionDays: 1, flushMs: 1000 }), UsageRecorder);
  });

  t.test('a failed write keeps its records for the next try, within the bound; nothing counted twice', async (t) => {
    const a = await account();
    const warnings: object[] = [];
    // A database that refuses transactions until `broken` is cleared.
    let broken = true;
    const db = new Proxy(store.db, {
      get(target, prop) {
        if (prop === 'transaction' && broken) return () => ({ execute: async () => Promise.reject(new Error('database down')) });
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const rec = new UsageRecorder(db, { retentionDays: 31, flushMs: 60_000, now, log: { warn: (o) => warnings.push(o) } });
    rec.record(event(a));
    rec.record(event(a));
    await rec.flush();
    t.equal(rec.pending, 2, 'kept');
    t.equal(rec.written, 0);
    t.equal(warnings.length, 1);
    for (let i = 0; i < MAX_BUFFERED; i++) rec.record(event(a));
    t.equal(rec.pending, MAX_BUFFERED, 'never more than the bound in memory');
    t.equal(rec.dropped, 2);
    broken = false;
    await rec.close();
    t.equal(rec.written, MAX_BUFFERED);
    t.equal((await usageReport(store.db, a.id, { now: clock })).totals.total, MAX_BUFFERED);
  });
});
