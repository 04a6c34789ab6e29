/**
 * What the console's Usage page and GET /api/usage show of one account: requests per UTC day over the
 * last days, per key and per route, split by what they cost, and the most recent requests. Read from the
 * tables src/accounts/usage/recorder.ts writes; every query is bounded by the account and the days.
 */
import type { Kysely } from 'kysely';
import type { Database, UsageOutcome } from '../schema.js';
import { RECENT_PER_ACCOUNT, utcDay } from './recorder.js';

/** Requests by what they cost: kept free calls, given-back ones, 4xx refusals, and other free answers. */
export interface UsageCounts {
  /** A free call was used (a result, or no face found). */
  charged: number;
  /** A free call was taken, then given back (a failure on our side, a caller gone). */
  refunded: number;
  /** Refused before compute with a 4xx (bad input, 401, 402, 429, …): never charged. */
  refused: number;
  /** Not charged otherwise: free tools (get_capabilities, search_docs), capacity refusals (503). */
  free: number;
  total: number;
}

export interface UsageDay extends UsageCounts {
  day: string;
}

export interface UsageByKey extends UsageCounts {
  key_id: string;
  name: string | null;
  prefix: string | null;
  kind: 'rest' | 'mcp' | null;
  revoked: boolean;
}

export interface UsageByRoute extends UsageCounts {
  route: string;
}

export interface RecentRequest {
  at: string;
  key_id: string | null;
  key_name: string | null;
  surface: 'rest' | 'mcp';
  route: string;
  status: number;
  error: string | null;
  outcome: UsageOutcome;
  duration_ms: number;
  request_id: string;
}

export interface UsageReport {
  from: string;
  to: string;
  days: UsageDay[];
  totals: UsageCounts;
  by_key: UsageByKey[];
  by_route: UsageByRoute[];
  recent: RecentRequest[];
}

const empty = (): UsageCounts => ({ charged: 0, refunded: 0, refused: 0, free: 0, total: 0 });

function add(c: UsageCounts, outcome: UsageOutcome, statusClass: string, n: number): void {
  if (outcome === 'charged') c.charged += n;
  else if (outcome === 'refunded') c.refunded += n;
  else if (statusClass === '4xx') c.refused += n;
  else c.free += n;
  c.total += n;
}

const DAY_MS = 86_400_000;

export async function usageReport(db: Kysely<Database>, accountId: string, opts: { days?: number; now?: number } = {}): Promise<UsageReport> {
  const days = opts.days ?? 30;
  const now = opts.now ?? Date.now();
  const to = utcDay(now);
  const from = utcDay(now - (days - 1) * DAY_MS);
  const rows = await db
    .selectFrom('usage_daily')
    .select(['day', 'key_id', 'route', 'outcome', 'status_class', 'calls'])
    .where('account_id', '=', accountId)
    .where('day', '>=', from)
    .execute();
  const keys = await db.selectFrom('api_keys').select(['id', 'name', 'prefix', 'kind', 'revoked_at']).where('account_id', '=', accountId).execute();
  const keyById = new Map(keys.map((k) => [k.id, k]));

  const byDay = new Map<string, UsageDay>();
  for (let i = days - 1; i >= 0; i--) {
    const day = utcDay(now - i * DAY_MS);
    byDay.set(day, { day, ...empty() });
  }
  const totals = empty();
  const byKey = new Map<string, UsageByKey>();
  const byRoute = new Map<string, UsageByRoute>();
  for (const r of rows) {
    const n = Number(r.calls);
    const d = byDay.get(r.day);
    if (d) add(d, r.outcome, r.status_class, n);
    add(totals, r.outcome, r.status_class, n);
    let k = byKey.get(r.key_id);
    if (!k) {
      const key = keyById.get(r.key_id);
      k = { key_id: r.key_id, name: key?.name ?? null, prefix: key?.prefix ?? null, kind: key?.kind ?? null, revoked: key?.revoked_at != null, ...empty() };
      byKey.set(r.key_id, k);
    }
    add(k, r.outcome, r.status_class, n);
    const route = byRoute.get(r.route) ?? byRoute.set(r.route, { route: r.route, ...empty() }).get(r.route)!;
    add(route, r.outcome, r.status_class, n);
  }

  const recentRows = await db
    .selectFrom('usage_recent')
    .select(['key_id', 'surface', 'route', 'status', 'error', 'outcome', 'duration_ms', 'request_id', 'created_at'])
    .where('account_id', '=', accountId)
    .orderBy('id', 'desc')
    .limit(RECENT_PER_ACCOUNT)
    .execute();
  const recent: RecentRequest[] = recentRows.map((r) => ({
    at: r.created_at,
    key_id: r.key_id,
    key_name: r.key_id ? (keyById.get(r.key_id)?.name ?? null) : null,
    surface: r.surface,
    route: r.route,
    status: Number(r.status),
    error: r.error,
    outcome: r.outcome,
    duration_ms: Number(r.duration_ms),
    request_id: r.request_id,
  }));

  // Most used first; ties by name, so that the page's order does not change between loads.
  const byTotal =
    <T extends UsageCounts>(name: (x: T) => string) =>
    (a: T, b: T) =>
      b.total - a.total || (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0);
  return {
    from,
    to,
    days: [...byDay.values()],
    totals,
    by_key: [...byKey.values()].sort(byTotal((k) => k.name ?? k.key_id)),
    by_route: [...byRoute.values()].sort(byTotal((r) => r.route)),
    recent,
  };
}
