/**
 * DeepFace's MTCNN backends: `mtcnn` (ipazc mtcnn 1.0.0, DeepFace's MtCnn.py) and `fastmtcnn`
 * (facenet-pytorch 2.6.0, DeepFace's FastMtCnn.py). The three networks (models/converters/
 * mtcnn_to_onnx.py) run on the inference thread; everything between them (pyramid, crops,
 * thresholds, suppression, regression, DeepFace's integers) is the native core's
 * (crates/facecompute-core/src/detect/mtcnn), which reproduces each library's own arithmetic.
 *
 * Batching: RNet and ONet take every candidate of an image in one run, as both libraries do. PNet
 * runs once per pyramid level: the levels differ in size, and padding them to one batch would change
 * the cells at their right and bottom edges (the 'same' pooling), so the result would not be DeepFace's.
 *
 * What DeepFace reports: the box, the confidence (ONet's face probability) and the eyes, the
 * person's left eye being the landmark on the image's right; no nose or mouth (DeepFace's wrappers
 * drop them for both backends).
 */
import { join } from 'node:path';
import type { RemoteSession, TensorData } from '../inference/inference-thread.js';
import { mtcnnAfterPnet, mtcnnAfterRnet, mtcnnFaces, mtcnnPyramid, type MtcnnFlavor, type NativeFace, type NativeTensor } from '../../native/faces.js';
import { createSession, toNative, type NativeImage } from './common.js';
import type { OrtSettings } from '../models/ort-options.js';
import type { Detection } from '../engines.js';

export type { MtcnnFlavor };

const OUTPUTS = { pnet: ['reg', 'prob'], rnet: ['reg', 'prob'], onet: ['reg', 'landmarks', 'prob'] } as const;

function output(out: Record<string, TensorData>, name: string): NativeTensor {
  const t = out[name];
  if (!t) throw new Error(`mtcnn output ${name} missing`);
  return toNative(t);
}

export class MtcnnDetector {
  private constructor(
    readonly flavor: MtcnnFlavor,
    private readonly pnet: RemoteSession,
    private readonly rnet: RemoteSession,
    private readonly onet: RemoteSession,
  ) {}

  /** `dir` holds pnet.onnx, rnet.onnx and onet.onnx (the converter's output for `flavor`). */
  static async create(flavor: MtcnnFlavor, dir: string, ort: OrtSettings): Promise<MtcnnDetector> {
    const sessions = await Promise.all((['pnet', 'rnet', 'onet'] as const).map(async (net) => {
      const s = await createSession(join(dir, `${net}.onnx`), ort);
      for (const name of OUTPUTS[net]) if (!s.outputNames.includes(name)) throw new Error(`${flavor} ${net} lacks output ${name}`);
      return s;
    }));
    const [pnet, rnet, onet] = sessions as [RemoteSession, RemoteSession, RemoteSession];
    return new MtcnnDetector(flavor, pnet, rnet, onet);
  }

  private async run(session: RemoteSession, tensor: Float32Array, dims: number[]): Promise<Record<string, TensorData>> {
    return session.run({ [session.inputNames[0] ?? 'input']: { type: 'float32', data: tensor, dims } });
  }

  /** The library's faces with DeepFace's integers and the unrounded values (tests, benchmarks). */
  async detectRaw(img: NativeImage): Promise<NativeFace[]> {
    const levels = await mtcnnPyramid(img, this.flavor);
    if (levels.length === 0) return [];
    const pnetOut = [];
    for (const l of levels) {
      const out = await this.run(this.pnet, l.tensor, [1, 3, l.height, l.width]);
      pnetOut.push({ scale: l.scale, reg: output(out, 'reg'), prob: output(out, 'prob') });
    }
    const r = await mtcnnAfterPnet(img, this.flavor, pnetOut);
    const nr = r.boxes.length / 5;
    if (nr === 0) return [];
    const rout = await this.run(this.rnet, r.crops, [nr, 3, 24, 24]);
    const o = await mtcnnAfterRnet(img, this.flavor, r.boxes, output(rout, 'reg'), output(rout, 'prob'));
    const no = o.boxes.length / 5;
    if (no === 0) return [];
    const oout = await this.run(this.onet, o.crops, [no, 3, 48, 48]);
    return mtcnnFaces(this.flavor, img.width, img.height, o.boxes, output(oout, 'reg'), output(oout, 'landmarks'), output(oout, 'prob'));
  }

  async detect(img: NativeImage): Promise<Detection[]> {
    return (await this.detectRaw(img)).map((f) => ({
      x: f.x,
      y: f.y,
      w: f.w,
      h: f.h,
      confidence: f.confidence,
      // landmarks: the person's right eye (image left) first, then the left eye.
      rightEye: [f.landmarks[0] ?? 0, f.landmarks[1] ?? 0],
      leftEye: [f.landmarks[2] ?? 0, f.landmarks[3] ?? 0],
    }));
  }

  async release(): Promise<void> {
    await Promise.all([this.pnet.release(), this.rnet.release(), this.onet.release()]);
  }
}
