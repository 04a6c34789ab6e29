/**
 * The per-account budget of remote image fetches (FACECOMPUTE_REMOTE_FETCHES_PER_MINUTE and
 * _FETCH_BYTES_PER_MINUTE): fetching is work done on the caller's behalf, aimed at a third party.
 * When a failed fetch was refunded and nothing else counted, one key could have the service
 * download about 19 GB a minute from anyone. Each fetch counts one against the account's fetches
 * before it starts, and its downloaded bytes (image or not, complete or cut off) against its bytes
 * once it ends; a fetch is refused `429 rate_limited` when either window is spent. The windows are
 * the shared limiter's (memory or Redis), under their own keys.
 */
import { ServiceError } from '../../errors/index.js';
import type { Limiter } from './limiter.js';

/** One request's view of its account's budget (InputContext.fetches). */
export interface FetchMeter {
  /** Counts one fetch; throws rate_limited when the account's fetches or bytes are spent. */
  admit(): Promise<void>;
  /** Counts the bytes a fetch downloaded. */
  spent(bytes: number): Promise<void>;
}

export class FetchBudget {
  constructor(
    /** Windows of fetches and of bytes, one minute each, keyed by account. */
    private readonly fetches: Limiter,
    private readonly bytes: Limiter,
  ) {}

  meter(accountId: string): FetchMeter {
    return {
      admit: async () => {
        const b = await this.bytes.hit(accountId, 0);
        if (b.remaining <= 0) throw refusal(`this account fetched its ${b.limit} bytes of remote images for this minute`, b.resetMs);
        const n = await this.fetches.hit(accountId);
        if (!n.allowed) throw refusal(`this account started its ${n.limit} remote image fetches for this minute`, n.resetMs);
      },
      spent: async (bytes: number) => {
        if (bytes > 0) await this.bytes.hit(accountId, bytes).catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    await Promise.all([this.fetches.close(), this.bytes.close()]);
  }
}

function refusal(what: string, resetMs: number): ServiceError {
  const s = Math.max(1, Math.ceil(resetMs / 1000));
  return new ServiceError('rate_limited', `${what}; retry in ${s} s, or send the image bytes instead of a URL`, { headers: { 'retry-after': String(s) } });
}
