/**
 * Closed engine sets: every detector engine the serving plan can name has an adapter, and every
 * adapter is an engine (DETECTOR_ENGINES, adapters.ts's mapped type). RetinaFace ResNet-50, which
 * `auto` picks whenever its weights are installed, is served by its Rust decode: checked on a
 * random-weight conversion of DeepFace's graph against retina-face's own detections on it.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { loadManifest } from '../src/models/manifest.js';
import { detectorAdapters, engines } from '../src/model-server/adapters.js';
import { DETECTOR_ENGINES, RETINAFACE_BACKBONES } from '../src/model-server/engines.js';
import { detectorEngines } from '../src/model-server/serving-plan.js';
import { RetinaFaceDetector } from '../src/model-server/detectors/retinaface.js';
import type { NativeImage } from '../src/native/types.js';
import { buildRandomOnnx, PARITY_FIXTURES, readCrop } from './helpers/keras-models.js';
import { LANDMARK_NAMES } from './helpers/retinaface-decode.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const ORT = { intraOpThreads: 1, interOpThreads: 1, provider: 'cpu' as const };

t.test('every engine the plan can name has an adapter, and no adapter is for anything else', async (t) => {
  const adapters = detectorAdapters(ORT);
  t.same(Object.keys(adapters).sort(), [...DETECTOR_ENGINES].sort(), 'adapters = DETECTOR_ENGINES');
  const manifest = loadManifest();
  const named = new Set<string>();
  for (const backbone of ['auto', ...RETINAFACE_BACKBONES] as const) {
    for (const [name, entry] of Object.entries(manifest.detectors)) {
      const list = detectorEngines(entry, backbone);
      t.ok(list.length > 0, `${name} (${backbone}): servable by some engine`);
      for (const e of list) {
        t.ok((DETECTOR_ENGINES as readonly string[]).includes(e.engine), `${name} (${backbone}): ${e.engine} is an engine`);
        named.add(e.engine);
      }
    }
  }
  t.same([...named].sort(), [...DETECTOR_ENGINES].sort(), 'and the plan can name every engine');
  for (const variant of Object.keys(manifest.detectors['retinaface']?.variants ?? {})) {
    t.ok((RETINAFACE_BACKBONES as readonly string[]).includes(variant), `retinaface variant ${variant} is a backbone`);
  }
  t.same(detectorEngines(manifest.detectors['retinaface']!, 'auto').map((e) => e.engine), ['retinaface:resnet50', 'retinaface:mobilenet0.25'], 'auto prefers DeepFace\'s ResNet-50');
});

interface RetinaExpected {
  results: {
    file: string;
    height: number;
    width: number;
    detect_faces: { threshold: number; faces: { score: number; facial_area: number[]; landmarks: Record<string, [number, number]> }[] };
  }[];
}

function bgrOf(rgb: Uint8Array, width: number, height: number): NativeImage {
  const data = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    data[3 * i] = rgb[3 * i + 2]!;
    data[3 * i + 1] = rgb[3 * i + 1]!;
    data[3 * i + 2] = rgb[3 * i]!;
  }
  return { width, height, channels: 3, data };
}

t.test('retinaface:resnet50 loads through the adapters and decodes as retina-face does', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-r50-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { onnx } = buildRandomOnnx('retinaface_r50', dir);

  // The served path: the engine `auto` picks when the weights are installed (it threw
  // "unknown detector engine" before).
  const cfg = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' });
  const served = await engines(cfg).detector('retinaface', 'retinaface:resnet50', [onnx]);
  const synthetic = engines(cfg).syntheticImage();
  const found = await served.detect(synthetic);
  t.ok(Array.isArray(found), `detects on the synthetic image (${found.length} faces with random weights)`);
  await served.close?.();

  // At scale 1 (the long side kept), its faces are retina-face's detect_faces on the same graph.
  const expected = JSON.parse(readFileSync(resolve(PARITY_FIXTURES, 'retinaface_r50.expected.json'), 'utf8')) as RetinaExpected;
  for (const r of expected.results) {
    const img = bgrOf(readCrop(r.file), r.width, r.height);
    const d = await RetinaFaceDetector.create(onnx, ORT, { backbone: 'resnet50', scaleRule: 'long-side', longSide: Math.max(r.width, r.height), threshold: r.detect_faces.threshold });
    const got = await d.detect(img);
    await d.release();
    const want = r.detect_faces.faces;
    t.ok(want.length > 0, `${r.file}: retina-face found ${want.length} faces`);
    t.equal(got.length, want.length, `${r.file}: as many faces`);
    want.forEach((w, k) => {
      const g = got[k];
      if (!g) return;
      t.ok(Math.abs(g.confidence - w.score) <= 1e-5, `${r.file} face ${k + 1}: score ${g.confidence} vs ${w.score}`);
      t.ok(g.raw_box!.every((v, i) => Math.abs(v - w.facial_area[i]!) <= 1), `${r.file} face ${k + 1}: box ${g.raw_box!.map((v) => v.toFixed(2))} vs ${w.facial_area}`);
      const lm = LANDMARK_NAMES.flatMap((n) => w.landmarks[n]!);
      const dl = Math.max(...g.raw_landmarks!.map((v, i) => Math.abs(v - lm[i]!)));
      t.ok(dl <= 1e-2, `${r.file} face ${k + 1}: landmarks within ${dl.toExponential(2)} px`);
    });
  }
});
