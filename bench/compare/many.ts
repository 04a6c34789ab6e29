/**
 * bench/compare, many-to-many and large answers (issue 17):
 * - the GEMM kernel's single-core FLOP rate for cosine at 128-d, against this core's peak f32 FMA
 *   rate measured in the same run by a tight FMA loop (goal: ≥ 50%);
 * - 1,000 sources × 100,000 targets with top_k 10 in one call against 1,000 one-to-many calls
 *   (goal: ≥ 10× faster);
 * - the JSON of 100,000 results without top_k: written from the typed arrays (what /compare does)
 *   against an object per result serialized by fastify's compiled serializer (fast-json-stringify,
 *   what the route did before) and by JSON.stringify.
 * Every pair is timed interleaved, best of several runs (timing.ts).
 */
import { compareManyToMany, compareOneToMany } from '../../src/native/compare.js';
import { benchNative } from '../lib/bench-native.js';
import { CompareRows, compareJson, comparePlain, type CompareResponse } from '../../src/service/compare-result.js';
import { compareResponse } from '../../src/vocabulary/schemas.js';
import { bestSecondsInterleaved } from './timing.js';
import { seededMatrix } from '../../test/helpers/vectors.js';

export interface ManyResults {
  peak_f32_gflops: number;
  gemm: { sources: number; targets: number; dims: number; metric: string; top_k: number; seconds: number; wall_seconds: number; gflops: number; of_peak: number };
  many_vs_calls: { sources: number; targets: number; dims: number; top_k: number; threads: number; many_seconds: number; calls_seconds: number; speedup: number };
  serialize: { results: number; typed_arrays_ms: number; fast_json_stringify_ms: number; json_stringify_ms: number; bytes: number; speedup_vs_fast_json_stringify: number };
}

const fmt = (x: number, d = 1) => x.toFixed(d);

export async function benchMany(log: (line: string) => void, quick = false): Promise<ManyResults> {
  const dims = 128;
  // 1. Single-core FLOP rate of the blocked GEMM screen (cosine, top_k 10) against the FMA peak.
  const gemmSources = 1000;
  const gemmTargets = quick ? 20_000 : 100_000;
  const s = seededMatrix(gemmSources, dims, 11);
  const t = seededMatrix(gemmTargets, dims, 12);
  // The peak is the best of many ~0.5 ms slices; the GEMM's rate uses its thread's CPU time, so
  // that time spent waiting for the core on a shared machine counts against neither.
  let peak = 0;
  let gemmSeconds = Number.POSITIVE_INFINITY;
  let gemmWall = Number.POSITIVE_INFINITY;
  for (let round = 0; round < (quick ? 2 : 4); round++) {
    peak = Math.max(peak, benchNative.benchPeakF32Gflops(0.3));
    const r = benchNative.benchManySingleThread(s, t, dims, 'cosine', 10);
    gemmSeconds = Math.min(gemmSeconds, r.cpuSeconds);
    gemmWall = Math.min(gemmWall, r.wallSeconds);
  }
  const flops = 2 * gemmSources * gemmTargets * dims;
  const gflops = flops / gemmSeconds / 1e9;
  log(`peak f32 FMA (one core, tight loop): ${fmt(peak)} GFLOP/s`);
  log(`many-to-many GEMM, one core, cosine ${gemmSources} × ${gemmTargets} × ${dims}, top_k 10: ${fmt(gemmSeconds * 1e3)} ms of CPU (${fmt(gemmWall * 1e3)} ms wall), ${fmt(gflops)} GFLOP/s = ${fmt((100 * gflops) / peak, 0)}% of peak (goal ≥ 50%)`);

  // 2. One call against K one-to-many calls, both with every core, top_k 10.
  const k = quick ? 100 : 1000;
  const n = 100_000;
  const sources = seededMatrix(k, dims, 21);
  const targets = seededMatrix(n, dims, 22);
  const calls = async () => {
    for (let i = 0; i < k; i++) await compareOneToMany(sources.subarray(i * dims, (i + 1) * dims), targets, dims, 'cosine', 10);
  };
  const [manySeconds, callsSeconds] = (await bestSecondsInterleaved([() => compareManyToMany(sources, targets, dims, 'cosine', 10), calls], { minRuns: quick ? 1 : 3, minSeconds: 0, maxRuns: 3 })) as [number, number];
  const threads = benchNative.benchCompareEngine(n, dims).threads;
  log(`${k} × ${n} × ${dims} cosine top_k 10: one many-to-many call ${fmt(manySeconds * 1e3)} ms, ${k} one-to-many calls ${fmt(callsSeconds * 1e3)} ms: ${fmt(callsSeconds / manySeconds)}× (goal ≥ 10×; ${threads} threads each)`);

  // 3. The answer for 100,000 targets without top_k.
  const count = 100_000;
  const r = await compareOneToMany(sources.subarray(0, dims), targets.subarray(0, count * dims), dims, 'cosine');
  const response: CompareResponse = {
    model: 'Facenet',
    similarity_metric: 'cosine',
    threshold: 0.4,
    dims,
    source: null,
    results: new CompareRows({ model: 'Facenet', metric: 'cosine', pretuned: 0.4, threshold: 0.4 }, r.indices, r.distances),
    time: 0.01,
  };
  // fast-json-stringify, the serializer fastify compiles from a response schema (what the route
  // used before), on an object per result.
  const fjs = (await import('fast-json-stringify')).default as unknown as (schema: unknown) => (x: unknown) => string;
  const compiled = fjs(compareResponse);
  const objects = () => compiled(comparePlain(response));
  const [typedSeconds, fjsSeconds, stringifySeconds] = (await bestSecondsInterleaved([async () => compareJson(response), objects, () => JSON.stringify(comparePlain(response))], { minRuns: quick ? 2 : 7, minSeconds: 0.5 })) as [number, number, number];
  const text = (await compareJson(response)).toString();
  if (JSON.stringify(JSON.parse(text)) !== JSON.stringify(JSON.parse(compiled(comparePlain(response))))) throw new Error('serializers disagree');
  log(
    `JSON of ${count} results (${fmt(text.length / 2 ** 20)} MiB): from typed arrays ${fmt(typedSeconds * 1e3)} ms, objects + fast-json-stringify ${fmt(fjsSeconds * 1e3)} ms (${fmt(fjsSeconds / typedSeconds)}×), objects + JSON.stringify ${fmt(stringifySeconds * 1e3)} ms`,
  );
  return {
    peak_f32_gflops: peak,
    gemm: { sources: gemmSources, targets: gemmTargets, dims, metric: 'cosine', top_k: 10, seconds: gemmSeconds, wall_seconds: gemmWall, gflops, of_peak: gflops / peak },
    many_vs_calls: { sources: k, targets: n, dims, top_k: 10, threads, many_seconds: manySeconds, calls_seconds: callsSeconds, speedup: callsSeconds / manySeconds },
    serialize: { results: count, typed_arrays_ms: typedSeconds * 1e3, fast_json_stringify_ms: fjsSeconds * 1e3, json_stringify_ms: stringifySeconds * 1e3, bytes: text.length, speedup_vs_fast_json_stringify: fjsSeconds / typedSeconds },
  };
}
