/**
 * ONNX Runtime session settings on the Dlib graph, one factor at a time from the production choice
 * (src/model-server/models/ort-options.ts): intra-op threads, inter-op threads, graph optimization
 * level and the CPU memory arena, at batch 1 and 8. Cells are interleaved over several rounds and
 * each variant is reported as the median of its rounds, relative to the production setting measured
 * in the same rounds, so machine load shifts both sides alike.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { sessionOptions } from '../../src/model-server/models/ort-options.js';
import { decodePng } from '../../test/helpers/png.js';
import { chipsToBatch, dlibEntry, dlibOnnx } from '../../test/helpers/dlib.js';
import { REPO_ROOT } from '../lib/paths.js';
import { percentile } from '../lib/stats.js';
import type { SuiteContext } from './context.js';

interface Variant {
  name: string;
  why: string;
  options: ort.InferenceSession.SessionOptions;
}

function variants(cores: number): Variant[] {
  const base = sessionOptions({ intraOpThreads: 0, interOpThreads: 1, provider: 'cpu' });
  return [
    { name: 'production', why: `intra 0 (= ${cores} cores), inter 1 sequential, optimization all, arena on, no spinning`, options: base },
    { name: 'intra_1', why: 'one intra-op thread', options: { ...base, intraOpNumThreads: 1 } },
    { name: 'intra_2', why: 'two intra-op threads, explicit', options: { ...base, intraOpNumThreads: 2 } },
    // ONNX Runtime's default: idle pool threads spin-wait for the next piece of work.
    { name: 'spinning', why: 'intra-op threads spin-wait (ONNX Runtime default)', options: { ...base, extra: { session: { 'intra_op.allow_spinning': '1' } } } },
    // Inter-op threads only do anything in parallel execution mode; sequential ignores them.
    { name: 'inter_2_parallel', why: 'two inter-op threads, parallel execution mode', options: { ...base, interOpNumThreads: 2, executionMode: 'parallel' } },
    { name: 'opt_basic', why: "graph optimization 'basic' instead of 'all'", options: { ...base, graphOptimizationLevel: 'basic' } },
    { name: 'arena_off', why: 'CPU memory arena and memory patterns off', options: { ...base, enableCpuMemArena: false, enableMemPattern: false } },
  ];
}

async function timeCell(session: ort.InferenceSession, input: string, data: Float32Array, batch: number, seconds: number): Promise<{ per_s: number; p50_ms: number; runs: number }> {
  const lat: number[] = [];
  const t0 = performance.now();
  do {
    const s = performance.now();
    const out = await session.run({ [input]: new ort.Tensor('float32', data, [batch, 3, 150, 150]) });
    lat.push(performance.now() - s);
    for (const t of Object.values(out)) t.dispose();
  } while (performance.now() - t0 < seconds * 1000 || lat.length < 3);
  const el = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  return { per_s: (lat.length * batch) / el, p50_ms: percentile(lat, 50), runs: lat.length };
}

export async function ortSuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const modelPath = await dlibOnnx();
  const entry = dlibEntry();
  const fixtures = join(REPO_ROOT, 'test', 'fixtures');
  const chips = (JSON.parse(readFileSync(join(fixtures, 'dlib-descriptors.json'), 'utf8')) as { chips: Array<{ png: string }> }).chips.map(
    (c) => decodePng(readFileSync(join(fixtures, c.png))).rgb,
  );
  const batches = [1, 8];
  const rounds = ctx.quick ? 2 : 5;
  const seconds = ctx.quick ? 0.5 : 0.7;
  const vs = variants(ctx.machine.cores);
  const sessions = new Map<string, ort.InferenceSession>();
  for (const v of vs) sessions.set(v.name, await ort.InferenceSession.create(modelPath, v.options));
  const inputs = new Map(batches.map((b) => [b, chipsToBatch(Array.from({ length: b }, (_, i) => chips[i % chips.length] as Uint8Array))]));
  // Warm-up: first runs allocate the arena and pick kernels.
  for (const v of vs) for (const b of batches) await timeCell(sessions.get(v.name) as ort.InferenceSession, entry.onnx.input, inputs.get(b) as Float32Array, b, 0.05);

  const samples = new Map<string, Array<{ per_s: number; p50_ms: number }>>();
  for (let r = 0; r < rounds; r++) {
    for (const b of batches) {
      // Rotate the order each round so no variant always runs right after the same neighbour.
      const order = vs.map((_, i) => vs[(i + r) % vs.length] as Variant);
      for (const v of order) {
        const cell = await timeCell(sessions.get(v.name) as ort.InferenceSession, entry.onnx.input, inputs.get(b) as Float32Array, b, seconds);
        const k = `${v.name}@${b}`;
        samples.set(k, [...(samples.get(k) ?? []), cell]);
      }
    }
    ctx.log(`ort: round ${r + 1}/${rounds} done`);
  }
  for (const s of sessions.values()) await s.release();

  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)] as number;
  };
  const rows = vs.flatMap((v) =>
    batches.map((b) => {
      const cells = samples.get(`${v.name}@${b}`) ?? [];
      const per = cells.map((c) => c.per_s);
      const prod = median((samples.get(`production@${b}`) ?? []).map((c) => c.per_s));
      const m = median(per);
      return {
        variant: v.name,
        what: v.why,
        batch: b,
        embeddings_per_s: m,
        p50_ms: median(cells.map((c) => c.p50_ms)),
        vs_production: m / prod,
        spread: Math.max(...per) / Math.min(...per),
      };
    }),
  );
  ctx.table(
    ['variant', 'batch', 'emb/s', 'p50 ms', 'x production', 'max/min over rounds'],
    rows.map((r) => [r.variant, r.batch, r.embeddings_per_s.toFixed(1), r.p50_ms.toFixed(1), r.vs_production.toFixed(2), r.spread.toFixed(2)]),
  );
  return { model: 'Dlib', rounds, seconds_per_cell: seconds, onnxruntime_node: ort.env.versions?.common ?? 'unknown', rows };
}
