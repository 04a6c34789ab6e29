/**
 * The model server's start-up truthfulness: what /capabilities and /readiness say when the default
 * model is not installed, the warmup state machine (warming → ready | error with a symbolic code,
 * never raw exception text), and serving the random-weight Keras models only when test weights are
 * allowed (issue 4 §3: each warms, and /represent returns 128 or 512 dims).
 */
import t from 'tap';
import { mkdirSync, copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/logging/logger.js';
import { startRegistry, type EngineFactory } from '../src/model-server/registry.js';
import { buildModelServer, readiness } from '../src/model-server/app.js';
import { engines, imageOps } from '../src/model-server/adapters.js';
import { encodeFrame } from '../src/model-server/protocol.js';
import type { FaceDetector, Recognizer } from '../src/model-server/ports.js';
import { SHARED_WEIGHTS_DIR, deepfaceImage } from './helpers/shared.js';
import { MODELS_CACHE } from './helpers/real-stack.js';
import { buildRandomOnnx } from './helpers/keras-models.js';

function config(extra: Record<string, string> = {}) {
  return loadConfig({ FACECOMPUTE_WEIGHTS_DIR: SHARED_WEIGHTS_DIR, FACECOMPUTE_MODELS_CACHE: MODELS_CACHE, FACECOMPUTE_LOG_LEVEL: 'silent', ...extra });
}

async function settle(state: { warmup: { snapshot(): { status: string } } }) {
  for (let i = 0; i < 2400 && state.warmup.snapshot().status === 'warming'; i++) await new Promise((r) => setTimeout(r, 100));
}

/** Engines that never touch ONNX Runtime; `failModel` makes that model's synthetic inference throw. */
function fakeEngines(failModel?: string): EngineFactory {
  return {
    async recognizer(name) {
      const rec: Recognizer = {
        name,
        dims: 128,
        input: { width: 4, height: 4, layout: 'nchw', channel_order: 'rgb', preprocess: 'uint8_truncate' },
        embed: async (_b, n) => {
          if (name === failModel) throw new Error('/secret/path/libonnxruntime.so: illegal instruction');
          return Array.from({ length: n }, () => new Float32Array(128));
        },
      };
      return rec;
    },
    async detector(name) {
      const d: FaceDetector = { name, detect: async () => [] };
      return d;
    },
    syntheticImage: () => ({ width: 8, height: 8, channels: 3, data: Buffer.alloc(192) }),
  };
}

t.test('the configured default is not installed: the effective default and why, everywhere', async (t) => {
  const cfg = config({ FACECOMPUTE_ALLOWED_MODELS: 'Facenet,Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Facenet' });
  const lines: string[] = [];
  const logger = createLogger('t', 'warn');
  const warn = logger.warn.bind(logger);
  (logger as unknown as { warn: (...a: unknown[]) => void }).warn = (...a: unknown[]) => {
    lines.push(JSON.stringify(a));
    (warn as (...x: unknown[]) => void)(...a);
  };
  const state = await startRegistry(cfg, logger, fakeEngines());
  await settle(state);
  const app = await buildModelServer({ config: cfg, logger: createLogger('t', 'silent'), state, image: imageOps(cfg) });
  const caps = (await app.inject({ url: '/internal/capabilities' })).json();
  t.same(caps.allowed_models, ['Dlib'], 'only installed models are offered');
  t.equal(caps.default_model, 'Dlib');
  t.match(caps.default_model_reason, /Facenet is not installed.*facenet_weights\.h5: missing.*effective default is Dlib/);
  const ready = await app.inject({ url: '/internal/readiness' });
  t.equal(ready.statusCode, 200);
  t.match(ready.json(), { status: 'ready', effective_default_model: 'Dlib', default_model_reason: /Facenet is not installed/ });
  t.ok(lines.some((l) => /Facenet/.test(l) && /unavailable|not installed/.test(l)), 'the start-up log says so');
  await app.close();
});

t.test('a stopped inference thread turns a warmed server not ready, with a symbolic code', async (t) => {
  const cfg = config({ FACECOMPUTE_ALLOWED_MODELS: 'Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Dlib' });
  let stop: ((err: Error) => void) | undefined;
  const state = await startRegistry(cfg, createLogger('t', 'silent'), { ...fakeEngines(), onFailure: (l) => (stop = l) });
  await settle(state);
  t.match(readiness(state), { status: 'ready', ready: true, error: '' });
  t.type(stop, 'function', 'the registry listens for the inference thread');
  stop?.(new Error('inference thread exited (code 1)'));
  t.match(readiness(state), { status: 'error', ready: false, warming: false, error: 'inference_thread_stopped' });
  const app = await buildModelServer({ config: cfg, logger: createLogger('t', 'silent'), state, image: imageOps(cfg) });
  t.equal((await app.inject({ url: '/internal/readiness' })).statusCode, 503);
  const r = await app.inject({ method: 'POST', url: '/internal/represent', headers: { 'content-type': 'application/vnd.facecompute.frame' }, payload: Buffer.alloc(8) });
  t.equal(r.statusCode, 500, 'no compute on a server whose inference thread stopped');
  await app.close();
});

t.test('warmup failure: 503 with runtime_warmup_failed, raw text only in logs', async (t) => {
  const cfg = config({ FACECOMPUTE_ALLOWED_MODELS: 'Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Dlib' });
  const state = await startRegistry(cfg, createLogger('t', 'silent'), fakeEngines('Dlib'));
  t.equal(state.warmup.snapshot().status, 'warming', 'warming first');
  await settle(state);
  const app = await buildModelServer({ config: cfg, logger: createLogger('t', 'silent'), state, image: imageOps(cfg) });
  const r = await app.inject({ url: '/internal/readiness' });
  t.equal(r.statusCode, 503);
  t.match(r.json(), { status: 'error', ready: false, warming: false, error: 'runtime_warmup_failed' });
  t.notMatch(r.body, /secret|illegal|\.so/);
  const compute = await app.inject({ method: 'POST', url: '/internal/represent', headers: { 'content-type': 'application/vnd.facecompute.frame' }, payload: Buffer.alloc(8) });
  t.equal(compute.statusCode, 500, 'no compute after a failed warmup');
  await app.close();
});

t.test('warming: compute answers 503 service_warming with Retry-After', async (t) => {
  const cfg = config({ FACECOMPUTE_ALLOWED_MODELS: 'Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Dlib' });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const slow = fakeEngines();
  const state = await startRegistry(cfg, createLogger('t', 'silent'), { ...slow, recognizer: async (...a) => { await gate; return slow.recognizer(...a); } });
  const app = await buildModelServer({ config: cfg, logger: createLogger('t', 'silent'), state, image: imageOps(cfg) });
  const ready = await app.inject({ url: '/internal/readiness' });
  t.equal(ready.statusCode, 503);
  t.match(ready.json(), { status: 'warming', warming: true });
  const r = await app.inject({ method: 'POST', url: '/internal/represent', headers: { 'content-type': 'application/vnd.facecompute.frame' }, payload: Buffer.alloc(8) });
  t.equal(r.statusCode, 503);
  t.equal(r.json().error, 'service_warming');
  t.ok(r.headers['retry-after']);
  release();
  await settle(state);
  t.equal((await app.inject({ url: '/internal/readiness' })).statusCode, 200);
  await app.close();
});

t.test('a prewarm item that is not installed fails the warmup', async (t) => {
  const cfg = config({ FACECOMPUTE_ALLOWED_MODELS: 'Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Dlib', FACECOMPUTE_PREWARM: 'Dlib,Facenet' });
  const state = await startRegistry(cfg, createLogger('t', 'silent'), fakeEngines());
  await settle(state);
  t.match(state.warmup.snapshot(), { status: 'error', error: 'runtime_warmup_failed' });
});

t.test('random-weight Keras models are served only with test weights allowed', async (t) => {
  // The real graphs (DeepFace's architectures) with seeded random weights, placed where test weights go.
  const cache = mkdtempSync(join(tmpdir(), 'fc-testweights-'));
  mkdirSync(join(cache, 'test-onnx'), { recursive: true });
  for (const [model, arch] of [['Facenet', 'facenet128'], ['Facenet512', 'facenet512'], ['OpenFace', 'openface']] as const) {
    copyFileSync(buildRandomOnnx(arch).onnx, join(cache, 'test-onnx', `${model}.onnx`));
  }
  const common = { FACECOMPUTE_MODELS_CACHE: cache, FACECOMPUTE_ALLOWED_MODELS: 'Facenet,Facenet512,OpenFace', FACECOMPUTE_ALLOWED_DETECTORS: 'skip', FACECOMPUTE_DEFAULT_DETECTOR: 'skip' };

  const off = config(common);
  const refused = await startRegistry(off, createLogger('t', 'silent'), engines(off));
  await settle(refused);
  t.same(refused.servable.models, [], 'without FACECOMPUTE_TEST_WEIGHTS nothing is served');
  t.equal(refused.warmup.snapshot().error, 'no_model_installed');

  const on = config({ ...common, FACECOMPUTE_TEST_WEIGHTS: 'true', FACECOMPUTE_DEFAULT_MODEL: 'Facenet' });
  const state = await startRegistry(on, createLogger('t', 'silent'), engines(on));
  await settle(state);
  t.equal(state.warmup.snapshot().status, 'ready', JSON.stringify(state.warmup.snapshot()));
  t.same(state.warmup.snapshot().warmedModels.sort(), ['Facenet', 'Facenet512', 'OpenFace']);
  const app = await buildModelServer({ config: on, logger: createLogger('t', 'silent'), state, image: imageOps(on) });
  const caps = (await app.inject({ url: '/internal/capabilities' })).json();
  t.same(caps.test_weight_models.sort(), ['Facenet', 'Facenet512', 'OpenFace'], 'test weights are marked');
  t.same(caps.embedding_dims, { Facenet: 128, Facenet512: 512, OpenFace: 128 });
  const bytes = readFileSync(deepfaceImage('img1.jpg'));
  for (const [model, dims] of [['Facenet', 128], ['Facenet512', 512], ['OpenFace', 128]] as const) {
    const frame = encodeFrame({ op: 'represent', model_name: model, detector_backend: 'skip', align: true, enforce_detection: true, expand_percentage: 0, normalization: 'base', images: [0], max_faces: null, l2_normalize: false }, [bytes]);
    const r = await app.inject({ method: 'POST', url: '/internal/represent', headers: { 'content-type': 'application/vnd.facecompute.frame' }, payload: frame });
    t.equal(r.statusCode, 200, model);
    const emb = r.json().results[0][0].embedding as number[];
    t.equal(emb.length, dims, `${model} returns ${dims} dims`);
    if (model === 'OpenFace') t.ok(Math.abs(Math.hypot(...emb) - 1) < 1e-4, 'OpenFace is L2-normalised inside its graph');
  }
  for (const r of state.recognizers.values()) await r.close?.();
  await app.close();
});
