/**
 * DeepFace's decision rules (deepface-reference.md §4.2, §4.3), shared by the gateway (compare) and
 * the model server (verify) so that both answer exactly as DeepFace 0.0.100 would: the calibrated
 * thresholds, the distance-to-confidence calibration, and the rounding of distances.
 */
import { ServiceError } from '../errors/index.js';
import type { Metric } from '../native/compare.js';

export type { Metric };

/** Calibrated thresholds (DeepFace `deepface/config/threshold.py`); `verified = distance <= threshold`. */
export const THRESHOLDS: Readonly<Record<string, Readonly<Record<Metric, number>>>> = {
  'VGG-Face': { cosine: 0.68, euclidean: 1.17, euclidean_l2: 1.17, angular: 0.39 },
  Facenet: { cosine: 0.4, euclidean: 10, euclidean_l2: 0.8, angular: 0.33 },
  Facenet512: { cosine: 0.3, euclidean: 23.56, euclidean_l2: 1.04, angular: 0.35 },
  ArcFace: { cosine: 0.68, euclidean: 4.15, euclidean_l2: 1.13, angular: 0.39 },
  Dlib: { cosine: 0.07, euclidean: 0.6, euclidean_l2: 0.4, angular: 0.12 },
  SFace: { cosine: 0.593, euclidean: 10.734, euclidean_l2: 1.055, angular: 0.36 },
  OpenFace: { cosine: 0.1, euclidean: 0.55, euclidean_l2: 0.55, angular: 0.11 },
  DeepFace: { cosine: 0.23, euclidean: 64, euclidean_l2: 0.64, angular: 0.12 },
  DeepID: { cosine: 0.015, euclidean: 45, euclidean_l2: 0.17, angular: 0.04 },
  GhostFaceNet: { cosine: 0.65, euclidean: 35.71, euclidean_l2: 1.1, angular: 0.38 },
  Buffalo_L: { cosine: 0.55, euclidean: 0.6, euclidean_l2: 1.1, angular: 0.45 },
};

/** Output size of each model's embedding (reference §3.1). */
export const EMBEDDING_DIMS: Readonly<Record<string, number>> = {
  Facenet: 128,
  Facenet512: 512,
  OpenFace: 128,
  Dlib: 128,
  SFace: 128,
  'VGG-Face': 4096,
  ArcFace: 512,
  GhostFaceNet: 512,
  DeepFace: 4096,
  DeepID: 160,
  Buffalo_L: 512,
};

/**
 * Logistic calibration of one model/metric: `p = 100·sigmoid(w·d/normalizer + b)`, then rescaled
 * from the observed [min, max] of true (or false) pairs into [51, 100] (or [0, 49]).
 */
export interface ConfidenceCoefficients {
  w: number;
  b: number;
  normalizer: number;
  maxTrue: number;
  minTrue: number;
  maxFalse: number;
  minFalse: number;
}

type Row = [w: number, b: number, normalizer: number, maxTrue: number, minTrue: number, maxFalse: number, minFalse: number];

/** DeepFace `deepface/config/confidence.py`. Buffalo_L has no entry there, hence none here. */
const ROWS: Record<string, Record<Metric, Row>> = {
  Facenet: {
    cosine: [-6.502269165856082, 1.679048923097668, 1.206694, 77.17253153662926, 41.790002608273234, 20.618350202170916, 0.7976712344840693],
    euclidean: [-6.716177467853723, 2.790978346203265, 18.735288, 74.76412617567517, 40.4423755909089, 25.840858374979504, 1.9356150486888306],
    euclidean_l2: [-6.708710331202137, 2.9094193067398195, 1.553508, 75.45756719896039, 40.4509428022908, 30.555931000001184, 2.189644991619842],
    angular: [-6.371147050396505, 0.6766460615182355, 0.56627, 45.802357900723386, 24.327312950719133, 16.95267765757785, 5.063533287198758],
  },
  Facenet512: {
    cosine: [-5.868251768046832, 0.8674084834913275, 1.384316, 62.19495119465813, 40.700922463435305, 39.96947059787277, 0.6687247052303562],
    euclidean: [-6.742961485008033, 2.61949356815704, 40.771751, 75.20184708761875, 23.391566956420913, 20.317410180868695, 1.5930391784587872],
    euclidean_l2: [-6.76040230078399, 3.0057651791652638, 1.663921, 78.73795056941638, 23.492800781101295, 21.754795621979017, 2.287349921316484],
    angular: [-6.487840122876141, 0.9536496647058516, 0.625563, 52.1215977454314, 21.72372703119752, 20.734638325222512, 4.290546073131373],
  },
  SFace: {
    cosine: [-6.531673506288863, 2.2217245506456895, 1.147363, 81.04135659361265, 26.26225160110723, 23.62218403514688, 1.3256149092319998],
    euclidean: [-5.922412546512467, 2.2306552793788903, 18.826448, 53.59440633088357, 24.24534043569188, 24.000007447174763, 2.4321858952665205],
    euclidean_l2: [-6.561644724339029, 3.215600266169891, 1.514835, 72.39437183443313, 22.25500614635702, 19.531386697831906, 3.4024932531839815],
    angular: [-5.575609473928204, 0.421773496308517, 0.547079, 37.48563531943993, 17.074673595288292, 16.40044990637247, 6.732498767352633],
  },
  OpenFace: {
    cosine: [-2.932562678842587, -2.0582304636838518, 0.884469, 10.546657497687274, 8.832401641007316, 8.535900401000742, 0.9452381276992784],
    euclidean: [-5.829345103053105, 1.4390680732209533, 1.330015, 60.28549643159932, 27.506182086242408, 27.058382251505012, 1.2245483461697035],
    euclidean_l2: [-5.82934526003372, 1.4390681633867946, 1.330015, 60.28549793162577, 27.506182591043363, 27.058382739158215, 1.224548265353685],
    angular: [-0.5288927551138177, -4.450627600247528, 0.463143, 1.109656206367124, 1.0914425266009675, 1.0887229955132125, 0.9052858972210456],
  },
  Dlib: {
    cosine: [-3.7618087798972293, -0.6908814404797111, 0.200732, 32.289077089161594, 27.84268789569509, 27.803329512485526, 19.061842082779275],
    euclidean: [-7.494007964438609, 3.9696154227506937, 0.909856, 89.6022157357575, 37.63548146988899, 36.791885490113046, 5.474065355413035],
    euclidean_l2: [-7.104640497107913, 2.3288632189212457, 0.633612, 76.39948218795206, 37.84998375132765, 36.56103592414769, 10.222692344960938],
    angular: [-3.2116944601651727, -0.5970349913114966, 0.205221, 31.79313619700238, 27.2527288169969, 27.18852931051015, 22.163871613552466],
  },
  'VGG-Face': {
    cosine: [-6.61254026479904, 3.145549102667549, 0.979183, 88.28484099529868, 20.787978733113846, 20.556681914175016, 3.457832575746455],
    euclidean: [-6.505124425537925, 3.8912125488666436, 1.399416, 76.47012030708339, 17.794898757517597, 16.443735520230746, 6.82484246933999],
    euclidean_l2: [-6.505124425537925, 3.8912125488666436, 1.399416, 76.47012030708339, 17.794898757517597, 16.443735520230746, 6.82484246933999],
    angular: [-5.035753663256314, 0.2961597285248822, 0.493373, 34.230717614698825, 16.624506551373642, 15.49607745347531, 10.080199045102233],
  },
  ArcFace: {
    cosine: [-6.586150423868342, 2.2617127737265186, 1.22267, 82.32544721731948, 28.687745855666044, 17.210359124614925, 1.306796127659645],
    euclidean: [-5.370594347027345, 0.6896763568574544, 10.401334, 43.042326442916284, 19.048164749978937, 18.682892152590245, 0.9185346995033978],
    euclidean_l2: [-6.541948874098929, 3.2628963901283585, 1.563758, 74.93505228104696, 21.800168694491585, 15.091078907730523, 3.6296845343803894],
    angular: [-5.63344888288512, 0.5682159222314143, 0.571477, 40.81365081792457, 18.409621072962818, 15.13985487535995, 6.59169002231532],
  },
  GhostFaceNet: {
    cosine: [-6.595823624282929, 2.4180964556128584, 1.155661, 84.65757505749636, 22.700531204915876, 15.08427020899693, 1.5101757980158446],
    euclidean: [-6.506709483088198, 2.935230928728856, 52.150135, 73.09358661728027, 24.63718600288871, 16.513245368123492, 2.7345457334612155],
    euclidean_l2: [-6.572852118241916, 3.3068829731570824, 1.520303, 75.95533899593255, 20.08886780040665, 17.84278657570624, 3.675727926946401],
    angular: [-5.588606771251277, 0.48845693581021543, 0.549751, 39.92978715270581, 16.49081504576138, 16.143233933992967, 7.018276839135204],
  },
  DeepID: {
    cosine: [-1.1109389867203003, -1.644356005882629, 0.142463, 16.114369377586183, 15.966222060549578, 15.96057368926546, 14.153198282635255],
    euclidean: [-4.267900227772648, -0.11777629548659044, 124.194689, 27.2342405984107, 16.08201206739819, 15.90739039527823, 1.230125408063358],
    euclidean_l2: [-3.6681410379067394, -0.9230555193862335, 0.533784, 21.681829939622233, 17.57160935306287, 17.548244679217202, 5.309829288484883],
    angular: [-0.2707576106983799, -3.87004749575164, 0.171993, 2.02619851743467, 2.0220784432439474, 2.021498115793411, 1.951974654804089],
  },
  DeepFace: {
    cosine: [-5.415666808301125, 1.4142777745857174, 0.379428, 74.38935817923884, 54.25111593547536, 54.16884369236297, 34.51159270342188],
    euclidean: [-7.001068623335827, 5.229677082777916, 85.997482, 90.45531547409938, 50.79114821321717, 50.4218117539695, 14.53693626301508],
    euclidean_l2: [-6.520866920809606, 3.750706572243227, 0.871123, 80.42595166943502, 39.6419822387709, 39.578029519563, 12.677597535252195],
    angular: [-0.20178503977417342, -4.960267621006636, 0.2869, 0.6803996880922583, 0.6801854995078236, 0.6759509854967268, 0.6573199053945571],
  },
};

export function confidenceCoefficients(model: string, metric: Metric): ConfidenceCoefficients | undefined {
  const row = Object.hasOwn(ROWS, model) ? ROWS[model]?.[metric] : undefined;
  if (!row) return undefined;
  const [w, b, normalizer, maxTrue, minTrue, maxFalse, minFalse] = row;
  return { w, b, normalizer, maxTrue, minTrue, maxFalse, minFalse };
}

export const KNOWN_MODELS: readonly string[] = Object.keys(THRESHOLDS);

/** The calibrated threshold; throws invalid_request for a model or metric DeepFace has none for. */
export function findThreshold(model: string, metric: Metric): number {
  const value = Object.hasOwn(THRESHOLDS, model) ? THRESHOLDS[model]?.[metric] : undefined;
  if (value === undefined) {
    throw new ServiceError('invalid_request', `no calibrated threshold for model '${model.slice(0, 40)}' and metric '${String(metric).slice(0, 40)}'`);
  }
  return value;
}

/** Embedding length of a model; throws invalid_request for an unknown one. */
export function embeddingDims(model: string): number {
  const dims = Object.hasOwn(EMBEDDING_DIMS, model) ? EMBEDDING_DIMS[model] : undefined;
  if (dims === undefined) throw new ServiceError('invalid_request', `unknown model '${model.slice(0, 40)}'`);
  return dims;
}

function sigmoid(z: number): number {
  // The two branches keep exp() from overflowing for large |z|.
  if (z >= 0) return 1 / (1 + Math.exp(-z));
  const e = Math.exp(z);
  return e / (1 + e);
}

/**
 * DeepFace's `find_confidence` (reference §4.3), in percent. `verified` is decided against the
 * model's calibrated threshold, even when the caller overrides the threshold (as DeepFace does).
 */
export function findConfidence(distance: number, model: string, metric: Metric, verified: boolean): number {
  if (distance <= 0) return verified ? 100 : 0;
  const c = confidenceCoefficients(model, metric);
  if (!c) return verified ? 51 : 49;
  // A normalizer <= 1 is deliberately not applied: DeepFace divides only when it is > 1.
  const d = c.normalizer > 1 ? distance / c.normalizer : distance;
  const p = 100 * sigmoid(c.w * d + c.b);
  let lo: number, hi: number, targetMin: number, targetMax: number;
  if (verified) {
    [lo, hi, targetMin, targetMax] = [c.minTrue, c.maxTrue, Math.max(51, c.minTrue), 100];
  } else {
    [lo, hi, targetMin, targetMax] = [c.minFalse, c.maxFalse, 0, Math.min(49, Math.trunc(c.maxFalse))];
  }
  let confidence = ((p - lo) / (hi - lo)) * (targetMax - targetMin) + targetMin;
  confidence = verified ? Math.max(confidence, 51) : Math.min(confidence, 49);
  return roundConfidence(Math.min(100, Math.max(0, confidence)));
}

/**
 * Python's `round(x, 2)`: the decimal nearest to the exact binary value (what toFixed computes),
 * except that exact ties go to even. A tie at 2 decimals needs x to be an odd multiple of 1/8.
 */
function roundConfidence(x: number): number {
  if (Number.isInteger(x * 8) && !Number.isInteger(x * 4)) return rint(x * 100) / 100;
  return Number(x.toFixed(2));
}

/** Round half to even, as C's rint / numpy's around. */
function rint(y: number): number {
  const floor = Math.floor(y);
  const frac = y - floor;
  const r = frac < 0.5 ? floor : frac > 0.5 ? floor + 1 : floor % 2 === 0 ? floor : floor + 1;
  // rint keeps the sign of a negative value rounded to zero.
  return r === 0 && y < 0 ? -0 : r;
}

/**
 * `np.round(d, 6)` as DeepFace applies it to every distance: scale by 1e6, round half to even,
 * scale back (numpy's algorithm, which is not always the decimal nearest to d).
 */
export function roundDistance(d: number): number {
  if (!Number.isFinite(d)) return d;
  return rint(d * 1e6) / 1e6;
}

export interface Decision {
  /** Rounded to 6 decimals, as DeepFace reports it. */
  distance: number;
  threshold: number;
  verified: boolean;
  confidence: number;
}

/**
 * DeepFace's verify decision (reference §2.2 steps 4-5) from an unrounded distance: round, take the
 * caller's threshold unless absent or 0, verify inclusively, and compute the confidence against the
 * calibrated threshold.
 */
export function decide(rawDistance: number, model: string, metric: Metric, customThreshold?: number | null, pretuned = findThreshold(model, metric)): Decision {
  const distance = roundDistance(rawDistance);
  const threshold = customThreshold ? customThreshold : pretuned;
  return {
    distance,
    threshold,
    verified: distance <= threshold,
    confidence: findConfidence(distance, model, metric, distance <= pretuned),
  };
}
