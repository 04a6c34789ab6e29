/**
 * The usage record of one answered request or tool call, the same for every surface
 * (src/accounts/usage/recorder.ts keeps and writes it off the request path). Only authenticated
 * requests are recorded: they have an account to belong to. A request whose caller went away before
 * any answer is recorded as 499 (nginx's "client closed request"), error `client_closed`. An MCP tool
 * call's status is the REST status of the same answer, so the Usage page counts both alike.
 */
import type { UsageEvent, UsageSink } from '../../accounts/usage/recorder.js';
import type { AuthenticatedKey } from '../../accounts/api.js';
import type { UsageOutcome } from '../../accounts/schema.js';

export interface AnsweredRequest {
  surface: UsageEvent['surface'];
  auth: AuthenticatedKey | undefined;
  /** The route, or the MCP tool's name. */
  route: string;
  /** The answer's status, or null when the caller went away first. */
  status: number | null;
  error: string | null;
  /** What its free call cost in the end (metering.ts). */
  outcome: UsageOutcome;
  t0: number;
  requestId: string;
}

export const CLIENT_CLOSED = 499;

export function recordUsage(sink: UsageSink | undefined, r: AnsweredRequest): void {
  if (!sink || !r.auth) return;
  sink.record({
    accountId: r.auth.accountId,
    keyId: r.auth.keyId,
    surface: r.surface,
    route: r.route,
    status: r.status ?? CLIENT_CLOSED,
    error: r.status === null ? 'client_closed' : r.error,
    outcome: r.outcome,
    durationMs: performance.now() - r.t0,
    requestId: r.requestId,
    at: Date.now(),
  });
}
