/**
 * Parity with DeepFace 0.0.100 on its own test images (Dlib; opencv, yunet and skip detectors),
 * against the outputs DeepFace recorded (test/fixtures/deepface, made by
 * tools/reference/deepface_reference.py). The bars are the goals; the measured figures are
 * printed and kept in bench/results/parity-dlib.json by tools/parity/deepface-parity.ts.
 */
import t from 'tap';
import { createPipeline, deepfaceParity } from '../tools/parity/deepface-parity.js';

t.test('our pipeline answers as DeepFace does', async (t) => {
  const { pipeline, close } = await createPipeline();
  t.teardown(close);
  const report = (await deepfaceParity(pipeline)) as Record<string, Record<string, any>>;
  for (const det of ['opencv', 'yunet', 'skip']) {
    const r = report[det] as Record<string, any>;
    t.comment(`${det}: counts ${r.same_face_count}/${r.images}, cosine median ${r.cosine_median} min ${r.cosine_min}, IoU min ${r.iou_min}, decisions ${r.pairs_all.same_decision}/${r.pairs_all.pairs}`);
    t.ok(r.cosine_median >= 0.99999, `${det}: median embedding cosine to DeepFace ${r.cosine_median} >= 0.99999`);
    t.ok(r.cosine_min >= 0.9999, `${det}: minimum embedding cosine ${r.cosine_min} >= 0.9999`);
    t.equal(r.test_asserted_pairs.same_decision, r.test_asserted_pairs.pairs, `${det}: every pair DeepFace's tests assert decides the same`);
    t.ok(r.pairs_all.same_decision_rate >= 0.995, `${det}: ${r.pairs_all.same_decision}/${r.pairs_all.pairs} decisions as DeepFace's (goal 99.5%)`);
    // With skip too: /represent letterboxes the uint8 image before dividing, as DeepFace's represent does.
    t.ok(r.pairs_all.ours_accuracy >= r.pairs_all.deepface_accuracy - 1e-9, `${det}: accuracy ${r.pairs_all.ours_accuracy} not below DeepFace's ${r.pairs_all.deepface_accuracy}`);
    if (det !== 'skip') {
      // With skip, DeepFace's represent reports (w, h) = (H, W) (a quirk we do not copy), so boxes differ by design.
      t.ok(r.same_face_count_rate >= 0.98, `${det}: identical face counts on ${r.same_face_count}/${r.images} images (goal 98%)`);
      t.ok(r.iou_ge_095_rate >= 0.98, `${det}: facial-area IoU >= 0.95 on ${(r.iou_ge_095_rate * 100).toFixed(1)}% of faces (goal 98%)`);
    }
  }
});
