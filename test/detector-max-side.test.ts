/**
 * README, "Faster detection on large images": with FACECOMPUTE_DETECTOR_MAX_SIDE=1024 the detector runs
 * on an area-downscaled copy, and the README states what that does to parity with DeepFace (Dlib,
 * every image and pair of ../shared/data/deepface). Recomputed here for `opencv` and `yunet` (the
 * detectors the README names; `skip` detects nothing) and held to
 * bench/results/parity-dlib-maxside1024.json, which the README's sentence is generated from, as
 * test/deepface-parity.test.ts holds the full-size figures to theirs.
 */
import t from 'tap';
import { createPipeline, deepfaceParity } from '../tools/parity/deepface-parity.js';
import { RESULTS, results } from '../tools/parity/figures.js';
import { sameDlibRow } from './helpers/parity-rows.js';

const DETECTORS = ['opencv', 'yunet'] as const;

t.test('FACECOMPUTE_DETECTOR_MAX_SIDE=1024: the figures the README states', async (t) => {
  const want = results(RESULTS.dlibMaxSide).deepface_images as Record<string, Record<string, any>>;
  const full = results(RESULTS.dlib).deepface_images as Record<string, Record<string, any>>;
  const { pipeline, close } = await createPipeline('Dlib', 1024);
  t.teardown(close);
  const report = (await deepfaceParity(pipeline, DETECTORS)) as Record<string, Record<string, any>>;
  for (const det of DETECTORS) {
    const r = report[det] as Record<string, any>;
    t.comment(`${det} at 1024: counts ${r.same_face_count}/${r.images}, decisions ${r.pairs_all.same_decision}/${r.pairs_all.pairs}, accuracy ${r.pairs_all.ours_accuracy} (DeepFace ${r.pairs_all.deepface_accuracy})`);
    t.equal(want[det]!['images'], full[det]!['images'], `${det}: the same ${full[det]!['images']} images as at full size`);
    t.equal(want[det]!['pairs_all'].pairs, full[det]!['pairs_all'].pairs, `${det}: the same ${full[det]!['pairs_all'].pairs} pairs`);
    sameDlibRow(t, det, r, want[det] as Record<string, any>);
  }
});
