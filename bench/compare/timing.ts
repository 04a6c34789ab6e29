/** Median-of-runs timing: warm up once, then repeat until both a minimum count and time are reached. */
import { performance } from 'node:perf_hooks';

export interface TimingOptions {
  minRuns?: number;
  minSeconds?: number;
  maxRuns?: number;
}

export async function medianSeconds(fn: () => unknown, options: TimingOptions = {}): Promise<number> {
  const { minRuns = 5, minSeconds = 0.3, maxRuns = 200 } = options;
  await fn();
  const samples: number[] = [];
  const started = performance.now();
  while (samples.length < maxRuns && (samples.length < minRuns || (performance.now() - started) / 1000 < minSeconds)) {
    const t0 = performance.now();
    await fn();
    samples.push((performance.now() - t0) / 1000);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}
