/**
 * Typed wrappers over the native RetinaFace / YuNet pre- and post-processing
 * (crates/facecompute-node/src/faces.rs). Every native failure becomes a ServiceError here.
 */
import { native } from './addon.js';
import { fromNative } from '../errors/native-error.js';
import type { FaceImage, NativeFace, NativeTensor, PreparedInput, ResnetLevelInput } from '../../index.js';

export type { FaceImage, NativeFace, NativeTensor, PreparedInput, ResnetLevelInput };
export type RetinafaceVariant = 'mobilenet' | 'resnet50';

async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    throw fromNative(err);
  }
}

/** `longSide` scales the long side to that many pixels; without it, serengil's (DeepFace's) 1024/1980 rule. */
export function retinafacePrepare(image: FaceImage, variant: RetinafaceVariant, longSide?: number): Promise<PreparedInput> {
  return call(() => native.retinafacePrepare(image, variant, longSide));
}

export function retinafaceDecodeMobilenet(
  loc: NativeTensor,
  conf: NativeTensor,
  landms: NativeTensor,
  width: number,
  height: number,
  scale: number,
  threshold: number,
  nms: number,
): Promise<NativeFace[]> {
  return call(() => native.retinafaceDecodeMobilenet(loc, conf, landms, width, height, scale, threshold, nms));
}

export function retinafaceDecodeResnet(
  levels: ResnetLevelInput[],
  width: number,
  height: number,
  scale: number,
  threshold: number,
  nms: number,
): Promise<NativeFace[]> {
  return call(() => native.retinafaceDecodeResnet(levels, width, height, scale, threshold, nms));
}

export function yunetPrepare(image: FaceImage): Promise<PreparedInput> {
  return call(() => native.yunetPrepare(image));
}

export function yunetDecode(
  outputs: NativeTensor[],
  width: number,
  height: number,
  scoreThreshold: number,
  nms: number,
  topK: number,
): Promise<NativeFace[]> {
  return call(() => native.yunetDecode(outputs, width, height, scoreThreshold, nms, topK));
}
