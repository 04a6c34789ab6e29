/**
 * The ROC arithmetic of tools/calibration/roc.ts (src/deepface/calibration.ts) on tiny examples worked
 * out by hand, and the committed calibration file's own consistency.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { atFar, atThreshold, auc, bestAccuracy, calibrate, loadCalibration, rocPoints, servedCalibration, type ScoredPair } from '../src/deepface/calibration.js';
import { THRESHOLDS } from '../src/deepface/decision.js';

const G = (distance: number | null): ScoredPair => ({ distance, genuine: true });
const I = (distance: number | null): ScoredPair => ({ distance, genuine: false });

// Sorted: 0.1 G, 0.2 G, 0.3 I, 0.4 G, 0.5 I, 0.6 I, 0.7 I (3 genuine, 4 impostor).
const pairs = [I(0.5), G(0.2), I(0.7), G(0.1), I(0.3), G(0.4), I(0.6)];

t.test('thresholds are halfway between consecutive distances, with the pairs each accepts', async (t) => {
  t.same(rocPoints(pairs), [
    { threshold: 0.099999, tp: 0, fp: 0 },
    { threshold: 0.15, tp: 1, fp: 0 },
    { threshold: 0.25, tp: 2, fp: 0 },
    { threshold: 0.35, tp: 2, fp: 1 },
    { threshold: 0.45, tp: 3, fp: 1 },
    { threshold: 0.55, tp: 3, fp: 2 },
    { threshold: 0.65, tp: 3, fp: 3 },
    { threshold: 0.700001, tp: 3, fp: 4 },
  ]);
  // Tied distances give one threshold after the tie, never one inside it.
  t.same(rocPoints([G(0.2), I(0.2), G(0.1)]).map((p) => p.threshold), [0.099999, 0.15, 0.200001]);
});

t.test('threshold at a false-accept rate: the largest one within it', async (t) => {
  // FAR <= 1/4 allows one impostor: 0.45 accepts 0.3 and every genuine pair.
  t.same(atFar(pairs, 0.25), { threshold: 0.45, far: 0.25, tar: 1, accuracy: 6 / 7 });
  // FAR <= 0.2 allows none (1/4 > 0.2): below the first impostor, 0.3.
  t.same(atFar(pairs, 0.2), { threshold: 0.25, far: 0, tar: 2 / 3, accuracy: 6 / 7 });
  t.same(atFar(pairs, 1), { threshold: 0.700001, far: 1, tar: 1, accuracy: 3 / 7 });
});

t.test('best accuracy: the middle of the first run of best thresholds', async (t) => {
  // 6/7 at 0.25 and again at 0.45 (not adjacent): the first run is 0.25 alone.
  t.same(bestAccuracy(pairs), { threshold: 0.25, far: 0, tar: 2 / 3, accuracy: 6 / 7 });
  // Two best thresholds, not adjacent: 0.15 (4/5 right) and 0.35 (4/5); the first wins.
  t.equal(bestAccuracy([G(0.1), I(0.2), G(0.3), I(0.4), I(0.9)]).threshold, 0.15);
  // Three adjacent best thresholds (tied genuine/impostor pairs keep the count): 0.15, 0.25 and 0.4
  // each get 4 of 6 right; the middle one is taken.
  t.same(bestAccuracy([G(0.1), G(0.2), I(0.2), G(0.3), I(0.3), I(0.5)]), { threshold: 0.25, far: 1 / 3, tar: 2 / 3, accuracy: 4 / 6 });
  const plateau = [G(0.1), G(0.2), I(0.5), I(0.6)];
  // 0.15 -> 3/4, 0.35 -> 4/4, 0.55 -> 3/4: one best, the gap's middle.
  t.same(bestAccuracy(plateau), { threshold: 0.35, far: 0, tar: 1, accuracy: 1 });
});

t.test('AUC is the probability that a genuine pair is closer than an impostor pair', async (t) => {
  // Genuine below impostor in 11 of the 12 genuine x impostor combinations (0.4 > 0.3).
  t.equal(auc(pairs), 11 / 12);
  t.equal(auc([G(0.2), I(0.2)]), 0.5, 'a tie counts one half');
  t.equal(auc([G(0.1), I(0.2)]), 1);
});

t.test('a fixed threshold, and pairs without a face, which are never accepted', async (t) => {
  t.same(atThreshold(pairs, 0.4), { threshold: 0.4, far: 0.25, tar: 1, accuracy: 6 / 7 });
  const withNull = [...pairs, G(null), I(null)];
  t.same(atThreshold(withNull, 10), { threshold: 10, far: 4 / 5, tar: 3 / 4, accuracy: 4 / 9 });
  t.equal(rocPoints(withNull).length, rocPoints(pairs).length, 'null distances add no threshold');
  t.throws(() => atFar([G(0.1)], 0.1), /genuine and impostor/);
});

t.test('calibrate assembles the operating points and a monotone curve', async (t) => {
  const c = calibrate(pairs, 0.4, 8);
  t.same(c.far_1e_2, atFar(pairs, 1e-2));
  t.same(c.far_1e_3.far, 0);
  t.same(c.deepface, atThreshold(pairs, 0.4));
  t.equal(c.auc, 0.916667);
  for (let i = 1; i < c.curve.length; i++) {
    t.ok(c.curve[i]![0] >= c.curve[i - 1]![0] && c.curve[i]![1] >= c.curve[i - 1]![1], 'non-decreasing');
  }
  t.same(c.curve[c.curve.length - 1], [1, 1]);
});

t.test('the committed calibration file agrees with itself and with DeepFace', async (t) => {
  const file = loadCalibration();
  t.equal(file.pairs.genuine, 1100);
  t.equal(file.pairs.impostor, 1100);
  t.ok(file.models['Dlib'], 'Dlib is calibrated');
  t.ok(file.models['Facenet'], 'Facenet, the default model, is calibrated');
  for (const [model, byDet] of Object.entries(file.models)) {
    for (const det of ['opencv', 'yunet', 'retinaface', 'mtcnn', 'fastmtcnn', 'skip']) t.ok(byDet[det], `${model} × ${det}`);
    for (const [det, byMetric] of Object.entries(byDet)) {
      for (const metric of ['cosine', 'euclidean', 'euclidean_l2', 'angular'] as const) {
        const c = byMetric[metric];
        if (!c) {
          t.fail(`${model} × ${det} × ${metric} missing`);
          continue;
        }
        const where = `${model}/${det}/${metric}`;
        t.equal(c.deepface.threshold, THRESHOLDS[model]![metric], `${where}: DeepFace's threshold`);
        t.ok(c.far_1e_3.far <= 1e-3 && c.far_1e_2.far <= 1e-2, `${where}: FARs within their targets`);
        t.ok(c.far_1e_3.threshold <= c.far_1e_2.threshold, `${where}: stricter FAR, smaller threshold`);
        t.ok(c.best_accuracy.accuracy >= c.deepface.accuracy, `${where}: best accuracy is at least DeepFace's`);
        t.ok(c.best_accuracy.accuracy >= c.far_1e_2.accuracy && c.best_accuracy.accuracy >= c.far_1e_3.accuracy, `${where}: best is best`);
        t.ok(c.auc > 0.5 && c.auc <= 1, `${where}: AUC`);
      }
    }
  }
});

t.test('each threshold achieves its stated FAR, TAR and accuracy on the pairs it came from', async (t) => {
  // Every DevTrain pair's distance, as tools/calibration/roc.ts computed it (micro-units, exact).
  const d = JSON.parse(gunzipSync(readFileSync(resolve(import.meta.dirname, 'fixtures/calibration/lfw-devtrain-distances.json.gz'))).toString('utf8')) as {
    genuine: string;
    series: Record<string, Array<number | null>>;
  };
  t.equal(d.genuine.length, 2200);
  const file = loadCalibration();
  let checked = 0;
  for (const [model, byDet] of Object.entries(file.models)) {
    for (const [det, byMetric] of Object.entries(byDet)) {
      for (const [metric, c] of Object.entries(byMetric)) {
        const where = `${model}/${det}/${metric}`;
        const series = d.series[where];
        if (!series) {
          t.fail(`${where}: no distances`);
          continue;
        }
        const scored: ScoredPair[] = series.map((v, i) => ({ distance: v === null ? null : v / 1e6, genuine: d.genuine[i] === '1' }));
        // Counted directly: verified = distance <= threshold; a pair without a face is never verified.
        for (const [name, target] of [['far_1e_2', 1e-2], ['far_1e_3', 1e-3]] as const) {
          const p = c[name];
          const impostors = scored.filter((s) => !s.genuine);
          const accepted = impostors.filter((s) => s.distance !== null && s.distance <= p.threshold).length;
          t.ok(accepted / impostors.length <= target, `${where}: ${name} accepts ${accepted} of ${impostors.length} impostors`);
          t.equal(accepted / impostors.length, p.far, `${where}: ${name}'s stated FAR is the measured one`);
          // The largest such threshold: the next closer impostor would break the target.
          const next = impostors.map((s) => s.distance).filter((x): x is number => x !== null && x > p.threshold).sort((a, b) => a - b)[0];
          if (next !== undefined) t.ok((accepted + 1) / impostors.length > target, `${where}: ${name} is the largest within its target`);
        }
        for (const name of ['far_1e_2', 'far_1e_3', 'best_accuracy', 'deepface'] as const) t.same(atThreshold(scored, c[name].threshold), c[name], `${where}: ${name}`);
        // And the whole entry is what the arithmetic gives on these distances.
        const again = calibrate(scored, THRESHOLDS[model]![metric as keyof (typeof THRESHOLDS)[string]]);
        t.same({ ...again, curve: undefined }, { ...c, curve: undefined }, `${where}: recomputed`);
        checked++;
      }
    }
  }
  t.equal(checked, 2 * 6 * 4, `${checked} model/detector/metric entries checked`);
});

t.test('what /capabilities serves: the served models and detectors, without curves', async (t) => {
  const file = loadCalibration();
  const served = servedCalibration(file, ['Dlib', 'NotAModel'], ['opencv', 'skip', 'mtcnn', 'not-a-detector']);
  t.same(Object.keys(served.models), ['Dlib']);
  t.same(Object.keys(served.models['Dlib']!).sort(), ['mtcnn', 'opencv', 'skip'], 'the served detectors that are calibrated, and no other');
  const { curve: _c, ...cos } = file.models['Dlib']!['opencv']!.cosine!;
  t.same(served.models['Dlib']!['opencv']!.cosine, cos);
  t.notOk('curve' in served.models['Dlib']!['opencv']!.cosine!);
  t.equal(served.dataset, file.dataset);
});

t.test('the model server serves calibration only for real weights and the measured retinaface', async (t) => {
  const { calibrationFor } = await import('../src/model-server/registry.js');
  const file = loadCalibration();
  const state = (models: string[], detectors: string[], weights: Record<string, 'real' | 'test'>, variant: string | null) => ({
    servable: { models, detectors },
    modelWeights: weights,
    retinafaceVariant: variant,
  });
  const all = calibrationFor(state(['Dlib'], ['opencv', 'retinaface', 'yunet', 'skip'], { Dlib: 'real' }, 'mobilenet0.25'), file)!;
  t.same(all, servedCalibration(file, ['Dlib'], ['opencv', 'retinaface', 'yunet', 'skip']));
  const resnet = calibrationFor(state(['Dlib'], ['opencv', 'retinaface'], { Dlib: 'real' }, 'resnet50'), file)!;
  t.same(Object.keys(resnet.models['Dlib']!), ['opencv'], 'another retinaface network: its rows are not served');
  const test = calibrationFor(state(['Dlib'], ['opencv'], { Dlib: 'test' }, null), file)!;
  t.same(test.models, {}, 'random test weights: no calibration');
  t.equal(calibrationFor(state(['Dlib'], ['opencv'], { Dlib: 'real' }, null), null), null, 'no data file: no field');
});
