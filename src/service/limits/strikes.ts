/**
 * Strikes: requests of an account that were lost with their model server (`502 upstream_lost`: the
 * model server stopped while computing a frame it had received). Such a failure is presumed to be
 * the input's doing, so it is not refunded (src/accounts/charging.ts) and it is not retried
 * (src/model-client/client.ts); each is also a strike. An account with FACECOMPUTE_STRIKE_LIMIT
 * strikes within FACECOMPUTE_STRIKE_WINDOW_MS (counted from its first) gets `429 too_many_strikes`,
 * with Retry-After until the window ends, for every request that would reach a model server (images);
 * requests with embeddings only still run. Counted by the shared limiter (Redis when configured), so
 * every gateway and MCP replica sees the same strikes. Without them, one credit bought endless crashes.
 */
import { ServiceError } from '../../errors/index.js';
import type { Limiter } from './limiter.js';

export interface StrikeSettings {
  limit: number;
  windowMs: number;
}

/** What compute does with an account's strikes (ComputeContext.strikes). */
export interface StrikeGuard {
  /** Throws `too_many_strikes` when the account has used up its strikes. */
  check(): Promise<void>;
  /** Counts a strike: the account's request was lost with its model server. */
  record(): Promise<void>;
}

export function strikeGuard(limiter: Limiter, accountId: string, s: StrikeSettings): StrikeGuard {
  return {
    async check() {
      const n = await limiter.strikes(accountId);
      if (n.count < s.limit) return;
      const seconds = Math.max(1, Math.ceil(n.resetMs / 1000));
      throw new ServiceError(
        'too_many_strikes',
        `${n.count} requests of this account were lost with their model server (it stopped while computing them) within ${Math.round(s.windowMs / 3_600_000)} h; requests with images are refused for ${seconds} s (requests with embeddings only still run)`,
        { headers: { 'retry-after': String(seconds) } },
      );
    },
    async record() {
      await limiter.strike(accountId);
    },
  };
}
