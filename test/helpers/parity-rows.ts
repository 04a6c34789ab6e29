/**
 * One detector's row of a Dlib parity report (tools/parity/deepface-parity.ts) against the row
 * recorded in its results file: counts, decisions and accuracies exactly, cosines within
 * MARGIN.cosine, IoUs within MARGIN.iou (tools/parity/figures.ts, which the README states).
 */
import type { Test } from 'tap';
import { MARGIN } from '../../tools/parity/figures.js';

export function sameDlibRow(t: Test, det: string, got: Record<string, any>, want: Record<string, any>): void {
  for (const k of ['images', 'same_face_count', 'faces_matched']) t.equal(got[k], want[k], `${det}: ${k} ${got[k]} (recorded ${want[k]})`);
  t.same(got['face_count_differences'], want['face_count_differences'], `${det}: the same images with another face count`);
  for (const k of ['cosine_median', 'cosine_min']) t.ok(Math.abs(got[k] - want[k]) <= MARGIN.cosine, `${det}: ${k} ${got[k]} within ${MARGIN.cosine} of ${want[k]}`);
  for (const k of ['iou_median', 'iou_min']) t.ok(Math.abs(got[k] - want[k]) <= MARGIN.iou, `${det}: ${k} ${got[k]} (recorded ${want[k]})`);
  for (const set of ['test_asserted_pairs', 'pairs_all']) {
    const [g, w] = [got[set], want[set]];
    t.same(
      { pairs: g.pairs, same_decision: g.same_decision, ours_accuracy: g.ours_accuracy, deepface_accuracy: g.deepface_accuracy, differing: g.differing },
      { pairs: w.pairs, same_decision: w.same_decision, ours_accuracy: w.ours_accuracy, deepface_accuracy: w.deepface_accuracy, differing: w.differing },
      `${det} ${set}: ${g.same_decision}/${g.pairs} decided as DeepFace decides, accuracy ${g.ours_accuracy} (DeepFace ${g.deepface_accuracy}), as recorded`,
    );
  }
}
