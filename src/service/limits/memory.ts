import { DEFAULT_STRIKE_WINDOW_MS, type ConcurrencyResult, type Limiter, type LimiterSettings, type StrikeCount, type WindowResult } from './limiter.js';

export function createMemoryLimiter(s: LimiterSettings, now: () => number = Date.now): Limiter {
  const windows = new Map<string, { start: number; count: number }>();
  const inFlight = new Map<string, Set<string>>();
  let slots = 0;
  const strikeWindowMs = s.strikeWindowMs ?? DEFAULT_STRIKE_WINDOW_MS;
  const strikes = new Map<string, { start: number; count: number }>();
  let lastSweep = now();
  function sweep(t: number): void {
    if (t - lastSweep < s.windowMs) return;
    lastSweep = t;
    for (const [k, w] of windows) if (t - w.start >= s.windowMs) windows.delete(k);
    for (const [k, w] of strikes) if (t - w.start >= strikeWindowMs) strikes.delete(k);
  }
  function strikesOf(key: string, t: number): StrikeCount {
    const w = strikes.get(key);
    if (!w || t - w.start >= strikeWindowMs) return { count: 0, resetMs: 0 };
    return { count: w.count, resetMs: w.start + strikeWindowMs - t };
  }
  return {
    kind: 'memory',
    async hit(key: string, cost = 1): Promise<WindowResult> {
      const t = now();
      sweep(t);
      let w = windows.get(key);
      if (!w || t - w.start >= s.windowMs) {
        w = { start: t, count: 0 };
        windows.set(key, w);
      }
      w.count += cost;
      const resetMs = Math.max(0, w.start + s.windowMs - t);
      return { allowed: w.count <= s.requests, limit: s.requests, remaining: Math.max(0, s.requests - w.count), resetMs };
    },
    // One process: its slots end with it, so no deadline is needed; a set, so a slot frees once.
    async acquire(key: string): Promise<ConcurrencyResult> {
      const held = inFlight.get(key) ?? new Set<string>();
      if (held.size >= s.concurrent) return { allowed: false, limit: s.concurrent, inFlight: held.size, slot: null };
      const slot = String(++slots);
      held.add(slot);
      inFlight.set(key, held);
      return { allowed: true, limit: s.concurrent, inFlight: held.size, slot };
    },
    async release(key: string, slot: string | null): Promise<void> {
      const held = inFlight.get(key);
      if (slot === null || !held) return;
      held.delete(slot);
      if (held.size === 0) inFlight.delete(key);
    },
    async strike(key: string): Promise<StrikeCount> {
      const t = now();
      sweep(t);
      const w = strikes.get(key);
      if (!w || t - w.start >= strikeWindowMs) strikes.set(key, { start: t, count: 1 });
      else w.count++;
      return strikesOf(key, t);
    },
    async strikes(key: string): Promise<StrikeCount> {
      return strikesOf(key, now());
    },
    async ping(): Promise<void> {},
    async close(): Promise<void> {},
  };
}
