/**
 * The baseline the addon must beat: the straightforward TypeScript a service would otherwise run,
 * one loop per target over a Float32Array, summing in JS numbers (float64) like the addon does.
 */
import type { Metric } from '../../src/native/compare.js';

export function compareJs(query: Float32Array, targets: Float32Array, dims: number, metric: Metric): Float64Array {
  const n = targets.length / dims;
  const out = new Float64Array(n);
  let qq = 0;
  for (let j = 0; j < dims; j++) qq += query[j]! * query[j]!;
  const qn = Math.sqrt(qq);
  for (let i = 0; i < n; i++) {
    const base = i * dims;
    if (metric === 'euclidean') {
      let s = 0;
      for (let j = 0; j < dims; j++) {
        const d = query[j]! - targets[base + j]!;
        s += d * d;
      }
      out[i] = Math.sqrt(s);
      continue;
    }
    let dot = 0;
    let tt = 0;
    for (let j = 0; j < dims; j++) {
      const x = targets[base + j]!;
      dot += query[j]! * x;
      tt += x * x;
    }
    const tn = Math.sqrt(tt);
    const sim = qn * tn === 0 ? 0 : dot / (qn * tn);
    if (metric === 'cosine') out[i] = 1 - sim;
    else if (metric === 'angular') out[i] = Math.acos(Math.min(1, Math.max(-1, sim))) / Math.PI;
    else {
      const a = qn + 1e-10;
      const b = tn + 1e-10;
      out[i] = Math.sqrt(Math.max(0, qq / (a * a) + tt / (b * b) - (2 * dot) / (a * b)));
    }
  }
  return out;
}
