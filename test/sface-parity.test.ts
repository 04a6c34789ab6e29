/**
 * SFace preprocessing parity (issue 4 §2). OpenCV's FaceRecognizerSF.feature() was run offline on a small
 * ONNX with SFace's exact signature (tools/reference/sface_reference.py); here the same ONNX is rebuilt
 * deterministically (numpy + onnx) and run with onnxruntime-node on our sfacePreprocess() tensor.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { readFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { python, readCrop, SCRATCH } from './helpers/keras-models.js';
import { REPO_ROOT } from './helpers/shared.js';
import {
  deepfaceFloatPreprocess,
  sfaceBytesFromDeepfaceFloat,
  sfacePreprocess,
} from '../src/model-server/models/preprocess.js';

interface Expected {
  model_sha256: string;
  results: {
    file: string;
    from_bytes: number[];
    from_blended_float: number[];
    truncated_vs_rounded_differ: number;
    truncated_bytes_sha256: string;
  }[];
}

const expected = JSON.parse(
  readFileSync(resolve(REPO_ROOT, 'test', 'fixtures', 'sface-parity', 'expected.json'), 'utf8'),
) as Expected;

function rel(a: ArrayLike<number>, b: number[]): number {
  let m = 0;
  let n = 0;
  for (let i = 0; i < b.length; i++) {
    m = Math.max(m, Math.abs(a[i]! - b[i]!));
    n += b[i]! * b[i]!;
  }
  return m / Math.sqrt(n);
}

t.test('SFace: our preprocessing + ORT equals OpenCV FaceRecognizerSF.feature()', async (t) => {
  mkdirSync(SCRATCH, { recursive: true });
  const model = resolve(SCRATCH, 'sface_small.onnx');
  const r = python([resolve(REPO_ROOT, 'tools', 'reference', 'sface_small_onnx.py'), model]);
  t.equal(r.status, 0, r.stderr);
  const sha = createHash('sha256').update(readFileSync(model)).digest('hex');
  t.equal(sha, expected.model_sha256, 'the rebuilt stand-in is byte-identical to the one OpenCV ran');
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  t.same(session.inputNames, ['data']);
  t.same(session.outputNames, ['fc1']);
  t.equal(expected.results.length, 3, 'three crops recorded');
  let compared = 0;

  const run = async (x: Float32Array) =>
    (await session.run({ data: new ort.Tensor('float32', x, [1, 3, 112, 112]) }))['fc1']!.data as Float32Array;

  for (const e of expected.results) {
    const crop = readCrop(e.file);
    const fromBytes = await run(sfacePreprocess({ width: 112, height: 112, data: crop }));
    t.ok(rel(fromBytes, e.from_bytes) <= 1e-5, `${e.file}: uint8 crop (${rel(fromBytes, e.from_bytes).toExponential(2)})`);

    // DeepFace's path for a float [0,1] face: (x*255).astype(uint8) inside SFaceClient, then feature().
    // x/255 of a byte round-trips exactly, so the reference uses a half-pixel blend with the right-hand
    // neighbour (as a resize would produce) to make the truncation visible; same arithmetic here.
    const face01 = new Float32Array(crop.length);
    for (let y = 0; y < 112; y++) {
      for (let x = 0; x < 112; x++) {
        const xr = Math.min(x + 1, 111);
        for (let c = 0; c < 3; c++) {
          face01[(y * 112 + x) * 3 + c] = (crop[(y * 112 + x) * 3 + c]! + crop[(y * 112 + xr) * 3 + c]!) / 510;
        }
      }
    }
    const bytes = sfaceBytesFromDeepfaceFloat(face01);
    t.equal(createHash('sha256').update(bytes).digest('hex'), e.truncated_bytes_sha256, `${e.file}: truncated bytes equal numpy's`);
    let differ = 0;
    for (let i = 0; i < bytes.length; i++) if (bytes[i] !== Math.floor(face01[i]! * 255 + 0.5)) differ++;
    t.equal(differ, e.truncated_vs_rounded_differ, `${e.file}: ${differ} bytes where truncation differs from rounding`);
    t.ok(differ > 1000, 'the blend exercises the truncation');
    const fromFloat = await run(sfacePreprocess({ width: 112, height: 112, data: face01 }));
    t.ok(rel(fromFloat, e.from_blended_float) <= 1e-5, `${e.file}: DeepFace float path (${rel(fromFloat, e.from_blended_float).toExponential(2)})`);

    // Rounding instead of truncating, or skipping swapRB, would be caught.
    const roundedBytes = Uint8Array.from(face01, (v) => Math.floor(v * 255 + 0.5));
    t.ok(rel(await run(sfacePreprocess({ width: 112, height: 112, data: roundedBytes })), e.from_blended_float) > 1e-4, 'rounding would be caught');
    const bgrPlanar = new Float32Array(3 * 112 * 112);
    for (let p = 0; p < 112 * 112; p++) for (let c = 0; c < 3; c++) bgrPlanar[c * 112 * 112 + p] = crop[3 * p + c]!;
    t.ok(rel(await run(bgrPlanar), e.from_bytes) > 1e-2, 'BGR order would be caught');
    compared++;
  }
  t.equal(compared, 3, 'every recorded crop compared');
});

t.test('sfacePreprocess layout and checks', async (t) => {
  const data = new Uint8Array(112 * 112 * 3);
  data[0] = 10; // B of pixel 0
  data[1] = 20; // G
  data[2] = 30; // R
  data[3 * 113 + 2] = 7; // R of pixel (1,1)
  const x = sfacePreprocess({ width: 112, height: 112, data });
  t.equal(x.length, 3 * 112 * 112);
  t.equal(x[0], 30, 'plane 0 is R');
  t.equal(x[112 * 112], 20, 'plane 1 is G');
  t.equal(x[2 * 112 * 112], 10, 'plane 2 is B');
  t.equal(x[113], 7, 'row-major within a plane');
  t.throws(() => sfacePreprocess({ width: 96, height: 96, data: new Uint8Array(96 * 96 * 3) }), RangeError);
  t.throws(() => sfacePreprocess({ width: 112, height: 112, data: new Uint8Array(5) }), RangeError);
  // Truncation, not rounding: 0.999999 * 255 = 254.99974 -> 254.
  t.same([...sfaceBytesFromDeepfaceFloat(Float32Array.from([0.999999, 1, 0, 0.5]))], [254, 255, 0, 127]);
});

t.test('deepfaceFloatPreprocess: BGR kept, x/255 as float32', async (t) => {
  const data = Uint8Array.from([0, 1, 255, 128, 64, 2]);
  const x = deepfaceFloatPreprocess({ width: 2, height: 1, data });
  t.same([...x], [0, 1, 255, 128, 64, 2].map((v) => Math.fround(v / 255)));
  t.throws(() => deepfaceFloatPreprocess({ width: 3, height: 1, data }), RangeError);
});
