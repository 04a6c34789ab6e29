/**
 * One metered tool call: the same per-account limits as REST (the shared limiter, keyed by account),
 * one free call consumed atomically, refunded when the failure is ours (5xx).
 */
import { ServiceError } from '../errors/index.js';
import type { AccountsPort } from '../accounts/ports.js';
import type { Limiter } from '../gateway/limits/limiter.js';

export interface MeteringDeps {
  accounts: AccountsPort;
  limiter: Limiter;
}

export async function metered<T>(deps: MeteringDeps, accountId: string, work: () => Promise<T>): Promise<T> {
  const win = await deps.limiter.hit(accountId);
  if (!win.allowed) {
    const seconds = Math.max(1, Math.ceil(win.resetMs / 1000));
    throw new ServiceError('rate_limited', `rate limit of ${win.limit} requests reached; retry in ${seconds} s`, { headers: { 'retry-after': String(seconds) } });
  }
  const slot = await deps.limiter.acquire(accountId);
  if (!slot.allowed) {
    throw new ServiceError('rate_limited', `at most ${slot.limit} concurrent requests per account`, { headers: { 'retry-after': '1' } });
  }
  try {
    await deps.accounts.consume(accountId);
    try {
      return await work();
    } catch (err) {
      // A call that failed on our side is given back; the caller's mistakes (4xx) are not.
      const status = err instanceof ServiceError ? err.status : 500;
      if (status >= 500) await deps.accounts.refund(accountId).catch(() => undefined);
      throw err;
    }
  } finally {
    await deps.limiter.release(accountId).catch(() => undefined);
  }
}
