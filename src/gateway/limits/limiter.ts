/**
 * One limiter interface for both backends: a fixed window of requests per account and a cap on an
 * account's concurrent in-flight requests. The in-memory backend serves a single process; the Redis
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
}

export interface Limiter {
  readonly kind: 'memory' | 'redis';
  /** Counts one request against `key`'s current window. */
  hit(key: string): Promise<WindowResult>;
  /** Takes one in-flight slot for `key`; call release once for every allowed acquire. */
  acquire(key: string): Promise<ConcurrencyResult>;
  release(key: string): Promise<void>;
  /** Throws when the backend is unreachable (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface LimiterSettings {
  requests: number;
  windowMs: number;
  concurrent: number;
}
