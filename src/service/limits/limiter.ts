/**
 * One limiter interface for both backends: a fixed window of requests per account, a cap on an
 * account's concurrent in-flight requests, and a fixed window of strikes (requests lost with their
 * model server). The in-memory backend serves a single process; the Redis
 * backend (atomic Lua) is shared by every gateway and MCP replica.
 */
export interface WindowResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
}

export interface ConcurrencyResult {
  allowed: boolean;
  limit: number;
  inFlight: number;
  /** The slot taken (give it to release); null when refused. */
  slot: string | null;
}

/** An account's strikes (src/service/limits/strikes.ts) in its current window. */
export interface StrikeCount {
  count: number;
  /** Milliseconds until the window ends (0 when there is none). */
  resetMs: number;
}

export interface Limiter {
  readonly kind: 'memory' | 'redis';
  /** Counts `cost` requests (1 when not given) against `key`'s current window. */
  hit(key: string, cost?: number): Promise<WindowResult>;
  /**
   * Takes one in-flight slot for `key`, its own, held until release or its deadline
   * (LimiterSettings.slotDeadlineMs): a replica that dies holding it loses it then, and no other
   * request's slot expires with it. Call release once with the slot of every allowed acquire.
   */
  acquire(key: string): Promise<ConcurrencyResult>;
  release(key: string, slot: string | null): Promise<void>;
  /** Counts one strike against `key`; the window (LimiterSettings.strikeWindowMs) starts at the first. */
  strike(key: string): Promise<StrikeCount>;
  /** `key`'s strikes in its current window. */
  strikes(key: string): Promise<StrikeCount>;
  /** Throws when the backend is unreachable (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface LimiterSettings {
  requests: number;
  windowMs: number;
  concurrent: number;
  /**
   * How long one slot may be held: longer than any request can live (its receive time, queue wait and
   * upstream calls), so it ends only when its own holder is gone. Default 10 minutes.
   */
  slotDeadlineMs?: number;
  /** The window strikes are counted in (FACECOMPUTE_STRIKE_WINDOW_MS); 24 h when not given. */
  strikeWindowMs?: number;
}

export const DEFAULT_SLOT_DEADLINE_MS = 600_000;

export const DEFAULT_STRIKE_WINDOW_MS = 86_400_000;
