/**
 * Reference (pure TypeScript) versions of the tensors DeepFace feeds its recognition models. The native
 * core will provide fused versions; these pin the exact arithmetic, and the parity tests check them
 * against Keras and OpenCV outputs.
 */

/** An interleaved 3-channel 8-bit face crop, already aligned and letterboxed to the model input size. */
export interface FaceCrop {
  width: number;
  height: number;
  /** width * height * 3 bytes, row-major, channel order given by the caller (DeepFace works in BGR). */
  data: Uint8Array;
}

function checkCrop(crop: FaceCrop, what: string): void {
  if (!Number.isInteger(crop.width) || !Number.isInteger(crop.height) || crop.width <= 0 || crop.height <= 0) {
    throw new RangeError(`${what}: bad crop size ${crop.width}x${crop.height}`);
  }
  if (crop.data.length !== crop.width * crop.height * 3) {
    throw new RangeError(`${what}: expected ${crop.width * crop.height * 3} bytes, got ${crop.data.length}`);
  }
}

/**
 * Keras models (Facenet, Facenet512, OpenFace, ...) with normalization "base": NHWC float32, BGR kept,
 * values x/255. DeepFace divides in float64 and only then casts to float32 (img_to_array), and a
 * Float32Array store of the double quotient rounds the same way, so this is bit-exact.
 *
 * Returns one batch item; callers concatenate items for a batch.
 */
export function deepfaceFloatPreprocess(crop: FaceCrop, out?: Float32Array): Float32Array {
  checkCrop(crop, 'deepfaceFloatPreprocess');
  const n = crop.data.length;
  const dst = out ?? new Float32Array(n);
  if (dst.length < n) throw new RangeError('deepfaceFloatPreprocess: output buffer too small');
  const src = crop.data;
  for (let i = 0; i < n; i++) dst[i] = src[i]! / 255;
  return dst;
}

/**
 * The [0,1] float face DeepFace holds before SFace: in the normal pipeline it comes from letterboxing a
 * uint8 crop and dividing by 255 in float64, then float32. SFace's client multiplies back by 255 and
 * truncates with astype(uint8); x/255*255 in float32 can land just below an integer, so the byte can drop
 * by one. Reproducing that needs the float32 round trip, not the original byte.
 */
export function sfaceBytesFromDeepfaceFloat(face01: Float32Array): Uint8Array {
  const out = new Uint8Array(face01.length);
  for (let i = 0; i < face01.length; i++) {
    // numpy multiplies float32 by a Python int in float32, so the product is rounded to float32 first.
    const v = Math.fround(face01[i]! * 255);
    // astype(uint8) truncates toward zero; inputs are in [0,1] so no wrap-around is possible.
    out[i] = v <= 0 ? 0 : v >= 255 ? 255 : Math.trunc(v);
  }
  return out;
}

/**
 * SFace as OpenCV's FaceRecognizerSF.feature() runs it: blobFromImage(img, 1.0, (112,112), 0,
 * swapRB=true) turns the BGR uint8 crop into RGB float NCHW with values 0..255 and no scaling.
 * The crop must already be 112x112 (DeepFace letterboxes to the model size; blobFromImage would resize
 * otherwise, which never happens on that path).
 *
 * `crop` is DeepFace's float [0,1] BGR face (HWC) or bytes; floats go through the uint8 truncation first.
 */
export function sfacePreprocess(crop: FaceCrop | { width: number; height: number; data: Float32Array }): Float32Array {
  const { width, height } = crop;
  if (width !== 112 || height !== 112) throw new RangeError(`sfacePreprocess: SFace needs 112x112, got ${width}x${height}`);
  const bytes = crop.data instanceof Float32Array ? sfaceBytesFromDeepfaceFloat(crop.data) : crop.data;
  checkCrop({ width, height, data: bytes }, 'sfacePreprocess');
  const plane = width * height;
  const out = new Float32Array(3 * plane);
  for (let p = 0; p < plane; p++) {
    const b = bytes[3 * p]!;
    const g = bytes[3 * p + 1]!;
    const r = bytes[3 * p + 2]!;
    out[p] = r;
    out[plane + p] = g;
    out[2 * plane + p] = b;
  }
  return out;
}
