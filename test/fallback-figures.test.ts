/**
 * README, "Which fallback faces are kept": the table of accuracies with the detector fallback's faces
 * kept or not (generated from bench/results/fallback-rule-{dlib,facenet}.json by tools/parity/figures.ts).
 * The LFW runs behind it take about ten minutes per model, so CI checks what it can from committed data:
 * - the rule's row is the served rule (the configuration's defaults) and equals, pair count for pair
 *   count, what the committed per-pair distances of test/fixtures/calibration (the service's defaults,
 *   that rule; test/calibration.test.ts recomputes its file from them) give at DeepFace's thresholds;
 * - the first row (no fallback: DeepFace's flow) equals DeepFace's own recorded LFW accuracies where
 *   DeepFace recorded them (Dlib's cosine; Facenet's three metrics);
 * - both runs counted the same images and pairs as those data sets.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { loadConfig } from '../src/config/index.js';
import { THRESHOLDS } from '../src/deepface/decision.js';
import { REPO, RESULTS, results } from '../tools/parity/figures.js';

const METRICS = ['cosine', 'euclidean', 'euclidean_l2'] as const;
type Row = Record<(typeof METRICS)[number], { threshold: number; correct: number; accuracy: number }> & { rule: string };
type Run = { images: number; pairs: number; rules: Row[] };

const runs: Record<string, Run> = { Dlib: results(RESULTS.fallbackDlib), Facenet: results(RESULTS.fallbackFacenet) };
const distances = JSON.parse(gunzipSync(readFileSync(join(REPO, 'test/fixtures/calibration/lfw-devtrain-distances.json.gz'))).toString('utf8')) as { genuine: string; series: Record<string, Array<number | null>> };
const deepfaceLfw: Record<string, Partial<Record<(typeof METRICS)[number], number>>> = {
  Dlib: { cosine: (JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/lfw-dlib.json'), 'utf8')) as { detectors: { opencv: { accuracy: number } } }).detectors.opencv.accuracy },
  Facenet: (JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/lfw-facenet.json'), 'utf8')) as { detectors: { opencv: { accuracy: Record<string, number> } } }).detectors.opencv.accuracy,
};

const rule = (run: Run, name: string) => run.rules.find((r) => r.rule === name);

t.test("the rule's row is the served rule, and the committed distances give it", async (t) => {
  const cfg = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' });
  const served = `min_side_${cfg.limits.fallbackMinFaceSide}+central_${cfg.limits.fallbackCentreSpan}`;
  t.equal(served, 'min_side_0.2+central_0.5', 'the defaults are the rule the README names');
  for (const [model, run] of Object.entries(runs)) {
    t.equal(run.pairs, distances.genuine.length, `${model}: the run counted all ${distances.genuine.length} pairs`);
    t.equal(run.images, 3443, `${model}: and all 3,443 images`);
    const row = rule(run, served);
    if (!t.ok(row, `${model}: the served rule was measured`) || !row) continue;
    for (const m of METRICS) {
      const series = distances.series[`${model}/opencv/${m}`];
      if (!t.ok(series, `${model}/opencv/${m}: committed distances`) || !series) continue;
      const threshold = THRESHOLDS[model]![m];
      t.equal(row[m].threshold, threshold, `${model} ${m}: DeepFace's threshold`);
      const correct = series.filter((d, i) => (d !== null && d / 1e6 <= threshold) === (distances.genuine[i] === '1')).length;
      t.equal(row[m].correct, correct, `${model} ${m}: the rule's row, ${row[m].correct} right, is what the committed distances give (${correct})`);
      t.equal(row[m].accuracy, Number((correct / series.length).toFixed(5)), `${model} ${m}: its accuracy`);
    }
  }
});

t.test("the row without the fallback is DeepFace's own LFW accuracy", async (t) => {
  let checked = 0;
  for (const [model, run] of Object.entries(runs)) {
    const none = rule(run, 'none');
    if (!t.ok(none, `${model}: measured without the fallback`) || !none) continue;
    for (const m of METRICS) {
      const theirs = deepfaceLfw[model]![m];
      if (theirs === undefined) continue;
      t.equal(none[m].correct / run.pairs, theirs, `${model} ${m}: ${none[m].correct}/${run.pairs} right, DeepFace's ${theirs}`);
      checked++;
    }
  }
  t.equal(checked, 4, "Dlib's cosine and Facenet's three metrics");
});
