/**
 * Should faces that only the detector fallback found be kept? Measured on LFW View 1 DevTrain only
 * (2,200 pairs, 3,443 images; never a test split), in process with the real engines:
 *
 *   nice -n 10 node --import tsx tools/parity/fallback-rule.ts [--model Dlib] [--write-default <rule>]
 *     → bench/results/fallback-rule-<model>.json (and a table on stdout); with --write-default, the
 *       embeddings under that rule (the service's default) as tools/calibration/roc.ts's opencv cache
 *
 * For every image where `opencv` finds no face (DeepFace then embeds the whole image) it records the
 * whole-image embedding and every face `retinaface` finds, with its box and embedding; images where
 * `opencv` finds a face are the same under every rule. Each candidate rule then decides, per
 * fallback face, keep or drop; an image whose fallback faces are all dropped is embedded whole,
 * as with enforce_detection=false (the benchmarks' setting; with enforce_detection=true such an image
 * would be refused instead). Per rule: accuracy on the 2,200 pairs at DeepFace's thresholds for each
 * metric, the pairs it changes, and an exact McNemar test against keeping every fallback face (the
 * current behaviour) and against DeepFace's behaviour (never falling back).
 *
 * The embeddings are cached in .cache/lfw/<model>-opencv-fallback.json, so the rules can be
 * re-evaluated without the pipeline (delete the file to recompute).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { THRESHOLDS } from '../../src/deepface/decision.js';
import type { DistanceMetric, PipelineOptions } from '../../src/model-client/protocol.js';
import { LFW, REPO, devTrainImages, devTrainPairs, pairDistance, startPipeline, type Pair } from './lfw-devtrain.js';

interface FallbackFace {
  x: number;
  y: number;
  w: number;
  h: number;
  confidence: number;
  embedding: number[];
}

/** One image: opencv's faces, or (none found) the whole image and what the fallback finds. */
interface ImageRecord {
  width: number;
  height: number;
  opencv: number[][];
  whole?: number[];
  fallback?: FallbackFace[];
}

type Rule = { name: string; what: string; keep: (f: FallbackFace, r: ImageRecord) => boolean };

const METRICS: DistanceMetric[] = ['cosine', 'euclidean', 'euclidean_l2'];

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
}

async function collect(model: string, cache: string): Promise<Record<string, ImageRecord>> {
  if (existsSync(cache)) return JSON.parse(readFileSync(cache, 'utf8')) as Record<string, ImageRecord>;
  const { pipeline, decode, close } = await startPipeline({ models: [model], detectors: ['opencv', 'retinaface'], fallback: 'retinaface' });
  const opts: PipelineOptions = { model_name: model, detector_backend: 'opencv', align: true, enforce_detection: false, expand_percentage: 0, normalization: 'base', detector_fallback: false };
  const out: Record<string, ImageRecord> = {};
  const images = devTrainImages();
  const t0 = performance.now();
  for (const [n, rel] of images.entries()) {
    const img = await decode(readFileSync(join(LFW, rel)));
    const off = await pipeline.extractFaces(img, opts, 'img');
    const first = off.faces[0];
    // DeepFace's whole image: the only face, (0, 0, W-1, H-1), confidence 0, from no detector.
    const whole = off.faces.length === 1 && first !== undefined && first.face_confidence === 0 && first.facial_area.x === 0 && first.facial_area.y === 0 && first.facial_area.w === img.width - 1 && first.facial_area.h === img.height - 1;
    if (!whole) {
      const [emb] = await pipeline.embedFaces(model, 'base', [off.faces]);
      out[rel] = { width: img.width, height: img.height, opencv: (emb ?? []).map((e) => Array.from(e.embedding)) };
    } else {
      const on = await pipeline.extractFaces(img, { ...opts, detector_fallback: true }, 'img');
      const found = on.faces.filter((f) => f.facial_area.detector === 'retinaface' && f.face_confidence > 0);
      const [w, fb] = await pipeline.embedFaces(model, 'base', [off.faces, found]);
      out[rel] = {
        width: img.width,
        height: img.height,
        opencv: [],
        whole: Array.from(w![0]!.embedding),
        fallback: (fb ?? []).map((f) => ({ x: f.facial_area.x, y: f.facial_area.y, w: f.facial_area.w, h: f.facial_area.h, confidence: f.face_confidence, embedding: Array.from(f.embedding) })),
      };
    }
    if (n % 250 === 0) process.stderr.write(`${n}/${images.length} ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
  }
  await close();
  mkdirSync(dirname(cache), { recursive: true });
  writeFileSync(cache, JSON.stringify(out));
  return out;
}

/** Embeddings of one image under a rule. */
function embeddingsUnder(r: ImageRecord, rule: Rule): number[][] {
  if (r.opencv.length > 0) return r.opencv;
  const kept = (r.fallback ?? []).filter((f) => rule.keep(f, r));
  return kept.length > 0 ? kept.map((f) => f.embedding) : [r.whole!];
}

/** Two-sided exact McNemar (binomial) p-value for b and c discordant pairs. */
function mcnemar(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  let p = 0;
  let term = Math.pow(0.5, n); // C(n, 0) / 2^n
  for (let i = 0; i <= k; i++) {
    p += term;
    term *= (n - i) / (i + 1);
  }
  return Math.min(1, 2 * p);
}

const minSide = (s: number) => (f: FallbackFace, r: ImageRecord) => Math.min(f.w, f.h) >= s * Math.min(r.width, r.height);
const central = (c: number) => (f: FallbackFace, r: ImageRecord) => Math.abs(f.x + f.w / 2 - r.width / 2) <= (c * r.width) / 2 && Math.abs(f.y + f.h / 2 - r.height / 2) <= (c * r.height) / 2;

const RULES: Rule[] = [
  { name: 'all', what: 'keep every fallback face (the behaviour before this measurement)', keep: () => true },
  { name: 'none', what: "keep none: DeepFace's behaviour (detector_fallback=false)", keep: () => false },
  ...[0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4].map((s) => ({ name: `min_side_${s}`, what: `shorter side >= ${s} x the image's shorter side`, keep: minSide(s) })),
  ...[0.25, 0.5, 0.75].map((c) => ({ name: `central_${c}`, what: `centre within the central ${c * 100}% of each axis`, keep: central(c) })),
  ...[
    [0.15, 0.5],
    [0.2, 0.5],
    [0.2, 0.75],
    [0.3, 0.5],
  ].map(([s, c]) => ({ name: `min_side_${s}+central_${c}`, what: `both: shorter side >= ${s} x the image's, centre within the central ${c! * 100}%`, keep: (f: FallbackFace, r: ImageRecord) => minSide(s!)(f, r) && central(c!)(f, r) })),
];

function evaluate(model: string, recs: Record<string, ImageRecord>, pairs: Pair[]) {
  const thresholds = THRESHOLDS[model]!;
  const fallbackImages = new Set(Object.entries(recs).filter(([, r]) => r.opencv.length === 0).map(([k]) => k));
  const affected = pairs.filter(([a, b]) => fallbackImages.has(a) || fallbackImages.has(b));
  const decisions = (rule: Rule, metric: DistanceMetric): boolean[] =>
    pairs.map(([a, b, same]) => {
      const d = pairDistance(embeddingsUnder(recs[a]!, rule), embeddingsUnder(recs[b]!, rule), metric);
      return (d !== null && d <= thresholds[metric]) === (same === 1);
    });
  const base = Object.fromEntries(METRICS.map((m) => [m, { all: decisions(RULES[0]!, m), none: decisions(RULES[1]!, m) }]));
  const rows = RULES.map((rule) => {
    const per: Record<string, unknown> = {};
    for (const m of METRICS) {
      const right = decisions(rule, m);
      const vs = (other: boolean[]) => {
        let b = 0, c = 0;
        right.forEach((x, i) => {
          if (x && !other[i]) b++;
          if (!x && other[i]) c++;
        });
        return { better: b, worse: c, mcnemar_p: Number(mcnemar(b, c).toFixed(4)) };
      };
      const affectedRight = pairs.reduce((s, p, i) => s + (affected.includes(p) && right[i] ? 1 : 0), 0);
      per[m] = {
        threshold: thresholds[m],
        correct: right.filter(Boolean).length,
        accuracy: Number((right.filter(Boolean).length / pairs.length).toFixed(5)),
        affected_correct: affectedRight,
        vs_all: vs(base[m]!.all),
        vs_deepface: vs(base[m]!.none),
      };
    }
    let kept = 0, dropped = 0, imagesKeeping = 0;
    for (const k of fallbackImages) {
      const r = recs[k]!;
      const n = (r.fallback ?? []).filter((f) => rule.keep(f, r)).length;
      kept += n;
      dropped += (r.fallback?.length ?? 0) - n;
      if (n > 0) imagesKeeping++;
    }
    return { rule: rule.name, what: rule.what, fallback_faces_kept: kept, fallback_faces_dropped: dropped, images_using_fallback_faces: imagesKeeping, ...per };
  });
  const faces = [...fallbackImages].flatMap((k) => (recs[k]!.fallback ?? []).map((f) => ({ image: k, ...f, rel_side: Math.min(f.w, f.h) / Math.min(recs[k]!.width, recs[k]!.height) })));
  return {
    images: Object.keys(recs).length,
    images_without_opencv_face: fallbackImages.size,
    images_where_fallback_finds_nothing: [...fallbackImages].filter((k) => (recs[k]!.fallback ?? []).length === 0).length,
    pairs: pairs.length,
    pairs_with_a_fallback_image: affected.length,
    fallback_faces: faces
      .sort((a, b) => a.rel_side - b.rel_side)
      .map((f) => ({ image: f.image, box: [f.x, f.y, f.w, f.h], confidence: f.confidence, rel_side: Number(f.rel_side.toFixed(3)), centre_offset: [Number(((f.x + f.w / 2) / recs[f.image]!.width - 0.5).toFixed(3)), Number(((f.y + f.h / 2) / recs[f.image]!.height - 0.5).toFixed(3))] })),
    rules: rows,
  };
}

async function main() {
  const model = arg('model', 'Dlib');
  const cache = join(REPO, '.cache', 'lfw', `${model}-opencv-fallback.json`);
  const recs = await collect(model, cache);
  const report = { what: 'faces found only by the detector fallback (retinaface after opencv found none): keep which? LFW View 1 DevTrain, in process', model, detector: 'opencv', fallback: 'retinaface', enforce_detection: false, ...evaluate(model, recs, devTrainPairs()) };
  const out = join(REPO, 'bench', 'results', `fallback-rule-${model.toLowerCase()}.json`);
  writeFileSync(out, `${JSON.stringify(report, null, 1)}\n`);
  console.log(`${report.images_without_opencv_face} of ${report.images} images without an opencv face (${report.images_where_fallback_finds_nothing} where retinaface finds none either); ${report.pairs_with_a_fallback_image} of ${report.pairs} pairs involve one`);
  console.log('rule'.padEnd(28) + 'kept  drop  ' + METRICS.map((m) => `${m} acc (vs all +/-, p)`.padEnd(34)).join(''));
  for (const r of report.rules as Array<Record<string, any>>) {
    console.log(
      String(r['rule']).padEnd(28) + String(r['fallback_faces_kept']).padEnd(6) + String(r['fallback_faces_dropped']).padEnd(6) +
        METRICS.map((m) => `${(r[m].accuracy * 100).toFixed(2)}% (+${r[m].vs_all.better}/-${r[m].vs_all.worse}, ${r[m].vs_all.mcnemar_p})`.padEnd(34)).join(''),
    );
  }
  console.log(`wrote ${out}`);
  // The service's default answer (detector_fallback on, under the rule it applies) as the ROC tool's
  // cache, so that tools/calibration/roc.ts need not embed DevTrain with opencv again.
  const served = arg('write-default', '');
  if (served) {
    const rule = RULES.find((r) => r.name === served);
    if (!rule) throw new Error(`unknown rule ${served}`);
    const cacheOut = join(REPO, '.cache', 'lfw', `${model}-opencv.json`);
    writeFileSync(cacheOut, JSON.stringify(Object.fromEntries(Object.entries(recs).map(([k, r]) => [k, embeddingsUnder(r, rule)]))));
    console.log(`wrote ${cacheOut} (rule ${served})`);
  }
}

await main();
