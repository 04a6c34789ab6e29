/**
 * The per-request budget of decoded pixels (FACECOMPUTE_MAX_REQUEST_PIXELS, issue 24 item 3): the
 * gateway sums its images' sizes from their headers and refuses a request over it before anything is
 * forwarded, and the model server holds the same budget before it decodes anything, then decodes a
 * /represent batch one image at a time. Counted (forwards, decodes), never timed.
 */
import t from 'tap';
import { loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/logging/logger.js';
import { buildGateway } from '../src/gateway/app.js';
import { startRegistry, type EngineFactory } from '../src/model-server/registry.js';
import { buildModelServer } from '../src/model-server/app.js';
import { encodeFrame, type RepresentHeader } from '../src/model-client/protocol.js';
import type { FaceDetector, ImageOps, NativeImage, Recognizer } from '../src/model-server/engines.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { makeBombPng, makePng } from './helpers/images.js';
import { SHARED_WEIGHTS_DIR } from './helpers/shared.js';
import { MODELS_CACHE } from './helpers/real-stack.js';

const logger = createLogger('test', 'silent');

// 6324 x 6324 is just under the 40-megapixel image limit: each image passes it, 16 of them are 640 MP.
const BIG = makeBombPng(6324, 6324).toString('base64');

t.test('the gateway refuses a request over the budget before forwarding it', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9' });
  t.equal(config.limits.maxRequestPixels, 80_000_000, 'default: two images at the per-image limit');
  let forwarded = 0;
  const count = async (): Promise<never> => {
    forwarded++;
    throw new Error('forwarded');
  };
  const accounts = new MemoryAccounts([{ key: 'k', accountId: 'a', kind: 'rest' }]);
  const gw = await buildGateway({ config, accounts, logger, upstream: stubUpstream({ represent: count, verify: count, embed: count }) });
  t.teardown(() => gw.close(0));
  const post = (path: string, body: unknown) => gw.app.inject({ method: 'POST', url: path, headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  const cases: Array<[string, string, unknown]> = [
    ['16 images of 40 MP', '/represent', { img: Array.from({ length: 16 }, () => BIG), detector_backend: 'skip' }],
    ['3 images of 40 MP', '/represent', { img: [BIG, BIG, BIG] }],
    ['3 image sources', '/compare', { source: [{ img: BIG }, { img: BIG }, { img: BIG }], targets: [Array(128).fill(0.1)] }],
  ];
  for (const [label, path, body] of cases) {
    const r = await post(path, body);
    t.equal(r.statusCode, 413, `${label}: 413`);
    t.equal(r.json().error, 'too_many_pixels', label);
    t.match(r.json().detail, /limit of 80000000 per request/, label);
  }
  t.equal(forwarded, 0, 'nothing was forwarded');
  t.equal(accounts.used.get('a') ?? 0, 0, 'and nothing charged');
  // Two images at the per-image limit fit the default budget (one /verify) and are forwarded.
  t.equal((await post('/verify', { img1: BIG, img2: BIG })).statusCode, 500, 'two fit: forwarded (the stub then fails)');
  t.equal(forwarded, 1);
  const caps = await gw.app.inject({ url: '/capabilities' });
  t.equal(caps.json().limits.max_request_pixels, 80_000_000, 'published in /capabilities');
});

/** Engines without ONNX Runtime: Dlib embeds zeros; every detector finds nothing. */
const fakeEngines: EngineFactory = {
  async recognizer(name) {
    const rec: Recognizer = { name, dims: 128, input: { width: 4, height: 4, layout: 'nchw', channel_order: 'rgb', preprocess: 'uint8_truncate' }, embed: async (_b, n) => Array.from({ length: n }, () => new Float32Array(128)) };
    return rec;
  },
  async detector(name) {
    const d: FaceDetector = { name, detect: async () => [] };
    return d;
  },
  syntheticImage: () => ({ width: 8, height: 8, channels: 3, data: Buffer.alloc(192) }),
};

t.test('the model server holds the budget before decoding, and decodes a batch one image at a time', async (t) => {
  const config = loadConfig({ FACECOMPUTE_WEIGHTS_DIR: SHARED_WEIGHTS_DIR, FACECOMPUTE_MODELS_CACHE: MODELS_CACHE, FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_ALLOWED_MODELS: 'Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Dlib', FACECOMPUTE_ALLOWED_DETECTORS: 'opencv,skip' });
  const state = await startRegistry(config, logger, fakeEngines);
  for (let i = 0; i < 600 && state.warmup.snapshot().status === 'warming'; i++) await new Promise((r) => setTimeout(r, 50));
  t.equal(state.warmup.snapshot().status, 'ready');
  const events: string[] = [];
  let live = 0;
  let maxLive = 0;
  const tiny = (): NativeImage => ({ width: 8, height: 8, channels: 3, data: Buffer.alloc(192) });
  // A decoded image counts as live from its decode until its faces become tensor rows.
  const image: ImageOps = {
    decode: async () => {
      live++;
      maxLive = Math.max(maxLive, live);
      events.push('decode');
      return tiny();
    },
    shrink: async () => tiny(),
    border: async (i) => ({ image: i, top: 0, left: 0 }),
    extractFaces: async () => [],
    toTensor: async (faces) => {
      live -= faces.length;
      events.push('tensor');
      return new Float32Array(faces.length * 48);
    },
    encodePng: async () => Buffer.alloc(0),
  };
  const app = await buildModelServer({ config, logger, state, image });
  t.teardown(() => app.close());
  const header = (n: number): RepresentHeader => ({ op: 'represent', model_name: 'Dlib', detector_backend: 'skip', align: false, enforce_detection: false, expand_percentage: 0, normalization: 'base', images: Array.from({ length: n }, (_, i) => i), max_faces: null, l2_normalize: false });
  const post = (n: number, images: Buffer[]) => app.inject({ method: 'POST', url: '/internal/represent', headers: { 'content-type': 'application/vnd.facecompute.frame' }, payload: encodeFrame(header(n), images) });

  const over = await post(3, [makeBombPng(6324, 6324), makeBombPng(6324, 6324), makeBombPng(6324, 6324)]);
  t.equal(over.statusCode, 413);
  t.equal(over.json().error, 'too_many_pixels');
  t.same(events, [], 'refused before any decode');

  const ok = await post(4, [makePng(8, 8, 1), makePng(8, 8, 2), makePng(8, 8, 3), makePng(8, 8, 4)]);
  t.equal(ok.statusCode, 200);
  t.equal(ok.json().results.length, 4);
  t.same(events, ['decode', 'tensor', 'decode', 'tensor', 'decode', 'tensor', 'decode', 'tensor'], 'each image decoded after the previous one became tensor rows');
  t.equal(maxLive, 1, 'one decoded image at a time');
});
