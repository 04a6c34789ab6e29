import t from 'tap';
import {
  decide,
  embeddingDims,
  findConfidence,
  findThreshold,
  roundDistance,
  confidenceCoefficients,
  THRESHOLDS,
  type Metric,
} from '../src/deepface/decision.js';
import { ServiceError } from '../src/errors/index.js';
import { DEEPFACE_CONFIDENCES, DEEPFACE_THRESHOLDS, deepfaceConfidence } from './helpers/deepface.js';

const METRICS: Metric[] = ['cosine', 'euclidean', 'euclidean_l2', 'angular'];

/** deepface-reference.md §4.3, "Spot values I computed with the reference algorithm". */
const SPOT: Array<[model: string, metric: Metric, distance: number, confidence: number]> = [
  ['Facenet', 'cosine', 0.1, 98.06],
  ['Facenet', 'cosine', 0.2, 82.58],
  ['Facenet', 'cosine', 0.36, 53.39],
  ['Facenet', 'cosine', 0.4, 51],
  ['Facenet', 'cosine', 0.44, 32.86],
  ['Facenet', 'cosine', 0.6, 16.8],
  ['Facenet', 'cosine', 0.8, 5.97],
  ['Facenet512', 'cosine', 0.15, 85.34],
  ['Facenet512', 'cosine', 0.27, 56.5],
  ['Facenet512', 'cosine', 0.3, 51],
  ['Facenet512', 'cosine', 0.33, 36.07],
  ['Facenet512', 'cosine', 0.45, 25.25],
  ['SFace', 'cosine', 0.2965, 83.9],
  ['SFace', 'cosine', 0.593, 51],
  ['SFace', 'cosine', 0.6523, 17.58],
  ['OpenFace', 'cosine', 0.05, 82.42],
  ['OpenFace', 'cosine', 0.11, 7.93],
  ['Dlib', 'euclidean', 0.3, 95.5],
  ['Dlib', 'euclidean', 0.6, 51],
  ['Dlib', 'euclidean', 0.66, 25.16],
  ['VGG-Face', 'cosine', 0.34, 87.48],
  ['VGG-Face', 'cosine', 0.612, 56.87],
  ['VGG-Face', 'cosine', 0.748, 12.54],
];

t.test('confidence equals every spot value of the reference', async (t) => {
  for (const [model, metric, d, want] of SPOT) {
    const verified = d <= findThreshold(model, metric);
    t.equal(findConfidence(d, model, metric, verified), want, `${model}/${metric} d=${d}`);
  }
});

t.test('a distance of zero or below is 100 when verified and 0 otherwise', async (t) => {
  t.equal(findConfidence(0, 'Facenet', 'cosine', true), 100);
  t.equal(findConfidence(-1e-9, 'Facenet', 'cosine', true), 100);
  t.equal(findConfidence(0, 'Facenet', 'cosine', false), 0);
  t.equal(findConfidence(0, 'NoSuchModel', 'cosine', true), 100);
});

t.test('a model without coefficients falls back to 51 or 49', async (t) => {
  t.equal(findConfidence(0.3, 'Buffalo_L', 'cosine', true), 51);
  t.equal(findConfidence(0.9, 'Buffalo_L', 'cosine', false), 49);
  t.equal(findConfidence(0.3, 'NoSuchModel', 'euclidean', false), 49);
  t.equal(findConfidence(0.3, 'constructor', 'cosine', true), 51, 'prototype keys are not models');
  t.equal(confidenceCoefficients('toString', 'cosine'), undefined);
});

t.test('confidence stays on the side of the decision and inside [0, 100]', async (t) => {
  for (const model of Object.keys(THRESHOLDS)) {
    for (const metric of METRICS) {
      const threshold = findThreshold(model, metric);
      for (const f of [0.001, 0.2, 0.5, 0.9, 0.999, 1, 1.001, 1.5, 3, 100]) {
        const d = threshold * f;
        const verified = d <= threshold;
        const c = findConfidence(d, model, metric, verified);
        t.ok(verified ? c >= 51 && c <= 100 : c >= 0 && c <= 49, `${model}/${metric} d=${d}: ${c}`);
        t.equal(Math.round(c * 100) / 100, c, 'two decimals');
      }
    }
  }
});

t.test('the normalizer divides only when it is above 1', async (t) => {
  // OpenFace/cosine has normalizer 0.884469: with it applied, d=0.05 would not give 82.42.
  const c = confidenceCoefficients('OpenFace', 'cosine')!;
  t.ok(c.normalizer < 1);
  t.equal(findConfidence(0.05, 'OpenFace', 'cosine', true), 82.42);
  // Facenet/euclidean has 18.735288: d=10 (its threshold) must land at the 51 floor, which it
  // only does once divided.
  t.equal(findConfidence(10, 'Facenet', 'euclidean', true), 51);
  t.ok(findConfidence(1, 'Facenet', 'euclidean', true) > 51);
});

t.test('thresholds are the reference table', async (t) => {
  t.equal(findThreshold('Facenet', 'cosine'), 0.4);
  t.equal(findThreshold('Facenet', 'euclidean'), 10);
  t.equal(findThreshold('Facenet', 'euclidean_l2'), 0.8);
  t.equal(findThreshold('Facenet', 'angular'), 0.33);
  t.equal(findThreshold('Facenet512', 'euclidean'), 23.56);
  t.equal(findThreshold('OpenFace', 'euclidean_l2'), 0.55);
  t.equal(findThreshold('Dlib', 'cosine'), 0.07);
  t.equal(findThreshold('SFace', 'euclidean'), 10.734);
  t.equal(findThreshold('SFace', 'angular'), 0.36);
  t.equal(findThreshold('VGG-Face', 'cosine'), 0.68);
  t.equal(findThreshold('Buffalo_L', 'angular'), 0.45);
  t.equal(Object.keys(THRESHOLDS).length, 11);
  for (const bad of [() => findThreshold('Nope', 'cosine'), () => findThreshold('Facenet', 'manhattan' as Metric), () => findThreshold('__proto__', 'cosine')]) {
    t.throws(bad, ServiceError);
  }
});

t.test("every threshold and the confidence of the served models equal DeepFace 0.0.100's, stated as literals (test/helpers/deepface.ts)", async (t) => {
  t.same(THRESHOLDS, DEEPFACE_THRESHOLDS, 'deepface/config/threshold.py, every model and metric');
  let compared = 0;
  for (const model of Object.keys(DEEPFACE_CONFIDENCES)) {
    for (const metric of METRICS) {
      const pretuned = DEEPFACE_THRESHOLDS[model]![metric];
      for (let k = 1; k <= 40; k++) {
        const d = (pretuned * k) / 20; // 0.05 to 2 times the threshold
        t.equal(findConfidence(d, model, metric, d <= pretuned), deepfaceConfidence(d, model, metric, d <= pretuned), `${model}/${metric} at ${d}`);
        compared++;
      }
    }
  }
  t.equal(compared, 3 * 4 * 40);
});

t.test('embedding dimensions per model', async (t) => {
  t.equal(embeddingDims('Facenet'), 128);
  t.equal(embeddingDims('Facenet512'), 512);
  t.equal(embeddingDims('OpenFace'), 128);
  t.equal(embeddingDims('Dlib'), 128);
  t.equal(embeddingDims('SFace'), 128);
  t.equal(embeddingDims('VGG-Face'), 4096);
  t.throws(() => embeddingDims('Nope'), ServiceError);
});

t.test('roundDistance follows np.round(d, 6), half to even after scaling', async (t) => {
  // Values from numpy 2.4: np.round(x, 6).
  const cases: Array<[number, number]> = [
    [0.0000005, 0],
    [0.0000015, 0.000002],
    [0.0000025, 0.000002],
    [1.0000005, 1.000001],
    [0.1234565, 0.123456],
    [0.2623645, 0.262364],
    [0.9999995, 1],
    [0.1234575, 0.123458],
    [0.7500005, 0.75],
    [0.26236449, 0.262364],
    [12.3456789, 12.345679],
  ];
  for (const [x, want] of cases) t.equal(roundDistance(x), want, `np.round(${x}, 6)`);
  t.ok(Object.is(roundDistance(-0.0000005), -0));
});

t.test('decide rounds, honours a custom threshold and keeps confidence on the calibrated one', async (t) => {
  t.same(decide(0.19999999, 'Facenet', 'cosine'), { distance: 0.2, threshold: 0.4, verified: true, confidence: 82.58 });
  t.same(decide(0.4000004, 'Facenet', 'cosine'), { distance: 0.4, threshold: 0.4, verified: true, confidence: 51 });
  const custom = decide(0.44, 'Facenet', 'cosine', 0.5);
  t.same(custom, { distance: 0.44, threshold: 0.5, verified: true, confidence: 32.86 });
  t.equal(decide(0.44, 'Facenet', 'cosine', 0).threshold, 0.4, 'a threshold of 0 falls back, as in DeepFace');
});
