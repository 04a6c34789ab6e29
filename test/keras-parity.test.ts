/**
 * Structural parity of the Keras -> ONNX converter (issue 4 §1). DeepFace's own Keras models were run
 * offline with seeded random weights (tools/reference/keras_random_weights.py); here the same weights are
 * regenerated without TensorFlow (random_h5.py), converted (keras_to_onnx.py) and run with
 * onnxruntime-node on the same committed crops. Random weights exercise every layer, and batch-norm
 * statistics that are not 0/1 check the folding.
 */
import t from 'tap';
import { existsSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import {
  buildRandomOnnx,
  MANIFEST_DIR,
  PARITY_FIXTURES,
  python,
  RANDOM_H5,
  CONVERTER,
  readCrop,
  SCRATCH,
  type KerasArch,
} from './helpers/keras-models.js';
import { deepfaceFloatPreprocess } from '../src/model-server/models/preprocess.js';
import { decodeRetinaFace, LANDMARK_NAMES, type RawStride } from './helpers/retinaface-decode.js';

const REL_TOL = 1e-4;

interface RecognitionExpected {
  arch: string;
  results: { file: string; embedding: number[] }[];
}
interface RetinaExpected {
  arch: string;
  results: {
    file: string;
    height: number;
    width: number;
    outputs: { keras_name: string; shape: number[]; data: number[] }[];
    detect_faces: {
      threshold: number;
      faces: { score: number; facial_area: number[]; landmarks: Record<string, [number, number]> }[];
    };
  }[];
}

function loadExpected<T>(arch: string): T {
  return JSON.parse(readFileSync(resolve(PARITY_FIXTURES, `${arch}.expected.json`), 'utf8')) as T;
}

function norm(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  return Math.sqrt(s);
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const SIZE: Record<string, number> = { facenet128: 160, facenet512: 160, openface: 96 };
const DIM: Record<string, number> = { facenet128: 128, facenet512: 512, openface: 128 };

for (const arch of ['facenet128', 'facenet512', 'openface'] as KerasArch[]) {
  t.test(`${arch}: converted random-weight model matches DeepFace's Keras model`, async (t) => {
    const expected = loadExpected<RecognitionExpected>(arch);
    t.equal(expected.results.length, 3, 'the three crops recorded (img1, img2, img3)');
    const { onnx } = buildRandomOnnx(arch);
    const session = await ort.InferenceSession.create(onnx, { intraOpNumThreads: 1 });
    t.same(session.inputNames, ['input']);
    t.same(session.outputNames, ['embedding']);
    const S = SIZE[arch]!;
    const items: Float32Array[] = [];
    let worst = { ratio: 0, file: '' };
    for (const r of expected.results) {
      const x = deepfaceFloatPreprocess({ width: S, height: S, data: readCrop(r.file) });
      items.push(x);
      const out = await session.run({ input: new ort.Tensor('float32', x, [1, S, S, 3]) });
      const y = out['embedding']!.data as Float32Array;
      t.equal(y.length, DIM[arch], 'embedding size');
      const ratio = maxAbsDiff(y, r.embedding) / norm(r.embedding);
      if (ratio > worst.ratio) worst = { ratio, file: r.file };
      t.ok(ratio <= REL_TOL, `${r.file}: max|diff|/‖keras‖ = ${ratio.toExponential(3)} <= ${REL_TOL}`);
    }
    t.comment(`${arch}: worst max|diff|/norm ${worst.ratio.toExponential(3)} on ${worst.file}`);
    t.equal(items.length, 3, 'every recorded crop compared');

    // Dynamic batch: all crops in one run give the same rows as batch 1.
    const batch = new Float32Array(items.length * S * S * 3);
    items.forEach((x, i) => batch.set(x, i * x.length));
    const out = await session.run({ input: new ort.Tensor('float32', batch, [items.length, S, S, 3]) });
    const y = out['embedding']!.data as Float32Array;
    t.same(out['embedding']!.dims, [items.length, DIM[arch]]);
    expected.results.forEach((r, i) => {
      const row = y.subarray(i * DIM[arch]!, (i + 1) * DIM[arch]!);
      t.ok(maxAbsDiff(row, r.embedding) / norm(r.embedding) <= REL_TOL, `batch row ${i} matches`);
    });

    // Negative control: the same crop fed as RGB (the bug DeepFace does not have) is far off, so the
    // tolerance above really pins the channel order.
    const first = expected.results[0]!;
    const bgr = readCrop(first.file);
    const rgb = new Uint8Array(bgr.length);
    for (let p = 0; p < bgr.length; p += 3) { rgb[p] = bgr[p + 2]!; rgb[p + 1] = bgr[p + 1]!; rgb[p + 2] = bgr[p]!; }
    const swapped = await session.run({
      input: new ort.Tensor('float32', deepfaceFloatPreprocess({ width: S, height: S, data: rgb }), [1, S, S, 3]),
    });
    const bad = maxAbsDiff(swapped['embedding']!.data as Float32Array, first.embedding) / norm(first.embedding);
    t.ok(bad > 100 * REL_TOL, `RGB instead of BGR is detected (${bad.toExponential(3)})`);
    if (arch === 'openface') t.ok(Math.abs(norm(y.subarray(0, 128)) - 1) < 1e-5, 'OpenFace output is L2-normalised in-graph');
  });
}

t.test('retinaface_r50: raw per-stride outputs match the retina-face Keras model', async (t) => {
  const expected = loadExpected<RetinaExpected>('retinaface_r50');
  const { onnx } = buildRandomOnnx('retinaface_r50');
  const session = await ort.InferenceSession.create(onnx, { intraOpNumThreads: 1 });
  const names = [32, 16, 8].flatMap((s) => [`cls_prob_s${s}`, `bbox_pred_s${s}`, `landmark_pred_s${s}`]);
  t.same(session.outputNames, names, 'output names say stride and kind, in the Keras order');
  t.equal(expected.results.length, 2, 'a multiple-of-32 input and one that is not');
  let compared = 0;
  let worst = { ratio: 0, where: '' };
  for (const r of expected.results) {
    const rgb = readCrop(r.file);
    const x = Float32Array.from(rgb); // RGB 0..255, no normalisation (retina-face's preprocess)
    const out = await session.run({ input: new ort.Tensor('float32', x, [1, r.height, r.width, 3]) });
    r.outputs.forEach((e, i) => {
      const got = out[names[i]!]!;
      t.same(got.dims, e.shape, `${r.file} ${names[i]} (${e.keras_name}) shape`);
      const ratio = maxAbsDiff(got.data as Float32Array, e.data) / norm(e.data);
      if (ratio > worst.ratio) worst = { ratio, where: `${r.file} ${names[i]}` };
      t.ok(ratio <= REL_TOL, `${r.file} ${names[i]}: max|diff|/‖keras‖ = ${ratio.toExponential(3)}`);
      compared++;
    });

    // Decoded with retina-face's semantics, the converted outputs give retina-face's own detections.
    const strides: RawStride[] = [32, 16, 8].map((stride) => {
      const cls = out[`cls_prob_s${stride}`]!;
      return {
        stride,
        height: cls.dims[1]!,
        width: cls.dims[2]!,
        cls: cls.data as Float32Array,
        bbox: out[`bbox_pred_s${stride}`]!.data as Float32Array,
        landmark: out[`landmark_pred_s${stride}`]!.data as Float32Array,
      };
    });
    const want = r.detect_faces.faces;
    const got = decodeRetinaFace(strides, r.height, r.width, r.detect_faces.threshold);
    t.ok(want.length > 0, `${r.file}: retina-face found ${want.length} faces at ${r.detect_faces.threshold}`);
    t.equal(got.length, want.length, `${r.file}: same number of detections after NMS`);
    want.forEach((w, k) => {
      const g = got[k];
      if (!g) return;
      t.ok(Math.abs(g.score - w.score) <= 1e-5, `${r.file} face ${k + 1}: score ${g.score} vs ${w.score}`);
      // Integer boxes come from truncation, so a 1e-6 difference may straddle an integer.
      t.ok(g.facial_area.every((v, i) => Math.abs(v - w.facial_area[i]!) <= 1), `${r.file} face ${k + 1}: box ${g.facial_area} vs ${w.facial_area}`);
      const lm = LANDMARK_NAMES.map((n) => w.landmarks[n]!);
      const dl = Math.max(...g.landmarks.flatMap((p, i) => [Math.abs(p[0] - lm[i]![0]), Math.abs(p[1] - lm[i]![1])]));
      t.ok(dl <= 1e-2, `${r.file} face ${k + 1}: landmarks within ${dl.toExponential(2)} px`);
    });
  }
  t.comment(`retinaface_r50: worst max|diff|/norm ${worst.ratio.toExponential(3)} on ${worst.where}`);
  t.equal(compared, 2 * 9, 'all nine outputs of both inputs compared');
});

t.test('converter refuses weights that do not fit the architecture', async (t) => {
  const dir = resolve(SCRATCH, 'bad');
  mkdirSync(dir, { recursive: true });
  const manifest = JSON.parse(readFileSync(resolve(MANIFEST_DIR, 'openface.json'), 'utf8')) as {
    layers: { name: string; weights: { name: string; shape: number[] }[] }[];
  };

  const missing = structuredClone(manifest);
  missing.layers = missing.layers.filter((l) => l.name !== 'inception_4a_pool_conv');
  const shape = structuredClone(manifest);
  const bn = shape.layers.find((l) => l.name === 'bn2')!;
  bn.weights[0]!.shape = [65];
  const extra = structuredClone(manifest);
  extra.layers.push({ name: 'stray_dense', weights: [{ name: 'stray_dense/kernel:0', shape: [4, 4] }] } as never);

  for (const [label, m, msg] of [
    ['missing layer', missing, /missing layer 'inception_4a_pool_conv'/],
    ['shape mismatch', shape, /layer 'bn2'.*shape mismatch/],
    ['unused layer', extra, /stray_dense/],
  ] as const) {
    const mf = resolve(dir, `${label.replace(' ', '_')}.json`);
    const h5 = resolve(dir, `${label.replace(' ', '_')}.h5`);
    const out = resolve(dir, `${label.replace(' ', '_')}.onnx`);
    rmSync(out, { force: true });
    writeFileSync(mf, JSON.stringify(m));
    t.equal(python([RANDOM_H5, mf, h5]).status, 0, `${label}: h5 written`);
    const r = python([CONVERTER, '--arch', 'openface', h5, out]);
    t.equal(r.status, 1, `${label}: non-zero exit`);
    t.match(r.stderr, msg, `${label}: says what is wrong`);
    t.notOk(existsSync(out), `${label}: no partial output`);
  }
  const r = python([CONVERTER, '--arch', 'openface', resolve(dir, 'nope.h5'), resolve(dir, 'nope.onnx')]);
  t.equal(r.status, 2, 'missing input file: usage error');
});

t.test('converter reads full-model saves (weights under model_weights)', async (t) => {
  const dir = resolve(SCRATCH, 'fullmodel');
  mkdirSync(dir, { recursive: true });
  const src = resolve(dir, 'openface.h5');
  const wrapped = resolve(dir, 'openface_full.h5');
  const out = resolve(dir, 'openface_full.onnx');
  t.equal(python([RANDOM_H5, resolve(MANIFEST_DIR, 'openface.json'), src]).status, 0);
  const copy = [
    'import h5py, sys',
    'src, dst = sys.argv[1], sys.argv[2]',
    'with h5py.File(src, "r") as a, h5py.File(dst, "w") as b:',
    '    g = b.create_group("model_weights")',
    '    for k, v in a.attrs.items(): g.attrs[k] = v',
    '    for k in a: a.copy(a[k], g, name=k)',
    '    b.attrs["model_config"] = "{}"',
  ].join('\n');
  t.equal(python(['-c', copy, src, wrapped]).status, 0);
  const r = python([CONVERTER, '--arch', 'openface', wrapped, out]);
  t.equal(r.status, 0, r.stderr);
  const e = loadExpected<RecognitionExpected>('openface').results[0]!;
  const session = await ort.InferenceSession.create(out, { intraOpNumThreads: 1 });
  const y = await session.run({ input: new ort.Tensor('float32', deepfaceFloatPreprocess({ width: 96, height: 96, data: readCrop(e.file) }), [1, 96, 96, 3]) });
  t.ok(maxAbsDiff(y['embedding']!.data as Float32Array, e.embedding) / norm(e.embedding) <= REL_TOL, 'same embedding');
});

t.test('converter pairs differently named layers by position, as Keras load_weights does', async (t) => {
  const dir = resolve(SCRATCH, 'renamed');
  mkdirSync(dir, { recursive: true });
  const manifest = JSON.parse(readFileSync(resolve(MANIFEST_DIR, 'openface.json'), 'utf8')) as {
    layers: { name: string; weights: { name: string; shape: number[] }[] }[];
  };
  const renamed = structuredClone(manifest);
  renamed.layers.forEach((l, i) => {
    const old = l.name;
    l.name = `layer_${i}`;
    l.weights.forEach((w) => (w.name = w.name.replace(old, l.name)));
  });
  const mf = resolve(dir, 'openface_renamed.json');
  const h5 = resolve(dir, 'openface_renamed.h5');
  const out = resolve(dir, 'openface_renamed.onnx');
  writeFileSync(mf, JSON.stringify(renamed));
  t.equal(python([RANDOM_H5, mf, h5]).status, 0);
  const r = python([CONVERTER, '--arch', 'openface', h5, out]);
  t.equal(r.status, 0, r.stderr);
  t.match(r.stderr, /paired weighted layers by position/);
  // Same seed, same order: the weights are the ones the parity fixture was made with.
  const expected = loadExpected<RecognitionExpected>('openface');
  const session = await ort.InferenceSession.create(out, { intraOpNumThreads: 1 });
  const e = expected.results[0]!;
  const y = await session.run({ input: new ort.Tensor('float32', deepfaceFloatPreprocess({ width: 96, height: 96, data: readCrop(e.file) }), [1, 96, 96, 3]) });
  t.ok(maxAbsDiff(y['embedding']!.data as Float32Array, e.embedding) / norm(e.embedding) <= REL_TOL, 'same embedding as DeepFace');
});
