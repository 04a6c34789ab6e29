/**
 * DeepFace 0.0.100's decision rules as literal values, for the tests and the fake model server: an
 * oracle that does not import the product's tables, so a wrong threshold or coefficient in
 * src/deepface/decision.ts fails a test instead of being echoed back by the fake.
 *
 * Copied from the deepface 0.0.100 wheel on PyPI (fetch it with
 * `pip download --no-deps deepface==0.0.100`): deepface/config/threshold.py, which
 * deepface/modules/verification.py `find_threshold` reads, and deepface/config/confidence.py, which its
 * `find_confidence` reads (the rows of the models the fake model server serves).
 */
export type DeepFaceMetric = 'cosine' | 'euclidean' | 'euclidean_l2' | 'angular';

/** deepface/config/threshold.py: `thresholds`, every model and metric. */
export const DEEPFACE_THRESHOLDS: Readonly<Record<string, Readonly<Record<DeepFaceMetric, number>>>> = {
  'VGG-Face': { cosine: 0.68, euclidean: 1.17, euclidean_l2: 1.17, angular: 0.39 },
  Facenet: { cosine: 0.40, euclidean: 10, euclidean_l2: 0.80, angular: 0.33 },
  Facenet512: { cosine: 0.30, euclidean: 23.56, euclidean_l2: 1.04, angular: 0.35 },
  ArcFace: { cosine: 0.68, euclidean: 4.15, euclidean_l2: 1.13, angular: 0.39 },
  Dlib: { cosine: 0.07, euclidean: 0.6, euclidean_l2: 0.4, angular: 0.12 },
  SFace: { cosine: 0.593, euclidean: 10.734, euclidean_l2: 1.055, angular: 0.36 },
  OpenFace: { cosine: 0.10, euclidean: 0.55, euclidean_l2: 0.55, angular: 0.11 },
  DeepFace: { cosine: 0.23, euclidean: 64, euclidean_l2: 0.64, angular: 0.12 },
  DeepID: { cosine: 0.015, euclidean: 45, euclidean_l2: 0.17, angular: 0.04 },
  GhostFaceNet: { cosine: 0.65, euclidean: 35.71, euclidean_l2: 1.10, angular: 0.38 },
  Buffalo_L: { cosine: 0.55, euclidean: 0.6, euclidean_l2: 1.1, angular: 0.45 },
};

interface ConfidenceRow { w: number; b: number; normalizer: number; denorm_max_true: number; denorm_min_true: number; denorm_max_false: number; denorm_min_false: number }

/** deepface/config/confidence.py: `confidences`, the rows of Facenet, Facenet512 and SFace. */
export const DEEPFACE_CONFIDENCES: Readonly<Record<string, Readonly<Record<DeepFaceMetric, ConfidenceRow>>>> = {
  Facenet: {
    cosine: { w: -6.502269165856082, b: 1.679048923097668, normalizer: 1.206694, denorm_max_true: 77.17253153662926, denorm_min_true: 41.790002608273234, denorm_max_false: 20.618350202170916, denorm_min_false: 0.7976712344840693 },
    euclidean: { w: -6.716177467853723, b: 2.790978346203265, normalizer: 18.735288, denorm_max_true: 74.76412617567517, denorm_min_true: 40.4423755909089, denorm_max_false: 25.840858374979504, denorm_min_false: 1.9356150486888306 },
    euclidean_l2: { w: -6.708710331202137, b: 2.9094193067398195, normalizer: 1.553508, denorm_max_true: 75.45756719896039, denorm_min_true: 40.4509428022908, denorm_max_false: 30.555931000001184, denorm_min_false: 2.189644991619842 },
    angular: { w: -6.371147050396505, b: 0.6766460615182355, normalizer: 0.56627, denorm_max_true: 45.802357900723386, denorm_min_true: 24.327312950719133, denorm_max_false: 16.95267765757785, denorm_min_false: 5.063533287198758 },
  },
  Facenet512: {
    cosine: { w: -5.868251768046832, b: 0.8674084834913275, normalizer: 1.384316, denorm_max_true: 62.19495119465813, denorm_min_true: 40.700922463435305, denorm_max_false: 39.96947059787277, denorm_min_false: 0.6687247052303562 },
    euclidean: { w: -6.742961485008033, b: 2.61949356815704, normalizer: 40.771751, denorm_max_true: 75.20184708761875, denorm_min_true: 23.391566956420913, denorm_max_false: 20.317410180868695, denorm_min_false: 1.5930391784587872 },
    euclidean_l2: { w: -6.76040230078399, b: 3.0057651791652638, normalizer: 1.663921, denorm_max_true: 78.73795056941638, denorm_min_true: 23.492800781101295, denorm_max_false: 21.754795621979017, denorm_min_false: 2.287349921316484 },
    angular: { w: -6.487840122876141, b: 0.9536496647058516, normalizer: 0.625563, denorm_max_true: 52.1215977454314, denorm_min_true: 21.72372703119752, denorm_max_false: 20.734638325222512, denorm_min_false: 4.290546073131373 },
  },
  SFace: {
    cosine: { w: -6.531673506288863, b: 2.2217245506456895, normalizer: 1.147363, denorm_max_true: 81.04135659361265, denorm_min_true: 26.26225160110723, denorm_max_false: 23.62218403514688, denorm_min_false: 1.3256149092319998 },
    euclidean: { w: -5.922412546512467, b: 2.2306552793788903, normalizer: 18.826448, denorm_max_true: 53.59440633088357, denorm_min_true: 24.24534043569188, denorm_max_false: 24.000007447174763, denorm_min_false: 2.4321858952665205 },
    euclidean_l2: { w: -6.561644724339029, b: 3.215600266169891, normalizer: 1.514835, denorm_max_true: 72.39437183443313, denorm_min_true: 22.25500614635702, denorm_max_false: 19.531386697831906, denorm_min_false: 3.4024932531839815 },
    angular: { w: -5.575609473928204, b: 0.421773496308517, normalizer: 0.547079, denorm_max_true: 37.48563531943993, denorm_min_true: 17.074673595288292, denorm_max_false: 16.40044990637247, denorm_min_false: 6.732498767352633 },
  },
};

/**
 * verification.py `find_confidence`, step for step, for the models above. Its last step is Python's
 * round(x, 2); toFixed differs from it only on exact binary ties, which a fake does not need.
 */
export function deepfaceConfidence(distance: number, model: string, metric: DeepFaceMetric, verified: boolean): number {
  if (distance <= 0) return verified ? 100 : 0;
  const c = DEEPFACE_CONFIDENCES[model]?.[metric];
  if (!c) return verified ? 51 : 49;
  const d = c.normalizer > 1 ? distance / c.normalizer : distance;
  const z = c.w * d + c.b;
  const confidence = 100 * (z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z)));
  const [minOriginal, maxOriginal, minTarget, maxTarget] = verified
    ? [c.denorm_min_true, c.denorm_max_true, Math.max(51, c.denorm_min_true), 100]
    : [c.denorm_min_false, c.denorm_max_false, 0, Math.min(49, Math.trunc(c.denorm_max_false))];
  let out = ((confidence - minOriginal) / (maxOriginal - minOriginal)) * (maxTarget - minTarget) + minTarget;
  if (verified && out < 51) out = 51;
  else if (!verified && out > 49) out = 49;
  out = Math.min(100, Math.max(0, out));
  return Number(out.toFixed(2));
}
