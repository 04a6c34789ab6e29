/**
 * Facenet on LFW View 1 DevTrain (../shared/data/lfw-devtrain, 2,200 pairs) beside DeepFace 0.0.100 run
 * offline on the same weight file, enforce_detection=false (issue 14 item 4). The full comparison
 * (every pair, each recorded detector) is `node --import tsx tools/parity/facenet-parity.ts --lfw`; its
 * figures, and an explanation of every pair decided differently, are in the README. Here, bounded for
 * CI (about 110 images, opencv; ~1 min on 2 cores):
 * - the committed DeepFace outputs (tools/reference/deepface_reference.py --model Facenet) cover every
 *   pair, use our thresholds, and their accuracy is what their distances give;
 * - a sample (every 44th pair, plus every pair the full run decides differently or whose distance differs) goes through our
 *   pipeline for each recorded detector and metric: DeepFace's decision on every sampled pair except
 *   exactly the ones the README explains, which must still differ the same way (else the README is stale);
 * - of the images of those pairs (DeepFace's faces in lfw-facenet-faces.json), only Petria_Thomas_0001
 *   has another face than DeepFace's (another eye pair), as the README describes.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPipeline, REPO, SHARED } from '../tools/parity/deepface-parity.js';
import { lfwFacenetParity, METRICS, ourImage } from '../tools/parity/facenet-parity.js';
import { findThreshold } from '../src/deepface/decision.js';
import { LFW_SAMPLE_EVERY, RESULTS, results } from '../tools/parity/figures.js';

type Metric = (typeof METRICS)[number];
type LfwRef = { meta: Record<string, any>; pairs: Array<[string, string, number]>; detectors: Record<string, { distances: Record<Metric, Array<number | null>>; accuracy: Record<Metric, number> }> };

const ref = JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/lfw-facenet.json'), 'utf8')) as LfwRef;

/** The pairs the full run decides differently from DeepFace (indexes into pairsDevTrain.txt's order), per detector and metric: none. */
const DIFFERING: Record<string, Record<Metric, number[]>> = { opencv: { cosine: [], euclidean: [], euclidean_l2: [] } };
/**
 * The pairs whose distance differs from DeepFace's by more than 1e-4 (decided the same way all the same),
 * and why (README, "LFW View 1 DevTrain" under Facenet): in 842 DeepFace takes another pair of eye-cascade
 * windows on Petria_Thomas_0001; in 1132 DeepFace's recorded run is not what DeepFace gives again.
 */
const DISTANCE_DIFFERS: Record<string, number[]> = { opencv: [842, 1132] };
/** The images of the explained pairs whose face differs from DeepFace's: ours against DeepFace's (x, y, w, h; eyes). */
const IMAGES: Record<string, { ours: string; deepface: string }> = {
  'Petria_Thomas/Petria_Thomas_0001.jpg': { ours: '69,68,119,119 eyes 146,114 125,160', deepface: '69,68,119,119 eyes 125,160 107,113' },
};

t.test('the committed DeepFace LFW outputs: every pair, our thresholds, the accuracy their distances give', async (t) => {
  t.match(ref.meta, { deepface: '0.0.100', model: 'Facenet', enforce_detection: false, weights: { file: 'facenet_keras.h5', sha256: '6acdd8fb3a3fb2b54257abdd1879246a3fcbe18fbe53a41c751e141abe63a0af', linked_as: 'facenet_weights.h5' } });
  t.equal(ref.pairs.length, 2200, 'every pair of pairsDevTrain.txt');
  t.equal(ref.pairs.filter((p) => p[2] === 1).length, 1100, '1,100 same-person pairs');
  t.same(Object.keys(ref.detectors).sort(), Object.keys(DIFFERING).sort(), 'the detectors DeepFace was run with are the ones checked');
  for (const m of METRICS) t.equal(ref.meta.thresholds[m], findThreshold('Facenet', m), `${m}: DeepFace's threshold is ours`);
  const recorded = results(RESULTS.facenet).lfw_devtrain as Record<string, Record<Metric, { pairs: number; deepface_accuracy: number; same_decision: number; differing: unknown[]; distance_differs_above_1e4: number[] }>>;
  for (const [det, r] of Object.entries(ref.detectors)) {
    for (const m of METRICS) {
      t.equal(r.distances[m].length, 2200, `${det} ${m}: a distance per pair`);
      const correct = ref.pairs.filter(([, , s], i) => { const d = r.distances[m][i]; return d !== null && d !== undefined && (d <= ref.meta.thresholds[m]) === (s === 1); }).length;
      t.equal(correct / 2200, r.accuracy[m], `${det} ${m}: the recorded accuracy is what the distances give`);
      // The README's table (generated from bench/results/parity-facenet.json): DeepFace's column is this
      // fixture's, every pair was compared, and the full run's differences are the ones explained here.
      const row = recorded[det]?.[m];
      t.equal(row?.deepface_accuracy, r.accuracy[m], `${det} ${m}: the README's DeepFace accuracy ${row?.deepface_accuracy} is the fixture's`);
      t.equal(row?.pairs, 2200, `${det} ${m}: the README's figures cover all 2,200 pairs`);
      t.equal(row?.same_decision, 2200 - (DIFFERING[det]?.[m].length ?? 0), `${det} ${m}: the full run differs on exactly the pairs explained here`);
      t.same(row?.distance_differs_above_1e4, DISTANCE_DIFFERS[det], `${det} ${m}: the full run's distances differ by more than 1e-4 on exactly the pairs the README explains`);
    }
  }
});

t.test('a sample of LFW pairs through our pipeline: DeepFace\'s decisions, except exactly the explained pairs', { timeout: 600_000 }, async (t) => {
  const known = new Set(Object.values(DIFFERING).flatMap((byMetric) => Object.values(byMetric).flat()));
  const explained = new Set(Object.values(DISTANCE_DIFFERS).flat());
  const sample = ref.pairs.map((_, i) => i).filter((i) => i % LFW_SAMPLE_EVERY === 0 || known.has(i) || explained.has(i));
  t.equal(sample.length, 52, `${sample.length} pairs sampled: every ${LFW_SAMPLE_EVERY}th (50) and the two explained`);
  const { pipeline, close } = await createPipeline('Facenet');
  t.teardown(close);
  const report = (await lfwFacenetParity(pipeline, sample)) as Record<string, Record<Metric, { same_decision: number; pairs: number; differing: Array<{ pair: number }> }>>;
  for (const [det, byMetric] of Object.entries(DIFFERING)) {
    // The explained pairs are an upper bound: another CPU may match DeepFace on one (logged), never differ elsewhere.
    const above = (report[det]?.cosine as unknown as { distance_differs_above_1e4: number[] }).distance_differs_above_1e4.filter((i) => sample.includes(i));
    t.same(above.filter((i) => !DISTANCE_DIFFERS[det]?.includes(i)), [], `${det}: the cosine distance is DeepFace's within 1e-4 on every sampled pair but the explained ones (${JSON.stringify(above)})`);
    for (const i of DISTANCE_DIFFERS[det] ?? []) if (!above.includes(i)) t.comment(`${det}: explained pair ${i} is within 1e-4 of DeepFace's on this CPU; the list is an upper bound`);
    for (const m of METRICS) {
      const r = report[det]?.[m];
      if (!t.ok(r, `${det} ${m}: measured`) || !r) continue;
      t.comment(`${det} ${m}: ${r.same_decision}/${r.pairs} sampled pairs decided as DeepFace decides them`);
      t.equal(r.pairs, sample.length, `${det} ${m}: every sampled pair compared`);
      const differing = r.differing.map((d) => d.pair);
      t.same(differing.filter((i) => !byMetric[m].includes(i)), [], `${det} ${m}: differs from DeepFace on no pair but the explained ones ${JSON.stringify(r.differing.slice(0, 3))}`);
      for (const i of byMetric[m]) if (!differing.includes(i)) t.comment(`${det} ${m}: explained pair ${i} is decided as DeepFace decides it on this CPU; the list is an upper bound`);
    }
  }
});

t.test('the LFW images whose faces differ from DeepFace\'s: exactly the ones the README explains', { timeout: 300_000 }, async (t) => {
  const faces = JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/lfw-facenet-faces.json'), 'utf8')) as { detectors: Record<string, Record<string, Array<{ facial_area: Record<string, any> }>>> };
  const { pipeline, close } = await createPipeline('Facenet');
  t.teardown(close);
  const show = (a: Record<string, any>) => `${a['x']},${a['y']},${a['w']},${a['h']} eyes ${a['left_eye'] ? `${a['left_eye'].join(',')} ${a['right_eye'].join(',')}` : '-'}`;
  const differing: Record<string, { ours: string; deepface: string }> = {};
  for (const [rel, theirs] of Object.entries(faces.detectors['opencv'] ?? {})) {
    const o = await ourImage(pipeline, readFileSync(join(SHARED, 'lfw-devtrain', rel)), 'opencv', false, 'verify');
    const ours = (o.verifyAreas ?? []).map(show).join(' | ');
    const deepface = theirs.map((f) => show(f.facial_area)).join(' | ');
    if (ours !== deepface) differing[rel] = { ours, deepface };
  }
  t.same(differing, IMAGES, 'the same faces as DeepFace on the other images of those pairs; the explained differences on these');
});
