/**
 * DeepFace's MTCNN backends: `mtcnn` (ipazc mtcnn 1.0.0, DeepFace's MtCnn.py) and `fastmtcnn`
 * (facenet-pytorch 2.6.0, DeepFace's FastMtCnn.py). The three networks (models/converters/
 * mtcnn_to_onnx.py) run on the inference thread; everything between them (pyramid, crops,
 * thresholds, suppression, regression, DeepFace's integers) is the native core's
 * (crates/facecompute-core/src/detect/mtcnn), which reproduces each library's own arithmetic.
 *
 * The pyramid is built one level at a time, each dropped once PNet has run on it.
 *
 * Batching: RNet and ONet take an image's candidates in runs of up to 256 crops. PNet
 * runs once per pyramid level: the levels differ in size, and padding them to one batch would change
 * the cells at their right and bottom edges (the 'same' pooling), so the result would not be DeepFace's.
 * A large level runs in bands of rows instead, which gives the same outputs (./pnet-bands.ts).
 *
 * What DeepFace reports: the box, the confidence (ONet's face probability) and the eyes, the
 * person's left eye being the landmark on the image's right; no nose or mouth (DeepFace's wrappers
 * drop them for both backends).
 */
import { join } from 'node:path';
import type { RemoteSession, TensorData } from '../inference/inference-thread.js';
import { mtcnnAfterPnet, mtcnnAfterRnet, mtcnnFaces, mtcnnPyramidLevels } from '../../native/faces.js';
import type { Detection, MtcnnFlavor, NativeTensor } from '../../native/types.js';
import { createSession, toNative, type NativeImage } from './common.js';
import { BAND_INPUT_PIXELS, pnetBands, pnetOutputRows, putRows, sliceRows } from './pnet-bands.js';
import type { OrtSettings } from '../models/ort-options.js';

export type { MtcnnFlavor };

const OUTPUTS = { pnet: ['reg', 'prob'], rnet: ['reg', 'prob'], onet: ['reg', 'landmarks', 'prob'] } as const;

/** Most crops RNet or ONet is given in one run: a run holds intermediates in proportion to its batch. */
const CROP_BATCH = 256;

function output(out: Record<string, TensorData>, name: string): NativeTensor {
  const t = out[name];
  if (!t) throw new Error(`mtcnn output ${name} missing`);
  return toNative(t);
}

/** How much one network run may take on: the served values bound memory; the bench's baseline lifts them. */
export interface MtcnnRunLimits {
  /** Largest PNet input run at once (pixels); larger levels run in bands. */
  bandPixels: number;
  /** Most crops in one RNet or ONet run. */
  cropBatch: number;
}

export const MTCNN_RUN_LIMITS: MtcnnRunLimits = { bandPixels: BAND_INPUT_PIXELS, cropBatch: CROP_BATCH };

export class MtcnnDetector {
  private constructor(
    readonly flavor: MtcnnFlavor,
    private readonly pnet: RemoteSession,
    private readonly rnet: RemoteSession,
    private readonly onet: RemoteSession,
    private readonly limits: MtcnnRunLimits,
  ) {}

  /** `dir` holds pnet.onnx, rnet.onnx and onet.onnx (the converter's output for `flavor`). */
  static async create(flavor: MtcnnFlavor, dir: string, ort: OrtSettings, limits: MtcnnRunLimits = MTCNN_RUN_LIMITS): Promise<MtcnnDetector> {
    const sessions = await Promise.all((['pnet', 'rnet', 'onet'] as const).map(async (net) => {
      const s = await createSession(join(dir, `${net}.onnx`), ort);
      for (const name of OUTPUTS[net]) if (!s.outputNames.includes(name)) throw new Error(`${flavor} ${net} lacks output ${name}`);
      return s;
    }));
    const [pnet, rnet, onet] = sessions as [RemoteSession, RemoteSession, RemoteSession];
    return new MtcnnDetector(flavor, pnet, rnet, onet, limits);
  }

  private async run(session: RemoteSession, tensor: Float32Array, dims: number[]): Promise<Record<string, TensorData>> {
    return session.run({ [session.inputNames[0] ?? 'input']: { type: 'float32', data: tensor, dims } });
  }

  /** PNet's outputs on one pyramid level, run in bands when the level is large (./pnet-bands.ts). */
  async pnetLevel(tensor: Float32Array, height: number, width: number, bandPixels = this.limits.bandPixels): Promise<{ reg: NativeTensor; prob: NativeTensor }> {
    const bands = pnetBands(height, width, bandPixels);
    if (bands.length === 1) {
      const out = await this.run(this.pnet, tensor, [1, 3, height, width]);
      return { reg: output(out, 'reg'), prob: output(out, 'prob') };
    }
    const rows = pnetOutputRows(height);
    let reg: NativeTensor | null = null;
    let prob: NativeTensor | null = null;
    for (const b of bands) {
      const out = await this.run(this.pnet, sliceRows(tensor, 3, height, width, b.inRow, b.inRows), [1, 3, b.inRows, width]);
      const r = output(out, 'reg');
      const p = output(out, 'prob');
      const [, , bandRows = 0, cols = 0] = r.dims;
      reg ??= { data: new Float32Array(4 * rows * cols), dims: [1, 4, rows, cols] };
      prob ??= { data: new Float32Array(2 * rows * cols), dims: [1, 2, rows, cols] };
      putRows(reg.data, rows, r.data, 4, bandRows, cols, b.outRow);
      putRows(prob.data, rows, p.data, 2, bandRows, cols, b.outRow);
    }
    return { reg: reg!, prob: prob! };
  }

  /**
   * RNet's or ONet's outputs on `n` crops of `side` x `side`, at most `batch` crops a run: a large
   * image can have tens of thousands of candidates, and one run on all of them would hold gigabytes of
   * intermediates. Each crop's outputs are its own, so the result is the same (facenet-pytorch itself
   * runs them 512 at a time; test/mtcnn-pnet-bands.test.ts checks the bytes).
   */
  async cropNet(net: 'rnet' | 'onet', crops: Float32Array, n: number, side: number, batch = this.limits.cropBatch): Promise<Record<string, TensorData>> {
    const session = net === 'rnet' ? this.rnet : this.onet;
    const per = 3 * side * side;
    if (n <= batch) return this.run(session, crops, [n, 3, side, side]);
    const out: Record<string, TensorData> = {};
    for (let i = 0; i < n; i += batch) {
      const m = Math.min(batch, n - i);
      const part = await this.run(session, crops.slice(i * per, (i + m) * per), [m, 3, side, side]);
      for (const name of OUTPUTS[net]) {
        const t = output(part, name);
        const width = t.data.length / m;
        const whole = (out[name] ??= { type: 'float32', data: new Float32Array(n * width), dims: [n, width] });
        whole.data.set(t.data, i * width);
      }
    }
    return out;
  }

  /**
   * The library's faces with DeepFace's integers (the eyes only, as its wrappers report them) and
   * the unrounded box and five landmarks (`raw_box`, `raw_landmarks`).
   */
  async detect(img: NativeImage): Promise<Detection[]> {
    // One pyramid level at a time: each level's input is dropped once PNet has run on it, so a
    // large image holds its largest level, not the whole pyramid (about twice that).
    const pnetOut = [];
    for await (const l of mtcnnPyramidLevels(img, this.flavor)) {
      pnetOut.push({ scale: l.scale, ...(await this.pnetLevel(l.tensor, l.height, l.width)) });
    }
    if (pnetOut.length === 0) return [];
    const r = await mtcnnAfterPnet(img, this.flavor, pnetOut);
    const nr = r.boxes.length / 5;
    if (nr === 0) return [];
    const rout = await this.cropNet('rnet', r.crops, nr, 24);
    const o = await mtcnnAfterRnet(img, this.flavor, r.boxes, output(rout, 'reg'), output(rout, 'prob'));
    const no = o.boxes.length / 5;
    if (no === 0) return [];
    const oout = await this.cropNet('onet', o.crops, no, 48);
    return mtcnnFaces(this.flavor, img.width, img.height, o.boxes, output(oout, 'reg'), output(oout, 'landmarks'), output(oout, 'prob'));
  }

  async release(): Promise<void> {
    await Promise.all([this.pnet.release(), this.rnet.release(), this.onet.release()]);
  }
}
