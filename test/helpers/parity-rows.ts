/**
 * One detector's row of a parity report (tools/parity/deepface-parity.ts, facenet-parity.ts) against the
 * row recorded in its results file, on any x86-64 CPU (docs/parity.md, "On other CPUs"): what is counted
 * exactly (images, pairs, DeepFace's own accuracy) exactly; cosines within MARGIN.cosine, IoUs within
 * MARGIN.iou (tools/parity/figures.ts, which the README states); and the differences from DeepFace as an
 * upper bound: agreement counts at least the recorded ones, listed differences a superset of this CPU's.
 * Where this CPU agrees with DeepFace more, the test logs it (t.comment) and passes.
 */
import type { Test } from 'tap';
import { MARGIN } from '../../tools/parity/figures.js';

/** A count of agreements with DeepFace: at least the recorded one. */
export function atLeastRecorded(t: Test, label: string, got: number, want: number): void {
  t.ok(got >= want, `${label} ${got}, at least the recorded ${want}`);
  if (got > want) t.comment(`${label}: ${got} here, ${want} recorded (this CPU's kernels agree with DeepFace more)`);
}

/** Listed differences ("<image or pair>: detail"): none beyond the recorded ones, compared by what they name. */
export function withinRecorded(t: Test, label: string, got: string[], want: string[]): void {
  const name = (d: string) => d.split(':')[0]!;
  const recorded = new Set(want.map(name));
  t.same(got.filter((d) => !recorded.has(name(d))), [], `${label}: no difference beyond the recorded ones`);
  const seen = new Set(got.map(name));
  for (const d of want) if (!seen.has(name(d))) t.comment(`${label}: recorded "${d}" does not occur on this CPU; the list is an upper bound`);
}

type Decisions = { pairs: number; same_decision: number; ours_accuracy: number; deepface_accuracy: number; differing: unknown[] };

/**
 * Pair decisions: the same pairs and DeepFace's accuracy exactly, at least the recorded same decisions,
 * and no pair decided otherwise beyond the recorded ones (where the results file lists them all; it keeps
 * the first 20). Our accuracy is the recorded one whenever the same pairs differ.
 */
export function decisionsWithinRecorded(t: Test, label: string, d: Decisions, e: Decisions): void {
  t.same({ pairs: d.pairs, deepface_accuracy: d.deepface_accuracy }, { pairs: e.pairs, deepface_accuracy: e.deepface_accuracy }, `${label}: ${d.pairs} pairs, DeepFace's accuracy ${d.deepface_accuracy}, as recorded`);
  atLeastRecorded(t, `${label}: decided as DeepFace decides`, d.same_decision, e.same_decision);
  const str = (x: unknown) => (typeof x === 'string' ? x : `${(x as { pair?: unknown }).pair ?? JSON.stringify(x)}:`);
  const complete = e.differing.length === e.pairs - e.same_decision;
  if (complete) withinRecorded(t, `${label} pairs decided otherwise`, d.differing.map(str), e.differing.map(str));
  else t.comment(`${label}: the results file lists ${e.differing.length} of its ${e.pairs - e.same_decision} pairs decided otherwise, so only their count is held`);
  if (d.same_decision === e.same_decision) t.equal(d.ours_accuracy, e.ours_accuracy, `${label}: accuracy ${d.ours_accuracy} (DeepFace ${d.deepface_accuracy}), as recorded`);
  else t.comment(`${label}: accuracy ${d.ours_accuracy} here, ${e.ours_accuracy} recorded`);
}

export function sameDlibRow(t: Test, det: string, got: Record<string, any>, want: Record<string, any>): void {
  t.equal(got['images'], want['images'], `${det}: images ${got['images']} (recorded ${want['images']})`);
  for (const k of ['same_face_count', 'faces_matched']) atLeastRecorded(t, `${det}: ${k}`, got[k], want[k]);
  withinRecorded(t, `${det}: images with another face count`, got['face_count_differences'], want['face_count_differences']);
  for (const k of ['cosine_median', 'cosine_min']) t.ok(Math.abs(got[k] - want[k]) <= MARGIN.cosine, `${det}: ${k} ${got[k]} within ${MARGIN.cosine} of ${want[k]}`);
  for (const k of ['iou_median', 'iou_min']) t.ok(Math.abs(got[k] - want[k]) <= MARGIN.iou, `${det}: ${k} ${got[k]} (recorded ${want[k]})`);
  for (const set of ['test_asserted_pairs', 'pairs_all']) decisionsWithinRecorded(t, `${det} ${set}`, got[set], want[set]);
}
