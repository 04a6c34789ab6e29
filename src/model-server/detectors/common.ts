/**
 * What the ONNX face detectors share: the explicit ORT session options and the result shape.
 */
import { inferenceThread, type RemoteSession, type TensorData } from '../inference/inference-thread.js';
import type { NativeFace, NativeTensor } from '../../core/faces.js';
import type { NativeImage, Point } from '../../core/image.js';

export interface OrtOptions {
  intraOpNumThreads: number;
  interOpNumThreads: number;
  /** Defaults to ['cpu']. */
  executionProviders?: string[];
}

/** BGR uint8, interleaved: the native wrapper's image type. */
export type BgrImage = NativeImage;
export type { Point };

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

export async function createSession(modelPath: string, o: OrtOptions): Promise<RemoteSession> {
  // Every option spelled out: ORT's defaults (all cores for intra-op, for instance) would fight the
  // service's own worker pool.
  // The session lives on the inference thread, so a detector run never blocks the JS thread.
  return inferenceThread().load(modelPath, {
    intraOpNumThreads: o.intraOpNumThreads,
    interOpNumThreads: o.interOpNumThreads,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    executionProviders: o.executionProviders ?? ['cpu'],
    enableCpuMemArena: true,
    enableMemPattern: true,
    // As for the recognizers (ort-options.ts): idle pool threads sleep rather than spin, since they
    // share the cores with the rest of the model server (bench/results/ort-settings.json).
    extra: { session: { 'intra_op.allow_spinning': '0' } },
  });
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
