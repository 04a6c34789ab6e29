import t from 'tap';
import {
  compareOneToMany,
  decodeVectorsB64Bytes,
  decodeVectorsB64,
  METRICS,
  type Metric,
} from '../src/native/compare.js';
import { benchNative } from '../bench/lib/bench-native.js';
import { ServiceError } from '../src/errors/index.js';

/** Seeded LCG so failures reproduce. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32) * 2 - 1;
  };
}

function randomVectors(n: number, dims: number, seed: number): Float32Array {
  const next = rng(seed);
  const out = new Float32Array(n * dims);
  for (let i = 0; i < out.length; i++) out[i] = next();
  return out;
}

/** DeepFace's pairwise formulas in float64 (JS numbers), arccos argument clamped. */
function reference(metric: Metric, a: Float32Array, b: Float32Array): number {
  let dot = 0, na = 0, nb = 0, sq = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!, y = b[i]!;
    dot += x * y; na += x * x; nb += y * y; sq += (x - y) * (x - y);
  }
  na = Math.sqrt(na); nb = Math.sqrt(nb);
  const sim = na * nb === 0 ? 0 : dot / (na * nb);
  switch (metric) {
    case 'cosine': return 1 - sim;
    case 'angular': return Math.acos(Math.min(1, Math.max(-1, sim))) / Math.PI;
    case 'euclidean': return Math.sqrt(sq);
    case 'euclidean_l2': {
      const da = na + 1e-10, db = nb + 1e-10;
      let s = 0;
      for (let i = 0; i < a.length; i++) s += (a[i]! / da - b[i]! / db) ** 2;
      return Math.sqrt(s);
    }
  }
}

function toB64(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

/** The assertions rejectsWith needs, structurally (tap's plugin-built test type is unwieldy). */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
interface Asserts {
  fail(message: string): unknown;
  type(value: unknown, klass: Function): unknown;
  equal(found: unknown, wanted: unknown): unknown;
  match(found: unknown, pattern: RegExp): unknown;
}

async function rejectsWith(t: Asserts, p: Promise<unknown> | (() => unknown), code: string, detail?: RegExp): Promise<void> {
  try {
    await (typeof p === 'function' ? p() : p);
    t.fail(`expected ${code}`);
  } catch (err) {
    t.type(err, ServiceError);
    t.equal((err as ServiceError).code, code);
    if (detail) t.match((err as ServiceError).detail, detail);
  }
}

t.test('distances equal a float64 reference on both the sync and the pooled path', async (t) => {
  for (const dims of [1, 3, 17, 128, 129, 512, 1023]) {
    for (const n of [1, 5, 400]) {
      const query = randomVectors(1, dims, dims);
      const targets = randomVectors(n, dims, dims * 31 + n);
      for (const metric of METRICS) {
        const got = await compareOneToMany(query, targets, dims, metric);
        t.equal(got.distances.length, n);
        t.same(Array.from(got.indices), Array.from({ length: n }, (_, i) => i));
        let worst = 0;
        for (let i = 0; i < n; i++) {
          const want = reference(metric, query, targets.subarray(i * dims, (i + 1) * dims));
          worst = Math.max(worst, Math.abs(got.distances[i]! - want));
        }
        t.ok(worst <= 1e-6, `${metric} dims=${dims} n=${n}: worst diff ${worst}`);
      }
    }
  }
});

t.test('top-k returns the nearest first, ties by index', async (t) => {
  const q = new Float32Array([1, 0]);
  const targets = new Float32Array([0, 1, 1, 0, 1, 0.1, 2, 0, -1, 0]);
  const all = await compareOneToMany(q, targets, 2, 'cosine');
  const top = await compareOneToMany(q, targets, 2, 'cosine', 3);
  t.same(Array.from(top.indices), [1, 3, 2]);
  t.same(Array.from(top.distances), [all.distances[1], all.distances[3], all.distances[2]]);
  t.same(Array.from((await compareOneToMany(q, targets, 2, 'cosine', 50)).indices), [1, 3, 2, 0, 4]);
});

t.test('a large comparison runs off-thread and still matches', async (t) => {
  const dims = 128;
  const n = 50_000;
  const query = randomVectors(1, dims, 1);
  const targets = randomVectors(n, dims, 2);
  const pending = compareOneToMany(query, targets, dims, 'euclidean', 5);
  t.type(pending, Promise);
  const got = await pending;
  t.equal(got.indices.length, 5);
  const sorted = Array.from({ length: n }, (_, i) => [reference('euclidean', query, targets.subarray(i * dims, (i + 1) * dims)), i] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  t.same(Array.from(got.indices), sorted.slice(0, 5).map((p) => p[1]));
});

t.test('typed-array views with an offset are read where they start', async (t) => {
  const backing = randomVectors(10, 4, 9);
  const view = backing.subarray(8, 40);
  const copy = new Float32Array(view);
  const q = new Float32Array([1, 2, 3, 4]);
  t.same(await compareOneToMany(q, view, 4, 'angular'), await compareOneToMany(q, copy, 4, 'angular'));
});

t.test('bad inputs are ServiceErrors with stable codes', async (t) => {
  const q = new Float32Array([1, 2, 3]);
  const good = new Float32Array(9).fill(0.5);
  const bad = new Float32Array(good);
  bad[7] = Number.NaN;
  await rejectsWith(t, compareOneToMany(q, bad, 3, 'cosine'), 'invalid_embedding', /vector 2/);
  const big = randomVectors(20_000, 3, 5);
  big[3 * 15_001 + 2] = Number.POSITIVE_INFINITY;
  await rejectsWith(t, compareOneToMany(q, big, 3, 'euclidean'), 'invalid_embedding', /vector 15001/);
  await rejectsWith(t, compareOneToMany(q, good.subarray(0, 8), 3, 'cosine'), 'embedding_dimension_mismatch');
  await rejectsWith(t, compareOneToMany(new Float32Array(2), good, 3, 'cosine'), 'embedding_dimension_mismatch');
  await rejectsWith(t, compareOneToMany(new Float32Array([1, Number.NaN, 0]), good, 3, 'cosine'), 'invalid_embedding', /query/);
  await rejectsWith(t, compareOneToMany(q, good, 3, 'manhattan' as Metric), 'invalid_request', /distance_metric/);
  await rejectsWith(t, compareOneToMany(q, good, 0, 'cosine'), 'invalid_request');
  await rejectsWith(t, compareOneToMany(q, good, 1.5, 'cosine'), 'invalid_request');
  await rejectsWith(t, compareOneToMany(q, good, 3, 'cosine', 0), 'invalid_request', /top_k/);
  await rejectsWith(t, compareOneToMany(q, good, 3, 'cosine', 2.5), 'invalid_request', /top_k/);
  await rejectsWith(t, compareOneToMany(q, [1, 2, 3] as unknown as Float32Array, 3, 'cosine'), 'invalid_request');
});

t.test('the comparison names the offending vector', async (t) => {
  // Targets are validated where they are read, by the kernel (no separate pass over them).
  const data = new Float32Array(12).fill(1);
  await compareOneToMany(new Float32Array(4).fill(1), data, 4, 'cosine');
  data[9] = Number.NEGATIVE_INFINITY;
  await rejectsWith(t, compareOneToMany(new Float32Array(4).fill(1), data, 4, 'cosine'), 'invalid_embedding', /vector 2.*position 1/);
  await rejectsWith(t, compareOneToMany(new Float32Array(5).fill(1), data, 5, 'cosine'), 'embedding_dimension_mismatch');
});

t.test('base64 vectors decode to the same floats and compare the same', async (t) => {
  const dims = 128;
  const targets = randomVectors(300, dims, 77);
  const b64 = toB64(targets);
  t.same(decodeVectorsB64(b64, dims), targets);
  t.same(decodeVectorsB64(b64.replace(/=+$/, ''), dims), targets);
  const query = randomVectors(1, dims, 78);
  for (const metric of METRICS) {
    const direct = await compareOneToMany(query, targets, dims, metric, 7);
    // The targets_b64 path of /compare: the body's bytes decoded off the thread, then compared.
    const decoded = await decodeVectorsB64Bytes(Buffer.from(b64), dims);
    const viaB64 = await compareOneToMany(query, decoded, dims, metric, 7);
    t.same(viaB64.indices, direct.indices);
    t.same(viaB64.distances, direct.distances);
    t.equal(decoded.length / dims, 300);
  }
  const full = await compareOneToMany(query, await decodeVectorsB64Bytes(Buffer.from(b64), dims), dims, 'cosine');
  t.equal(full.indices.length, 300);
});

/** /compare's targets_b64 path: the bytes decoded off the thread, then compared. */
async function viaB64(query: Float32Array, b64: string, dims: number, metric: Metric) {
  return compareOneToMany(query, await decodeVectorsB64Bytes(Buffer.from(b64), dims), dims, metric);
}

t.test('bad base64 is refused with the vector it hit', async (t) => {
  const dims = 4;
  const targets = new Float32Array(10 * dims).fill(0.25);
  const b64 = toB64(targets);
  // vector 6 begins at byte 96 = character 128
  const broken = b64.slice(0, 130) + '*' + b64.slice(131);
  await rejectsWith(t, () => decodeVectorsB64(broken, dims), 'invalid_embedding', /vector 6/);
  await rejectsWith(t, viaB64(new Float32Array(dims), broken, dims, 'cosine'), 'invalid_embedding', /vector 6/);
  await rejectsWith(t, () => decodeVectorsB64(b64.slice(0, 4) + 'é' + b64.slice(5), dims), 'invalid_embedding', /vector 0/);
  // U+0141's low byte is 'A': a lossy one-byte copy of the string would let it through.
  const at = b64.indexOf('A', 24); // vector 1 spans characters 21..42
  t.ok(at >= 24 && at < 40);
  const lookalike = b64.slice(0, at) + '\u0141' + b64.slice(at + 1);
  await rejectsWith(t, () => decodeVectorsB64(lookalike, dims), 'invalid_embedding', /vector 1/);
  await rejectsWith(t, viaB64(new Float32Array(dims), lookalike, dims, 'cosine'), 'invalid_embedding', /vector 1/);
  await rejectsWith(t, () => decodeVectorsB64(b64, 3), 'embedding_dimension_mismatch');
  await rejectsWith(t, viaB64(new Float32Array(3), b64, 3, 'cosine'), 'embedding_dimension_mismatch');
  const withNaN = new Float32Array(targets);
  withNaN[8 * dims + 3] = Number.NaN;
  await rejectsWith(t, () => decodeVectorsB64(toB64(withNaN), dims), 'invalid_embedding', /vector 8.*position 3/);
  await rejectsWith(t, viaB64(new Float32Array(dims), toB64(withNaN), dims, 'euclidean'), 'invalid_embedding', /vector 8/);
  t.equal(decodeVectorsB64('', dims).length, 0);
});

t.test('the bench-only exports read every float and describe the engine', async (t) => {
  const data = new Float32Array(100_001).map((_, i) => i % 5);
  let want = 0;
  for (const x of data) want += x;
  t.equal(benchNative.benchReadSum(data, 128), want);
  const engine = benchNative.benchCompareEngine(100_000, 512);
  t.match(engine.kernel, /^(avx512|avx2|neon|scalar)$/);
  t.ok(engine.threads >= 1);
});
