/**
 * The `opencv` detector through the binding: loading, errors, concurrency, and exact parity with
 * opencv-python on the uncompressed images of the fixture (tools/reference/opencv_haar.py), which
 * need no JPEG decoder. The full parity run over JPEGs is the cargo test `opencv_parity`.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { OpenCvDetector } from '../src/native/detect.js';
import type { NativeImage } from '../src/native/types.js';
import { loadHaar } from './helpers/haar.js';
import { ServiceError } from '../src/errors/index.js';
import { REPO_ROOT, SHARED_DATA_DIR, SHARED_WEIGHTS_DIR } from './helpers/shared.js';

interface FixtureImage {
  path: string;
  width: number;
  height: number;
  faces: [number, number, number, number, number, number, [number, number] | null, [number, number] | null][];
  /** OpenCV's windows before groupRectangles: [x, y, w, h, levelWeight]. */
  windows?: [number, number, number, number, number][];
}
const fixture = JSON.parse(readFileSync(resolve(REPO_ROOT, 'test/fixtures/opencv_haar.json'), 'utf8')) as {
  images: FixtureImage[];
};

/** Binary PGM (P5, 8-bit) as cv2.imread(IMREAD_COLOR) gives it: grey replicated to BGR. */
function readPgm(buf: Buffer): NativeImage {
  const header = /^P5\s+(?:#.*\s+)*(\d+)\s+(\d+)\s+(\d+)\s/.exec(buf.subarray(0, 256).toString('latin1'));
  if (!header || header[3] !== '255') throw new Error('not an 8-bit P5 PGM');
  const [width, height] = [Number(header[1]), Number(header[2])];
  const px = buf.subarray(header[0].length, header[0].length + width * height);
  const data = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) data.fill(px[i]!, i * 3, i * 3 + 3);
  return { width, height, channels: 3, data };
}

/** Uncompressed 24/32-bit BMP as cv2.imread(IMREAD_COLOR) gives it: BGR, alpha dropped. */
function readBmp(buf: Buffer): NativeImage {
  const offset = buf.readUInt32LE(10);
  const width = buf.readInt32LE(18);
  const rawHeight = buf.readInt32LE(22);
  const bpp = buf.readUInt16LE(28);
  const compression = buf.readUInt32LE(30);
  if ((bpp !== 24 && bpp !== 32) || (compression !== 0 && compression !== 3)) throw new Error('unsupported BMP');
  const height = Math.abs(rawHeight);
  const bytes = bpp / 8;
  const rowSize = Math.ceil((width * bytes) / 4) * 4;
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    const srcRow = offset + (rawHeight > 0 ? height - 1 - y : y) * rowSize;
    for (let x = 0; x < width; x++) {
      buf.copy(data, (y * width + x) * 3, srcRow + x * bytes, srcRow + x * bytes + 3);
    }
  }
  return { width, height, channels: 3, data };
}

/** DeepFace's align=True border: int(0.5*H) top and bottom, int(0.5*W) left and right, black. */
function addBorder(img: NativeImage): NativeImage {
  const bw = Math.floor(img.width / 2);
  const bh = Math.floor(img.height / 2);
  const width = img.width + 2 * bw;
  const height = img.height + 2 * bh;
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < img.height; y++) {
    img.data.copy(data, ((y + bh) * width + bw) * 3, y * img.width * 3, (y + 1) * img.width * 3);
  }
  return { width, height, channels: 3, data };
}

const detector = await loadHaar(SHARED_WEIGHTS_DIR);

t.test('matches opencv-python exactly on the uncompressed fixture images', async (t) => {
  const entries = fixture.images.filter((i) => /\.(bmp|pgm)$/.test(i.path));
  t.equal(entries.length, 2, 'the two uncompressed images of the fixture');
  let faces = 0;
  for (const entry of entries) {
    const buf = readFileSync(resolve(SHARED_DATA_DIR, entry.path));
    const img = entry.path.endsWith('.pgm') ? readPgm(buf) : readBmp(buf);
    t.same([img.width, img.height], [entry.width, entry.height], `${entry.path} size`);
    const ours = await detector.detect(addBorder(img));
    const theirs = entry.faces.map(([x, y, w, h, , lw, le, re]) => ({
      x,
      y,
      w,
      h,
      confidence: (100 - lw) / 100,
      left_eye: le,
      right_eye: re,
    }));
    t.same(ours, theirs, entry.path);
    faces += theirs.length;
  }
  t.equal(faces, 2, 'their two faces compared');
});

t.test("trace: the raw windows are OpenCV's, in order, and each face is the mean of its group", async (t) => {
  const entries = fixture.images.filter((i) => i.windows);
  t.equal(entries.length, 2, 'the two images with raw windows');
  let windows = 0;
  for (const entry of entries) {
    const buf = readFileSync(resolve(SHARED_DATA_DIR, entry.path));
    const img = addBorder(entry.path.endsWith('.pgm') ? readPgm(buf) : readBmp(buf));
    const traced = await detector.trace(img);
    const faces = await detector.detect(img);
    t.same(traced.faces.map(({ rejectLevel: _l, levelWeight: _w, group: _g, ...f }) => f), faces, `${entry.path}: the faces of detect`);
    // OpenCV returns its windows clipped to the image (minNeighbors=0 skips only the grouping).
    const clip = (w: { x: number; y: number; w: number; h: number; weight: number }) => {
      const x0 = Math.max(0, w.x), y0 = Math.max(0, w.y);
      return [x0, y0, Math.min(img.width, w.x + w.w) - x0, Math.min(img.height, w.y + w.h) - y0, w.weight];
    };
    t.same(traced.windows.map(clip), entry.windows, `${entry.path}: raw windows`);
    windows += traced.windows.length;
    for (const f of traced.faces) {
      const group = traced.windows.filter((w) => w.group === f.group);
      // OpenCV: (float)sum * (1.f / n), rounded half to even; exact for these small sums.
      const mean = (k: 'x' | 'y' | 'w' | 'h') => {
        const v = Math.fround(Math.fround(group.reduce((s, w) => s + w[k], 0)) * Math.fround(1 / group.length));
        const r = Math.round(v);
        return Math.abs(v - Math.trunc(v)) === 0.5 && r % 2 !== 0 ? r - 1 : r;
      };
      t.same([f.x, f.y, f.w, f.h], [mean('x'), mean('y'), mean('w'), mean('h')], `${entry.path}: the face is its group's mean`);
      t.equal(f.levelWeight, Math.max(...group.map((w) => w.weight)), "the level weight is the group's best");
      t.equal(f.rejectLevel, 25);
    }
  }
  t.equal(windows, 44 + 43, `${windows} windows compared (44 and 43)`);
});

t.test('no face on a blank image; grey and BGRA inputs are accepted', async (t) => {
  const blank = { width: 320, height: 240, channels: 3, data: Buffer.alloc(320 * 240 * 3, 128) };
  t.same(await detector.detect(blank), []);
  t.same(await detector.detect({ width: 64, height: 64, channels: 1, data: Buffer.alloc(64 * 64) }), []);
  t.same(await detector.detect({ width: 64, height: 64, channels: 4, data: Buffer.alloc(64 * 64 * 4) }), []);
  // Smaller than the 24x24 window: nothing to scan, not an error (as in OpenCV).
  t.same(await detector.detect({ width: 10, height: 10, channels: 3, data: Buffer.alloc(300) }), []);
});

t.test('bad images are invalid_image ServiceErrors', async (t) => {
  const cases: NativeImage[] = [
    { width: 10, height: 10, channels: 3, data: Buffer.alloc(299) },
    { width: 10, height: 10, channels: 2, data: Buffer.alloc(200) },
    { width: 0, height: 10, channels: 3, data: Buffer.alloc(0) },
  ];
  for (const img of cases) {
    const err = await detector.detect(img).then(
      () => null,
      (e: unknown) => e,
    );
    t.ok(err instanceof ServiceError, 'a ServiceError');
    t.equal((err as ServiceError).code, 'invalid_image');
  }
});

t.test('a malformed cascade is an internal_error ServiceError, not a crash', async (t) => {
  const eye = readFileSync(resolve(SHARED_WEIGHTS_DIR, 'haarcascade_eye.xml'), 'utf8');
  for (const xml of ['', '<opencv_storage>', eye.replace('<stages>', '<stages><_><broken/></_>'), eye.slice(0, 5000)]) {
    let err: unknown = null;
    try {
      OpenCvDetector.load(xml, eye);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof ServiceError, 'a ServiceError');
    t.equal((err as ServiceError).code, 'internal_error');
  }
});

t.test('concurrent detections share one detector and agree', async (t) => {
  const entry = fixture.images.find((i) => i.path.endsWith('.bmp'))!;
  const img = addBorder(readBmp(readFileSync(resolve(SHARED_DATA_DIR, entry.path))));
  const runs = await Promise.all(Array.from({ length: 6 }, () => detector.detect(img)));
  for (const r of runs) t.same(r, runs[0]);
  t.equal(runs[0]!.length, entry.faces.length);
});
