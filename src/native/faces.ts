/**
 * Typed wrappers over the native RetinaFace / YuNet pre- and post-processing
 * (crates/facecompute-node/src/faces.rs). Every native failure becomes a ServiceError here.
 */
import { native } from './addon.js';
import { RETINAFACE_VARIANTS, member } from './closed-sets.js';
import { fromNative } from '../errors/native-error.js';
import type { NativeFace, NativeImage, NativeTensor, PreparedInput, ResnetLevelInput, RetinafaceVariant } from '../../index.js';

export type { NativeFace, NativeTensor, PreparedInput, ResnetLevelInput, RetinafaceVariant };

async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    throw fromNative(err);
  }
}

/** `longSide` scales the long side to that many pixels; without it, serengil's (DeepFace's) 1024/1980 rule. */
export function retinafacePrepare(image: NativeImage, variant: RetinafaceVariant, longSide?: number): Promise<PreparedInput> {
  return call(() => native.retinafacePrepare(image, member(RETINAFACE_VARIANTS, variant, 'retinaface variant'), longSide));
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

export function yunetPrepare(image: NativeImage): Promise<PreparedInput> {
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
