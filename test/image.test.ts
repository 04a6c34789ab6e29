import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { decodeImage, deepfaceBorder, extractFaces, facesToTensor, probeImage, resizeImage } from '../src/native/image.js';
import type { NativeImage } from '../src/native/types.js';
import { ServiceError } from '../src/errors/index.js';
import { benchNative } from '../bench/lib/bench-native.js';
import { REPO_ROOT, deepfaceImage } from './helpers/shared.js';

// Single pixel steps that the product runs only inside its fused calls (extractFaces, the detectors,
// deepfaceBorder's padded view): the bench's addon exports each alone, to check against OpenCV.
const { benchCopyMakeBorder: copyMakeBorder, benchCropPadded: cropPadded, benchRotateImage: rotateImage, benchToGray: toGray } = benchNative;

const FIXTURES = resolve(REPO_ROOT, 'crates/facecompute-core/tests/fixtures');
const LIMITS = { maxBytes: 10 << 20, maxPixels: 40_000_000, order: 'bgr' as const };

function fixture(path: string): Buffer {
  return readFileSync(resolve(FIXTURES, path));
}

async function png(path: string): Promise<NativeImage> {
  return decodeImage(fixture(path), LIMITS);
}

function maxDiff(a: NativeImage, b: NativeImage): number {
  if (a.width !== b.width || a.height !== b.height || a.data.length !== b.data.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.data.length; i++) m = Math.max(m, Math.abs(a.data[i]! - b.data[i]!));
  return m;
}

async function code(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    if (err instanceof ServiceError) return err.code;
    // The bench addon's calls throw the native Error, which carries the core's stable code.
    const native: unknown = (err as { code?: unknown } | null)?.code;
    if (typeof native === 'string') return native;
    throw err;
  }
  return 'no error';
}

/** A PNG whose IHDR claims width × height, followed by a few KB of IDAT. */
function pngHeader(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(25);
  ihdr.writeUInt32BE(13, 0);
  ihdr.write('IHDR', 4, 'latin1');
  ihdr.writeUInt32BE(width, 8);
  ihdr.writeUInt32BE(height, 12);
  ihdr.set([8, 2, 0, 0, 0], 16);
  const idat = Buffer.concat([Buffer.from([0, 0, 0x0f, 0xa0]), Buffer.from('IDAT', 'latin1'), Buffer.alloc(4004)]);
  return Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), ihdr, idat]);
}

t.test('probeImage reads format and size from the header only', async (t) => {
  t.same(probeImage(readFileSync(deepfaceImage('img5.jpg'))), { format: 'jpeg', width: 330, height: 512 });
  t.same(probeImage(readFileSync(deepfaceImage('img47.jpg'))), { format: 'webp', width: 1350, height: 1800 });
  t.same(probeImage(pngHeader(100_000, 100_000)), { format: 'png', width: 100_000, height: 100_000 });
  t.equal(await code(() => probeImage(readFileSync(deepfaceImage('invalid.jpg')))), 'invalid_image');
});

t.test('decodeImage gives 3-channel pixels in the order asked for', async (t) => {
  const bytes = readFileSync(deepfaceImage('img5.jpg'));
  const bgr = await decodeImage(bytes, LIMITS);
  const rgb = await decodeImage(bytes, { ...LIMITS, order: 'rgb' });
  t.same([bgr.width, bgr.height, bgr.channels, bgr.data.length], [330, 512, 3, 330 * 512 * 3]);
  t.same([rgb.data[0], rgb.data[1], rgb.data[2]], [bgr.data[2], bgr.data[1], bgr.data[0]]);
  const rotated = await decodeImage(fixture('decode/exif6.jpg'), LIMITS);
  t.same([rotated.width, rotated.height], [70, 45], 'EXIF orientation 6 is applied');
});

t.test('limits and bad input give stable codes; the pixel limit is checked from the header', async (t) => {
  t.equal(await code(decodeImage(pngHeader(100_000, 100_000), LIMITS)), 'too_many_pixels');
  // What follows that header is no image: at a size within the limit the same construction fails to
  // decode. So too_many_pixels came from the header, before any pixel was decoded or allocated
  // (a check after decoding would have answered invalid_image). How fast belongs in a bench.
  t.equal(await code(decodeImage(pngHeader(64, 64), LIMITS)), 'invalid_image', 'the bytes after the header are not decodable');
  const jpeg = readFileSync(deepfaceImage('img5.jpg'));
  t.equal(await code(decodeImage(jpeg, { ...LIMITS, maxBytes: 1000 })), 'image_too_large');
  t.equal(await code(decodeImage(jpeg, { ...LIMITS, maxPixels: 1000 })), 'too_many_pixels');
  t.equal(await code(decodeImage(Buffer.alloc(0), LIMITS)), 'invalid_image');
  t.equal(await code(decodeImage(readFileSync(deepfaceImage('invalid.jpg')), LIMITS)), 'invalid_image');
  // Cut before the frame header: nothing to decode. (A cut after it decodes with grey fill, as OpenCV.)
  t.equal(await code(decodeImage(jpeg.subarray(0, 120), LIMITS)), 'invalid_image');
  t.equal(await code(decodeImage(jpeg, { ...LIMITS, order: 'xyz' as 'bgr' })), 'invalid_request');
  t.equal(await code(decodeImage(jpeg, { ...LIMITS, maxPixels: -1 })), 'invalid_request');
  const bad = { width: 10, height: 10, channels: 3, data: Buffer.alloc(7) };
  t.equal(await code(resizeImage(bad, 5, 5, 'linear')), 'invalid_request');
  t.equal(await code(resizeImage(await png('ops/input_a.png'), 5, 5, 'nearest' as 'linear')), 'invalid_request');
});

t.test("a JPEG whose decode stops before its rows is invalid_image, never a buffer of someone else's pixels (issue 24)", async (t) => {
  // A 320x320 progressive face: 4 extraneous bytes (a libjpeg warning), then a DHT with table index 5
  // (fatal) before its second scan. TurboJPEG 3 calls that a warning; cv2.imread returns None.
  const repro = fixture('jpeg-warnings/repro-extraneous-bad-dht.jpg');
  t.same(probeImage(repro), { format: 'jpeg', width: 320, height: 320 });
  for (const order of ['bgr', 'rgb'] as const) t.equal(await code(decodeImage(repro, { ...LIMITS, order })), 'invalid_image', order);
  // A warning after every row was written keeps the image, as cv2.imread does.
  const late = await decodeImage(fixture('jpeg-warnings/extraneous-then-bad-dht-after-scan.jpg'), LIMITS);
  t.same([late.width, late.height], [96, 96]);
});

t.test('pixel operations match OpenCV fixtures', async (t) => {
  const a = await png('ops/input_a.png');
  t.ok(maxDiff(await resizeImage(a, 160, 131, 'linear'), await png('ops/resize_a_160x131_linear.png')) <= 1, 'linear');
  t.ok(maxDiff(await resizeImage(a, 41, 37, 'cubic'), await png('ops/resize_a_41x37_cubic.png')) <= 1, 'cubic');
  t.ok(maxDiff(await resizeImage(a, 41, 37, 'area'), await png('ops/resize_a_41x37_area.png')) <= 1, 'area');
  // The product letterboxes inside facesToTensor; the bench's addon exports the step alone.
  t.ok(maxDiff(await benchNative.benchLetterbox(a, 160, 160), await png('ops/letterbox_a_160x160.png')) <= 1, 'letterbox');
  t.equal(maxDiff(await copyMakeBorder(a, 5, 9, 0, 13), await png('ops/border_a.png')), 0, 'border');
  t.ok(maxDiff(await rotateImage(a, 38, 31, 17.3), await png('ops/rotate_a_17.3.png')) <= 1, 'rotation');
  const gray = await toGray(a);
  const expected = await png('ops/gray_a.png');
  t.equal(gray.channels, 1);
  t.ok(gray.data.every((v, i) => v === expected.data[i * 3]), 'grey');
  const crop = await cropPadded(a, -3, -2, 10, 6);
  t.same([crop.width, crop.height, crop.data[0], crop.data[(2 * 10 + 3) * 3]], [10, 6, 0, a.data[0]]);
});

t.test('deepfaceBorder and extractFaces reproduce DeepFace', async (t) => {
  const img = await decodeImage(readFileSync(deepfaceImage('img11.jpg')), LIMITS);
  const window = await cropPadded(img, 150, 200, 300, 400);
  const { image, top, left } = await deepfaceBorder(window);
  t.same([image.width, image.height, top, left], [600, 800, 200, 150]);
  t.equal(image.data, window.data, 'a padded view: the inner pixels are not copied');
  t.same(image.pad, { top: 200, bottom: 200, left: 150, right: 150 });
  const built = await copyMakeBorder(image, 0, 0, 0, 0);
  t.ok(built.pad === undefined || built.pad === null, 'native results are plain images');
  t.ok((await copyMakeBorder(window, 200, 200, 150, 150)).data.equals(built.data), "the view is cv2.copyMakeBorder's image");
  const faces = await extractFaces(
    image,
    [{ x: 245, y: 285, w: 110, h: 110, left_eye: [325, 330], right_eye: [275, 337], confidence: 0.987654 }],
    { align: true, expandPercentage: 0, borderTop: top, borderLeft: left, originalWidth: 300, originalHeight: 400, detector: 'opencv' },
  );
  t.equal(faces.length, 1);
  t.same(faces[0]!.facial_area, { x: 95, y: 85, w: 110, h: 110, left_eye: [175, 130], right_eye: [125, 137], detector: 'opencv' });
  t.equal(faces[0]!.face_confidence, 0.99);
  t.ok(maxDiff(faces[0]!.face, await png('extract/face_1_0_0.png')) <= 1, 'aligned crop');
  const withLandmarks = await extractFaces(
    image,
    [{ x: 245, y: 285, w: 110, h: 110, left_eye: null, right_eye: [275, 337], nose: [300, 350], mouth_left: [1000, 5], confidence: 0.5 }],
    { align: true, expandPercentage: 0, borderTop: top, borderLeft: left, originalWidth: 300, originalHeight: 400, detector: 'retinaface' },
  );
  t.same(withLandmarks[0]!.facial_area, { x: 95, y: 85, w: 110, h: 110, left_eye: null, right_eye: [125, 137], nose: [150, 150], detector: 'retinaface' }, 'outside landmarks dropped');
  t.equal(
    await code(extractFaces(image, [{ x: 0, y: 0, w: 10, h: 10, left_eye: [1, 2, 3] as unknown as [number, number], right_eye: null, confidence: 1 }], {
      align: true, expandPercentage: 0, borderTop: 0, borderLeft: 0, originalWidth: 10, originalHeight: 10, detector: 'opencv',
    })),
    'invalid_request',
  );
});

t.test('facesToTensor batches letterboxed, preprocessed faces', async (t) => {
  const a = await png('ops/input_a.png');
  const spec = { width: 50, height: 50, layout: 'nhwc', channelOrder: 'bgr', preprocess: 'deepface_float', normalization: 'base' } as const;
  const batch = await facesToTensor([a, a], spec);
  t.ok(batch instanceof Float32Array);
  t.equal(batch.length, 2 * 50 * 50 * 3);
  const raw = fixture('ops/tensor_a_50x50_base.f32');
  const expected = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
  let max = 0;
  for (let i = 0; i < expected.length; i++) max = Math.max(max, Math.abs(batch[i]! - expected[i]!));
  t.ok(max <= 1e-6, `max diff ${max}`);
  const sface = await facesToTensor([a], { ...spec, width: 112, height: 112, layout: 'nchw', channelOrder: 'rgb', preprocess: 'uint8_truncate' });
  t.ok(sface.every((v) => Number.isInteger(v) && v >= 0 && v <= 255), 'uint8 values');
  t.equal(await code(facesToTensor([a], { ...spec, normalization: 'Bogus' as 'base' })), 'invalid_request');
});

t.test('many concurrent decodes all succeed', async (t) => {
  const bytes = readFileSync(deepfaceImage('img5.jpg'));
  const all = await Promise.all(Array.from({ length: 32 }, () => decodeImage(bytes, LIMITS)));
  t.ok(all.every((img) => img.data.equals(all[0]!.data)));
});

t.test('a padded view is the bordered image to every native call that takes one', async (t) => {
  const img = await decodeImage(readFileSync(deepfaceImage('img5.jpg')), LIMITS);
  const { image: view, top, left } = await deepfaceBorder(img);
  const plain = await copyMakeBorder(img, top, top, left, left);
  t.ok((await copyMakeBorder(view, 0, 0, 0, 0)).data.equals(plain.data));
  // Bordering a view again composes the padding.
  const twice = await deepfaceBorder(view);
  t.ok((await copyMakeBorder(twice.image, 0, 0, 0, 0)).data.equals((await copyMakeBorder(plain, twice.top, twice.top, twice.left, twice.left)).data), 'a border of a view');
  const { loadHaar } = await import('./helpers/haar.js');
  const { yunetPrepare, retinafacePrepare } = await import('../src/native/faces.js');
  const { SHARED_WEIGHTS_DIR } = await import('./helpers/shared.js');
  const haar = await loadHaar(SHARED_WEIGHTS_DIR);
  const found = await haar.detect(plain);
  t.ok(found.length > 0, 'img5 has a face');
  t.same(await haar.detect(view), found, 'Haar detection');
  t.same(await yunetPrepare(view), await yunetPrepare(plain), 'YuNet input');
  t.same(await retinafacePrepare(view, 'mobilenet', 320), await retinafacePrepare(plain, 'mobilenet', 320), 'RetinaFace input');
  const opts = { align: true, expandPercentage: 0, borderTop: top, borderLeft: left, originalWidth: img.width, originalHeight: img.height, detector: 'opencv' };
  const a = await extractFaces(view, found, opts);
  const b = await extractFaces(plain, found, opts);
  t.same(a.map((f) => f.facial_area), b.map((f) => f.facial_area), 'extracted areas');
  t.ok(a.every((f, i) => f.face.data.equals(b[i]!.face.data)), 'extracted pixels');
  t.same(await resizeImage(view, 100, 120, 'area'), await resizeImage(plain, 100, 120, 'area'), 'resize');

  const bad = (pad: { top: number; bottom: number; left: number; right: number }) => ({ ...view, pad });
  t.equal(await code(copyMakeBorder(bad({ top: 0, bottom: 0, left: view.width, right: 1 }), 0, 0, 0, 0)), 'invalid_request', 'padding wider than the image');
  t.equal(await code(copyMakeBorder(bad({ top: 1, bottom: 0, left: 0, right: 0 }), 0, 0, 0, 0)), 'invalid_request', 'data that does not fill the inner image');
  t.equal(await code(haar.detect(bad({ top: 1, bottom: 0, left: 0, right: 0 }))), 'invalid_request', 'the same through Haar detection');
});
