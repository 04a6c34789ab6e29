/**
 * Parity of DeepFace's MTCNN detectors (`mtcnn`, `fastmtcnn`) with DeepFace itself, measured: our
 * detectors and pipeline (in process, the real engines) against what DeepFace 0.0.100 recorded with
 * mtcnn 1.0.0 / facenet-pytorch 2.6.0 (tools/reference/mtcnn_reference.py), image by image.
 *
 *   node --import tsx tools/parity/mtcnn-parity.ts --detector mtcnn --set deepface [--ref FILE] [--limit N]
 *
 * writes its figures into bench/results/parity-mtcnn.json under [detector][set]:
 *   - detector level, on the bordered image DeepFace detects on: images with the same face count,
 *     faces whose (x, y, w, h) are identical, the largest box and eye differences in pixels, the
 *     largest confidence difference;
 *   - embedding level (Facenet and Dlib, DeepFace.represent with align=True, enforce_detection=False):
 *     cosine of ours to DeepFace's per face, how many reach 0.99999, the minimum;
 *   - LFW only: decisions on the 2,200 pairsDevTrain pairs from those embeddings (minimum cosine
 *     distance over face pairs against DeepFace's threshold), ours against DeepFace's.
 * The reference is the run's JSONL (.cache/mtcnn-reference/<detector>-<set>.jsonl, embeddings at full
 * precision) or, without it, the committed fixture test/fixtures/mtcnn/<detector>-<set>.json.
 * test/mtcnn-parity.test.ts recomputes what CI affords and holds it to the results file.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mtcnnFixture, readJsonFile } from './fixture-files.js';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { startRegistry } from '../../src/model-server/registry.js';
import { engines, imageOps } from '../../src/model-server/adapters.js';
import { Pipeline } from '../../src/model-server/pipeline.js';
import { findThreshold } from '../../src/deepface/decision.js';
import type { FaceDetector, NativeImage } from '../../src/model-server/engines.js';
import { cosineDistance, REPO, SHARED } from './deepface-parity.js';

export const MODELS = ['Facenet', 'Dlib'] as const;
export const RESULTS_FILE = 'bench/results/parity-mtcnn.json';
const WEIGHTS = process.env['FACECOMPUTE_WEIGHTS_DIR'] ?? join(REPO, '..', 'shared', 'weights');

export type Region = { x: number; y: number; w: number; h: number; left_eye: number[] | null; right_eye: number[] | null; confidence: number };
type RefFace = { facial_area: Record<string, unknown>; face_confidence: number; embedding?: number[] };
export type RefImage = { regions?: Region[]; faces?: Partial<Record<(typeof MODELS)[number], RefFace[]>>; error?: string };

/** The reference rows by image path: the run's JSONL when present, else the committed fixture. */
export function loadReference(detector: string, set: string, file?: string): { source: string; meta: unknown; images: Record<string, RefImage> } {
  const jsonl = file ?? join(REPO, '.cache', 'mtcnn-reference', `${detector}-${set}.jsonl`);
  if (existsSync(jsonl) && jsonl.endsWith('.jsonl')) {
    const images: Record<string, RefImage> = {};
    for (const line of readFileSync(jsonl, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const r = JSON.parse(line) as RefImage & { path: string };
      images[r.path] = r;
    }
    const metaFile = jsonl.replace(/\.jsonl$/, '.meta.json');
    return { source: jsonl, meta: existsSync(metaFile) ? JSON.parse(readFileSync(metaFile, 'utf8')) : null, images };
  }
  const fixture = file ?? mtcnnFixture(detector, set);
  const f = readJsonFile<{ meta: unknown; images: Record<string, RefImage> }>(fixture);
  return { source: fixture, meta: f.meta, images: f.images };
}

export function imagePath(set: string, rel: string): string {
  return join(SHARED, set === 'deepface' ? 'deepface' : 'lfw-devtrain', rel);
}

export async function createMtcnnPipeline(): Promise<{ pipeline: Pipeline; detectors: ReadonlyMap<string, FaceDetector>; close: () => Promise<void> }> {
  const config = loadConfig({
    FACECOMPUTE_WEIGHTS_DIR: WEIGHTS,
    FACECOMPUTE_MODELS_CACHE: process.env['FACECOMPUTE_MODELS_CACHE'] ?? join(REPO, '.models-cache'),
    FACECOMPUTE_ALLOWED_MODELS: MODELS.join(','),
    FACECOMPUTE_DEFAULT_MODEL: 'Facenet',
    FACECOMPUTE_ALLOWED_DETECTORS: 'mtcnn,fastmtcnn',
    FACECOMPUTE_DEFAULT_DETECTOR: 'mtcnn',
    FACECOMPUTE_LOG_LEVEL: 'silent',
    FACECOMPUTE_DETECTOR_MAX_SIDE: '0',
  });
  const state = await startRegistry(config, createLogger('parity', 'silent'), engines(config));
  while (state.warmup.snapshot().status === 'warming') await new Promise((r) => setTimeout(r, 100));
  if (!state.warmup.ready) throw new Error(`warmup failed: ${state.warmup.snapshot().error}; unavailable: ${JSON.stringify(state.unavailable)}`);
  const pipeline = new Pipeline({ image: imageOps(config), detectors: state.detectors, recognizers: state.recognizers, fallbackDetector: null, detectorMaxSide: 0 });
  return {
    pipeline,
    detectors: state.detectors,
    close: async () => {
      for (const r of state.recognizers.values()) await r.close?.();
      for (const d of state.detectors.values()) await d.close?.();
    },
  };
}

/** What our detector hands the pipeline for one image, on DeepFace's align border. */
export async function ourRegions(detector: FaceDetector, img: NativeImage): Promise<Region[]> {
  const ops = imageOps(loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' }));
  const { image } = await ops.border(img);
  return (await detector.detect(image)).map((d) => ({ x: d.x, y: d.y, w: d.w, h: d.h, left_eye: d.left_eye ?? null, right_eye: d.right_eye ?? null, confidence: d.confidence }));
}

export interface RegionStats {
  images: number;
  same_face_count: number;
  faces: number;
  areas_identical: number;
  /** Faces within every per-face bar: identical box and eyes, confidence within 1e-4. */
  faces_exact: number;
  area_max_px: number;
  eye_max_px: number;
  confidence_max_diff: number;
  differences: string[];
}

export function compareRegions(stats: RegionStats, name: string, ours: Region[], theirs: Region[]): void {
  stats.images++;
  if (ours.length !== theirs.length) {
    stats.differences.push(`${name}: ${ours.length} faces, DeepFace ${theirs.length}`);
    return;
  }
  stats.same_face_count++;
  for (const [i, a] of ours.entries()) {
    const b = theirs[i] as Region;
    stats.faces++;
    const px = Math.max(Math.abs(a.x - b.x), Math.abs(a.y - b.y), Math.abs(a.w - b.w), Math.abs(a.h - b.h));
    if (px === 0) stats.areas_identical++;
    stats.area_max_px = Math.max(stats.area_max_px, px);
    const eye = Math.max(
      ...(['left_eye', 'right_eye'] as const).map((k) => {
        const p = a[k];
        const q = b[k];
        return p && q ? Math.max(Math.abs((p[0] as number) - (q[0] as number)), Math.abs((p[1] as number) - (q[1] as number))) : p === q ? 0 : Infinity;
      }),
    );
    stats.eye_max_px = Math.max(stats.eye_max_px, eye);
    const confidence = Math.abs(a.confidence - b.confidence);
    stats.confidence_max_diff = Math.max(stats.confidence_max_diff, confidence);
    // A face is listed when it misses any per-face bar (box identical, eyes identical, confidence within
    // 1e-4), so that the test can hold every other re-detected face to all three.
    const missed: string[] = [];
    if (px !== 0) missed.push(`box (${a.x},${a.y},${a.w},${a.h}) vs (${b.x},${b.y},${b.w},${b.h})`);
    if (eye !== 0) missed.push(`eyes ${eye} px apart`);
    if (confidence > 1e-4) missed.push(`confidence ${a.confidence} vs ${b.confidence}`);
    if (missed.length > 0) stats.differences.push(`${name}#${i}: ${missed.join('; ')}`);
    else stats.faces_exact++;
  }
}

export function emptyStats(): RegionStats {
  return { images: 0, same_face_count: 0, faces: 0, areas_identical: 0, faces_exact: 0, area_max_px: 0, eye_max_px: 0, confidence_max_diff: 0, differences: [] };
}

type EmbStats = { faces: number; at_least_0_99999: number; cosine_min: number };

/** min cosine distance over face pairs, rounded as DeepFace rounds (6 decimals); null without faces. */
function pairDistance(a: number[][] | undefined, b: number[][] | undefined): number | null {
  if (!a || !b || a.length === 0 || b.length === 0) return null;
  let best = Infinity;
  for (const x of a) for (const y of b) best = Math.min(best, Math.round(cosineDistance(x, y) * 1e6) / 1e6);
  return best;
}

function lfwPairs(): Array<[string, string, number]> {
  const lines = readFileSync(join(SHARED, 'lfw-devtrain', 'pairsDevTrain.txt'), 'utf8').trim().split('\n').slice(1);
  const img = (p: string, n: string) => `${p}/${p}_${String(Number(n)).padStart(4, '0')}.jpg`;
  return lines.map((l) => l.split('\t')).map((f) => (f.length === 3 ? [img(f[0] as string, f[1] as string), img(f[0] as string, f[2] as string), 1] : [img(f[0] as string, f[1] as string), img(f[2] as string, f[3] as string), 0]));
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { detector: { type: 'string' }, set: { type: 'string', default: 'deepface' }, ref: { type: 'string' }, limit: { type: 'string' }, 'no-embeddings': { type: 'boolean' } } });
  const detector = values.detector ?? 'mtcnn';
  const set = values.set ?? 'deepface';
  const ref = loadReference(detector, set, values.ref);
  const { pipeline, detectors, close } = await createMtcnnPipeline();
  const det = detectors.get(detector);
  if (!det) throw new Error(`${detector} is not installed: run \`facecompute models fetch ${detector}\``);
  const ops = imageOps(loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' }));
  const names = Object.keys(ref.images).sort();
  const limit = values.limit ? Number(values.limit) : names.length;
  const regions = emptyStats();
  const emb: Record<string, EmbStats> = Object.fromEntries(MODELS.map((m) => [m, { faces: 0, at_least_0_99999: 0, cosine_min: 1 }]));
  const ours: Record<string, Record<string, number[][]>> = Object.fromEntries(MODELS.map((m) => [m, {}]));
  const theirs: Record<string, Record<string, number[][]>> = Object.fromEntries(MODELS.map((m) => [m, {}]));
  const t0 = Date.now();
  let done = 0;
  for (const name of names.slice(0, limit)) {
    const r = ref.images[name] as RefImage;
    if (r.error || !r.regions) continue;
    const img = await ops.decode(readFileSync(imagePath(set, name)));
    compareRegions(regions, name, await ourRegions(det, img), r.regions);
    if (!values['no-embeddings']) {
      for (const model of MODELS) {
        const rf = r.faces?.[model];
        if (!rf || !rf[0]?.embedding) continue;
        const mine = (await pipeline.represent([img], { model_name: model, detector_backend: detector, align: true, enforce_detection: false, expand_percentage: 0, normalization: 'base', max_faces: null, l2_normalize: false }))[0] ?? [];
        ours[model]![name] = mine.map((f) => f.embedding);
        theirs[model]![name] = rf.map((f) => f.embedding as number[]);
        if (mine.length !== rf.length) continue;
        for (const [i, f] of mine.entries()) {
          const c = 1 - cosineDistance(f.embedding, rf[i]!.embedding as number[]);
          const s = emb[model] as EmbStats;
          s.faces++;
          if (c >= 0.99999) s.at_least_0_99999++;
          s.cosine_min = Math.min(s.cosine_min, c);
        }
      }
    }
    if (++done % 200 === 0) process.stderr.write(`${detector} ${set}: ${done} images in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
  }
  const out: Record<string, unknown> = { reference: ref.meta, reference_source: ref.source.replace(`${REPO}/`, ''), ...regions, differences: regions.differences.slice(0, 40) };
  if (!values['no-embeddings']) out['embeddings'] = emb;
  if (set === 'lfw' && !values['no-embeddings'] && limit >= names.length) {
    const pairs = lfwPairs();
    const decisions: Record<string, unknown> = {};
    for (const model of MODELS) {
      const t = findThreshold(model, 'cosine');
      let same = 0, compared = 0, oursRight = 0, theirsRight = 0;
      // Every pair decided otherwise, with both distances: which images and how near the threshold.
      const differing: string[] = [];
      for (const [a, b, s] of pairs) {
        const dOurs = pairDistance(ours[model]![a], ours[model]![b]);
        const dTheirs = pairDistance(theirs[model]![a], theirs[model]![b]);
        if (dOurs === null || dTheirs === null) continue;
        compared++;
        if ((dOurs <= t) === (dTheirs <= t)) same++;
        else differing.push(`${a} ~ ${b}: ${dOurs} vs DeepFace ${dTheirs}`);
        if ((dOurs <= t) === (s === 1)) oursRight++;
        if ((dTheirs <= t) === (s === 1)) theirsRight++;
      }
      decisions[model] = { pairs: pairs.length, compared, same_decision: same, ours_accuracy: oursRight / pairs.length, deepface_accuracy: theirsRight / pairs.length, threshold: t, differences: differing };
    }
    out['pairs'] = decisions;
  }
  out['seconds'] = Math.round((Date.now() - t0) / 1000);
  const file = join(REPO, RESULTS_FILE);
  const all = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>>) : {};
  (all[detector] ??= {})[set] = out;
  if (limit >= names.length) writeFileSync(file, `${JSON.stringify(all, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify({ detector, set, ...out, differences: regions.differences.slice(0, 10) }, null, 1)}\n`);
  await close();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
