/**
 * Redis limiter: each operation is one atomic Lua script, so replicas never race.
 * Keys: fc:rl:w:<key> (window counter with PEXPIRE = window) and fc:rl:c:<key> (in-flight counter,
 * with a safety TTL so a crashed replica's slots expire).
 */
import { Redis } from 'ioredis';
import { ServiceError } from '../../errors/index.js';
import type { ConcurrencyResult, Limiter, LimiterSettings, WindowResult } from './limiter.js';

const HIT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}`;

const ACQUIRE = `
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if n > tonumber(ARGV[1]) then redis.call('DECR', KEYS[1]); return {0, n - 1} end
return {1, n}`;

const RELEASE = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n <= 1 then redis.call('DEL', KEYS[1]); return 0 end
return redis.call('DECR', KEYS[1])`;

export function createRedisLimiter(url: string, s: LimiterSettings, prefix = 'fc:rl:'): Limiter {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: true, commandTimeout: 1000, connectTimeout: 2000, retryStrategy: (n) => Math.min(n * 200, 2000) });
  redis.on('error', () => undefined); // surfaced through ping()/commands; ioredis reconnects by itself
  /** Any Redis failure on the request path: fail closed, as a 502 naming the limiter (never the Redis error). */
  async function guarded<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      throw new ServiceError('upstream_failed', 'the rate limiter backend is unavailable', { cause: err });
    }
  }
  const slotTtl = Math.max(60_000, s.windowMs * 2);
  return {
    kind: 'redis',
    async hit(key: string): Promise<WindowResult> {
      const [n, ttl] = (await guarded(() => redis.eval(HIT, 1, `${prefix}w:${key}`, String(s.windowMs)))) as [number, number];
      return { allowed: n <= s.requests, limit: s.requests, remaining: Math.max(0, s.requests - n), resetMs: Math.max(0, ttl) };
    },
    async acquire(key: string): Promise<ConcurrencyResult> {
      const [ok, n] = (await guarded(() => redis.eval(ACQUIRE, 1, `${prefix}c:${key}`, String(s.concurrent), String(slotTtl)))) as [number, number];
      return { allowed: ok === 1, limit: s.concurrent, inFlight: n };
    },
    async release(key: string): Promise<void> {
      await redis.eval(RELEASE, 1, `${prefix}c:${key}`);
    },
    async ping(): Promise<void> {
      await redis.ping();
    },
    async close(): Promise<void> {
      redis.disconnect();
    },
  };
}
