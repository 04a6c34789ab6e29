/**
 * Cold start and memory, for Dlib and, when its weights are installed, Facenet; each side serves the
 * one model measured (ours: FACECOMPUTE_ALLOWED_MODELS; DeepFace: DEEPFACE_FACE_RECOGNITION_MODELS).
 * - coldstart: from process start to /readiness 200 for us (the model and every detector warmed),
 *   and to the first answered /verify for DeepFace's API (it has no readiness route; its model is
 *   preloaded at start, the recommended setting). Ours to the first answered /verify is reported too.
 *   Starts alternate between the two. Converted ONNX graphs come from the models cache (a first,
 *   untimed start fills it): conversion is a one-off install step, not a start-up cost.
 * - memory: peak RSS (VmHWM summed over the process tree: gateway + model server for us, gunicorn
 *   master + workers for DeepFace, with one and with two workers) after the same load, /verify at
 *   concurrency 4.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyBody } from '../lib/bodies.js';
import { load, postJson } from '../lib/load.js';
import { treeMemory } from '../lib/proc.js';
import { BENCH_MODELS, createKey, facenetWeightsFile, startDeepFace, startOurs } from '../lib/services.js';
import { deepFaceReady } from './service.js';
import type { SuiteContext } from './context.js';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** The models both sides can serve here: Dlib, and Facenet when its weights are installed. */
function benchModels(ctx: SuiteContext, suite: string): string[] {
  const models = BENCH_MODELS.filter((m) => m !== 'Facenet' || facenetWeightsFile() !== null);
  if (models.length < BENCH_MODELS.length) ctx.log(`${suite}: Facenet not measured (weights not installed: facecompute models fetch Facenet)`);
  return models;
}

export async function coldStartSuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  // Five rounds: DeepFace's start varies by a second from one run to the next (3.6-4.4 s seen), so the
  // median of two was at the mercy of one slow or fast start.
  const rounds = ctx.quick ? 1 : 5;
  const perModel: Array<Record<string, unknown>> = [];
  for (const model of benchModels(ctx, 'coldstart')) {
    const body = verifyBody('opencv', model);
    ctx.log(`coldstart ${model}: priming the models cache (untimed start)`);
    const prime = await startOurs({ logDir: ctx.logDir, label: `coldstart-prime-${model}`, models: [model] });
    const served = prime.models.includes(model);
    await prime.stop();
    if (!served) throw new Error(`our service does not serve ${model} (see ${ctx.logDir}/coldstart-prime-${model}.log)`);
    const ours: Array<{ ready_s: number; first_verify_s: number }> = [];
    const deepface: Array<{ first_verify_s: number }> = [];
    for (let r = 0; r < rounds; r++) {
      const home = mkdtempSync(join(tmpdir(), 'deepface-home-'));
      const df = await startDeepFace({ logDir: ctx.logDir, label: `coldstart-deepface-${model}-${r}`, home, models: [model] });
      try {
        const at = await deepFaceReady(df, body, 600_000);
        deepface.push({ first_verify_s: (at - df.proc.startedAt) / 1000 });
      } finally {
        await df.stop();
      }
      const o = await startOurs({ logDir: ctx.logDir, label: `coldstart-ours-${model}-${r}`, models: [model] });
      try {
        const key = await createKey(o.consoleUrl);
        const v = await postJson(`${o.gatewayUrl}/verify`, body, { authorization: `Bearer ${key}` });
        if (v.status !== 200) throw new Error(`our first /verify (${model}) answered ${v.status}`);
        ours.push({ ready_s: o.readyMs / 1000, first_verify_s: (performance.now() - o.proc.startedAt) / 1000 });
      } finally {
        await o.stop();
      }
      ctx.log(`coldstart ${model} round ${r + 1}: ours ready ${ours.at(-1)?.ready_s.toFixed(1)} s (first verify ${ours.at(-1)?.first_verify_s.toFixed(1)} s); DeepFace first verify ${deepface.at(-1)?.first_verify_s.toFixed(1)} s`);
    }
    const row = {
      model,
      rounds,
      ours,
      deepface,
      ours_ready_s: median(ours.map((o) => o.ready_s)),
      ours_first_verify_s: median(ours.map((o) => o.first_verify_s)),
      deepface_first_verify_s: median(deepface.map((d) => d.first_verify_s)),
      ratio: 0,
    };
    row.ratio = row.ours_ready_s / row.deepface_first_verify_s;
    perModel.push(row);
  }
  ctx.table(
    ['model', 'ours: to /readiness 200 (median s)', 'ours: to first verify', 'DeepFace: to first verify', 'ratio (ours ready / DeepFace)'],
    perModel.map((r) => [r['model'] as string, ...(['ours_ready_s', 'ours_first_verify_s', 'deepface_first_verify_s'] as const).map((k) => (r[k] as number).toFixed(1)), (r['ratio'] as number).toFixed(3)]),
  );
  return { models: perModel };
}

export async function memorySuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const connections = 4;
  const perModel: Array<Record<string, unknown>> = [];
  for (const model of benchModels(ctx, 'memory')) {
    const body = verifyBody('opencv', model);
    const o = await startOurs({ logDir: ctx.logDir, label: `memory-ours-${model}`, models: [model] });
    let ours;
    try {
      const idle = treeMemory(o.proc.pid);
      const key = await createKey(o.consoleUrl);
      const run = await load({ url: `${o.gatewayUrl}/verify`, body, headers: { authorization: `Bearer ${key}` }, connections, seconds: ctx.quick ? 5 : 10 });
      ours = { idle_rss_mb: idle.rssMb, peak_rss_mb: treeMemory(o.proc.pid).peakRssMb, answers: run.ok, processes: treeMemory(o.proc.pid).processes };
    } finally {
      await o.stop();
    }
    const deepface: Record<string, { idle_rss_mb: number; peak_rss_mb: number; answers: number; processes: unknown }> = {};
    for (const workers of [1, 2]) {
      const df = await startDeepFace({ logDir: ctx.logDir, label: `memory-deepface-${model}-${workers}w`, home: mkdtempSync(join(tmpdir(), 'deepface-home-')), workers, models: [model] });
      try {
        await deepFaceReady(df, body, 600_000);
        const idle = treeMemory(df.proc.pid);
        // 30 s at c4: every worker has answered many requests; VmHWM does not grow after the first few.
        const run = await load({ url: `${df.url}/verify`, body, connections, seconds: ctx.quick ? 15 : 30, timeoutS: 600 });
        const loaded = treeMemory(df.proc.pid);
        deepface[workers === 1 ? 'deepface' : 'deepface_2w'] = { idle_rss_mb: idle.rssMb, peak_rss_mb: loaded.peakRssMb, answers: run.ok, processes: loaded.processes };
      } finally {
        await df.stop();
      }
    }
    const d1 = deepface['deepface'] as { idle_rss_mb: number; peak_rss_mb: number };
    const d2 = deepface['deepface_2w'] as { idle_rss_mb: number; peak_rss_mb: number };
    perModel.push({
      model,
      load: `/verify ${model} opencv at c${connections}`,
      ours,
      ...deepface,
      // Against the one-worker API, the smaller of the two: the stricter comparison for us.
      ratio: ours.peak_rss_mb / d1.peak_rss_mb,
      ratio_2w: ours.peak_rss_mb / d2.peak_rss_mb,
    });
  }
  ctx.table(
    ['model', 'idle RSS MB ours / DF 1w / DF 2w', 'peak RSS MB (VmHWM, tree) ours / DF 1w / DF 2w', 'ratio ours / DF 1w', 'ours / DF 2w'],
    perModel.map((r) => {
      const x = r as unknown as Record<'ours' | 'deepface' | 'deepface_2w', { idle_rss_mb: number; peak_rss_mb: number }> & { model: string; ratio: number; ratio_2w: number };
      return [x.model, `${x.ours.idle_rss_mb.toFixed(0)} / ${x.deepface.idle_rss_mb.toFixed(0)} / ${x.deepface_2w.idle_rss_mb.toFixed(0)}`, `${x.ours.peak_rss_mb.toFixed(0)} / ${x.deepface.peak_rss_mb.toFixed(0)} / ${x.deepface_2w.peak_rss_mb.toFixed(0)}`, x.ratio.toFixed(2), x.ratio_2w.toFixed(2)];
    }),
  );
  return { models: perModel };
}
