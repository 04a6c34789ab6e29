/**
 * The per-account request limits every surface applies alike (REST's auth-limits plugin, the MCP
 * endpoint): the fixed window of requests, where a batch counts each of its elements, and the
 * account's concurrent slot. One place, so that a JSON-RPC batch of 300 elements costs what 300 REST
 * requests cost, and the refusals read the same.
 */
import { ServiceError } from '../../errors/index.js';
import type { Limiter, WindowResult } from './limiter.js';

/**
 * Counts `cost` requests (a batch's elements) against `accountId`'s window of `windowMs`. The result
 * is returned whether or not it is allowed (REST sends its headers either way); `refuseOver` throws.
 */
export async function countRequests(limiter: Limiter, accountId: string, cost = 1): Promise<WindowResult> {
  return limiter.hit(accountId, cost);
}

/** Throws `429 rate_limited` with Retry-After when `w` is past its limit. */
export function refuseOver(w: WindowResult, windowMs: number): void {
  if (w.allowed) return;
  const seconds = Math.max(1, Math.ceil(w.resetMs / 1000));
  throw new ServiceError('rate_limited', `rate limit of ${w.limit} requests per ${Math.ceil(windowMs / 1000)} s exceeded; retry in ${seconds} s`, { headers: { 'retry-after': String(seconds) } });
}

/** Takes one of `accountId`'s concurrent slots; throws rate_limited when it holds them all. */
export async function takeSlot(limiter: Limiter, accountId: string): Promise<string | null> {
  const c = await limiter.acquire(accountId);
  if (!c.allowed) throw new ServiceError('rate_limited', `at most ${c.limit} concurrent requests per account`, { headers: { 'retry-after': '1' } });
  return c.slot;
}

/** The RateLimit headers (draft-ietf-httpapi-ratelimit-headers) of a window result. */
export function rateLimitHeaders(w: WindowResult, windowMs: number, concurrent: number): Record<string, string> {
  const resetS = Math.ceil(w.resetMs / 1000);
  const windowS = Math.ceil(windowMs / 1000);
  return {
    'ratelimit-limit': String(w.limit),
    'ratelimit-remaining': String(w.remaining),
    'ratelimit-reset': String(resetS),
    'ratelimit-policy': `"default";q=${w.limit};w=${windowS}, "concurrency";q=${concurrent}`,
    ratelimit: `"default";r=${w.remaining};t=${resetS}`,
  };
}
