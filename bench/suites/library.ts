/**
 * Library level: our DeepFace pipeline in-process (the model server's startRegistry + Pipeline with
 * the real engines of adapters.ts; no HTTP) against DeepFace 0.0.100 called as a library
 * (bench/deepface/library_bench.py --serve, one long-lived Python process), for Dlib and, when its
 * weights are installed, Facenet (the contract's default), each with the opencv, yunet and skip
 * detectors:
 *   - represent of one image (img1.jpg), reading the file each time as DeepFace does;
 *   - verify of one pair (img1.jpg, img2.jpg);
 *   - sustained represent over the deepface images, one after another (enforce_detection off), and
 *     for us also four at a time, which is what the model server does under load.
 * The two sides alternate cell by cell, so both see the same machine load.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { engines, imageOps } from '../../src/model-server/adapters.js';
import { Pipeline } from '../../src/model-server/pipeline.js';
import type { PipelineOptions } from '../../src/model-client/protocol.js';
import { startRegistry } from '../../src/model-server/registry.js';
import { DEEPFACE_DATA, DEEPFACE_PYTHON, REPO_ROOT } from '../lib/paths.js';
import { BENCH_MODELS, benchEnv, facenetWeightsFile } from '../lib/services.js';
import { summarize } from '../lib/stats.js';
import type { SuiteContext } from './context.js';

const DETECTORS = ['opencv', 'yunet', 'skip'];

interface Latency {
  p50: number;
  p99: number;
  n: number;
  mean?: number;
}

/** DeepFace as a library, driven one JSON line at a time. */
async function deepFaceWorker(ctx: SuiteContext): Promise<{ call(cmd: Record<string, unknown>): Promise<Record<string, unknown>>; close(): void }> {
  const home = mkdtempSync(join(tmpdir(), 'deepface-home-'));
  const child = spawn(DEEPFACE_PYTHON, [join(REPO_ROOT, 'bench', 'deepface', 'library_bench.py'), '--serve'], {
    env: { ...process.env, DEEPFACE_HOME: home, TF_CPP_MIN_LOG_LEVEL: '2', ...(facenetWeightsFile() ? { BENCH_FACENET_WEIGHTS: facenetWeightsFile() as string } : {}) },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const lines = createInterface({ input: child.stdout });
  const waiting: Array<{ resolve: (line: string) => void; reject: (err: Error) => void }> = [];
  lines.on('line', (line) => waiting.shift()?.resolve(line));
  child.once('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`DeepFace worker exited (${code})`));
  });
  const next = () => new Promise<string>((resolve, reject) => waiting.push({ resolve, reject }));
  const ready = JSON.parse(await next()) as { ready: boolean };
  if (!ready.ready) throw new Error('DeepFace worker did not start');
  ctx.log('library: DeepFace worker ready');
  return {
    async call(cmd) {
      child.stdin.write(`${JSON.stringify(cmd)}\n`);
      const res = JSON.parse(await next()) as Record<string, unknown>;
      if (typeof res['error'] === 'string') throw new Error(`DeepFace: ${res['error']}`);
      return res;
    },
    close() {
      child.stdin.end();
      child.kill('SIGTERM');
    },
  };
}

function images(limit: number): string[] {
  return readdirSync(DEEPFACE_DATA)
    .filter((n) => n.endsWith('.jpg') && n !== 'invalid.jpg')
    .sort()
    .slice(0, limit);
}

export async function librarySuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const repeats = ctx.quick ? 3 : 8;
  const sustainedImages = images(ctx.quick ? 6 : 20);
  const sustainedMaxS = ctx.quick ? 15 : 30;
  // A cap per DeepFace cell keeps the suite bounded when the machine is busy (≥ 3 samples each).
  const cellMaxS = ctx.quick ? 10 : 20;

  // Our side: the model server's own registry and pipeline, configured as the bench service is.
  const env = { ...process.env, ...benchEnv({ gateway: 0, mcp: 0, console: 0, modelServer: 0, dataDir: mkdtempSync(join(tmpdir(), 'fc-lib-')), models: BENCH_MODELS }) };
  const cfg = loadConfig(env);
  const logger = createLogger('bench-library', 'warn');
  const state = await startRegistry(cfg, logger, engines(cfg));
  const t0 = performance.now();
  while (!state.warmup.ready) {
    const w = state.warmup.snapshot();
    if (w.status === 'error') throw new Error(`our registry failed to warm up: ${w.error}`);
    if (performance.now() - t0 > 300_000) throw new Error('our registry did not warm up in 300 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const ops = imageOps(cfg);
  const pipeline = new Pipeline({ image: ops, detectors: state.detectors, recognizers: state.recognizers, fallbackDetector: 'retinaface' });
  // Facenet runs when our registry serves it (its weights installed); DeepFace gets the same file.
  const models = BENCH_MODELS.filter((m) => state.recognizers.has(m));
  const notServed = BENCH_MODELS.filter((m) => !state.recognizers.has(m));
  if (notServed.length) ctx.log(`library: not served here (weights not installed): ${notServed.join(', ')}`);
  let model: string = models[0] ?? 'Dlib';
  const opts = (detector: string): PipelineOptions => ({ model_name: model, detector_backend: detector, align: true, enforce_detection: true, expand_percentage: 0, normalization: 'base' });
  const img1 = join(DEEPFACE_DATA, 'img1.jpg');
  const img2 = join(DEEPFACE_DATA, 'img2.jpg');

  const oursRepresent = async (detector: string, path = img1, enforce = true) => {
    const img = await ops.decode(await readFile(path));
    return pipeline.represent([img], { ...opts(detector), enforce_detection: enforce, max_faces: null, l2_normalize: false });
  };
  const oursVerify = async (detector: string) => {
    const [a, b] = await Promise.all([readFile(img1), readFile(img2)]);
    const [ia, ib] = [await ops.decode(a), await ops.decode(b)];
    return pipeline.verify({ img1: ia, img2: ib, sameImage: false }, { ...opts(detector), distance_metric: 'cosine' });
  };
  const timeN = async (n: number, fn: () => Promise<unknown>): Promise<Latency> => {
    const lat: number[] = [];
    for (let i = 0; i < n; i++) {
      const s = performance.now();
      await fn();
      lat.push(performance.now() - s);
    }
    const s = summarize(lat);
    return { p50: s.p50, p99: s.p99, n: s.n, mean: s.mean };
  };
  const sustained = async (detector: string, concurrency: number) => {
    const s = performance.now();
    let next = 0;
    let done = 0;
    const worker = async () => {
      while (next < sustainedImages.length && performance.now() - s < sustainedMaxS * 1000) {
        const name = sustainedImages[next++] as string;
        try {
          await oursRepresent(detector, join(DEEPFACE_DATA, name), false);
          done++;
        } catch {
          // counted as not done, as on DeepFace's side
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const el = (performance.now() - s) / 1000;
    return { images: done, seconds: el, images_per_s: done / el };
  };

  const df = await deepFaceWorker(ctx);
  const rows: Array<Record<string, unknown>> = [];
  let stageRows: Array<Record<string, unknown>> = [];
  try {
    stageRows = await stages(ctx, state, ops, df, models);
    for (const m of models) {
      model = m;
      for (const det of DETECTORS) {
        // Warm both (first-call costs are a cold-start matter).
        await oursVerify(det);
        await df.call({ op: 'verify', detector: det, n: 1, model });
        const ourRep = await timeN(repeats, () => oursRepresent(det));
        const dfRep = (await df.call({ op: 'represent', detector: det, n: repeats, max_s: cellMaxS, model })) as unknown as Latency;
        const dfVer = (await df.call({ op: 'verify', detector: det, n: repeats, max_s: cellMaxS, model })) as unknown as Latency;
        const ourVer = await timeN(repeats, () => oursVerify(det));
        const ourSus = await sustained(det, 1);
        const dfSus = (await df.call({ op: 'sustained', detector: det, images: sustainedImages, max_s: sustainedMaxS, model })) as { images: number; seconds: number; images_per_s: number };
        const ourSus4 = await sustained(det, 4);
        const row = {
          model,
          detector: det,
          represent_ms: { ours: ourRep, deepface: { p50: dfRep.p50, p99: dfRep.p99, n: dfRep.n } },
          verify_ms: { ours: ourVer, deepface: { p50: dfVer.p50, p99: dfVer.p99, n: dfVer.n } },
          sustained: { ours: ourSus, ours_concurrency_4: ourSus4, deepface: dfSus },
          ratios: {
            represent_p50_speedup: dfRep.p50 / ourRep.p50,
            verify_p50_speedup: dfVer.p50 / ourVer.p50,
            sustained_speedup: ourSus.images_per_s / dfSus.images_per_s,
            sustained_c4_speedup: ourSus4.images_per_s / dfSus.images_per_s,
          },
        };
        rows.push(row);
        ctx.log(`library ${model} ${det}: verify p50 ours ${ourVer.p50.toFixed(0)} ms vs DeepFace ${dfVer.p50.toFixed(0)} ms`);
      }
    }
  } finally {
    df.close();
    for (const r of state.recognizers.values()) await r.close?.();
  }
  const f = (x: number) => x.toFixed(0);
  ctx.table(
    ['model', 'detector', 'represent p50/p99 ms ours', 'DeepFace', 'x', 'verify p50/p99 ms ours', 'DeepFace', 'x', 'images/s ours (c1 | c4)', 'DeepFace', 'x (c1)'],
    rows.map((r) => {
      const x = r as unknown as { model: string; detector: string; represent_ms: { ours: Latency; deepface: Latency }; verify_ms: { ours: Latency; deepface: Latency }; sustained: { ours: { images_per_s: number }; ours_concurrency_4: { images_per_s: number }; deepface: { images_per_s: number } }; ratios: Record<string, number> };
      return [
        x.model,
        x.detector,
        `${f(x.represent_ms.ours.p50)}/${f(x.represent_ms.ours.p99)}`,
        `${f(x.represent_ms.deepface.p50)}/${f(x.represent_ms.deepface.p99)}`,
        (x.ratios['represent_p50_speedup'] as number).toFixed(1),
        `${f(x.verify_ms.ours.p50)}/${f(x.verify_ms.ours.p99)}`,
        `${f(x.verify_ms.deepface.p50)}/${f(x.verify_ms.deepface.p99)}`,
        (x.ratios['verify_p50_speedup'] as number).toFixed(1),
        `${x.sustained.ours.images_per_s.toFixed(2)} | ${x.sustained.ours_concurrency_4.images_per_s.toFixed(2)}`,
        x.sustained.deepface.images_per_s.toFixed(2),
        (x.ratios['sustained_speedup'] as number).toFixed(1),
      ];
    }),
  );
  return { how: 'in-process: startRegistry + Pipeline (src/model-server) vs DeepFace library in one Python process', models, models_not_served: notServed, repeats, sustained_images: sustainedImages.length, sustained_max_s: sustainedMaxS, rows, stages: stageRows };
}

/**
 * Where one of our requests spends its time, stage by stage (medians, ms), for the images of both
 * suites, next to OpenCV's own Haar cascade on the same bordered image (DeepFace's opencv detector).
 */
async function stages(
  ctx: SuiteContext,
  state: Awaited<ReturnType<typeof startRegistry>>,
  ops: ReturnType<typeof imageOps>,
  df: { call(cmd: Record<string, unknown>): Promise<Record<string, unknown>> },
  models: readonly string[],
): Promise<Array<Record<string, unknown>>> {
  const names = ['img5.jpg', 'img6.jpg', 'img1.jpg'];
  const n = ctx.quick ? 2 : 4;
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const opencv = ((await df.call({ op: 'haar', images: names, n })) as { images: Record<string, { p50: number; cpu_p50?: number; threads: number; opencv: string }> }).images;
  const out: Array<Record<string, unknown>> = [];
  for (const model of models) {
    const rec = state.recognizers.get(model);
    if (!rec) continue;
    for (const det of ['opencv', 'yunet']) {
      const detector = state.detectors.get(det);
      if (!detector) continue;
      for (const name of names) {
        const t: Record<string, number[]> = {};
        // Wall time and the process's CPU time (every thread: the Haar scan's and ONNX Runtime's too),
        // which moves much less with the machine's load than wall time does.
        const time = async <X>(k: string, f: () => Promise<X>): Promise<X> => {
          const s = performance.now();
          const c = process.cpuUsage();
          const r = await f();
          (t[k] ??= []).push(performance.now() - s);
          const u = process.cpuUsage(c);
          (t[`${k}_cpu`] ??= []).push((u.user + u.system) / 1000);
          return r;
        };
        let size = '';
        for (let i = 0; i < n; i++) {
          const bytes = await readFile(join(DEEPFACE_DATA, name));
          const img = await time('decode', () => ops.decode(bytes));
          size = `${img.width}x${img.height}`;
          const b = await time('border', () => ops.border(img));
          const dets = await time('detect', () => detector.detect(b.image));
          const faces = await time('extract_faces', () => ops.extractFaces(b.image, dets, { align: true, expandPercentage: 0, borderTop: b.top, borderLeft: b.left, originalWidth: img.width, originalHeight: img.height, detector: detector.name }));
          if (faces.length === 0) continue;
          const tensor = await time('to_tensor', () => ops.toTensor(faces.map((f) => f.face), { width: rec.input.width, height: rec.input.height, layout: rec.input.layout, channelOrder: rec.input.channel_order, preprocess: rec.input.preprocess, normalization: 'base' }));
          await time('embed', () => rec.embed(tensor, faces.length));
        }
        const row: Record<string, unknown> = { model, detector: det, image: name, size, ...Object.fromEntries(Object.entries(t).map(([k, v]) => [`${k}_ms`, Math.round(med(v) * 10) / 10])) };
        if (det === 'opencv') {
          row['opencv_haar_ms'] = Math.round((opencv[name]?.p50 ?? NaN) * 10) / 10;
          row['opencv_haar_cpu_ms'] = Math.round((opencv[name]?.cpu_p50 ?? NaN) * 10) / 10;
        }
        out.push(row);
      }
    }
  }
  ctx.table(
    ['model', 'detector', 'image', 'size', 'decode', 'border', 'detect', 'detect CPU', 'OpenCV haar', 'OpenCV haar CPU', 'extract_faces', 'to_tensor', 'embed', 'embed CPU'],
    out.map((r) => [r['model'] as string, r['detector'] as string, r['image'] as string, r['size'] as string, ...['decode_ms', 'border_ms', 'detect_ms', 'detect_cpu_ms', 'opencv_haar_ms', 'opencv_haar_cpu_ms', 'extract_faces_ms', 'to_tensor_ms', 'embed_ms', 'embed_cpu_ms'].map((k) => (r[k] === undefined ? '-' : String(r[k])))]),
  );
  return out;
}
