/**
 * YuNet 2023mar as DeepFace's `yunet` backend runs it through OpenCV's FaceDetectorYN: DeepFace's
 * >640 resize, OpenCV's padding and post-processing (score 0.9, NMS 0.3, top-k 5000), DeepFace's
 * integer mapping back to the original image. The model must be the dynamic-input copy made by
 * models/converters/yunet_dynamic_input.py (the published file declares a fixed 640x640 input).
 */
import type { RemoteSession, TensorData } from '../inference/inference-thread.js';
import { yunetDecode, yunetPrepare } from '../../native/faces.js';
import type { Detection } from '../../native/types.js';
import { createSession, toNative, type NativeImage } from './common.js';
import type { OrtSettings } from '../models/ort-options.js';

/** DeepFace reads env `yunet_score_threshold`, default 0.9. */
export const YUNET_SCORE_THRESHOLD = 0.9;
export const YUNET_NMS = 0.3;
export const YUNET_TOP_K = 5000;
export const YUNET_OUTPUTS = ['cls_8', 'cls_16', 'cls_32', 'obj_8', 'obj_16', 'obj_32', 'bbox_8', 'bbox_16', 'bbox_32', 'kps_8', 'kps_16', 'kps_32'] as const;

export interface YunetOptions {
  scoreThreshold?: number;
  nms?: number;
  topK?: number;
}

export class YunetDetector {
  private constructor(
    private readonly session: RemoteSession,
    private readonly scoreThreshold: number,
    private readonly nms: number,
    private readonly topK: number,
  ) {}

  static async create(modelPath: string, ort: OrtSettings, opts: YunetOptions = {}): Promise<YunetDetector> {
    const session = await createSession(modelPath, ort);
    for (const name of YUNET_OUTPUTS) {
      if (!session.outputNames.includes(name)) throw new Error(`yunet model lacks output ${name}`);
    }
    return new YunetDetector(session, opts.scoreThreshold ?? YUNET_SCORE_THRESHOLD, opts.nms ?? YUNET_NMS, opts.topK ?? YUNET_TOP_K);
  }

  /** DeepFace's faces, with the unrounded boxes and landmarks (`raw_box`, `raw_landmarks`). */
  async detect(img: NativeImage): Promise<Detection[]> {
    const prep = await yunetPrepare(img);
    const input: TensorData = { type: 'float32', data: prep.tensor, dims: prep.dims };
    const out = await this.session.run({ [this.session.inputNames[0] ?? 'input']: input });
    const outputs = YUNET_OUTPUTS.map((k) => {
      const t = out[k];
      if (!t) throw new Error(`yunet output ${k} missing`);
      return toNative(t);
    });
    return yunetDecode(outputs, img.width, img.height, this.scoreThreshold, this.nms, this.topK);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
