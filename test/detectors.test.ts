import t from 'tap';
import * as ort from 'onnxruntime-node';
import { manifest, bgr, rawRetina, convertRetinaface, convertYunet, repeatPixels, bestIous } from './helpers/detector-fixtures.js';
import { RetinaFaceDetector } from '../src/model-server/detectors/retinaface.js';
import { YunetDetector } from '../src/model-server/detectors/yunet.js';
import { mtcnnPyramid } from './helpers/mtcnn-pyramid.js';
import { mtcnnFaces, retinafaceDecodeMobilenet, retinafaceDecodeResnet, retinafacePrepare, yunetDecode, yunetPrepare } from '../src/native/faces.js';
import { MTCNN_FLAVORS } from '../src/native/closed-sets.js';
import { ServiceError } from '../src/errors/index.js';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR, TEST_OUTPUT_DIR } from './helpers/shared.js';

const ORT = { intraOpThreads: 1, interOpThreads: 1, provider: 'cpu' as const };
const fx = manifest();

t.test('the fixture holds the three images every test below compares', async (t) => {
  t.same(fx.images.map((i) => i.name), ['img1', 'couple', 'img3']);
});

t.test('converted RetinaFace MobileNet-0.25 matches the torch reference outputs', async (t) => {
  const model = convertRetinaface();
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  t.same(session.outputNames, ['loc', 'conf', 'landms']);
  for (const img of fx.images) {
    const px = bgr(img);
    const plane = img.width * img.height;
    const x = new Float32Array(3 * plane);
    const mean = [104, 117, 123];
    for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) x[c * plane + i] = px.data[i * 3 + c]! - mean[c]!;
    const out = await session.run({ input: new ort.Tensor('float32', x, [1, 3, img.height, img.width]) });
    const ref = rawRetina(img);
    for (const k of ['loc', 'conf', 'landms'] as const) {
      const got = out[k]!.data as Float32Array;
      t.equal(got.length, ref[k].length, `${img.name} ${k} length`);
      let max = 0;
      for (let i = 0; i < got.length; i++) max = Math.max(max, Math.abs(got[i]! - ref[k][i]!));
      t.ok(max < 1e-3, `${img.name} ${k} max abs diff ${max.toExponential(2)} < 1e-3`);
    }
  }
  await session.release();
});

for (const [rule, key] of [
  ['long-side', 'retinaDetect'],
  ['deepface', 'retinaDetectSerengil'],
] as const) {
  t.test(`RetinaFace detector (${rule} scale) matches the torch + cv2 reference pipeline`, async (t) => {
    const det = await RetinaFaceDetector.create(convertRetinaface(), ORT, { scaleRule: rule });
    for (const img of fx.images) {
      const got = await det.detect(bgr(img));
      const exp = img[key];
      t.equal(got.length, exp.length, `${img.name}: face count`);
      const ious = bestIous(exp.map((e) => e.box), got.map((g) => g.raw_box!));
      t.ok(ious.every((v) => v >= 0.95), `${img.name}: IoUs ${ious.map((v) => v.toFixed(4)).join(',')}`);
      for (const g of got) {
        t.ok(g.confidence >= 0.9, 'threshold 0.9');
        t.equal(g.w, Math.trunc(g.raw_box![2]!) - Math.trunc(g.raw_box![0]!), 'w = int(x2) - int(x1)');
        const e = exp.find((x) => Math.abs(x.box[0]! - g.raw_box![0]!) < 3 && Math.abs(x.box[1]! - g.raw_box![1]!) < 3);
        t.ok(e, 'matched');
        if (e) {
          const d = Math.max(...e.landmarks.flatMap((p, i) => [Math.abs(p[0]! - g.raw_landmarks![2 * i]!), Math.abs(p[1]! - g.raw_landmarks![2 * i + 1]!)]));
          t.ok(d < 1.5, `landmarks within 1.5 px (${d.toFixed(3)})`);
          t.ok(Math.abs(e.score - g.confidence) < 0.01, 'score');
        }
      }
      if (rule === 'long-side') {
        const faces = await det.detect(bgr(img));
        const best = faces[0]!;
        t.ok(best.left_eye![0] > best.right_eye![0], `${img.name}: person's left eye is on the image's right`);
      }
    }
    await det.release();
  });
}

t.test('YuNet detector matches cv2.FaceDetectorYN with DeepFace wrapper semantics', async (t) => {
  const det = await YunetDetector.create(convertYunet(), ORT);
  for (const img of fx.images) {
    for (const [label, px, ref, r] of [
      ['small', bgr(img), img.yunet, 1],
      ['upscaled (>640, resized)', repeatPixels(bgr(img), img.yunetUpscaled.factor), img.yunetUpscaled, 640 / (Math.max(img.width, img.height) * img.yunetUpscaled.factor)],
    ] as const) {
      const got = await det.detect(px);
      t.equal(got.length, ref.rows.length, `${img.name} ${label}: face count`);
      const exp = ref.rows.map((row) => [row[0]! / r, row[1]! / r, (row[0]! + row[2]!) / r, (row[1]! + row[3]!) / r]);
      const ious = bestIous(exp, got.map((g) => g.raw_box!));
      t.ok(ious.every((v) => v >= 0.95), `${img.name} ${label}: IoUs ${ious.map((v) => v.toFixed(3)).join(',')}`);
      const faces = await det.detect(px);
      for (const d of ref.deepface) {
        const m = faces.find((f) => Math.abs(f.x - d.x) <= 3 && Math.abs(f.y - d.y) <= 3);
        t.ok(m, `${img.name} ${label}: DeepFace box ${d.x},${d.y} found`);
        if (m) {
          t.ok(Math.abs(m.w - d.w) <= 3 && Math.abs(m.h - d.h) <= 3, 'w/h within 3 px');
          t.ok(Math.abs(m.left_eye![0] - d.left_eye[0]!) <= 3 && Math.abs(m.right_eye![0] - d.right_eye[0]!) <= 3, 'eyes follow DeepFace left/right');
          t.ok(Math.abs(m.confidence - d.confidence) < 0.02, 'score');
        }
      }
    }
  }
  await det.release();
});

t.test('the .pth reader refuses zip-format, truncated and foreign files', async (t) => {
  const py = resolve(REPO_ROOT, '.venv', 'bin', 'python');
  const conv = resolve(REPO_ROOT, 'models', 'converters', 'retinaface_mobilenet_to_onnx.py');
  mkdirSync(TEST_OUTPUT_DIR, { recursive: true });
  const real = readFileSync(resolve(SHARED_WEIGHTS_DIR, 'retinaface_mobilenet0.25_Final.pth'));
  const cases: Array<[string, Buffer]> = [
    ['zip', Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(64)])],
    ['truncated', real.subarray(0, real.length - 1000)],
    ['not a checkpoint', Buffer.from('hello')],
  ];
  for (const [label, bytes] of cases) {
    const p = resolve(TEST_OUTPUT_DIR, `bad-${label.replace(/ /g, '-')}.pth`);
    writeFileSync(p, bytes);
    t.throws(() => execFileSync(py, [conv, p, resolve(TEST_OUTPUT_DIR, 'bad.onnx')], { stdio: 'pipe' }), `${label} is refused`);
  }
});

t.test('native faces API: malformed inputs are errors, not crashes', async (t) => {
  const bad = { width: 10, height: 10, channels: 3, data: Buffer.alloc(5) };
  await t.rejects(retinafacePrepare(bad, 'mobilenet'), { name: 'ServiceError', code: 'invalid_image' });
  await t.rejects(yunetPrepare(bad), ServiceError);
  await t.rejects(retinafacePrepare({ width: 2, height: 2, channels: 3, data: Buffer.alloc(12) }, 'nope' as never), ServiceError);
  const z = (dims: number[]) => ({ data: new Float32Array(dims.reduce((a, b) => a * b, 1)), dims });
  await t.rejects(retinafaceDecodeMobilenet(z([1, 10, 4]), z([1, 10, 2]), z([1, 10, 10]), 64, 64, 1, 0.9, 0.4), { name: 'ServiceError', code: 'invalid_request' });
  await t.rejects(retinafaceDecodeMobilenet({ data: new Float32Array(3), dims: [1, 2, 4] }, z([1, 2, 2]), z([1, 2, 10]), 64, 64, 1, 0.9, 0.4), ServiceError);
  await t.rejects(yunetDecode([z([1, 4, 1])], 64, 64, 0.9, 0.3, 5000), ServiceError);
  await t.rejects(retinafaceDecodeResnet([{ stride: 7, cls: z([1, 1, 1, 4]), bbox: z([1, 1, 1, 8]), landmark: z([1, 1, 1, 20]) }], 64, 64, 1, 0.9, 0.4), ServiceError);
});

t.test('native mtcnn API: the flavour is a closed set, and bad input is an error with its code', async (t) => {
  t.same([...MTCNN_FLAVORS].sort(), ['fastmtcnn', 'mtcnn'], "the addon's MtcnnFlavor enum holds DeepFace's two backend names");
  const img = { width: 40, height: 40, channels: 3, data: Buffer.alloc(40 * 40 * 3, 128) };
  for (const flavour of MTCNN_FLAVORS) {
    const levels = await mtcnnPyramid(img, flavour);
    t.ok(levels.length > 0, `${flavour}: a 40 px image has pyramid levels`);
    t.ok(levels.every((l) => l.tensor.length === 3 * l.width * l.height), `${flavour}: each level is [1, 3, h, w]`);
  }
  // napi would refuse an unknown value itself (InvalidArg, i.e. internal_error): the wrapper's check keeps it the caller's error.
  await t.rejects(mtcnnPyramid(img, 'MTCNN' as never), { name: 'ServiceError', code: 'invalid_request' });
  await t.rejects(mtcnnPyramid({ ...img, data: Buffer.alloc(5) }, 'mtcnn'), { name: 'ServiceError', code: 'invalid_image' });
  const z = (dims: number[]) => ({ data: new Float32Array(dims.reduce((a, b) => a * b, 1)), dims });
  await t.rejects(mtcnnFaces('fastmtcnn', 40, 40, new Float64Array(3), z([1, 4]), z([1, 10]), z([1, 2])), {
    name: 'ServiceError',
    code: 'invalid_request',
    message: 'mtcnn boxes must be rows of 5 values',
  });
});

t.test('ResNet-50 decoder through the binding: a synthetic anchor comes back as DeepFace ints', async (t) => {
  const lvl = (fh: number, fw: number) => ({ cls: new Float32Array(fh * fw * 4), bbox: new Float32Array(fh * fw * 8), landmark: new Float32Array(fh * fw * 20), fh, fw });
  const l32 = lvl(2, 2), l16 = lvl(4, 4), l8 = lvl(8, 8);
  // stride 8, cell (1, 1), anchor 0 = [-8,-8,23,23] + 8 → [0,0,31,31]; score in the second half.
  const cell = 1 * 8 + 1;
  l8.cls[cell * 4 + 2] = 0.99;
  l8.cls[cell * 4 + 0] = 1.0; // background channel: ignored
  const levels = [
    [32, l32],
    [16, l16],
    [8, l8],
  ].map(([s, l]) => {
    const v = l as ReturnType<typeof lvl>;
    return { stride: s as number, cls: { data: v.cls, dims: [1, v.fh, v.fw, 4] }, bbox: { data: v.bbox, dims: [1, v.fh, v.fw, 8] }, landmark: { data: v.landmark, dims: [1, v.fh, v.fw, 20] } };
  });
  const faces = await retinafaceDecodeResnet(levels, 64, 64, 0.5, 0.9, 0.4);
  t.equal(faces.length, 1);
  t.same([faces[0]!.x, faces[0]!.y, faces[0]!.w, faces[0]!.h], [0, 0, 62, 62]);
  t.same(faces[0]!.right_eye, [31, 31]);
  t.ok(Math.abs(faces[0]!.confidence - 0.99) < 1e-6);
});
