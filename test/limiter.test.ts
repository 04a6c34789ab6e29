/**
 * One suite, both limiter backends. The Redis backend needs FACECOMPUTE_TEST_REDIS_URL
 * (scripts/test-services.sh); in CI its absence is a failure, locally a skip.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { Limiter, LimiterSettings } from '../src/gateway/limits/limiter.js';
import { createMemoryLimiter } from '../src/gateway/limits/memory.js';
import { createRedisLimiter } from '../src/gateway/limits/redis.js';

const redisUrl = process.env['FACECOMPUTE_TEST_REDIS_URL'];
const inCI = process.env['CI'] === 'true' || process.env['CI'] === '1';

const backends: Array<[string, ((s: LimiterSettings) => Limiter) | null]> = [
  ['memory', (s) => createMemoryLimiter(s)],
  ['redis', redisUrl ? (s) => createRedisLimiter(redisUrl, s, `fc:test:${randomUUID()}:`) : null],
];

for (const [name, make] of backends) {
  t.test(`${name} limiter`, async (t) => {
    if (!make) {
      if (inCI) t.fail('FACECOMPUTE_TEST_REDIS_URL is not set: run `source scripts/test-services.sh; start_test_services`');
      else t.plan(0, 'skipped: FACECOMPUTE_TEST_REDIS_URL not set (source scripts/test-services.sh; start_test_services)');
      return;
    }
    const lim = make({ requests: 5, windowMs: 400, concurrent: 2 });
    t.teardown(() => lim.close());
    await lim.ping();

    t.test('window: N allowed, then refused, then reset', async (t) => {
      const key = randomUUID();
      for (let i = 0; i < 5; i++) {
        const r = await lim.hit(key);
        t.ok(r.allowed);
        t.equal(r.remaining, 4 - i);
        t.equal(r.limit, 5);
        t.ok(r.resetMs > 0 && r.resetMs <= 400);
      }
      const no = await lim.hit(key);
      t.notOk(no.allowed);
      t.equal(no.remaining, 0);
      t.ok((await lim.hit(randomUUID())).allowed, 'other keys unaffected');
      await new Promise((r) => setTimeout(r, 450));
      t.ok((await lim.hit(key)).allowed, 'new window');
    });

    t.test('window is atomic under parallel hits', async (t) => {
      const key = randomUUID();
      const rs = await Promise.all(Array.from({ length: 50 }, () => lim.hit(key)));
      t.equal(rs.filter((r) => r.allowed).length, 5);
    });

    t.test('concurrency slots', async (t) => {
      const key = randomUUID();
      const rs = await Promise.all(Array.from({ length: 10 }, () => lim.acquire(key)));
      t.equal(rs.filter((r) => r.allowed).length, 2, 'exactly the limit');
      t.notOk((await lim.acquire(key)).allowed);
      await lim.release(key);
      t.ok((await lim.acquire(key)).allowed, 'a released slot is reusable');
      await lim.release(key);
      await lim.release(key);
      await lim.release(key); // extra release never goes negative
      const again = await Promise.all([lim.acquire(key), lim.acquire(key), lim.acquire(key)]);
      t.equal(again.filter((r) => r.allowed).length, 2);
    });
  });
}
