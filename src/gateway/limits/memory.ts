import type { ConcurrencyResult, Limiter, LimiterSettings, WindowResult } from './limiter.js';

export function createMemoryLimiter(s: LimiterSettings, now: () => number = Date.now): Limiter {
  const windows = new Map<string, { start: number; count: number }>();
  const inFlight = new Map<string, number>();
  let lastSweep = now();
  function sweep(t: number): void {
    if (t - lastSweep < s.windowMs) return;
    lastSweep = t;
    for (const [k, w] of windows) if (t - w.start >= s.windowMs) windows.delete(k);
  }
  return {
    kind: 'memory',
    async hit(key: string): Promise<WindowResult> {
      const t = now();
      sweep(t);
      let w = windows.get(key);
      if (!w || t - w.start >= s.windowMs) {
        w = { start: t, count: 0 };
        windows.set(key, w);
      }
      w.count++;
      const resetMs = Math.max(0, w.start + s.windowMs - t);
      return { allowed: w.count <= s.requests, limit: s.requests, remaining: Math.max(0, s.requests - w.count), resetMs };
    },
    async acquire(key: string): Promise<ConcurrencyResult> {
      const n = inFlight.get(key) ?? 0;
      if (n >= s.concurrent) return { allowed: false, limit: s.concurrent, inFlight: n };
      inFlight.set(key, n + 1);
      return { allowed: true, limit: s.concurrent, inFlight: n + 1 };
    },
    async release(key: string): Promise<void> {
      const n = (inFlight.get(key) ?? 0) - 1;
      if (n <= 0) inFlight.delete(key);
      else inFlight.set(key, n);
    },
    async ping(): Promise<void> {},
    async close(): Promise<void> {},
  };
}
