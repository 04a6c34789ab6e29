/**
 * RetinaFace MobileNet-0.25 (biubug6 weights converted by
 * models/converters/retinaface_mobilenet_to_onnx.py) with DeepFace's RetinaFace semantics:
 * serengil's scaling (1024 short side, 1980 cap), threshold 0.9, NMS IoU 0.4, integer boxes and
 * landmarks as DeepFace's wrapper builds them.
 */
import * as ort from 'onnxruntime-node';
import { retinafaceDecodeMobilenet, retinafacePrepare, type NativeFace } from '../../core/faces.js';
import { createSession, fromNativeFace, toNative, type BgrImage, type DetectedFace, type OrtOptions } from './common.js';

export const RETINAFACE_THRESHOLD = 0.9;
export const RETINAFACE_NMS = 0.4;

export interface RetinaFaceOptions {
  threshold?: number;
  nms?: number;
}

export class RetinaFaceDetector {
  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly threshold: number,
    private readonly nms: number,
  ) {}

  static async create(modelPath: string, ortOptions: OrtOptions, opts: RetinaFaceOptions = {}): Promise<RetinaFaceDetector> {
    const session = await createSession(modelPath, ortOptions);
    for (const name of ['loc', 'conf', 'landms']) {
      if (!session.outputNames.includes(name)) throw new Error(`retinaface model lacks output ${name}`);
    }
    return new RetinaFaceDetector(session, opts.threshold ?? RETINAFACE_THRESHOLD, opts.nms ?? RETINAFACE_NMS);
  }

  /** Unrounded boxes and landmarks too (tests and benchmarks compare them with references). */
  async detectRaw(img: BgrImage): Promise<NativeFace[]> {
    const prep = await retinafacePrepare(img, 'mobilenet');
    const [, , h, w] = prep.dims as [number, number, number, number];
    const input = new ort.Tensor('float32', prep.tensor, prep.dims);
    const out = await this.session.run({ [this.session.inputNames[0] ?? 'input']: input });
    const get = (k: string): ort.Tensor => {
      const t = out[k];
      if (!t) throw new Error(`retinaface output ${k} missing`);
      return t;
    };
    return retinafaceDecodeMobilenet(toNative(get('loc')), toNative(get('conf')), toNative(get('landms')), w, h, prep.scale, this.threshold, this.nms);
  }

  async detect(img: BgrImage): Promise<DetectedFace[]> {
    return (await this.detectRaw(img)).map(fromNativeFace);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
