/**
 * What the ONNX face detectors share: their sessions (with the recognizers' deliberate options,
 * ../models/ort-options.ts) and the result shape.
 */
import { inferenceThread, type RemoteSession, type TensorData } from '../inference/inference-thread.js';
import { sessionOptions, type OrtSettings } from '../models/ort-options.js';
import type { NativeFace, NativeTensor } from '../../native/faces.js';
import type { NativeImage, Point } from '../../native/image.js';

export type { NativeImage, Point };

/** Eyes, nose and mouth corners are the person's (DeepFace's): leftEye is on the image's right. */
export interface DetectedFace {
  x: number;
  y: number;
  w: number;
  h: number;
  confidence: number;
  leftEye: Point;
  rightEye: Point;
  nose: Point;
  mouthLeft: Point;
  mouthRight: Point;
}

/** The session lives on the inference thread, so a detector run never blocks the JS thread. */
export async function createSession(modelPath: string, settings: OrtSettings): Promise<RemoteSession> {
  return inferenceThread().load(modelPath, sessionOptions(settings));
}

export function toNative(t: TensorData): NativeTensor {
  return { data: t.data, dims: [...t.dims] };
}

export function fromNativeFace(f: NativeFace): DetectedFace {
  const p = (i: number): Point => [f.landmarks[2 * i] ?? 0, f.landmarks[2 * i + 1] ?? 0];
  return {
    x: f.x,
    y: f.y,
    w: f.w,
    h: f.h,
    confidence: f.confidence,
    rightEye: p(0),
    leftEye: p(1),
    nose: p(2),
    mouthRight: p(3),
    mouthLeft: p(4),
  };
}
