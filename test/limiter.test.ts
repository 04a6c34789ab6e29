/**
 * One suite, both limiter backends. The Redis backend needs FACECOMPUTE_TEST_REDIS_URL
 * (scripts/test-services.sh); without it the Redis suite fails naming Redis and the command that
 * starts it (test/helpers/services.ts), with CI set or not.
 */
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import type { Limiter, LimiterSettings } from '../src/service/limits/limiter.js';
import { createMemoryLimiter } from '../src/service/limits/memory.js';
import { createRedisLimiter } from '../src/service/limits/redis.js';
import { requireService } from './helpers/services.js';

/**
 * A backend, and how its window's time passes: the memory limiter reads a clock the test drives (no
 * sleeping, and no load can move a hit across the window); Redis keeps time on the server, so the test
 * waits out what the server says is left of the window (`resetMs`), which no load can make too short.
 */
interface Backend {
  make(s: LimiterSettings): Limiter;
  /** The window, long enough for Redis that a loaded machine cannot spread six hits over two. */
  windowMs: number;
  pass(ms: number): Promise<void>;
}

const backends: Array<[string, (t: Test) => Promise<Backend | null>]> = [
  [
    'memory',
    async () => {
      let now = 1_000_000;
      return { make: (s) => createMemoryLimiter(s, () => now), windowMs: 400, pass: async (ms) => void (now += ms) };
    },
  ],
  [
    'redis',
    async (t) => {
      const url = await requireService(t, 'Redis');
      if (!url) return null;
      return { make: (s) => createRedisLimiter(url, s, `fc:test:${randomUUID()}:`), windowMs: 3000, pass: (ms) => new Promise((r) => setTimeout(r, ms + 20)) };
    },
  ],
];

for (const [name, backend] of backends) {
  t.test(`${name} limiter`, async (t) => {
    const b = await backend(t);
    if (!b) return;
    const lim = b.make({ requests: 5, windowMs: b.windowMs, concurrent: 2 });
    t.teardown(() => lim.close());
    await lim.ping();

    t.test('window: N allowed, then refused, then reset', async (t) => {
      const key = randomUUID();
      for (let i = 0; i < 5; i++) {
        const r = await lim.hit(key);
        t.ok(r.allowed);
        t.equal(r.remaining, 4 - i);
        t.equal(r.limit, 5);
        t.ok(r.resetMs > 0 && r.resetMs <= b.windowMs);
      }
      const no = await lim.hit(key);
      t.notOk(no.allowed);
      t.equal(no.remaining, 0);
      t.ok((await lim.hit(randomUUID())).allowed, 'other keys unaffected');
      await b.pass(no.resetMs);
      t.ok((await lim.hit(key)).allowed, 'new window');
    });

    t.test('strikes: counted atomically in a window from the first, per key', async (t) => {
      const strikes = b.make({ requests: 5, windowMs: 400, concurrent: 2, strikeWindowMs: 3_600_000 });
      t.teardown(() => strikes.close());
      const key = randomUUID();
      t.same(await strikes.strikes(key), { count: 0, resetMs: 0 }, 'none yet');
      const rs = await Promise.all(Array.from({ length: 7 }, () => strikes.strike(key)));
      t.same(rs.map((r) => r.count).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7], 'each strike counted once');
      const now = await strikes.strikes(key);
      t.equal(now.count, 7);
      t.ok(now.resetMs > 3_500_000 && now.resetMs <= 3_600_000, `the window runs from the first strike (${now.resetMs} ms left)`);
      t.equal((await strikes.strikes(randomUUID())).count, 0, 'other keys unaffected');
    });

    t.test('window is atomic under parallel hits', async (t) => {
      const key = randomUUID();
      const rs = await Promise.all(Array.from({ length: 50 }, () => lim.hit(key)));
      t.equal(rs.filter((r) => r.allowed).length, 5);
    });

    t.test('concurrency slots', async (t) => {
      const key = randomUUID();
      const rs = await Promise.all(Array.from({ length: 10 }, () => lim.acquire(key)));
      const held = rs.filter((r) => r.allowed);
      t.equal(held.length, 2, 'exactly the limit');
      t.same(rs.filter((r) => !r.allowed).map((r) => r.slot), Array(8).fill(null), 'a refusal holds no slot');
      t.notOk((await lim.acquire(key)).allowed);
      await lim.release(key, held[0]!.slot);
      const next = await lim.acquire(key);
      t.ok(next.allowed, 'a released slot is reusable');
      await lim.release(key, held[0]!.slot); // releasing a slot twice frees nothing more
      t.notOk((await lim.acquire(key)).allowed, 'a second release of the same slot does not free another');
      await lim.release(key, held[1]!.slot);
      await lim.release(key, next.slot);
      await lim.release(key, null);
      const again = await Promise.all([lim.acquire(key), lim.acquire(key), lim.acquire(key)]);
      t.equal(again.filter((r) => r.allowed).length, 2);
    });
  });
}

// Issue 24: each slot has its own deadline. The old Redis limiter kept one counter per account with
// one TTL (60 s, or two windows), so a request running longer than that, or an acquire in between,
// decided the fate of every slot: the count vanished with the key while requests were in flight.
t.test('redis: each slot lives until its own deadline, not a TTL shared by the account', async (t) => {
  const redisUrl = await requireService(t, 'Redis');
  if (!redisUrl) return;
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl);
  const prefix = `fc:test:${randomUUID()}:`;
  // A 1 s window (the old TTL would then be its 60 s floor) and slots that may live 10 minutes.
  const lim = createRedisLimiter(redisUrl, { requests: 100, windowMs: 1000, concurrent: 2, slotDeadlineMs: 600_000 }, prefix);
  t.teardown(async () => {
    await lim.close();
    redis.disconnect();
  });
  const key = randomUUID();
  const a = await lim.acquire(key);
  const keys = await redis.keys(`${prefix}*`);
  t.equal(keys.length, 1, 'one key for the account\'s slots');
  const ttl = await redis.pttl(keys[0]!);
  t.ok(ttl > 590_000, `the slots outlive the longest request: ${ttl} ms (the old counter: 60,000 ms)`);
  t.same(await redis.zrange(keys[0]!, '0', '-1'), [a.slot], 'the slot is the request\'s own');
  // A slot whose holder died (its deadline passed) frees its place; the others stay.
  const b = await lim.acquire(key);
  t.ok(b.allowed);
  await redis.zadd(keys[0]!, '1', b.slot!); // deadline in the past, as for a replica that died
  const c = await lim.acquire(key);
  t.ok(c.allowed, 'the dead slot no longer counts');
  t.notOk((await lim.acquire(key)).allowed, 'the live ones do: a and c');
  t.same((await redis.zrange(keys[0]!, '0', '-1')).sort(), [a.slot, c.slot].sort());
});
