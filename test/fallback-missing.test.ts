/**
 * A machine that cannot reach GitHub gets no retinaface (only its canonical URLs carry it), and retinaface
 * is the contract's pre-warmed detector fallback. The serving plan says the fallback is absent and the
 * command that fetches it; the model server says so in its start-up log, /internal/capabilities
 * (detector_fallback_unavailable, fetch_command, unavailable with the command per detector) and
 * /internal/readiness (which the gateway passes on), and stays ready. FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR
 * =true makes it fatal: exit status 4 before any port is bound, whatever FACECOMPUTE_ALLOW_DEGRADED_START.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from './helpers/shared.js';
import { MODELS_CACHE } from './helpers/real-stack.js';
import { freePort } from './helpers/ports.js';
import { userEnv } from './helpers/serve-proc.js';
import { loadConfig } from '../src/config/index.js';
import { assertDefaultsServable, DefaultsUnservableError, planServing } from '../src/model-server/serving-plan.js';

const CLI = ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts')];

/** A mirror with Dlib and OpenCV's cascades and nothing else (no retinaface, no yunet), and an empty cache with Dlib's ONNX. */
function withoutFallback(): { mirror: string; cache: string } {
  const mirror = mkdtempSync(join(tmpdir(), 'fc-nofallback-mirror-'));
  for (const f of ['dlib_face_recognition_resnet_model_v1.dat', 'haarcascade_frontalface_default.xml', 'haarcascade_eye.xml']) symlinkSync(join(SHARED_WEIGHTS_DIR, f), join(mirror, f));
  const cache = mkdtempSync(join(tmpdir(), 'fc-nofallback-cache-'));
  mkdirSync(join(cache, 'onnx'));
  for (const f of readdirSync(join(MODELS_CACHE, 'onnx')).filter((f) => f.startsWith('Dlib-'))) symlinkSync(join(MODELS_CACHE, 'onnx', f), join(cache, 'onnx', f));
  return { mirror, cache };
}

const settings = (w: { mirror: string; cache: string }, extra: Record<string, string> = {}) => ({
  FACECOMPUTE_WEIGHTS_DIR: w.mirror,
  FACECOMPUTE_MODELS_CACHE: w.cache,
  FACECOMPUTE_ALLOWED_MODELS: 'Dlib',
  FACECOMPUTE_DEFAULT_MODEL: 'Dlib',
  FACECOMPUTE_ALLOWED_DETECTORS: 'opencv,retinaface,yunet,skip',
  FACECOMPUTE_LOG_LEVEL: 'info',
  FACECOMPUTE_HOST: '127.0.0.1',
  ...extra,
});

t.test('the serving plan: the fallback is absent, said plainly with the command; fatal only when required', async (t) => {
  const w = withoutFallback();
  const plan = await planServing(loadConfig(settings(w, { FACECOMPUTE_LOG_LEVEL: 'silent' })));
  t.same(plan.detectors.map((d) => d.name).sort(), ['opencv', 'skip'], 'opencv and skip are served');
  t.same(plan.unservable, [], 'the defaults are served');
  t.match(plan.fallbackUnavailable, /^the contract's pre-warmed fallback detector retinaface is absent, so an image where opencv finds no face gets no fallback \(.*missing.*\); `facecompute models fetch retinaface` fetches it/);
  t.equal(plan.fetchCommand, 'facecompute models fetch retinaface yunet', 'one command fetches everything missing');
  for (const d of ['retinaface', 'yunet']) t.match(plan.unavailable[d], `\`facecompute models fetch ${d}\` installs it`, `${d}: why, and the command`);
  t.doesNotThrow(() => assertDefaultsServable(loadConfig(settings(w, { FACECOMPUTE_LOG_LEVEL: 'silent' })), plan), 'not required: it starts');
  const required = loadConfig(settings(w, { FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR: 'true', FACECOMPUTE_ALLOW_DEGRADED_START: 'true' }));
  t.equal(required.models.requireFallbackDetector, true);
  const err = (() => {
    try {
      assertDefaultsServable(required, plan);
      return null;
    } catch (e) {
      return e as Error;
    }
  })();
  t.ok(err instanceof DefaultsUnservableError, 'required: refused, even with degraded starts allowed');
  t.match(err?.message, /detector retinaface \(FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR\): missing /);
  t.match(err?.message, /fix: facecompute models fetch retinaface/);
  t.match(err?.message, /or start without the detector fallback: FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR=false/);
  t.notMatch(err?.message, /FACECOMPUTE_ALLOW_DEGRADED_START=true/, 'a degraded start is not offered: it would not help');
  const notAllowed = await planServing(loadConfig(settings(w, { FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_ALLOWED_DETECTORS: 'opencv,skip' })));
  t.match(notAllowed.fallbackUnavailable, /retinaface is absent.*\(not in FACECOMPUTE_ALLOWED_DETECTORS\); allow it in FACECOMPUTE_ALLOWED_DETECTORS$/, 'not allowed: said so');
  t.equal(notAllowed.fetchCommand, '', 'nothing allowed is missing');
});

function run(args: string[], env: Record<string, string>, until?: RegExp): Promise<{ code: number | null; out: string; kill: () => void }> {
  return new Promise((r) => {
    const p = spawn(process.execPath, [...CLI, ...args], { env, cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const kill = () => p.kill('SIGTERM');
    const on = (d: Buffer) => {
      out += d.toString();
      if (until?.test(out)) r({ code: null, out, kill });
    };
    p.stdout.on('data', on);
    p.stderr.on('data', on);
    const timer = setTimeout(() => p.kill('SIGKILL'), 120_000);
    p.once('exit', (code) => {
      clearTimeout(timer);
      r({ code, out, kill });
    });
  });
}

t.test('the model server without retinaface: says so in its log, capabilities and readiness, and is ready', { timeout: 180_000 }, async (t) => {
  const w = withoutFallback();
  const port = await freePort();
  const r = await run(['model-server'], userEnv(settings(w, { FACECOMPUTE_MODEL_SERVER_PORT: String(port) })), /model server listening/);
  t.teardown(r.kill);
  if (!t.equal(r.code, null, `it runs: ${r.out.slice(-2000)}`)) return;
  const base = `http://127.0.0.1:${port}`;
  let ready: Record<string, unknown> = {};
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await new Promise((x) => setTimeout(x, 300))) {
    ready = (await fetch(`${base}/internal/readiness`).then((x) => x.json(), () => ({}))) as Record<string, unknown>;
    if (ready['ready']) break;
  }
  t.match(ready, { ready: true, unavailable: ['retinaface', 'yunet'], fetch_command: 'facecompute models fetch retinaface yunet', detector_fallback_unavailable: /retinaface is absent/ }, 'ready, and /readiness names what is missing and how to fetch it');
  t.notOk(ready['degraded'], 'not degraded: the defaults are served');
  const caps = (await (await fetch(`${base}/internal/capabilities`)).json()) as Record<string, any>;
  t.equal(caps['detector_fallback_unavailable'], ready['detector_fallback_unavailable'], '/capabilities says the same');
  t.equal(caps['fetch_command'], 'facecompute models fetch retinaface yunet');
  t.match(caps['unavailable'], { retinaface: /`facecompute models fetch retinaface`/, yunet: /`facecompute models fetch yunet`/ });
  t.match(r.out, /detector retinaface unavailable: .*`facecompute models fetch retinaface`/, 'the start-up log: each missing detector and its command');
  t.match(r.out, /not installed here: retinaface, yunet; to fetch them: facecompute models fetch retinaface yunet/);
  t.match(r.out, /pre-warmed fallback detector retinaface is absent.*FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR=true refuses to start without it/);
});

t.test('FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR=true: the model server refuses to start (exit 4)', async (t) => {
  const w = withoutFallback();
  const r = await run(['model-server'], userEnv(settings(w, { FACECOMPUTE_MODEL_SERVER_PORT: String(await freePort()), FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR: 'true' })));
  t.equal(r.code, 4, `exit status 4: ${r.out.slice(-1500)}`);
  t.match(r.out, /detector retinaface \(FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR\): missing /);
  t.match(r.out, /fix: facecompute models fetch retinaface/);
});
