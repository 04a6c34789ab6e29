/**
 * Facenet against DeepFace 0.0.100 run offline on the same weight file (issue 14): for opencv, yunet
 * and skip, on every image of ../shared/data/deepface, every face's embedding cosine to DeepFace's is
 * >= 0.99999, the face counts and the facial areas are the same; and every pair of pairs_all.csv is
 * decided as DeepFace.verify decides it, for cosine, euclidean and euclidean_l2 with DeepFace's
 * Facenet thresholds. DeepFace's outputs are committed fixtures (tools/reference/deepface_reference.py
 * --model Facenet); the measured figures are printed and kept in bench/results/parity-facenet.json by
 * tools/parity/facenet-parity.ts.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPipeline, REPO } from '../tools/parity/deepface-parity.js';
import { facenetParity, METRICS } from '../tools/parity/facenet-parity.js';
import { findThreshold } from '../src/compute/decision.js';

t.test('the committed DeepFace outputs were made with the file that serves, and DeepFace\'s thresholds', async (t) => {
  const rep = JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/represent-facenet.json'), 'utf8')) as { meta: Record<string, any> };
  const pairs = JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/pairs-facenet.json'), 'utf8')) as { meta: Record<string, any>; pairs: unknown[] };
  t.match(rep.meta, { deepface: '0.0.100', model: 'Facenet', weights: { file: 'facenet_keras.h5', sha256: '6acdd8fb3a3fb2b54257abdd1879246a3fcbe18fbe53a41c751e141abe63a0af', linked_as: 'facenet_weights.h5' } });
  for (const m of METRICS) t.equal(pairs.meta.thresholds[m], findThreshold('Facenet', m), `${m}: our threshold is DeepFace's`);
  t.equal(pairs.pairs.length, 1830, 'every pair of pairs_all.csv');
});

t.test('Facenet answers as DeepFace does on every image and every pair', async (t) => {
  const { pipeline, close } = await createPipeline('Facenet');
  t.teardown(close);
  const report = (await facenetParity(pipeline)) as Record<string, Record<string, any>>;
  for (const det of ['opencv', 'yunet', 'skip']) {
    const r = report[det] as Record<string, any>;
    t.comment(
      `${det}: faces ${r.faces_matched}/${r.faces}, counts ${r.same_face_count}/${r.images}, cosine median ${r.cosine_median} min ${r.cosine_min}, areas ${r.same_facial_area}/${r.faces}, ` +
        METRICS.map((m) => `${m} ${r.pairs_all[m].same_decision}/${r.pairs_all[m].pairs}`).join(', '),
    );
    t.equal(r.images, 65, `${det}: every image`);
    t.equal(r.same_face_count, r.images, `${det}: the same face count on every image ${JSON.stringify(r.face_count_differences)}`);
    t.equal(r.faces_matched, r.faces, `${det}: every DeepFace face has ours`);
    t.ok(r.cosine_min >= 0.99999, `${det}: every embedding's cosine to DeepFace's >= 0.99999 (min ${r.cosine_min}, median ${r.cosine_median}) ${JSON.stringify(r.cosine_below_099999)}`);
    t.equal(r.same_facial_area, r.faces, `${det}: the same facial area for every face ${JSON.stringify(r.facial_area_differences.slice(0, 3))}`);
    for (const m of METRICS) {
      const d = r.pairs_all[m];
      t.equal(d.pairs, 1830, `${det} ${m}: every pair`);
      t.equal(d.same_decision, d.pairs, `${det} ${m}: DeepFace's decision on every pair ${JSON.stringify(d.differing.slice(0, 3))}`);
    }
  }
});
