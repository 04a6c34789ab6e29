/**
 * Facenet against DeepFace 0.0.100 run offline on the same weight file (issue 14): for opencv, yunet
 * and skip, on every image of ../shared/data/deepface, every figure of the README's Facenet table
 * (face counts, facial areas, embedding cosines to DeepFace's, the decisions on every pair of
 * pairs_all.csv for cosine, euclidean and euclidean_l2 with DeepFace's thresholds, both accuracies) is
 * recomputed and held to bench/results/parity-facenet.json, which the table is generated from
 * (tools/parity/figures.ts): counts exactly, agreements with DeepFace at least as recorded
 * (test/helpers/parity-rows.ts), cosines within MARGIN.cosine. DeepFace's
 * outputs are committed fixtures (tools/reference/deepface_reference.py --model Facenet).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPipeline, REPO } from '../tools/parity/deepface-parity.js';
import { facenetParity, METRICS } from '../tools/parity/facenet-parity.js';
import { findThreshold } from '../src/deepface/decision.js';
import { MARGIN, RESULTS, results } from '../tools/parity/figures.js';
import { atLeastRecorded, decisionsWithinRecorded, withinRecorded } from './helpers/parity-rows.js';

t.test('the committed DeepFace outputs were made with the file that serves, and DeepFace\'s thresholds', async (t) => {
  const rep = JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/represent-facenet.json'), 'utf8')) as { meta: Record<string, any> };
  const pairs = JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/pairs-facenet.json'), 'utf8')) as { meta: Record<string, any>; pairs: unknown[] };
  t.match(rep.meta, { deepface: '0.0.100', model: 'Facenet', weights: { file: 'facenet_keras.h5', sha256: '6acdd8fb3a3fb2b54257abdd1879246a3fcbe18fbe53a41c751e141abe63a0af', linked_as: 'facenet_weights.h5' } });
  for (const m of METRICS) t.equal(pairs.meta.thresholds[m], findThreshold('Facenet', m), `${m}: our threshold is DeepFace's`);
  t.equal(pairs.pairs.length, 1830, 'every pair of pairs_all.csv');
});

t.test('Facenet answers as the README says, on every image and every pair', async (t) => {
  const want = results(RESULTS.facenet).deepface_images as Record<string, Record<string, any>>;
  const { pipeline, close } = await createPipeline('Facenet');
  t.teardown(close);
  const report = (await facenetParity(pipeline)) as Record<string, Record<string, any>>;
  for (const det of ['opencv', 'yunet', 'skip']) {
    const r = report[det] as Record<string, any>;
    const w = want[det] as Record<string, any>;
    t.comment(
      `${det}: faces ${r.faces_matched}/${r.faces}, counts ${r.same_face_count}/${r.images}, cosine median ${r.cosine_median} min ${r.cosine_min}, areas ${r.same_facial_area}/${r.faces}, ` +
        METRICS.map((m) => `${m} ${r.pairs_all[m].same_decision}/${r.pairs_all[m].pairs}`).join(', '),
    );
    t.equal(w.images, 65, `${det}: the recorded figures cover every image (65)`);
    // The differences from DeepFace are an upper bound (test/helpers/parity-rows.ts): another CPU may agree more.
    for (const k of ['images', 'faces']) t.equal(r[k], w[k], `${det}: ${k} ${r[k]} (recorded ${w[k]})`);
    for (const k of ['same_face_count', 'faces_matched', 'same_facial_area', 'same_face_order']) atLeastRecorded(t, `${det}: ${k}`, r[k], w[k]);
    withinRecorded(t, `${det}: images with another face count`, r.face_count_differences, w.face_count_differences);
    withinRecorded(t, `${det}: facial-area differences`, r.facial_area_differences, w.facial_area_differences);
    withinRecorded(t, `${det}: images listing faces in another order (README: img8, img26, img44, selfie-many-people)`, r.face_order_differences, w.face_order_differences);
    for (const k of ['cosine_median', 'cosine_min']) t.ok(Math.abs(r[k] - w[k]) <= MARGIN.cosine, `${det}: ${k} ${r[k]} within ${MARGIN.cosine} of ${w[k]}`);
    for (const m of METRICS) {
      const [d, e] = [r.pairs_all[m], w.pairs_all[m]];
      t.equal(e.pairs, 1830, `${det} ${m}: the recorded figures cover every pair (1830)`);
      decisionsWithinRecorded(t, `${det} ${m}`, d, e);
    }
  }
});
