/** Small statistics helpers shared by the benchmarks. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
}

export function summarize(samplesMs: number[]): { n: number; p50: number; p90: number; p99: number; mean: number; min: number; max: number } {
  const s = [...samplesMs].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
  return { n: s.length, p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), mean, min: s[0] ?? NaN, max: s[s.length - 1] ?? NaN };
}

export const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;
