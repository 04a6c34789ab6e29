/**
 * One metered tool call: the account's concurrent slot, as on REST (src/service/limits/account-limits.ts;
 * the window was counted when the JSON-RPC element arrived, src/mcp/server.ts), and one free call reserved atomically and settled by the outcome as on REST (src/accounts/charging.ts):
 * kept when compute ran (a result, or no_face_detected), given back for every other error.
 */
import { ServiceError } from '../errors/index.js';
import type { AccountsPort } from '../accounts/api.js';
import { consumesCall } from '../accounts/charging.js';
import type { Limiter } from '../service/limits/limiter.js';
import { takeSlot } from '../service/limits/account-limits.js';
import type { UsageOutcome } from '../accounts/schema.js';

export interface MeteringDeps {
  accounts: AccountsPort;
  limiter: Limiter;
}

/**
 * `work` receives `reserve`, which it calls right before its compute starts (ComputeContext.reserve):
 * a call refused by the checks before that never touches the allowance. `settled` learns what the call
 * cost in the end (the usage record).
 */
export async function metered<T>(deps: MeteringDeps, accountId: string, work: (reserve: () => Promise<void>) => Promise<T>, settled?: (outcome: UsageOutcome) => void): Promise<T> {
  const slot = await takeSlot(deps.limiter, accountId);
  let reserved = false;
  let refunded = false;
  const reserve = async () => {
    if (reserved) return;
    await deps.accounts.consume(accountId);
    reserved = true;
  };
  try {
    return await work(reserve);
  } catch (err) {
    const e = err instanceof ServiceError ? err : null;
    if (reserved && !consumesCall(e?.status ?? 500, e?.code)) {
      await deps.accounts.refund(accountId).then(
        () => {
          refunded = true;
        },
        () => undefined,
      );
    }
    throw err;
  } finally {
    settled?.(!reserved ? 'not_charged' : refunded ? 'refunded' : 'charged');
    await deps.limiter.release(accountId, slot).catch(() => undefined);
  }
}
