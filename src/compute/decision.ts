// TEMPORARY: replaced by the native binding at merge
/**
 * Minimal stand-in for DeepFace's thresholds and confidence calibration (deepface-reference §4.2, §4.3)
 * for the models this service serves, so the gateway can decide two-embedding verifies itself.
 */
import { ServiceError } from '../errors/index.js';

type M = 'cosine' | 'euclidean' | 'euclidean_l2' | 'angular';

export const embeddingDims: Record<string, number> = {
  'VGG-Face': 4096, Facenet: 128, Facenet512: 512, OpenFace: 128, DeepFace: 4096, DeepID: 160, Dlib: 128, ArcFace: 512, SFace: 128, GhostFaceNet: 512, Buffalo_L: 512,
};

const THRESHOLDS: Record<string, Record<M, number>> = {
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

// [w, b, normalizer, max_T, min_T, max_F, min_F]
const CONF: Record<string, Partial<Record<M, number[]>>> = {
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
};

export function findThreshold(model: string, metric: string): number {
  const t = THRESHOLDS[model]?.[metric as M];
  if (t === undefined) throw new ServiceError('invalid_request', `no threshold for model ${model} and metric ${metric}`);
  return t;
}

function sigmoid(z: number): number {
  return z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z));
}

export function findConfidence(distance: number, model: string, metric: string, verified: boolean): number {
  if (distance <= 0) return verified ? 100.0 : 0.0;
  const c = CONF[model]?.[metric as M];
  if (!c) return verified ? 51 : 49;
  const [w, b, norm, maxT, minT, maxF, minF] = c as [number, number, number, number, number, number, number];
  let d = distance;
  if (norm > 1) d = d / norm;
  const p = 100 * sigmoid(w * d + b);
  let lo: number, hi: number, tmin: number, tmax: number;
  if (verified) { lo = minT; hi = maxT; tmin = Math.max(51, lo); tmax = 100; } else { lo = minF; hi = maxF; tmin = 0; tmax = Math.min(49, Math.trunc(hi)); }
  let conf = ((p - lo) / (hi - lo)) * (tmax - tmin) + tmin;
  if (verified) conf = Math.max(conf, 51); else conf = Math.min(conf, 49);
  conf = Math.min(100, Math.max(0, conf));
  return Math.round(conf * 100) / 100;
}

export function roundDistance(d: number): number {
  return Math.round(d * 1e6) / 1e6;
}
