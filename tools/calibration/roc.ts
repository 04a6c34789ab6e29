/**
 * ROC curves on LFW View 1 DevTrain (2,200 pairs; never a test split) for each model × detector ×
 * metric that can serve here, in process with the real engines and the service's defaults
 * (align, enforce_detection=false as DeepFace's benchmarks run, detector_fallback on):
 *
 *   nice -n 10 node --import tsx tools/calibration/roc.ts [--models Dlib,Facenet] [--detectors opencv,yunet,retinaface,skip] [--cached] [--merge]
 *     → models/calibration/lfw-devtrain.json   (served by /capabilities as `calibration`, curves left out)
 *     → docs/roc-lfw-devtrain.svg              (the chart in the README)
 *     → test/fixtures/calibration/lfw-devtrain-distances.json.gz  (every pair's distance, in micro-units,
 *       so that test/calibration.test.ts recomputes each threshold and its FAR from the data it came from)
 *
 * Per metric: the threshold at FAR 1e-2 and 1e-3 (the largest threshold within it), the one with the
 * best accuracy, DeepFace's fixed threshold on the same pairs, the AUC and the curve
 * (src/deepface/calibration.ts has the arithmetic and test/calibration.test.ts checks it by hand).
 * Embeddings are cached per model and detector in .cache/lfw/<model>-<detector>.json (delete to
 * recompute); a model or detector that is not installed stops the tool. --merge keeps the committed
 * rows (and distances) of every model × detector not measured in this run, so a detector can be added
 * without recomputing the others' embeddings.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { THRESHOLDS } from '../../src/deepface/decision.js';
import { calibrate, type CalibrationFile, type MetricCalibration, type ScoredPair } from '../../src/deepface/calibration.js';
import type { DistanceMetric, PipelineOptions } from '../../src/model-client/protocol.js';
import { LFW, REPO, devTrainImages, devTrainPairs, pairDistance, startPipeline } from '../parity/lfw-devtrain.js';

const METRICS: DistanceMetric[] = ['cosine', 'euclidean', 'euclidean_l2', 'angular'];

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
}

type Embeddings = Record<string, number[][]>;

async function embeddings(models: string[], detectors: string[], cachedOnly = false): Promise<Map<string, Embeddings>> {
  const out = new Map<string, Embeddings>();
  const todo: Array<[string, string, string]> = [];
  for (const m of models) {
    for (const d of detectors) {
      const cache = join(REPO, '.cache', 'lfw', `${m}-${d}.json`);
      if (existsSync(cache)) out.set(`${m}/${d}`, JSON.parse(readFileSync(cache, 'utf8')) as Embeddings);
      else todo.push([m, d, cache]);
    }
  }
  if (todo.length === 0 || cachedOnly) return out;
  const { pipeline, decode, close } = await startPipeline({ models, detectors: [...new Set([...detectors, 'retinaface'])], fallback: 'retinaface' });
  const images = devTrainImages();
  try {
    for (const [model, detector, cache] of todo) {
      const opts: PipelineOptions & { max_faces: null; l2_normalize: false } = {
        model_name: model, detector_backend: detector, align: true, enforce_detection: false, expand_percentage: 0, normalization: 'base', max_faces: null, l2_normalize: false,
      };
      const e: Embeddings = {};
      const t0 = performance.now();
      for (const [n, rel] of images.entries()) {
        const faces = (await pipeline.represent([await decode(readFileSync(join(LFW, rel)))], opts))[0] ?? [];
        e[rel] = faces.map((f) => f.embedding);
        if (n % 500 === 0) process.stderr.write(`${model}/${detector}: ${n}/${images.length} ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
      }
      mkdirSync(dirname(cache), { recursive: true });
      writeFileSync(cache, JSON.stringify(e));
      out.set(`${model}/${detector}`, e);
    }
  } finally {
    await close();
  }
  return out;
}

const COLORS: Record<string, string> = { opencv: '#1f6feb', yunet: '#1a7f37', retinaface: '#d1242f', skip: '#9a6700', mtcnn: '#8250df', fastmtcnn: '#bf3989' };
const DASH: Record<string, string> = { Dlib: '', Facenet: '7 4' };

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** TAR against FAR (log scale), one line per model × detector for `metric`. */
function chart(file: CalibrationFile, metric: DistanceMetric): string {
  const W = 760, H = 470;
  const m = { l: 64, r: 210, t: 44, b: 56 };
  const pw = W - m.l - m.r, ph = H - m.t - m.b;
  const lo = -3;
  const x = (far: number) => m.l + ((Math.log10(Math.max(far, 10 ** lo)) - lo) / -lo) * pw;
  const yMin = 0.3;
  const y = (tar: number) => m.t + ph - ((Math.max(tar, yMin) - yMin) / (1 - yMin)) * ph;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="${m.l + pw / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(`ROC on LFW View 1 DevTrain (${file.pairs.genuine} + ${file.pairs.impostor} pairs), ${metric} distance`)}</text>`,
  ];
  for (const far of [1e-3, 1e-2, 1e-1, 1]) {
    parts.push(`<line x1="${x(far)}" x2="${x(far)}" y1="${m.t}" y2="${m.t + ph}" stroke="#d0d7de"/><text x="${x(far)}" y="${m.t + ph + 18}" text-anchor="middle" fill="#57606a">${far >= 1 ? '1' : `1e${Math.round(Math.log10(far))}`}</text>`);
  }
  for (let v = yMin; v <= 1.0001; v += 0.1) {
    parts.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${y(v)}" y2="${y(v)}" stroke="#d0d7de"/><text x="${m.l - 6}" y="${y(v) + 4}" text-anchor="end" fill="#57606a">${v.toFixed(1)}</text>`);
  }
  parts.push(`<text x="${m.l + pw / 2}" y="${H - 14}" text-anchor="middle">false-accept rate (impostor pairs accepted), log scale</text>`);
  parts.push(`<text transform="translate(16 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle">true-accept rate</text>`);
  let row = 0;
  for (const [model, byDet] of Object.entries(file.models)) {
    for (const [det, byMetric] of Object.entries(byDet)) {
      const c = byMetric[metric] as MetricCalibration | undefined;
      if (!c) continue;
      const color = COLORS[det] ?? '#57606a';
      const dash = DASH[model] ? ` stroke-dasharray="${DASH[model]}"` : '';
      // A step curve: TAR holds until the next impostor is accepted.
      const pts: string[] = [];
      c.curve.forEach(([far, tar], i) => {
        if (i > 0) pts.push(`${x(far).toFixed(1)},${y(c.curve[i - 1]![1]).toFixed(1)}`);
        pts.push(`${x(far).toFixed(1)},${y(tar).toFixed(1)}`);
      });
      parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2"${dash} points="${pts.join(' ')}"><title>${esc(`${model} / ${det}: AUC ${c.auc}`)}</title></polyline>`);
      // DeepFace's fixed threshold: where the default decides.
      parts.push(`<circle cx="${x(c.deepface.far).toFixed(1)}" cy="${y(c.deepface.tar).toFixed(1)}" r="4" fill="${color}" stroke="#ffffff"><title>${esc(`${model} / ${det}, DeepFace's ${c.deepface.threshold}: FAR ${c.deepface.far.toFixed(4)}, TAR ${c.deepface.tar.toFixed(4)}`)}</title></circle>`);
      const ly = m.t + 8 + row * 34;
      parts.push(`<line x1="${m.l + pw + 14}" x2="${m.l + pw + 40}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${dash}/>`);
      parts.push(`<text x="${m.l + pw + 46}" y="${ly + 4}">${esc(`${model} / ${det}`)}</text>`);
      parts.push(`<text x="${m.l + pw + 46}" y="${ly + 18}" fill="#57606a" font-size="11">${esc(`AUC ${c.auc.toFixed(4)}, best acc ${(c.best_accuracy.accuracy * 100).toFixed(1)}%`)}</text>`);
      row++;
    }
  }
  parts.push(`<text x="${m.l + pw + 14}" y="${m.t + 8 + row * 34 + 4}" fill="#57606a" font-size="11">dots: DeepFace's fixed threshold</text>`);
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

async function main() {
  const models = arg('models', 'Dlib,Facenet').split(',');
  const detectors = arg('detectors', 'opencv,yunet,retinaface,skip').split(',');
  const pairs = devTrainPairs();
  // --cached: only the model × detector pairs whose embeddings are cached (nothing is computed).
  const cachedOnly = process.argv.includes('--cached');
  const isCached = (m: string, d: string) => existsSync(join(REPO, '.cache', 'lfw', `${m}-${d}.json`));
  const embs = await embeddings(cachedOnly ? models.filter((m) => detectors.some((d) => isCached(m, d))) : models, detectors, cachedOnly);
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO }).toString().trim();
  const file: CalibrationFile = {
    dataset: 'LFW View 1 DevTrain (pairsDevTrain.txt): 1,100 genuine and 1,100 impostor pairs, 3,443 images',
    pairs: { genuine: pairs.filter((p) => p[2] === 1).length, impostor: pairs.filter((p) => p[2] === 0).length },
    generator: `tools/calibration/roc.ts (commit ${commit})`,
    settings: {
      align: true, enforce_detection: false, detector_fallback: true,
      // opencv's embeddings come from tools/parity/fallback-rule.ts --write-default under the served rule.
      fallback_rule: 'FACECOMPUTE_FALLBACK_MIN_FACE_SIDE=0.2, FACECOMPUTE_FALLBACK_CENTRE_SPAN=0.5', expand_percentage: 0, normalization: 'base', detector_max_side: 0,
      // The network measured under the name `retinaface`: /capabilities serves its rows only when the same one serves.
      retinaface: 'mobilenet0.25',
      distance: "verify's: the minimum over face pairs, rounded to 6 decimals",
    },
    note:
      "DeepFace's fixed thresholds stay the default. To use one of these, pass it as `threshold` (verified = distance <= threshold; confidence stays on DeepFace's scale). " +
      'Measured on one data set: at FAR 1e-3 a threshold admits at most 1 of the 1,100 impostor pairs, so that figure rests on the two closest impostors; expect a different FAR on your images.',
    models: {},
  };
  // Distances are rounded to 6 decimals (verify's), so micro-units are exact integers.
  const distances: { what: string; genuine: string; series: Record<string, Array<number | null>> } = {
    what: 'LFW View 1 DevTrain, pairsDevTrain.txt order: genuine[i] is 1 for a same-person pair; series["<model>/<detector>/<metric>"][i] is the pair\'s distance x 1e6 (null: a side had no face)',
    genuine: pairs.map((p) => p[2]).join(''),
    series: {},
  };
  if (process.argv.includes('--merge')) {
    const old = JSON.parse(readFileSync(join(REPO, 'models', 'calibration', 'lfw-devtrain.json'), 'utf8')) as CalibrationFile;
    const oldDist = JSON.parse(gunzipSync(readFileSync(join(REPO, 'test', 'fixtures', 'calibration', 'lfw-devtrain-distances.json.gz'))).toString()) as typeof distances;
    if (oldDist.genuine !== distances.genuine) throw new Error('--merge: the committed distances are for other pairs');
    file.models = old.models;
    distances.series = oldDist.series;
  }
  for (const model of models) {
    for (const det of detectors) {
      const e = embs.get(`${model}/${det}`);
      if (!e) continue;
      for (const metric of METRICS) {
        const scored: ScoredPair[] = pairs.map(([a, b, same]) => ({ distance: pairDistance(e[a], e[b], metric), genuine: same === 1 }));
        ((file.models[model] ??= {})[det] ??= {})[metric] = calibrate(scored, THRESHOLDS[model]![metric]);
        distances.series[`${model}/${det}/${metric}`] = scored.map((p) => (p.distance === null ? null : Math.round(p.distance * 1e6)));
      }
    }
  }
  const fixture = join(REPO, 'test', 'fixtures', 'calibration', 'lfw-devtrain-distances.json.gz');
  mkdirSync(dirname(fixture), { recursive: true });
  writeFileSync(fixture, gzipSync(JSON.stringify(distances), { level: 9 }));
  const out = join(REPO, 'models', 'calibration', 'lfw-devtrain.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(file, null, 1)}\n`);
  writeFileSync(join(REPO, 'docs', 'roc-lfw-devtrain.svg'), chart(file, 'cosine'));
  for (const [model, byDet] of Object.entries(file.models)) {
    for (const [det, byMetric] of Object.entries(byDet)) {
      for (const [metric, c] of Object.entries(byMetric) as Array<[string, MetricCalibration]>) {
        const f = (p: { threshold: number; accuracy: number; far: number; tar: number }) => `${p.threshold} (acc ${(p.accuracy * 100).toFixed(2)}%, FAR ${p.far.toFixed(4)}, TAR ${p.tar.toFixed(4)})`;
        console.log(`${`${model}/${det}/${metric}`.padEnd(28)} AUC ${c.auc.toFixed(4)}; DeepFace ${f(c.deepface)}; best ${f(c.best_accuracy)}; FAR1e-2 ${f(c.far_1e_2)}; FAR1e-3 ${f(c.far_1e_3)}`);
      }
    }
  }
  console.log(`wrote ${out} and docs/roc-lfw-devtrain.svg`);
}

await main();
