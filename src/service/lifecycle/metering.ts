/**
 * Metering, one for every surface: the account's window of requests (with its RateLimit headers),
 * where a batch counts each of its elements, its concurrent slot, and its free calls, reserved right
 * before compute and settled by the answer (src/accounts/charging.ts). One place, so that a JSON-RPC
 * batch of 300 elements costs what 300 REST requests cost, and the refusals read the same. REST meters each request (the keyed door, door.ts, and the gateway's
 * request state settle it); MCP meters each tool call with `run`, over the same objects, so a call
 * costs what the same REST request costs and its refusals read the same.
 */
import type { AccountsPort, AuthenticatedKey } from '../../accounts/api.js';
import type { UsageOutcome } from '../../accounts/schema.js';
import { consumesCall } from '../../accounts/charging.js';
import { ServiceError, type ErrorCode } from '../../errors/index.js';
import type { Limiter, WindowResult } from '../limits/limiter.js';
import { strikeGuard, type StrikeSettings } from '../limits/strikes.js';
import type { FetchBudget } from '../limits/fetch-budget.js';
import type { ComputeContext } from '../compute-service.js';

export interface MeteringOptions {
  accounts: AccountsPort;
  limiter: Limiter;
  /** The window the limiter counts in (FACECOMPUTE_RATE_LIMIT_WINDOW_MS), for refusals and headers. */
  windowMs: number;
  /** The concurrency the RateLimit-Policy header states (FACECOMPUTE_RATE_LIMIT_CONCURRENT; REST). */
  concurrent?: number;
  strikes: StrikeSettings;
  /** The per-account budget of remote fetches (null when remote images are off). */
  fetchBudget: FetchBudget | null;
}

/** One metered call: its slot, and its free call once reserved. */
export class MeteredCall {
  private reserved = false;
  private refunded = false;
  private settled = false;
  private released = false;

  constructor(
    private readonly accounts: AccountsPort,
    private readonly limiter: Limiter,
    readonly accountId: string,
    private readonly slot: string | null,
  ) {}

  /** Reserves the free call (ComputeContext.reserve); idempotent. */
  readonly reserve = async (): Promise<void> => {
    if (this.reserved) return;
    await this.accounts.consume(this.accountId);
    this.reserved = true;
  };

  /**
   * Settles the reserved call by the answer, once: kept when compute ran, given back otherwise. A
   * status of null is a caller gone before any answer. `onRefundError` sees a refund that failed.
   */
  async settle(status: number | null, code: ErrorCode | null | undefined, onRefundError?: (err: unknown) => void): Promise<void> {
    if (!this.reserved || this.settled) return;
    this.settled = true;
    if (status !== null && consumesCall(status, code)) return;
    await this.accounts.refund(this.accountId).then(
      () => {
        this.refunded = true;
      },
      (err: unknown) => onRefundError?.(err),
    );
  }

  /** What the call cost in the end (the usage record). */
  get outcome(): UsageOutcome {
    return !this.reserved ? 'not_charged' : this.refunded ? 'refunded' : 'charged';
  }

  /** Gives the slot back, once. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.limiter.release(this.accountId, this.slot).catch(() => undefined);
  }
}

export class Metering {
  constructor(readonly o: MeteringOptions) {}

  /**
   * Counts `cost` requests (a batch's elements) against the account's window. The result is returned
   * whether or not it is allowed (REST sends its headers either way); `refuseOver` throws.
   */
  async count(accountId: string, cost = 1): Promise<WindowResult> {
    return this.o.limiter.hit(accountId, cost);
  }

  /** The RateLimit headers (draft-ietf-httpapi-ratelimit-headers) of a window result. */
  headers(w: WindowResult): Record<string, string> {
    const resetS = Math.ceil(w.resetMs / 1000);
    const windowS = Math.ceil(this.o.windowMs / 1000);
    return {
      'ratelimit-limit': String(w.limit),
      'ratelimit-remaining': String(w.remaining),
      'ratelimit-reset': String(resetS),
      'ratelimit-policy': `"default";q=${w.limit};w=${windowS}, "concurrency";q=${this.o.concurrent ?? 0}`,
      ratelimit: `"default";r=${w.remaining};t=${resetS}`,
    };
  }

  /** Throws `429 rate_limited` with Retry-After when `w` is past its limit. */
  refuseOver(w: WindowResult): void {
    if (w.allowed) return;
    const seconds = Math.max(1, Math.ceil(w.resetMs / 1000));
    throw new ServiceError('rate_limited', `rate limit of ${w.limit} requests per ${Math.ceil(this.o.windowMs / 1000)} s exceeded; retry in ${seconds} s`, { headers: { 'retry-after': String(seconds) } });
  }

  /** Counts one request and throws when it is past the window. */
  async countOrRefuse(accountId: string): Promise<void> {
    this.refuseOver(await this.count(accountId));
  }

  /**
   * Refuses a key whose window is spent, without counting (MCP's door: each JSON-RPC element counts
   * when it runs). A limiter that cannot answer is not decided here: each element's count fails
   * closed for it. `close` adds Connection: close (a body was declared and will not be read).
   */
  async refuseSpent(accountId: string, close: boolean): Promise<void> {
    const w = await this.o.limiter.hit(accountId, 0).catch(() => null);
    if (w === null || w.remaining > 0) return;
    const seconds = Math.max(1, Math.ceil(w.resetMs / 1000));
    throw new ServiceError('rate_limited', `rate limit of ${w.limit} requests per ${Math.ceil(this.o.windowMs / 1000)} s exceeded; retry in ${seconds} s`, {
      headers: { 'retry-after': String(seconds), ...(close ? { connection: 'close' } : {}) },
    });
  }

  /** Opens one metered call: takes one of the account's concurrent slots (rate_limited past them). */
  async open(accountId: string): Promise<MeteredCall> {
    const c = await this.o.limiter.acquire(accountId);
    if (!c.allowed) throw new ServiceError('rate_limited', `at most ${c.limit} concurrent requests per account`, { headers: { 'retry-after': '1' } });
    return new MeteredCall(this.o.accounts, this.o.limiter, accountId, c.slot);
  }

  /** The compute context's metering part for `key`: strikes, the fetch budget, and `call`'s reserve. */
  context(key: AuthenticatedKey, requestId: string, call?: MeteredCall): ComputeContext {
    return {
      requestId,
      authenticated: true,
      ...(this.o.fetchBudget ? { fetches: this.o.fetchBudget.meter(key.accountId) } : {}),
      strikes: strikeGuard(this.o.limiter, key.accountId, this.o.strikes),
      ...(call ? { reserve: call.reserve } : {}),
    };
  }

  /**
   * One metered call around `work` (an MCP tool call): the slot for its length, the free call
   * reserved by `work` through the reserve it is given and settled by how it ends, as on REST.
   * `settled` learns the outcome (the usage record).
   */
  async run<T>(accountId: string, work: (call: MeteredCall) => Promise<T>, settled?: (outcome: UsageOutcome) => void): Promise<T> {
    const call = await this.open(accountId);
    try {
      const r = await work(call);
      await call.settle(200, null);
      return r;
    } catch (err) {
      const e = err instanceof ServiceError ? err : null;
      await call.settle(e?.status ?? 500, e?.code);
      throw err;
    } finally {
      settled?.(call.outcome);
      await call.release();
    }
  }
}
