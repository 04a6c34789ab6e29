/**
 * Typed wrappers over the native image core: decoding with limits, OpenCV-exact pixel operations,
 * DeepFace face extraction and model-input tensors. Every native failure becomes a ServiceError with
 * a stable code (invalid_image, image_too_large, too_many_pixels, invalid_request, ...).
 */
import { fromNative } from '../errors/index.js';
import { native } from './addon.js';
import { CHANNEL_ORDERS, INTERPOLATIONS, LETTERBOXES, NORMALIZATIONS, PREPROCESSES, TENSOR_LAYOUTS, member } from './closed-sets.js';

import type { DecodeOptions, Detection, ExtractedFace, ExtractFacesOptions, ImageProbe, Interpolation, NativeImage, TensorSpecInput } from './types.js';

/** A model input's size, layout and preprocessing (`letterbox` is `float` when absent). */
export type TensorSpec = TensorSpecInput;

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw fromNative(err);
  }
}

/** Format and stored size from the header alone (sync, enforces no limit). */
export function probeImage(bytes: Buffer): ImageProbe {
  try {
    return native.probeImage(bytes);
  } catch (err) {
    throw fromNative(err);
  }
}

/** Decodes like cv2.imdecode(IMREAD_COLOR) after checking the byte and pixel limits. */
export function decodeImage(bytes: Buffer, opts: DecodeOptions): Promise<NativeImage> {
  return call(() => {
    member(CHANNEL_ORDERS, opts.order, 'channel order');
    return native.decodeImage(bytes, opts);
  });
}

export function resizeImage(img: NativeImage, width: number, height: number, interpolation: Interpolation): Promise<NativeImage> {
  return call(() => native.resizeImage(img, width, height, member(INTERPOLATIONS, interpolation, 'interpolation')));
}

/** Lossless PNG (RGB or grey, filter None on every row) of a BGR or grey image, off the JS thread. */
export function encodePng(img: NativeImage): Promise<Buffer> {
  return call(() => native.encodePng(img));
}

/**
 * The black border DeepFace adds before detection when align=true (half the height above and below,
 * half the width left and right), as a padded view: no pixels are copied here, and the bordered
 * bytes, three quarters of the result, never become a JS buffer. V8 counts every Buffer as external
 * memory, and these started a full collection on the model server's JS thread every ~150 ms under load.
 */
export function deepfaceBorder(img: NativeImage): Promise<{ image: NativeImage; top: number; left: number }> {
  const top = Math.floor(img.height / 2);
  const left = Math.floor(img.width / 2);
  const p = img.pad ?? { top: 0, bottom: 0, left: 0, right: 0 };
  const image: NativeImage = {
    width: img.width + 2 * left,
    height: img.height + 2 * top,
    channels: img.channels,
    data: img.data,
    pad: { top: p.top + top, bottom: p.bottom + top, left: p.left + left, right: p.right + left },
  };
  return Promise.resolve({ image, top, left });
}

/**
 * All faces of one image, cropped, aligned and reported as DeepFace does, in one native call: each
 * in the contract's shape, its `facial_area` naming `opts.detector`.
 */
export function extractFaces(img: NativeImage, detections: Detection[], opts: ExtractFacesOptions): Promise<ExtractedFace[]> {
  return call(() => native.extractFaces(img, detections, opts));
}

/** Letterboxes every face to the model input and applies its preprocessing, as one batch. */
export function facesToTensor(faces: NativeImage[], spec: TensorSpec): Promise<Float32Array> {
  return call(() => {
    member(TENSOR_LAYOUTS, spec.layout, 'layout');
    member(CHANNEL_ORDERS, spec.channelOrder, 'channel order');
    member(PREPROCESSES, spec.preprocess, 'preprocess');
    member(NORMALIZATIONS, spec.normalization, 'normalization');
    if (spec.letterbox !== undefined) member(LETTERBOXES, spec.letterbox, 'letterbox');
    return native.facesToTensor(faces, spec);
  });
}
