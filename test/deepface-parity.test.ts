/**
 * Parity with DeepFace 0.0.100 on its own test images (Dlib; opencv, yunet and skip detectors),
 * against the outputs DeepFace recorded (test/fixtures/deepface, made by
 * tools/reference/deepface_reference.py). Every figure of the README's Dlib table is recomputed here
 * and held to bench/results/parity-dlib.json, which the table is generated from
 * (tools/parity/figures.ts): image and pair counts exactly, agreements with DeepFace at least as recorded
 * (test/helpers/parity-rows.ts), cosines within MARGIN.cosine, IoUs within MARGIN.iou. And the counts themselves: every image, face and pair was compared.
 */
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createPipeline, deepfaceParity, DETECTORS, REPO, SHARED } from '../tools/parity/deepface-parity.js';
import { RESULTS, results } from '../tools/parity/figures.js';
import { sameDlibRow } from './helpers/parity-rows.js';

type Report = Record<string, Record<string, any>>;

const csvRows = (file: string) => readFileSync(join(SHARED, 'deepface', file), 'utf8').trim().split('\n').length - 1;
const fixture = JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/represent-dlib.json'), 'utf8')) as { images: Record<string, Record<string, unknown>> };

t.test('the recorded figures count every image, face and pair', async (t) => {
  const want = results(RESULTS.dlib).deepface_images as Report;
  const images = readdirSync(join(SHARED, 'deepface')).filter((f) => f.endsWith('.jpg') && f !== 'invalid.jpg').length;
  t.equal(Object.keys(fixture.images).length, images, `DeepFace's outputs cover every image of ../shared/data/deepface (${images})`);
  for (const det of DETECTORS) {
    const w = want[det] as Record<string, any>;
    t.equal(w.images, images, `${det}: ${images} images`);
    t.equal(w.pairs_all.pairs, csvRows('pairs_all.csv'), `${det}: every pair of pairs_all.csv (${w.pairs_all.pairs})`);
    t.equal(w.test_asserted_pairs.pairs, csvRows('test_asserted_pairs.csv'), `${det}: every pair DeepFace's tests assert (${w.test_asserted_pairs.pairs})`);
    t.ok(w.faces_matched >= w.images, `${det}: ${w.faces_matched} faces compared`);
  }
});

t.test('our pipeline answers as the README says, on every image and pair', async (t) => {
  const want = results(RESULTS.dlib).deepface_images as Report;
  const { pipeline, close } = await createPipeline();
  t.teardown(close);
  const report = (await deepfaceParity(pipeline)) as Report;
  for (const det of DETECTORS) {
    const r = report[det] as Record<string, any>;
    t.comment(`${det}: counts ${r.same_face_count}/${r.images}, ${r.faces_matched} faces, cosine median ${r.cosine_median} min ${r.cosine_min}, IoU min ${r.iou_min}, decisions ${r.pairs_all.same_decision}/${r.pairs_all.pairs}`);
    sameDlibRow(t, det, r, want[det] as Record<string, any>);
  }
});
