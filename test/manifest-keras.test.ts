/**
 * The Keras-converted models and SFace in models/manifest.json must load with the service's manifest
 * loader and agree with ../shared/weights/SOURCES.md (URLs, sizes, sha256) and with the converter's
 * architectures.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from './helpers/shared.js';
import { loadManifest, type WeightFile } from '../src/models/manifest.js';

const KERAS = resolve(REPO_ROOT, 'models', 'manifest.json');
const manifest = loadManifest(KERAS);

/** Rows of SOURCES.md's tables that carry a URL and a sha256: | file | model | url | size | sha256 | */
function sources(): Map<string, WeightFile> {
  const md = readFileSync(resolve(SHARED_WEIGHTS_DIR, 'SOURCES.md'), 'utf8');
  const out = new Map<string, WeightFile>();
  for (const line of md.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 7) continue;
    const [, file, , url, size, sha] = cells;
    if (!file || !/^[0-9a-f]{64}$/.test(sha ?? '') || !url?.startsWith('http')) continue;
    out.set(file, { file, url, size: Number(size!.replace(/,/g, '')), sha256: sha! });
  }
  return out;
}

const rf = manifest.detectors['retinaface']!.variants!['resnet50']!;
/** The entries this test owns; Dlib and the other detectors have their own tests. */
const OURS = ['Facenet', 'Facenet512', 'OpenFace', 'SFace'];

t.test('weight files match SOURCES.md exactly', async (t) => {
  const src = sources();
  t.ok(src.size >= 5, 'SOURCES.md parsed');
  const all = [...OURS.map((n) => [n, manifest.recognition[n]!.weights] as const), ['retinaface:resnet50', rf.weights] as const];
  for (const [name, weights] of all) {
    t.equal(weights.length, 1, `${name}: one weight file`);
    // The canonical fields equal SOURCES.md; carriers and fingerprints are ours (test/models-carrier.test.ts).
    for (const { fingerprint: _fp, carriers: _c, ...w } of weights) t.same(w, src.get(w.file), `${name}: ${w.file}`);
  }
});

t.test('per-model facts', async (t) => {
  for (const n of OURS) t.ok(manifest.recognition[n], `${n} is in the manifest`);
  // version: bumped when the converter's output for that arch changes (OpenFace 2: LRN rewritten).
  const facts: [string, number, number, string, number][] = [
    ['Facenet', 128, 160, 'facenet128', 1],
    ['Facenet512', 512, 160, 'facenet512', 1],
    ['OpenFace', 128, 96, 'openface', 2],
  ];
  for (const [name, dims, size, arch, version] of facts) {
    const m = manifest.recognition[name]!;
    t.equal(m.dims, dims, `${name} dims`);
    t.same(m.input, { width: size, height: size, layout: 'nhwc', channel_order: 'bgr', preprocess: 'deepface_float' }, `${name} input`);
    t.same([m.onnx.input, m.onnx.output], ['input', 'embedding'], `${name} ONNX names (keras_to_onnx.py)`);
    // An entry with a content fingerprint has its converter check it.
    const check = m.weights[0]?.fingerprint ? ['--expect-fingerprint', '{fingerprint0}'] : [];
    t.same(m.converter, { script: 'models/converters/keras_to_onnx.py', args: ['--arch', arch, ...check, '{weights0}', '{out}'], version });
  }
  const sface = manifest.recognition['SFace']!;
  t.equal(sface.converter, null, 'SFace is ONNX already');
  t.same(sface.input, { width: 112, height: 112, layout: 'nchw', channel_order: 'rgb', preprocess: 'uint8_truncate' });
  t.same(rf.converter, { script: 'models/converters/keras_to_onnx.py', args: ['--arch', 'retinaface_r50', '{weights0}', '{out}'], version: 1 });
});
