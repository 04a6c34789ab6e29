/** ComputeService in-process (the MCP endpoint uses it without HTTP): fake upstream, real everything else. */
import t from 'tap';
import { createComputeService, type GatewayLimits } from '../src/gateway/compute/service.js';
import { ImageResolver, type InputSettings } from '../src/gateway/inputs/resolve.js';
import { createQueue } from '../src/gateway/queue.js';
import type { Upstream } from '../src/gateway/upstream/client.js';
import { ServiceError } from '../src/errors/index.js';
import { makePng } from './helpers/images.js';

const LIMITS: GatewayLimits = {
  max_request_bytes: 1e6, max_image_bytes: 1e6, max_image_pixels: 1e6, max_targets: 10, max_batch_images: 2, max_upstream_response_bytes: 1e6,
  queue_capacity: 1, queue_timeout_ms: 100, upstream_concurrency: 1, upstream_timeout_ms: 1000, rate_limit_requests: 1, rate_limit_window_ms: 1, rate_limit_concurrent: 1,
};

function setup() {
  const calls: string[] = [];
  const area = { x: 0, y: 0, w: 1, h: 1, left_eye: null, right_eye: null, detector: 'opencv' };
  const upstream: Upstream = {
    async readiness() { throw new Error('unused'); },
    async capabilities() {
      calls.push('capabilities');
      return { allowed_models: ['Facenet'], default_model: 'Facenet', allowed_detectors: ['opencv', 'skip'], default_detector: 'opencv', distance_metrics: ['cosine'], default_distance_metric: 'cosine', embedding_dims: { Facenet: 128 }, thresholds: { Facenet: { cosine: 0.4, euclidean: 10, euclidean_l2: 0.8, angular: 0.33 } }, limits: { batch_max: 32 }, input_modes: [], version: 'v1' };
    },
    async verify(h) { calls.push(`verify:${JSON.stringify(h.img1)}`); return {} as never; },
    async represent(h) { calls.push('represent'); return { results: h.images.map(() => [{ embedding: [1], facial_area: area, face_confidence: 1 }]), model: h.model_name, detector_backend: h.detector_backend }; },
    async embed() { calls.push('embed'); return { embedding: Array(128).fill(0.5), facial_area: area, face_confidence: 0.9, model: 'Facenet' }; },
    async close() {},
  };
  const inputSettings: InputSettings = { remoteImages: 'off', localImagesRoot: '', maxImageBytes: 1e6, maxImagePixels: 1e6 };
  const svc = createComputeService({
    upstream, resolver: new ImageResolver(inputSettings, null), queue: createQueue(1, 1, 100), inputSettings, limits: LIMITS,
    fallback: { allowedModels: ['Facenet', 'SFace'], defaultModel: 'Facenet', allowedDetectors: ['opencv'], defaultDetector: 'opencv' },
  });
  return { svc, calls };
}
const ctx = { requestId: 'r', authenticated: true };
const png = makePng(4, 4).toString('base64');

async function code(p: Promise<unknown>): Promise<string> {
  try { await p; return 'ok'; } catch (e) { return e instanceof ServiceError ? e.code : String(e); }
}

t.test('capabilities add the gateway limits and input modes', async (t) => {
  const { svc } = setup();
  const c = await svc.capabilities();
  t.equal(c.limits['max_targets'], 10);
  t.equal(c.limits['batch_max'], 32, 'model-server limits kept');
  t.same(c.input_modes, ['upload', 'base64', 'data_uri']);
});

t.test('vector-only requests never call the model server (not even for capabilities)', async (t) => {
  const { svc, calls } = setup();
  const v = (await svc.verify({ img1: Array(128).fill(0.1), img2: Array(128).fill(0.1) }, ctx)) as { verified: boolean; distance: number; threshold: number };
  t.equal(v.verified, true);
  t.equal(v.distance, 0);
  t.equal(v.threshold, 0.4);
  const c = (await svc.compare({ source: { embedding: Array(128).fill(0.1) }, targets: [Array(128).fill(0.1), Array(128).fill(-0.1)], top_k: 1 }, ctx)) as { results: Array<{ index: number }>; source: unknown };
  t.same(c.results.map((r) => r.index), [0]);
  t.equal(c.source, null);
  t.same(calls.filter((x) => x !== 'capabilities'), []);
});

t.test('options, embeddings and limits are checked before the model server', async (t) => {
  const { svc, calls } = setup();
  t.equal(await code(svc.verify({ img1: png, img2: png, anti_spoofing: 'true' }, ctx)), 'unsupported_option');
  t.equal(await code(svc.verify({ img1: png, img2: png, model_name: 'SFace' }, ctx)), 'model_not_allowed', 'capabilities, not the fallback, once fetched');
  t.equal(await code(svc.represent({ img: png, detector_backend: 'yunet' }, ctx)), 'detector_not_allowed');
  t.equal(await code(svc.represent({ img: [png, png, png] }, ctx)), 'request_too_large');
  t.equal(await code(svc.verify({ img1: Array(127).fill(0), img2: png }, ctx)), 'embedding_dimension_mismatch');
  t.equal(await code(svc.compare({ source: { embedding: Array(128).fill(0) }, targets: Array.from({ length: 11 }, () => Array(128).fill(0)) }, ctx)), 'too_many_targets');
  t.equal(await code(svc.represent({ img: 'https://example.com/a.png' }, ctx)), 'input_mode_disabled');
  t.equal(await code(svc.represent({ img: 'file:a.png' }, ctx)), 'input_mode_disabled');
  t.same(calls.filter((x) => x !== 'capabilities'), []);
});

t.test('image requests go upstream with defaults applied', async (t) => {
  const { svc, calls } = setup();
  const r = (await svc.represent({ img: png }, ctx)) as { results: unknown[]; model: string };
  t.equal(r.model, 'Facenet');
  t.equal(r.results.length, 1);
  const b = (await svc.represent({ img: [png, png] }, ctx)) as { results: unknown[][] };
  t.ok(Array.isArray(b.results[0]), 'batch: list per image');
  await svc.verify({ img1: png, img2: Array(128).fill(0.2) }, ctx);
  t.ok(calls.includes('verify:{"image":0}'));
  const c = (await svc.compare({ source: { img: png }, targets: [Array(128).fill(0.5)] }, ctx)) as { source: { face_confidence: number }; results: Array<{ distance: number }> };
  t.equal(c.source.face_confidence, 0.9);
  t.equal(c.results[0]!.distance, 0);
});
