/**
 * Best-of-runs timing. The benchmark machine is shared (other jobs compete for its cores), so the
 * fastest run is the best estimate of what the code can do; medians mostly measure the neighbours.
 * Implementations that are compared with each other are timed interleaved, run by run, so that a
 * burst of outside load hits them alike.
 */
import { performance } from 'node:perf_hooks';

export interface TimingOptions {
  minRuns?: number;
  minSeconds?: number;
  maxRuns?: number;
}

/** Best seconds of each function, timed round-robin after one warm-up call each. */
export async function bestSecondsInterleaved(fns: Array<() => unknown>, options: TimingOptions = {}): Promise<number[]> {
  const { minRuns = 7, minSeconds = 0.5, maxRuns = 200 } = options;
  for (const fn of fns) await fn();
  const best = fns.map(() => Number.POSITIVE_INFINITY);
  const started = performance.now();
  for (let run = 0; run < maxRuns && (run < minRuns || (performance.now() - started) / 1000 < minSeconds); run++) {
    for (let i = 0; i < fns.length; i++) {
      const t0 = performance.now();
      await fns[i]!();
      best[i] = Math.min(best[i]!, (performance.now() - t0) / 1000);
    }
  }
  return best;
}

export async function bestSeconds(fn: () => unknown, options: TimingOptions = {}): Promise<number> {
  return (await bestSecondsInterleaved([fn], options))[0]!;
}
