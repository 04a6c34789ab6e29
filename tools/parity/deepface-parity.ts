/**
 * Parity with DeepFace itself, measured: our pipeline (in process, the real engines) against the
 * outputs DeepFace 0.0.100 recorded in test/fixtures/deepface/ (tools/reference/deepface_reference.py),
 * for Dlib with the opencv, yunet and skip detectors.
 *
 *   node --import tsx tools/parity/deepface-parity.ts [--lfw]   →  bench/results/parity-dlib.json
 *
 * Reports embedding cosine similarity to DeepFace (median, minimum), facial-area IoU, face counts,
 * the decisions on test_asserted_pairs.csv and pairs_all.csv, and (with --lfw) LFW pairsDevTrain
 * accuracy for us and DeepFace side by side. test/deepface-parity.test.ts asserts the same figures.
 */
import { readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { startRegistry } from '../../src/model-server/registry.js';
import { engines, imageOps } from '../../src/model-server/adapters.js';
import { Pipeline } from '../../src/model-server/pipeline.js';
import type { PipelineOptions, RepresentFace } from '../../src/model-client/protocol.js';

export const REPO = resolve(import.meta.dirname, '..', '..');
export const SHARED = resolve(process.env['SHARED_DATA_DIR'] ?? join(REPO, '..', 'shared', 'data'));
const WEIGHTS = resolve(process.env['FACECOMPUTE_WEIGHTS_DIR'] ?? join(REPO, '..', 'shared', 'weights'));

export type Area = { x: number; y: number; w: number; h: number; left_eye: number[] | null; right_eye: number[] | null };
type RefFace = { facial_area: Area; face_confidence: number; embedding: number[] };
type RefEntry = { faces?: RefFace[]; error?: string };

export const DETECTORS = ['opencv', 'yunet', 'skip'] as const;
export const DLIB_COSINE_THRESHOLD = 0.07;

export function cosineDistance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += (a[i] as number) * (b[i] as number);
    na += (a[i] as number) ** 2;
    nb += (b[i] as number) ** 2;
  }
  return 1 - d / Math.sqrt(na * nb);
}

function iou(a: Area, b: Area): number {
  const x1 = Math.max(a.x, b.x), y1 = Math.max(a.y, b.y);
  const x2 = Math.min(a.x + a.w, b.x + b.w), y2 = Math.min(a.y + a.h, b.y + b.h);
  const inter = Math.max(0, x2 - x1) * Math.max(0, y2 - y1);
  return inter / (a.w * a.h + b.w * b.h - inter);
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.floor((s.length - 1) / 2)] as number) : NaN;
};

function readPairs(file: string): Array<[string, string, number]> {
  return readFileSync(join(SHARED, 'deepface', file), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => l.split(','))
    .map((f) => [f[0] as string, f[1] as string, Number(f[2])]);
}

/** min cosine over face pairs, or null when either side has no face (an error either way). */
function pairDistance(a: number[][] | null, b: number[][] | null): number | null {
  if (!a || !b || a.length === 0 || b.length === 0) return null;
  let best = Infinity;
  for (const x of a) for (const y of b) best = Math.min(best, Math.round(cosineDistance(x, y) * 1e6) / 1e6);
  return best;
}

/** `detectorMaxSide`: FACECOMPUTE_DETECTOR_MAX_SIDE (default PARITY_DETECTOR_MAX_SIDE, else 0: detect at full size). */
export async function createPipeline(model = 'Dlib', detectorMaxSide: string | number = process.env['PARITY_DETECTOR_MAX_SIDE'] ?? '0'): Promise<{ pipeline: Pipeline; close: () => Promise<void> }> {
  const config = loadConfig({
    FACECOMPUTE_WEIGHTS_DIR: WEIGHTS,
    FACECOMPUTE_MODELS_CACHE: process.env['FACECOMPUTE_MODELS_CACHE'] ?? join(REPO, '.models-cache'),
    FACECOMPUTE_ALLOWED_MODELS: model,
    FACECOMPUTE_DEFAULT_MODEL: model,
    FACECOMPUTE_ALLOWED_DETECTORS: 'opencv,yunet,skip',
    FACECOMPUTE_LOG_LEVEL: 'silent',
    FACECOMPUTE_DETECTOR_MAX_SIDE: String(detectorMaxSide),
  });
  const state = await startRegistry(config, createLogger('parity', 'silent'), engines(config));
  while (state.warmup.snapshot().status === 'warming') await new Promise((r) => setTimeout(r, 100));
  if (!state.warmup.ready) throw new Error(`warmup failed: ${state.warmup.snapshot().error}`);
  const pipeline = new Pipeline({ image: imageOps(config), detectors: state.detectors, recognizers: state.recognizers, fallbackDetector: null, detectorMaxSide: config.limits.detectorMaxSide });
  return {
    pipeline,
    close: async () => {
      for (const r of state.recognizers.values()) await r.close?.();
    },
  };
}

export async function ourFaces(p: Pipeline, bytes: Buffer, detector: string, enforce = true, model = 'Dlib'): Promise<RepresentFace[] | null> {
  const opts: PipelineOptions & { max_faces: null; l2_normalize: false } = {
    model_name: model, detector_backend: detector, align: true, enforce_detection: enforce, expand_percentage: 0, normalization: 'base', max_faces: null, l2_normalize: false,
  };
  const img = await imageOps(loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' })).decode(bytes);
  try {
    return (await p.represent([img], opts))[0] ?? [];
  } catch (err) {
    if ((err as { code?: string }).code === 'no_face_detected') return null;
    throw err;
  }
}

export async function deepfaceParity(p: Pipeline, detectors: readonly string[] = DETECTORS) {
  const ref = JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/represent-dlib.json'), 'utf8')) as { meta: unknown; images: Record<string, Record<string, RefEntry>> };
  const report: Record<string, unknown> = { deepface: ref.meta };
  for (const det of detectors) {
    const cos: number[] = [];
    const ious: number[] = [];
    let sameCount = 0;
    let images = 0;
    const ours: Record<string, number[][] | null> = {};
    const theirs: Record<string, number[][] | null> = {};
    const countDiffs: string[] = [];
    for (const [name, byDet] of Object.entries(ref.images)) {
      const r = byDet[det];
      if (!r) continue;
      images++;
      const mine = await ourFaces(p, readFileSync(join(SHARED, 'deepface', name)), det);
      ours[name] = mine ? mine.map((f) => f.embedding) : null;
      theirs[name] = r.faces ? r.faces.map((f) => f.embedding) : null;
      const nMine = mine?.length ?? 0;
      const nTheirs = r.faces?.length ?? 0;
      if (nMine === nTheirs) sameCount++;
      else countDiffs.push(`${name}: ours ${nMine}, deepface ${nTheirs}`);
      // Match faces by best IoU, then compare their embeddings.
      for (const f of r.faces ?? []) {
        let best: RepresentFace | null = null;
        let bestIou = -1;
        for (const m of mine ?? []) {
          const v = iou(m.facial_area as unknown as Area, f.facial_area);
          if (v > bestIou) {
            bestIou = v;
            best = m;
          }
        }
        if (best) {
          ious.push(bestIou);
          cos.push(1 - cosineDistance(best.embedding, f.embedding));
        }
      }
    }
    const decide = (pairs: Array<[string, string, number]>) => {
      let same = 0, total = 0, oursCorrect = 0, theirsCorrect = 0;
      const diffs: string[] = [];
      for (const [a, b, label] of pairs) {
        if (!(a in ours) || !(b in ours)) continue;
        total++;
        const dOurs = pairDistance(ours[a] ?? null, ours[b] ?? null);
        const dTheirs = pairDistance(theirs[a] ?? null, theirs[b] ?? null);
        const vOurs = dOurs === null ? 'error' : dOurs <= DLIB_COSINE_THRESHOLD;
        const vTheirs = dTheirs === null ? 'error' : dTheirs <= DLIB_COSINE_THRESHOLD;
        if (vOurs === vTheirs) same++;
        else diffs.push(`${a}-${b}: ours ${dOurs}, deepface ${dTheirs}`);
        if (vOurs === (label === 1)) oursCorrect++;
        if (vTheirs === (label === 1)) theirsCorrect++;
      }
      return { pairs: total, same_decision: same, same_decision_rate: same / total, ours_accuracy: oursCorrect / total, deepface_accuracy: theirsCorrect / total, differing: diffs.slice(0, 20) };
    };
    report[det] = {
      images,
      same_face_count: sameCount,
      same_face_count_rate: sameCount / images,
      face_count_differences: countDiffs,
      faces_matched: cos.length,
      cosine_median: median(cos),
      cosine_min: Math.min(...cos),
      iou_median: median(ious),
      iou_min: Math.min(...ious),
      iou_ge_095_rate: ious.filter((x) => x >= 0.95).length / Math.max(1, ious.length),
      test_asserted_pairs: decide(readPairs('test_asserted_pairs.csv')),
      pairs_all: decide(readPairs('pairs_all.csv')),
    };
  }
  return report;
}

export type DlibLfwRef = { meta: Record<string, unknown>; pairs: Array<[string, string, number]>; detectors: Record<string, { cosine: Array<number | null>; accuracy: number; seconds: number }> };

export function dlibLfwRef(): DlibLfwRef {
  return JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/lfw-dlib.json'), 'utf8')) as DlibLfwRef;
}

/**
 * LFW View 1 DevTrain against DeepFace's recorded distances (lfw-dlib.json), per recorded detector:
 * our accuracy, DeepFace's, and every pair decided differently. `only` limits the pairs (indexes into
 * the fixture's list), for the bounded CI check (test/dlib-lfw.test.ts).
 */
export async function lfwParity(p: Pipeline, only?: number[]) {
  const path = join(REPO, 'test/fixtures/deepface/lfw-dlib.json');
  if (!existsSync(path)) return { note: 'no DeepFace LFW fixture; run tools/reference/deepface_reference.py' };
  const ref = dlibLfwRef();
  const indexes = only ?? ref.pairs.map((_, i) => i);
  const out: Record<string, unknown> = {};
  for (const [det, r] of Object.entries(ref.detectors)) {
    const cache = new Map<string, number[][]>();
    const emb = async (rel: string) => {
      if (!cache.has(rel)) {
        const f = await ourFaces(p, readFileSync(join(SHARED, 'lfw-devtrain', rel)), det, false);
        cache.set(rel, (f ?? []).map((x) => x.embedding));
      }
      return cache.get(rel) as number[][];
    };
    let correct = 0, theirsCorrect = 0, same = 0;
    const differing: Array<{ pair: number; ours: number | null; deepface: number | null }> = [];
    const started = performance.now();
    for (const i of indexes) {
      const [a, b, label] = ref.pairs[i] as [string, string, number];
      const d = pairDistance(await emb(a), await emb(b));
      const v = d !== null && d <= DLIB_COSINE_THRESHOLD;
      if (v === (label === 1)) correct++;
      const theirs = r.cosine[i] ?? null;
      const tv = theirs !== null && theirs <= DLIB_COSINE_THRESHOLD;
      if (tv === (label === 1)) theirsCorrect++;
      if (v === tv) same++;
      else differing.push({ pair: i, ours: d, deepface: theirs });
    }
    out[det] = {
      pairs: indexes.length,
      images: cache.size,
      same_decision: same,
      same_decision_rate: same / indexes.length,
      ours_accuracy: correct / indexes.length,
      deepface_accuracy: theirsCorrect / indexes.length,
      deepface_recorded_accuracy: r.accuracy,
      differing,
      seconds: Math.round((performance.now() - started) / 1000),
      deepface_seconds: r.seconds,
    };
  }
  return out;
}

async function main() {
  const { pipeline, close } = await createPipeline();
  const report: Record<string, unknown> = { deepface_images: await deepfaceParity(pipeline) };
  const side = process.env['PARITY_DETECTOR_MAX_SIDE'];
  const out = join(REPO, `bench/results/parity-dlib${side && side !== '0' ? `-maxside${side}` : ''}.json`);
  if (process.argv.includes('--lfw')) report['lfw_devtrain'] = await lfwParity(pipeline);
  // Without --lfw, the LFW figures of the last --lfw run stay (the README quotes both parts of this file).
  else if (existsSync(out)) {
    const last = (JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>)['lfw_devtrain'];
    if (last) report['lfw_devtrain'] = last;
  }
  await close();
  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(out, JSON.stringify(report, null, 2));
  const d = report['deepface_images'] as Record<string, Record<string, unknown>>;
  for (const det of DETECTORS) {
    const r = d[det] as Record<string, any>;
    console.log(
      `${det.padEnd(7)} faces ${r.same_face_count}/${r.images} same count; cosine median ${r.cosine_median.toFixed(7)} min ${r.cosine_min.toFixed(7)}; IoU median ${r.iou_median.toFixed(4)} min ${r.iou_min.toFixed(4)}; ` +
        `asserted pairs same ${r.test_asserted_pairs.same_decision}/${r.test_asserted_pairs.pairs}; all pairs same ${r.pairs_all.same_decision}/${r.pairs_all.pairs} (acc ours ${r.pairs_all.ours_accuracy.toFixed(4)} deepface ${r.pairs_all.deepface_accuracy.toFixed(4)})`,
    );
  }
  if (report['lfw_devtrain']) console.log(JSON.stringify(report['lfw_devtrain']));
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
