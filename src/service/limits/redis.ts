/**
 * Redis limiter: each operation is one atomic Lua script, so replicas never race.
 * Keys: fc:rl:w:<key> (window counter with PEXPIRE = window) and fc:rl:s:<key> (the account's
 * in-flight slots: a sorted set of slot ids scored by each slot's own deadline, on Redis's clock).
 * A slot ends when its request releases it or, if the replica holding it died, at its deadline; the
 * set itself expires after its latest deadline. (The old single counter had one TTL for all of an
 * account's slots, refreshed by each acquire: a request running past it, or one crash, reset the
 * account's count while others were still in flight.)
 * fc:rl:strike:<key> counts the account's strikes (PEXPIRE = the strike window, from the first).
 */
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../errors/index.js';
import { DEFAULT_SLOT_DEADLINE_MS, DEFAULT_STRIKE_WINDOW_MS, type ConcurrencyResult, type Limiter, type LimiterSettings, type StrikeCount, type WindowResult } from './limiter.js';

const HIT = `
local n = redis.call('INCRBY', KEYS[1], ARGV[2] or 1)
if n == tonumber(ARGV[2] or 1) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}`;

// ARGV: limit, slot id, deadline (ms from now).
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[1]) then return {0, n} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], tonumber(last[2]) + 1000)
return {1, n + 1}`;

const STRIKES = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
local ttl = redis.call('PTTL', KEYS[1])
return {n, ttl}`;

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
  const slotDeadlineMs = s.slotDeadlineMs ?? DEFAULT_SLOT_DEADLINE_MS;
  const strikeWindowMs = s.strikeWindowMs ?? DEFAULT_STRIKE_WINDOW_MS;
  return {
    kind: 'redis',
    async hit(key: string, cost = 1): Promise<WindowResult> {
      const [n, ttl] = (await guarded(() => redis.eval(HIT, 1, `${prefix}w:${key}`, String(s.windowMs), String(cost)))) as [number, number];
      return { allowed: n <= s.requests, limit: s.requests, remaining: Math.max(0, s.requests - n), resetMs: Math.max(0, ttl) };
    },
    async acquire(key: string): Promise<ConcurrencyResult> {
      const slot = randomUUID();
      const [ok, n] = (await guarded(() => redis.eval(ACQUIRE, 1, `${prefix}s:${key}`, String(s.concurrent), slot, String(slotDeadlineMs)))) as [number, number];
      return { allowed: ok === 1, limit: s.concurrent, inFlight: n, slot: ok === 1 ? slot : null };
    },
    async release(key: string, slot: string | null): Promise<void> {
      if (slot !== null) await redis.zrem(`${prefix}s:${key}`, slot);
    },
    async strike(key: string): Promise<StrikeCount> {
      // The window counter's script: the window starts at the first strike.
      const [n, ttl] = (await guarded(() => redis.eval(HIT, 1, `${prefix}strike:${key}`, String(strikeWindowMs)))) as [number, number];
      return { count: n, resetMs: Math.max(0, ttl) };
    },
    async strikes(key: string): Promise<StrikeCount> {
      const [n, ttl] = (await guarded(() => redis.eval(STRIKES, 1, `${prefix}strike:${key}`))) as [number, number];
      return { count: n, resetMs: Math.max(0, ttl) };
    },
    async ping(): Promise<void> {
      await redis.ping();
    },
    async close(): Promise<void> {
      redis.disconnect();
    },
  };
}
