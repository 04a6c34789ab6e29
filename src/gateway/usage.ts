/**
 * The gateway's usage record of one answered request (src/accounts/usage/recorder.ts keeps and writes
 * it off the request path). Only authenticated requests are recorded: they have an account to belong
 * to. A request whose caller went away before any answer is recorded as 499 (nginx's "client closed
 * request"), error `client_closed`.
 */
import type { UsageEvent, UsageSink } from '../accounts/usage/recorder.js';
import type { AuthenticatedKey } from '../accounts/api.js';
import type { UsageOutcome } from '../accounts/schema.js';

export interface AnsweredRequest {
  auth: AuthenticatedKey | undefined;
  route: string;
  /** The answer's status, or null when the caller went away first. */
  status: number | null;
  error: string | null;
  /** What its free call cost in the end (src/service/lifecycle/metering.ts). */
  outcome: UsageOutcome;
  t0: number;
  requestId: string;
}

export const CLIENT_CLOSED = 499;

export function usageEvent(r: AnsweredRequest & { auth: AuthenticatedKey }): UsageEvent {
  return {
    accountId: r.auth.accountId,
    keyId: r.auth.keyId,
    surface: 'rest',
    route: r.route,
    status: r.status ?? CLIENT_CLOSED,
    error: r.status === null ? 'client_closed' : r.error,
    outcome: r.outcome,
    durationMs: performance.now() - r.t0,
    requestId: r.requestId,
    at: Date.now(),
  };
}

export function recordUsage(sink: UsageSink | undefined, r: AnsweredRequest): void {
  if (sink && r.auth) sink.record(usageEvent(r as AnsweredRequest & { auth: AuthenticatedKey }));
}
