/**
 * Typed wrappers over the native RetinaFace / YuNet pre- and post-processing
 * and MTCNN stages (crates/facecompute-node/src/faces.rs, mtcnn.rs): their faces are `Detection`s, as
 * every detector's. Every native failure becomes a ServiceError here.
 */
import { native } from './addon.js';
import { MTCNN_FLAVORS, RETINAFACE_VARIANTS, member } from './closed-sets.js';
import { fromNative } from '../errors/native-error.js';
import type { Detection, MtcnnFlavor, MtcnnLevel, MtcnnPnetOutput, MtcnnStage, NativeImage, NativeTensor, PreparedInput, ResnetLevelInput, RetinafaceVariant } from './types.js';

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
): Promise<Detection[]> {
  return call(() => native.retinafaceDecodeMobilenet(loc, conf, landms, width, height, scale, threshold, nms));
}

export function retinafaceDecodeResnet(
  levels: ResnetLevelInput[],
  width: number,
  height: number,
  scale: number,
  threshold: number,
  nms: number,
): Promise<Detection[]> {
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
): Promise<Detection[]> {
  return call(() => native.yunetDecode(outputs, width, height, scoreThreshold, nms, topK));
}

function flavor(value: MtcnnFlavor): MtcnnFlavor {
  return member(MTCNN_FLAVORS, value, 'mtcnn flavour');
}

/** The library's pyramid scales for a `width`×`height` image, largest first. */
function mtcnnScales(flavour: MtcnnFlavor, width: number, height: number): number[] {
  try {
    return native.mtcnnScales(flavor(flavour), width, height);
  } catch (err) {
    throw fromNative(err);
  }
}

/**
 * The PNet input of every pyramid level the library runs, largest first, built one level at a time:
 * a large image's pyramid is never held whole (crates/facecompute-core/src/detect/mtcnn).
 */
export async function* mtcnnPyramidLevels(image: NativeImage, flavour: MtcnnFlavor): AsyncGenerator<MtcnnLevel> {
  for (const scale of mtcnnScales(flavour, image.width, image.height)) {
    const level = await call(() => native.mtcnnPyramidLevel(image, flavor(flavour), scale));
    if (level) yield level;
  }
}

/** PNet's outputs per level to RNet's boxes and 24×24 crops. */
export function mtcnnAfterPnet(image: NativeImage, flavour: MtcnnFlavor, levels: MtcnnPnetOutput[]): Promise<MtcnnStage> {
  return call(() => native.mtcnnAfterPnet(image, flavor(flavour), levels));
}

/** RNet's outputs to ONet's boxes and 48×48 crops. */
export function mtcnnAfterRnet(image: NativeImage, flavour: MtcnnFlavor, boxes: Float64Array, reg: NativeTensor, prob: NativeTensor): Promise<MtcnnStage> {
  return call(() => native.mtcnnAfterRnet(image, flavor(flavour), boxes, reg, prob));
}

/** ONet's outputs to the faces, as the library orders them and DeepFace's wrapper rounds them. */
export function mtcnnFaces(flavour: MtcnnFlavor, width: number, height: number, boxes: Float64Array, reg: NativeTensor, landmarks: NativeTensor, prob: NativeTensor): Promise<Detection[]> {
  return call(() => native.mtcnnFaces(flavor(flavour), width, height, boxes, reg, landmarks, prob));
}
