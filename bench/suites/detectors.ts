/**
 * DeepFace's MTCNN detectors, `mtcnn` and `fastmtcnn`: extract_faces per image (decode, align border,
 * detection, DeepFace's crop and alignment) in process against DeepFace 0.0.100 running the same
 * backend as a library (bench/deepface/detector_bench.py), on the same images in the same run: wall
 * and CPU milliseconds per image and their ratios. DeepFace's `mtcnn` runs in its venv
 * (DEEPFACE_PYTHON, npm run bench:setup); `fastmtcnn` needs facenet-pytorch 2.6.0 and torch 2.2, whose
 * numpy 1.x conflicts with that venv, so it runs in FASTMTCNN_PYTHON's (tools/reference/
 * fastmtcnn-requirements.lock; default .venvs/fastmtcnn): without it, its row says so.
 * Ours runs first, then DeepFace, then ours again; the row keeps our faster pass (the machine is shared).
 * Then one large image's peak memory with the detectors' run limits against them lifted
 * (bench/detectors/mtcnn-memory.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { engines, imageOps } from '../../src/model-server/adapters.js';
import { Pipeline } from '../../src/model-server/pipeline.js';
import { startRegistry } from '../../src/model-server/registry.js';
import { DEEPFACE_DATA, DEEPFACE_PYTHON, REPO_ROOT } from '../lib/paths.js';
import { benchEnv } from '../lib/services.js';
import type { SuiteContext } from './context.js';

export const MTCNN_DETECTORS = ['mtcnn', 'fastmtcnn'] as const;
const FASTMTCNN_PYTHON = process.env['FASTMTCNN_PYTHON'] ?? join(REPO_ROOT, '.venvs', 'fastmtcnn', 'bin', 'python');

export interface DetectorRow {
  detector: string;
  images: number;
  reps: number;
  ours: { ms_per_image: number; cpu_ms_per_image: number; faces: number };
  deepface: { ms_per_image: number; cpu_ms_per_image: number; faces: number; deepface?: string } | null;
  speedup: number | null;
  cpu_ratio: number | null;
  skipped?: string;
}

export async function detectorsSuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const names = readdirSync(DEEPFACE_DATA).filter((n) => n.endsWith('.jpg') && n !== 'invalid.jpg').sort().slice(0, ctx.quick ? 4 : 12);
  const paths = names.map((n) => join(DEEPFACE_DATA, n));
  const reps = ctx.quick ? 1 : 2;
  const env = { ...process.env, ...benchEnv({ gateway: 0, mcp: 0, console: 0, modelServer: 0, dataDir: mkdtempSync(join(tmpdir(), 'fc-det-')), models: ['Dlib'] }), FACECOMPUTE_ALLOWED_DETECTORS: MTCNN_DETECTORS.join(',') };
  const cfg = loadConfig(env);
  const state = await startRegistry(cfg, createLogger('bench-detectors', 'warn'), engines(cfg));
  const t0 = performance.now();
  while (!state.warmup.ready) {
    const w = state.warmup.snapshot();
    if (w.status === 'error') throw new Error(`our registry failed to warm up: ${w.error}`);
    if (performance.now() - t0 > 300_000) throw new Error('our registry did not warm up in 300 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const ops = imageOps(cfg);
  const pipeline = new Pipeline({ image: ops, detectors: state.detectors, recognizers: state.recognizers, fallbackDetector: null });
  const ours = async (detector: string) => {
    const opts = { model_name: 'Dlib', detector_backend: detector, align: true, enforce_detection: false, expand_percentage: 0, normalization: 'base' as const };
    await pipeline.extractFaces(await ops.decode(await readFile(paths[0] as string)), opts, 'img');
    let faces = 0;
    const w0 = performance.now();
    const c0 = process.cpuUsage();
    for (let r = 0; r < reps; r++) {
      faces = 0;
      for (const p of paths) faces += (await pipeline.extractFaces(await ops.decode(await readFile(p)), opts, 'img')).faces.length;
    }
    const cpu = process.cpuUsage(c0);
    const n = reps * paths.length;
    return { ms_per_image: (performance.now() - w0) / n, cpu_ms_per_image: (cpu.user + cpu.system) / 1000 / n, faces };
  };
  const rows: DetectorRow[] = [];
  for (const detector of MTCNN_DETECTORS) {
    if (!state.detectors.has(detector)) {
      rows.push({ detector, images: paths.length, reps, ours: { ms_per_image: NaN, cpu_ms_per_image: NaN, faces: 0 }, deepface: null, speedup: null, cpu_ratio: null, skipped: `${detector} is not installed here (facecompute models fetch ${detector})` });
      continue;
    }
    const python = detector === 'mtcnn' ? DEEPFACE_PYTHON : FASTMTCNN_PYTHON;
    const first = await ours(detector);
    let deepface: DetectorRow['deepface'] = null;
    let skipped: string | undefined;
    if (!existsSync(python)) skipped = `DeepFace with ${detector} needs ${python} (${detector === 'mtcnn' ? 'npm run bench:setup' : 'FASTMTCNN_PYTHON: tools/reference/fastmtcnn-requirements.lock'})`;
    else {
      const home = mkdtempSync(join(tmpdir(), 'deepface-home-'));
      const out = execFileSync(python, [join(REPO_ROOT, 'bench', 'deepface', 'detector_bench.py'), detector, String(reps), ...paths], { encoding: 'utf8', env: { ...process.env, DEEPFACE_HOME: home }, stdio: ['ignore', 'pipe', 'ignore'], timeout: 1_800_000 });
      deepface = JSON.parse(out.trim().split('\n').pop() as string);
    }
    const second = await ours(detector);
    const best = first.ms_per_image <= second.ms_per_image ? first : second;
    const row: DetectorRow = { detector, images: paths.length, reps, ours: best, deepface, speedup: deepface ? deepface.ms_per_image / best.ms_per_image : null, cpu_ratio: deepface ? deepface.cpu_ms_per_image / best.cpu_ms_per_image : null, ...(skipped ? { skipped } : {}) };
    rows.push(row);
    ctx.log(`detectors: ${detector}: ours ${best.ms_per_image.toFixed(1)} ms (${best.cpu_ms_per_image.toFixed(1)} CPU ms), DeepFace ${deepface ? `${deepface.ms_per_image.toFixed(1)} ms (${deepface.cpu_ms_per_image.toFixed(1)} CPU ms)` : skipped}`);
  }
  for (const d of state.detectors.values()) await d.close?.();
  for (const r of state.recognizers.values()) await r.close?.();
  const large = largeImageRows(ctx, MTCNN_DETECTORS.filter((d) => state.detectors.has(d)));
  ctx.table(['detector', 'ms/image ours', 'DeepFace', '×', 'CPU ms ours', 'DeepFace', '×', 'faces ours / DeepFace'], rows.map((r) => [r.detector, r.ours.ms_per_image.toFixed(1), r.deepface?.ms_per_image.toFixed(1) ?? '-', r.speedup?.toFixed(2) ?? '-', r.ours.cpu_ms_per_image.toFixed(1), r.deepface?.cpu_ms_per_image.toFixed(1) ?? '-', r.cpu_ratio?.toFixed(2) ?? '-', `${r.ours.faces} / ${r.deepface?.faces ?? '-'}`]));
  if (large.length) {
    ctx.table(['detector', 'large image', 'peak RSS MiB served / whole', '×', 's served / whole'], large.map((r) => [r.detector, `${r.width}x${r.height}`, `${r.served.peak_rss_mib.toFixed(0)} / ${r.whole.peak_rss_mib.toFixed(0)}`, r.peak_ratio.toFixed(2), `${r.served.seconds[0]!.toFixed(1)} / ${r.whole.seconds[0]!.toFixed(1)}`]));
  }
  return { images: names, rows, large_image: large };
}

export interface LargeImageRun { seconds: number[]; peak_rss_mib: number; rss_after_mib: number; faces: number; width: number; height: number }
export interface LargeImageRow { detector: string; width: number; height: number; served: LargeImageRun; whole: LargeImageRun; peak_ratio: number }

/**
 * Memory of one large image (bench/detectors/mtcnn-memory.ts, a fresh process each): the served run
 * limits against the same detection with them lifted, in the same run.
 */
function largeImageRows(ctx: SuiteContext, detectors: string[]): LargeImageRow[] {
  const pixels = ctx.quick ? 4_000_000 : 20_000_000;
  const run = (detector: string, limits: 'served' | 'whole'): LargeImageRun =>
    JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'detectors', 'mtcnn-memory.ts'), '--detector', detector, '--limits', limits, '--pixels', String(pixels)], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 600_000 }).trim().split('\n').pop() as string);
  const out: LargeImageRow[] = [];
  for (const detector of detectors) {
    const served = run(detector, 'served');
    const whole = run(detector, 'whole');
    out.push({ detector, width: served.width, height: served.height, served, whole, peak_ratio: whole.peak_rss_mib / served.peak_rss_mib });
    ctx.log(`detectors: ${detector} on a ${served.width}x${served.height} bordered image: peak RSS ${served.peak_rss_mib.toFixed(0)} MiB (run limits) vs ${whole.peak_rss_mib.toFixed(0)} MiB (lifted)`);
  }
  return out;
}
