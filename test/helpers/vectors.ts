/** Seeded test vectors, so that a failure reproduces. */

/** `n` rows of `dims` values in [-1, 1), from a linear congruential generator seeded with `seed`. */
export function seededMatrix(n: number, dims: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n * dims);
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 32) * 2 - 1;
  }
  return out;
}
