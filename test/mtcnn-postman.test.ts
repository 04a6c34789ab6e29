/**
 * DeepFace's Postman collection, "Face verification - default" as it stood while it named mtcnn
 * (deepface/api/postman/deepface-api.postman_collection.json up to v0.0.95: img1.jpg against img2.jpg,
 * Facenet, detector_backend mtcnn, euclidean), through the REST gateway over a real model server: the
 * answer is DeepFace's own (test/fixtures/mtcnn/postman-verify.json, DeepFace.verify 0.0.100 with
 * mtcnn 1.0.0, tools/reference/mtcnn_reference.py --postman): the same decision, threshold, facial
 * areas and eyes, the distance within TensorFlow's float noise. The collection names the images by
 * path or URL; here they travel as data URIs (the service never fetches a test's URL).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAccountsStore, type AccountsStore } from '../src/accounts/index.js';
import { buildGateway, type Gateway } from '../src/gateway/app.js';
import { createLogger } from '../src/logging/logger.js';
import { deepfaceImage, REPO_ROOT } from './helpers/shared.js';
import { startRealModelServer, stackConfig, type RealModelServer } from './helpers/real-stack.js';

const fixture = JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/mtcnn/postman-verify.json'), 'utf8')) as {
  request: { img1: string; img2: string; model_name: string; detector_backend: string; distance_metric: string };
  deepface: { verified: boolean; distance: number; threshold: number; confidence: number; model: string; detector_backend: string; similarity_metric: string; facial_areas: Record<string, unknown> };
};

let ms: RealModelServer;
let store: AccountsStore;
let gw: Gateway;
let base: string;
let key: string;

t.before(async () => {
  ms = await startRealModelServer({ FACECOMPUTE_ALLOWED_MODELS: 'Facenet', FACECOMPUTE_ALLOWED_DETECTORS: 'opencv,mtcnn' });
  const config = stackConfig(ms.url, { FACECOMPUTE_FREE_CALLS_ANONYMOUS: '100' });
  store = await createAccountsStore(config);
  gw = await buildGateway({ config, accounts: store, logger: createLogger('test', 'silent') });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`;
  const s = await store.signupAnonymous('127.0.0.1');
  key = (await store.createKey(s.account.id, 'rest', 'postman')).key;
});

t.teardown(async () => {
  await gw?.close(1000);
  await store?.close();
  await ms?.stop();
});

t.test("the Postman collection's mtcnn verify request gets DeepFace's answer", async (t) => {
  const req = fixture.request;
  const dataUri = (name: string) => `data:image/jpeg;base64,${readFileSync(deepfaceImage(name)).toString('base64')}`;
  const body = { ...req, img1: dataUri(req.img1), img2: dataUri(req.img2) };
  const r = await fetch(`${base}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const got = (await r.json()) as Record<string, any>;
  t.equal(r.status, 200, JSON.stringify(got).slice(0, 300));
  const want = fixture.deepface;
  t.match(got, { verified: want.verified, threshold: want.threshold, model: want.model, detector_backend: want.detector_backend, similarity_metric: want.similarity_metric });
  t.ok(Math.abs(got['distance'] - want.distance) <= 1e-4, `distance ${got['distance']} = DeepFace's ${want.distance} within 1e-4`);
  t.ok(Math.abs(got['confidence'] - want.confidence) <= 0.01, `confidence ${got['confidence']} = DeepFace's ${want.confidence}`);
  for (const side of ['img1', 'img2']) {
    const { detector: _d, ...area } = got['facial_areas'][side] as Record<string, unknown>;
    t.same(area, want.facial_areas[side], `${side}: DeepFace's facial area and eyes`);
  }
});
