/**
 * DeepFace's distance formulas (reference §4.1) in float64, for the few pairs a verify compares.
 * One-against-many comparisons use the native SIMD kernels instead (src/native/compare.ts).
 */
import { DISTANCE_METRICS, type DistanceMetric } from '../vocabulary/closed-sets.js';

export { DISTANCE_METRICS };

function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] as number) * (b[i] as number);
  return s;
}

function norm(a: ArrayLike<number>): number {
  return Math.sqrt(dot(a, a));
}

/**
 * a·b / (‖a‖‖b‖), or 0 when either is a zero vector. DeepFace's pairwise form divides 0 by 0 there
 * (NaN; its verify then skips the pair and answers distance inf, not verified); its batch form, which
 * normalises rows with ε = 1e-10, gives 0, and so do the native kernels (crates/facecompute-core
 * compare/metric.rs `cosine_similarity`): a zero vector has no direction, so it is as far from every
 * vector as an orthogonal one (cosine 1, angular 0.5) on every path. test/distance.test.ts checks this
 * against DeepFace's own functions.
 */
function cosineSimilarity(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const denominator = norm(a) * norm(b);
  return denominator === 0 ? 0 : dot(a, b) / denominator;
}

export function distance(a: ArrayLike<number>, b: ArrayLike<number>, metric: DistanceMetric): number {
  if (a.length !== b.length) throw new RangeError('vectors differ in length');
  switch (metric) {
    case 'cosine':
      return 1 - cosineSimilarity(a, b);
    case 'angular':
      // DeepFace does not clip; rounding noise above 1 would give NaN, so we clamp.
      return Math.acos(Math.min(1, Math.max(-1, cosineSimilarity(a, b)))) / Math.PI;
    case 'euclidean': {
      let s = 0;
      for (let i = 0; i < a.length; i++) {
        const d = (a[i] as number) - (b[i] as number);
        s += d * d;
      }
      return Math.sqrt(s);
    }
    case 'euclidean_l2': {
      const na = norm(a) + 1e-10;
      const nb = norm(b) + 1e-10;
      let s = 0;
      for (let i = 0; i < a.length; i++) {
        const d = (a[i] as number) / na - (b[i] as number) / nb;
        s += d * d;
      }
      return Math.sqrt(s);
    }
  }
}

/** x/‖x‖, leaving a zero vector unchanged as DeepFace does. */
export function l2normalize(v: ArrayLike<number>): number[] {
  const n = norm(v);
  const out = Array.from(v, Number);
  if (n === 0) return out;
  return out.map((x) => x / n);
}
