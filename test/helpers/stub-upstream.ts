/** An in-process model server for gateway tests that need no real one: ready, Facenet and Dlib at 128 dims. */
import type { Upstream } from '../../src/model-client/client.js';

type Compute = Partial<Pick<Upstream, 'verify' | 'represent' | 'embed'>>;

/** Readiness and capabilities answered; each compute call the test does not give fails loudly ("not used"). */
export function stubUpstream(compute: Compute = {}): Upstream {
  const unused = async (): Promise<never> => {
    throw new Error('not used');
  };
  return {
    async readiness() { return { status: 200, body: { status: 'ready', ready: true, warming: false, warmed_models: [], warmed_detectors: [], error: '' } }; },
    async capabilities() {
      return {
        allowed_models: ['Facenet', 'Dlib'], default_model: 'Facenet', allowed_detectors: ['opencv', 'skip'], default_detector: 'opencv',
        distance_metrics: ['cosine', 'euclidean', 'euclidean_l2', 'angular'], default_distance_metric: 'cosine', embedding_dims: { Facenet: 128, Dlib: 128 },
        thresholds: {}, limits: {}, input_modes: [], version: 'v1',
      };
    },
    verify: compute.verify ?? unused,
    represent: compute.represent ?? unused,
    embed: compute.embed ?? unused,
    async close() {},
  };
}
