/**
 * Loads test/fixtures/detectors (made by tools/reference/make_detector_fixtures.py) and converts the
 * detector models with the repository's .venv, as CI's bootstrap does.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { resolve } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR, TEST_OUTPUT_DIR } from './shared.js';

export const FIXTURE_DIR = resolve(REPO_ROOT, 'test', 'fixtures', 'detectors');

export interface FixtureImage {
  name: string;
  width: number;
  height: number;
  retinaRaw: { priors: number };
  retinaDetect: Array<{ box: number[]; score: number; landmarks: number[][] }>;
  retinaDetectSerengil: FixtureImage['retinaDetect'];
  yunet: { rows: number[][]; deepface: Array<{ x: number; y: number; w: number; h: number; left_eye: number[]; right_eye: number[]; confidence: number }> };
  yunetUpscaled: { factor: number; rows: number[][]; deepface: FixtureImage['yunet']['deepface'] };
}

export function manifest(): { images: FixtureImage[] } {
  return JSON.parse(readFileSync(resolve(FIXTURE_DIR, 'manifest.json'), 'utf8'));
}

export function bgr(img: FixtureImage): { width: number; height: number; channels: number; data: Buffer } {
  const data = gunzipSync(readFileSync(resolve(FIXTURE_DIR, `${img.name}.bgr.gz`)));
  if (data.length !== img.width * img.height * 3) throw new Error(`fixture ${img.name}: bad pixel count`);
  return { width: img.width, height: img.height, channels: 3, data };
}

/** Nearest-neighbour pixel repetition, as np.repeat on both axes in the fixture script. */
export function repeatPixels(img: ReturnType<typeof bgr>, f: number): ReturnType<typeof bgr> {
  const w = img.width * f;
  const h = img.height * f;
  const data = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++) {
    const sy = Math.floor(y / f);
    for (let x = 0; x < w; x++) {
      const s = (sy * img.width + Math.floor(x / f)) * 3;
      const d = (y * w + x) * 3;
      data[d] = img.data[s]!;
      data[d + 1] = img.data[s + 1]!;
      data[d + 2] = img.data[s + 2]!;
    }
  }
  return { width: w, height: h, channels: 3, data };
}

export function rawRetina(img: FixtureImage): { loc: Float32Array; conf: Float32Array; landms: Float32Array } {
  const buf = gunzipSync(readFileSync(resolve(FIXTURE_DIR, `${img.name}.retina-raw.f32.gz`)));
  const all = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  const n = img.retinaRaw.priors;
  if (all.length !== n * 16) throw new Error(`fixture ${img.name}: bad raw output length`);
  return { loc: all.subarray(0, n * 4), conf: all.subarray(n * 4, n * 6), landms: all.subarray(n * 6) };
}

const PYTHON = resolve(REPO_ROOT, '.venv', 'bin', 'python');

function convert(script: string, input: string, out: string): string {
  mkdirSync(TEST_OUTPUT_DIR, { recursive: true });
  const dest = resolve(TEST_OUTPUT_DIR, out);
  if (!existsSync(PYTHON)) throw new Error('repository .venv missing: run scripts/bootstrap.sh (or python3 -m venv .venv && .venv/bin/pip install -r models/converters/requirements.txt)');
  execFileSync(PYTHON, [resolve(REPO_ROOT, 'models', 'converters', script), resolve(SHARED_WEIGHTS_DIR, input), dest], { stdio: 'pipe' });
  return dest;
}

export function convertRetinaface(): string {
  return convert('retinaface_mobilenet_to_onnx.py', 'retinaface_mobilenet0.25_Final.pth', 'retinaface_mobilenet0.25.onnx');
}

export function convertYunet(): string {
  return convert('yunet_dynamic_input.py', 'face_detection_yunet_2023mar.onnx', 'yunet_2023mar_dynamic.onnx');
}

export function iou(a: number[], b: number[]): number {
  // [x1, y1, x2, y2]
  const w = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
  const h = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const inter = w * h;
  const area = (r: number[]): number => (r[2]! - r[0]!) * (r[3]! - r[1]!);
  return inter / (area(a) + area(b) - inter);
}

/** For each expected box, the best IoU among the actual ones. */
export function bestIous(expected: number[][], actual: number[][]): number[] {
  return expected.map((e) => Math.max(0, ...actual.map((a) => iou(e, a))));
}
