/** ComputeService in-process (the MCP endpoint uses it without HTTP): fake upstream, real everything else. */
import t from 'tap';
import { createComputeService, type GatewayLimits } from '../src/service/compute-service.js';
import { ImageResolver, type InputSettings } from '../src/service/inputs/resolve.js';
import { createQueue } from '../src/service/queue.js';
import type { Upstream } from '../src/model-client/client.js';
import { ServiceError } from '../src/errors/index.js';
import { makePng } from './helpers/images.js';
import { comparePlain, compareJson, type CompareResponse } from '../src/service/compare-result.js';
import { CompareTargets } from '../src/service/compare-targets.js';

const plain = async (r: Promise<CompareResponse>) => comparePlain(await r) as any;

const LIMITS: GatewayLimits = {
  max_request_bytes: 1e6, max_image_bytes: 1e6, max_image_pixels: 1e6, max_request_pixels: 2e6, max_targets: 10, max_sources: 6, max_compare_results: 20, max_compare_bytes: 1e6, max_json_values: 1e6, max_batch_images: 2, max_upstream_response_bytes: 1e6,
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
  const c = await plain(svc.compare({ source: { embedding: Array(128).fill(0.1) }, targets: [Array(128).fill(0.1), Array(128).fill(-0.1)], top_k: 1 }, ctx));
  t.same(c.results.map((r: { index: number }) => r.index), [0]);
  t.equal(c.source, null);
  const b64 = Buffer.from(new Float32Array(128).fill(0.1).buffer).toString('base64');
  t.equal((await plain(svc.compare({ source: [{ embedding: Array(128).fill(0.1) }, { embedding: Array(128).fill(0.2) }], targets_b64: b64 }, ctx))).results.length, 2);
  const planned = svc.openCompareTargets();
  t.not(planned.openStream({ source: { embedding: Array(128).fill(0.1) }, model_name: 'Facenet', distance_metric: 'cosine' }, Buffer.from('\r\n--b')), null);
  planned.release();
  await new Promise((r) => setImmediate(r));
  t.same(calls, [], 'no call at all, not even a background capabilities fetch');
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
  const c = await plain(svc.compare({ source: { img: png }, targets: [Array(128).fill(0.5)] }, ctx));
  t.equal(c.source.face_confidence, 0.9);
  t.equal(c.results[0]!.distance, 0);
});

/** A seeded vector in [-1, 1)^dims. */
function vec(seed: number, dims = 128): number[] {
  let s = seed >>> 0;
  return Array.from({ length: dims }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32) * 2 - 1;
  });
}

t.test('many-to-many: one result list per source, each equal to the single-source answer', async (t) => {
  const { svc, calls } = setup();
  const targets = Array.from({ length: 10 }, (_, i) => vec(100 + i));
  const sources = Array.from({ length: 6 }, (_, i) => ({ embedding: i === 5 ? targets[3]! : vec(i) }));
  // Six sources take the GEMM path with top_k; without it two (2 × 10 results, within the limit of 20).
  for (const [top_k, used] of [[3, sources], [undefined, sources.slice(4)]] as const) {
    const many = await plain(svc.compare({ source: [...used], targets, ...(top_k ? { top_k } : {}) }, ctx)) as any;
    t.equal(many.results.length, used.length, 'one list per source');
    t.same(many.source, used.map(() => null), 'one source entry per source');
    for (const [i, source] of used.entries()) {
      const one = await plain(svc.compare({ source, targets, ...(top_k ? { top_k } : {}) }, ctx));
      t.same(many.results[i], one.results, `source ${i}, top_k ${top_k}`);
    }
    if (top_k) t.equal(many.results[used.length - 1][0].index, 3, 'a source equal to a target finds it');
  }
  // The single-source shape is unchanged: results is one flat list, source one entry.
  const single = await plain(svc.compare({ source: sources[0]!, targets, top_k: 2 }, ctx));
  t.equal(single.results.length, 2);
  t.equal(single.source, null);
  t.same(calls.filter((x) => x !== 'capabilities'), [], 'vector-only: no model-server call');
});

t.test('many-to-many limits are 413 too_many_targets with the limit in the detail', async (t) => {
  const { svc } = setup();
  const targets = Array.from({ length: 10 }, (_, i) => vec(i));
  const err = async (p: Promise<unknown>) => p.then(() => null, (e: ServiceError) => e);
  const tooMany = await err(svc.compare({ source: Array.from({ length: 7 }, (_, i) => ({ embedding: vec(i) })), targets, top_k: 1 }, ctx));
  t.equal(tooMany?.code, 'too_many_targets');
  t.match(tooMany?.detail, /7 entries; the limit is 6/);
  // 3 sources × 10 targets = 30 results > 20 without top_k; with top_k 5, 15 results are fine.
  const results = await err(svc.compare({ source: Array.from({ length: 3 }, (_, i) => ({ embedding: vec(i) })), targets }, ctx));
  t.equal(results?.code, 'too_many_targets');
  t.match(results?.detail, /30 results; the limit is 20/);
  const ok = await plain(svc.compare({ source: Array.from({ length: 3 }, (_, i) => ({ embedding: vec(i) })), targets, top_k: 5 }, ctx));
  t.equal(ok.results.length, 3);
  const bad = await err(svc.compare({ source: [{ embedding: vec(1) }, { embedding: [...vec(2).slice(0, 127), NaN] }], targets, top_k: 1 }, ctx));
  t.equal(bad?.code, 'invalid_embedding');
  t.match(bad?.detail, /source\[1\]/);
  const images = await err(svc.compare({ source: [{ img: png }, { img: png }, { img: png }], targets, top_k: 1 }, ctx));
  t.equal(images?.code, 'request_too_large', 'image sources are capped like a represent batch');
});

/** Binary targets as the multipart reader leaves them: adopted by their owner. */
function binary(bytes: Uint8Array): CompareTargets {
  const owner = new CompareTargets();
  owner.adopt(bytes);
  return owner;
}

t.test('binary targets are read in place; bad lengths and values name the row', async (t) => {
  const { svc } = setup();
  const f = new Float32Array(3 * 128);
  for (let i = 0; i < f.length; i++) f[i] = Math.sin(i);
  const bytes = new Uint8Array(f.buffer);
  const source = { embedding: Array.from(f.subarray(128, 256)) };
  const r = await plain(svc.compare({ source, top_k: 1 }, { ...ctx, targets: binary(bytes) }));
  t.same(r.results.map((x: { index: number }) => x.index), [1]);
  const j = await plain(svc.compare({ source, targets: [0, 1, 2].map((i) => Array.from(f.subarray(i * 128, (i + 1) * 128))), top_k: 1 }, ctx));
  t.same(r.results, j.results, 'same answer as JSON targets');
  const err = async (p: Promise<unknown>) => p.then(() => null, (e: ServiceError) => e);
  const short = await err(svc.compare({ source, top_k: 1 }, { ...ctx, targets: binary(bytes.subarray(0, 2 * 512 + 100)) }));
  t.equal(short?.code, 'embedding_dimension_mismatch');
  t.match(short?.detail, /1124 bytes: 2 whole rows .* expected 1024 or 1536 bytes/);
  const nan = new Float32Array(f);
  nan[2 * 128 + 5] = NaN;
  const bad = await err(svc.compare({ source, top_k: 1 }, { ...ctx, targets: binary(new Uint8Array(nan.buffer)) }));
  t.equal(bad?.code, 'invalid_embedding');
  t.match(bad?.detail, /vector 2 .*position 5/);
  const over = await err(svc.compare({ source }, { ...ctx, targets: binary(new Uint8Array(11 * 512)) }));
  t.equal(over?.code, 'too_many_targets');
  t.match(over?.detail, /11 vectors; the limit is 10/);
  const both = await err(svc.compare({ source, targets: [vec(1)] }, { ...ctx, targets: binary(bytes) }));
  t.equal(both?.code, 'invalid_request', 'exactly one kind of targets');
});

t.test('the JSON text of a compare equals JSON.stringify of its plain objects', async (t) => {
  const { svc } = setup();
  const targets = Array.from({ length: 10 }, (_, i) => vec(i));
  for (const source of [{ embedding: vec(42) }, [{ embedding: vec(42) }, { embedding: targets[2]! }]]) {
    const r = await svc.compare({ source, targets } as never, ctx);
    const text = (await compareJson(r)).toString();
    t.same(JSON.parse(text), JSON.parse(JSON.stringify(comparePlain(r))));
    t.equal(text, JSON.stringify(comparePlain(r)), 'byte for byte, field order included');
  }
});
