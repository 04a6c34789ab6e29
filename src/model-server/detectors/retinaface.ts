/**
 * RetinaFace with DeepFace's semantics (threshold 0.9, NMS IoU 0.4, integer boxes and landmarks as
 * DeepFace's wrapper builds them), on either backbone:
 * - `resnet50`: DeepFace's own network (retinaface.h5 converted by models/converters/keras_to_onnx.py
 *   --arch retinaface_r50), NHWC RGB input at serengil's 1024/1980 scale, decoded per FPN stride;
 * - `mobilenet0.25`: biubug6 Face-Detector-1MB-with-landmark weights (retinaface_mobilenet_to_onnx.py).
 *   By default its long side goes to 320 px (these weights were trained on 300-px crops; at the
 *   ResNet-50 scale they miss or duplicate large faces, see crates/facecompute-core/src/detect/
 *   retinaface.rs). `scaleRule: 'deepface'` selects serengil's rule instead.
 */
import type { RemoteSession, TensorData } from '../inference/inference-thread.js';
import { retinafaceDecodeMobilenet, retinafaceDecodeResnet, retinafacePrepare } from '../../native/faces.js';
import type { Detection } from '../../native/types.js';
import { createSession, toNative, type NativeImage } from './common.js';
import type { OrtSettings } from '../models/ort-options.js';
import type { RetinafaceBackbone } from '../engines.js';

export const RETINAFACE_THRESHOLD = 0.9;
export const RETINAFACE_NMS = 0.4;

export const RETINAFACE_MOBILENET_LONG_SIDE = 320;

/** The ResNet-50 graph's outputs, one triple per FPN stride (keras_to_onnx.py's names). */
const RESNET_STRIDES = [32, 16, 8] as const;
const RESNET_OUTPUTS = RESNET_STRIDES.flatMap((s) => [`cls_prob_s${s}`, `bbox_pred_s${s}`, `landmark_pred_s${s}`]);
const MOBILENET_OUTPUTS = ['loc', 'conf', 'landms'];

export interface RetinaFaceOptions {
  /** Which network the model file is (default mobilenet0.25). */
  backbone?: RetinafaceBackbone;
  threshold?: number;
  nms?: number;
  /**
   * 'long-side' (`longSide` px) or 'deepface' (serengil's 1024/1980 rule). The default is
   * 'long-side' at 320 px for MobileNet-0.25 and 'deepface' for ResNet-50, DeepFace's own.
   */
  scaleRule?: 'long-side' | 'deepface';
  longSide?: number;
}

export class RetinaFaceDetector {
  private constructor(
    private readonly session: RemoteSession,
    private readonly backbone: RetinafaceBackbone,
    private readonly threshold: number,
    private readonly nms: number,
    private readonly longSide: number | undefined,
  ) {}

  static async create(modelPath: string, ort: OrtSettings, opts: RetinaFaceOptions = {}): Promise<RetinaFaceDetector> {
    const backbone = opts.backbone ?? 'mobilenet0.25';
    const session = await createSession(modelPath, ort);
    for (const name of backbone === 'resnet50' ? RESNET_OUTPUTS : MOBILENET_OUTPUTS) {
      if (!session.outputNames.includes(name)) throw new Error(`retinaface ${backbone} model lacks output ${name}`);
    }
    const rule = opts.scaleRule ?? (backbone === 'resnet50' ? 'deepface' : 'long-side');
    const longSide = rule === 'deepface' ? undefined : (opts.longSide ?? RETINAFACE_MOBILENET_LONG_SIDE);
    return new RetinaFaceDetector(session, backbone, opts.threshold ?? RETINAFACE_THRESHOLD, opts.nms ?? RETINAFACE_NMS, longSide);
  }

  /** DeepFace's faces, with the unrounded boxes and landmarks (`raw_box`, `raw_landmarks`). */
  async detect(img: NativeImage): Promise<Detection[]> {
    const resnet = this.backbone === 'resnet50';
    const prep = await retinafacePrepare(img, resnet ? 'resnet50' : 'mobilenet', this.longSide);
    const [, d1, d2] = prep.dims as [number, number, number, number];
    // NHWC for ResNet-50, NCHW for MobileNet.
    const [h, w] = resnet ? [d1, d2] : [d2, prep.dims[3] as number];
    const input: TensorData = { type: 'float32', data: prep.tensor, dims: prep.dims };
    const out = await this.session.run({ [this.session.inputNames[0] ?? 'input']: input });
    const get = (k: string): TensorData => {
      const t = out[k];
      if (!t) throw new Error(`retinaface output ${k} missing`);
      return t;
    };
    if (resnet) {
      const levels = RESNET_STRIDES.map((stride) => ({
        stride,
        cls: toNative(get(`cls_prob_s${stride}`)),
        bbox: toNative(get(`bbox_pred_s${stride}`)),
        landmark: toNative(get(`landmark_pred_s${stride}`)),
      }));
      return retinafaceDecodeResnet(levels, w, h, prep.scale, this.threshold, this.nms);
    }
    return retinafaceDecodeMobilenet(toNative(get('loc')), toNative(get('conf')), toNative(get('landms')), w, h, prep.scale, this.threshold, this.nms);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
