/**
 * RetinaFace MobileNet-0.25 (biubug6 Face-Detector-1MB-with-landmark weights converted by
 * models/converters/retinaface_mobilenet_to_onnx.py) with DeepFace's RetinaFace semantics:
 * threshold 0.9, NMS IoU 0.4, integer boxes and landmarks as DeepFace's wrapper builds them.
 *
 * Scale: by default the long side goes to 320 px (these weights were trained on 300-px crops; at
 * DeepFace's ResNet-50 scale of ~1024 px they miss or duplicate large faces, see
 * crates/facecompute-core/src/detect/retinaface.rs). `scaleRule: 'deepface'` selects serengil's
 * 1024/1980 rule instead.
 */
import type { RemoteSession, TensorData } from '../inference/inference-thread.js';
import { retinafaceDecodeMobilenet, retinafacePrepare, type NativeFace } from '../../native/faces.js';
import { createSession, fromNativeFace, toNative, type NativeImage, type DetectedFace } from './common.js';
import type { OrtSettings } from '../models/ort-options.js';

export const RETINAFACE_THRESHOLD = 0.9;
export const RETINAFACE_NMS = 0.4;

export const RETINAFACE_MOBILENET_LONG_SIDE = 320;

export interface RetinaFaceOptions {
  threshold?: number;
  nms?: number;
  /** 'long-side' (default, `longSide` px) or 'deepface' (serengil's 1024/1980 rule). */
  scaleRule?: 'long-side' | 'deepface';
  longSide?: number;
}

export class RetinaFaceDetector {
  private constructor(
    private readonly session: RemoteSession,
    private readonly threshold: number,
    private readonly nms: number,
    private readonly longSide: number | undefined,
  ) {}

  static async create(modelPath: string, ort: OrtSettings, opts: RetinaFaceOptions = {}): Promise<RetinaFaceDetector> {
    const session = await createSession(modelPath, ort);
    for (const name of ['loc', 'conf', 'landms']) {
      if (!session.outputNames.includes(name)) throw new Error(`retinaface model lacks output ${name}`);
    }
    const longSide = opts.scaleRule === 'deepface' ? undefined : (opts.longSide ?? RETINAFACE_MOBILENET_LONG_SIDE);
    return new RetinaFaceDetector(session, opts.threshold ?? RETINAFACE_THRESHOLD, opts.nms ?? RETINAFACE_NMS, longSide);
  }

  /** Unrounded boxes and landmarks too (tests and benchmarks compare them with references). */
  async detectRaw(img: NativeImage): Promise<NativeFace[]> {
    const prep = await retinafacePrepare(img, 'mobilenet', this.longSide);
    const [, , h, w] = prep.dims as [number, number, number, number];
    const input: TensorData = { type: 'float32', data: prep.tensor, dims: prep.dims };
    const out = await this.session.run({ [this.session.inputNames[0] ?? 'input']: input });
    const get = (k: string): TensorData => {
      const t = out[k];
      if (!t) throw new Error(`retinaface output ${k} missing`);
      return t;
    };
    return retinafaceDecodeMobilenet(toNative(get('loc')), toNative(get('conf')), toNative(get('landms')), w, h, prep.scale, this.threshold, this.nms);
  }

  async detect(img: NativeImage): Promise<DetectedFace[]> {
    return (await this.detectRaw(img)).map(fromNativeFace);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
